"""Reports that point at the right place: a merged judgement's worst point carries its own t and values; every
violation left out of the headline ratio because the bound is negligible there is counted and said; an undecided
claimed rate says why."""
import numpy as np

from fedcheck.core import verdict as V
from fedcheck.core.claim import Claim, Paper
from fedcheck.core.evidence import BoundTest, Comparison, merge_judgements
from fedcheck.experiments import Case, Cases

P = Paper("tw", "worst points", "tests")


def test_the_largest_excess_keeps_its_own_round_when_a_later_block_has_the_largest_ratio():
    # block 1: the largest excess at t = 1 (lhs 60 vs rhs 50); block 2: a larger ratio (3), a small excess, at t = 2970
    a = Comparison(lhs_lo=np.array([60.0, 0.1]), rhs_lo=np.array([50.0, 1.0]), points=[1, 2], point_name="round").judge()
    b = Comparison(lhs_lo=np.array([0.3]), rhs_lo=np.array([0.1]), points=[2970], point_name="round").judge()
    m = merge_judgements(a, b)
    assert m["argmax_round"] == 2970 and m["max_ratio"] == b["max_ratio"]
    # before: argmax_excess_round came from block 2 (2970) with block 1's values
    assert (m["argmax_excess_round"], m["lhs_at_max_excess"], m["rhs_at_max_excess"]) == (1, 60.0, 50.0)


def _claim(lhs, rhs, rate=None):
    def cases(config, params):
        return [Case("draw", {"as stated": Comparison(lhs_lo=np.asarray(lhs), rhs_lo=np.asarray(rhs),
                                                      points=list(range(1, len(lhs) + 1)), point_name="round")})]
    return Claim(id="tw.c", paper=P, reference="r", statement="s", evidence=BoundTest(Cases(cases)))


def test_violations_where_the_bound_is_negligible_are_counted_and_said():
    # rounds 2 and 3 violate a bound below 1e-4 x max(1, |measured|): left out of the headline ratio (0.5)
    r = _claim([0.5, 0.2, 0.3, 0.1], [1.0, 1e-6, 1e-7, 1.0]).run().to_dict()
    f = r["readings"]["as stated"]
    assert r["verdict"] == V.VIOLATED and f["max_ratio"] == 0.5
    assert f["violations_where_bound_negligible"] == 2
    assert "2 violated point(s) where the bound is below 0.0001 x max(1, scale, |measured|)" in r["reason"]
    j = Comparison(lhs_lo=np.array([0.5, 0.2]), rhs_lo=np.array([1.0, 1e-6])).judge()
    assert j["violations_where_bound_negligible"] == 1
    assert merge_judgements(j, j)["violations_where_bound_negligible"] == 2


def test_an_undecided_rate_says_why():
    from fedcheck.core.runner import _rate_reason
    assert "no slope to fit" in _rate_reason(None, BoundTest(Cases(lambda c, p: [])))
    assert "pre-asymptotic" in _rate_reason({"pre_asymptotic": True}, None)


def test_the_summary_says_why_a_rate_is_undecided():
    from fedcheck.cli.tables import _rate_line
    r = {"claimed_rate": -1.0, "fitted_rate": None, "rate_verdict": "inconclusive",
         "evidence": {"rate_reason": "no slope to fit: too few points"}}
    assert _rate_line(r).endswith("inconclusive (no slope to fit: too few points)")
