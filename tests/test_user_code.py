"""One boundary between fedcheck and a user's code.

Every user callable (round function, init, batched algorithm, measurement, case builder, family draw, recorder,
metric, runner, constant provider, a Fact's prove, a ProofStep's establish, a bound's evaluation) fails as the user's
error: exit 2 and one line naming the user's file, line and function, no traceback, nothing written.  A round
function's outputs are checked before anything (a compiled recorder) reads them: no broken shape and no NaN can
yield ``holds``.  SIGINT / SIGTERM pass through as 130 / 143, also while a theorem file is imported and under -j 2.
An exception in fedcheck's own code is still an internal error (exit 4).
"""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from fedcheck.cli import main

ROOT = Path(__file__).resolve().parents[1]

HEAD = '''
import sys
import numpy as np
import sympy as sp
from fedcheck import (Bound, BoundTest, Case, Cases, Claim, Comparison, Fact, Finding, HorizonCase, Horizons,
                      MeasureResult, Measurement, Metric, Paper, Proof, ProofStep, Rounds)
from fedcheck.algorithms import federated
from fedcheck.problems import RandomFamily
from fedcheck.symbols import D, L, T, t
P = Paper(key="mine", title="t", authors="me")
FAM = RandomFamily(loss="least_squares", set="l1", n=3, m=6, p=5)


def gd(X, x, ctx, *, eta):
    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))
    return Y, Y.mean(1)
'''


def _rounds_claim(round_fn="gd", extra="", bound="10 * L * D**2 / t", **kw):
    args = "".join(f", {k}={v}" for k, v in kw.items())
    return f'''
c = Claim(id="mine.c", paper=P, reference="r", statement="s",
          evidence=BoundTest(Rounds(family=FAM, algorithm=federated({round_fn}{extra}), schedules={{"eta": 1 / L}},
                                    seeds=2, rounds=20{args}), bounds=(Bound("b", {bound}),)), expected="holds")
'''


def _file(tmp_path, body: str, name: str = "mine.py") -> Path:
    f = tmp_path / name
    f.write_text(textwrap.dedent(HEAD + body))
    return f


def _line(f: Path, marker: str = "# HERE") -> int:
    return next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if marker in ln)


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _assert_users_error(rc, err, f: Path, line: int | None, what: str, tmp_path: Path):
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err           # one line, no traceback
    assert f"error in your {what}" in err, err
    if line is not None:
        assert f"{f.name}:{line}" in err, err
    assert not (tmp_path / "out").exists()                                  # nothing written


# ---- round functions ---------------------------------------------------------------------------------------------
ROUND_CASES = {
    "raises": ("    raise ValueError('my bug')  # HERE\n", "ValueError: my bug"),
    "returns None": ("    return None\n", "returned None"),
    "returns one array": ("    return X\n", "returned an array"),
    "server point (B, 2) for p = 5": ("    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))\n    return Y, Y.mean(1)[:, :2]\n",
                                      "returned x of shape (2, 2)"),
    "clients (B, 1, p)": ("    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))\n    return Y[:, :1], Y.mean(1)\n",
                          "returned X of shape (2, 1, 5)"),
    "clients transposed": ("    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))\n    return Y.transpose(0, 2, 1), Y.mean(1)\n",
                           "returned X of shape (2, 5, 3)"),
    "server point (p,)": ("    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))\n    return Y, Y.mean((0, 1))\n",
                          "returned x of shape (5,)"),
    "integer arrays": ("    return X.astype(int), x.astype(int)\n", "dtype int64"),
    "objects": ("    return X.astype(object), x\n", "dtype object"),
    "a schedule used as a number": ("    if eta > 0.5:  # HERE\n        pass\n    return X, x\n", "ValueError"),
    "sys.exit(0)": ("    sys.exit(0)  # HERE\n", "calls sys.exit(0)"),
    "sys.exit('bye')": ("    sys.exit('bye')  # HERE\n", "calls sys.exit('bye')"),
}


@pytest.mark.parametrize("case", sorted(ROUND_CASES))
def test_a_broken_round_function_is_the_users_error(tmp_path, capsys, case):
    body, what = ROUND_CASES[case]
    f = _file(tmp_path, "\ndef bad(X, x, ctx, *, eta):\n" + body + _rounds_claim("bad"))
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-q"])
    line = _line(f) if "# HERE" in body else _line(f, "def bad(")
    _assert_users_error(rc, err, f, line, "round function bad", tmp_path)
    assert what in err
    assert "HOLDS" not in out.upper()


