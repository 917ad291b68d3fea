"""The fedcheck pytest plugin (registered through the ``pytest11`` entry point when fedcheck is installed).

A marker checks claims as part of a test::

    @pytest.mark.fedcheck("theorem1")                                     # ids, aliases, papers
    def test_theorem1():
        pass

    @pytest.mark.fedcheck("mine.gd_rate", theorem_file="my_claims.py", rounds=500, params={"mu": 0.1})
    def test_my_conjecture():
        pass

and fixtures check them on instances you choose or hypothesis draws (inside the claim's domain)::

    from hypothesis import given, settings
    from fedcheck.testing import claim_instances
    from theorems.fedfw import theorem1

    @settings(max_examples=10, deadline=None)
    @given(inst=claim_instances(theorem1))
    def test_theorem1_drawn(check_claim, inst):
        check_claim(theorem1, instance=inst)          # steers hypothesis toward the worst measured/bound

Expectation mode (CI): ``@pytest.mark.fedcheck("fedfw", expect=True)`` -- or ``--fedcheck-expect`` /
``fedcheck_expect = true`` for every marked test -- passes when every verdict is the one its claim declares
(``expected=``, refuted claims included) and fails listing each difference on one line, as ``fedcheck verify
--expect`` does (exit 0 / 1).

A refuted claim fails the test with a few lines: the verdict, the worst finding (measured vs bound, where)
and the ``fedcheck verify ... --instance <saved file>`` command that reproduces it (the instance is saved under
pytest's temporary directory).  An inconclusive claim passes unless ``allow_inconclusive=False``.

Rounds and seeds for a whole suite: ``--fedcheck-rounds T`` and ``--fedcheck-seeds 0-3`` on the command line or
``fedcheck_rounds`` / ``fedcheck_seeds`` in the ini file.  Precedence: command line, then the marker's own
``rounds=``/``seeds=``, then the ini file, then the claim's defaults.  A marked test that requests the
``check_claim`` fixture is left to check what it wants (the marker then only names ``fedcheck_claim``).

This module imports nothing heavy at start-up: fedcheck itself is imported when a check runs.
"""
from __future__ import annotations

import pytest

__all__ = ["pytest_addoption", "pytest_configure", "pytest_runtest_call", "fedcheck_config", "fedcheck_claim",
           "check_claim"]

_MARKER = ("fedcheck(*claims, rounds=None, seeds=None, params=None, theorem_file=None, allow_inconclusive=True, "
           "expect=False): check these claims (ids, aliases, papers, Claim objects, theorem files) as part of the test; "
           "expect=True: pass when every verdict is the one the claim declares")


def pytest_addoption(parser):
    group = parser.getgroup("fedcheck", "fedcheck: convergence claims checked in the suite")
    group.addoption("--fedcheck-rounds", dest="fedcheck_rounds", default=None, metavar="T",
                    help="rounds (or horizon) T for every fedcheck check of the suite")
    group.addoption("--fedcheck-seeds", dest="fedcheck_seeds", default=None, metavar="SEEDS",
                    help="seeds for every fedcheck check: a count (4), a list (3,5,9) or a range (10-19)")
    parser.addini("fedcheck_rounds", "rounds (or horizon) T for every fedcheck check (--fedcheck-rounds wins)",
                  default=None)
    parser.addini("fedcheck_seeds", "seeds for every fedcheck check (--fedcheck-seeds wins)", default=None)
    group.addoption("--fedcheck-expect", dest="fedcheck_expect", action="store_true", default=False,
                    help="every @pytest.mark.fedcheck test passes when each verdict is the one its claim declares "
                    "(expected=...) and fails listing the differences (as fedcheck verify --expect)")
    parser.addini("fedcheck_expect", "expectation mode for every fedcheck marker (--fedcheck-expect)", type="bool",
                  default=False)


def pytest_configure(config):
    config.addinivalue_line("markers", _MARKER)
    if any(v not in (None, "") for v in (config.getoption("fedcheck_rounds", None), config.getoption("fedcheck_seeds", None),
                                         config.getini("fedcheck_rounds"), config.getini("fedcheck_seeds"))):
        _suite(config)      # bad options are a usage error at once, not a failure of every test


def _fail(msg: str):
    __tracebackhide__ = True
    pytest.fail(" ".join(msg.split()) if "\n" not in msg else msg, pytrace=False)


