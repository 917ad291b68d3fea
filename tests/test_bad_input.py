"""Bad input and faults: exit 2 with one line naming the problem, no traceback, nothing written.

Every case runs the command line in-process with ``--out`` in an empty temporary folder and checks the exit
code, that stderr is one line mentioning what is wrong, and that the output folder stayed empty.
"""
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from fedcheck.cli import main
from fedcheck.problems.instances import RandomFamily, save_instance

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "fedprox_claims.py")


def _instance(tmp_path, **over):
    inst = RandomFamily(loss="least_squares", set="l1", n=3, m=5, p=4).draw(0)
    arrays = {"A": inst.A, "b": inst.b, "loss": "least_squares", "set": "l1", "radius": 1.0}
    arrays.update(over)
    path = tmp_path / "inst.npz"
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return str(path)


def _user_file(tmp_path, body):
    f = tmp_path / "user.py"
    f.write_text(textwrap.dedent(body))
    return str(f)


CLAIM = '''
import sympy as sp
from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
from fedcheck import algorithms as engine
from fedcheck.problems.instances import RandomFamily
from fedcheck.symbols import D, L, lambda_0, t
c = Claim(id="{id}", aliases={aliases}, paper=Paper(key="{key}", title="x", authors="y"), reference="r", statement="s",
          evidence=BoundTest(Rounds(family=RandomFamily(n=2, m=3, p=2), algorithm=engine.fedfw,
                                    schedules={{"eta": 2 / (t + 1), "lam": lambda_0 * sp.sqrt(t + 1)}}, rounds=10),
                             bounds=(Bound("b", 10 * L * D**2),)), params={{"lambda_0": 1.0}})
'''

CASES = [
    # (name, argv builder, expected substring of the one-line message)
    ("unknown id", lambda tp: ["verify", "no_such_check"], "unknown check"),
    ("typo in --param", lambda tp: ["verify", "theorem1", "--param", "lambda0=0.5"], "did you mean lambda_0"),
    ("--param nan", lambda tp: ["verify", "theorem1", "--param", "lambda_0=nan"], "finite number"),
    ("--param inf", lambda tp: ["verify", "theorem1", "--param", "lambda_0=inf"], "finite number"),
    ("--param 0", lambda tp: ["verify", "theorem1", "--param", "lambda_0=0"], "must be > 0"),
    ("--param -1", lambda tp: ["verify", "theorem1", "--param", "lambda_0=-1"], "must be > 0"),
    ("--param text", lambda tp: ["verify", "theorem1", "--param", "lambda_0=abc"], "not a number"),
    ("--param no =", lambda tp: ["verify", "theorem1", "--param", "lambda_0"], "NAME=VALUE"),
    ("--seeds empty", lambda tp: ["verify", "theorem1", "--seeds", ""], "--seeds"),
    ("--seeds negative", lambda tp: ["verify", "theorem1", "--seeds", "-3"], "--seeds"),
    ("--rounds 0", lambda tp: ["verify", "theorem1", "--rounds", "0"], "--rounds"),
    ("--rounds huge", lambda tp: ["verify", "theorem1", "--rounds", "10000000000"], "--rounds"),
    ("--instance missing", lambda tp: ["verify", "theorem1", "--instance", str(tp / "nope.npz")], "nope.npz"),
    ("--instance not zip", lambda tp: ["verify", "theorem1", "--instance", _write(tp, "x.npz", b"hello")], "x.npz"),
    ("--instance hinge loss", lambda tp: ["verify", "theorem1", "--instance", _instance(tp, loss="hinge")], "hinge"),
    ("--instance sigmoid loss", lambda tp: ["verify", "theorem1", "--instance", _instance(tp, loss="sigmoid")], "sigmoid"),
    ("--instance signed_quadratic", lambda tp: ["verify", "theorem1", "--instance",
                                                _instance(tp, loss="signed_quadratic")], "signed_quadratic"),
    ("--instance object loss", lambda tp: ["verify", "theorem1", "--instance",
                                           _instance(tp, loss=np.array(["least_squares"], dtype=object))], "inst.npz"),
    ("--instance NaN", lambda tp: ["verify", "theorem1", "--instance",
                                   _instance(tp, A=np.full((3, 5, 4), np.nan))], "inst.npz"),
    ("--instance on a proof", lambda tp: ["verify", "fedfw.condition29", "--instance", _instance(tp)],
     "does not run on instances"),
    ("--instance a measurement cannot run", lambda tp: ["verify", "fedfw.privacy", "--instance", _instance(tp)],
     "this instance is not of it"),
    ("--instance outside the domain", lambda tp: ["verify", "--theorem-file", EXAMPLE, "mine.fedprox_gd_rate",
                                                  "--instance", _instance(tp)], "outside the claim's domain"),
    ("--out is a file", lambda tp: ["verify", "theorem1", "--out", _write(tp, "afile", b"x")], "not a directory"),
    ("--json is a directory", lambda tp: ["verify", "theorem1", "--json", str(tp)], "is a directory"),
    ("--jobs negative", lambda tp: ["verify", "theorem1", "--jobs", "-2"], "--jobs"),
    ("theorem file missing", lambda tp: ["verify", "--theorem-file", str(tp / "none.py"), "x"], "no such file"),
    ("user id shadows a built-in alias", lambda tp: ["verify", "--theorem-file", _user_file(
        tp, CLAIM.format(id="mine.x", aliases='("theorem1",)', key="mine")), "theorem1"], "theorem1"),
    ("user paper key of a built-in paper", lambda tp: ["verify", "--theorem-file", _user_file(
        tp, CLAIM.format(id="fedfw.mine", aliases="()", key="fedfw")), "fedfw.mine"], "paper key 'fedfw'"),
    ("user bound as a string", lambda tp: ["verify", "--theorem-file", _user_file(
        tp, CLAIM.format(id="mine.x", aliases="()", key="mine").replace("10 * L * D**2", "'L D'")), "mine.x"],
     "SymPy expression"),
    ("user unknown keyword", lambda tp: ["verify", "--theorem-file", _user_file(
        tp, CLAIM.format(id="mine.x", aliases="()", key="mine").replace("rounds=10", "roundz=10")), "mine.x"],
     "roundz"),
    ("report of a missing file", lambda tp: ["report", str(tp / "none.json"), "--out", str(tp / "o")], "none.json"),
    ("search of a proof", lambda tp: ["search", "fedfw.condition29", "--out", str(tp / "o")], "not a bound test"),
]


