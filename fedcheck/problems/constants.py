"""Named instance constants that bounds refer to.

A provider is a function ``(ctx) -> Value`` registered under the name of the
SymPy symbol it supplies; ``ctx`` is an :class:`InstanceContext` (the instance,
its batched loss restricted to it, and its exact solution).  Users register their
own with ``@constant("name")``.  A value carries ``exact`` (False when only a
certified upper bound is available) and a note saying how it was obtained.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.optimize import brentq

from fedcheck.problems.instances import Instance
from fedcheck.problems.losses import LeastSquares, Loss
from fedcheck.problems.sets import Box, L1Ball, L2Ball, Simplex
from fedcheck.problems.solve import Solution

__all__ = ["Value", "InstanceContext", "constant", "PROVIDERS", "resolve", "sup_grad_norm_sq"]


@dataclass
class Value:
    value: float
    exact: bool = True
    note: str = ""


@dataclass
class InstanceContext:
    instance: Instance
    loss: Loss
    solution: Solution
    params: dict


PROVIDERS: dict[str, Callable[[InstanceContext], Value]] = {}


def constant(name: str):
    """Register a provider for the constant symbol called ``name``."""
    def deco(fn):
        PROVIDERS[name] = fn
        return fn
    return deco


def resolve(name: str, ctx: InstanceContext) -> Value:
    if name in ctx.params:
        return Value(float(ctx.params[name]), True, "parameter")
    if name not in PROVIDERS:
        raise KeyError(f"no provider for constant {name!r}; known: {sorted(PROVIDERS)}")
    v = PROVIDERS[name](ctx)
    return v if isinstance(v, Value) else Value(float(v))


@constant("n")
def _n(ctx):
    return Value(ctx.instance.n, True, "number of clients")


@constant("m")
def _m(ctx):
    return Value(ctx.instance.m, True, "samples per client")


@constant("p")
def _p(ctx):
    return Value(ctx.instance.p, True, "dimension")


@constant("L")
def _L(ctx):
    return Value(float(np.max(ctx.loss.smoothness())), True, "max_i of the exact smoothness constant L_i")


@constant("D")
def _D(ctx):
    return Value(float(ctx.instance.set.diameter), True, f"exact diameter of the {ctx.instance.set.name} set")


@constant("Y_norm")
def _Y(ctx):
    return Value(ctx.solution.Y_norm, True,
                 f"||Y*||_F of the solver's consensus duals (dual residual {ctx.solution.dual_residual:.1e}); "
                 "any dual solution is valid in the proof")


def _client_grads_at_star(ctx):
    x = ctx.solution.x_star
    return ctx.loss.grad(np.broadcast_to(x, (ctx.instance.n, ctx.instance.p)))


@constant("grad_hat_star")
def _ghat(ctx):
    g = _client_grads_at_star(ctx)
    return Value(float(np.linalg.norm(g) / ctx.instance.n), True, "(1/n)(sum_i ||grad f_i(x*)||^2)^(1/2)")


@constant("grad_F_star")
def _gF(ctx):
    g = _client_grads_at_star(ctx)
    return Value(float(np.linalg.norm(g.mean(0))), True, "||grad F(x*)||")


# ----------------------------------------------------------------------------------------------
# sup over D of ||grad f_i||^2: exact where the maximum of a convex function over the set is known
def _trs_max(M: np.ndarray, c: np.ndarray, r: float) -> float:
    """max_{||x|| <= r} ||M x - c||^2 for symmetric PSD M (exact; secular equation)."""
    lam, Q = np.linalg.eigh(M)
    cp_ = Q.T @ c
    l2 = lam ** 2
    top = l2.max()
    if top <= 0:
        return float(c @ c)
    w = (lam * cp_) ** 2

    def phi(mu):
        return np.sum(w / (l2 - mu) ** 2) - r ** 2

    on_top = np.isclose(l2, top, rtol=1e-12, atol=0)
    rest = ~on_top
    # hard case: the secular function stays below r^2 as mu -> top
    if np.all(w[on_top] <= 1e-300):
        y = np.zeros_like(cp_)
        y[rest] = lam[rest] * cp_[rest] / (l2[rest] - top)
        rem = r ** 2 - y @ y
        if rem >= 0:
            y[np.argmax(on_top)] = np.sqrt(rem)
            return float(np.sum((lam * y - cp_) ** 2))
    lo = top * (1 + 1e-15) + 1e-300
    hi = top + np.sqrt(w.sum()) / r + 1.0
    while phi(hi) > 0:
        hi = top + 2 * (hi - top)
    while phi(lo) < 0 and lo > top:
        lo = top + (lo - top) / 10
        if lo - top < 1e-300:
            break
    mu = brentq(phi, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    y = lam * cp_ / (l2 - mu)
    return float(np.sum((lam * y - cp_) ** 2))


MAX_BOX_DIM = 16


def sup_grad_norm_sq(loss: Loss, S) -> tuple[np.ndarray, bool, str]:
    """Per client ``sup_{x in D} ||grad f_i(x)||^2`` for one (unbatched) instance.

    Exact for least squares on the l1 ball and simplex (vertex enumeration), the box
    up to dimension 16 (2^p vertices), and the l2 ball (trust-region secular
    equation).  Otherwise a certified upper bound, flagged ``exact=False``."""
    n, p = loss.n, loss.p
    r = float(S.radius)
    if isinstance(loss, LeastSquares):
        H, c = loss.H, loss.c
        if isinstance(S, (L1Ball, Simplex)):
            V = r * np.eye(p)
            if isinstance(S, L1Ball):
                V = np.concatenate([V, -V])
            vals = np.einsum("ipq,vq->ivp", H, V) - c[:, None, :]
            return (vals ** 2).sum(-1).max(-1), True, "vertex enumeration"
        if isinstance(S, Box) and p <= MAX_BOX_DIM:
            V = r * (1 - 2 * ((np.arange(2 ** p)[:, None] >> np.arange(p)) & 1))
            out = np.empty(n)
            for i in range(n):
                out[i] = ((V @ H[i].T - c[i]) ** 2).sum(-1).max()
            return out, True, f"enumeration of the 2^{p} box vertices"
        if isinstance(S, L2Ball):
            return np.array([_trs_max(H[i], c[i], r) for i in range(n)]), True, "trust-region secular equation"
        if isinstance(S, Box):  # max ||x|| over the box is r sqrt(p)
            opn = np.linalg.norm(H, ord=2, axis=(-2, -1))
            ub = (opn * r * np.sqrt(p) + np.linalg.norm(c, axis=-1)) ** 2
            return ub, False, "upper bound (||H_i|| r sqrt(p) + ||c_i||)^2"
        return np.full(n, np.inf), False, f"no bound implemented for the {S.name} set"
    A = loss.A
    row = np.linalg.norm(A, axis=-1).mean(-1)
    opn = np.linalg.norm(A, ord=2, axis=(-2, -1)) / np.sqrt(loss.m)
    return np.minimum(row, opn) ** 2, False, "upper bound min((1/m) sum_j ||a_ij||, ||A_i|| / sqrt(m)) (sigmoid weights <= 1)"


@constant("G_sup")
def _Gsup(ctx):
    s, exact, how = sup_grad_norm_sq(ctx.loss, ctx.instance.set)
    val = float(np.sqrt(s.sum()) / ctx.instance.n)
    return Value(val, exact, ("exact " if exact else "") + "sup_{X in D^n} ||grad F^(X)||_F = (1/n)(sum_i sup_x ||grad f_i||^2)^(1/2), " + how)


# ----------------------------------------------------------------------------------------------
# Lipschitz losses (non-smooth; ``loss.lipschitz()`` -> (per-client constants, exact, how)) and
# distances to the minimizer, for bounds such as MOPES/FedMLS (Theorem 3.1, Corollary 3.2).
def _client_lipschitz(ctx):
    loss = ctx.loss if ctx.loss is not None else ctx.instance.make_loss()
    lip = getattr(loss, "lipschitz", None)
    if lip is None:
        raise KeyError(f"the {loss.name!r} loss has no Lipschitz constant (it is not a Lipschitz loss)")
    return lip()


@constant("G_max")
def _G_max(ctx):
    vals, exact, how = _client_lipschitz(ctx)
    return Value(float(np.max(vals)), bool(exact), "max_i Lip(f_i); " + how)


@constant("G_F")
def _G_F(ctx):
    vals, exact, how = _client_lipschitz(ctx)
    return Value(float(np.linalg.norm(vals) / ctx.instance.n), bool(exact),
                 "Lipschitz constant of F(X) = (1/n) sum_i f_i(x_i) in the Frobenius norm, "
                 "(1/n)(sum_i Lip(f_i)^2)^(1/2); " + how)


def _start(ctx) -> np.ndarray:
    x0 = ctx.instance.x0
    return np.zeros(ctx.instance.p) if x0 is None else np.asarray(x0, dtype=float)


@constant("r_0")
def _r_0(ctx):
    return Value(float(np.linalg.norm(_start(ctx) - ctx.solution.x_star)), True,
                 "||x_0 - x*|| with x* the solver's minimizer (closest to x_0 where the solver says so)")


@constant("Delta_F")
def _Delta_F(ctx):
    r = np.linalg.norm(_start(ctx) - ctx.solution.x_star)
    return Value(float(np.sqrt(ctx.instance.n) * r), True, "||X_0 - X*||_F = sqrt(n) ||x_0 - x*|| (all clients start at x_0)")


@constant("xstar_norm")
def _xstar_norm(ctx):
    return Value(float(np.linalg.norm(ctx.solution.x_star)), True, "||x*||")