# ------------------------------------------------------------------------------------------------
def _parse(config, name: str, value, label: str | None = None):
    """``rounds`` or ``seeds`` from the command line, the ini file (``label`` None) or a marker (``label``: its
    keyword, ``rounds=``)."""
    from fedcheck.core.errors import BadInput
    if value is None or str(value).strip() == "":
        return None
    opt = label or f"--fedcheck-{name}"
    try:
        if name == "rounds":
            try:
                r = int(str(value).strip())
            except ValueError:
                raise BadInput(f"{opt} {value!r}: expected a positive integer") from None
            if r < 1:
                raise BadInput(f"{opt} must be >= 1")
            return r
        from fedcheck.api import parse_seeds
        return parse_seeds(value if isinstance(value, (list, tuple)) else str(value))
    except BadInput as e:
        raise pytest.UsageError(f"fedcheck: {str(e).replace('--seeds', opt, 1)}") from None


def _suite(config) -> dict:
    """Rounds and seeds from the command line and the ini file (parsed once per session)."""
    cached = getattr(config, "_fedcheck_suite", None)
    if cached is None:
        cached = {
            "cli": {"rounds": _parse(config, "rounds", config.getoption("fedcheck_rounds")),
                    "seeds": _parse(config, "seeds", config.getoption("fedcheck_seeds"))},
            "ini": {"rounds": _parse(config, "rounds", config.getini("fedcheck_rounds")),
                    "seeds": _parse(config, "seeds", config.getini("fedcheck_seeds"))},
        }
        config._fedcheck_suite = cached
    return cached


def _setting(config, name: str, marker_value=None):
    s = _suite(config)
    if s["cli"][name] is not None:
        return s["cli"][name]
    if marker_value is not None:
        return _parse(config, name, marker_value, label=f"{name}=")
    return s["ini"][name]


def _marker_of(node):
    return node.get_closest_marker("fedcheck")


def _marker_claims(marker):
    from fedcheck.api import resolve
    from fedcheck.core.errors import BadInput
    tf = marker.kwargs.get("theorem_file")
    try:
        return resolve(*marker.args, theorem_file=tf)
    except BadInput as e:
        msg = f"@pytest.mark.fedcheck: {e}"
    _fail(msg)


def _params(value) -> dict:
    from fedcheck.api import parse_params as parse
    from fedcheck.core.errors import BadInput
    try:
        return parse(value)
    except BadInput as e:
        msg = f"@pytest.mark.fedcheck: {e}"
    _fail(msg)


def _file_of(claim, files) -> str | None:
    """The theorem file a claim comes from (for the reproducing command), ``None`` for the catalog's."""
    from fedcheck.api import theorem_file_of
    from fedcheck.testing import claim_file
    return theorem_file_of(claim, files) or claim_file(claim)


def _run_and_judge(claim, *, instance=None, rounds=None, seeds=None, params=None, allow_inconclusive=True,
                   save_dir=None, theorem_file=None):
    """Run one claim; fail the test with the short message when it is refuted.  Returns the result."""
    __tracebackhide__ = True
    from fedcheck import api
    from fedcheck.core import verdict as V
    from fedcheck.core.errors import BadInput
    from fedcheck.testing import check_on, failure_message, reproduce_command
    try:
        if instance is not None:
            res = check_on(claim, instance, rounds=rounds, params=params, save_dir=save_dir)
        else:
            res, = api.run(api.prepare(claim, seeds=seeds, rounds=rounds, params=params), save_dir=save_dir)
    except (BadInput, ValueError) as e:
        if not (isinstance(e, BadInput) or "domain" in str(e)):
            raise
        res, msg = None, f"fedcheck: {claim.id}: {e}"
    if res is None:
        _fail(msg)
    bad = res.verdict in (V.VIOLATED, V.NOT_REPRODUCED) or (not allow_inconclusive and res.verdict == V.INCONCLUSIVE)
    if bad:
        cmd = reproduce_command(claim, res, rounds=rounds, seeds=seeds if instance is None else None,
                                params=params, theorem_file=theorem_file)
        pytest.fail(failure_message(claim, res, cmd), pytrace=False)
    return res


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    """A test marked ``@pytest.mark.fedcheck(...)`` (and not asking for ``check_claim``) checks its claims."""
    marker = _marker_of(item)
    if marker is None or "check_claim" in getattr(item, "fixturenames", ()):
        return
    __tracebackhide__ = True
    claims, files = _marker_claims(marker)
    msg = None
    try:                    # a marker's own bad rounds= / seeds= fail this test with one line, not the session
        rounds = _setting(item.config, "rounds", marker.kwargs.get("rounds"))
        seeds = _setting(item.config, "seeds", marker.kwargs.get("seeds"))
    except pytest.UsageError as e:
        msg = f"@pytest.mark.fedcheck: {str(e).removeprefix('fedcheck: ')}"
    if msg:
        _fail(msg)
    params = _params(marker.kwargs.get("params"))
    expect = bool(marker.kwargs.get("expect", False) or item.config.getoption("fedcheck_expect", False)
                  or item.config.getini("fedcheck_expect"))
    from fedcheck.api import prepare
    from fedcheck.core.errors import BadInput
    msg = None
    try:
        prepare(*claims, seeds=seeds, rounds=rounds, params=params, expect=expect)
    except BadInput as e:
        msg = f"@pytest.mark.fedcheck: {e}"
    if msg:
        _fail(msg)
    if expect:
        _run_expecting(item, claims, rounds, seeds, params)
        return
    factory = getattr(item.config, "_tmp_path_factory", None)
    if factory is not None:
        tmp = factory.mktemp("fedcheck")
    else:       # pragma: no cover - the tmp_path plugin disabled
        import tempfile
        from pathlib import Path
        tmp = Path(tempfile.mkdtemp(prefix="fedcheck-"))
    failures = []
    results = []
    for c in claims:
        try:
            results.append(_run_and_judge(c, rounds=rounds, seeds=seeds,
                                          params={k: v for k, v in params.items() if k in c.params},
                                          allow_inconclusive=marker.kwargs.get("allow_inconclusive", True),
                                          save_dir=tmp,       # the runner adds the check's own folder
                                          theorem_file=_file_of(c, files)))
        except pytest.fail.Exception as e:
            failures.append(str(e.msg))
    item.fedcheck_results = results
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