def _write(tp, name, data: bytes) -> str:
    p = tp / name
    p.write_bytes(data)
    return str(p)


@pytest.mark.parametrize("name, argv, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, name, argv, message):
    out = tmp_path / "out"
    args = argv(tmp_path)
    if "--out" not in args and args[0] in ("verify", "search"):
        args += ["--out", str(out)]
    code = main(args + ["-q"] if args[0] != "report" else args)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, (name, err)
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert message in err[0], err[0]
    assert not out.exists() or not any(out.iterdir())


def test_closed_pipe_is_not_an_error():
    p = subprocess.run(f"{sys.executable} -m fedcheck list | head -1", shell=True, capture_output=True, text=True)
    assert p.returncode == 0 and "Traceback" not in p.stderr and p.stdout.startswith("id")


SLOW = """
import time
import sympy as sp
from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
from fedcheck import algorithms as engine
from fedcheck.problems.instances import RandomFamily
from fedcheck.symbols import D, L, lambda_0, t

def slow_fedfw(batch, **kw):
    time.sleep(600)
    return engine.fedfw(batch, **kw)

slow = Claim(id="slow.claim", paper=Paper(key="slow", title="t", authors="a"), reference="r", statement="s",
             evidence=BoundTest(Rounds(family=RandomFamily(n=2, m=3, p=2), algorithm=slow_fedfw,
                                       schedules={"eta": 2 / (t + 1), "lam": lambda_0 * sp.sqrt(t + 1)}, rounds=10),
                                bounds=(Bound("b", 10 * L * D**2),)), params={"lambda_0": 1.0})
"""


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signals_stop_cleanly_and_leave_nothing(tmp_path, sig, code):
    """lemma2 refutes and saves its instances (into the run's staging folder); the slow claim is then
    interrupted mid-computation: nothing of the run may appear under --out."""
    out = tmp_path / "out"
    slow = tmp_path / "slow.py"
    slow.write_text(SLOW)
    proc = subprocess.Popen([sys.executable, "-m", "fedcheck", "verify", "--theorem-file", str(slow), "fedfw.lemma2",
                             "slow.claim", "--out", str(out), "--json", str(tmp_path / "r.json"), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))   # even if the runner ignores it
    import time
    time.sleep(10)          # imports, lemma2 (about 1 s) and into the slow claim
    assert proc.poll() is None
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert ("interrupted" if sig == signal.SIGINT else "terminated") in err
    assert not out.exists() or not any(out.rglob("*"))
    assert not (tmp_path / "r.json").exists()


def test_written_files_have_the_reports_mode(tmp_path):
    out = tmp_path / "o"
    js = tmp_path / "r.json"
    assert main(["verify", "--theorem-file", str(ROOT / "examples" / "my_claims.py"), "my.too_good", "--rounds", "200",
                 "--seeds", "1", "-q", "--out", str(out), "--json", str(js)]) == 1
    modes = {p.name: p.stat().st_mode & 0o777 for p in [js, *out.rglob("*")] if p.is_file()}
    assert len(set(modes.values())) == 1, modes


SWALLOWING = '''
import time
from fedcheck import Claim, Measurement, MeasureResult, Paper
from fedcheck.core.evidence import Finding
P = Paper(key="swallow", title="A claim whose code catches every Exception", authors="test")

def measure(ctx):
    for _ in range(600):
        try:
            time.sleep(0.1)
        except Exception:        # a broad guard in user or library code must not swallow SIGTERM
            pass
    return MeasureResult(findings=[Finding("x", "holds", "done")])

claim = Claim(id="swallow.claim", paper=P, reference="-", statement="-", evidence=Measurement(measure),
              expected="holds")
CLAIMS = (claim,)
'''


def test_sigterm_is_not_swallowed_by_a_broad_except(tmp_path):
    f = tmp_path / "swallow.py"
    f.write_text(SWALLOWING)
    proc = subprocess.Popen([sys.executable, "-m", "fedcheck", "verify", "--theorem-file", str(f), "swallow.claim",
                             "--no-report", "-q", "--json", str(tmp_path / "r.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    import time
    time.sleep(8)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "terminated" in err and "Traceback" not in err
    assert not (tmp_path / "r.json").exists()
