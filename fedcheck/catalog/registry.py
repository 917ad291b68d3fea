"""The catalog of claims: the paper modules of ``theorems/`` and users' own files.

Ids are namespaced (``fedfw.theorem1``); a claim may declare short aliases (``theorem1``); a paper's key
(``fedfw``) selects all of its claims.  Nothing registers itself on import: a paper module lists its
claims in ``CLAIMS`` and :func:`default_registry` reads those lists; a user's file is run inside a guard
and its module-level claims are collected (``CLAIMS`` if it defines one).  A user's id, alias or paper key
never shadows a built-in one.
"""
from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from fedcheck.core.errors import BadInput, Terminated

if TYPE_CHECKING:
    from fedcheck.core.claim import Claim

__all__ = ["Registry", "default_registry", "load_registry", "UnknownCheck", "load_user_file", "catalog_listing", "build_listing",
           "catalog_key", "pep_models"]


def _catalog_paper(name: str) -> bool:
    """Whether ``name`` starts with the key of one of the catalog's papers (``fedfw.x``: a misspelt catalog id)."""
    try:
        import theorems
        return name.split(".")[0] in theorems.PAPERS
    except Exception:  # noqa: BLE001 - no catalog
        return False


class UnknownCheck(BadInput, KeyError):
    def __init__(self, name: str, suggestions: list[str]):
        self.name, self.suggestions = name, suggestions
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        if not suggestions and not _catalog_paper(name):
            hint = "; if it is declared in your own file, pass it with --theorem-file FILE"
        super().__init__(f"unknown check {name!r}{hint} (see 'fedcheck list')")

    def __str__(self):
        return self.args[0]


class Registry:
    def __init__(self):
        self.checks: dict[str, Claim] = {}
        self.aliases: dict[str, str] = {}
        self.papers: dict[str, list[str]] = {}
        self.paper_objects: dict[str, object] = {}
        self.builtin: set[str] = set()          # ids, aliases and paper keys of the catalog
        self.origin: dict[str, str] = {}        # id -> where it was declared
        self.module: dict[str, str] = {}        # id -> its paper module of theorems/ (built-in claims)
        self._pending: dict[str, list[str]] = {}    # built-in name not loaded yet -> its theorems modules
        self._loaded: set[str] = set()

    # -- built-in paper modules, all at once or only those a command names (see :func:`load_registry`) ----
    def load_builtin(self, key: str) -> None:
        """Register the claims of ``theorems/<key>.py`` (once)."""
        if key in self._loaded:
            return
        self._loaded.add(key)
        module = importlib.import_module(f"theorems.{key}")
        before = set(self.checks)
        self.add_module(module, builtin=True)
        for cid in self.checks:
            if cid not in before:
                self.module[cid] = key

    def _ensure(self, name: str) -> None:
        """Load the built-in module(s) a name belongs to before the name is looked up or claimed."""
        for key in self._pending.pop(name, ()):
            self.load_builtin(key)

    def _ensure_all(self) -> None:
        while self._pending:
            self._ensure(next(iter(self._pending)))

    def add(self, claim: Claim, origin: str = "fedcheck", builtin: bool = False) -> None:
        from fedcheck.core.claim import Claim
        if not isinstance(claim, Claim):
            raise TypeError(f"{origin}: {claim!r} is not a fedcheck Claim")
        key = claim.paper.key
        names = [claim.id, *claim.aliases]
        if not builtin and self._pending:       # a user's name is checked against the whole catalog
            for nm in [*names, key]:
                self._ensure(nm)
        for nm in names:
            taken = self.checks.get(nm) or (self.checks.get(self.aliases[nm]) if nm in self.aliases else None)
            if taken is not None and taken is not claim:
                raise BadInput(f"{origin}: {nm!r} is already {'a built-in' if nm in self.builtin else 'a'} "
                               f"check id or alias ({self.origin.get(taken.id, 'fedcheck')}: {taken.id}); "
                               f"choose another name")
            if nm in self.papers:
                raise BadInput(f"{origin}: {nm!r} is already a paper key; choose another name")
        if claim.id.split(".")[0] != key:
            raise BadInput(f"{origin}: claim id {claim.id!r} must start with its paper key {key!r}.")
        if key in self.paper_objects and self.paper_objects[key] != claim.paper and not builtin:
            raise BadInput(f"{origin}: paper key {key!r} is already used by "
                           f"{'a built-in paper' if key in self.builtin else 'another paper'} "
                           f"({self.paper_objects[key].title!r}); choose another key")
        if key in self.checks or key in self.aliases:
            raise BadInput(f"{origin}: paper key {key!r} is already a check id or alias")
        if not builtin:         # a user's declarations are checked as the file loads (one line, exit 2)
            from fedcheck.experiments import check_declaration
            try:
                check_declaration(claim)
            except BadInput as e:
                raise BadInput(f"{origin}: {e}") from None
        self.checks[claim.id] = claim
        self.origin[claim.id] = origin
        self.paper_objects.setdefault(key, claim.paper)
        self.papers.setdefault(key, [])
        if claim.id not in self.papers[key]:
            self.papers[key].append(claim.id)
        for a in claim.aliases:
            self.aliases[a] = claim.id
        if builtin:
            self.builtin.update([claim.id, *claim.aliases, key])

    def add_module(self, module, origin: str = "fedcheck", builtin: bool = False) -> int:
        from fedcheck.core.claim import Claim
        claims = getattr(module, "CLAIMS", None)
        if claims is None:
            claims = [obj for obj in vars(module).values() if isinstance(obj, Claim)]
        claims = list(dict.fromkeys(claims))
        for c in claims:
            self.add(c, origin, builtin)
        return len(claims)

    def load_file(self, path: str | Path) -> int:
        """Register every claim of a user's Python file (see :func:`load_user_file`)."""
        module = load_user_file(path)
        n = self.add_module(module, origin=str(path))
        if n == 0:
            raise BadInput(f"--theorem-file {path}: defines no claim (a module-level fedcheck Claim)")
        return n

    def resolve(self, names) -> list[Claim]:
        out: list[Claim] = []
        for name in names:
            self._ensure(name)
            if name not in self.checks and name not in self.aliases and name not in self.papers:
                self._ensure_all()          # unknown here: suggestions come from the whole catalog
            if name in self.checks:
                ids = [name]
            elif name in self.aliases:
                ids = [self.aliases[name]]
            elif name in self.papers:
                ids = self.papers[name]
            else:
                known = list(self.checks) + list(self.aliases) + list(self.papers)
                raise UnknownCheck(name, difflib.get_close_matches(name, known, n=3, cutoff=0.5))
            for i in ids:
                if self.checks[i] not in out:
                    out.append(self.checks[i])
        return out


