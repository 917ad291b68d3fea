"""Claims: the one declaration type of fedcheck.

A :class:`Claim` is one statement of one paper (or of a user) with the evidence that decides it::

    theorem1 = Claim(
        id="fedfw.theorem1", aliases=("theorem1",), paper=FEDFW, reference="Theorem 1, eq. (38)",
        statement="F(xbar^t) - F* <= ... = O(t^{-1/2})",
        evidence=BoundTest(experiment=Rounds(...), bounds=(Bound("(38)", bound_38),)),
        readings=(Reading("statement", {G: ...}), Reading("sup", {G: G_sup}, paper=False)),
        domain=Domain(fixed={"loss": "least_squares"}, free={"n": (1, 50)}),
        expected="holds")

``evidence`` is one of three kinds (:mod:`fedcheck.core.evidence`): a :class:`~fedcheck.core.evidence.BoundTest`
(a measured quantity against a bound over an axis, with a statistic), a
:class:`~fedcheck.core.evidence.Measurement` (findings computed by a run: a paper's empirical or
qualitative claim, or a counterexample) or a :class:`~fedcheck.core.evidence.Proof` (SymPy steps).
``expected`` is the verdict the catalog expects (one parametrized test compares it with the computed
one); it never decides anything.  A claim is immutable once declared.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from fedcheck.core import verdict as V
from fedcheck.core.errors import DomainError
from fedcheck.core.readings import Reading, Source, provenance_record  # noqa: F401  (re-exported)
from fedcheck.core.results import CheckResult, Result, RunConfig, jsonable  # noqa: F401  (re-exported)
from fedcheck.core.runner import run_claim

__all__ = ["Paper", "Source", "Reading", "Domain", "Claim", "RunConfig", "Result", "DomainError", "jsonable", "check_range"]


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    authors: str
    venue: str = ""
    source: str = ""


@dataclass(frozen=True)
class Domain:
    """Where a claim is stated: fixed properties and free parameters with their ranges.

    ``fixed``: ``{property: value}`` an instance must have (``set="simplex"``, ``n=1``, ``loss="least_squares"``);
    a tuple value means "one of" (and ``search`` may move among them).  ``free``: ``{property: (lo, hi)}``
    numeric properties ``search`` may vary, in closed ranges (``None`` ends: unbounded; ``None`` range: free,
    e.g. ``x0``).  A property in neither stays at the value of the claim's own family.
    ``params``: ranges of the claim's parameters: ``">0"``, ``">=0"``, ``">= k"`` or a closed ``(lo, hi)`` (``None``:
    unbounded); ``"int"``, ``"int >= 1"``: an integer parameter (``--param``, ``search`` and the API refuse or never
    draw other values).  Without a declared range, a parameter's symbol's own assumptions decide
    (``fedcheck.symbols.E`` is a positive integer).
    Properties are read from an instance's ``properties()`` (problem library).
    ``premises``: ``{name: predicate(instance) -> bool}``, the hypotheses no property says (the clients share a
    minimizer, it lies inside the set): an instance where one is false lies outside the domain -- ``search`` never
    runs it, ``verify --instance`` refuses it::

        Domain(fixed={"loss": "least_squares"}, premises={"common minimizer inside the set": common_minimizer})
    """

    fixed: Mapping = field(default_factory=dict)
    free: Mapping = field(default_factory=dict)
    params: Mapping = field(default_factory=dict)
    description: str = ""
    premises: Mapping = field(default_factory=dict)

    def check_premises(self, instance) -> None:
        """Refuse (:class:`DomainError`) an instance where one of the ``premises`` is false."""
        for name, holds in self.premises.items():
            if not bool(holds(instance)):
                raise DomainError(f"premise {name!r} is false on this instance: outside the claim's domain")

    def check_instance(self, props: Mapping) -> None:
        for key, want in self.fixed.items():
            if key not in props:
                continue
            have = props[key]
            ok = have in want if isinstance(want, tuple) else have == want
            if not ok:
                raise DomainError(f"{key}={have!r} is outside the claim's domain ({key} must be {want!r})")
        for key, rng in self.free.items():
            if key not in props or rng is None:
                continue
            lo, hi = rng
            v = props[key]
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise DomainError(f"{key}={v!r} is outside the claim's domain [{lo}, {hi}]")

    def check_param(self, name: str, value: float, default_range=None) -> None:
        """Refuse a parameter value outside its range (``self.params[name]``, else ``default_range``)."""
        check_range(name, value, self.params.get(name, default_range))

    def record(self) -> dict:
        return {"fixed": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.fixed.items()},
                "free": {k: (None if v is None else list(v)) for k, v in self.free.items()},
                "params": {k: (v if isinstance(v, str) else list(v)) for k, v in self.params.items()},
                "description": self.description, **({"premises": list(self.premises)} if self.premises else {})}


def check_range(name: str, value, rng) -> None:
    """``value`` must be a finite number inside ``rng`` (``">0"``, ``">=0"``, ``(lo, hi)`` closed, or ``None``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(value)):
        raise DomainError(f"parameter {name}={value!r}: expected a finite number")
    v = float(value)
    if rng is None:
        return
    if isinstance(rng, str):        # ">0", ">= 1", "int", "int >= 1" (an integer parameter: E local steps)
        spec = rng.strip()
        if spec.startswith("int"):
            if not v.is_integer():
                raise DomainError(f"parameter {name}={value!r}: must be an integer")
            spec = spec[3:].strip()
        if spec:
            m = re.fullmatch(r"(>=|>|<=|<)\s*([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)", spec)
            if m is None:
                raise DomainError(f"parameter {name}: range {rng!r} is none of '>0', '>= k', 'int', 'int >= k'")
            op, edge = m.group(1), float(m.group(2))
            if not {">": v > edge, ">=": v >= edge, "<": v < edge, "<=": v <= edge}[op]:
                raise DomainError(f"parameter {name}={value!r}: must be {op} {m.group(2)}")
    else:
        lo, hi = rng
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise DomainError(f"parameter {name}={value!r}: must lie in [{lo}, {hi}]")




