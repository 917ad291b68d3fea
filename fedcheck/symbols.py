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

__all__ = ["t", "T", "n", "m", "p", "L", "D", "G", "lambda_0", "Y_norm", "grad_hat_star", "grad_F_star", "G_sup"]
