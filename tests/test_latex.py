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
    if rec["verdict"] == X.DIFFERS:   # an exact difference must be explained (a typo of the paper, a reading)
        assert bound.latex_note, f"{cid} {bound.name}: differs without a latex_note: {rec['evidence']}"
    # the LaTeX is the paper's, verbatim (the papers sit beside the repository, as in CI)
    paper_file = ROOT.parent / claim.paper.source if claim.paper.source else None
    if paper_file is None or not paper_file.is_file():
        pytest.skip(f"the paper's text is not beside the repository ({paper_file})")
    text = paper_file.read_text(encoding="utf-8")
    # a TeX comment ('%' to the end of the line, its line break extracted as a space) is not part of the formula
    assert bound.latex in text or bound.latex in re.sub(r"%\s+", "", text), \
        f"{cid} {bound.name}: the LaTeX is not verbatim in {paper_file.name}"


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


def test_verify_warns_when_a_users_bound_differs_from_its_latex_and_keeps_the_verdict(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text(USER)
    env = {**os.environ, "FEDCHECK_CACHE": "off", "FEDCHECK_PROGRESS": "0"}
    p = subprocess.run([sys.executable, "-m", "fedcheck", "verify", "--theorem-file", str(f), "mine.typed",
                        "--no-report", "-j", "1", "--json", str(tmp_path / "r.json")],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr                     # the claim holds: a warning is not a failure
    warn = [ln for ln in p.stdout.splitlines() if ln.startswith("warning: mine.typed")]
    assert len(warn) == 1 and "differs from the printed LaTeX" in warn[0], p.stdout
    import json
    rec = json.loads((tmp_path / "r.json").read_text())["checks"][0]["formula"]["printed"]["B"]
    assert rec["verdict"] == "differs" and rec["latex"] == r"\frac{1}{t+1}"


def test_an_unbraced_script_takes_one_token_as_in_tex():
    # "^2 7^{2/3}" is a square times 7^(2/3); SymPy's parser alone reads the digits "2 7" as 27
    rec = X.check_bound(Bound("B", a ** 2 * 7 ** sp.Rational(2, 3), latex=r"a^2 7^{2/3}"))
    assert rec["verdict"] == X.EQUAL, rec
