"""The command line: list, verify, exit codes, bad input, user files, JSON."""
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

import fedcheck.problems.solve as solve_mod
from fedcheck.cli import main, parse_seeds
from fedcheck.problems.instances import RandomFamily, save_instance

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "my_claims.py")
QUICK = ["--rounds", "300", "--seeds", "2", "-q", "--no-report"]


def test_list_shows_theorem1(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "fedfw.theorem1" in out and "theorem1" in out and "O(t^{-1/2})" in out


def test_verify_theorem1_json(tmp_path, capsys):
    path = tmp_path / "r.json"
    rc = main(["verify", "theorem1", *QUICK, "--json", str(path)])
    out = capsys.readouterr().out
    doc = json.loads(path.read_text())
    chk = doc["checks"][0]
    assert rc == {"holds": 0, "violated": 1, "inconclusive": 3}[chk["verdict"]]
    assert "fedfw.theorem1" in out and chk["verdict"] in out
    for key in ("id", "verdict", "claimed_rate", "fitted_rate", "max_ratio", "instances"):
        assert key in chk
    assert chk["claimed_rate"] == -0.5
    inst = chk["instances"][0]
    for key in ("seed", "F_star", "constants", "rounds", "metric", "bound"):
        assert key in inst
    assert set(inst["bound"]) == {"statement", "proof-end", "repair", "sup"}
    assert {"n", "L", "D", "lambda_0", "Y_norm"} <= set(inst["constants"])
    assert len(inst["rounds"]) == len(inst["metric"]) == 301
    prov = doc["provenance"]
    assert prov["seeds"] == [0, 1] and prov["packages"]["cvxpy"] and prov["solver"].startswith("CLARABEL")
    assert inst["solver"]["status"] == "optimal"


def test_unknown_id_suggests(capsys):
    assert main(["verify", "theorm1", *QUICK]) == 2
    err = capsys.readouterr().err
    assert "unknown check 'theorm1'" in err and "theorem1" in err


@pytest.mark.parametrize("args,message", [
    (["--seeds", "x"], "--seeds"),
    (["--seeds", "5-2"], "--seeds"),
    (["--rounds", "0"], "--rounds"),
    (["--param", "lambda_0"], "NAME=VALUE"),
    (["--param", "lambda_0=abc"], "not a number"),
    (["--theorem-file", "/nonexistent/claims.py"], "no such file"),
])
def test_bad_options_exit_2(args, message, capsys):
    assert main(["verify", "theorem1", "-q", "--no-report", *args]) == 2
    assert message in capsys.readouterr().err


def test_usage_error_exit_2(capsys):
    assert main(["verify"]) == 2
    assert main(["frobnicate"]) == 2


def test_malformed_instance_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    np.savez(bad, A=np.ones((2, 3, 4)), b=np.ones((2, 5)), loss=np.array("least_squares"), set=np.array("l1"),
             radius=np.array(1.0))
    assert main(["verify", "theorem1", *QUICK, "--instance", str(bad)]) == 2
    assert "'b' must have shape" in capsys.readouterr().err


def test_user_instance_file(tmp_path):
    inst = RandomFamily(loss="logistic", set="l2", n=3, m=8, p=4).draw(5)
    f = save_instance(inst, tmp_path / "f.npz")
    out = tmp_path / "out.json"
    rc = main(["verify", "theorem1", "--instance", str(f), "--json", str(out), "--rounds", "500", "-q",
               "--no-report"])
    doc = json.loads(out.read_text())
    chk = doc["checks"][0]
    assert rc in (0, 1, 3) and len(chk["instances"]) == 1
    assert chk["instances"][0]["instance"]["source"].startswith("file:")
    assert chk["instances"][0]["instance"]["loss"] == "logistic"


def test_user_theorem_file_refuted_and_confirmed(tmp_path, capsys):
    quiet = tmp_path / "quiet"
    rc = main(["verify", "--theorem-file", EXAMPLE, "my.too_good", *QUICK, "--out", str(quiet)])
    assert rc == 1 and not quiet.exists()          # --no-report writes nothing under --out
    QUICK_REPORT = [a for a in QUICK if a != "--no-report"]
    rc = main(["verify", "--theorem-file", EXAMPLE, "my.too_good", *QUICK_REPORT, "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1 and "VIOLATED" in out
    saved = list((tmp_path / "instances").glob("*/*.npz"))         # instances/<check>/*.npz
    assert saved
    # the saved refuting instance is accepted by --instance and refutes again
    rc2 = main(["verify", "--theorem-file", EXAMPLE, "my.too_good", "--instance", str(saved[0]), *QUICK])
    assert rc2 == 1
    rc3 = main(["verify", "--theorem-file", EXAMPLE, "my.fast_rate", *QUICK])
    assert rc3 in (0, 1)  # the run decides; the verdict is printed either way


def test_inaccurate_solve_is_inconclusive(monkeypatch, tmp_path, capsys):
    real = solve_mod.solve_consensus

    def inaccurate(inst, use_cache=True):
        sol = real(inst, use_cache=False)
        sol.status = "optimal_inaccurate"
        return sol
    monkeypatch.setattr(solve_mod, "solve_consensus", inaccurate)   # the solver theorem1's experiment uses
    out = tmp_path / "r.json"
    assert main(["verify", "theorem1", *QUICK, "--json", str(out)]) == 3
    chk = json.loads(out.read_text())["checks"][0]
    assert chk["verdict"] == "inconclusive" and "optimal_inaccurate" in chk["reason"]


NAN_METHOD = textwrap.dedent('''
    import numpy as np
    import sympy as sp
    from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
    from fedcheck import algorithms as engine
    from fedcheck.problems.instances import RandomFamily
    from fedcheck.symbols import D, L, lambda_0, t

    def nan_fedfw(batch, **kw):        # a method whose run produces a NaN at one recorded round
        tr = engine.fedfw(batch, **kw)
        tr.metrics["F"][5] = np.nan
        return tr

    nan_claim = Claim(id="nan.claim", paper=Paper(key="nan", title="t", authors="a"), reference="r", statement="s",
                      evidence=BoundTest(Rounds(family=RandomFamily(n=3, m=4, p=3), algorithm=nan_fedfw,
                                                schedules={"eta": 2 / (t + 1), "lam": lambda_0 * sp.sqrt(t + 1)},
                                                rounds=50, seeds=2),
                                         bounds=(Bound("loose", 100 * L * D**2),)),
                      params={"lambda_0": 1.0})
''')


def test_nan_is_inconclusive(tmp_path):
    f = tmp_path / "nan.py"
    f.write_text(NAN_METHOD)
    out = tmp_path / "r.json"
    rc = main(["verify", "--theorem-file", str(f), "nan.claim", *QUICK, "--json", str(out)])
    chk = json.loads(out.read_text())["checks"][0]
    assert rc == 3 and chk["verdict"] == "inconclusive"


def test_parse_seeds():
    assert parse_seeds("3") == [0, 1, 2]
    assert parse_seeds("3,5,9") == [3, 5, 9]
    assert parse_seeds("10-12,2") == [10, 11, 12, 2]


def test_paper_name_runs_all_its_checks():
    from fedcheck.catalog.registry import default_registry
    reg = default_registry()
    ids = [c.id for c in reg.resolve(["fedfw"])]
    assert "fedfw.theorem1" in ids and all(i.startswith("fedfw.") for i in ids)
    assert reg.resolve(["theorem1"])[0].id == "fedfw.theorem1"