def load_user_file(path: str | Path):
    """Run a user's theorem file inside a guard: any exception, and ``SystemExit``, becomes one
    :class:`~fedcheck.core.errors.BadInput` line naming the file and the line."""
    path = Path(path)
    try:
        found = path.is_file()
    except OSError as e:        # a name the file system refuses (too long, ...)
        from fedcheck.core.results import shown_path
        raise BadInput(f"--theorem-file {shown_path(path)}: {e.strerror}") from None
    if not found:
        raise BadInput(f"--theorem-file {path}: no such file")
    name = f"fedcheck_user_{abs(hash(str(path.resolve())))}"
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise BadInput(f"--theorem-file {path}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except BadInput as e:
        sys.modules.pop(name, None)
        raise BadInput(f"--theorem-file {path}: {e}") from None
    except (KeyboardInterrupt, Terminated):     # SIGINT / SIGTERM while the file runs: 130 / 143, not its error
        sys.modules.pop(name, None)
        raise
    except SyntaxError as e:
        raise BadInput(f"--theorem-file {path}, line {e.lineno}: syntax error: {e.msg}") from None
    except BaseException as e:  # noqa: BLE001 - a user's file may raise anything, SystemExit included
        sys.modules.pop(name, None)
        line = None
        for fr in traceback.extract_tb(e.__traceback__):
            if Path(fr.filename).resolve() == path.resolve():
                line = fr.lineno
        what = "calls sys.exit" if isinstance(e, SystemExit) else f"{type(e).__name__}: {e}"
        raise BadInput(f"--theorem-file {path}" + (f", line {line}" if line else "") + f": {what}") from None
    return module


def default_registry() -> Registry:
    import theorems
    reg = Registry()
    for key in theorems.PAPERS:
        reg.load_builtin(key)
    return reg


def load_registry(theorem_files=(), names=None) -> Registry:
    """The built-in catalog plus users' files (bad files raise :class:`BadInput`).

    With ``names`` (the ids, aliases and paper keys a command will resolve), only the paper modules of
    ``theorems/`` those names need are imported (``verify theorem1`` does not import FedSGM's declarations);
    the others are loaded on demand -- for a name of theirs, for a user's claim whose id, alias or paper key
    they declare, or for an unknown name's suggestions -- so results and messages are those of the whole
    catalog.  Which module declares which name comes from :func:`catalog_listing` (never stale)."""
    if names is None:
        reg = default_registry()
    else:
        import theorems
        reg = Registry()
        listing = catalog_listing()
        for row in listing:
            for nm in (row["id"], *row["aliases"], row["paper"]):
                mods = reg._pending.setdefault(nm, [])
                if row["module"] not in mods:
                    mods.append(row["module"])
        for key in theorems.PAPERS:         # the catalog's order, for the names asked
            if any(key in reg._pending.get(nm, ()) for nm in names):
                reg.load_builtin(key)
        for nm in list(reg._pending):
            reg._pending[nm] = [k for k in reg._pending[nm] if k not in reg._loaded]
            if not reg._pending[nm]:
                del reg._pending[nm]
    for f in theorem_files:
        reg.load_file(f)
    return reg


def pep_models() -> list:
    """The PEP models of the catalog, in the order of its papers: the module each paper's folder names as
    ``PEP_MODELS`` (``PEP_MODELS = "theorems.fedfw.pep"`` in ``theorems/fedfw/__init__.py``), imported.  Such a module
    gives ``available()`` (``(ok, why)``), ``PepSettings`` (horizon, clients, L, D, zeta, solver, use_cache),
    ``run_pep(settings, log)`` (result dicts) and ``pep_checks()`` (the claims of those results): what ``fedcheck
    pep`` runs."""
    import theorems
    names = [getattr(importlib.import_module(f"theorems.{key}"), "PEP_MODELS", None) for key in theorems.PAPERS]
    return [importlib.import_module(n) for n in names if n]


# ----------------------------------------------------------------------------------------------------------
# the listing manifest: ids, aliases, papers and titles of the catalog without importing it
MANIFEST_FORMAT = 2
MANIFEST_NAME = "catalog.json"


def _source_roots() -> list[Path]:
    import fedcheck
    roots = [Path(fedcheck.__file__).resolve().parent]
    spec = importlib.util.find_spec("theorems")
    for loc in (spec.submodule_search_locations or []) if spec is not None else []:
        roots.append(Path(loc).resolve())
    return roots


def catalog_key() -> str:
    """A hash of every Python source the catalog's declarations can depend on (the ``fedcheck`` package and
    the ``theorems`` package, by content), fedcheck's version, Python's version and the manifest format.
    Reading and hashing them takes a few milliseconds; any edit gives a new key."""
    import hashlib

    from fedcheck import __version__
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{MANIFEST_FORMAT}|{__version__}|{sys.version}".encode())
    for root in _source_roots():
        h.update(b"\0root\0" + root.name.encode())
        for p in sorted(root.rglob("*.py")):
            h.update(b"\0" + p.relative_to(root).as_posix().encode() + b"\0")
            h.update(p.read_bytes())
    return h.hexdigest()


def _manifest_path() -> Path | None:
    from fedcheck.core.cache import cache_dir
    d = cache_dir()
    return None if d is None else d / MANIFEST_NAME


def _valid_rows(rows) -> bool:
    return isinstance(rows, list) and bool(rows) and all(
        isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("id", "paper", "title", "module"))
        and isinstance(r.get("aliases"), list) and all(isinstance(a, str) for a in r["aliases"]) for r in rows)