@pytest.mark.parametrize("jit", ["1", "0"])
@pytest.mark.parametrize("case", ["server point (B, 2) for p = 5", "clients (B, 1, p)", "returns None"])
def test_broken_shapes_never_hold_with_or_without_the_compiled_recorder(tmp_path, case, jit):
    """A server point (B, 2) for p = 5 once made the compiled least-squares recorder read past its array (holds,
    exit 0); with FEDCHECK_JIT=0 the same file exited 4.  Now: exit 2 both ways, naming the user's line."""
    body, what = ROUND_CASES[case]
    f = _file(tmp_path, "\ndef bad(X, x, ctx, *, eta):\n" + body + _rounds_claim("bad"))
    env = dict(os.environ, FEDCHECK_JIT=jit, FEDCHECK_PROGRESS="0")
    p = subprocess.run([sys.executable, "-m", "fedcheck", "verify", "--theorem-file", str(f), "mine", "--no-report"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 2, p.stdout + p.stderr
    assert what in p.stderr and "mine.py:" in p.stderr and p.stderr.count("\n") == 1
    assert "holds" not in p.stdout.lower()


NAN_CASES = {
    "NaN server point from round 5": "    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))\n    x = Y.mean(1)\n"
                                     "    if ctx.t >= 5:\n        x = x * np.nan\n    return Y, x\n",
    "inf client points, finite server point": "    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))\n"
                                              "    x = Y.mean(1)\n    if ctx.t >= 3:\n        Y = Y + np.inf\n"
                                              "    return Y, x\n",
    "NaN in one instance only": "    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))\n    x = Y.mean(1)\n"
                                "    if ctx.t >= 2:\n        x = x.copy(); x[1] = np.nan\n    return Y, x\n",
}


@pytest.mark.parametrize("case", sorted(NAN_CASES))
def test_a_method_that_breaks_down_is_inconclusive_with_the_reason_never_holds(tmp_path, capsys, case):
    f = _file(tmp_path, "\ndef nan(X, x, ctx, *, eta):\n" + NAN_CASES[case] + _rounds_claim("nan", bound="1e6 + 0 * t"))
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--no-report", "-q", "--json",
                                 str(tmp_path / "r.json")])
    assert rc == 3, out + err                                   # a bound of 1e6 would hold on finite iterates
    import json
    r = json.loads((tmp_path / "r.json").read_text())["checks"][0]
    assert r["verdict"] == "inconclusive" and "not finite" in r["reason"], r["reason"]


def test_a_good_round_function_still_holds(tmp_path, capsys):
    f = _file(tmp_path, _rounds_claim("gd"))
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--no-report", "-q"])
    assert rc == 0, out + err


@pytest.mark.parametrize("body, what", [
    ("def start(batch):\n    raise RuntimeError('no start')  # HERE\n", "init function start"),
    ("def start(batch):  # HERE\n    return np.zeros((batch.B, batch.n, 2)), np.zeros((batch.B, batch.p))\n",
     "init function start"),
])
def test_a_broken_init_is_the_users_error(tmp_path, capsys, body, what):
    f = _file(tmp_path, "\n" + body + _rounds_claim("gd", extra=", init=start"))
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-q"])
    _assert_users_error(rc, err, f, _line(f), what, tmp_path)


def test_under_dask_workers_too(tmp_path, capsys):
    """sys.exit("bye") in a round function under -j 2 once exited 4 after 40 s: now the worker's guard names it."""
    f = _file(tmp_path, "\ndef bad(X, x, ctx, *, eta):\n    sys.exit('bye')  # HERE\n" + _rounds_claim("bad"))
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-q",
                                 "-j", "2"])
    _assert_users_error(rc, err, f, _line(f), "round function bad", tmp_path)


