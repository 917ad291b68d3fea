"""Proof audits (``fedcheck audit``): the step helpers, Theorem 1's declared steps, the CLI and reports."""
import json
import textwrap

import numpy as np
import pytest
import sympy as sp

from fedcheck.tools import audit as A
from fedcheck.core import verdict as V
from fedcheck.cli import main


@pytest.fixture(scope="module")
def theorem1_steps():
    from theorems.fedfw import theorem1
    return {s["name"]: s for s in A.audit_steps(theorem1)}


def test_theorem1_declares_the_key_steps(theorem1_steps):
    expected = {
        "(29) sign condition": A.PROVEN, "(30) initial term": A.PROVEN, "(30) => (31)": A.PROVEN,
        "(30) => (31) on a grid": A.VERIFIED, "(36) => (37) quadratic": A.PROVEN, "(37) simplifications": A.PROVEN,
        "(38) assembly": A.PROVEN,
        "Lemma 2, statement": A.REFUTED, "Lemma 2, proof line 1": A.VERIFIED, "Lemma 2, proof line 2": A.REFUTED,
        "Lemma 2, proof end": A.REFUTED,
        # (24)-(28) and (33)-(34) as audit steps
        "(24)-(26) at random points": A.VERIFIED, "(25)-(28) algebra": A.PROVEN,
        "(33)-(34) at random points": A.VERIFIED}
    assert {k: s["verdict"] for k, s in theorem1_steps.items()} == expected
    grid = theorem1_steps["(30) => (31) on a grid"]
    assert "t in 1..10000" in grid["grid"] and grid["details"]["points"] == 7 * 7 * 10_000
    assert grid["details"]["max_ratio"] < 1
    w = theorem1_steps["Lemma 2, statement"]["witness"]
    assert w["n"] == 8 and w["lhs"] > w["rhs"]                     # n > 4 identical clients: LD/n is too small
    assert theorem1_steps["Lemma 2, proof line 2"]["witness"]["rhs"] == pytest.approx(0.0, abs=1e-9)
    assert A.audit_verdict(list(theorem1_steps.values())) == V.VIOLATED


def test_audit_cli_table_json_report(tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["audit", "theorem1", "--json", str(tmp_path / "a.json"), "--out", str(out), "--no-report"])
    assert rc == 1                                                  # a step of the paper is refuted
    text = capsys.readouterr().out
    assert "(30) => (31)" in text and "REFUTED" in text and "verified on grid" in text
    doc = json.loads((tmp_path / "a.json").read_text())
    entry = doc["checks"][0]
    assert entry["id"] == "fedfw.theorem1.audit" and entry["verdict"] == V.VIOLATED
    assert len(doc["proof_audits"]["fedfw.theorem1"]) == 14
    assert entry["tables"][0]["title"].startswith("Proof audit") and len(entry["tables"][0]["rows"]) == 14
    assert {s["verdict"] for s in entry["symbolic"]} == {V.HOLDS, V.VIOLATED}
    witness = out / "audit" / "instances" / "fedfw.theorem1" / "fedfw.theorem1-lemma2-statement.npz"
    assert witness.exists()                                          # witnesses are kept also with --no-report
    assert any(s.get("witness", {}).get("file") == str(witness) for s in doc["proof_audits"]["fedfw.theorem1"])
    from fedcheck.problems.instances import load_instance
    assert load_instance(witness).n == 8
    from fedcheck.documents import validate
    validate(doc)
    assert main(["audit", "fedfw.theorem3"]) == 2                   # no proof steps declared
    assert main(["audit", "nosuch"]) == 2


def test_verify_with_audit_keeps_the_bound_verdict(tmp_path, capsys):
    rc = main(["verify", "theorem1", "--seeds", "1", "--rounds", "50", "--with-audit", "--no-report", "-q",
               "--json", str(tmp_path / "v.json")])
    assert rc == 0                                                  # the bound holds; the audit is reported beside
    assert "proof audit: 11/14 steps established" in capsys.readouterr().out
    r = json.loads((tmp_path / "v.json").read_text())["checks"][0]
    assert r["verdict"] == V.HOLDS
    assert any(s["name"].startswith("proof step (30) => (31)") for s in r["symbolic"])
    assert r["evidence"]["proof_audit_verdict"] == V.VIOLATED and r["tables"]


USER = textwrap.dedent('''
    import sympy as sp
    from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
    from fedcheck import algorithms as engine
    from fedcheck.tools import audit as A
    from fedcheck.problems.instances import RandomFamily
    from fedcheck.symbols import D, L, lambda_0, t

    x = sp.Symbol("x", positive=True)
    mine = Claim(
        id="mine.claim", paper=Paper(key="mine", title="mine", authors="me"), reference="conjecture",
        statement="F(xbar^t) - F* <= 2 L D^2",
        evidence=BoundTest(Rounds(family=RandomFamily(n=2, m=3, p=2), algorithm=engine.fedfw,
                                  schedules={"eta": 2 / (t + 1), "lam": lambda_0 * sp.sqrt(t + 1)}, rounds=20),
                           bounds=(Bound("2 L D^2", 2 * L * D**2),)),
        params={"lambda_0": 1.0},
        proof_steps=(A.ProofStep("am-gm", "x + 1/x >= 2", "symbolic",
                                 lambda: A.prove_nonnegative(x + 1 / x - 2, transform=lambda e: sp.factor(sp.together(e)))),
                     A.ProofStep("{STEP}", "undecidable here", "symbolic", lambda: {OUTCOME})))
''')


