"""Statistics with power: findings over draws use Student t intervals with their degrees of freedom, at least
``MIN_DRAWS`` draws, a Bonferroni/Holm correction when one finding is tried under several readings, and say the
smallest effect their sample could detect; an undecided interval is never a refutation."""
import numpy as np
from scipy import stats

from fedcheck import verdicts as V


def test_mean_interval_is_students_t_with_k_minus_1_degrees_of_freedom():
    x = np.array([1.0, 2.5, 2.0, 3.0, 4.0, 2.2])
    r = V.mean_interval(x)
    level = 2 * stats.norm.cdf(V.POLICY.statistical_z) - 1
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert r["dof"] == 5 and np.isclose(r["level"], level)
    assert np.isclose(r["half_width"], stats.t.ppf(0.5 + level / 2, 5) * se)
    assert r["verdict"] == V.HOLDS and r["detectable"] == r["half_width"]
    # 80 % power: (t_{1-alpha/2} + t_{0.8}) SE
    assert np.isclose(r["mde"], (stats.t.ppf(0.5 + level / 2, 5) + stats.t.ppf(0.8, 5)) * se)
    assert V.mean_interval(-x)["verdict"] == V.VIOLATED


def test_fewer_than_five_draws_decide_nothing_and_say_so():
    r = V.mean_interval([10.0, 10.1, 9.9, 10.05])           # far from 0, but only 4 draws
    assert r["verdict"] == V.INCONCLUSIVE and "at least 5" in r["why"] and V.MIN_DRAWS == 5
    assert V.mean_interval([10.0, 10.1, 9.9, 10.05, 10.02])["verdict"] == V.HOLDS


def test_a_finding_tried_under_several_readings_is_corrected():
    assert np.isclose(V.corrected_level(0.95, 2), 0.975)
    x = np.array([0.9, 1.1, 1.0, 1.2, 0.8, 1.05])
    one, two = V.mean_interval(x), V.mean_interval(x, tries=2)
    assert two["half_width"] > one["half_width"] and two["tries"] == 2
    assert V.paired_difference(x, 0 * x, tries=2)["half_width"] == two["half_width"]
    # Holm: step-down, family-wise level alpha
    assert V.holm([0.01, 0.04, 0.03], 0.05) == [True, False, False]
    assert V.holm([0.01, 0.02, 0.03], 0.05) == [True, True, True]
    assert V.holm([0.2, 0.001], 0.05) == [False, True]


def test_power_text_names_what_the_sample_could_detect():
    r = V.mean_interval([1.0, 1.2, 0.9, 1.1, 1.05], tries=2)
    t = V.power_text(r, "points")
    assert "smallest effect this sample could decide" in t and "80 % power" in t and "Bonferroni over 2" in t


def test_an_undecided_interval_is_never_a_refutation():
    # a counterexample decided from intervals: a straddling interval is inconclusive, not not_reproduced
    assert V.reproduced_if(V.INCONCLUSIVE) == V.INCONCLUSIVE
    assert V.reproduced_if((V.HOLDS, V.INCONCLUSIVE)) == V.INCONCLUSIVE
    assert V.reproduced_if((V.HOLDS, V.HOLDS)) == V.REPRODUCED
    assert V.reproduced_if((V.HOLDS, V.VIOLATED)) == V.NOT_REPRODUCED
    assert V.counterexample_of() == V.INCONCLUSIVE
    # the stall test of a slope interval straddling the stall threshold
    assert V.reproduced_if(V.rate_verdict([-0.509, -0.083], -0.1)) == V.INCONCLUSIVE


def test_welch_difference_of_unpaired_draws():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1.0, 0.1, 8), rng.normal(0.0, 0.3, 6)
    r = V.welch_difference(a, b)
    t = stats.ttest_ind(a, b, equal_var=False)
    va, vb = a.var(ddof=1) / 8, b.var(ddof=1) / 6
    assert np.isclose(r["se"], np.sqrt(va + vb)) and np.isclose(r["mean"] / r["se"], t.statistic)
    assert np.isclose(r["dof"], (va + vb) ** 2 / (va ** 2 / 7 + vb ** 2 / 5))
    assert r["verdict"] == V.HOLDS and V.welch_difference(b, a)["verdict"] == V.VIOLATED
    assert V.welch_difference(a[:3], b[:3])["verdict"] == V.INCONCLUSIVE


