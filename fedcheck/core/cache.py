"""Where fedcheck keeps things between runs, and what ``fedcheck cache info`` / ``fedcheck cache clear`` show
and remove.

The cache directory is ``$FEDCHECK_CACHE`` (``off``, ``0``, ``none`` or empty: no cache), else
``~/.cache/fedcheck``.  Nothing in it is trusted as it is: a cached solution is re-verified on load
(:class:`fedcheck.problems.solve.SolutionCache`), the catalog manifest is keyed by the hash of the sources
(:func:`fedcheck.catalog.registry.catalog_listing`), a typeset formula is only an image.  Clearing it therefore
costs time, never correctness.

A cache folder is fedcheck's only when it says so: fedcheck writes a marker file ``.fedcheck-cache`` when it
creates the folder (or finds it empty; the default ``~/.cache/fedcheck`` is adopted as it is).  A folder without the
marker -- ``FEDCHECK_CACHE`` set by mistake to a project folder -- is neither read nor written (one warning line,
then the run goes on without a cache), and ``cache clear`` refuses it (exit 2, one line).  In its own folder ``clear``
removes only the kinds of entries fedcheck writes.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["cache_dir", "cache_location", "owned", "MARKER", "KINDS", "CacheInfo", "info", "clear", "describe"]

MARKER = ".fedcheck-cache"
_MARKER_TEXT = "fedcheck cache folder: fedcheck created it and may remove the entries it wrote here\n"
_WARNED: set = set()


def _default() -> Path:
    return Path.home() / ".cache" / "fedcheck"


def cache_location() -> Path | None:
    """Where the cache is asked to be: ``$FEDCHECK_CACHE`` (``off`` disables), else ``~/.cache/fedcheck``."""
    env = os.environ.get("FEDCHECK_CACHE")
    if env is not None and env.lower() in ("", "0", "off", "none"):
        return None
    return Path(env) if env else _default()


def owned(location: Path) -> bool:
    """Whether ``location`` is a cache folder fedcheck made (its marker file is there)."""
    m = Path(location) / MARKER
    return m.is_file() and not m.is_symlink()


def _claim(location: Path) -> bool:
    """Make ``location`` fedcheck's cache when it does not exist, is empty, or is the default folder: write the marker.
    ``False`` when it holds anything else (or cannot be written)."""
    try:
        if location.is_symlink() and not location.is_dir():
            return False
        if location.exists():
            if not location.is_dir():
                return False
            if any(location.iterdir()) and location.resolve() != _default().resolve():
                return False
        location.mkdir(parents=True, exist_ok=True)
        import tempfile                     # (not core.results: it imports numpy, and `fedcheck list` must not)
        fd, tmp = tempfile.mkstemp(dir=location, prefix=f"{MARKER}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(_MARKER_TEXT)
            os.replace(tmp, location / MARKER)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return True
    except OSError:
        return False


def cache_dir() -> Path | None:
    """The cache folder when it is fedcheck's (made now, with its marker, if it does not exist or is empty), else
    ``None``: disabled (``FEDCHECK_CACHE=off``), or a folder fedcheck did not create (one warning, once)."""
    loc = cache_location()
    if loc is None:
        return None
    if owned(loc) or _claim(loc):
        return loc
    if str(loc) not in _WARNED:
        _WARNED.add(str(loc))
        import sys
        print(f"fedcheck: warning: the cache folder {loc} was not created by fedcheck (no {MARKER} marker in it) and "
              "is not empty: running without a cache; set FEDCHECK_CACHE to a new or empty folder", file=sys.stderr)
    return None


_HEX = r"[0-9a-f]{16,128}"
# kind -> (description, pattern of a path relative to the cache directory, how entries are counted)
KINDS = {
    "solutions": ("exact solutions (cvxpy/Clarabel, re-verified on load)",
                  re.compile(rf"s\d+-(?P<entry>{_HEX})\.(json|npz)")),
    "old-solutions": ("exact solutions in an older layout (no longer read)",
                      re.compile(rf"(?P<entry>{_HEX})\.(json|npz)")),
    "pep": ("certified PEP worst cases (fedcheck pep)", re.compile(rf"pep/(?P<entry>{_HEX})\.json")),
    "formulas": ("typeset formulas of the reports (SVG)", re.compile(rf"formulas/(?P<entry>{_HEX})\.svg")),
    "durations": ("measured check durations (order of parallel runs)", re.compile(r"(?P<entry>durations\.json)")),
    "catalog": ("listing manifest of the catalog (fedcheck list)", re.compile(r"(?P<entry>catalog\.json)")),
    "temporary": ("unfinished writes (left by an interrupted process)",
                  re.compile(r"(?:[^/]+/)?(?P<entry>\.[^/]+\.tmp)")),
}


class CacheInfo:
    """What a cache directory holds: entries by kind (a solution is one entry of two files), their files and
    sizes, and the files fedcheck did not write."""

    def __init__(self, location: Path | None, exists: bool = False):
        self.location, self.exists = location, exists
        self.entries: dict = {}     # kind -> number of entries
        self.files: dict = {}       # kind -> [paths]
        self.sizes: dict = {}       # kind -> bytes
        self.other: list = []       # files fedcheck did not write
        self.owned = False          # the folder carries fedcheck's marker

    @property
    def total_size(self) -> int:
        return sum(self.sizes.values())


def _kind_of(rel: str):
    for kind, (_, pat) in KINDS.items():
        m = pat.fullmatch(rel)
        if m:
            return kind, m.group("entry")
    return None, None


def info(location: Path | None = None) -> CacheInfo:
    """The cache's entries by kind (a solution is one entry of two files) and their sizes (of a folder fedcheck made:
    ``owned``; another folder's files are all ``other``)."""
    loc = cache_location() if location is None else Path(location)
    out = CacheInfo(loc)
    if loc is None or not loc.is_dir():
        return out
    out.exists = True
    out.owned = owned(loc)
    seen: dict = {}
    for root, dirs, files in os.walk(loc):
        dirs.sort()
        for name in sorted(files):
            p = Path(root) / name
            rel = p.relative_to(loc).as_posix()
            if rel == MARKER:
                continue
            kind, entry = _kind_of(rel) if out.owned else (None, None)
            try:
                size = p.stat().st_size
            except OSError:
                continue
            if kind is None:
                out.other.append(p)
                continue
            seen.setdefault(kind, set()).add(entry)
            out.files.setdefault(kind, []).append(p)
            out.sizes[kind] = out.sizes.get(kind, 0) + size
    out.entries = {k: len(v) for k, v in seen.items()}
    return out


