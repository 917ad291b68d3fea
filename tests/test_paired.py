"""fedcheck.verdicts.paired_difference: a t interval over paired draws with k - 1 degrees of freedom."""
import numpy as np
from scipy import stats

from fedcheck import verdicts as V


def test_the_interval_is_students_t_at_the_level_of_z_standard_errors():
    a, b = np.array([3.0, 4.5, 2.0, 5.0, 4.0]), np.array([1.0, 1.5, 1.5, 2.0, 2.5])
    r = V.paired_difference(a, b)
    d = a - b
    level = 2 * stats.norm.cdf(V.POLICY.statistical_z) - 1
    half = stats.t.ppf(0.5 + level / 2, 4) * d.std(ddof=1) / np.sqrt(5)
    assert r["dof"] == 4 and np.isclose(r["half_width"], half) and r["detectable"] == r["half_width"]
    assert r["verdict"] == (V.HOLDS if d.mean() - half > 0 else V.INCONCLUSIVE)
    assert V.paired_difference(b, a)["verdict"] == (V.VIOLATED if d.mean() - half > 0 else V.INCONCLUSIVE)


def test_two_draws_decide_only_far_beyond_their_spread_and_one_draw_never():
    # a 1-point difference on two splits: one degree of freedom, the interval is ~100x the spread -- undecided
    r = V.paired_difference([88.0, 89.5], [89.0, 90.7])
    assert r["verdict"] == V.INCONCLUSIVE and r["half_width"] > 10 and "1 degrees of freedom" in r["why"]
    assert V.paired_difference([1.0], [0.0])["verdict"] == V.INCONCLUSIVE
    assert V.paired_difference([1.0, np.nan], [0.0, 0.0])["verdict"] == V.INCONCLUSIVE
