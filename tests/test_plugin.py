"""The pytest plugin (``pytest11`` entry point): the marker, the fixtures, the suite options, short failures."""
import shlex
from pathlib import Path

import pytest

from fedcheck.cli.main import main

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
FEDPROX = ROOT / "examples" / "fedprox_claims.py"


@pytest.fixture(autouse=True, scope="module")
def _imported_before_pytester():
    """pytester's in-process runs drop the modules first imported inside them; import them here first so
    that classes keep one identity across the inner and the outer runs."""
    import fedcheck.api  # noqa: F401
    import fedcheck.problems.io  # noqa: F401
    import fedcheck.pytest_plugin  # noqa: F401
    import fedcheck.testing  # noqa: F401
    import pandas  # noqa: F401
    from fedcheck.catalog.registry import load_registry
    from fedcheck import RunConfig
    load_registry([str(FEDPROX)]).checks["mine.fedprox_no_drift"].run(RunConfig(seeds=1, rounds=5))


def test_plugin_is_registered_through_the_entry_point():
    from importlib.metadata import entry_points
    assert [e.value for e in entry_points(group="pytest11") if e.name == "fedcheck"] == ["fedcheck.pytest_plugin"]


def test_marker_passing_claim(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.fedcheck("theorem1")
        def test_theorem1(request):
            res, = request.node.fedcheck_results
            assert res.verdict == "holds"
    """)
    r = pytester.runpytest("-p", "no:cacheprovider", "--fedcheck-rounds", "100", "--fedcheck-seeds", "1")
    r.assert_outcomes(passed=1)


def test_marker_refuted_claim_short_message_and_reproduce_command(pytester):
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.fedcheck("mine.fedprox_no_drift", theorem_file={str(FEDPROX)!r})
        def test_no_drift():
            pass
    """)
    r = pytester.runpytest("-p", "no:cacheprovider", "--fedcheck-rounds", "200", "--fedcheck-seeds", "2")
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    assert "mine.fedprox_no_drift (conjecture 2): violated" in out
    assert "worst finding 'as conjectured': measured" in out and "vs bound" in out
    # the worst point of a 200-round run is the last iterate, x^201: t = 201, after 200 rounds (not "round 201")
    assert "at t = 201 (after 200 rounds)" in out and "round 201" not in out
    lines = [ln for ln in out.splitlines() if "reproduce: fedcheck verify" in ln]
    assert lines, out
    cmd = lines[0].split("reproduce: ", 1)[1]
    assert f"--theorem-file {FEDPROX}" in cmd and "--instance " in cmd and ".npz" in cmd and "--rounds 200" in cmd
    # short: no traceback, no array dump
    assert "Traceback" not in out and "array(" not in out and "[[" not in out
    section = out.split("_ test_no_drift _", 1)[1].split("short test summary")[0]
    assert len([ln for ln in section.splitlines() if ln.strip("=_ ")]) <= 8, section
    # the command reproduces the failure from the saved instance
    argv = shlex.split(cmd)[1:]
    assert Path(argv[argv.index("--instance") + 1]).is_file()
    assert main(argv + ["-q", "--no-report"]) == 1


def test_suite_options_and_ini_set_rounds_and_seeds(pytester):
    src = """
import pytest

@pytest.mark.fedcheck("theorem1", rounds=30)
def test_config(fedcheck_config, fedcheck_claim):
    assert fedcheck_claim.id == "fedfw.theorem1"
    assert (fedcheck_config.rounds, list(fedcheck_config.seeds)) == ({marker_rounds}, {seeds})

def test_check_claim(check_claim):
    res = check_claim("theorem1")
    assert res.evidence["rounds"] == {suite_rounds} and len(res.instances) == {n}
"""
    # the command line wins over the marker and the ini file
    pytester.makeini("[pytest]\nfedcheck_rounds = 40\nfedcheck_seeds = 3\n")
    pytester.makepyfile(test_config=src.format(marker_rounds=60, seeds=[0, 1], suite_rounds=60, n=2))
    pytester.runpytest("-p", "no:cacheprovider", "--fedcheck-rounds", "60", "--fedcheck-seeds", "0-1"
                       ).assert_outcomes(passed=2)
    # without options: the marker's rounds, else the ini file's
    pytester.makepyfile(test_config=src.format(marker_rounds=30, seeds=[0, 1, 2], suite_rounds=40, n=3))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_bad_options_and_markers_are_one_line(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.fedcheck("theorem_one")
        def test_typo():
            pass
    """)
    r = pytester.runpytest("-p", "no:cacheprovider", "--fedcheck-seeds", "1")
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    assert "unknown check 'theorem_one'; did you mean" in out and "During handling" not in out
    r = pytester.runpytest("-p", "no:cacheprovider", "--fedcheck-seeds", "x")
    assert r.ret == pytest.ExitCode.USAGE_ERROR and "--fedcheck-seeds 'x': expected a count" in r.stderr.str()


def test_hypothesis_draws_in_the_domain_and_targets_the_worst_case(pytester):
    pytester.makepyfile(f"""
        import hypothesis
        from hypothesis import given, settings, HealthCheck
        from fedcheck.catalog.registry import load_registry
        from fedcheck.testing import claim_instances

        CLAIM = load_registry([{str(FEDPROX)!r}]).checks["mine.fedprox_gd_rate"]
        seen = []
        real_target = hypothesis.target

        def spy(value, label=""):
            seen.append((value, label))
            return real_target(value, label=label)

        hypothesis.target = spy

        @settings(max_examples=3, deadline=None, derandomize=True, database=None)
        @given(inst=claim_instances(CLAIM))
        def test_drawn(check_claim, inst):
            assert inst.properties()["loss"] == "least_squares"
            res = check_claim(CLAIM, instance=inst)
            assert res.verdict == "holds"

        def test_targets():
            assert seen and all(label == "mine.fedprox_gd_rate: measured/bound" for _, label in seen)
            assert all(0 < v < 1 for v, _ in seen)
    """)
    pytester.runpytest("-p", "no:cacheprovider", "--fedcheck-rounds", "60").assert_outcomes(passed=2)