def _run(claim_id):
    from fedcheck import RunConfig
    from fedcheck.catalog.registry import default_registry
    return default_registry().resolve([claim_id])[0].run(RunConfig(use_cache=False))


def test_plain_stochastic_is_judged_on_what_the_paper_claims_and_a_straddling_stall_is_undecided():
    res = _run("fedfw.plain_stochastic")
    assert res.verdict != "not_reproduced"
    stall = res.readings["plain unbiased stochastic gradients: FedFW stalls"]
    assert not stall["paper"] and stall["reading"]["plausible"]
    lo, hi = (float(x) for x in stall["evidence"].split("CI [")[1].split("]")[0].split(","))
    if lo <= -0.1 <= hi:        # the interval straddles the stall threshold: undecided, never a refutation
        assert stall["verdict"] == "inconclusive"
    paper = [r for r in res.readings.values() if r["paper"]]
    assert len(paper) == 1 and "power" in paper[0] and paper[0]["power"]["draws"] >= V.MIN_DRAWS
    assert "requires a variance reduction strategy" in paper[0]["source"]["quote"]
    if res.verdict == "reproduced":
        assert "smallest effects the samples could decide" in res.reason


def test_table2_dnn_decides_over_at_least_five_draws_and_says_what_it_could_detect():
    from theorems.fedfw import networks as N
    assert N.TABLE2_DNN_DRAWS >= V.MIN_DRAWS
    res = _run("fedfw.table2_dnn")
    for name, r in res.readings.items():
        p = r["power"]
        assert p["draws"] >= V.MIN_DRAWS and p["dof"] == p["draws"] - 1 and p["tries"] == 2, name
        assert np.isfinite(p["detectable"]) and p["mde"] > p["detectable"]
    order = next(r for n, r in res.readings.items() if "more accurate than" in n)
    assert "Bonferroni over 2 readings" in order["evidence"] and "smallest effect" in order["evidence"]


def test_a_mean_over_few_runs_is_judged_with_a_student_t_interval():
    from fedcheck import Comparison
    from fedcheck.core.evidence import MEAN
    lhs = np.array([[1.0], [1.2], [0.8], [1.1]])        # 4 runs, one point
    c = Comparison(lhs, lhs, np.array([2.0]), np.array([2.0]))
    lo, hi, val, se = c.measured(MEAN)
    q = stats.t.ppf(stats.norm.cdf(V.POLICY.statistical_z), 3)
    assert np.isclose(V.t_multiplier(V.POLICY.statistical_z, 4), q) and q > V.POLICY.statistical_z
    assert np.isclose(hi[0, 0], lhs.mean() + q * se[0]) and np.isclose(lo[0, 0], lhs.mean() - q * se[0])


def test_a_fraction_finding_records_what_its_runs_could_detect():
    """A ``fraction(q)`` finding (Clopper-Pearson over the runs) carries a ``power`` record in the JSON, named in the
    reason: the smallest deviation of the fraction from q its number of runs could decide, and the one detected with
    80 % power -- checked against the interval's own decisions and an exact binomial tail."""
    from fedcheck import BoundTest, Claim, Paper
    from fedcheck.core import verdict as CV
    from fedcheck.core.evidence import Comparison, clopper_pearson, fraction
    from fedcheck.experiments import Case, Cases
    lhs = np.random.default_rng(0).normal(1.0, 0.5, size=(400, 3))
    cmp = Comparison(lhs_lo=lhs, rhs_lo=1.5)

    def cases(config, params):
        return [Case("draws", {"as stated": cmp})]
    claim = Claim(id="tp.frac_power", paper=Paper(key="tp", title="t", authors="t"), reference="r", statement="s",
                  evidence=BoundTest(Cases(cases), statistic=fraction(0.5)))
    r = claim.run()
    assert r.verdict == V.HOLDS
    p = r.readings["as stated"]["power"]
    assert p["draws"] == 400 and p["test"] == "Clopper-Pearson" and p["tries"] == 1
    assert "as stated: " in r.reason and "400 draws, Clopper-Pearson interval" in r.reason
    # the smallest decided deviation on each side: one failing run fewer (more) would not decide
    kv, kh = round((0.5 + p["detectable_above"]) * 400), round((0.5 - p["detectable_below"]) * 400)
    assert clopper_pearson(kv, 400)[0] > 0.5 >= clopper_pearson(kv - 1, 400)[0]
    assert clopper_pearson(kh, 400)[1] <= 0.5 < clopper_pearson(kh + 1, 400)[1]
    # 80 % power at the true fraction q + mde: P(at least kv of 400 fail) = 0.8
    assert np.isclose(stats.binom.sf(kv - 1, 400, 0.5 + p["mde_above"]), 0.8)
    assert np.isclose(stats.binom.cdf(kh, 400, 0.5 - p["mde_below"]), 0.8)
    assert p["detectable"] == max(p["detectable_above"], p["detectable_below"])
    # q = 0: nothing lies below; one failing run decides, and 1 - 0.2^(1/n) is detected with 80 % power
    z = CV.fraction_power(50, 0.0)
    assert z["detectable_below"] is None and np.isclose(z["detectable"], 1 / 50)
    assert np.isclose(z["mde"], 1 - 0.2 ** (1 / 50))
    # a correction over tries widens it; too few runs decide nothing
    assert CV.fraction_power(400, 0.5, tries=4)["detectable"] > p["detectable"]
    assert CV.fraction_power(3, 0.5)["detectable"] == float("inf")