def clear(location: Path | None = None) -> CacheInfo:
    """Remove every entry fedcheck wrote (and the sub-directories this empties); returns what was removed.  A folder
    fedcheck did not create (no marker) is refused (:class:`~fedcheck.core.errors.BadInput`): nothing is removed."""
    before = info(location)
    if before.location is not None and before.exists and not before.owned:
        from fedcheck.core.errors import BadInput
        raise BadInput(f"cache clear: {before.location} was not created by fedcheck (no {MARKER} marker in it); "
                       "nothing removed (is FEDCHECK_CACHE set to the right folder?)")
    removed = CacheInfo(before.location, before.exists)
    for kind, paths in before.files.items():
        for p in paths:
            try:
                size = p.stat().st_size
                p.unlink()
            except FileNotFoundError:        # removed meanwhile by another process
                continue
            removed.files.setdefault(kind, []).append(p)
            removed.sizes[kind] = removed.sizes.get(kind, 0) + size
        if kind in before.entries:
            removed.entries[kind] = before.entries[kind]
    removed.other = before.other
    if before.location is not None and before.exists:
        for sub in ("pep", "formulas"):
            try:
                (before.location / sub).rmdir()
            except OSError:
                pass
    return removed


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n} B"  # pragma: no cover


def describe(ci: CacheInfo, verb: str = "") -> str:
    """Lines for ``cache info`` (``verb=""``) or ``cache clear`` (``verb="removed"``)."""
    if ci.location is None:
        return "cache: disabled (FEDCHECK_CACHE=off)"
    lines = [f"cache: {ci.location}" + ("" if ci.exists else " (does not exist)")
             + ("" if not ci.exists or ci.owned else f" (not created by fedcheck: no {MARKER} marker; fedcheck "
                                                     "neither reads, writes nor clears it)")]
    if verb:
        lines[0] = f"cache: {ci.location}: {verb}"
    kinds = [k for k in KINDS if ci.entries.get(k)]
    w = max([len(k) for k in kinds] + [5])
    for k in kinds:
        lines.append(f"  {k.ljust(w)}  {ci.entries[k]:>6} entr{'y' if ci.entries[k] == 1 else 'ies'}  "
                     f"{_size(ci.sizes.get(k, 0)):>9}  {KINDS[k][0]}")
    total = sum(ci.entries.values())
    lines.append(f"  {'total'.ljust(w)}  {total:>6} entr{'y' if total == 1 else 'ies'}  {_size(ci.total_size):>9}")
    if ci.other:
        lines.append(f"  ({len(ci.other)} other file(s) not written by fedcheck, left as they are)")
    return "\n".join(lines)
