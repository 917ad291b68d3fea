"""The catalog of checks: the modules of ``theorems/`` and users' own files.

Ids are namespaced (``fedfw.theorem1``); a check may declare short aliases
(``theorem1``); a paper's key (``fedfw``) selects all of its checks.
"""
from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from pathlib import Path

from fedcheck.check import Check

__all__ = ["Registry", "default_registry", "UnknownCheck"]


class UnknownCheck(KeyError):
    def __init__(self, name: str, suggestions: list[str]):
        self.name, self.suggestions = name, suggestions
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown check {name!r}{hint} (see 'fedcheck list')")

    def __str__(self):
        return self.args[0]


class Registry:
    def __init__(self):
        self.checks: dict[str, Check] = {}
        self.aliases: dict[str, str] = {}
        self.papers: dict[str, list[str]] = {}

    def add(self, check: Check) -> None:
        if check.id in self.checks and self.checks[check.id] is not check:
            raise ValueError(f"two checks share the id {check.id!r}")
        self.checks[check.id] = check
        self.papers.setdefault(check.paper.key, [])
        if check.id not in self.papers[check.paper.key]:
            self.papers[check.paper.key].append(check.id)
        for a in getattr(check, "aliases", ()) or ():
            if a in self.aliases and self.aliases[a] != check.id:
                raise ValueError(f"alias {a!r} names both {self.aliases[a]} and {check.id}")
            self.aliases[a] = check.id

    def add_module(self, module) -> int:
        count = 0
        for obj in vars(module).values():
            if isinstance(obj, Check):
                self.add(obj)
                count += 1
        return count

    def load_file(self, path: str | Path) -> int:
        """Register every check defined at module level in a user's Python file."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"theorem file {path} does not exist")
        name = f"fedcheck_user_{abs(hash(str(path.resolve())))}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        n = self.add_module(module)
        if n == 0:
            raise ValueError(f"{path} defines no check (a module-level BoundCheck or other Check)")
        return n

    def resolve(self, names) -> list[Check]:
        out: list[Check] = []
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


def default_registry() -> Registry:
    import theorems
    reg = Registry()
    for key in theorems.PAPERS:
        reg.add_module(importlib.import_module(f"theorems.{key}"))
    return reg
