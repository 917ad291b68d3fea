"""A bound tested in expectation at many points: every point's interval is Bonferroni-corrected over the family of
points judged together (every round, instance, reading and bound of the test), so that one point in hundreds
whose interval misses by chance neither refutes nor confirms the bound."""
import numpy as np
import pytest
from scipy import stats

from fedcheck import verdicts as V
from fedcheck.core.claim import RunConfig
from fedcheck.core.evidence import MEAN, Comparison, Statistic, merge_judgements


def _equal_to_the_bound(points=2000, runs=20, seed=3):
    """Runs whose expectation equals the bound at every point: "violated" would be a false refutation."""
    rng = np.random.default_rng(seed)
    return Comparison(lhs_lo=rng.standard_normal((runs, points)), rhs_lo=np.zeros(points), relation="<=",
                      points=list(range(1, points + 1)), point_name="round")


def test_one_point_in_thousands_missing_by_chance_refutes_nothing():
    """On main each point was judged at z = 3 on its own: over 2,000 rounds some interval misses the true mean
    by chance, and a bound that holds with equality in expectation read "violated"."""
    c = _equal_to_the_bound()
    alone = c.judge(Statistic("mean", family=1))          # the uncorrected per-point rule of main
    assert alone["verdict"] == V.VIOLATED and alone["violations"] >= 1
    j = c.judge(MEAN)
    assert j["verdict"] != V.VIOLATED and j["violations"] == 0
    assert j["family"] == 2000
    assert j["t_multiplier"] == pytest.approx(stats.t.isf(stats.norm.sf(V.POLICY.statistical_z) / 2000, 19))
    assert j["t_multiplier"] > alone["t_multiplier"] > V.POLICY.statistical_z


def test_a_real_excess_is_still_found_through_the_correction():
    rng = np.random.default_rng(4)
    c = Comparison(lhs_lo=1.0 + rng.standard_normal((50, 2000)), rhs_lo=np.zeros(2000), relation="<=")
    assert c.judge(MEAN)["verdict"] == V.VIOLATED


def test_blocks_of_rounds_judged_with_the_whole_family_agree_with_one_judgement():
    """A stream is judged in blocks of rounds: the family is the whole test's, never the block's."""
    c = _equal_to_the_bound(points=640)
    whole = c.judge(MEAN)
    st = MEAN.of_family(640)
    merged = None
    for k in range(0, 640, 64):
        part = Comparison(lhs_lo=c.lhs_lo[:, k:k + 64], rhs_lo=c.rhs_lo[k:k + 64], relation="<=",
                          points=list(range(k + 1, k + 65)), point_name="round")
        merged = merge_judgements(merged, part.judge(st))
    for key in ("verdict", "violations", "undecided", "points", "family", "t_multiplier"):
        assert merged[key] == whole[key], key
    blockwise = None        # each block its own family (what the correction must not do)
    for k in range(0, 640, 64):
        part = Comparison(lhs_lo=c.lhs_lo[:, k:k + 64], rhs_lo=c.rhs_lo[k:k + 64], relation="<=")
        blockwise = merge_judgements(blockwise, part.judge(MEAN))
    assert blockwise["t_multiplier"] < whole["t_multiplier"]


def test_the_family_is_counted_over_the_whole_test_and_recorded():
    """The generic engine counts every (instance, reading, bound, round) a mean bound is judged at; the result's
    observations carry it and the power record is at the corrected level."""
    import theorems.fedfw as T
    r = T.theorem3.run(RunConfig()).to_dict()
    obs = [o for o in r["observations"] if o["statistic"] == "mean"]
    assert obs
    fams = {o["family"] for o in obs}
    assert len(fams) == 1
    fam = fams.pop()
    judged = sum(int(o.get("points") or o.get("judged", {}).get("points") or 0) for o in obs)
    assert fam >= max(judged, len(obs))
    for f in r["readings"].values():
        if f.get("power"):
            assert f["power"]["tries"] == fam


def test_statistic_family_is_validated_and_described():
    with pytest.raises(ValueError):
        Statistic("mean", family=0)
    assert "Bonferroni-corrected over 12 points" in MEAN.of_family(12).describe(8)
    assert Statistic("pathwise").of_family(12) == Statistic("pathwise")
    assert Statistic("mean", family=3).of_family(12).family == 3      # a declared family is kept
