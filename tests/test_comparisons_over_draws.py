"""Comparisons of methods over random runs decide on intervals, never on point values: FedDualAvg's Section 5
findings ("which method reaches the target first", "denser", "less accurate", the tuning outcome, Fig. 12's regions)
use Student t intervals over at least ``MIN_DRAWS`` runs, Welch's where the methods' runs share no draw, a
Bonferroni correction where one finding makes several comparisons, and carry the ``power`` record; an undecided
interval is inconclusive, never a refutation."""
import zlib

import numpy as np
import pytest

from fedcheck import verdicts as V
from fedcheck.core.claim import RunConfig
from fedcheck.core.evidence import MeasureContext
from theorems.feddualavg import measurements as PM

NEVER = np.nan


def test_rounds_to_target_are_per_run_and_a_run_that_never_stays_there_is_censored():
    record = np.array([5, 10, 20, 40, 80])
    ok = np.array([[0, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1], [1, 1, 1, 1], [1, 1, 0, 1]], dtype=bool)
    r = PM._reach_rounds(ok, record)
    # run 0 from 10 on; run 1 dips at 20 so it counts from 40; run 2 leaves the target at 80: never; run 3 from 20
    assert r[0] == 10 and r[1] == 40 and np.isnan(r[2]) and r[3] == 20


def test_a_winner_whose_rounds_overlap_the_others_is_undecided_not_first():
    reach = {"FedDualAvg": np.array([10, 40, 10, 40, 10.]), "FedMiD": np.array([12, 12, 40, 12, 40.])}
    v, ev = PM._rounds_verdict(reach, "FedDualAvg", horizon=100)
    assert v == V.INCONCLUSIVE
    assert ev["tests"]["FedMiD"]["for"]["verdict"] == V.INCONCLUSIVE and ev["tests"]["FedMiD"]["for"]["dof"] > 0


def test_a_winner_certainly_first_over_the_runs_is_reproduced_and_the_opposite_refuted():
    fast, slow = np.array([10, 12, 10, 11, 10.]), np.array([40, 45, 42, 40, 44.])
    assert PM._rounds_verdict({"A": fast, "B": slow}, "A", horizon=100)[0] == V.REPRODUCED
    assert PM._rounds_verdict({"A": slow, "B": fast}, "A", horizon=100)[0] == V.NOT_REPRODUCED
    # a tie at the record's resolution shows neither
    assert PM._rounds_verdict({"A": fast, "B": fast.copy()}, "A", horizon=100)[0] == V.INCONCLUSIVE


def test_censored_runs_count_against_the_verdict_being_shown():
    fast = np.array([10, 12, 10, 11, 10.])
    never = np.full(5, NEVER)
    # the other never reaches within the horizon: counted as reaching one round after it, still certainly later
    assert PM._rounds_verdict({"A": fast, "B": never}, "A", horizon=100)[0] == V.REPRODUCED
    # a winner that misses in one run is never shown first (its rounds there are unknown) ...
    w = np.array([10, 12, NEVER, 11, 10.])
    assert PM._rounds_verdict({"A": w, "B": np.full(5, 40.)}, "A", horizon=100)[0] == V.INCONCLUSIVE
    # ... and a winner that never reaches while the other always does is refuted (it reaches after the horizon at best)
    assert PM._rounds_verdict({"A": never, "B": fast}, "A", horizon=100)[0] == V.NOT_REPRODUCED
    # neither reaches: nothing is shown
    assert PM._rounds_verdict({"A": never, "B": never.copy()}, "A", horizon=100)[0] == V.INCONCLUSIVE


def test_fewer_than_min_draws_runs_decide_nothing():
    v, ev = PM._rounds_verdict({"A": np.array([10, 10, 11.]), "B": np.array([90, 95, 99.])}, "A", horizon=100)
    assert v == V.INCONCLUSIVE and ev["tests"]["B"]["for"]["draws"] < V.MIN_DRAWS
    assert PM._unpaired([1.0, 1.1, 1.2], [0.0, 0.1, 0.2])[0] == V.INCONCLUSIVE


def test_the_others_are_compared_under_a_bonferroni_correction():
    reach = {"A": np.array([10, 12, 10, 11, 10.]), "B": np.full(5, 40.), "C": np.full(5, 50.)}
    _, ev = PM._rounds_verdict(reach, "A", horizon=100)
    assert all(t["for"]["tries"] == 2 for t in ev["tests"].values())
    assert ev["tests"]["B"]["for"]["level"] == pytest.approx(V.corrected_level(V.level_of(), 2))


