"""Readings are readings: another reading of the paper's words is a ``Reading`` (the paper's or an analysis), never a
deviation; a sentence that fails under a plausible reading says so in its headline; one defect found under several
readings or cases counts once; a refuted proof step says whether the theorem's conclusion survives it."""
import pytest

from fedcheck import Deviation, Finding, Reading, Source
from fedcheck import verdicts as V
from fedcheck.core.runner import headline

SRC = Source("we can introduce noise without compromising the convergence guarantees", "Section 3.2", "FedFW")


def test_a_plausible_reading_is_not_a_setting():
    with pytest.raises(ValueError, match="not a setting"):
        Reading("fixed level", paper=False, plausible=True, source=SRC,
                deviation=Deviation("noise scale", paper="shrinking", run="fixed"))
    with pytest.raises(ValueError, match="not a setting"):
        Finding("fixed level", V.VIOLATED, False, reading=Reading("fixed level", paper=False, plausible=True),
                deviation=Deviation("noise scale", paper="shrinking", run="fixed"))
    with pytest.raises(ValueError, match="conclusion"):
        Reading("l_inf", step="(C.25)")
    f = Finding("fixed", V.VIOLATED, False, reading=Reading("a fixed privacy level", paper=False, plausible=True,
                                                             source=SRC))
    assert f.source is SRC and f.plausible and f.as_reading()["reading"]["plausible"] is True


def test_a_sentence_failing_under_a_plausible_reading_says_so():
    paper = Finding("noise shrinking like eta_t keeps the rate", V.HOLDS, True, source=SRC)
    other = Finding("a fixed noise level keeps the rate", V.VIOLATED, False,
                    reading=Reading("'noise' as a fixed privacy level", paper=False, plausible=True, source=SRC))
    h = headline(V.HOLDS, [paper, other], "measurement")
    assert h.startswith("partly holds: fails under the plausible reading 'noise' as a fixed privacy level")
    # an analysis that is not a reading of the words (a repair, another setting) leaves the headline alone
    repair = Finding("a repaired constant", V.VIOLATED, False)
    assert headline(V.HOLDS, [paper, repair], "measurement") == V.HOLDS
    # undecided for the paper, failing under a plausible reading: both said
    undecided = Finding("the paper's reading", V.INCONCLUSIVE, True)
    other2 = Finding("ends above", V.NOT_REPRODUCED, False, reading=Reading("ends above FedMLS", paper=False,
                                                                              plausible=True))
    assert headline(V.INCONCLUSIVE, [undecided, other2], "counterexample") == \
        "inconclusive; fails under the plausible reading ends above FedMLS"


def test_one_defect_under_several_readings_counts_once():
    r = lambda name, d="": Reading(name, defect=d)    # noqa: E731
    fs = [Finding(f"case {i}: every run", V.VIOLATED, True, reading=r(f"case {i}: every run", "eps-solution on every run"))
          for i in range(3)] + [Finding(f"case {i}: in expectation", V.HOLDS, True) for i in range(3)]
    assert headline(V.VIOLATED, fs, "expectation") == \
        "partly holds: 1 defect, found under 3 readings/cases (3 of 6 paper findings refuted)"
    # without a defect key each refuted finding is its own
    fs2 = [Finding(f"c{i}", V.VIOLATED, True) for i in range(2)] + [Finding("ok", V.HOLDS, True)]
    assert headline(V.VIOLATED, fs2, "bound") == "partly holds: 2 of 3 paper findings refuted"


def test_a_refuted_proof_step_says_whether_the_conclusion_survives():
    step = Reading("l_inf dual norm", step="(C.25)", conclusion="survives in l1 geometry with a factor O(log d)")
    fs = [Finding("l_inf dual norm", V.VIOLATED, True, reading=step), Finding("l2", V.HOLDS, True)]
    h = headline(V.VIOLATED, fs, "bound")
    assert "refutes proof step (C.25); the theorem's conclusion: survives in l1 geometry" in h


# ---- the catalog: the four claims whose other readings were filed as settings -----------------------------------
def _run(claim_id):
    from fedcheck import RunConfig
    from fedcheck.catalog.registry import default_registry
    return default_registry().resolve([claim_id])[0].run(RunConfig(use_cache=False))


def test_lmo_noise_fixed_level_is_a_reading_not_a_deviation():
    res = _run("fedfw.lmo_noise")
    fixed = next(r for n, r in res.readings.items() if n.startswith("noise of a fixed scale"))
    assert not fixed.get("deviation") and fixed["reading"]["plausible"] and fixed["verdict"] == "violated"
    assert res.verdict == "holds" and res.headline.startswith("partly holds: fails under the plausible reading")


