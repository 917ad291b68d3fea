"""The ratio a headline shows is the one at the ends of the constants' intervals that decide the verdict."""
import numpy as np
import pytest

from fedcheck.core.evidence import Comparison, merge_judgements


def test_upper_bound_ratio_at_the_lower_ends():
    # lhs <= rhs with rhs known only to [1, 10]: holds only if lhs <= 1; the deciding ratio is lhs / 1
    c = Comparison(lhs_lo=[0.5, 0.2], rhs_lo=[1.0, 2.0], rhs_hi=[10.0, 20.0], relation="<=", points=[1, 2])
    j = c.judge()
    assert j["verdict"] == "holds"
    assert j["max_ratio"] == pytest.approx(0.5) and j["rhs_at_argmax"] == pytest.approx(1.0)
    assert j["max_ratio_at_other_ends"] == pytest.approx(0.05)
    assert j["max_excess"] == pytest.approx(-0.5)


def test_lower_bound_ratio_at_the_upper_ends():
    c = Comparison(lhs_lo=[4.0], rhs_lo=[1.0], rhs_hi=[2.0], relation=">=")
    j = c.judge()
    assert j["max_ratio"] == pytest.approx(0.5) and j["max_ratio_at_other_ends"] == pytest.approx(0.25)


def test_an_undecided_point_shows_the_ratio_that_would_decide():
    # lhs = 3 in [1, 10]: undecided; its deciding ratio 3 says the bound at its lower end is exceeded
    j = Comparison(lhs_lo=[3.0], rhs_lo=[1.0], rhs_hi=[10.0]).judge()
    assert j["verdict"] == "inconclusive" and j["max_ratio"] == pytest.approx(3.0)
    assert j["max_ratio_at_other_ends"] == pytest.approx(0.3)


def test_exact_constants_add_no_field():
    j = Comparison(lhs_lo=[0.5], rhs_lo=[1.0]).judge()
    assert "max_ratio_at_other_ends" not in j and j["max_ratio"] == pytest.approx(0.5)
    m = merge_judgements(j, Comparison(lhs_lo=[0.7], rhs_lo=[1.0]).judge())
    assert "max_ratio_at_other_ends" not in m and m["max_ratio"] == pytest.approx(0.7)


def test_merged_blocks_keep_the_other_ends():
    a = Comparison(lhs_lo=[0.5], rhs_lo=[1.0], rhs_hi=[2.0]).judge()
    b = Comparison(lhs_lo=[0.1], rhs_lo=[1.0], rhs_hi=[1.0]).judge()
    m = merge_judgements(a, b)
    assert m["max_ratio"] == pytest.approx(0.5) and m["max_ratio_at_other_ends"] == pytest.approx(0.25)


def test_a_claim_with_interval_constants_reports_the_deciding_ratio():
    from fedcheck import Bound, BoundTest, Claim, Paper
    from fedcheck.experiments import Case, Cases

    def cases(config, params):
        cmp = Comparison(lhs_lo=np.array([[0.3, 0.6]]), rhs_lo=[1.0, 1.0], rhs_hi=[100.0, 100.0], relation="<=",
                         points=[1, 2], point_name="T")
        return [Case("one", {"r": cmp})]

    claim = Claim(id="intervals.demo", paper=Paper(key="intervals", title="t", authors="a"), reference="r",
                  title="interval constants", statement="lhs <= rhs, rhs in [1, 100]",
                  evidence=BoundTest(Cases(cases), bounds=(Bound("b"),)), expected="holds")
    res = claim.run()
    assert res.verdict == "holds"
    assert res.max_ratio == pytest.approx(0.6)
    f = next(iter(res.readings.values()))
    assert f["max_ratio"] == pytest.approx(0.6) and f["max_ratio_at_other_ends"] == pytest.approx(0.006)
