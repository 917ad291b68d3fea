"""An output folder fedcheck owns: what every subcommand writes under ``--out``, checked before anything is computed,
staged, and moved into place at the end -- never over a file fedcheck did not write.

Layout of ``--out DIR`` (fedcheck's own names at the top; everything of one check in its own folder, whose name
:func:`check_folder` makes from the check's id -- injective, so two ids never share a folder whatever they are)::

    DIR/.fedcheck-outputs.json          the record of every path fedcheck wrote here (with its SHA-256)
    DIR/results.json                    verify's results (``report``: report.json; ``search``: search.json;
                                        ``audit``: audit.json; ``pep``: pep.json)
    DIR/index.html                      verify's (and report's) index of the checks
    DIR/checks/<check>/report.html      a check's page; report.pdf, and its figures in report/
    DIR/instances/<check>/...           refuting instances of verify
    DIR/runs/<UTC time>-<ids>.json      a copy of each run's results (new files only)
    DIR/search/, DIR/audit/, DIR/pep/   the same pages (index.html, checks/<check>/...) of search, audit and pep;
                                        search's worst instance and trajectory in search/checks/<check>/, audit's
                                        witnesses in audit/instances/<check>/

A path fedcheck is about to replace must be absent or recorded in ``.fedcheck-outputs.json`` with the content it
wrote there (a file the user edited, made, or linked is refused: exit 2, one line, before anything runs); no
symbolic link is followed below ``DIR``; new files (``runs/``) are only ever added.  Staged files are moved in with
SIGINT and SIGTERM held, so that an interrupt leaves either the old outputs or the new ones.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from fedcheck.core.errors import BadInput

__all__ = ["Outputs", "check_folder", "check_folders", "signals_held", "RESULTS_NAMES", "MANIFEST", "PAGES"]

MANIFEST = ".fedcheck-outputs.json"
FORMAT = 1
#: each subcommand's results file: named after it (verify's keeps its historic name)
RESULTS_NAMES = {"verify": "results.json", "report": "report.json", "search": "search.json", "audit": "audit.json",
                 "pep": "pep.json"}
#: where each subcommand's pages go, relative to ``--out`` (report re-renders verify's results: the same pages)
PAGES = {"verify": "", "report": "", "search": "search", "audit": "audit", "pep": "pep"}

_CLEAN = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")


def check_folder(check_id: str, occurrence: int = 1) -> str:
    """The folder name of a check's files: the id itself when it is a plain lower-case name (``fedfw.theorem1``),
    else a readable part and a hash of the id after ``~`` (a character plain names never have): two ids never
    map to one folder, also on a case-insensitive file system.  ``occurrence``: the k-th check of that id in one
    document (``fedcheck report A.json B.json`` with a check in both) gets a folder of its own."""
    cid = str(check_id)
    if occurrence == 1 and _CLEAN.fullmatch(cid) and not cid.endswith(".") and ".." not in cid:
        return cid
    readable = re.sub(r"[^a-z0-9._-]+", "_", cid.lower()).strip("._-")[:60] or "check"
    digest = hashlib.blake2b(f"{int(occurrence)}:{cid}".encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
    return f"{readable}~{digest}"


def check_folders(check_ids) -> list[str]:
    """:func:`check_folder` of each id of a list, a repeated id getting a folder per occurrence."""
    seen: dict[str, int] = {}
    out = []
    for cid in check_ids:
        seen[cid] = seen.get(cid, 0) + 1
        out.append(check_folder(cid, seen[cid]))
    return out


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM held while the block runs (files moved in, renderer processes started) and acted on just
    after, as the handlers in place would."""
    import signal
    got: list[int] = []
    old: dict = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, lambda n, frame: got.append(n))
    except ValueError:                  # not the main thread
        for sig, h in old.items():
            signal.signal(sig, h)
        yield
        return
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
        if got:
            h = old[got[0]]
            if callable(h):
                h(got[0], None)
            elif h == signal.SIG_DFL:
                os.kill(os.getpid(), got[0])


