"""Shared pieces of the generic check kinds (:mod:`fedcheck.expectation`, :mod:`fedcheck.sweep`,
:mod:`fedcheck.inequality`, :mod:`fedcheck.measurement`, :mod:`fedcheck.counterexample`,
:mod:`fedcheck.symbolic`).

:class:`GenericCheck` holds what every declaration has (id, paper, reference, claim, title, aliases,
assumptions, params, symbolic claims) and makes the empty :class:`~fedcheck.check.CheckResult`.
:class:`Finding` is one named sub-verdict of a check (a reading of a bound, one claim of a
measurement); findings become the result's ``readings`` (so the summary table lists them) and the
check's verdict is the worst of its ``paper`` findings (all findings when none is marked ``paper``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import sympy as sp

from fedcheck.core import verdict as V
from fedcheck.check import Check, CheckResult, Paper, RunConfig, SymbolicClaim
from fedcheck.problems.instances import Instance

__all__ = ["GenericCheck", "Finding", "verdict_of_findings", "Interval", "compare_interval", "stat_interval",
           "instance_label", "save_refuting"]


@dataclass
class Finding:
    """One named sub-verdict.  ``paper=True``: a claim the paper makes (only those decide the check)."""

    name: str
    verdict: str
    paper: bool = True
    description: str = ""
    max_ratio: float | None = None
    evidence: Any = None

    def as_reading(self) -> dict:
        d = {"verdict": self.verdict, "max_ratio": self.max_ratio, "paper": self.paper,
             "description": self.description}
        if self.evidence is not None:
            d["evidence"] = self.evidence
        return d


def verdict_of_findings(findings: Sequence[Finding]) -> str:
    decisive = [f for f in findings if f.paper] or list(findings)
    return V.combine(f.verdict for f in decisive)


@dataclass
class Interval:
    """A constant known to lie in ``[lo, hi]`` (``lo == hi``: exact)."""

    lo: float
    hi: float
    note: str = ""

    @classmethod
    def exact(cls, v: float, note: str = "") -> "Interval":
        return cls(float(v), float(v), note)

    @property
    def is_exact(self) -> bool:
        return self.lo == self.hi

    @property
    def mid(self) -> float:
        return 0.5 * (self.lo + self.hi)

    def record(self) -> dict:
        return {"value": self.hi, "lo": self.lo, "hi": self.hi, "exact": self.is_exact, "note": self.note}


def compare_interval(lo, hi, b_lo, b_hi, scale=1.0, policy: V.TolerancePolicy = V.POLICY) -> np.ndarray:
    """Per point: 0 holds (``hi <= b_lo + slack``), 2 violated (``lo > b_hi + slack``), 1 otherwise.

    ``[lo, hi]`` is where the measured quantity lies, ``[b_lo, b_hi]`` where the bound lies (constants
    known only within intervals; the bound is increasing in each of them)."""
    lo, hi, b_lo, b_hi = (np.asarray(a, dtype=float) for a in (lo, hi, b_lo, b_hi))
    code = np.where(hi <= b_lo + V.slack(b_lo, scale, policy), 0,
                    np.where(lo > b_hi + V.slack(b_hi, scale, policy), 2, 1))
    bad = ~(np.isfinite(lo) & np.isfinite(hi) & np.isfinite(b_lo) & np.isfinite(b_hi))
    return np.where(bad, 1, code)


def stat_interval(samples: np.ndarray, axis: int = -1, z: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, mean - z SE, mean + z SE)`` over ``axis`` (``z = POLICY.statistical_z``); one sample: SE 0."""
    z = V.POLICY.statistical_z if z is None else z
    x = np.asarray(samples, dtype=float)
    mean = x.mean(axis)
    k = x.shape[axis]
    se = x.std(axis, ddof=1) / np.sqrt(k) if k > 1 else np.zeros_like(mean)
    return mean, mean - z * se, mean + z * se


def instance_label(inst: Instance) -> str:
    return f"seed {inst.seed}" if inst.seed is not None else inst.source


def save_refuting(check_id: str, insts: Sequence[Instance], directory: str | None, limit: int = 5,
                  tag: str = "") -> list[str]:
    """Write refuting instances as documented ``.npz`` files (``fedcheck verify --instance`` reads them)."""
    if not directory:
        return []
    from pathlib import Path

    from fedcheck.problems.instances import save_instance
    out = []
    for inst in list(insts)[:limit]:
        name = f"seed{inst.seed}" if inst.seed is not None else inst.content_hash()[:12]
        try:
            out.append(str(save_instance(inst, Path(directory) / f"{check_id}{tag}-{name}.npz")))
        except ValueError:
            pass
    return out


@dataclass(kw_only=True)
class GenericCheck(Check):
    """Common declaration fields of the generic kinds (see the module doc)."""

    id: str
    paper: Paper
    reference: str
    claim: str
    title: str = ""
    aliases: tuple = ()
    assumptions: Sequence[str] = ()
    params: dict = field(default_factory=dict)
    symbolic: Sequence[SymbolicClaim] = ()
    claimed_rate: float | sp.Expr | None = None
    kind: str = "measurement"

    def __post_init__(self):
        if not self.title:
            self.title = self.reference

    def new_result(self, config: RunConfig) -> tuple[CheckResult, dict, float]:
        """An inconclusive result with the declaration's fields, the merged params, and the start time."""
        params = {**self.params, **(config.params or {})}
        res = CheckResult(id=self.id, title=self.title, paper=self.paper.key, reference=self.reference,
                          claim=self.claim, kind=self.kind, verdict=V.INCONCLUSIVE,
                          claimed_rate=None if self.claimed_rate is None else float(self.claimed_rate),
                          params=params, assumptions=list(self.assumptions))
        res.symbolic = [s.evaluate() for s in self.symbolic]
        return res, params, time.perf_counter()

    @staticmethod
    def finish(res: CheckResult, findings: Sequence[Finding], t0: float, reason: str | None = None) -> CheckResult:
        """Set readings and verdict from the findings; a default reason names the deciding findings."""
        res.readings = {f.name: f.as_reading() for f in findings}
        res.verdict = verdict_of_findings(findings)
        if reason is not None:
            res.reason = reason
        elif res.verdict not in (V.HOLDS, V.REPRODUCED):
            bad = [f for f in findings if f.paper and f.verdict == res.verdict] or \
                  [f for f in findings if f.verdict == res.verdict]
            res.reason = "; ".join(f"{f.name}: {f.verdict}" + (f" ({f.evidence})" if isinstance(f.evidence, str) else "")
                                   for f in bad)
        else:   # the paper's claims stand; say so when an analysis beside them is refuted
            side = [f for f in findings if not f.paper and f.verdict in (V.VIOLATED, V.NOT_REPRODUCED)]
            if side and not res.reason:
                res.reason = "paper claims stand; analyses refuted: " + "; ".join(
                    f"{f.name}: {f.verdict}" + (f" ({f.evidence})" if isinstance(f.evidence, str) else "") for f in side)
        ratios = [f.max_ratio for f in findings if f.paper and f.max_ratio is not None and np.isfinite(f.max_ratio)]
        if ratios and res.max_ratio is None:
            res.max_ratio = max(ratios)
        res.seconds = time.perf_counter() - t0
        return res
