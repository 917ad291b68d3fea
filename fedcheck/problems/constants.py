"""Named instance constants that bounds refer to.

A constant is a :class:`Value` (``exact`` False when only a certified upper bound is available, and a
note saying how it was obtained) found by :func:`resolve` under the name of the SymPy symbol it
supplies, from an :class:`InstanceContext` ``ctx`` (the instance, its batched loss restricted to it,
its exact solution, and the check's parameters).  :func:`resolve` looks, in this order, at

1. ``ctx.params`` (a parameter of the check, e.g. ``E`` or ``lambda_0``);
2. the instance itself: a problem class carries its own constants by defining a method
   ``constant(self, name, ctx) -> Value`` that raises :class:`KeyError` for a name it does not know
   (e.g. :class:`fedcheck.problems.fedsgm.ConstrainedInstance`: ``D_0``, ``G_lip``, ``q_u``, ``E``;
   :class:`fedcheck.problems.feddualavg.QuadInstance`: ``M``, ``K``, ``d``, ``L``, ``sigma``, ``zeta``,
   ``G``, ``B``);
3. :data:`USER`: constants a user added with an explicit call of :func:`register_constant` in their
   own file (nothing is registered as a side effect of importing a module of fedcheck);
4. :data:`GENERIC`: the table written out below, for the generic :class:`Instance` of the
   federated problems (``n``, ``L``, ``D``, ``Y_norm``, ``G_sup``, ..., and FedFW's non-convex
   ``E_init``, ``G_nc``, ``grad_hat_x1``, computed by :mod:`fedcheck.problems.fedfw`, imported
   when first needed).

A provider (of :data:`USER` or :data:`GENERIC`) is a function ``(ctx) -> Value`` (or a number).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np
from scipy.optimize import brentq

from fedcheck.problems.instances import Instance
from fedcheck.problems.losses import LeastSquares, Loss
from fedcheck.problems.sets import Box, L1Ball, L2Ball, Simplex
from fedcheck.problems.solve import Solution

__all__ = ["Value", "InstanceContext", "GENERIC", "USER", "register_constant", "known_constants", "resolve",
           "resolve_all", "sup_grad_norm_sq"]


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


Provider = Callable[[InstanceContext], "Value | float"]

#: Constants added by users with :func:`register_constant` (empty unless a user's file calls it).
USER: dict[str, Provider] = {}


def register_constant(name: str, fn: Provider) -> Provider:
    """Add the constant ``name``, computed by ``fn(ctx) -> Value`` (or a number), for every instance.

    Call it explicitly in your own file (``register_constant("kappa", my_kappa)``); it is consulted
    after ``ctx.params`` and the instance's own ``constant(name, ctx)``, before the generic table.
    A name of the generic table or one already registered is refused (:class:`ValueError`): a
    constant has one meaning.  A problem class's own constants are better given by its
    ``constant(name, ctx)`` method (see the module's docstring)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a constant's name must be a non-empty string, not {name!r}")
    if not callable(fn):
        raise ValueError(f"the provider of {name!r} must be callable (ctx) -> Value")
    if name in GENERIC:
        raise ValueError(f"{name!r} is a generic constant of fedcheck; choose another name")
    if name in USER:
        by = getattr(USER[name], "__qualname__", USER[name])
        raise ValueError(f"the constant {name!r} is already registered (by {by})")
    USER[name] = fn
    return fn


def known_constants() -> Mapping[str, Provider]:
    """Read-only view of the constants known for every instance: :data:`USER` and :data:`GENERIC`
    (an instance class may know more through its ``constant(name, ctx)`` method)."""
    return MappingProxyType({**GENERIC, **USER})


def _as_value(v) -> Value:
    return v if isinstance(v, Value) else Value(float(v))


def _instance_names(instance) -> list[str]:
    names = getattr(instance, "constant_names", None)
    return [] if names is None else list(names())


def resolve(name: str, ctx: InstanceContext) -> Value:
    """The value of the constant ``name`` for ``ctx``: parameter, then the instance's own
    ``constant(name, ctx)``, then :data:`USER`, then :data:`GENERIC` (see the module's docstring)."""
    if name in ctx.params:
        return Value(float(ctx.params[name]), True, "parameter")
    own = getattr(type(ctx.instance), "constant", None)
    why = ""
    if callable(own):
        try:
            return _as_value(own(ctx.instance, name, ctx))
        except KeyError as e:  # the instance does not know the name (any other reason is kept for the message)
            if e.args and e.args[0] != name:
                why = f" ({type(ctx.instance).__name__}.constant: {e.args[0]})"
    if name in USER:
        return _as_value(USER[name](ctx))
    if name in GENERIC:
        return _as_value(GENERIC[name](ctx))
    known = sorted(set(GENERIC) | set(USER) | set(_instance_names(ctx.instance)))
    raise KeyError(f"no provider for constant {name!r}{why}; known: {known}")


def resolve_all(ctx: InstanceContext, names=None) -> dict[str, Value]:
    """``{name: resolve(name, ctx)}`` for ``names`` (default: the instance's own constants, its
    ``constant_names(ctx.solution)``), in that order."""
    if names is None:
        cn = getattr(ctx.instance, "constant_names", None)
        if cn is None:
            raise ValueError(f"{type(ctx.instance).__name__} does not list its constants (no constant_names); "
                             "pass the names")
        names = cn(ctx.solution)
    return {nm: resolve(nm, ctx) for nm in names}


def _n(ctx):
    return Value(ctx.instance.n, True, "number of clients")


def _m(ctx):
    return Value(ctx.instance.m, True, "samples per client")


def _p(ctx):
    return Value(ctx.instance.p, True, "dimension")


def _L(ctx):
    return Value(float(np.max(ctx.loss.smoothness())), True, "max_i of the exact smoothness constant L_i")


def _D(ctx):
    return Value(float(ctx.instance.set.diameter), True, f"exact diameter of the {ctx.instance.set.name} set")


def _Y(ctx):
    return Value(ctx.solution.Y_norm, True,
                 f"||Y*||_F of the solver's consensus duals (dual residual {ctx.solution.dual_residual:.1e}); "
                 "any dual solution is valid in the proof")


def _client_grads_at_star(ctx):
    x = ctx.solution.x_star
    return ctx.loss.grad(np.broadcast_to(x, (ctx.instance.n, ctx.instance.p)))


def _ghat(ctx):
    g = _client_grads_at_star(ctx)
    return Value(float(np.linalg.norm(g) / ctx.instance.n), True, "(1/n)(sum_i ||grad f_i(x*)||^2)^(1/2)")


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


# Above this size the vertex enumeration of sup ||grad f_i||^2 runs in chunks of vertices.
_ENUM_LIMIT_BYTES = 64 * 2**20


class _ClientHessians:
    """``H[i] = A_i^T A_i / m`` formed on demand (least squares in factored form)."""

    def __init__(self, loss):
        self.loss = loss

    def __getitem__(self, i):
        A = self.loss.A[i]
        return A.T @ A / self.loss.m


def _vertex_sup_chunked(loss, r: float, p: int, symmetric: bool) -> np.ndarray:
    """``max_j ||H_i (+-r e_j) - c_i||^2`` per client, a block of columns ``H_i e_j`` at a time (formed from
    ``A_i`` in the factored form): memory ``n p k`` instead of ``n (2p) p``."""
    n, c = loss.n, loss.c
    k = max(1, int(_ENUM_LIMIT_BYTES // (8 * n * p * 4)))
    best = np.full(n, -np.inf)
    for lo in range(0, p, k):
        hi = min(p, lo + k)
        if loss.factored:
            cols = np.einsum("imp,imk->ikp", loss.A, loss.A[:, :, lo:hi]) / loss.m   # rows: H_i e_j
        else:
            cols = np.swapaxes(loss.H[:, :, lo:hi], -1, -2)
        for sign in ((1.0, -1.0) if symmetric else (1.0,)):
            vals = sign * r * cols - c[:, None, :]
            best = np.maximum(best, (vals ** 2).sum(-1).max(-1))
    return best


def sup_grad_norm_sq(loss: Loss, S) -> tuple[np.ndarray, bool, str]:
    """Per client ``sup_{x in D} ||grad f_i(x)||^2`` for one (unbatched) instance.

    Exact for least squares on the l1 ball and simplex (vertex enumeration), the box
    up to dimension 16 (2^p vertices), and the l2 ball (trust-region secular
    equation).  Otherwise a certified upper bound, flagged ``exact=False``."""
    n, p = loss.n, loss.p
    r = float(S.radius)
    if isinstance(loss, LeastSquares):
        # the factored form keeps no stacked H: one client's H_i at a time (p x p)
        H = _ClientHessians(loss) if loss.factored else loss.H
        c = loss.c
        if isinstance(S, (L1Ball, Simplex)):
            V = r * np.eye(p)
            if isinstance(S, L1Ball):
                V = np.concatenate([V, -V])
            if n * len(V) * p * 8 <= _ENUM_LIMIT_BYTES:
                vals = np.einsum("ipq,vq->ivp", H, V) - c[:, None, :]
                return (vals ** 2).sum(-1).max(-1), True, "vertex enumeration"
            return _vertex_sup_chunked(loss, r, p, isinstance(S, L1Ball)), True, "vertex enumeration"
        if isinstance(S, Box) and p <= MAX_BOX_DIM:
            V = r * (1 - 2 * ((np.arange(2 ** p)[:, None] >> np.arange(p)) & 1))
            out = np.empty(n)
            for i in range(n):
                out[i] = ((V @ H[i].T - c[i]) ** 2).sum(-1).max()
            return out, True, f"enumeration of the 2^{p} box vertices"
        if isinstance(S, L2Ball):
            return np.array([_trs_max(H[i], c[i], r) for i in range(n)]), True, "trust-region secular equation"
        if isinstance(S, Box):  # max ||x|| over the box is r sqrt(p)
            opn = (np.asarray(loss.smoothness(), dtype=float) if loss.factored
                   else np.linalg.norm(H, ord=2, axis=(-2, -1)))
            ub = (opn * r * np.sqrt(p) + np.linalg.norm(c, axis=-1)) ** 2
            return ub, False, "upper bound (||H_i|| r sqrt(p) + ||c_i||)^2"
        return np.full(n, np.inf), False, f"no bound implemented for the {S.name} set"
    A = loss.A
    row = np.linalg.norm(A, axis=-1).mean(-1)
    opn = np.linalg.norm(A, ord=2, axis=(-2, -1)) / np.sqrt(loss.m)
    return np.minimum(row, opn) ** 2, False, "upper bound min((1/m) sum_j ||a_ij||, ||A_i|| / sqrt(m)) (sigmoid weights <= 1)"


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


def _G_max(ctx):
    vals, exact, how = _client_lipschitz(ctx)
    return Value(float(np.max(vals)), bool(exact), "max_i Lip(f_i); " + how)


def _G_F(ctx):
    vals, exact, how = _client_lipschitz(ctx)
    return Value(float(np.linalg.norm(vals) / ctx.instance.n), bool(exact),
                 "Lipschitz constant of F(X) = (1/n) sum_i f_i(x_i) in the Frobenius norm, "
                 "(1/n)(sum_i Lip(f_i)^2)^(1/2); " + how)


def _start(ctx) -> np.ndarray:
    x0 = ctx.instance.x0
    return np.zeros(ctx.instance.p) if x0 is None else np.asarray(x0, dtype=float)


def _r_0(ctx):
    return Value(float(np.linalg.norm(_start(ctx) - ctx.solution.x_star)), True,
                 "||x_0 - x*|| with x* the solver's minimizer (closest to x_0 where the solver says so)")


def _Delta_F(ctx):
    r = np.linalg.norm(_start(ctx) - ctx.solution.x_star)
    return Value(float(np.sqrt(ctx.instance.n) * r), True, "||X_0 - X*||_F = sqrt(n) ||x_0 - x*|| (all clients start at x_0)")


def _xstar_norm(ctx):
    return Value(float(np.linalg.norm(ctx.solution.x_star)), True, "||x*||")


# ----------------------------------------------------------------------------------------------
# FedFW's non-convex constants: computed by fedcheck.problems.fedfw (imported when first needed)
def _E_init(ctx):
    from fedcheck.problems import fedfw
    return fedfw.E_init_value(ctx)


def _G_nc(ctx):
    from fedcheck.problems import fedfw
    return fedfw.G_nc_value(ctx)


def _grad_hat_x1(ctx):
    from fedcheck.problems import fedfw
    return fedfw.grad_hat_x1_value(ctx)


# ----------------------------------------------------------------------------------------------
#: The constants of the generic federated :class:`Instance`, written out (no registration).
GENERIC: dict[str, Provider] = {
    "n": _n,
    "m": _m,
    "p": _p,
    "L": _L,
    "D": _D,
    "Y_norm": _Y,
    "grad_hat_star": _ghat,
    "grad_F_star": _gF,
    "G_sup": _Gsup,
    "G_max": _G_max,
    "G_F": _G_F,
    "r_0": _r_0,
    "Delta_F": _Delta_F,
    "xstar_norm": _xstar_norm,
    "E_init": _E_init,
    "G_nc": _G_nc,
    "grad_hat_x1": _grad_hat_x1,
}