class Outputs:
    """The outputs one subcommand (``command``) writes under ``root`` (``--out``).

    Declare what will be written (:meth:`replaces` a file or a whole folder, :meth:`adds_to` a folder of new files),
    :meth:`check` before computing, write into :meth:`stage` (a private folder), then :meth:`publish` the staged
    paths; :meth:`discard` (or leaving a ``with`` block) removes the staging folder."""

    def __init__(self, root, command: str = "verify"):
        if command not in RESULTS_NAMES:
            raise ValueError(f"unknown command {command!r}")
        self.root = Path(root)
        self.command = command
        self._replaces: dict[str, str] = {}
        self._adds: set[str] = set()
        self._stage: Path | None = None

    # -- names -------------------------------------------------------------------------------------
    @property
    def results_name(self) -> str:
        return RESULTS_NAMES[self.command]

    @property
    def pages(self) -> str:
        """The folder of this command's pages, relative to the root (``""``: the root)."""
        return PAGES[self.command]

    def page_path(self, *parts: str) -> str:
        return "/".join(p for p in (self.pages, *parts) if p)

    def check_dir(self, check_id: str, occurrence: int = 1) -> str:
        """A check's folder of pages (and search's files), relative to the root."""
        return self.page_path("checks", check_folder(check_id, occurrence))

    def check_dirs(self, check_ids) -> list[str]:
        return [self.page_path("checks", f) for f in check_folders(check_ids)]

    def instances_dir(self, check_id: str | None = None) -> str:
        base = self.page_path("instances")
        return base if check_id is None else f"{base}/{check_folder(check_id)}"

    # -- the plan ----------------------------------------------------------------------------------
    def replaces(self, rel: str, kind: str = "file") -> "Outputs":
        """This command will write ``rel`` (a ``file``, or a ``dir`` replaced as a whole)."""
        self._replaces[rel.strip("/")] = kind
        return self

    def adds_to(self, rel: str) -> "Outputs":
        """This command will add new, uniquely named files to the folder ``rel`` (never replacing one)."""
        self._adds.add(rel.strip("/"))
        return self

    def own_path(self, path, what: str) -> str | None:
        """A file the user named (``--json``, ``--table``) that lies inside the output folder is one of this command's
        outputs there: declared as replaced (so :meth:`check` refuses it when it is a file of the user's) and written
        with :meth:`write_own` (so it is recorded, and the next run is not refused).  Returns its path relative to the
        folder, or ``None`` when it lies outside."""
        rel = None
        for norm in (os.path.abspath, os.path.realpath):
            try:
                rel = Path(norm(path)).relative_to(Path(norm(self.root))).as_posix()
                break
            except ValueError:
                continue
        if rel is None or rel in ("", "."):
            return None
        if rel == MANIFEST:
            raise BadInput(f"{what} {path}: that is fedcheck's record of the files it wrote under --out "
                           f"{self.root}; choose another name")
        self.replaces(rel)
        return rel

    def write_own(self, rel: str, write) -> Path:
        """``write(path)`` into the staging folder, then published as ``rel`` (declared with :meth:`own_path`)."""
        src = self.stage() / "own" / rel
        src.parent.mkdir(parents=True, exist_ok=True)
        write(src)
        return self.publish({rel: src})[0]

    def _manifest(self) -> dict:
        p = self.root / MANIFEST
        if p.is_symlink():
            raise BadInput(f"--out {self.root}: {p} is a symbolic link; fedcheck keeps its record of the files it "
                           "wrote there as a plain file")
        if not p.exists():
            return {}
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
            paths = doc["paths"]
            if doc.get("format") != FORMAT or not isinstance(paths, dict):
                raise ValueError
            return paths
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            raise BadInput(f"--out {self.root}: {p} is not fedcheck's record of the files it wrote there; remove it "
                           "(and the files fedcheck wrote), or choose another --out") from None

    def _foreign(self, rel: str, paths: dict) -> str | None:
        """Why fedcheck may not replace ``rel`` (``None``: absent, or exactly what it wrote)."""
        p = self.root / rel
        if p.is_symlink():
            return f"{p} is a symbolic link"
        if not p.exists():
            return None
        rec = paths.get(rel)
        if p.is_dir():
            if rec is None or rec.get("kind") != "dir":
                return f"{p} exists and was not made by fedcheck"
            for sub in sorted(p.rglob("*")):
                r = sub.relative_to(self.root).as_posix()
                if sub.is_symlink():
                    return f"{sub} is a symbolic link"
                why = self._foreign(r, paths) if not sub.is_dir() else (
                    None if paths.get(r, {}).get("kind") == "dir" else f"{sub} was not made by fedcheck")
                if why:
                    return why
            return None
        if rec is None or rec.get("kind") != "file":
            return f"{p} exists and was not written by fedcheck"
        try:
            if rec.get("sha256") != _sha(p):
                return f"{p} was changed since fedcheck wrote it"
        except OSError as e:
            return f"{p} cannot be read ({e.strerror})"
        return None

    def _parents_ok(self, rel: str, paths: dict) -> str | None:
        parts = rel.split("/")
        for k in range(1, len(parts)):
            sub = "/".join(parts[:k])
            p = self.root / sub
            if p.is_symlink():
                return f"{p} is a symbolic link"
            if p.exists() and not p.is_dir():
                return f"{p} exists and is not a folder"
        return None

    def check(self) -> None:
        """Refuse (:class:`BadInput`, one line) -- before anything is computed -- an output folder that cannot be
        written, or a path this command would replace that fedcheck did not write there."""
        from fedcheck.core.results import check_writable
        check_writable(self.root, "--out", directory=True)
        paths = self._manifest()
        for rel in sorted(self._replaces):
            why = self._parents_ok(rel, paths) or self._foreign(rel, paths)
            if why:
                raise BadInput(f"--out {self.root}: {why}; fedcheck never replaces a file it did not write: move it "
                               "away, or choose another --out")
        for rel in sorted(self._adds):
            why = self._parents_ok(rel + "/x", paths)
            if why:
                raise BadInput(f"--out {self.root}: {why}; choose another --out")

    # -- staging and publishing --------------------------------------------------------------------
    def stage(self) -> Path:
        """A private folder to write this command's outputs into (removed by :meth:`discard`)."""
        if self._stage is None:
            self._stage = Path(tempfile.mkdtemp(prefix=f"fedcheck-{self.command}-"))
        return self._stage

    def discard(self) -> None:
        if self._stage is not None:
            shutil.rmtree(self._stage, ignore_errors=True)
            self._stage = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.discard()

    def _record(self, paths: dict) -> None:
        from fedcheck.core.results import atomic_write_text
        atomic_write_text(self.root / MANIFEST, json.dumps({"format": FORMAT, "paths": paths}, indent=0,
                                                           sort_keys=True))

    def _entries(self, src: Path, rel: str) -> dict:
        out = {rel: {"kind": "dir"} if src.is_dir() else {"kind": "file", "sha256": _sha(src)}}
        if src.is_dir():
            for sub in sorted(src.rglob("*")):
                r = f"{rel}/{sub.relative_to(src).as_posix()}"
                out[r] = {"kind": "dir"} if sub.is_dir() else {"kind": "file", "sha256": _sha(sub)}
        return out

    def publish(self, items: dict[str, Path], new: bool = False) -> list[Path]:
        """Move each staged ``items[rel]`` (a file or a folder) to ``root/rel`` (declared with :meth:`replaces`, or
        with ``new`` a fresh name in a folder declared with :meth:`adds_to`); the record is written first, the moves
        happen with SIGINT and SIGTERM held.  Returns the final paths."""
        if not items:
            return []
        self.root.mkdir(parents=True, exist_ok=True)
        with _folder_locked(self.root):
            return self._publish(items, new)

    def _publish(self, items: dict[str, Path], new: bool) -> list[Path]:
        paths = self._manifest()
        if new:                 # another run may have taken the name meanwhile: the next free one
            items = {_free_name(self.root, rel): src for rel, src in items.items()}
        for rel in items:
            declared = rel.rpartition("/")[0] in self._adds if new else rel in self._replaces
            if not declared:
                raise RuntimeError(f"{self.command} publishes {rel!r}, which it did not declare")
            why = (self._parents_ok(rel, paths) or
                   (("exists" if (self.root / rel).exists() or (self.root / rel).is_symlink() else None) if new
                    else self._foreign(rel, paths)))
            if why:             # something appeared meanwhile: keep it, refuse to write
                raise BadInput(f"--out {self.root}: {why}; fedcheck never replaces a file it did not write")
        with signals_held():
            for rel, src in items.items():
                for k in range(1, len(rel.split("/"))):         # the folders fedcheck makes on the way
                    sub = "/".join(rel.split("/")[:k])
                    if not (self.root / sub).exists():
                        paths[sub] = {"kind": "dir"}
                old = [r for r in paths if r == rel or r.startswith(rel + "/")]
                for r in old:
                    del paths[r]
                paths.update(self._entries(Path(src), rel))
            self._record(paths)
            done = []
            for rel, src in items.items():
                dest = self.root / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                _move_into(Path(src), dest)
                done.append(dest)
        return done