@pytest.mark.parametrize("step, outcome, code", [
    ("trivial", "A.prove_identity(x, x)", 0),
    ("unknown", "A.StepOutcome(A.INCONCLUSIVE, 'cannot tell')", 3),
    ("broken", "1 / 0", 2),         # a user's step that raises is the user's error: exit 2, its line named
    ("false", "A.prove_nonnegative(x - 2)", 1),
])
def test_audit_exit_codes_on_a_users_file(tmp_path, step, outcome, code):
    f = tmp_path / "mine.py"
    f.write_text(USER.replace("{STEP}", step).replace("{OUTCOME}", outcome))
    assert main(["audit", "--theorem-file", str(f), "mine.claim", "--no-report", "--json", str(tmp_path / "a.json")]) == code
    if code == 2:
        assert not (tmp_path / "a.json").exists()
        return
    steps = json.loads((tmp_path / "a.json").read_text())["proof_audits"]["mine.claim"]
    assert steps[0]["verdict"] == A.PROVEN


def test_symbolic_helpers():
    x, y = sp.symbols("x y", positive=True)
    assert A.prove_identity((x + y)**2, x**2 + 2 * x * y + y**2).verdict == A.PROVEN
    bad = A.prove_identity((x + y)**2, x**2 + y**2)
    assert bad.verdict == A.REFUTED and set(bad.witness) == {"x", "y"}
    assert A.prove_nonnegative(x**2 + y).verdict == A.PROVEN
    neg = A.prove_nonnegative(x - y)
    assert neg.verdict == A.REFUTED and neg.witness["x"] < neg.witness["y"]
    assert A.prove_le(sp.sqrt(x + y), sp.sqrt(x) + sp.sqrt(y)).verdict == A.PROVEN      # by squares
    assert A.prove_equal(sp.sqrt(4 * x**2 * y), 2 * x * sp.sqrt(y)).verdict == A.PROVEN
    both = A.all_of(("a", A.prove_identity(x, x)), ("b", A.prove_nonnegative(x - y)))
    assert both.verdict == A.REFUTED and "(2) b: refuted" in both.evidence


def test_grid_helper_states_its_grid_and_witness():
    ok = A.check_on_grid(lambda a, b: a * b, lambda a, b: (a**2 + b**2) / 2, {"a": np.linspace(-2, 2, 9),
                                                                           "b": np.linspace(-2, 2, 9)}, "AM-GM")
    assert ok.verdict == A.VERIFIED and ok.details["points"] == 81 and "a in" in ok.grid
    bad = A.check_on_grid(lambda a: a**2, lambda a: a, {"a": np.linspace(0, 2, 5)}, "x^2 <= x")
    assert bad.verdict == A.REFUTED and bad.witness == {"a": 2.0}
    nan = A.check_on_grid(lambda a: np.log(a - 1), lambda a: a, {"a": np.array([0.5, 2.0])})
    assert nan.verdict == A.INCONCLUSIVE


def test_instance_inequality_and_step_records(tmp_path):
    from fedcheck.problems.instances import Instance
    from fedcheck.problems.sets import make_set
    from fedcheck.core.symbols import G_sup, grad_hat_star
    inst = Instance(A=np.ones((2, 1, 1)), b=np.array([[1.0], [-1.0]]), loss="least_squares", set=make_set("l2", 0.5, 1))
    out = A.instance_inequality(G_sup, grad_hat_star, lambda: [("pair", inst)], "sup <= grad at x*", save_dir=tmp_path,
                                stem="w")
    assert out.verdict == A.REFUTED and (tmp_path / "w.npz").exists()      # sup over the set > gradient at x* = 0
    ok = A.instance_inequality(grad_hat_star, G_sup, lambda: [("pair", inst)])
    assert ok.verdict == A.VERIFIED and "1 instance" in ok.grid
    with pytest.raises(ValueError):
        A.ProofStep("x", "y", "guess", lambda: ok)
    rec = A.ProofStep("x", "y", "grid", lambda: ok, reference="(1)").evaluate()
    assert rec["verdict"] == A.VERIFIED and rec["grid"] and rec["reference"] == "(1)"
    from fedcheck.core.errors import UserCodeError
    with pytest.raises(UserCodeError, match="returned str, not a StepOutcome"):      # a user's step breaks its contract
        A.ProofStep("x", "y", "symbolic", lambda: "yes").evaluate()


def test_audit_cli_feddualavg_appendix_steps(tmp_path, capsys):
    """FedDualAvg's Lemma E.3 is refuted at sigma = 0 (fixed-point bias), Lemma E.2 verified."""
    rc = main(["audit", "feddualavg.theorem_4_1", "--json", str(tmp_path / "a.json"), "--out", str(tmp_path),
               "--no-report"])
    assert rc == 1
    text = capsys.readouterr().out
    assert "Lemma E.2 per round" in text and "Lemma E.3 uniform in r" in text and "REFUTED" in text
    doc = json.loads((tmp_path / "a.json").read_text())
    steps = {s["name"]: s for s in doc["proof_audits"]["feddualavg.theorem_4_1"]}
    assert steps["Lemma E.3 uniform in r"]["witness"]["w_inf - w*"]