def test_unpaired_comparison_rules():
    rng = np.random.default_rng(0)
    a, b = 1.0 + 0.01 * rng.standard_normal(6), 0.01 * rng.standard_normal(6)
    v, r = PM._unpaired(a, b)
    assert v == V.REPRODUCED and r["dof"] > 5          # Welch: more than one sample's k - 1
    assert PM._unpaired(b, a)[0] == V.NOT_REPRODUCED
    v, r = PM._unpaired(a, a + 0.001 * rng.standard_normal(6))
    assert v == V.INCONCLUSIVE and r["verdict"] == V.INCONCLUSIVE
    # the finding's power field: the smallest effect the runs could decide
    p = PM._power(PM._unpaired(a, b))["power"]
    assert p["draws"] == 6 and 0 < p["detectable"] < p["mde"] < np.inf and p["power"] == V.POWER
    # one finding that states two comparisons: one opposite refutes it, one undecided leaves it undecided
    assert PM._joined([(V.REPRODUCED, {}), (V.INCONCLUSIVE, {})]) == V.INCONCLUSIVE
    assert PM._joined([(V.REPRODUCED, {}), (V.NOT_REPRODUCED, {})]) == V.NOT_REPRODUCED


def test_fig12_counts_are_intervals_over_configurations_placed_by_their_runs():
    runs = V.MIN_DRAWS
    dens = np.array([[0.1] * runs, [0.9] * runs, [0.3, 0.7, 0.4, 0.6, 0.5]])          # left, right, undecided
    acc = np.array([[0.95] * runs, [0.95] * runs, [0.95] * runs])
    counts, tests = PM._region_counts(acc, dens, np.ones_like(dens), 0.9, tries=6)
    assert counts["left"] == (1, 2) and counts["right"] == (1, 2) and counts["upper_left"] == (1, 2)
    assert len(tests) == 6 and all(t["tries"] == 6 for t in tests)
    # a diverged run puts its configuration in no region
    fin = np.ones_like(dens)
    fin[0, 2] = 0
    assert PM._region_counts(acc, dens, fin, 0.9, tries=6)[0]["left"] == (0, 1)
    # fewer than MIN_DRAWS runs place nothing for certain
    c2, _ = PM._region_counts(acc[:, :2], dens[:, :2] * 0 + 0.1 + np.array([0, 0.01]), np.ones((3, 2)), 0.9, 6)
    assert c2["left"][0] == 0 and c2["left"][1] == 3


def test_a_tuning_outcome_from_one_run_per_point_is_not_a_comparison():
    grid = ((0.001, 1.0), (0.01, 1.0), (0.1, 1.0))
    one = {"f1": np.array([[[0.5], [0.9], [0.7]]])}                  # (records, points, 1 run)
    near = PM._could_be_best(one, 1, (("f1", "max"),))
    assert near.all()
    assert PM._larger_choice(grid, {"A": near, "B": near}, "A", "B") == V.INCONCLUSIVE
    many = {"f1": np.array([[[0.5, 0.51, 0.49, 0.5, 0.5], [0.9, 0.91, 0.89, 0.9, 0.9], [0.7, 0.71, 0.69, 0.7, 0.7]]])}
    nb = PM._could_be_best(many, 1, (("f1", "max"),))
    assert nb.tolist() == [False, True, False]
    na = np.array([False, False, True])
    assert PM._larger_choice(grid, {"A": na, "B": nb}, "A", "B") == V.REPRODUCED
    assert PM._larger_choice(grid, {"A": nb, "B": na}, "A", "B") == V.NOT_REPRODUCED


def _measure(fn, claim):
    return fn(MeasureContext(RunConfig(), {}, claim))


def test_lasso_rounds_to_perfect_f1_are_decided_over_the_runs_with_their_power():
    """On main the finding compared one number per method (the first round the mean F1 reached 1): reproduced
    from point values, with no interval and no power."""
    from theorems.feddualavg.claims import experiment_lasso
    out = {f.name: f for f in _measure(PM.measure_lasso, experiment_lasso).findings}
    first = out["FedDualAvg reaches perfect F1 first (Fig. 3, 6-8)"]
    assert isinstance(first.evidence, dict) and set(first.evidence["tests"]) == {"FedMiD", "FedMiD-OSP", "FedDualAvg-OSP"}
    assert all(len(r) >= V.MIN_DRAWS for r in first.evidence["runs"].values())
    p = first.extra["power"]
    assert p["draws"] >= V.MIN_DRAWS and np.isfinite(p["detectable"]) and p["tries"] == 3
    # the runs' rounds overlap enough that the quick sample cannot order FedDualAvg before every other method
    for t in first.evidence["tests"].values():
        if t["for"]["verdict"] == V.INCONCLUSIVE:
            assert first.verdict != V.REPRODUCED
    for name in ("FedMiD is less sparse than FedDualAvg (Fig. 3)",
                 "FedDualAvg-OSP is competitive: perfect F1 before FedMiD and FedMiD-OSP (Fig. 3, 6-7)"):
        assert "power" in out[name].extra


