"""The constants of FedFW's Lemma 3 as printed: C and Q (Appendix D), against the declared C_sto and Q_sto that the
printed (66)-(68) map their C to (tests/test_latex.py checks the bounds themselves)."""
import sympy as sp

from fedcheck.core import latex as X
from fedcheck.core.evidence import Bound
from fedcheck.core.symbols import D, L, grad_hat_x1, lambda_0, n, sigma
from theorems.fedfw.claims import C_sto, Q_sto

C_PRINTED = r"\frac{81}{2}nD^2(L/n + \lambda_0) + 9D\sqrt{Q}"
Q_PRINTED = r"\max\left\{\|\nabla \hat{F}(\mathbf{X}^1) - \mathbf{D}^1\|_F^2 7^{2/3}, 16n\sigma^2 + 81L^2D^2/n\right\}"


def test_printed_C_is_the_declared_C():
    rec = X.check_bound(Bound("C", C_sto, latex=C_PRINTED, latex_symbols={r"\lambda_0": lambda_0, "Q": Q_sto}))
    assert rec["verdict"] == X.EQUAL, rec


def test_printed_Q_is_the_declared_Q_with_D1_zero():
    # D^1 = 0 (FedFW-sto starts its averaged gradients at 0): ||grad F^(X^1) - D^1||_F = ||grad F^(X^1)||_F
    rec = X.check_bound(Bound("Q", Q_sto, latex=Q_PRINTED,
                              latex_symbols={r"\|\nabla \hat{F}(\mathbf{X}^1) - \mathbf{D}^1\|_F": grad_hat_x1,
                                             r"\sigma": sigma}))
    assert rec["verdict"] == X.EQUAL, rec


def test_the_printed_constants_are_verbatim():
    from pathlib import Path
    import pytest
    from theorems.fedfw.claims import FEDFW
    f = Path(__file__).resolve().parent.parent.parent / FEDFW.source
    if not f.is_file():
        pytest.skip("the paper's text is not beside the repository")
    text = f.read_text(encoding="utf-8")
    assert C_PRINTED in text and Q_PRINTED in text
