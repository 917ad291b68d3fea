"""Faithful formulas: the paper's printed LaTeX of a bound, parsed with SymPy's LaTeX parser and proved
equal to the declared bound under the claim's notation map -- or the exact, explained difference recorded."""
import os
import subprocess
import sys
import re
import textwrap
from pathlib import Path

import pytest
import sympy as sp

from fedcheck.core import latex as X
from fedcheck.core.evidence import Bound, BoundTest
from fedcheck.catalog.registry import default_registry

ROOT = Path(__file__).resolve().parent.parent
a, b, t = sp.symbols("a b t", positive=True)
Y = sp.Symbol("Y_norm", positive=True)


def test_equal_when_sympy_proves_it_and_the_numbers_agree():
    rec = X.check_bound(Bound("B", 2 * a * (b / t + 1 / sp.sqrt(t)), latex=r"2a\left(\frac{b}{t} + \frac{1}{\sqrt{t}}\right)"))
    assert rec["verdict"] == X.EQUAL, rec


def test_a_letter_before_a_parenthesis_is_a_product_and_notation_is_substituted():
    rec = X.check_bound(Bound("B", Y + a * sp.sqrt(a * (b + t)),
                              latex=r"\|\mathbf{Y}^*\| + \lambda_0\sqrt{\lambda_0(b + t)}",
                              latex_symbols={r"\|\mathbf{Y}^*\|": Y, r"\lambda_0": a}))
    assert rec["verdict"] == X.EQUAL, rec


def test_a_different_formula_differs_with_a_witness_and_the_exact_difference():
    rec = X.check_bound(Bound("B", 2 * a / t, latex=r"\frac{2a}{t+1}"))
    assert rec["verdict"] == X.DIFFERS
    assert "printed =" in rec["evidence"] and "declared =" in rec["evidence"]
    assert sp.simplify(sp.sympify(rec["difference"], locals={"a": a, "t": t}) - (2 * a / (t + 1) - 2 * a / t)) == 0


def test_an_unmapped_symbol_or_an_unreadable_formula_is_undecided_never_equal():
    assert X.check_bound(Bound("B", a, latex=r"a z"))["verdict"] == X.UNDECIDED       # z is not declared
    bad = X.check_bound(Bound("B", a, latex=r"\frac{a}{"))
    assert bad["verdict"] == X.UNDECIDED and "cannot read" in bad["evidence"]
    # the parser would silently stop at the first token it cannot read: strict parsing refuses it instead
    assert X.check_bound(Bound("B", 2 * a, latex=r"2a (\mathit{x1} + 1)"))["verdict"] == X.UNDECIDED
    # a notation key that the printed formula does not contain is an error of the declaration
    assert X.check_bound(Bound("B", a, latex="a", latex_symbols={r"\lambda": a}))["verdict"] == X.UNDECIDED


def test_a_difference_sympy_cannot_prove_is_undecided(monkeypatch):
    monkeypatch.setattr(sp, "simplify", lambda e, *k, **kw: e)      # a SymPy that proves nothing
    monkeypatch.setattr(sp, "radsimp", lambda e, *k, **kw: e + sp.Symbol("unproved"))
    rec = X.check_formula(sp.sin(a) ** 2 + sp.cos(a) ** 2, sp.Integer(1))
    assert rec["verdict"] == X.UNDECIDED and "not proved" in rec["evidence"]


def test_a_reading_substitutes_into_the_declared_bound():
    c = sp.Symbol("c", positive=True)
    rec = X.check_bound(Bound("B", a / c, latex=r"\frac{a}{\sqrt{t}}", latex_symbols={c: sp.sqrt(t)}))
    assert rec["verdict"] == X.EQUAL, rec


# ---- every catalog bound with a printed formula --------------------------------------------------------------
def _catalog_bounds():
    out = []
    for cid, c in default_registry().checks.items():
        if isinstance(c.evidence, BoundTest):
            out += [(cid, c, bd) for bd in c.evidence.bounds if bd.latex]
    return out


BOUNDS = _catalog_bounds()


