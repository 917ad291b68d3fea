"""Displays that cannot mislead: where a bound vanishes a violation shows its excess and says the ratio is
undefined there; a reason names the first violation and the worst point separately, each with its own values."""
import numpy as np
import pytest

from fedcheck.cli.tables import summary_table
from fedcheck.core import verdict as V
from fedcheck.core.claim import Claim, Paper
from fedcheck.core.evidence import BoundTest, Comparison, merge_judgements
from fedcheck.experiments import Case, Cases
from fedcheck.report import check_context

P = Paper("td", "displays", "tests")


def test_judge_names_the_first_violation_and_the_largest_excess_with_their_own_values():
    # point 0 holds, point 1 fails a little, point 3 fails most; point 2 fails where the bound vanishes
    cmp = Comparison(lhs_lo=np.array([0.5, 1.2, 0.4, 9.0]), rhs_lo=np.array([1.0, 1.0, 0.0, 3.0]), points=[1, 2, 3, 4],
                     point_name="round")
    j = cmp.judge()
    assert j["verdict"] == V.VIOLATED and j["first_violation_round"] == 2
    assert (j["lhs_at_first_violation"], j["rhs_at_first_violation"]) == (1.2, 1.0)
    assert j["ratio_defined_at_first_violation"] is True
    assert j["argmax_excess_round"] == 4 and (j["lhs_at_max_excess"], j["rhs_at_max_excess"]) == (9.0, 3.0)
    assert j["violations_where_ratio_undefined"] == 1 and j["max_excess_where_ratio_undefined"] == pytest.approx(0.4)


def test_merged_blocks_keep_the_first_violation_of_the_first_block_and_the_largest_excess():
    a = Comparison(lhs_lo=np.array([2.0, 0.0]), rhs_lo=np.array([1.0, 1.0]), points=[1, 2], point_name="round").judge()
    b = Comparison(lhs_lo=np.array([0.0, 7.0]), rhs_lo=np.array([1.0, 0.0]), points=[3, 4], point_name="round").judge()
    m = merge_judgements(a, b)
    assert m["first_violation_round"] == 1 and m["lhs_at_first_violation"] == 2.0
    assert m["argmax_excess_round"] == 4 and m["lhs_at_max_excess"] == 7.0 and m["ratio_defined_at_max_excess"] is False
    assert m["violations_where_ratio_undefined"] == 1


def _claim(lhs, rhs):
    def cases(config, params):
        return [Case("draw", {"as stated": Comparison(lhs_lo=np.asarray(lhs), rhs_lo=np.asarray(rhs),
                                                      points=list(range(1, len(lhs) + 1)), point_name="round")})]
    return Claim(id="td.c", paper=P, reference="r", statement="s", evidence=BoundTest(Cases(cases)))


def test_a_violation_where_the_bound_vanishes_says_the_ratio_is_undefined_there():
    # the violation is at round 1 (bound 0); the only finite ratio (0.1) comes from round 2, where the bound holds
    r = _claim([4.0, 0.1], [0.0, 1.0]).run().to_dict()
    f = r["readings"]["as stated"]
    assert r["verdict"] == V.VIOLATED
    assert f["max_ratio"] == pytest.approx(0.1)            # kept (backward compatible) ...
    assert f["ratio_undefined_where_violated"] is True    # ... but said to be meaningless for the violation
    assert f["max_excess_where_ratio_undefined"] == pytest.approx(4.0)
    assert "ratio undefined" in r["reason"] and "excess 4" in r["reason"]
    assert "0.1" not in r["reason"].split("excess")[0]
    assert "undefined" in summary_table([r]) or len(r["readings"]) == 1
    ctx = check_context(r, {})
    row = ctx["readings_table"]["rows"][0]
    assert any("undefined where violated" in str(c) for c in row), row


def test_a_reason_separates_the_first_violation_from_the_worst_point():
    # first violation at round 1 (lhs 3.289 vs rhs 3.0), worst at round 3 (lhs 9 vs rhs 0.0331)
    r = _claim([3.289, 0.0, 9.0], [3.0, 1.0, 0.0331]).run().to_dict()
    reason = r["reason"]
    assert "first violation: draw at t = 1: lhs 3.289 vs rhs 3" in reason
    assert "worst (largest excess): draw at t = 3: lhs 9 vs rhs 0.0331" in reason
    # no value of one point is attributed to the other
    assert "t = 1: lhs 3.289 vs rhs 0.0331" not in reason


def test_reading_rows_of_the_summary_table_say_undefined():
    def cases(config, params):
        return [Case("draw", {"a": Comparison(lhs_lo=np.array([4.0, 0.1]), rhs_lo=np.array([0.0, 1.0])),
                              "b": Comparison(lhs_lo=np.array([0.5]), rhs_lo=np.array([1.0]))})]
    from fedcheck.core.readings import Reading
    c = Claim(id="td.t", paper=P, reference="r", statement="s", evidence=BoundTest(Cases(cases)),
              readings=(Reading("a"), Reading("b", paper=False)))
    table = summary_table([c.run().to_dict()])
    line = next(ln for ln in table.splitlines() if "reading a " in ln)
    assert "undefined" in line and "0.1" not in line


def test_per_instance_cells_say_the_ratio_is_undefined_where_a_vanishing_bound_is_violated():
    def cases(config, params):
        return [Case("draw", {"as stated": Comparison(lhs_lo=np.array([4.0, 0.1]), rhs_lo=np.array([1e-15, 1.0]))})]
    r = Claim(id="td.i", paper=P, reference="r", statement="s", evidence=BoundTest(Cases(cases))).run().to_dict()
    ctx = check_context(r, {})
    cell = ctx["instance_table"]["rows"][0][1]
    assert "ratio undefined where violated" in cell["text"] and "excess 4" in cell["text"], cell