def test_lr_robustness_places_configurations_by_intervals_over_at_least_min_draws_runs():
    """On main Fig. 12's findings compared fractions of per-configuration means over 2 runs with 1/2, point values."""
    from theorems.feddualavg.claims import lr_robustness
    res = _measure(PM.measure_lr_robustness, lr_robustness)
    assert res.evidence["replicates"] >= V.MIN_DRAWS
    for f in res.findings:
        assert f.extra["power"]["draws"] >= V.MIN_DRAWS, f.name
        assert "-" in f.evidence                       # each count is certain-possible


# ---- the other papers: comparisons over instances and replicates ------------------------------------------
def test_fedfw_plus_is_faster_only_by_a_paired_interval_over_at_least_min_draws_instances():
    """On main FedFW+ 'holds' from 'lower on every instance', whatever their number: four instances decided it."""
    from fedcheck.core.evidence import MeasureContext
    from theorems.fedfw import measurements as FM
    from theorems.fedfw.claims import fedfw_plus
    few = FM.measure_fedfw_plus(MeasureContext(RunConfig(seeds=2, rounds=300), {}, fedfw_plus))   # 2 x 2 instances
    f = few.findings[0]
    assert f.verdict == V.INCONCLUSIVE and f.extra["power"]["draws"] == 4 < V.MIN_DRAWS
    enough = FM.measure_fedfw_plus(MeasureContext(RunConfig(rounds=300), {}, fedfw_plus))        # 2 x 3 instances
    g = enough.findings[0]
    assert g.extra["power"]["draws"] == 6 and "paired t interval" in g.description
    assert g.verdict in (V.HOLDS, V.VIOLATED, V.INCONCLUSIVE)


def _method_run(label, finals):
    from theorems.fedmls.measurements import MethodRun
    finals = np.asarray(finals, dtype=float)[None, :]                  # one instance, replicates
    k = np.array([1.0, 10.0, 100.0, 1000.0])
    gap = np.outer(finals.mean() * k[::-1] / k[-1] + finals.mean(), [1.0])
    return MethodRun(label, k, gap, gap, gap, gap, [{}], {}, final_by_replicate=finals)


def test_fedmls_separation_over_replicates_is_decided_by_welch_never_by_the_means():
    """On main 'ends 10x above' compared the two means over replicates: a ratio of means above 10 reproduced it."""
    from theorems.fedmls.measurements import stall_findings
    fail = _method_run("A", [30.0, 0.5, 0.5, 40.0, 0.4])                 # mean 14.3: 10x the other's mean 1.0
    work = _method_run("B", [1.0, 1.01, 0.99, 1.0, 1.0])
    found, _ = stall_findings(fail, work, 1e-9)
    sep = found[2]
    assert sep.verdict == V.INCONCLUSIVE and "power" in sep.extra and "Welch" in sep.description
    clear = _method_run("A", [30.0, 31.0, 29.0, 30.5, 30.2])
    assert stall_findings(clear, work, 1e-9)[0][2].verdict == V.REPRODUCED
    # one replicate each: deterministic runs compare exactly, as before
    assert stall_findings(_method_run("A", [30.0]), _method_run("B", [1.0]), 1e-9)[0][2].verdict == V.REPRODUCED


def test_one_reversed_ordering_among_many_refutes_only_at_the_bonferroni_level():
    """lambda0_effect's 'for every lambda_0 ...': any one of its orderings could refute it, so a reversal is read at
    the level corrected over all of them; every ordering holding needs no correction."""
    from theorems.fedfw.more import _ordered
    rng = np.random.default_rng(3)
    b = 1.0 + 0.05 * rng.standard_normal(8)
    a = b.mean() - 0.17 + 0.05 * rng.standard_normal(8)          # below: decided alone, not over 40 orderings
    assert V.welch_difference(a, b)["verdict"] == V.VIOLATED
    assert V.welch_difference(a, b, tries=40)["verdict"] == V.INCONCLUSIVE
    assert _ordered(a, b, 1) == V.VIOLATED and _ordered(a, b, 40) == V.INCONCLUSIVE
    assert _ordered(b + 1.0, b, 40) == V.HOLDS