@pytest.mark.parametrize("cid,claim,bound", BOUNDS, ids=[f"{cid}:{bd.name}" for cid, _, bd in BOUNDS])
def test_catalog_bound_matches_its_printed_latex(cid, claim, bound):
    rec = X.check_bound(bound)
    assert rec["verdict"] in (X.EQUAL, X.DIFFERS), f"{cid} {bound.name}: {rec['verdict']}: {rec['evidence']}"
    # a difference passes only with its corrected formula proved equal to the tested bound (a note alone does not),
    # and every printed definition of the notation map is proved equal to its value
    assert rec["check"] == X.PASS, f"{cid} {bound.name}: {rec['check_evidence']}"
    if rec["verdict"] == X.DIFFERS:   # an exact difference must be explained (a typo of the paper, a reading)
        assert bound.latex_note, f"{cid} {bound.name}: differs without a latex_note: {rec['evidence']}"
    # the LaTeX is the paper's, verbatim (the papers sit beside the repository, as in CI)
    paper_file = ROOT.parent / claim.paper.source if claim.paper.source else None
    if paper_file is None or not paper_file.is_file():
        pytest.skip(f"the paper's text is not beside the repository ({paper_file})")
    text = paper_file.read_text(encoding="utf-8")
    # a TeX comment ('%' to the end of the line, its line break extracted as a space) is not part of the formula
    bare = re.sub(r"%\s+", "", text)
    assert bound.latex in text or bound.latex in bare, f"{cid} {bound.name}: the LaTeX is not verbatim in {paper_file.name}"
    for k, d in (bound.latex_definitions or {}).items():      # a printed definition is the paper's, verbatim, too
        assert d in text or d in bare, f"{cid} {bound.name}: the definition of {k!r} is not verbatim in {paper_file.name}"


# ---- a user's claim with latex= ---------------------------------------------------------------------------
USER = textwrap.dedent('''
    import numpy as np, sympy as sp
    from fedcheck import Bound, BoundTest, Claim, Paper
    from fedcheck.core.evidence import Comparison
    from fedcheck.experiments import Case, Cases
    t = sp.Symbol("t", positive=True)
    ME = Paper(key="mine", title="mine", authors="me")

    def cases(config, params):
        return [Case("draw", {"as stated": Comparison(lhs_lo=np.array([0.1, 0.2]), rhs_lo=np.array([1.0, 0.5]))})]

    mine = Claim(id="mine.typed", paper=ME, reference="r", statement="s", expected="holds",
                 evidence=BoundTest(Cases(cases), bounds=(Bound("B", 1 / t, latex=r"\\frac{1}{t+1}"),)))
    ''')


