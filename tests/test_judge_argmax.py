"""Comparison.judge locates its worst ratio and largest excess with argmax/max over arrays whose non-finite entries
it has already replaced by -inf; these are the positions and values nanargmax/nanmax (its former calls) give."""
import numpy as np
import pytest

from fedcheck.core import verdict as V
from fedcheck.core.evidence import Comparison


def _reference(cmp, out):
    """The positions and values as the former code computed them (nanargmax / nanmax of the same arrays)."""
    lo, hi, val, se = cmp.measured()
    rhs = cmp.rhs_hi
    with np.errstate(divide="ignore", invalid="ignore"):
        if cmp.relation == "<=":
            ratio, excess = np.where(rhs != 0, val / rhs, np.nan), val - rhs
        else:
            ratio, excess = np.where(val != 0, rhs / val, np.nan), rhs - val
    size = np.maximum(np.maximum(np.abs(cmp.scale), 1.0), np.abs(val))
    reported = np.where(np.abs(rhs) <= V.POLICY.negligible_bound * size, np.nan, ratio)
    fin, fe, fin_r = np.isfinite(ratio), np.isfinite(excess), np.isfinite(reported)
    worst = int(np.nanargmax(np.where(fin, ratio, -np.inf))) if fin.any() else None
    wx = int(np.nanargmax(np.where(fe, excess, -np.inf))) if fe.any() else None
    top = float(np.nanmax(np.where(fin_r, reported, -np.inf))) if fin_r.any() else None
    return worst, wx, top


@pytest.mark.parametrize("relation", ["<=", ">="])
@pytest.mark.parametrize("seed", range(6))
def test_judge_worst_points_are_the_nanargmax_ones(relation, seed):
    rng = np.random.default_rng(seed)
    P = 40
    lhs = rng.choice([0.0, 1.0, 2.0, -1.0, np.nan, np.inf, 0.5], size=(3, P)) * rng.integers(1, 3, size=(3, P))
    rhs = rng.choice([0.0, 1.0, 2.0, np.nan, -np.inf, 4.0, 1e-300], size=P)
    if seed == 0:
        lhs[:] = np.nan                                   # nothing finite: every position is None
    cmp = Comparison(lhs_lo=lhs, rhs_lo=rhs, relation=relation, points=list(range(P)), point_name="round")
    out = cmp.judge()
    worst, wx, top = _reference(cmp, out)
    assert out["argmax_round"] == worst and out["argmax_excess_round"] == wx
    assert out["max_ratio_where_bound_not_negligible"] == top