def _declaration_site() -> str:
    """``file:line`` of the code that declared a claim: the first caller outside this module and generated code
    (a theorem file, a notebook cell, a test module, or a paper module of the catalog)."""
    import sys
    f = sys._getframe(1)
    while f is not None and (f.f_code.co_filename == __file__ or f.f_code.co_filename.startswith("<")):
        f = f.f_back
    return "" if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"


KINDS = ("bound", "expectation", "counterexample", "measurement", "symbolic")
VERDICTS = (V.HOLDS, V.VIOLATED, V.INCONCLUSIVE, V.REPRODUCED, V.NOT_REPRODUCED)


@dataclass(frozen=True, eq=False)
class Claim:
    """One claim with its evidence (see the module doc)."""

    id: str
    paper: Paper
    reference: str
    statement: str
    evidence: Any
    expected: str | None = None
    title: str = ""
    aliases: tuple = ()
    readings: tuple = (Reading("as stated"),)
    domain: Domain = field(default_factory=Domain)
    params: Mapping = field(default_factory=dict)
    assumptions: tuple = ()
    symbolic: tuple = ()           # SymPy facts reported beside the verdict (``fedcheck.core.evidence.Fact``)
    proof_steps: tuple = ()        # the proof's key steps (``fedcheck audit``; ``fedcheck.tools.audit.ProofStep``)
    claimed_rate: float | None = None
    kind: str | None = None        # result kind; default from the evidence
    declared_in: str = field(default="", compare=False, repr=False)   # "file:line" of the declaration (set for you)

    def __post_init__(self):
        if not self.declared_in:
            object.__setattr__(self, "declared_in", _declaration_site())
        if not isinstance(self.id, str) or "." not in self.id:
            raise TypeError(f"claim id {self.id!r} must be namespaced as '<paper>.<name>'")
        if not isinstance(self.paper, Paper):
            raise TypeError(f"{self.id}: paper must be a fedcheck Paper, not {type(self.paper).__name__}")
        if self.expected is not None and self.expected not in VERDICTS:
            raise ValueError(f"{self.id}: expected verdict {self.expected!r} is not one of {VERDICTS}")
        for name in ("aliases", "readings", "assumptions", "symbolic", "proof_steps"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "params", dict(self.params))
        if not self.title:      # the claim's own words (its reference is shown beside the title anyway)
            words = " ".join(str(self.statement or self.reference).split())
            object.__setattr__(self, "title", words if len(words) <= 140 else words[:137].rsplit(" ", 1)[0] + " ...")
        names = [r.name for r in self.readings]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.id}: two readings share a name")
        validate = getattr(self.evidence, "validate", None)
        if validate is None:
            raise TypeError(f"{self.id}: evidence must be a BoundTest, Measurement or Proof, "
                            f"not {type(self.evidence).__name__}")
        validate(self)

    @property
    def claim(self) -> str:      # the result field's name
        return self.statement

    @property
    def result_kind(self) -> str:
        return self.kind or self.evidence.kind

    @property
    def is_users(self) -> bool:
        """Whether a user declared this claim (a theorem file, a notebook, a test module), not fedcheck's catalog:
        an error in evaluating its declarations is then the user's (exit 2), never fedcheck's (exit 4)."""
        from fedcheck.core.usercode import is_own_file
        return not is_own_file(self.declared_in.rpartition(":")[0])

    def run(self, config: RunConfig | None = None) -> Result:
        return run_claim(self, config or RunConfig())
