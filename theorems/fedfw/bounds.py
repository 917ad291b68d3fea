"""FedFW's paper record and the bounds that several of its modules evaluate: Theorem 1's schedules and bound (38)
(``claims.py`` and the performance-estimation check ``pep.py``) and Theorem 2's (12), (52), (57) (``claims.py`` and
the network claims ``networks.py``).  Declared once here, imported by each of them."""
import sympy as sp

from fedcheck import Paper
from fedcheck.symbols import D, E_init, G, L, T, Y_norm, lambda_0, n, t

__all__ = ["FEDFW", "eta_t", "lambda_t", "bound_31", "bound_38", "Ghat_52", "delta_57", "bound_12"]

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
