"""Fractions of failing seeds, on top of :class:`fedcheck.inequality.InequalityCheck`.

A paper may state a guarantee for *every* run of a randomized method (compression,
sampling) while its proof only bounds an expectation.  :class:`SeedFractionCheck` is an
``InequalityCheck`` whose cases hold one sample per seed of the algorithm's randomness; for
every *pathwise* reading it also reports the fraction of samples (runs) that certainly fail
(some point with :func:`fedcheck.checkbase.compare_interval` code 2), with a Clopper-Pearson
interval at ``POLICY.confidence``.  Expectation readings
(``Comparison(expectation=True)``) are judged by ``InequalityCheck`` (mean and standard error).

Declaration (the cases function runs the algorithm and builds the comparisons)::

    compressed = SeedFractionCheck(id="paper.compressed", paper=P, reference="Theorem 1",
        claim="every run is an eps-solution", cases=compressed_cases,
        readings=[Reading("every run (as stated)"), Reading("in expectation (proof)")])
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats

from fedcheck.core import verdict as V
from fedcheck.check import CheckResult, RunConfig
from fedcheck.checkbase import compare_interval
from fedcheck.inequality import InequalityCheck

__all__ = ["SeedFractionCheck", "clopper_pearson", "failing_samples"]


def clopper_pearson(k: int, n: int, confidence: float = V.POLICY.confidence) -> list[float]:
    """Exact binomial interval for the proportion ``k / n``."""
    if n == 0:
        return [0.0, 1.0]
    a = 1 - confidence
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return [lo, hi]


def failing_samples(ineq) -> np.ndarray:
    """Per sample of a pathwise inequality: does some point certainly fail (code 2)?"""
    lo, hi = ineq.lhs_lo, ineq.lhs_hi
    rl, rh, sc = ineq.rhs_lo[None], ineq.rhs_hi[None], ineq.scale[None]
    if ineq.relation == "<=":
        codes = compare_interval(lo, hi, rl, rh, sc)
    elif ineq.relation == ">=":
        codes = compare_interval(rl, rh, lo, hi, sc)
    else:
        codes = np.maximum(compare_interval(lo, hi, rl, rh, sc), compare_interval(rl, rh, lo, hi, sc))
    return (codes == 2).any(1)


@dataclass(kw_only=True)
class SeedFractionCheck(InequalityCheck):
    """See the module doc."""

    kind: str = "expectation"

    def run(self, config: RunConfig) -> CheckResult:
        t0 = time.perf_counter()
        params = {**self.params, **(config.params or {})}
        cases = self.cases(config, params)
        res = InequalityCheck.run(dataclasses.replace(self, cases=lambda c, p: cases), config)
        fractions = {}
        for r in self.readings:
            k = n = 0
            for case in cases:
                ineq = case.inequalities.get(r.name)
                if ineq is None or ineq.expectation:
                    continue
                bad = failing_samples(ineq)
                k += int(bad.sum())
                n += int(bad.size)
            if n:
                fractions[r.name] = {"failed_runs": k, "runs": n, "fraction": k / n, "ci": clopper_pearson(k, n),
                                     "confidence": V.POLICY.confidence}
                res.readings[r.name].update({"failed_runs": k, "runs": n, "failure_fraction": k / n,
                                             "failure_fraction_ci": fractions[r.name]["ci"]})
        res.evidence = {**res.evidence, "failure_fractions": fractions}
        if res.verdict == V.VIOLATED and fractions:
            worst = max(fractions.items(), key=lambda kv: kv[1]["fraction"])
            res.reason = (f"{worst[1]['failed_runs']}/{worst[1]['runs']} runs fail reading {worst[0]!r} "
                          f"(fraction {worst[1]['fraction']:.3g}, {100 * V.POLICY.confidence:.0f}% CI "
                          f"[{worst[1]['ci'][0]:.3g}, {worst[1]['ci'][1]:.3g}]); " + (res.reason or ""))
        res.seconds = time.perf_counter() - t0
        return res
