"""Verdicts and the tolerance policy, written in one place.

Bound verdicts: ``holds``, ``violated``, ``inconclusive``.
Counterexample verdicts: ``reproduced``, ``not_reproduced`` (and ``inconclusive``).

The policy for an upper bound ``metric(k) <= bound(k)``:

* The exact optimum is only known to lie in an interval (the certified accuracy of
  ``F*``), so the measured metric is an interval ``[lo, hi]``.
* ``slack = rtol * |bound| + atol * max(1, scale)`` absorbs floating-point
  rounding (``scale`` is the size of the quantities subtracted, e.g. ``|F*|``).
* At one round: ``holds`` if ``hi <= bound + slack``; ``violated`` if
  ``lo > bound + slack`` (a certain violation); otherwise ``inconclusive``.
  A NaN anywhere is ``inconclusive``.
* Over rounds and instances: ``violated`` if any round is, else ``inconclusive``
  if any round is, else ``holds``.

Rates: the log-log slope of the metric over the last ``fit_decades`` decades,
using only points above ``resolution_factor`` times the certified floor, with a
``confidence`` interval.  Against a claimed upper rate ``r`` (metric = O(t^r)):
``holds`` if the interval lies at or below ``r + rate_slack``, ``violated`` if it
lies above, ``inconclusive`` otherwise or with too few points.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

HOLDS, VIOLATED, INCONCLUSIVE = "holds", "violated", "inconclusive"
REPRODUCED, NOT_REPRODUCED = "reproduced", "not_reproduced"
_ORDER = {HOLDS: 0, REPRODUCED: 0, INCONCLUSIVE: 1, NOT_REPRODUCED: 2, VIOLATED: 2}


@dataclass(frozen=True)
class TolerancePolicy:
    rtol: float = 1e-9
    atol: float = 64 * np.finfo(float).eps
    feasibility_tol: float = 1e-9      # relative to the set's size (its radius)
    fit_decades: float = 1.0
    fit_min_points: int = 8
    fit_points_per_decade: int = 50
    confidence: float = 0.95
    rate_slack: float = 0.0
    resolution_factor: float = 10.0
    statistical_z: float = 3.0         # mean + z standard errors for expectations
    negligible_bound: float = 1e-6     # a ratio is reported only where |bound| > this * max(1, scale)


POLICY = TolerancePolicy()


def slack(bound: np.ndarray, scale: np.ndarray | float = 1.0, policy: TolerancePolicy = POLICY) -> np.ndarray:
    return policy.rtol * np.abs(bound) + policy.atol * np.maximum(1.0, np.abs(scale))


def compare_upper(lo, hi, bound, scale=1.0, policy: TolerancePolicy = POLICY) -> np.ndarray:
    """Per point: 0 holds, 1 inconclusive, 2 violated (see the module doc)."""
    lo, hi, bound = (np.asarray(a, dtype=float) for a in (lo, hi, bound))
    thr = bound + slack(bound, scale, policy)
    code = np.where(hi <= thr, 0, np.where(lo > thr, 2, 1))
    bad = ~(np.isfinite(lo) & np.isfinite(hi) & np.isfinite(bound))
    return np.where(bad, 1, code)


def verdict_of_codes(codes) -> str:
    codes = np.asarray(codes)
    if codes.size == 0:
        return INCONCLUSIVE
    if (codes == 2).any():
        return VIOLATED
    if (codes == 1).any():
        return INCONCLUSIVE
    return HOLDS


def combine(verdicts) -> str:
    """Worst verdict of several (violated > inconclusive > holds)."""
    verdicts = list(verdicts)
    if not verdicts:
        return INCONCLUSIVE
    return max(verdicts, key=lambda v: _ORDER[v])


def fit_rate(k, y, floor=0.0, policy: TolerancePolicy = POLICY) -> dict | None:
    """Least-squares slope of log y against log k over the last decades, with a CI.

    Returns ``None`` when fewer than ``fit_min_points`` usable points remain."""
    k = np.asarray(k, dtype=float)
    y = np.asarray(y, dtype=float)
    if k.size == 0:
        return None
    kmax = k.max()
    kmin = max(kmax / 10 ** policy.fit_decades, 1.0)
    # log-spaced subsample so that dense early indices do not dominate the fit
    targets = np.logspace(np.log10(kmin), np.log10(kmax), int(policy.fit_points_per_decade * policy.fit_decades) + 1)
    idx = np.unique(np.clip(np.searchsorted(k, targets), 0, k.size - 1))
    floor = np.broadcast_to(np.asarray(floor, dtype=float), y.shape)
    ok = np.isfinite(y[idx]) & (y[idx] > policy.resolution_factor * floor[idx]) & (y[idx] > 0)
    idx = idx[ok]
    if idx.size < policy.fit_min_points:
        return None
    lx, ly = np.log(k[idx]), np.log(y[idx])
    res = stats.linregress(lx, ly)
    q = stats.t.ppf(0.5 + policy.confidence / 2, idx.size - 2)
    return {"slope": float(res.slope), "ci": [float(res.slope - q * res.stderr), float(res.slope + q * res.stderr)],
            "intercept": float(res.intercept), "points": int(idx.size), "k_range": [float(k[idx[0]]), float(k[idx[-1]])]}


def rate_verdict(ci, claimed: float, policy: TolerancePolicy = POLICY) -> str:
    if ci is None or not np.all(np.isfinite(ci)):
        return INCONCLUSIVE
    if ci[1] <= claimed + policy.rate_slack:
        return HOLDS
    if ci[0] > claimed + policy.rate_slack:
        return VIOLATED
    return INCONCLUSIVE


def pooled_rate(fits: list[dict | None], policy: TolerancePolicy = POLICY) -> dict | None:
    """Mean of per-instance slopes with a t-interval over instances (a single fit keeps its own CI)."""
    good = [f for f in fits if f is not None]
    if not good:
        return None
    s = np.array([f["slope"] for f in good])
    if s.size == 1:
        return {"slope": float(s[0]), "ci": good[0]["ci"], "instances": 1}
    se = s.std(ddof=1) / np.sqrt(s.size)
    q = stats.t.ppf(0.5 + policy.confidence / 2, s.size - 1)
    return {"slope": float(s.mean()), "ci": [float(s.mean() - q * se), float(s.mean() + q * se)], "instances": int(s.size)}
