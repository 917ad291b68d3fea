"""The figure code on every shape a result can take (hypothesis): empty and one-point series, NaN and
infinities (JSON ``null``/``"inf"``), zeros and negatives on log axes, constant series, very long series, many
curves, fits and rates that are missing or not finite.  Whatever a run writes, drawing its figures (SVG), its
notebook card and its report pages raises nothing: no input a run can produce ends ``fedcheck verify`` with
exit 4 in the report phase (``fedsgm.per_round`` did: a ``markevery`` on a line without a finite point)."""
import json
import math
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fedcheck.render as render
import fedcheck.report as report

# values as results.json holds them: numbers, null (NaN), "inf"/"-inf", and the numbers log axes dislike
SPECIAL = st.sampled_from([None, "inf", "-inf", 0.0, -0.0, -1.0, 1e-300, 1e300, 5e-324, 1.0])
NUMBER = st.floats(allow_nan=False, allow_infinity=False, width=64)
VALUE = st.one_of(SPECIAL, NUMBER, st.floats(1e-6, 1e6))


@st.composite
def values(draw, n=None):
    """A series of ``n`` values (or of a drawn length): empty, one point, constant, mixed, or very long."""
    shape = draw(st.sampled_from(["empty", "one", "constant", "mixed", "decaying", "long"]))
    if n is None:
        n = {"empty": 0, "one": 1, "long": draw(st.sampled_from([1500, 6000]))}.get(shape) \
            if shape in ("empty", "one", "long") else draw(st.integers(2, 40))
    if n == 0:
        return []
    if shape == "constant":
        return [draw(VALUE)] * n
    if shape in ("decaying", "long"):
        base = np.geomspace(1.0, draw(st.sampled_from([1e-12, 1e-3, 1.0, 1e8])), n) * draw(st.sampled_from([1, -1]))
        holes = draw(st.lists(st.tuples(st.integers(0, n - 1), SPECIAL), max_size=5))
        out = base.tolist()
        for i, v in holes:
            out[i] = v
        return out
    return draw(st.lists(VALUE, min_size=n, max_size=n))


@st.composite
def rounds(draw, n):
    kind = draw(st.sampled_from(["grid", "values"]))
    if kind == "grid":
        return np.geomspace(1, 10 ** draw(st.integers(0, 5)), n).round().tolist()
    return draw(values(n))


@st.composite
def fits(draw):
    return draw(st.one_of(st.none(), st.fixed_dictionaries({
        "slope": VALUE, "intercept": VALUE, "k_range": st.lists(VALUE, min_size=0, max_size=3),
        "ci": st.lists(VALUE, min_size=0, max_size=3)})))


@st.composite
def bound_checks(draw):
    names = draw(st.lists(st.sampled_from(["statement", "proof-end", "repair", "sup", "as stated", "F*(x) <= $t^{-1}"]),
                          unique=True, max_size=4))
    instances = []
    for j in range(draw(st.sampled_from([0, 1, 2, 3, 30]))):
        n = draw(st.sampled_from([0, 1, 2, 7, 300]))
        ks = draw(rounds(n))
        metric = draw(values(draw(st.sampled_from([n, max(n - 1, 0), n + 1]))))
        inst = {"seed": j, "rounds": ks, "metric": metric,
                "bound": {nm: draw(values(draw(st.sampled_from([n, 0, 1])))) for nm in names},
                "readings": {nm: {"verdict": draw(st.sampled_from(["holds", "violated", "inconclusive"])),
                                  "max_ratio": draw(VALUE), "first_violation_round": draw(VALUE)} for nm in names},
                "fit": draw(fits()), "F_star_certified_accuracy": draw(VALUE)}
        instances.append(inst)
    return {"id": "prop.bound", "title": "A bound", "paper": "prop", "reference": "Theorem 0", "claim": "x <= y",
            "kind": "bound", "verdict": draw(st.sampled_from(["holds", "violated", "inconclusive"])), "reason": "",
            "claimed_rate": draw(st.one_of(st.none(), VALUE)), "fitted_rate": draw(st.one_of(st.none(), VALUE)),
            "fitted_rate_ci": draw(st.one_of(st.none(), st.lists(VALUE, max_size=3))),
            "rate_verdict": draw(st.sampled_from([None, "holds", "not_shown", "inconclusive"])),
            "max_ratio": draw(st.one_of(st.none(), VALUE)),
            "readings": {nm: {"verdict": "holds", "paper": draw(st.booleans()), "max_ratio": draw(VALUE)}
                         for nm in names},
            "formula": {"metric": draw(st.sampled_from(["F(xbar^t) - F*", "gap", "", "$\\frac{broken$"])),
                        "valid_from": draw(st.one_of(st.none(), VALUE))},
            "instances": instances}