# ---- every other user callable -----------------------------------------------------------------------------------
OTHER = {
    "measurement": ('''
def measure(ctx):
    return 1 / 0  # HERE
c = Claim(id="mine.m", paper=P, reference="r", statement="s", evidence=Measurement(measure))
''', "measurement measure"),
    "measurement returning the wrong thing": ('''
def measure(ctx):  # HERE
    return {"verdict": "holds"}
c = Claim(id="mine.m", paper=P, reference="r", statement="s", evidence=Measurement(measure))
''', "measurement measure"),
    "case builder": ('''
def cases(config, params):
    raise KeyError("no cases")  # HERE
c = Claim(id="mine.k", paper=P, reference="r", statement="s", evidence=BoundTest(Cases(cases), bounds=(Bound("b"),)))
''', "case builder cases"),
    "family draw": ('''
class Fam:
    def draw(self, seed):
        raise IndexError("no data")  # HERE
''' + _rounds_claim("gd").replace("family=FAM", "family=Fam()"), "instance family Fam.draw"),
    "recorder": ('''
def make(batch, schedules):
    def rec(k, X, x):
        return {"F": x.sum(1) / 0.0 + undefined_name}  # HERE
    return rec
''' + _rounds_claim("gd", recorder="make"), "recorder"),
    "metric": ('''
def metric(M, sols):
    return M["nope"]  # HERE
''' + _rounds_claim("gd", metrics='{"b": Metric("m", metric)}'), "metric metric"),
    "batched algorithm": ('''
def algo(batch, *, rounds, grid=None, recorder=None, **kw):
    raise TypeError("my engine")  # HERE
''' + _rounds_claim("gd").replace("algorithm=federated(gd)", "algorithm=algo"), "algorithm algo"),
    "horizon runner": ('''
def runner(insts, sols, schedules, T, settings, seeds):
    raise ValueError("runner bug")  # HERE
c = Claim(id="mine.h", paper=P, reference="r", statement="s",
          evidence=BoundTest(Horizons(runner=runner, cases=(HorizonCase("c", FAM, horizons=(4, 8), seeds=1),),
                                      schedules={"eta": 1 / (L * T)}),
                             bounds=(Bound("b", L * D**2 / T, metric="gap"),)))
''', "runner runner"),
    "proof fact": ('''
def prove():
    return sp.limit(1 / 0, t, sp.oo)  # HERE
c = Claim(id="mine.p", paper=P, reference="r", statement="s", evidence=Proof((Fact("f", prove),)))
''', "proof fact prove"),
    "constant provider": ('''
from fedcheck.problems import register_constant
def kappa(ctx):
    return ctx.nothing_here  # HERE
register_constant("kappa_mine", kappa)
''' + _rounds_claim("gd", bound='sp.Symbol("kappa_mine") * L * D**2 / t'), "constant 'kappa_mine' kappa"),
}


@pytest.mark.parametrize("case", sorted(OTHER))
def test_every_user_callable_is_guarded(tmp_path, capsys, case):
    body, what = OTHER[case]
    f = _file(tmp_path, body)
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-q"])
    _assert_users_error(rc, err, f, _line(f), what, tmp_path)


def test_a_proof_step_that_raises_is_the_users_error(tmp_path, capsys):
    f = _file(tmp_path, '''
def step():
    raise ArithmeticError("step bug")  # HERE
c = Claim(id="mine.s", paper=P, reference="r", statement="s", evidence=Proof((Fact("f", lambda: ("holds", "ok")),)),
          proof_steps=(ProofStep("s1", "x", "symbolic", step),))
''')
    rc, out, err = _run(capsys, ["audit", "--theorem-file", str(f), "mine.s", "--out", str(tmp_path / "out")])
    _assert_users_error(rc, err, f, _line(f), "proof step step", tmp_path)


def test_a_bound_that_cannot_be_evaluated_is_refused_when_the_file_loads(tmp_path, capsys):
    f = _file(tmp_path, _rounds_claim("gd", bound='sp.Function("g")(t) * L'))
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-q"])
    assert rc == 2 and err.count("\n") == 1 and "mine.c: bound 'b'" in err and "cannot be evaluated" in err, err
    assert not (tmp_path / "out").exists()


def test_the_line_is_the_deepest_frame_in_the_users_code(tmp_path, capsys):
    """The user's helper (their own line) is named, not fedcheck's pieces nor numpy's internals."""
    f = _file(tmp_path, '''
def helper(Y):
    return Y @ np.ones((7, 7))  # HERE
def bad(X, x, ctx, *, eta):
    return helper(X), x
''' + _rounds_claim("bad"))
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-q"])
    _assert_users_error(rc, err, f, _line(f), "round function bad", tmp_path)
    assert "ValueError" in err or "matmul" in err


def test_fedcheck_own_code_failing_is_still_an_internal_error(tmp_path, capsys, monkeypatch):
    """A bug in the catalog's own code (here: a family's draw replaced by a fedcheck function that fails on an int)
    is exit 4, never blamed on the user."""
    from fedcheck.core.errors import exit_code
    from fedcheck.problems.instances import RandomFamily
    monkeypatch.setattr(RandomFamily, "draw", lambda self, seed: exit_code(seed))
    from fedcheck.core.usercode import is_own
    assert is_own(exit_code)
    monkeypatch.setattr(RandomFamily, "draw", exit_code)       # a function of fedcheck's own files
    rc, out, err = _run(capsys, ["verify", "theorem1", "--seeds", "1", "--rounds", "10", "--no-report", "-q"])
    assert rc == 4 and "internal error" in err


