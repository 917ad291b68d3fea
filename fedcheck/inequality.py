"""Measured inequalities, pathwise or in expectation: :class:`InequalityCheck`.

Intermediate results of convergence proofs (a lemma's stability bound, a one-step identity, a
variance step) are inequalities between quantities a run (or a random draw) produces.  A
:class:`Comparison` holds the measured left-hand side, one interval ``[lo, hi]`` per sample and point
(exact optima are known to an interval), the right-hand side, an interval per point (constants known
to an interval), and a relation ``<=``, ``>=`` or ``==`` (an identity).  Verdicts follow
:mod:`fedcheck.verdict` through :func:`fedcheck.checkbase.compare_interval`:

* pathwise (``expectation=False``): every sample must satisfy the relation;
* in expectation (``expectation=True``): the mean over samples, widened by ``POLICY.statistical_z``
  standard errors (:func:`fedcheck.checkbase.stat_interval`), is compared; one sample of a random
  quantity cannot decide (``inconclusive``);
* ``==`` holds when both ``<=`` and ``>=`` hold within the rounding slack.

:class:`InequalityCheck` runs a paper module's ``cases(config, params)``: a list of :class:`Case`
(one instance, run or draw each) with one :class:`Comparison` per reading.  A reading's verdict is
the worst over cases; the check's verdict the worst over ``paper=True`` readings.  Refuting cases
are written with ``Case.save`` when the run has a ``save_dir``.

    lemma = InequalityCheck(id="paper.lemma_c3", paper=P, reference="Lemma C.3, (C.6)", claim="...",
                            cases=lemma_cases, readings=[Reading("as stated"), Reading("k <= K-1")])
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp

from fedcheck.core import verdict as V
from fedcheck.check import Reading, RunConfig
from fedcheck.checkbase import Finding, GenericCheck, compare_interval

__all__ = ["Comparison", "Inequality", "Case", "InequalityCheck", "evaluate_expr"]


def evaluate_expr(expr, values: dict, n: int | None = None) -> np.ndarray:
    """Evaluate a SymPy expression with ``values[name]`` (scalars or equal-length arrays) for each free
    symbol; ``inf``/``nan`` where undefined (no warnings)."""
    expr = sp.sympify(expr)
    free = sorted(expr.free_symbols, key=lambda s: s.name)
    missing = [s.name for s in free if s.name not in values]
    if missing:
        raise KeyError(f"{expr} needs values for {missing}")
    fn = sp.lambdify(free, expr, modules="numpy")
    args = [np.asarray(values[s.name], dtype=float) for s in free]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.asarray(fn(*args), dtype=float)
    return out if n is None else np.broadcast_to(out, (n,)).copy()


@dataclass
class Comparison:
    """``lhs (relation) rhs`` at ``P`` points from ``S`` samples (also exported as ``Inequality``).

    ``lhs_lo``/``lhs_hi``: ``(S, P)``, ``(P,)`` or scalar; ``rhs_lo``/``rhs_hi``: ``(P,)`` or scalar;
    ``scale``: size of the quantities subtracted to form both sides (for the rounding slack);
    ``points``: labels (rounds, ``(r, k)`` pairs, ...) named ``point_name`` in the summary."""

    lhs_lo: Any
    lhs_hi: Any = None
    rhs_lo: Any = 0.0
    rhs_hi: Any = None
    relation: str = "<="
    expectation: bool = False
    scale: Any = 1.0
    points: Sequence | None = None
    point_name: str = "point"

    def __post_init__(self):
        lo = np.asarray(self.lhs_lo, dtype=float)
        lo = lo.reshape(1, -1) if lo.ndim < 2 else lo
        hi = lo if self.lhs_hi is None else np.asarray(self.lhs_hi, dtype=float).reshape(lo.shape)
        P = lo.shape[1]
        self.lhs_lo, self.lhs_hi = lo, hi
        self.rhs_lo = np.broadcast_to(np.asarray(self.rhs_lo, dtype=float), (P,)).astype(float)
        self.rhs_hi = self.rhs_lo.copy() if self.rhs_hi is None else \
            np.broadcast_to(np.asarray(self.rhs_hi, dtype=float), (P,)).astype(float)
        self.scale = np.broadcast_to(np.asarray(self.scale, dtype=float), (P,)).astype(float)
        if self.relation not in ("<=", ">=", "=="):
            raise ValueError(f"relation must be <=, >= or ==, got {self.relation!r}")

    def measured(self):
        """``(lo, hi, value, se)`` per point: the interval the verdict uses, a point value and its SE."""
        lo, hi = self.lhs_lo, self.lhs_hi
        if not self.expectation:
            return lo, hi, hi.max(0) if self.relation == "<=" else lo.min(0), np.zeros(lo.shape[1])
        S = lo.shape[0]
        se = (np.maximum(lo.std(0, ddof=1), hi.std(0, ddof=1)) / math.sqrt(S)) if S > 1 \
            else np.full(lo.shape[1], np.nan)
        z = V.POLICY.statistical_z
        mlo, mhi = lo.mean(0), hi.mean(0)
        return (mlo - z * se)[None], (mhi + z * se)[None], mhi if self.relation != ">=" else mlo, se

    estimate = measured  # the name used by fedcheck.expectation_bound

    def codes(self) -> np.ndarray:
        lo, hi, _, _ = self.measured()
        rl, rh, sc = self.rhs_lo[None], self.rhs_hi[None], self.scale[None]
        if self.relation == "<=":
            c = compare_interval(lo, hi, rl, rh, sc)
        elif self.relation == ">=":
            c = compare_interval(rl, rh, lo, hi, sc)
        else:
            c = np.maximum(compare_interval(lo, hi, rl, rh, sc), compare_interval(rl, rh, lo, hi, sc))
        return c.max(0)

    def summary(self) -> dict:
        codes = self.codes()
        _, _, val, se = self.measured()
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.relation == "==":
                ratio = np.abs(val - self.rhs_hi) / np.maximum(np.abs(self.scale), 1.0)
            elif self.relation == "<=":
                ratio = np.where(self.rhs_hi != 0, val / self.rhs_hi, np.nan)
            else:
                ratio = np.where(val != 0, self.rhs_hi / val, np.nan)
        fin = np.isfinite(ratio)
        pts = list(self.points) if self.points is not None else list(range(len(codes)))
        bad = np.nonzero(codes == 2)[0]
        worst = int(np.nanargmax(np.where(fin, ratio, -np.inf))) if fin.any() else None
        pn = self.point_name
        return {"verdict": V.verdict_of_codes(codes), "relation": self.relation,
                "max_ratio": float(ratio[worst]) if worst is not None else None,
                "ratio_meaning": {"<=": "lhs / rhs", ">=": "rhs / lhs",
                                  "==": "|lhs - rhs| / max(1, scale)"}[self.relation],
                f"argmax_{pn}": _plain(pts[worst]) if worst is not None else None,
                "lhs_at_argmax": float(val[worst]) if worst is not None else None,
                "rhs_at_argmax": float(self.rhs_hi[worst]) if worst is not None else None,
                f"first_violation_{pn}": _plain(pts[bad[0]]) if bad.size else None,
                "violations": int((codes == 2).sum()), "undecided": int((codes == 1).sum()),
                "points": int(len(codes)), "samples": int(self.lhs_lo.shape[0]),
                "expectation": bool(self.expectation)}


Inequality = Comparison


def _plain(x):
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


@dataclass
class Case:
    """One instance (or draw) of an inequality check: an :class:`Inequality` per reading name."""

    label: str
    inequalities: dict
    instance: dict = field(default_factory=dict)
    evidence: dict = field(default_factory=dict)
    series: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    save: Callable[[str], list] | None = None     # save(path_stem) -> paths written
    reason: str | None = None                     # why the case cannot decide (e.g. an inaccurate solve)


@dataclass(kw_only=True)
class InequalityCheck(GenericCheck):
    """See the module doc.  ``cases(config, params) -> list[Case]``."""

    cases: Callable[[RunConfig, dict], list]
    readings: Sequence[Reading] = (Reading("as stated"),)
    formula: dict = field(default_factory=dict)
    kind: str = "bound"

    def run(self, config: RunConfig):
        res, params, t0 = self.new_result(config)
        res.formula = dict(self.formula)
        res.formula.setdefault("readings", {r.name: {"paper": r.paper, "description": r.description}
                                            for r in self.readings})
        cases = self.cases(config, params)
        records, series, tables, findings = [], [], [], []
        per = {r.name: [] for r in self.readings}
        for case in cases:
            summ = {}
            for r in self.readings:
                if r.name in case.inequalities:
                    s = case.inequalities[r.name].summary()
                    if case.reason:
                        s["verdict"] = V.combine([s["verdict"], V.INCONCLUSIVE])
                    summ[r.name] = s
                    per[r.name].append((case, s))
            rec = {"label": case.label, "instance": case.instance, "readings": summ, "evidence": case.evidence}
            if case.reason:
                rec["inconclusive_reason"] = case.reason
            records.append(rec)
            series.extend(case.series)
            tables.extend(case.tables)
        for r in self.readings:
            items = per[r.name]
            vs = [s["verdict"] for _, s in items]
            ratios = [s["max_ratio"] for _, s in items if s["max_ratio"] is not None and np.isfinite(s["max_ratio"])]
            bad = [(c, s) for c, s in items if s["verdict"] == V.VIOLATED]
            ev = None
            if bad:
                c, s = bad[0]
                where = [f"{k[len('first_violation_'):]} {v}" for k, v in s.items()
                         if k.startswith("first_violation_") and v is not None]
                worst = (f" (lhs {s['lhs_at_argmax']:.4g} vs rhs {s['rhs_at_argmax']:.4g} at the worst point)"
                         if s.get("lhs_at_argmax") is not None and s.get("rhs_at_argmax") is not None else "")
                ev = (f"violated on {len(bad)}/{len(items)} case(s); first: {c.label}"
                      + (f" at {where[0]}" if where else "") + worst)
            f = Finding(r.name, V.combine(vs) if vs else V.INCONCLUSIVE, r.paper, r.description,
                        max(ratios) if ratios else None, ev)
            findings.append(f)
        reason = None
        if not cases:
            reason = "no case"
        elif all(c.reason for c in cases):
            reason = "; ".join(sorted({c.reason for c in cases}))
        res.instances = records
        if series:
            res.series = series
        if tables:
            res.tables = tables
        res.evidence = {"cases": len(cases)}
        res = self.finish(res, findings, t0, reason)
        if res.verdict == V.VIOLATED and config.save_dir:
            decisive = {r.name for r in self.readings if r.paper} or {r.name for r in self.readings}
            done = set()
            for case in cases:
                if case.save and case.label not in done and any(
                        s["verdict"] == V.VIOLATED for n, s in
                        ((n, s) for n, lst in per.items() if n in decisive for c, s in lst if c is case)):
                    done.add(case.label)
                    res.saved_instances.extend(case.save(f"{config.save_dir}/{self.id}-{_slug(case.label)}"))
        return res


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in s)[:80]