@st.composite
def series_checks(draw):
    series = []
    for i in range(draw(st.sampled_from([0, 1, 2, 5, 12]))):
        n = draw(st.sampled_from([0, 1, 2, 9, 2500]))
        series.append({"panel": draw(st.sampled_from(["gap", "steps", "gap"])), "label": draw(st.sampled_from(
            ["plain", "corrected", "$t^{-1}$", "$\\frac{broken$", "", "eta=0.1"])),
            "x": draw(values(n)), "y": draw(values(draw(st.sampled_from([n, n + 1, max(n - 1, 0)])))),
            "role": draw(st.sampled_from(["measured", "bound", "reference", "baseline", None, "other"])),
            "logx": draw(st.booleans()), "logy": draw(st.booleans()),
            "xlabel": "round t", "ylabel": "gap"})
    return {"id": "prop.series", "title": "Series", "paper": "prop", "reference": "Example 1", "claim": "c",
            "kind": "measurement", "verdict": "holds", "reason": "", "readings": {}, "instances": [],
            "series": series}


def _draw_all(chk):
    chk = json.loads(json.dumps(chk, allow_nan=False))      # exactly what results.json gives back
    figs = report.check_figures(chk)
    try:
        for rf in figs:
            svg = report.figure_svg(rf.figure)
            assert svg.lstrip().startswith(("<?xml", "<svg")), rf.key
            assert all(math.isfinite(v) and v > 0 for v in rf.size), rf.size
            rf.csv_text()
    finally:
        for rf in figs:
            rf.figure.clear()
    assert "fedcheck-card" in report.card_html(chk)
    return figs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(bound_checks())
def test_bound_figures_draw_whatever_the_instances_hold(chk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # matplotlib's notes on log axes without a positive value
        _draw_all(chk)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(series_checks())
def test_series_figures_draw_whatever_the_series_hold(chk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _draw_all(chk)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chk=st.one_of(bound_checks(), series_checks()))
def test_reports_render_whatever_the_result_holds(chk, tmp_path_factory):
    """The whole report phase (pages, figures, PDF where WeasyPrint works) on a drawn result."""
    from fedcheck.core.results import document, provenance
    out = tmp_path_factory.mktemp("prop-report")
    doc = json.loads(json.dumps(document([chk], provenance(["verify", "prop"])), allow_nan=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paths = render.write_reports(doc, out)
    from fedcheck.core.outputs import check_folder
    page = out / "checks" / check_folder(chk["id"])
    assert page / "report.html" in paths
    assert page / "report.pdf" in paths or report.pdf_status() is not None


def test_a_line_without_a_finite_point_keeps_its_markers_spec_harmless():
    """The root case of the exit 4: a reading's bound all NaN at the one recorded horizon (fedsgm.per_round)."""
    chk = {"id": "x.per_round", "kind": "bound", "verdict": "holds", "readings": {"a": {"paper": True}, "b": {}},
           "formula": {"metric": "per_round"},
           "instances": [{"seed": s, "rounds": [200.0], "metric": [None], "bound": {"a": [None], "b": [None]},
                          "readings": {"a": {"max_ratio": None}, "b": {"max_ratio": None}}} for s in range(3)]}
    assert _draw_all(chk) == []                      # nothing measured can be drawn: no empty figure either
    chk["instances"][0]["metric"] = [0.5]            # one drawable point: the figures, with markers on NaN bounds
    assert [rf.key for rf in _draw_all(chk)] == ["bound"]


def test_a_slope_interval_near_the_largest_float_draws():
    """Found by hypothesis: a fit whose confidence interval reaches -1.5e308 made the slope panel's linear axis
    reach near the largest float; matplotlib's tick locator then put ticks at inf and its formatter raised
    (OverflowError).  The view of a linear axis is kept within +-report.VIEW_LIMIT; the CSV keeps the values."""
    fit = {"slope": -0.5, "intercept": 0.0, "k_range": [10.0, 100.0], "ci": [-1.5315119200475613e+308, 7.3e306]}
    inst = {"seed": 1, "rounds": [1.0, 10.0, 100.0], "metric": [1.0, 0.3, 0.1], "bound": {}, "readings": {},
            "fit": fit, "F_star_certified_accuracy": 0.0}
    chk = {"id": "prop.bound", "title": "A bound", "paper": "prop", "reference": "Theorem 0", "claim": "x <= y",
           "kind": "bound", "verdict": "holds", "reason": "", "claimed_rate": -0.5, "fitted_rate": -0.5,
           "fitted_rate_ci": None, "rate_verdict": "holds", "max_ratio": None, "readings": {},
           "formula": {"metric": "gap", "valid_from": None}, "instances": [inst]}
    figs = _draw_all(chk)
    rate = next(f for f in figs if f.key == "rate")
    assert "-1.5315119200475613e+308" in rate.csv_text()
