"""Provenance on every paper reading: the paper's words (a short quote), their place and the setting they
are stated in, carried from the declaration into the JSON, the report and ``fedcheck list --long``; a reading tested
outside its stated setting is an analysis by construction.  The catalog test (tests/test_catalog.py) checks the
findings a run produces; this file checks the declarations."""
import subprocess
import sys

import numpy as np
import pytest

from fedcheck.catalog.registry import build_listing, default_registry, load_registry
from fedcheck.core import verdict as V
from fedcheck.core.claim import Claim, Paper, Reading, Source
from fedcheck.core.errors import BadInput
from fedcheck.core.readings import Deviation
from fedcheck.core.evidence import (Bound, BoundTest, Comparison, Fact, Finding, Measurement, MeasureResult, Proof)
from fedcheck.core.runner import declared_findings
from fedcheck.experiments import Case, Cases
from fedcheck.report import check_context

P = Paper("tprov", "provenance", "tests")
S = Source("the bound holds", "Theorem 9, (99)", "convex f, eta = 1/L, any T")
S2 = Source("the other bound holds", "Lemma 8, (88)", "convex f")

# papers whose readings have been reviewed against their text: every paper statement must carry its source.
# Every paper of the index (theorems/__init__.py: PAPERS) is; a new paper is, from the line that adds it.
REVIEWED = tuple(default_registry().papers)


def bare_paper_findings(readings: dict) -> list:
    """The paper findings of a result (its ``readings``) without quote, place and setting (tests/test_catalog.py)."""
    return [name for name, d in readings.items() if d.get("paper") and not (
        isinstance(d.get("source"), dict) and all(str(d["source"].get(k) or "").strip()
                                                  for k in ("quote", "place", "setting")))]


def test_the_catalog_check_finds_a_paper_finding_without_its_words():
    m = Claim(id="tprov.bare", paper=P, reference="r", statement="s", evidence=Measurement(
        lambda ctx: MeasureResult([Finding("has words", V.HOLDS, source=S), Finding("bare", V.HOLDS),
                                   Finding("analysis", V.HOLDS, paper=False)])))
    assert bare_paper_findings(m.run().to_dict()["readings"]) == ["bare"]
    assert bare_paper_findings({"x": {"paper": True, "source": {"quote": "q", "place": " ", "setting": "s"}}}) == ["x"]


def test_a_source_needs_quote_place_and_setting():
    with pytest.raises(TypeError):
        Source("", "Theorem 1", "any")
    with pytest.raises(TypeError):
        Source("q", "Theorem 1", "  ")
    with pytest.raises(TypeError):
        Reading("r", source=("q", "p", "s"))


def test_a_reading_tested_outside_its_setting_is_an_analysis_by_construction():
    noise = Deviation("noise", paper="shrinking", run="a fixed scale")
    with pytest.raises(ValueError, match="paper=False"):
        Reading("r", source=S, deviation=noise)
    with pytest.raises(ValueError, match="paper=False"):
        Finding("f", V.VIOLATED, paper=True, source=S, deviation=Deviation("oracle", paper="stochastic", run="exact"))
    r = Reading("r", source=S, deviation=noise, paper=False)
    assert not r.paper
    with pytest.raises(BadInput, match="as a sentence"):           # a sentence names no parameter: refused
        Reading("r", source=S, deviation="noise of a fixed scale", paper=False)


def _cases(config, params):
    return [Case("draw", {("B1", "stated"): Comparison(lhs_lo=np.array([0.5]), rhs_lo=np.array([1.0])),
                          ("B1", "elsewhere"): Comparison(lhs_lo=np.array([2.0]), rhs_lo=np.array([1.0])),
                          ("B2", "stated"): Comparison(lhs_lo=np.array([0.1]), rhs_lo=np.array([1.0])),
                          ("B2", "elsewhere"): Comparison(lhs_lo=np.array([0.1]), rhs_lo=np.array([1.0]))})]


def _bound_claim(findings="reading"):
    return Claim(id="tprov.b", paper=P, reference="r", statement="s",
                 evidence=BoundTest(Cases(_cases), bounds=(Bound("B1", source=S), Bound("B2", source=S2)),
                                    findings=findings),
                 readings=(Reading("stated", source=S),
                           Reading("elsewhere", source=S, paper=False, deviation=ELSEWHERE)),
                 params={"setting": "one the paper never ran"})


ELSEWHERE = Deviation("setting", paper="the paper's", run="one the paper never ran")


def test_the_runner_carries_sources_and_deviations_into_the_results():
    r = _bound_claim().run().to_dict()
    st, el = r["readings"]["stated"], r["readings"]["elsewhere"]
    assert st["source"] == {"quote": S.quote, "place": S.place, "setting": S.setting}
    assert el["deviation"] == str(ELSEWHERE) and el["paper"] is False
    assert el["deviations"] == [{"parameter": "setting", "paper": "the paper's", "run": "one the paper never ran",
                                 "of_size": False}]
    # a refutation outside the paper's setting does not refute the paper
    assert el["verdict"] == V.VIOLATED and r["verdict"] == V.HOLDS
    # findings named by bound take the bound's source
    rb = _bound_claim("bound|reading").run().to_dict()
    assert rb["readings"]["B2 | stated"]["source"]["place"] == S.place        # the reading's first
    rb = Claim(id="tprov.bb", paper=P, reference="r", statement="s",
               evidence=BoundTest(Cases(lambda c, p: [Case("d", {("B1", "as stated"): Comparison(lhs_lo=[0.1], rhs_lo=[1.0]),
                                                                 ("B2", "as stated"): Comparison(lhs_lo=[0.1], rhs_lo=[1.0])})]),
                                  bounds=(Bound("B1", source=S), Bound("B2", source=S2)))).run().to_dict()
    assert rb["readings"]["B2"]["source"]["place"] == S2.place