def test_the_guard_keeps_interrupts_and_reports_the_users_line():
    from fedcheck.core.errors import Terminated, UserCodeError
    from fedcheck.core.usercode import call_user, guard

    def raises_interrupt():
        raise KeyboardInterrupt

    def raises_term():
        raise Terminated()
    with pytest.raises(KeyboardInterrupt):
        call_user(raises_interrupt, role="x")
    with pytest.raises(Terminated):
        guard(raises_term, "x")()
    with pytest.raises(UserCodeError, match=r"error in your thing raises_exit \(.*test_user_code.py:\d+\): calls sys.exit"):
        def raises_exit():
            sys.exit(3)
        call_user(raises_exit, role="thing")
    import pickle
    e = UserCodeError("error in your x f (a.py:1): E", "x", "f", "a.py:1")
    e2 = pickle.loads(pickle.dumps(e))          # travels from a Dask worker unchanged
    assert str(e2) == str(e) and e2.where == "a.py:1" and isinstance(e2, UserCodeError)


def test_the_compiled_recorder_checks_its_shapes():
    """The compiled least-squares recorder refuses a server point of another dimension instead of reading past it."""
    from fedcheck.algorithms.jit import AVAILABLE, least_squares_recorder
    from fedcheck.problems.instances import InstanceBatch, RandomFamily
    if not AVAILABLE:
        pytest.skip("numba not available")
    batch = InstanceBatch([RandomFamily(loss="least_squares", set="l1", n=3, m=6, p=5).draw(s) for s in range(2)])
    rec = least_squares_recorder(batch.loss, batch.set)
    X = np.zeros((2, 3, 5))
    assert set(rec(1, X, np.zeros((2, 5)))) == {"F", "consensus", "infeasibility"}
    for bad_x, bad_X in ((np.zeros((2, 2)), X), (np.zeros((2, 9)), X), (np.zeros((2, 5)), np.zeros((2, 3, 2))),
                         (np.zeros((2, 5), dtype=np.float32), X)):
        with pytest.raises(ValueError, match="compiled least-squares recorder"):
            rec(1, bad_X, bad_x)