# ---- bound tests in expectation: the smallest effect their runs could decide --------------------------------
def test_a_bound_tested_in_expectation_records_what_its_runs_could_detect():
    """On main a bound judged on the mean over runs (the ``mean`` statistic) said nothing of its power."""
    from scipy import stats
    from fedcheck import Comparison
    from fedcheck.core.evidence import MEAN
    from fedcheck.core.runner import mean_power
    rng = np.random.default_rng(1)
    noisy = Comparison(lhs_lo=rng.standard_normal((12, 3)), rhs_lo=np.full(3, 5.0), relation="<=")
    det = np.ones((1, 3))
    twice = Comparison(lhs_lo=np.concatenate([det, det]), rhs_lo=np.full(3, 5.0), relation="<=")   # no draws
    j = noisy.judge(MEAN)
    p = mean_power([(None, j, None), (None, twice.judge(MEAN), None)], MEAN)["power"]
    q = stats.t.isf(stats.norm.sf(V.POLICY.statistical_z) / 3, 11)     # Bonferroni over the 3 points
    assert p["draws"] == 12 and p["dof"] == 11 and p["half_width"] == pytest.approx(q * j["se_max"])
    assert p["tries"] == 3 and j["family"] == 3
    assert p["detectable"] < p["mde"] < np.inf
    assert mean_power([(None, twice.judge(MEAN), None)], MEAN) == {}


def test_a_claim_in_expectation_carries_power_in_its_readings_and_reason():
    import theorems.feddualavg as T
    r = T.lemma_c2_stochastic.run(RunConfig()).to_dict()
    assert r["verdict"] == V.HOLDS
    for f in r["readings"].values():
        assert f["power"]["draws"] >= V.MIN_DRAWS and np.isfinite(f["power"]["detectable"])
    assert "the smallest effects the samples could decide" in r["reason"]


def test_a_mean_over_fewer_than_min_draws_varying_runs_decides_nothing():
    """On main a bound in expectation was decided from 2-4 runs (a t interval of 1-3 degrees of freedom)."""
    from fedcheck import Comparison
    from fedcheck.core.evidence import MEAN
    few = np.array([[1.0], [1.2], [0.8], [1.1]])                         # 4 runs, far below the bound
    j = Comparison(lhs_lo=few, rhs_lo=np.array([10.0]), relation="<=").judge(MEAN)
    assert j["verdict"] == V.INCONCLUSIVE and "at least 5" in j["why"]
    enough = np.array([[1.0], [1.2], [0.8], [1.1], [0.9]])
    assert Comparison(lhs_lo=enough, rhs_lo=np.array([10.0]), relation="<=").judge(MEAN)["verdict"] == V.HOLDS
    same = np.ones((2, 1))                                               # a deterministic quantity given twice: exact
    assert Comparison(lhs_lo=same, rhs_lo=np.array([10.0]), relation="<=").judge(MEAN)["verdict"] == V.HOLDS
    assert Comparison(lhs_lo=same * 20, rhs_lo=np.array([10.0]), relation="<=").judge(MEAN)["verdict"] == V.VIOLATED


def test_a_tuned_method_is_measured_on_fresh_runs_not_on_the_runs_that_picked_it(monkeypatch):
    """Quick tuning (``reps`` runs per grid point) measured the chosen point's own tuning runs: the best of 15
    noisy means, a selection bias in favour of each tuned method.  The curves now come from fresh runs at the
    tuned point, from their own stream (``<tag>:tuned``), as under ``--full``."""
    calls = []

    def fake(inst, alg, grid, rounds, reps, rec, tag, record):       # each stream draws its own values
        calls.append((tag, tuple(grid)))
        rng = np.random.default_rng(zlib.crc32(tag.encode()))
        return {"loss": rng.normal(size=(len(record), len(grid), reps))}
    monkeypatch.setattr(PM, "_run_grid", fake)
    grid = ((0.001, 1.0), (0.01, 1.0), (0.1, 1.0))
    ctx = MeasureContext(RunConfig(), {}, None)
    point, curves = PM._tuned_grid(ctx, None, None, grid, 50, 5, None, "lasso:X", np.array([10, 50]),
                                   lambda m: PM._tune(m, "loss", "min"))
    assert calls[0] == ("lasso:X", grid) and calls[1] == ("lasso:X:tuned", (point,))
    tuning = fake(None, None, grid, 50, 5, None, "lasso:X", np.array([10, 50]))["loss"]
    b = grid.index(point)
    assert curves["loss"].shape == (2, 5) and not np.array_equal(curves["loss"], tuning[:, b])
    # the tuned point's fresh runs are not biased by the pick: the pick's own runs are the lowest of the grid
    assert tuning[-1, b].mean() == tuning[-1].mean(-1).min()