def test_measurement_sources_and_proof_facts_carry_their_words():
    m = Claim(id="tprov.m", paper=P, reference="r", statement="s", evidence=Measurement(
        lambda ctx: MeasureResult([Finding("declared", V.HOLDS), Finding("own", V.HOLDS, source=S2),
                                   Finding("analysis", V.HOLDS, paper=False)]), sources={"declared": S}))
    r = m.run().to_dict()
    assert r["readings"]["declared"]["source"]["quote"] == S.quote
    assert r["readings"]["own"]["source"]["quote"] == S2.quote
    assert "source" not in r["readings"]["analysis"]
    pf = Claim(id="tprov.p", paper=P, reference="r", statement="s",
               evidence=Proof((Fact("1 + 1 = 2", lambda: (V.HOLDS, "arithmetic"), source=S),)))
    assert pf.run().to_dict()["readings"]["1 + 1 = 2"]["source"]["place"] == S.place
    with pytest.raises(TypeError):
        Measurement(lambda ctx: None, sources={"x": "not a source"})


def test_declared_findings_name_what_a_run_will_decide():
    d = {x["name"]: x for x in declared_findings(_bound_claim())}
    assert set(d) == {"stated", "elsewhere"} and d["stated"]["source"] is S and d["elsewhere"]["paper"] is False
    assert d["elsewhere"]["deviation"]


def test_the_report_shows_the_papers_words_beside_each_verdict():
    r = _bound_claim().run().to_dict()
    ctx = check_context(r, {})
    rows = {row[0]: row for row in ctx["readings_table"]["rows"]}
    assert any(S.quote in str(c) and S.place in str(c) and S.setting in str(c) for c in rows["stated"])
    assert any(f"tested outside it: {ELSEWHERE}" in str(c) for c in rows["elsewhere"])


def test_list_long_shows_quote_place_and_setting(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text("from fedcheck.core.claim import Claim, Paper, Reading, Source\n"
                 "from fedcheck.core.evidence import Fact, Proof\n"
                 "from fedcheck.core import verdict as V\n"
                 "ME = Paper(key='mine', title='t', authors='a')\n"
                 "c = Claim(id='mine.p', paper=ME, reference='r', statement='s', evidence=Proof((Fact('f', "
                 "lambda: (V.HOLDS, 'e'), source=Source('we prove it', 'Lemma 1', 'any n')),)))\n")
    p = subprocess.run([sys.executable, "-m", "fedcheck", "list", "--long", "--theorem-file", str(f)],
                       capture_output=True, text=True, env={**__import__("os").environ, "FEDCHECK_CACHE": "off"})
    assert p.returncode == 0, p.stderr
    block = p.stdout.split("mine.p", 1)[1]
    assert "we prove it" in block and "Lemma 1" in block and "any n" in block
    rows = {r["id"]: r for r in build_listing(load_registry([str(f)]))}
    assert rows["mine.p"]["statements"][0]["source"]["setting"] == "any n"


def _reviewed_claims():
    reg = default_registry()          # every paper of the index, read when the tests are collected
    return [c for c in reg.checks.values() if c.paper.key in reg.papers]


@pytest.mark.parametrize("claim", _reviewed_claims(), ids=lambda c: c.id)
def test_every_declared_paper_statement_of_a_reviewed_paper_has_its_source(claim):
    missing = [d["name"] for d in declared_findings(claim) if d["paper"] and d["source"] is None]
    assert not missing, f"{claim.id}: paper readings without quote, place and setting: {missing}"
    for r in claim.readings:      # a reading tested outside the stated setting names how it differs
        assert not (r.deviation and r.paper)


def test_a_paper_claim_tested_only_outside_its_setting_is_undecided_for_the_paper():
    """No finding is the paper's and the analyses name their deviation: whatever they found, the paper is not refuted
    (a paper is refuted only in its own setting); the reason names the deviation and the analyses' verdicts."""
    from fedcheck.core.evidence import Finding, Measurement, MeasureResult
    from fedcheck.core.claim import Claim, RunConfig

    def measure(ctx):
        return MeasureResult(findings=[Finding("scaled-down ordering", "not_reproduced", False, source=S,
                                               deviation=Deviation("data", paper="MNIST", run="digits"))],
                             used={"data": "digits"})
    c = Claim(id="tprov.outside", paper=P, reference="Table 1", statement="A beats B", evidence=Measurement(measure))
    res = c.run(RunConfig())
    assert res.verdict == "inconclusive"
    assert res.headline.startswith("inconclusive: not tested in the paper's setting") and "1 of 1 refuted" in res.headline
    assert "data: digits instead of the paper's MNIST" in res.reason and "scaled-down ordering: not_reproduced" in res.reason

    def measure2(ctx):   # an analysis of fedcheck's own (no deviation from a paper setting): the analyses decide
        return MeasureResult(findings=[Finding("my analysis", "violated", False)])
    c2 = Claim(id="tprov.own", paper=P, reference="r", statement="s", evidence=Measurement(measure2))
    assert c2.run(RunConfig()).verdict == "violated"