def test_privacy_l2_direction_is_a_reading_in_any_setting():
    res = _run("fedfw.privacy")
    d = res.readings["l2 ball: one LMO message does not reveal the gradient's direction"]
    assert not d.get("deviation") and d["reading"]["plausible"] and d["verdict"] == "violated"
    assert res.verdict == "holds" and res.headline.startswith("partly holds: fails under the plausible reading")


def test_lambda0_effect_on_least_squares_is_an_analysis_of_the_mclr_sentence():
    res = _run("fedfw.lambda0_effect")
    assert all(not r["paper"] and r.get("deviations") for r in res.readings.values())
    assert res.verdict == "inconclusive" and res.headline.startswith("inconclusive: not tested in the paper's setting")


def test_a_reading_tried_on_several_cases_names_the_failing_one():
    rd = Reading("'ineffective' as ending above FedMLS", paper=False, plausible=True)
    fs = [Finding("FedAvg: ineffective", V.INCONCLUSIVE, True),
          Finding("FedAvg: ends above FedMLS", V.REPRODUCED, False, reading=rd),
          Finding("Scaffnew: ends above FedMLS", V.NOT_REPRODUCED, False, reading=rd)]
    assert headline(V.INCONCLUSIVE, fs, "counterexample") == ("inconclusive; fails under the plausible reading "
                                                             "'ineffective' as ending above FedMLS (for: Scaffnew: ends "
                                                             "above FedMLS)")


def test_standard_parameters_says_scaffnew_ends_below_fedmls():
    res = _run("fedmls.standard_parameters")
    f = res.readings["Scaffnew, constant step: ends above FedMLS after K = 100 rounds"]
    assert f["verdict"] == "not_reproduced" and f["reading"]["plausible"] and not f.get("deviation")
    assert "smallest effect this sample could decide" in f["evidence"]
    assert res.verdict == "inconclusive" and "fails under the plausible reading" in res.headline
    assert "Scaffnew" in res.headline


def test_compression_counts_its_one_wording_defect_once():
    from theorems import fedsgm
    c = fedsgm.compression
    stated = [r for r in c.readings if r.name.endswith("every run (as stated)")]
    assert len(stated) == 3 and len({r.defect for r in stated}) == 1 and stated[0].defect
    assert all(not r.defect for r in c.readings if r not in stated)


def test_variance_step_says_the_theorem_survives_its_refuted_step():
    res = _run("feddualavg.variance_step")
    assert res.verdict == "violated"
    assert "refutes proof step (C.25); the theorem's conclusion: not refuted" in res.headline
    assert res.readings["l_inf dual norm (l1 geometry)"]["reading"]["conclusion"].startswith("not refuted")


def test_a_proof_step_records_and_shows_its_conclusion():
    from fedcheck.steps import ProofStep, StepOutcome
    from fedcheck.tools.audit import format_steps
    st = ProofStep("(C.25)", "E<a,b> <= E||a|| E||b||", "witness",
                   lambda: StepOutcome("refuted", "a dependent pair"), conclusion="survives (Young's inequality)")
    rec = st.evaluate()
    assert rec["conclusion"] == "survives (Young's inequality)"

    class C:
        id, reference = "x.y", "(C.25)"
    assert "(C.25) refuted; the theorem's conclusion: survives" in format_steps(C, [rec])


def test_outside_the_setting_a_plausible_reading_that_fails_at_any_size_is_named():
    """On main a run outside the paper's setting said only "analyses: k of n refuted", even where one of them is the
    paper's own sentence read literally and fails whatever the size (Figure 4's "in the first iteration")."""
    sized = Deviation("images", paper=60000, run=500)
    fs = [Finding("larger gap early", V.INCONCLUSIVE, False, deviation=sized),
          Finding("first iteration (literal)", V.VIOLATED, False,
                  reading=Reading("'the first iteration' read literally", paper=False, plausible=True))]
    h = headline(V.INCONCLUSIVE, fs, "measurement")
    assert h == ("inconclusive: not tested in the paper's setting (analyses: 1 of 2 refuted); fails under the "
                 "plausible reading 'the first iteration' read literally")
    # a plausible reading run outside the setting itself (a deviation) is not named: its failure may be the size's
    fs[1] = Finding("first iteration (literal)", V.VIOLATED, False, deviation=sized)
    assert headline(V.INCONCLUSIVE, fs, "measurement").endswith("(analyses: 1 of 2 refuted)")


def test_figure4s_first_iteration_sentence_is_a_plausible_reading_the_headline_names():
    from fedcheck.catalog.registry import default_registry
    from fedcheck.core.claim import RunConfig
    r = default_registry().resolve(["fedfw.figure4_dnn"])[0].run(RunConfig()).to_dict()
    literal = [f for n, f in r["readings"].items() if "first iteration" in n]
    assert literal and all(f["reading"]["plausible"] for f in literal)
    assert "fails under the plausible reading" in r["headline"] and "first iteration" in r["headline"]