def _statements(claim) -> list[dict]:
    """The findings a claim declares, with the paper's words (``fedcheck list --long``)."""
    from fedcheck.core.runner import declared_findings
    return [{"name": d["name"], "paper": bool(d["paper"]),
             "source": d["source"].record() if d["source"] is not None else None, "deviation": d["deviation"]}
            for d in declared_findings(claim)]


def build_listing(reg: Registry | None = None) -> list[dict]:
    """One row per claim of ``reg`` (the built-in catalog by default): id, paper, aliases, title, module, reference
    and the declared findings with the paper's words (quote, place, setting)."""
    reg = default_registry() if reg is None else reg
    aliases: dict[str, list[str]] = {}
    for a, i in reg.aliases.items():
        aliases.setdefault(i, []).append(a)
    return [{"id": cid, "paper": c.paper.key, "aliases": aliases.get(cid, []),
             "title": getattr(c, "title", "") or c.claim, "module": reg.module.get(cid, reg.origin.get(cid, "")),
             "reference": getattr(c, "reference", ""), "statements": _statements(c)}
            for cid, c in reg.checks.items()]


def catalog_listing() -> list[dict]:
    """The built-in catalog's rows (:func:`build_listing`) from the manifest ``$FEDCHECK_CACHE/catalog.json``
    when its key is :func:`catalog_key` -- the sources it was built from are byte for byte the ones on disk --
    else built by importing the catalog and written back atomically.  A stale, unreadable or foreign manifest
    is never shown: it is rebuilt.  No cache (``FEDCHECK_CACHE=off``, read-only): built every time."""
    import json
    key = catalog_key()
    path = _manifest_path()
    if path is not None:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(doc, dict) and doc.get("format") == MANIFEST_FORMAT and doc.get("key") == key \
                    and _valid_rows(doc.get("claims")):
                return doc["claims"]
        except (OSError, ValueError):
            pass
    rows = build_listing()
    if path is not None:
        import os
        import tempfile
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": MANIFEST_FORMAT, "key": key, "claims": rows}, fh, indent=0)
            os.replace(tmp, path)
        except OSError:                 # a read-only cache is not an error
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
    return rows
