"""The named SymPy symbols that theorem declarations use.

A bound or schedule is a SymPy expression in the round counter ``t`` and named
constants.  Each constant symbol's *name* is looked up in the registry of
:mod:`fedcheck.constants` (values computed from the instance and its exact
solution) or in the check's ``params`` (user-set values such as ``lambda_0``).
"""
import sympy as sp

t = sp.Symbol("t", positive=True)
T = sp.Symbol("T", positive=True)
n = sp.Symbol("n", positive=True)
m = sp.Symbol("m", positive=True)
p = sp.Symbol("p", positive=True)
L = sp.Symbol("L", positive=True)
D = sp.Symbol("D", positive=True)
G = sp.Symbol("G", positive=True)
lambda_0 = sp.Symbol("lambda_0", positive=True)
Y_norm = sp.Symbol("Y_norm", positive=True)            # ||Y*||_F
grad_hat_star = sp.Symbol("grad_hat_star", nonnegative=True)  # ||grad F^(X*)||_F
grad_F_star = sp.Symbol("grad_F_star", nonnegative=True)      # ||grad F(x*)||
G_sup = sp.Symbol("G_sup", positive=True)              # sup_{X in D^n} ||grad F^(X)||_F

# Problems with a functional constraint (FedSGM's bounds); supplied by fedcheck.problems.constrained.ConstrainedInstance
D_0 = sp.Symbol("D_0", positive=True)                  # ||w_0 - w*|| (distance of the start to a minimizer)
G_lip = sp.Symbol("G_lip", positive=True)              # Lipschitz constant of every client f_j and g_j
E = sp.Symbol("E", positive=True, integer=True)        # local steps per round
q_u = sp.Symbol("q_u", nonnegative=True)               # uplink compression variance factor

# How the named constants print in formulas (reports); the names above stay the lookup keys.
LATEX_NAMES = {
    Y_norm: r"\|Y^*\|_F",
    grad_hat_star: r"\|\nabla \hat{F}(X^*)\|_F",
    grad_F_star: r"\|\nabla F(x^*)\|",
    G_sup: r"G_{\sup}",
    lambda_0: r"\lambda_0",
}


def latex(expr) -> str:
    """LaTeX of an expression with the constants' display names."""
    expr = sp.sympify(expr)
    names = {s: LATEX_NAMES[s] for s in expr.free_symbols if s in LATEX_NAMES}
    names.update({s: n for s, n in ((s, _by_name.get(s.name)) for s in expr.free_symbols) if n})
    return sp.latex(expr, symbol_names=names)


_by_name = {s.name: n for s, n in LATEX_NAMES.items()}

__all__ = ["latex", "LATEX_NAMES", "t", "T", "n", "m", "p", "L", "D", "G", "lambda_0", "Y_norm", "grad_hat_star", "grad_F_star", "G_sup",
           "D_0", "G_lip", "E", "q_u"]

# Non-smooth losses with a Lipschitz constant (FedMLS); providers in fedcheck.constants
G_max = sp.Symbol("G_max", positive=True)              # max_i Lip(f_i): every client loss is G_max-Lipschitz
G_F = sp.Symbol("G_F", positive=True)                  # Lip of F(X) = (1/n) sum_i f_i(x_i) in ||.||_F
r_0 = sp.Symbol("r_0", positive=True)                  # ||x_0 - x*|| (x* the minimizer closest to x_0)
Delta_F = sp.Symbol("Delta_F", positive=True)          # ||X_0 - X*||_F = sqrt(n) r_0
xstar_norm = sp.Symbol("xstar_norm", nonnegative=True)  # ||x*||
s = sp.Symbol("s", positive=True)                      # local-step counter (schedules indexed by local steps)

__all__ += ["G_max", "G_F", "r_0", "Delta_F", "xstar_norm", "s"]

# federated composite optimization; values from fedcheck.problems.composite instances
M = sp.Symbol("M", positive=True, integer=True)       # number of clients (all participate in the theory)
K = sp.Symbol("K", positive=True, integer=True)       # local steps per round
R = sp.Symbol("R", positive=True, integer=True)       # rounds (the horizon)
B = sp.Symbol("B", positive=True)                     # D_h(w*, w_0), Bregman distance of the start to w*
sigma = sp.Symbol("sigma", positive=True)             # gradient-noise standard deviation in the dual norm
zeta = sp.Symbol("zeta", positive=True)               # heterogeneity sup ||grad F_m - grad F||_*
eta_c = sp.Symbol("eta_c", positive=True)             # client learning rate
eta_s = sp.Symbol("eta_s", positive=True)             # server learning rate
__all__ += ["M", "K", "R", "B", "sigma", "zeta", "eta_c", "eta_s"]

# FedFW (Theorems 2 and 3); values from fedcheck.problems.constants (the participation p_part: theorems/fedfw/symbols.py)
E_init = sp.Symbol("E_init", positive=True)            # (51): (1/n) sum_i f_i(x^1) - (1/n) sum_i min_D f_i
grad_hat_x1 = sp.Symbol("grad_hat_x1", nonnegative=True)  # ||grad F^(X^1) - D^1||_F with D^1 = 0 (Lemma 3's Q)
G_nc = sp.Symbol("G_nc", positive=True)                # sup_{X in D^n} ||grad F^(X)||_F for the non-convex families
__all__ += ["E_init", "grad_hat_x1", "G_nc"]

# strongly convex least squares (client weights 1/n); values from fedcheck.problems.constants, exact from the data
mu = sp.Symbol("mu", positive=True)                    # min_k lambda_min(A_k^T A_k / m): each f_k mu-strongly convex
mu_F = sp.Symbol("mu_F", positive=True)                # lambda_min of F's Hessian
L_F = sp.Symbol("L_F", positive=True)                  # lambda_max of F's Hessian: the smoothness of the average
kappa = sp.Symbol("kappa", positive=True)              # L / mu
Gamma = sp.Symbol("Gamma", nonnegative=True)           # F* - (1/n) sum_k F_k*
F_k_star_max = sp.Symbol("F_k_star_max", nonnegative=True)  # max_k min f_k
__all__ += ["mu", "mu_F", "L_F", "kappa", "Gamma", "F_k_star_max"]
