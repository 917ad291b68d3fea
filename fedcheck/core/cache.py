"""Where fedcheck keeps things between runs, and what ``fedcheck cache info`` / ``fedcheck cache clear`` show
and remove.

The cache directory is ``$FEDCHECK_CACHE`` (``off``, ``0``, ``none`` or empty: no cache), else
``~/.cache/fedcheck``.  Nothing in it is trusted as it is: a cached solution is re-verified on load
(:class:`fedcheck.problems.solve.SolutionCache`), the catalog manifest is keyed by the hash of the sources
(:func:`fedcheck.catalog.registry.catalog_listing`), a typeset formula is only an image.  Clearing it therefore
costs time, never correctness.  ``clear`` removes only the kinds of entries fedcheck writes (a directory set
by mistake to somewhere else keeps its other files).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["cache_dir", "KINDS", "CacheInfo", "info", "clear", "describe"]


def cache_dir() -> Path | None:
    """``$FEDCHECK_CACHE`` (``off`` disables), else ``~/.cache/fedcheck``."""
    env = os.environ.get("FEDCHECK_CACHE")
    if env is not None and env.lower() in ("", "0", "off", "none"):
        return None
    return Path(env) if env else Path.home() / ".cache" / "fedcheck"


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
    """The cache's entries by kind (a solution is one entry of two files) and their sizes."""
    loc = cache_dir() if location is None else Path(location)
    out = CacheInfo(loc)
    if loc is None or not loc.is_dir():
        return out
    out.exists = True
    seen: dict = {}
    for root, dirs, files in os.walk(loc):
        dirs.sort()
        for name in sorted(files):
            p = Path(root) / name
            rel = p.relative_to(loc).as_posix()
            kind, entry = _kind_of(rel)
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
    """Remove every entry fedcheck wrote (and the sub-directories this empties); returns what was removed."""
    before = info(location)
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
    lines = [f"cache: {ci.location}" + ("" if ci.exists else " (does not exist)")]
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
