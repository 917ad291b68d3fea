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
``confidence`` interval (OLS, and Newey-West HAC since residuals along a run are
autocorrelated), and the slope of every decade.  A claimed O(t^r) rate
(:func:`rate_claim_verdict`): ``holds`` if the HAC interval lies at or below
``r + rate_slack``, ``not_shown`` if it lies above (a finite run cannot refute an O(.)
claim), ``inconclusive`` otherwise, with too few points, or when the fit is
pre-asymptotic (the slopes of the last two decades differ by more than ``rate_drift``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    rate_drift: float = 0.2            # slopes of the last two decades further apart than this: pre-asymptotic
    negligible_bound: float = 1e-4     # a ratio is reported only where |bound| > this * max(1, scale, |measured|)


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


def _hac_slope(lx: np.ndarray, ly: np.ndarray, confidence: float) -> tuple[float, float, float, int]:
    """Least-squares slope with a Newey-West (HAC) standard error: residuals along a run are autocorrelated,
    so the plain OLS interval is too narrow.  Returns (slope, intercept, half-width, lags)."""
    from scipy import stats
    from statsmodels.regression.linear_model import OLS     # not statsmodels.api: it also imports the data sets
    from statsmodels.tools.tools import add_constant         # (0.3 s more per process)
    n = lx.size
    lags = max(1, int(np.floor(4 * (n / 100.0) ** (2.0 / 9.0))))
    X = add_constant(lx)
    fit = OLS(ly, X).fit(cov_type="HAC", cov_kwds={"maxlags": lags})
    q = stats.t.ppf(0.5 + confidence / 2, max(n - 2, 1))
    return float(fit.params[1]), float(fit.params[0]), float(q * fit.bse[1]), lags


def decade_slopes(k, y, floor=0.0, policy: "TolerancePolicy" = None, min_points: int = 4) -> list[dict]:
    """The log-log slope in every full decade of ``k`` with enough usable points (above the floor)."""
    from scipy import stats       # imported where used: ``fedcheck list`` and ``--help`` do not need it
    policy = policy or POLICY
    k = np.asarray(k, dtype=float)
    y = np.asarray(y, dtype=float)
    floor = np.broadcast_to(np.asarray(floor, dtype=float), y.shape)
    out = []
    if k.size == 0 or k.max() < 10:
        return out
    for j in range(int(np.floor(np.log10(max(k.min(), 1.0)))), int(np.floor(np.log10(k.max())))):
        lo, hi = 10.0 ** j, 10.0 ** (j + 1)
        sel = (k >= lo) & (k <= hi) & np.isfinite(y) & (y > 0) & (y > policy.resolution_factor * floor)
        if sel.sum() >= min_points:
            sl = stats.linregress(np.log(k[sel]), np.log(y[sel])).slope
            out.append({"decade": [lo, hi], "slope": float(sl), "points": int(sel.sum())})
    return out


def fit_rate(k, y, floor=0.0, policy: TolerancePolicy = POLICY, window: str = "last_decades",
             min_points: int | None = None) -> dict | None:
    """The log-log slope of ``y`` against ``k`` over the last ``fit_decades`` decades, with an interval that
    accounts for the autocorrelation of the residuals (Newey-West HAC), the slopes of every decade, and a
    ``pre_asymptotic`` flag when the last two decades disagree by more than ``POLICY.rate_drift`` (the fit has not
    settled: its slope says nothing about the limit).  ``None`` with fewer than ``fit_min_points`` usable points."""
    from scipy import stats
    k = np.asarray(k, dtype=float)
    y = np.asarray(y, dtype=float)
    if k.size == 0:
        return None
    if window == "all":      # every given point (a few horizons, a few eps): no subsample
        idx = np.arange(k.size)
    else:
        kmax = k.max()
        kmin = max(kmax / 10 ** policy.fit_decades, 1.0)
        # log-spaced subsample so that dense early indices do not dominate the fit
        targets = np.logspace(np.log10(kmin), np.log10(kmax),
                              int(policy.fit_points_per_decade * policy.fit_decades) + 1)
        idx = np.unique(np.clip(np.searchsorted(k, targets), 0, k.size - 1))
    floor = np.broadcast_to(np.asarray(floor, dtype=float), y.shape)
    ok = (np.isfinite(y[idx]) & np.isfinite(k[idx]) & (k[idx] > 0) & (y[idx] > policy.resolution_factor * floor[idx])
          & (y[idx] > 0))
    idx = idx[ok]
    if idx.size < (policy.fit_min_points if min_points is None else min_points) or idx.size < 3:
        return None
    lx, ly = np.log(k[idx]), np.log(y[idx])
    res = stats.linregress(lx, ly)
    q = stats.t.ppf(0.5 + policy.confidence / 2, idx.size - 2)
    slope, intercept, half, lags = _hac_slope(lx, ly, policy.confidence)
    decades = decade_slopes(k, y, floor, policy)
    pre = len(decades) >= 2 and abs(decades[-1]["slope"] - decades[-2]["slope"]) > policy.rate_drift
    return {"slope": float(res.slope), "ci": [float(res.slope - q * res.stderr), float(res.slope + q * res.stderr)],
            "ci_hac": [float(res.slope - half), float(res.slope + half)],
            "ci_method": f"OLS (ci); Newey-West HAC with {lags} lag(s) (ci_hac)",
            "intercept": float(res.intercept), "points": int(idx.size), "k_range": [float(k[idx[0]]), float(k[idx[-1]])],
            "decades": decades, "pre_asymptotic": bool(pre)}


RATE_NOT_SHOWN, RATE_TIGHT = "not_shown", "tight"
_ORDER[RATE_NOT_SHOWN] = 1
_ORDER[RATE_TIGHT] = 0


def rate_verdict(ci, claimed: float, policy: TolerancePolicy = POLICY) -> str:
    """A slope interval against an exponent: ``holds`` at or below, ``violated`` above, else ``inconclusive``.
    (Measurements use it to decide "converges" / "stalls"; an O(.) claim is judged by :func:`rate_claim_verdict`.)"""
    if ci is None or not np.all(np.isfinite(ci)):
        return INCONCLUSIVE
    if ci[1] <= claimed + policy.rate_slack:
        return HOLDS
    if ci[0] > claimed + policy.rate_slack:
        return VIOLATED
    return INCONCLUSIVE


def rate_claim_verdict(fit: dict | None, claimed: float, policy: TolerancePolicy = POLICY) -> str:
    """Whether a finite run *shows* an O(t^claimed) rate, from a pooled fit: ``holds`` (the HAC interval lies at or
    below the claimed exponent), ``not_shown`` (above it: slower over the fitted range -- a finite run cannot
    refute an O(.) claim, so this is never ``violated``), ``tight`` (the interval contains the claimed exponent: the
    rate shows and is attained), ``inconclusive`` (too few points, or a pre-asymptotic fit: the slopes of the last
    two decades disagree)."""
    if fit is None or fit.get("pre_asymptotic"):
        return INCONCLUSIVE
    ci = fit.get("ci_hac") or fit.get("ci")
    v = rate_verdict(ci, claimed, policy)
    if v == INCONCLUSIVE and ci is not None and np.all(np.isfinite(ci)) and ci[0] <= claimed <= ci[1]:
        return RATE_TIGHT       # the claimed exponent is inside the interval: the rate shows, and is attained
    return RATE_NOT_SHOWN if v == VIOLATED else v


def pooled_rate(fits: list[dict | None], policy: TolerancePolicy = POLICY) -> dict | None:
    """Mean of per-instance slopes with its interval, the mean slope of every decade, and ``pre_asymptotic`` if any
    instance's fit is.

    Two sources of uncertainty: the spread of the slopes *between instances* (``ci_between_instances``: the
    t-interval of their mean) and the uncertainty of each instance's fit *within its run* (the mean half-width of the
    per-instance intervals over ``sqrt(instances)``: ``within_run_half_width_hac`` from the Newey-West intervals,
    ``within_run_half_width_ols`` from the plain OLS ones).  ``ci_hac`` -- the interval a rate is judged by -- is the
    mean plus or minus the larger of the between-instance half-width and the HAC within-run one; ``ci_ols`` likewise
    with the OLS one.  Whenever the instances' slopes differ more than one run's fit is uncertain, both are the
    between-instance interval, hence equal.  ``ci`` is the between-instance interval (kept for earlier readers).  A
    single fit keeps its own intervals (``ci`` = ``ci_ols``: OLS, ``ci_hac``: Newey-West)."""
    from scipy import stats
    good = [f for f in fits if f is not None]
    if not good:
        return None
    s = np.array([f["slope"] for f in good])
    pre = any(f.get("pre_asymptotic") for f in good)
    dec: dict = {}
    for f in good:
        for d in f.get("decades") or []:
            dec.setdefault(tuple(d["decade"]), []).append(d["slope"])
    decades = [{"decade": list(k), "slope": float(np.mean(v)), "instances": len(v)} for k, v in sorted(dec.items())]
    extra = {"pre_asymptotic": pre, "decades": decades}

    def half(f, key):
        ci = f.get(key) or f["ci"]
        return (ci[1] - ci[0]) / 2
    if s.size == 1:
        f = good[0]
        return {"slope": float(s[0]), "ci": f["ci"], "ci_hac": f.get("ci_hac", f["ci"]), "ci_ols": f["ci"],
                "ci_between_instances": None, "within_run_half_width_hac": float(half(f, "ci_hac")),
                "within_run_half_width_ols": float(half(f, "ci")), "instances": 1, **extra}
    se = s.std(ddof=1) / np.sqrt(s.size)
    q = stats.t.ppf(0.5 + policy.confidence / 2, s.size - 1)
    within_hac = float(np.mean([half(f, "ci_hac") for f in good])) / np.sqrt(s.size)
    within_ols = float(np.mean([half(f, "ci") for f in good])) / np.sqrt(s.size)
    half_hac = max(q * se, within_hac)
    half_ols = max(q * se, within_ols)
    m = float(s.mean())
    between = [float(m - q * se), float(m + q * se)]
    return {"slope": m, "ci": between, "ci_hac": [m - half_hac, m + half_hac], "ci_ols": [m - half_ols, m + half_ols],
            "ci_between_instances": between, "within_run_half_width_hac": within_hac,
            "within_run_half_width_ols": within_ols, "instances": int(s.size), **extra}


#: Findings decided over draws (data draws, seeds, splits) need at least this many: with fewer, the t interval's
#: few degrees of freedom make it wide and the finding says it is undecided instead of deciding.
MIN_DRAWS = 5
#: The power at which the smallest detectable effect of a test over draws is stated.
POWER = 0.8


def level_of(policy: TolerancePolicy = POLICY) -> float:
    """The two-sided confidence level of ``z = policy.statistical_z`` standard errors: ``2 Phi(z) - 1``."""
    from scipy import stats
    return float(2.0 * stats.norm.cdf(policy.statistical_z) - 1.0)


def t_multiplier(z: float, samples: int, tries: int = 1) -> float:
    """The Student t multiplier of a mean over ``samples`` draws at the two-sided level of ``z`` standard errors
    (``2 Phi(z) - 1``), with ``samples - 1`` degrees of freedom: what replaces ``z`` where the standard error is
    estimated from few draws (NaN with fewer than two).  ``tries``: Bonferroni over that many intervals of one
    family (every point a bound is judged at): each at the two-sided error ``(2 - 2 Phi(z)) / tries``, so that all
    of them hold together with probability at least ``2 Phi(z) - 1``."""
    from scipy import stats
    if samples < 2:
        return float("nan")
    if tries < 1:
        raise ValueError(f"tries must be at least 1, not {tries}")
    if tries == 1:
        return float(stats.t.ppf(stats.norm.cdf(z), samples - 1))
    return float(stats.t.isf(stats.norm.sf(z) / int(tries), samples - 1))


def corrected_level(level: float, tries: int = 1) -> float:
    """Bonferroni: the level each of ``tries`` tests of one finding is run at (one finding tried under several
    readings gets that many chances), so that the finding's family-wise error stays ``1 - level``."""
    if tries < 1:
        raise ValueError(f"tries must be at least 1, not {tries}")
    return 1.0 - (1.0 - float(level)) / int(tries)


def holm(pvalues, alpha: float) -> list[bool]:
    """Holm's step-down correction: which of the hypotheses with ``pvalues`` are rejected at family-wise level
    ``alpha`` (the i-th smallest p-value against ``alpha / (m - i)``, stopping at the first that is not)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    out = [False] * m
    for i, j in enumerate(np.argsort(p, kind="stable")):
        if not p[j] <= alpha / (m - i):
            break
        out[int(j)] = True
    return out


def detectable_effect(se: float, dof: int, level: float, power: float = POWER) -> float:
    """The smallest effect a two-sided t test at ``level`` with ``dof`` degrees of freedom detects with probability
    ``power``: ``(t_{1 - alpha/2, dof} + t_{power, dof}) se`` (``alpha = 1 - level``); infinite without a degree of
    freedom."""
    from scipy import stats
    if dof < 1 or not np.isfinite(se):
        return float("inf")
    return float((stats.t.ppf(0.5 + level / 2, dof) + stats.t.ppf(power, dof)) * se)


def mean_interval(x, policy: TolerancePolicy = POLICY, tries: int = 1, min_draws: int = MIN_DRAWS,
                  threshold: float = 0.0) -> dict:
    """The mean of independent draws ``x`` against ``threshold``, with a Student t interval of ``k - 1`` degrees of
    freedom at the level of ``z = policy.statistical_z`` standard errors, Bonferroni-corrected over ``tries``
    readings: ``holds`` when the interval lies above ``threshold``, ``violated`` below, else ``inconclusive`` --
    also with fewer than ``min_draws`` draws (a finding over draws needs at least :data:`MIN_DRAWS`), which the
    ``why`` says.  ``half_width``: the interval's; ``detectable``: the smallest effect the sample could decide (the
    half-width); ``mde``: the smallest effect a t test at this level detects with :data:`POWER` (80 %) power."""
    from scipy import stats
    d = np.asarray(x, dtype=float).ravel()
    k = int(d.size)
    level = corrected_level(level_of(policy), tries)
    out = {"mean": float(d.mean()) if k else float("nan"), "draws": k, "dof": k - 1, "level": float(level),
           "tries": int(tries), "threshold": float(threshold), "min_draws": int(min_draws), "power": POWER}
    if k < 2 or not np.all(np.isfinite(d)):
        return {**out, "verdict": INCONCLUSIVE, "se": float("inf"), "half_width": float("inf"),
                "detectable": float("inf"), "mde": float("inf"), "ci": [float("-inf"), float("inf")],
                "why": "fewer than two draws" if k < 2 else "a draw is not finite"}
    se = float(d.std(ddof=1) / np.sqrt(k))
    half = float(stats.t.ppf(0.5 + level / 2, k - 1) * se)
    m = out["mean"] - threshold
    v = HOLDS if m - half > 0 else (VIOLATED if m + half < 0 else INCONCLUSIVE)
    why = "" if v != INCONCLUSIVE else (f"|mean difference| {abs(m):.3g} within the t interval's half-width {half:.3g} "
                                        f"({k} draws, {k - 1} degrees of freedom)")
    if k < min_draws:
        v, why = INCONCLUSIVE, (f"only {k} draws ({k - 1} degrees of freedom, half-width {half:.3g}): at least "
                                f"{min_draws} are needed to decide")
    return {**out, "verdict": v, "se": se, "half_width": half, "detectable": half,
            "mde": detectable_effect(se, k - 1, level), "ci": [out["mean"] - half, out["mean"] + half], "why": why}


def welch_difference(a, b, policy: TolerancePolicy = POLICY, tries: int = 1, min_draws: int = MIN_DRAWS) -> dict:
    """Is ``mean(a)`` larger than ``mean(b)``, from independent (unpaired) draws of each?  Welch's t interval of the
    difference of means (Welch-Satterthwaite degrees of freedom) at the level of :func:`mean_interval`,
    Bonferroni-corrected over ``tries``; fewer than ``min_draws`` draws on a side decide nothing.  The same fields
    as :func:`mean_interval` (``draws``: the smaller sample)."""
    from scipy import stats
    a, b = (np.asarray(x, dtype=float).ravel() for x in (a, b))
    k = int(min(a.size, b.size))
    level = corrected_level(level_of(policy), tries)
    m = float(a.mean() - b.mean()) if k else float("nan")
    out = {"mean": m, "draws": k, "level": float(level), "tries": int(tries), "threshold": 0.0,
           "min_draws": int(min_draws), "power": POWER}
    if k < 2 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return {**out, "dof": 0, "verdict": INCONCLUSIVE, "se": float("inf"), "half_width": float("inf"),
                "detectable": float("inf"), "mde": float("inf"), "ci": [float("-inf"), float("inf")],
                "why": "fewer than two draws" if k < 2 else "a draw is not finite"}
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = float(np.sqrt(va + vb))
    den = va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1)
    dof = float((va + vb) ** 2 / den) if den > 0 else float(a.size + b.size - 2)
    q = float(stats.t.ppf(0.5 + level / 2, dof))
    half = q * se
    v = HOLDS if m - half > 0 else (VIOLATED if m + half < 0 else INCONCLUSIVE)
    why = "" if v != INCONCLUSIVE else (f"|mean difference| {abs(m):.3g} within Welch's t interval's half-width "
                                        f"{half:.3g} ({dof:.1f} degrees of freedom)")
    if k < min_draws:
        v, why = INCONCLUSIVE, f"only {k} draws on a side: at least {min_draws} are needed to decide"
    mde = float((q + stats.t.ppf(POWER, dof)) * se)
    return {**out, "dof": dof, "verdict": v, "se": se, "half_width": half, "detectable": half, "mde": mde,
            "ci": [m - half, m + half], "why": why}


def power_text(r: dict, unit: str = "") -> str:
    """How a result of :func:`mean_interval` / :func:`paired_difference` says what its sample could detect."""
    u = f" {unit}" if unit else ""
    corr = f", Bonferroni over {r['tries']} readings" if r.get("tries", 1) > 1 else ""
    return (f"t interval +-{r['half_width']:.3g}{u} ({r['draws']} draws, {r['dof']:.3g} degrees of freedom, level "
            f"{r['level']:.4f}{corr}): the smallest effect this sample could decide is {r['detectable']:.3g}{u} "
            f"({r['mde']:.3g}{u} at {100 * POWER:.0f} % power)")


def power_record(*results: dict) -> dict:
    """The JSON field ``power`` of a finding decided over draws (the runner reads it into the reason): the smallest
    effect its sample could decide -- of the widest of ``results`` (:func:`mean_interval`, :func:`paired_difference`,
    :func:`welch_difference`) when the finding combines several tests."""
    r = max(results, key=lambda x: x["half_width"])
    return {"draws": int(r["draws"]), "dof": float(r["dof"]), "level": float(r["level"]), "tries": int(r.get("tries", 1)),
            "half_width": float(r["half_width"]), "detectable": float(r["detectable"]), "mde": float(r["mde"]),
            "power": POWER, "tests": len(results)}


def fraction_power(runs: int, max_fraction: float, confidence: float | None = None, tries: int = 1) -> dict:
    """The ``power`` record of a ``fraction(q)`` finding: ``runs`` runs judged by a Clopper-Pearson interval at
    ``confidence`` (the policy's by default), Bonferroni-corrected over ``tries``, ``violated`` when it lies above
    ``q = max_fraction`` and ``holds`` when it lies at or below (with ``q = 0``: when no run fails).  Per side, the
    smallest deviation from ``q`` this many runs could decide: of the observed fraction (``detectable_above``: the
    fewest failing runs whose interval lies above ``q``, as a fraction, minus ``q``; ``detectable_below``: ``q``
    minus the most failing runs whose interval lies at or below it) and of the true fraction, detected with
    :data:`POWER` (``mde_above``/``mde_below``, exact binomial).  No side below ``q = 0`` (``None``).
    ``detectable``/``mde``: the larger of the sides (infinite where a side cannot be decided with this many runs)."""
    from scipy import stats
    n, q = int(runs), float(max_fraction)
    level = corrected_level(POLICY.confidence if confidence is None else confidence, tries)
    a, inf = 1.0 - level, float("inf")
    k = np.arange(n + 1)
    with np.errstate(invalid="ignore"):
        lo = np.where(k == 0, 0.0, stats.beta.ppf(a / 2, np.maximum(k, 1), n - k + 1))
        hi = np.where(k == n, 1.0, stats.beta.ppf(1 - a / 2, k + 1, np.maximum(n - k, 1)))
    up, dn = np.flatnonzero(lo > q), np.flatnonzero(hi <= q)
    # P(Bin(n, p) >= kv) = I_p(kv, n - kv + 1); P(Bin(n, p) <= kh) = 1 - I_p(kh + 1, n - kh)
    d_up, m_up = (up[0] / n - q, float(stats.beta.ppf(POWER, up[0], n - up[0] + 1)) - q) if n and up.size else (inf, inf)
    d_dn, m_dn = (q - dn[-1] / n, q - float(stats.beta.ppf(1 - POWER, dn[-1] + 1, n - dn[-1]))) if n and dn.size \
        else (inf, inf)
    if q == 0:
        d_dn = m_dn = None
    sides = [x for x in (d_up, d_dn) if x is not None]
    return {"draws": n, "dof": None, "level": float(level), "tries": int(tries), "threshold": q, "test": "Clopper-Pearson",
            "half_width": float(max(sides)), "detectable": float(max(sides)),
            "mde": float(max(x for x in (m_up, m_dn) if x is not None)), "power": POWER, "tests": 1,
            "detectable_above": float(d_up), "mde_above": float(m_up),
            "detectable_below": None if d_dn is None else float(d_dn), "mde_below": None if m_dn is None else float(m_dn)}


def paired_difference(a, b, policy: TolerancePolicy = POLICY, tries: int = 1, min_draws: int = 2) -> dict:
    """Is ``a`` larger than ``b``, judged on paired draws (``a[s]``, ``b[s]`` on the same data draw ``s``)?  A t
    interval of the mean difference with ``k - 1`` degrees of freedom, at the two-sided level of ``z =
    policy.statistical_z`` standard errors (``2 Phi(z) - 1``, 0.9973 for z = 3), Bonferroni-corrected over ``tries``
    readings (:func:`mean_interval` of the differences): ``holds`` when it lies above 0, ``violated`` below, else
    ``inconclusive`` -- with fewer than two draws (or ``min_draws``), or draws whose differences do not vary
    enough to decide, the comparison says so instead of taking z standard errors of one degree of freedom.
    ``detectable``: the smallest mean difference this sample could have decided (the interval's half-width);
    ``mde``: the one a t test detects with 80 % power."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size < 2 or not np.all(np.isfinite(d)):
        r = mean_interval(d, policy, tries, min_draws)
        return {**r, "why": "fewer than two paired draws" if d.size < 2 else "a draw is not finite"}
    return mean_interval(d, policy, tries, min_draws)


def counterexample_of(*verdicts: str) -> str:
    """A counterexample decided from interval tests (each ``holds``: the run shows that part of the failure,
    ``violated``: it shows the opposite, ``inconclusive``: its interval straddles the decision region):
    ``reproduced`` when every part shows, ``not_reproduced`` only when some part certainly shows the opposite,
    ``inconclusive`` otherwise -- an undecided interval is never a refutation."""
    if not verdicts:
        return INCONCLUSIVE
    if any(v == VIOLATED for v in verdicts):
        return NOT_REPRODUCED
    if all(v == HOLDS for v in verdicts):
        return REPRODUCED
    return INCONCLUSIVE