def _run_expecting(item, claims, rounds, seeds, params) -> None:
    """Expectation mode: run every claim and fail, one line per difference, where a verdict is not the declared one."""
    __tracebackhide__ = True
    from fedcheck.api import expectation_report, prepare, run
    results = [run(prepare(c, seeds=seeds, rounds=rounds, params={k: v for k, v in params.items() if k in c.params}))[0]
               for c in claims]
    item.fedcheck_results = results
    differ, text = expectation_report(results)
    if differ:
        pytest.fail(text, pytrace=False)


# ------------------------------------------------------------------------------------------------
# fixtures
@pytest.fixture
def fedcheck_config(request):
    """The :class:`fedcheck.RunConfig` of this test: the suite's rounds and seeds and the marker's params."""
    from fedcheck.core.claim import RunConfig
    marker = _marker_of(request.node)
    kw = marker.kwargs if marker is not None else {}
    return RunConfig(seeds=_setting(request.config, "seeds", kw.get("seeds")),
                     rounds=_setting(request.config, "rounds", kw.get("rounds")),
                     params=_params(kw.get("params")))


@pytest.fixture
def fedcheck_claim(request):
    """The claim named by the test's ``@pytest.mark.fedcheck(...)`` marker (the first one if it names several)."""
    marker = _marker_of(request.node)
    if marker is None or not (marker.args or marker.kwargs.get("theorem_file")):
        pytest.fail("the fedcheck_claim fixture needs @pytest.mark.fedcheck(<claim>) on the test", pytrace=False)
    return _marker_claims(marker)[0][0]


@pytest.fixture(scope="session")
def check_claim(request, tmp_path_factory):
    """``check_claim(claim, instance=None, *, rounds=None, seeds=None, params=None, theorem_file=None,
    allow_inconclusive=True)``: run a claim (an id, alias or Claim) on ``instance`` (or on its own family with
    the suite's seeds) with the suite's rounds; fail the test with the short message and the reproducing
    command when it is refuted; return the result.  Session-scoped, so hypothesis tests may use it."""
    config = request.config

    def check(claim, instance=None, *, rounds=None, seeds=None, params=None, theorem_file=None,
              allow_inconclusive=True):
        __tracebackhide__ = True
        from fedcheck.core.claim import Claim
        files = []
        if not isinstance(claim, Claim):
            from fedcheck.api import resolve
            from fedcheck.core.errors import BadInput
            msg = None
            try:
                found, files = resolve(claim, theorem_file=theorem_file)
            except BadInput as e:
                msg = f"fedcheck: {e}"
            if msg:
                _fail(msg)
            claim = found[0]
        r = _parse(config, "rounds", rounds) if rounds is not None else _setting(config, "rounds")
        s = _parse(config, "seeds", seeds) if seeds is not None else _setting(config, "seeds")
        save = tmp_path_factory.mktemp("fedcheck")
        return _run_and_judge(claim, instance=instance, rounds=r, seeds=s, params=_params(params),
                              allow_inconclusive=allow_inconclusive, save_dir=save,
                              theorem_file=_file_of(claim, files) if files else None)
    return check