# ---- signals pass through ----------------------------------------------------------------------------------------
def _popen(args, tmp_path):
    env = dict(os.environ, FEDCHECK_PROGRESS="0")
    return subprocess.Popen([sys.executable, "-m", "fedcheck", *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_the_theorem_file_is_imported(tmp_path, sig, code):
    """SIGTERM while a theorem file was being imported once exited 2 ("theorem file raised"); now 143 (130)."""
    f = tmp_path / "slow.py"
    f.write_text("import pathlib, time\npathlib.Path('started').write_text('1')\ntime.sleep(60)\n")
    p = _popen(["verify", "--theorem-file", str(f), "mine", "--no-report"], tmp_path)
    t0 = time.time()
    while not (tmp_path / "started").exists() and time.time() - t0 < 120:
        time.sleep(0.1)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert "Traceback" not in err and err.count("\n") == 1


CONTRACTS = {
    "a measurement's series without points": ('''
def measure(ctx):  # HERE
    return MeasureResult([Finding("a", "holds")], series=[{"x": 1}])
c = Claim(id="mine.m", paper=P, reference="r", statement="s", evidence=Measurement(measure))
''', "measurement measure", "series"),
    "a measurement's evidence that is not JSON": ('''
def measure(ctx):  # HERE
    return MeasureResult([Finding("a", "holds")], evidence={"x": object()})
c = Claim(id="mine.m", paper=P, reference="r", statement="s", evidence=Measurement(measure))
''', "measurement measure", "JSON"),
    "a finding with another verdict": ('''
def measure(ctx):  # HERE
    return MeasureResult([Finding("a", "fine")])
c = Claim(id="mine.m", paper=P, reference="r", statement="s", evidence=Measurement(measure))
''', "measurement measure", "verdict"),
    "a case that is not a Case": ('''
def cases(config, params):  # HERE
    return [{"label": "x"}]
c = Claim(id="mine.k", paper=P, reference="r", statement="s", evidence=BoundTest(Cases(cases), bounds=(Bound("b"),)))
''', "case builder cases", "fedcheck Case"),
    "a case without comparisons": ('''
def cases(config, params):  # HERE
    return [Case("x", {"as stated": 0.5})]
c = Claim(id="mine.k", paper=P, reference="r", statement="s", evidence=BoundTest(Cases(cases), bounds=(Bound("b"),)))
''', "case builder cases", "Comparisons"),
    "a recorder returning None": ('''
def make(batch, schedules):
    def rec(k, X, x):  # HERE
        return None
    return rec
''' + _rounds_claim("gd", recorder="make"), "recorder rec", "returned NoneType"),
    "an algorithm returning no Trace": ('''
def algo(batch, *, rounds, grid=None, recorder=None, **kw):  # HERE
    return {"F": 1.0}
''' + _rounds_claim("gd").replace("algorithm=federated(gd)", "algorithm=algo"), "algorithm algo", "Trace"),
    "a fact returning a number": ('''
def prove():  # HERE
    return 1.0
c = Claim(id="mine.p", paper=P, reference="r", statement="s", evidence=Proof((Fact("f", prove),)))
''', "proof fact prove", "(verdict, evidence)"),
}


@pytest.mark.parametrize("case", sorted(CONTRACTS))
def test_what_a_users_code_returns_is_checked(tmp_path, capsys, case):
    body, what, why = CONTRACTS[case]
    f = _file(tmp_path, body)
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-q"])
    _assert_users_error(rc, err, f, _line(f), what, tmp_path)
    assert why in err, err


@pytest.mark.parametrize("decl, what", [
    ('FAM2 = RandomFamily(loss="least_squares", set="l1", n=3, m=6, p=5, radius=0.0)', "radius must be"),
    ('FAM2 = RandomFamily(loss="least_squares", set="l1", n=3, m=6, p=5, noise=float("nan"))', "noise must be"),
    ('FAM2 = RandomFamily(loss="least_squares", set="l1", n=2.5)', "n must be an integer"),
    ('X = Rounds(family=FAM, algorithm=federated(gd), rounds=0)', "rounds"),
    ('X = Rounds(family=FAM, algorithm=federated(gd), seeds=-1)', "seeds"),
    ('X = HorizonCase("c", FAM, horizons=(0, 4))', "horizons must be integers >= 1"),
])
def test_declarations_that_cannot_run_are_refused_when_the_file_loads(tmp_path, capsys, decl, what):
    body = f"\n{decl}  # HERE\n"
    if "HorizonCase" in decl:
        body += ('c = Claim(id="mine.h", paper=P, reference="r", statement="s", evidence=BoundTest(Horizons('
                 'algorithm=federated(gd), cases=(X,), schedules={"eta": 1 / L}), bounds=(Bound("b", L / T, '
                 'metric="gap"),)))\n')
        what = "horizons must be integers"
    elif decl.startswith("X ="):
        body += 'c = Claim(id="mine.r", paper=P, reference="r", statement="s", evidence=BoundTest(X, bounds=(Bound("b", L / t),)))\n'
    f = _file(tmp_path, body)
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-q"])
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert what in err and "mine.py" in err, err
    assert not (tmp_path / "out").exists()


def test_a_family_drawing_something_else_and_a_runner_with_the_wrong_rows(tmp_path, capsys):
    f = _file(tmp_path, '''
class Fam:
    def draw(self, seed):  # HERE
        return {"A": 1}
''' + _rounds_claim("gd").replace("family=FAM", "family=Fam()"))
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-q"])
    _assert_users_error(rc, err, f, _line(f), "instance family Fam.draw", tmp_path)
    g = _file(tmp_path, '''
def runner(insts, sols, schedules, T, settings, seeds):  # HERE
    return {"gap": np.zeros(1)}
c = Claim(id="mine.h", paper=P, reference="r", statement="s",
          evidence=BoundTest(Horizons(runner=runner, cases=(HorizonCase("c", FAM, horizons=(4, 8), seeds=2),),
                                      schedules={"eta": 1 / (L * T)}),
                             bounds=(Bound("b", L * D**2 / T, metric="gap"),)))
''', name="mine2.py")
    rc, out, err = _run(capsys, ["verify", "--theorem-file", str(g), "mine", "--out", str(tmp_path / "out"), "-q"])
    _assert_users_error(rc, err, g, _line(g), "runner runner", tmp_path)


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_dask_workers_run_the_users_code(tmp_path, sig, code):
    f = _file(tmp_path, '''
import pathlib, time
def slow(X, x, ctx, *, eta):
    pathlib.Path("running").write_text("1")
    time.sleep(0.05)
    return gd(X, x, ctx, eta=eta)
''' + _rounds_claim("slow").replace("rounds=20", "rounds=2000"))
    p = _popen(["verify", "--theorem-file", str(f), "mine", "--out", str(tmp_path / "out"), "-j", "2", "-q"],
               tmp_path)
    t0 = time.time()
    while not (tmp_path / "running").exists() and time.time() - t0 < 180 and p.poll() is None:
        time.sleep(0.1)
    assert p.poll() is None, p.communicate()
    p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    assert p.returncode == code, err
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
    assert not (tmp_path / "out").exists()
