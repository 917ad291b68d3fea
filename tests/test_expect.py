"""CI's question "as expected?": ``fedcheck verify --expect`` compares every verdict with the one its claim
declares (``expected=``) and exits 0 when all match -- refuted claims included -- and 1 listing each difference; the
pytest plugin's expectation mode does the same.  A claim that declares nothing cannot be compared: exit 2 before any
run."""
import textwrap
from pathlib import Path

import pytest

from fedcheck.api import expectation_differences
from fedcheck.catalog.registry import default_registry
from fedcheck.cli.main import main

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
FEDPROX = ROOT / "examples" / "fedprox_claims.py"
REG = default_registry()


@pytest.fixture(autouse=True, scope="module")
def _imported_before_pytester():
    """pytester's in-process runs drop the modules first imported inside them; import them here first (as
    tests/test_plugin.py does) so that classes keep one identity across the inner and the outer runs."""
    import fedcheck.api  # noqa: F401
    import fedcheck.problems.io  # noqa: F401
    import fedcheck.pytest_plugin  # noqa: F401
    import fedcheck.testing  # noqa: F401
    import pandas  # noqa: F401

MISDECLARED = '''
from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
from fedcheck.algorithms import federated
from fedcheck.problems import RandomFamily
from fedcheck.symbols import L, D, t


def gd(X, x, ctx, *, eta):
    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))
    return Y, Y.mean(1)


def claim(name, bound, **kw):
    return Claim(id=f"mine.{name}", paper=Paper(key="mine", title="mine", authors="me"), reference="r", statement="s",
                 evidence=BoundTest(Rounds(family=RandomFamily(loss="least_squares", set="l1", n=3, m=6, p=5),
                                           algorithm=federated(gd), schedules={"eta": 1 / L}, seeds=1, rounds=20),
                                    bounds=(Bound("b", bound),)), **kw)


CLAIMS = [claim("tight", 1e-9 / t, expected="holds"),            # refuted, though declared to hold
          claim("loose", 100 * L * D**2 / t, expected="holds")]   # holds, as declared
'''


@pytest.mark.xdist_group("catalog")        # the session's runs of the catalog (tests/conftest.py::catalog_run)
def test_every_claim_of_the_catalog_gives_its_declared_verdict(catalog_run):
    """What ``fedcheck verify fedfw feddualavg fedsgm fedmls --expect`` decides (exit 0 on main), from the same runs
    at the same default configuration."""
    results = [catalog_run(c) for c in REG.checks.values()]
    assert all(c.expected is not None for c in REG.checks.values())
    assert expectation_differences(results) == []


def test_expect_exits_0_when_refutations_are_as_declared(capsys):
    rc = main(["verify", "--theorem-file", str(FEDPROX), "mine", "--no-report", "--expect", "--rounds", "200"])
    out = capsys.readouterr().out
    assert "mine.fedprox_no_drift" in out and "violated" in out     # a refutation, declared as one
    assert rc == 0 and "expect: all 2 verdicts as declared" in out
    rc = main(["verify", "--theorem-file", str(FEDPROX), "mine", "--no-report", "--rounds", "200"])
    assert rc == 1                                                   # without --expect: the refutation fails


def test_expect_exits_1_listing_each_difference(tmp_path, capsys):
    f = tmp_path / "mis.py"
    f.write_text(MISDECLARED)
    rc = main(["verify", "--theorem-file", str(f), "mine", "--no-report", "--expect"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "expect: 1 of 2 verdicts differ from the declared ones:" in out
    assert "  mine.tight: violated, expected holds" in out and "mine.loose: holds, expected" not in out


def test_expect_refuses_a_claim_that_declares_nothing_before_running(tmp_path, capsys):
    f = tmp_path / "mis.py"
    f.write_text(MISDECLARED.replace(', expected="holds")', ")"))
    rc = main(["verify", "--theorem-file", str(f), "mine", "--no-report", "--expect", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "declare(s) no expected verdict" in err[0] and "mine.tight" in err[0]
    assert not (tmp_path / "o").exists()


def test_the_plugins_expectation_mode_passes_as_declared_and_fails_listing_differences(pytester, tmp_path):
    f = tmp_path / "mis.py"
    f.write_text(MISDECLARED)
    pytester.makepyfile(textwrap.dedent(f"""
        import pytest

        @pytest.mark.fedcheck("mine", theorem_file={str(FEDPROX)!r}, expect=True)
        def test_as_declared():
            pass

        @pytest.mark.fedcheck("mine", theorem_file={str(f)!r}, expect=True)
        def test_misdeclared():
            pass
    """))
    r = pytester.runpytest("-p", "no:cacheprovider", "--fedcheck-rounds", "200", "--fedcheck-seeds", "1")
    r.assert_outcomes(passed=1, failed=1)
    out = r.stdout.str()
    assert "mine.tight: violated, expected holds" in out
    assert "fedprox_no_drift: violated, expected" not in out


@pytest.mark.slow
def test_verify_the_four_papers_with_expect_exits_0(capsys):
    rc = main(["verify", *REG.papers, "--no-report", "--expect"])
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    assert f"expect: all {len(REG.checks)} verdicts as declared" in out
