"""FedFW's paper record and the bounds that several of its modules evaluate: Theorem 1's schedules and bound (38)
(``claims.py`` and the performance-estimation check ``pep.py``) and Theorem 2's (12), (52), (57) (``claims.py`` and
the network claims ``networks.py``).  Declared once here, imported by each of them."""
import sympy as sp

from fedcheck import Bound, Paper
from fedcheck.symbols import D, E_init, G, L, T, Y_norm, lambda_0, n, t

__all__ = ["FEDFW", "eta_t", "lambda_t", "bound_31", "bound_38", "Ghat_52", "delta_57", "bound_12", "LATEX_52", "LATEX_57",
           "PRINTED_12", "PRINTED_52", "PRINTED_57", "GAP_62", "DIST_62", "theorem2_bounds"]

FEDFW = Paper(
    key="fedfw",
    title="Federated Frank-Wolfe Algorithm",
    authors="A. Dadras, S. Banerjee, K. Prakhya, A. Yurtsever",
    venue="ECML PKDD 2024",
    source="shared/papers/fedfw-federated-frank-wolfe.md",
)

# ---- Theorem 1 (convex): schedules and the explicit bound (38) --------------------------------
eta_t = 2 / (t + 1)
lambda_t = lambda_0 * sp.sqrt(t + 1)
# (31)/(35) at the iterate t (the paper's round t - 1): F^_{t-1}(X^t) - F^(X*) <= bound_31
bound_31 = 2 * n * D**2 * ((L / n) / t + lambda_0 / sp.sqrt(t))
bound_38 = (2 * n * D**2 * ((L / n) / t + lambda_0 / sp.sqrt(t))
            + G * 2 / (lambda_0 * sp.sqrt(t)) * (Y_norm + D * sp.sqrt(lambda_0 * (L / sp.sqrt(t) + n * lambda_0))))

# ---- Theorem 2 (non-convex, fixed horizon): (12) through (52), (57) -------------------------------
Ghat_52 = (E_init + n * D**2 * lambda_0 / 2) * T ** sp.Rational(-1, 3) + L * D**2 / 2 * T ** sp.Rational(-2, 3)
delta_57 = G / (lambda_0 * T ** sp.Rational(1, 3)) + sp.sqrt((E_init / lambda_0 + n * D**2 / 2) * T ** sp.Rational(-2, 3)
                                                             + L * D**2 / (2 * lambda_0) / T)
bound_12 = Ghat_52 + (G + L * D) * delta_57


# the paper's printed formulas of Theorem 2 (verbatim from the paper's .md; fedcheck.core.latex proves them equal to
# the declared ones): (52) and (57), and (12) as (62) -- (12) itself prints only O(T^{-1/3}); (62) bounds gap(xbar^t~)
# by gap^(X^t~) + (G + LD) dist(X^t~, C), and the proof closes with (52) and (57) for those two: the notation map's
# values are checked against (52) and (57) as printed
LATEX_52 = r"\left(\mathcal{E} + \frac{nD^{2} \lambda_{0}}{2}\right) \frac{1}{T^{\frac{1}{3}}} + \frac{LD^{2}}{2} \frac{1}{T^{\frac{2}{3}}}"
LATEX_57 = (r"\frac{G}{\lambda_0 T^{\frac{1}{3}}} + \sqrt{\left(\left(\frac{\mathcal{E}}{\lambda_0} + \frac{nD^2}{2}\right) "
            r"\frac{1}{T^{\frac{2}{3}}} + \frac{LD^2}{2\lambda_0} \frac{1}{T}\right)}")
LATEX_62 = r"g\hat{a}p(\mathbf{X}^{\tilde{t}}) + (G + LD)\operatorname{dist}(\mathbf{X}^{\tilde{t}}, C)"
GAP_62, DIST_62 = r"g\hat{a}p(\mathbf{X}^{\tilde{t}})", r"\operatorname{dist}(\mathbf{X}^{\tilde{t}}, C)"
PRINTED_52 = {"latex": LATEX_52, "latex_symbols": {r"\mathcal{E}": E_init, r"\lambda_{0}": lambda_0}}
PRINTED_57 = {"latex": LATEX_57, "latex_symbols": {r"\mathcal{E}": E_init, r"\lambda_0": lambda_0}}
PRINTED_12 = {"latex": LATEX_62,
              "latex_symbols": {GAP_62: Ghat_52, DIST_62: delta_57, r"\mathcal{E}": E_init,
                                r"\lambda_{0}": lambda_0, r"\lambda_0": lambda_0},
              "latex_definitions": {GAP_62: LATEX_52, DIST_62: LATEX_57},
              "latex_note": "(12) prints only O(T^{-1/3}); the printed formula is (62), with gap^(X^t~) and dist(X^t~, C) "
                            "bounded by (52) and (57) as the proof's last line says"}


def theorem2_bounds(d12: str, d52: str, d57: str) -> tuple:
    """Theorem 2's three bounds, each with the paper's printed formula: ``(12)`` on ``min_gap``, ``(52)`` on
    ``avg_gap_hat``, ``(57)`` on ``dist_tilde`` (the descriptions say how a claim measures them)."""
    return (Bound("(12)", bound_12, metric="min_gap", description=d12, **PRINTED_12),
            Bound("(52)", Ghat_52, metric="avg_gap_hat", description=d52, **PRINTED_52),
            Bound("(57)", delta_57, metric="dist_tilde", description=d57, **PRINTED_57))
