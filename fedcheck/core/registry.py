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

from fedcheck.core.claim import Claim
from fedcheck.core.errors import BadInput

__all__ = ["Registry", "default_registry", "load_registry", "UnknownCheck", "load_user_file"]


class UnknownCheck(BadInput, KeyError):
    def __init__(self, name: str, suggestions: list[str]):
        self.name, self.suggestions = name, suggestions
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
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

    def add(self, claim: Claim, origin: str = "fedcheck", builtin: bool = False) -> None:
        if not isinstance(claim, Claim):
            raise TypeError(f"{origin}: {claim!r} is not a fedcheck Claim")
        key = claim.paper.key
        names = [claim.id, *claim.aliases]
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
    if not path.is_file():
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
        raise BadInput(f"--theorem-file {path}: {e}") from None
    except KeyboardInterrupt:
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
        reg.add_module(importlib.import_module(f"theorems.{key}"), builtin=True)
    return reg


def load_registry(theorem_files=()) -> Registry:
    """The built-in catalog plus users' files (bad files raise :class:`BadInput`)."""
    reg = default_registry()
    for f in theorem_files:
        reg.load_file(f)
    return reg