def test_logistic_measures_each_tuned_method_on_fresh_runs(monkeypatch):
    from theorems.feddualavg.claims import experiment_logistic
    calls, real = [], PM._run_grid

    def spy(inst, alg, grid, rounds, reps, rec, tag, record):
        out = real(inst, alg, grid, rounds, reps, rec, tag, record)
        calls.append((tag, list(grid), out))
        return out
    monkeypatch.setattr(PM, "_run_grid", spy)
    res = _measure(PM.measure_logistic, experiment_logistic)
    tuning = {t: (g, o) for t, g, o in calls if not t.endswith(":tuned")}
    fresh = {t[:-len(":tuned")]: (g, o) for t, g, o in calls if t.endswith(":tuned")}
    assert set(fresh) == set(tuning) and len(fresh) == 5
    for tag, (g, o) in fresh.items():
        grid, m = tuning[tag]
        assert len(g) == 1 and list(res.evidence["best"][tag.split(":", 1)[1]]) == list(g[0])
        b = grid.index(g[0])
        assert not np.array_equal(o["val_loss"][:, 0], m["val_loss"][:, b], equal_nan=True)
        series = next(s for s in res.series if s["label"] == tag.split(":", 1)[1])
        assert np.allclose(series["y"], o["val_loss"][:, 0].mean(-1))


def test_fedsgm_configurations_draw_their_own_seeds_and_are_judged_each_beside_the_pool(monkeypatch):
    """The breast-cancer experiment pools its runs over 9 configurations (K/d, eta).  On main the runs at the three K
    shared their uplink seeds (Rand-K keeps the K smallest of the same uniforms: nested subsets), so the pooled runs
    were not independent; each configuration now has its own seeds, and each paired difference is also judged per
    configuration (Bonferroni over them) with the pooled and stratified standard errors beside the pooled test."""
    from theorems.fedsgm import measurements as SM
    seen, real = [], SM._switch_runs

    def spy(batch, eta, eps, E, comp, seeds, T, beta_factor=2.0):
        seen.append(list(seeds))
        return real(batch, eta, eps, E, comp, seeds, T, beta_factor)
    monkeypatch.setattr(SM, "_switch_runs", spy)
    case, = SM.experiment_cases(RunConfig(), {}, T=10, fractions=(0.1, 0.5), etas=(0.05, 0.1), seeds=3)
    assert len(seen) == 2 and not set(seen[0]) & set(seen[1])          # one batch per K, no seed shared
    pc = case.evidence["per_configuration"]
    first = pc["soft has no more violating rounds than hard"]
    assert first["configurations"] == first["tries"] == 4 and sum(first["counts"].values()) == 4
    assert all(t["draws"] == 3 and t["verdict"] == V.INCONCLUSIVE for t in first["tests"].values())   # < MIN_DRAWS
    assert "pooling" in case.evidence

    calls, fs = [], SM.fedsgm

    def spy2(*a, seeds=None, **kw):
        calls.append(list(seeds))
        return fs(*a, seeds=seeds, **kw)
    monkeypatch.setattr(SM, "fedsgm", spy2)
    SM.seed_variance_cases(RunConfig(), {}, T=10, fractions=(0.1, 0.5), etas=(0.1,), seeds=3,
                           readings={"g": "g", "f": "f", "violations": "v"})
    assert len(calls) == 4 and not set(calls[0]) & set(calls[2])          # hard and soft per K; K differ


def test_per_configuration_judgement_and_the_pooled_standard_error():
    from theorems.fedsgm import measurements as SM
    rng = np.random.default_rng(0)
    keys = [c for c in range(4) for _ in range(8)]
    x = np.array([{0: 1.0, 1: 3.0, 2: 5.0, 3: -2.0}[c] for c in keys]) + 0.1 * rng.standard_normal(32)
    r = SM.per_configuration({"d": x}, keys)["d"]
    assert r["counts"] == {V.HOLDS: 3, V.VIOLATED: 1, V.INCONCLUSIVE: 0} and r["tries"] == 4
    assert r["tests"]["0"]["level"] == V.corrected_level(V.level_of(), 4)
    # the spread between the configurations' means widens the pooled standard error: conservative for their average
    assert r["se_pooled"] > 5 * r["se_stratified"]