def _constant_runs(true_c, sigma, seed=1, rounds=40, instances=10, runs=16):
    """Runs of E gap whose constant gap sqrt(pt) is ``true_c(p)`` at every round, with noise ``sigma(p)``."""
    P = np.geomspace(0.1, 1.0, 8)
    k = np.arange(1.0, rounds + 1)
    f = np.sqrt(k[:, None] * P[None, :])
    z = np.random.default_rng(seed).standard_normal((rounds, instances, P.size, runs))
    return (true_c(P)[None, None, :, None] * (1 + sigma(P)[None, None, :, None] * z)) / f[:, None, :, None], f, P


def test_partial_scaling_constant_is_not_refuted_by_the_bias_of_a_max_of_means():
    """(17)'s "the constant does not grow as p -> 0" took C_p as the max over rounds of means over 16 runs: biased
    up, more where the runs are noisier (small p).  With a flat true constant and noise growing as p falls, that
    slope alone is certainly above 0 (a false refutation of the paper); the held-out constant (rounds of the max
    chosen on half of the runs, measured on the other) is not, so the finding is undecided.  A constant that does
    grow is refuted by both, one that falls holds by both; the finding carries its power (the smallest slope)."""
    from theorems.fedfw import measurements as FM
    runs, f, P = _constant_runs(lambda p: np.ones_like(p), lambda p: 0.3 * (1 / p - 0.9))
    ok, x = np.ones_like(f, dtype=bool), np.log(1 / P)
    pc = FM._partial_constant(runs, f, ok, x)
    assert V.rate_verdict(pc["plug_in"]["ci"], 0.0) == V.VIOLATED          # the biased max alone: "grows"
    assert pc["held_out"]["ci"][0] <= 0 <= pc["held_out"]["ci"][1] and pc["verdict"] == V.INCONCLUSIVE
    assert np.all(pc["plug_in"]["C_p"] >= pc["held_out"]["C_p"] - 0.05)
    grows = FM._partial_constant(*_constant_runs(lambda p: p ** -0.5, lambda p: 0.05 + 0 * p)[:2], ok, x)
    falls = FM._partial_constant(*_constant_runs(lambda p: p ** 0.3, lambda p: 0.05 + 0 * p)[:2], ok, x)
    assert grows["verdict"] == V.VIOLATED and falls["verdict"] == V.HOLDS
    p = falls["power"]
    assert p["dof"] == 6 and p["draws"] == 8 and p["tests"] == 2 and 0 < p["detectable"] < p["mde"] < 1


def test_partial_scaling_finding_states_both_estimates_and_its_power():
    from fedcheck.core.claim import RunConfig
    from fedcheck.core.evidence import MeasureContext
    from theorems.fedfw import measurements as FM
    from theorems.fedfw.claims import partial_scaling
    res = FM.measure_partial_scaling(MeasureContext(RunConfig(), {}, partial_scaling))
    f = next(x for x in res.findings if x.name == "(17): the constant does not grow as p -> 0")
    assert "held-out slope" in f.evidence and f.extra["power"]["dof"] == 6
    held, plug = np.asarray(res.evidence["C_p_held_out"]), np.asarray(res.evidence["C_p"])
    assert held.shape == plug.shape == (8,) and held[-1] == plug[-1]         # p = 1: every run alike