def _verify_user(tmp_path, text, cid):
    """``fedcheck verify`` of a user's claim file: the process (exit 0 asserted) and the claim's JSON record."""
    import json
    f = tmp_path / "mine.py"
    f.write_text(text)
    env = {**os.environ, "FEDCHECK_CACHE": "off", "FEDCHECK_PROGRESS": "0"}
    p = subprocess.run([sys.executable, "-m", "fedcheck", "verify", "--theorem-file", str(f), cid,
                        "--no-report", "-j", "1", "--json", str(tmp_path / "r.json")],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr                     # the claim holds: a warning is not a failure
    return p, json.loads((tmp_path / "r.json").read_text())["checks"][0]


def test_verify_warns_when_a_users_bound_differs_from_its_latex_and_keeps_the_verdict(tmp_path):
    p, r = _verify_user(tmp_path, USER, "mine.typed")
    warn = [ln for ln in p.stdout.splitlines() if ln.startswith("warning: mine.typed")]
    assert len(warn) == 1 and "differs from the printed LaTeX" in warn[0], p.stdout
    rec = r["formula"]["printed"]["B"]
    assert rec["verdict"] == "differs" and rec["latex"] == r"\frac{1}{t+1}"


def test_an_unbraced_script_takes_one_token_as_in_tex():
    # "^2 7^{2/3}" is a square times 7^(2/3); SymPy's parser alone reads the digits "2 7" as 27
    rec = X.check_bound(Bound("B", a ** 2 * 7 ** sp.Rational(2, 3), latex=r"a^2 7^{2/3}"))
    assert rec["verdict"] == X.EQUAL, rec


# ---- the printed-formula check is closed: each hole planted fails ---------------------------------------------
def _catalog_bound(cid, name):
    c = default_registry().checks[cid]
    return next(b for b in c.evidence.bounds if b.name == name)


def test_a_note_does_not_excuse_a_changed_constant():
    import dataclasses
    b = _catalog_bound("fedmls.theorem31", "Theorem 3.1")
    assert "10" in b.latex and b.latex_note
    planted = dataclasses.replace(b, latex=b.latex.replace("10", "12"))       # the note kept
    rec = X.check_bound(planted)
    assert rec["verdict"] == X.DIFFERS and rec["check"] == X.FAIL
    assert "a note alone does not excuse" in rec["check_evidence"]
    # the corrected formula, proved equal to the tested bound, is what closes a difference
    fixed = X.check_bound(dataclasses.replace(planted, latex_corrected=b.latex))
    assert fixed["verdict"] == X.DIFFERS and fixed["check"] == X.PASS and fixed["corrected"]["verdict"] == X.EQUAL
    # a corrected formula that is itself wrong does not
    wrong = X.check_bound(dataclasses.replace(planted, latex_corrected=planted.latex))
    assert wrong["check"] == X.FAIL and "corrected formula is not proved equal" in wrong["check_evidence"]


E2 = r"\min\left\{\frac{1}{4KL},\frac{B^{\frac{1}{2}}M^{\frac{1}{2}}}{K^{\frac{1}{2}}R^{\frac{1}{2}}\sigma}\right\}"


def test_a_mistyped_notation_value_fails_against_the_printed_definition():
    import dataclasses
    b = _catalog_bound("feddualavg.theorem_4_1_tuned", "(E.1) at the step (E.2)")
    eta = b.latex_symbols[r"\eta"]
    assert b.latex_definitions == {r"\eta": E2}                     # the catalog checks (E.2) as the paper prints it
    good = X.check_bound(b)
    assert good["check"] == X.PASS and good["definitions"][r"\eta"]["verdict"] == X.EQUAL
    K, L = (next(s for s in eta.free_symbols if s.name == n) for n in ("K", "L"))
    typo = eta.subs(1 / (4 * K * L), 1 / (2 * K * L))       # (E.2) mistyped alike in the map and in the bound
    planted = dataclasses.replace(b, expr=b.expr.subs(eta, typo), latex_symbols={r"\eta": typo})
    rec = X.check_bound(planted)
    assert rec["verdict"] == X.EQUAL                          # the printed bound alone cannot see it ...
    assert rec["check"] == X.FAIL and rec["definitions"][r"\eta"]["verdict"] == X.DIFFERS     # ... its definition does
    assert "is not the paper's printed definition" in rec["check_evidence"]
    # without a printed definition the value is listed as unchecked, never silently trusted
    bare = dataclasses.replace(planted, latex_definitions=None)
    assert X.check_bound(bare)["unchecked_definitions"] == [r"\eta"]
    assert ("feddualavg.theorem_4_1_tuned", b.name) not in TRUSTED_DEFINITIONS


RECONSTRUCTION = "FedSGM's text (TEI) lost the printed formula: the bound is a reconstruction (latex_reconstructed=)"
#: Paper bounds of the catalog declared without the paper's printed formula, and why that is right.
EXEMPT_FROM_LATEX = {
    **{(cid, name): RECONSTRUCTION for cid in ("fedsgm.theorem1", "fedsgm.theorem2")
       for name in ("objective", "feasibility", "accuracy", "summed certificate")},
    ("fedsgm.theorem1", "A nonempty"): "a statement (the set A is not empty), not a formula; " + RECONSTRUCTION,
    ("fedsgm.theorem2", "A nonempty"): "a statement (the set A is not empty), not a formula; " + RECONSTRUCTION,
    ("fedsgm.per_round", "per-round recursion"): RECONSTRUCTION + "; a proof step",
    ("fedsgm.per_round", "Lemma 3"): RECONSTRUCTION,
    ("fedsgm.lemma5", "drift per step"): RECONSTRUCTION + "; a proof step",
    ("fedsgm.lemma5", "summed drift"): RECONSTRUCTION + "; a proof step",
    ("fedsgm.lemma5", "visited subgradients"): "an assumption checked at the visited points, not a printed bound",
    ("fedfw.theorem2_dnn", "(49)"): "a proof step checked on the run's own steps (expr=None): Lemma 1's Lhat/2 "
                                    "||X^{t+1} - X^t||_F^2, no closed form in the declared symbols",
    ("fedfw.partial_consensus", "consensus step"):
        "not printed: B.2 gives only (44) ('following the same steps in (38) and (39)'); the step is (44)'s G-term "
        "divided by G, and (44) as printed carries latex= in fedfw.partial_convex",
}
UNPRINTED = X.bounds_without_latex(default_registry().checks.values())


@pytest.mark.parametrize("cid,name", UNPRINTED, ids=[f"{c}:{n}" for c, n in UNPRINTED])
def test_every_printed_bound_carries_its_latex(cid, name):
    assert (cid, name) in EXEMPT_FROM_LATEX, f"{cid} {name}: a paper bound without latex= and not exempted"


def test_the_exemption_lists_name_only_bounds_without_latex():
    unprinted = set(UNPRINTED)
    assert set(EXEMPT_FROM_LATEX) <= unprinted, sorted(set(EXEMPT_FROM_LATEX) - unprinted)


def test_a_printed_bound_without_latex_is_found():
    from fedcheck import Claim, Paper
    from fedcheck.experiments import Cases
    c = Claim(id="mine.unprinted", paper=Paper(key="mine", title="t", authors="a"), reference="r", statement="s",
              evidence=BoundTest(Cases(lambda config, params: []), bounds=(Bound("B", a / t),
                                                                             Bound("analysis", a, paper=False))))
    assert X.bounds_without_latex([c]) == [("mine.unprinted", "B")]
    assert ("mine.unprinted", "B") not in EXEMPT_FROM_LATEX
    with pytest.raises(AssertionError, match="a paper bound without latex= and not exempted"):
        test_every_printed_bound_carries_its_latex("mine.unprinted", "B")


#: Notation-map values that are definitions (not a renaming) with no printed definition to check them against
#: (``latex_definitions``), and why the paper prints none: trusted as declared.  A new one is added here on purpose,
#: with its reason, not silently.
TRUSTED_DEFINITIONS = {
    ("fedfw.surrogate_31", "(31)"): (["t"], "an index shift t -> t - 1 (the paper's t bounds X^{t+1}): a reading of "
                                            "the index, not a quantity the paper defines"),
    ("fedfw.consensus_37", "(37)"): (["t"], "the same index shift as (31)"),
    ("feddualavg.theorem_4_1", "(E.1) at eta = c_eta/(4KL)"):
        (["\\eta"], "the check's own step, a fraction c_eta of the largest 1/(4KL) Theorem E.1 allows: a "
                     "parametrization of 'any eta in (0, 1/(4KL)]', not a step the paper prints"),
    ("feddualavg.theorem_4_1_fedmid_osp_stochastic", "(E.1) at eta = c_eta/(4KL)"):
        (["\\eta"], "the same parametrization of 'any eta in (0, 1/(4KL)]'"),
}


def test_notation_values_without_a_printed_definition_are_listed():
    found = {(cid, bd.name): X.unchecked_definitions(bd) for cid, _, bd in BOUNDS if X.unchecked_definitions(bd)}
    new = {k: v for k, v in found.items() if sorted(v) != sorted(TRUSTED_DEFINITIONS.get(k, ([], ""))[0])}
    assert not new, f"notation values trusted without the paper's printed definition (latex_definitions=): {new}"
    stale = sorted(set(TRUSTED_DEFINITIONS) - set(found))
    assert not stale, f"listed as trusted but checked (or gone): {stale}"
    assert all(why for _, why in TRUSTED_DEFINITIONS.values())


def test_the_terminal_warns_of_a_printed_formula_a_note_alone_excuses():
    """A 'differs' whose record's check fails (a note, no corrected formula proved equal) is warned of; one whose
    corrected formula passes is not."""
    from fedcheck.cli.tables import printed_formula_warnings
    rec = {"verdict": "differs", "note": "a typo in the paper", "evidence": "10 vs 12"}
    assert printed_formula_warnings({"id": "x.y", "formula": {"printed": {"(b)": {**rec, "check": "fail"}}}})
    assert not printed_formula_warnings({"id": "x.y", "formula": {"printed": {"(b)": {**rec, "check": "pass"}}}})


def test_a_catalog_bound_stripped_of_its_printed_formula_fails():
    """The plant: FedFW Theorem 2's (12) declared without latex= is found and is not exempted."""
    import dataclasses
    import types
    c = default_registry().checks["fedfw.theorem2"]
    assert ("fedfw.theorem2", "(12)") not in X.bounds_without_latex([c])
    stripped = tuple(dataclasses.replace(b, latex="", latex_symbols=None, latex_definitions=None, latex_note="")
                     if b.name == "(12)" else b for b in c.evidence.bounds)
    planted = types.SimpleNamespace(id=c.id, evidence=dataclasses.replace(c.evidence, bounds=stripped))
    assert X.bounds_without_latex([planted]) == [("fedfw.theorem2", "(12)")]
    with pytest.raises(AssertionError, match="not exempted"):
        test_every_printed_bound_carries_its_latex("fedfw.theorem2", "(12)")


def test_the_43_44_inconsistency_is_an_audit_finding_and_44_survives_it():
    """(43)'s lambda_0 term, 2nD^2 lambda_0/(p sqrt(t + 2/p)), is 1/sqrt(p) times (44)'s: (44) does not follow from (43)
    as printed (refuted on the grid of p < 1), while the recursion (42) itself gives (44)'s term (verified by running
    it, and the induction step proven): the conclusion survives."""
    c = default_registry().checks["fedfw.partial_convex"]
    steps = {s.name: s for s in c.proof_steps}
    bad, good = steps["(43) => (44)"].evaluate(), steps["(42) => (44)'s lambda_0 term"].evaluate()
    assert bad["verdict"] == "refuted" and bad["paper"] and bad["witness"]["p"] < 1
    assert "Following the same steps in (38) and (39)" in bad["source"]["quote"] and "(42)-(44)" in bad["source"]["place"]
    assert "survives" in bad["statement"]
    assert good["verdict"] == "verified on grid" and "induction step: proven" in good["evidence"]
    from theorems.fedfw import steps as FS
    import numpy as np
    r = FS.recursion_42(p=(0.1,), rounds=4000)
    t = np.arange(1, 4001)
    b43, b44 = FS.lambda_terms(0.1, t)
    assert (r <= b44).all() and (r / b44).max() > 0.6           # (44)'s term: met, and not loose by a factor of p
    assert (r / b43).max() < 0.25                                 # (43)'s: loose by 1/sqrt(p) = 3.2
    # and (43) has no term for the initial gap: at p < 1 one linear client started at the wrong vertex breaks it at t = 1
    first = steps["(43) at t = 1"].evaluate()
    assert first["verdict"] == "refuted" and first["witness"]["p"] < 1 and "rate survives" in first["statement"]
    lhs, rhs = FS.initial_gap_43(np.array([0.5, 1.0]), 100.0)
    assert lhs[0] == 100.0 and lhs[1] == 0.0 and lhs[0] > rhs[0]    # (1 - p) * 2g: the non-participant's gap


def test_reconstructed_formulas_are_marked_in_the_declaration():
    """Every exempted reconstruction says what it is rebuilt from (the results, the headline and the reports mark it);
    no other bound is marked."""
    checks = default_registry().checks
    for (cid, name), why in EXEMPT_FROM_LATEX.items():
        b = next(b for b in checks[cid].evidence.bounds if b.name == name)
        assert bool(b.latex_reconstructed) == (RECONSTRUCTION in why), (cid, name)
    marked = {(cid, b.name) for cid, c in checks.items() if isinstance(c.evidence, BoundTest)
              for b in c.evidence.bounds if b.latex_reconstructed}
    assert {k for k, why in EXEMPT_FROM_LATEX.items() if RECONSTRUCTION in why} == marked and len(marked) == 14
    with pytest.raises(ValueError, match="not both"):
        Bound("B", a, latex="a", latex_reconstructed="rebuilt")


RECON_USER = USER.replace("mine.typed", "mine.rebuilt").replace(r'latex=r"\frac{1}{t+1}"',
                                                                 'latex_reconstructed="rebuilt from (7)"')


def test_a_reconstructed_formula_is_marked_in_the_results_headline_and_report(tmp_path):
    assert "latex_reconstructed" in RECON_USER and "mine.rebuilt" in RECON_USER
    p, r = _verify_user(tmp_path, RECON_USER, "mine.rebuilt")
    assert "reconstructed (the paper's text lost the formula): B" in p.stdout, p.stdout
    assert "warning" not in p.stdout                                  # marked, not a mismatch
    rec = r["formula"]["printed"]["B"]
    assert rec["reconstructed"] is True and rec["verdict"] == X.RECONSTRUCTED and "rebuilt from (7)" in rec["evidence"]
    assert r["headline"] == "holds [reconstructed (the paper's text lost the formula): B]"
    assert all(fd["bounds"]["B"]["reconstructed"] for fd in r["readings"].values())
    from fedcheck.report.content import printed_formulas
    card = printed_formulas(r["formula"]["printed"])
    assert card[0]["reconstructed"] and card[0]["verdict"] == "reconstructed (the paper's text lost the formula)"