@contextlib.contextmanager
def _folder_locked(root: Path):
    """An exclusive lock on the output folder itself (``flock`` on its descriptor: no lock file of its own), held
    while the record is read, updated and the files moved in: two runs on one folder never lose each other's
    entries.  Without ``fcntl`` (Windows): no lock."""
    try:
        import fcntl
    except ImportError:         # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)            # releases the lock


def _free_name(root: Path, rel: str) -> str:
    """``rel``, or ``stem-2.ext``, ``stem-3.ext`` ... when a file of that name is already there."""
    head, _, name = rel.rpartition("/")
    stem, dot, ext = name.rpartition(".") if "." in name else (name, "", "")
    k, cand = 1, rel
    while (root / cand).exists() or (root / cand).is_symlink():
        k += 1
        cand = f"{head}/{stem}-{k}{dot}{ext}" if head else f"{stem}-{k}{dot}{ext}"
    return cand


def _move_into(src: Path, dest: Path) -> None:
    """Move ``src`` (a file or a folder) to ``dest``, replacing it: through a hidden folder beside ``dest`` (a rename
    on one file system, a copy from another), then one rename into place."""
    tmp = Path(tempfile.mkdtemp(prefix=".fedcheck-move-", dir=dest.parent))
    try:
        staged = tmp / "new"
        shutil.move(str(src), str(staged))
        if dest.is_dir() and not dest.is_symlink():
            os.replace(dest, tmp / "old")           # fedcheck's own folder (checked): removed with tmp
        os.replace(staged, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
