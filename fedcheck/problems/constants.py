"""Named instance constants that bounds refer to.

A constant is a :class:`Value` (``exact`` False when only a certified upper bound is available, and a
note saying how it was obtained) found by :func:`resolve` under the name of the SymPy symbol it
supplies, from an :class:`InstanceContext` ``ctx`` (the instance, its batched loss restricted to it,
its exact solution, and the check's parameters).  :func:`resolve` looks, in this order, at

1. ``ctx.params`` (a parameter of the check, e.g. ``E`` or ``lambda_0``);
2. the instance itself: a problem class carries its own constants by defining a method
   ``constant(self, name, ctx) -> Value`` that raises :class:`KeyError` for a name it does not know
   (e.g. :class:`fedcheck.problems.constrained.ConstrainedInstance`: ``D_0``, ``G_lip``, ``q_u``, ``E``;
   :class:`fedcheck.problems.composite.QuadInstance`: ``M``, ``K``, ``d``, ``L``, ``sigma``, ``zeta``,
   ``G``, ``B``);
3. :data:`USER`: constants a user added with an explicit call of :func:`register_constant` in their
   own file (nothing is registered as a side effect of importing a module of fedcheck);
4. :data:`GENERIC`: the table written out below, for the generic :class:`Instance` of the
   federated problems (``n``, ``L``, ``D``, ``Y_norm``, ``G_sup``, ..., and the non-convex
   ``E_init``, ``G_nc``, ``grad_hat_x1``, computed by :mod:`fedcheck.problems.nonconvex`, imported
   when first needed); and, for strongly convex least squares (client weights ``p_k``: the instance's
   :attr:`~fedcheck.problems.Instance.weights`, ``1/n`` each without them; exact from the clients' Hessians
   ``H_k = A_k^T A_k / m``), ``mu`` (``min_k lambda_min(H_k)``), ``mu_F``, ``L_F`` (the smoothness of
   ``F = sum_k p_k F_k``), ``kappa = L / mu``, ``Gamma = F* - sum_k p_k F_k*`` and ``F_k_star_max``::

       from fedcheck.symbols import Gamma, L, kappa, mu, t
       Bound("strongly convex", kappa / (8 * kappa + t) * (2 * (6 * L * Gamma) / mu + mu * 8 * kappa / 2 * D**2))

A provider (of :data:`USER` or :data:`GENERIC`) is a function ``(ctx) -> Value`` (or a number).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from fedcheck.core import verdict as V
from fedcheck.core.errors import Terminated
from fedcheck.core.usercode import call_user, is_own, user_error

from fedcheck.problems.instances import Instance
from fedcheck.problems.losses import Loss
from fedcheck.problems.solve import Solution
from fedcheck.problems.suprema import sup_grad_norm_sq  # noqa: F401  (re-exported)

__all__ = ["Value", "InstanceContext", "GENERIC", "USER", "DESCRIPTIONS", "register_constant", "known_constants",
           "resolve", "resolve_all", "sup_grad_norm_sq"]


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
    A name of the generic table (except those of :data:`SHADOWABLE`, which a user's own definition replaces)
    or one already registered is refused (:class:`ValueError`): a constant has one meaning.  A problem class's own constants are better given by its
    ``constant(name, ctx)`` method (see the module's docstring)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a constant's name must be a non-empty string, not {name!r}")
    if not callable(fn):
        raise ValueError(f"the provider of {name!r} must be callable (ctx) -> Value")
    if name in GENERIC and name not in SHADOWABLE:
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
        except (KeyboardInterrupt, Terminated):
            raise
        except BaseException as e:  # noqa: BLE001 - a user's problem class: its error, with its line
            if is_own(own):
                raise
            raise user_error(e, own, f"constant {name!r}") from None
    if name in USER:
        return _as_value(call_user(USER[name], ctx, role=f"constant {name!r}"))
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
    w = _weights(ctx)
    return Value(float(np.linalg.norm(g.mean(0) if w is None else w @ g)), True, "||grad F(x*)||")


# ----------------------------------------------------------------------------------------------
# sup over D of ||grad f_i||^2: exact where the maximum of a convex function over the set is known
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
# the non-convex constants: computed by fedcheck.problems.nonconvex (imported when first needed: it imports
# this module)
def _nonconvex_solution(ctx):
    from fedcheck.problems import nonconvex
    return ctx.solution if nonconvex.is_nonconvex_solution(ctx.solution) else nonconvex.nonconvex_solver(ctx.instance)


def _interval_value(iv) -> Value:
    """The upper end of a certified interval, exact when the interval has no width beyond rounding."""
    return Value(iv.hi, iv.hi - iv.lo <= V.slack(iv.hi, 1.0), f"upper end of [{iv.lo:.6g}, {iv.hi:.6g}]: {iv.note}")


def _E_init(ctx):
    return _interval_value(_nonconvex_solution(ctx).E)


def _G_nc(ctx):
    return _interval_value(_nonconvex_solution(ctx).G)


def _grad_hat_x1(ctx):
    loss = ctx.loss if ctx.loss is not None else ctx.instance.make_loss()
    x1 = np.zeros(ctx.instance.p) if ctx.instance.x0 is None else ctx.instance.x0
    g = loss.grad(np.broadcast_to(x1, (ctx.instance.n, ctx.instance.p)))
    return Value(float(np.linalg.norm(g) / ctx.instance.n), True,
                 "||grad F^(X^1)||_F = (1/n)(sum_i ||grad f_i(x^1)||^2)^(1/2) (D^1 = 0)")


# ----------------------------------------------------------------------------------------------
# strong convexity and heterogeneity of least squares, in closed form from the clients' Hessians H_k = A_k^T A_k / m
# (a strongly convex / ridge-like family: mu > 0 when every A_k has full column rank).  Client weights p_k = 1/n.
def _hessians(ctx) -> np.ndarray:
    loss = ctx.loss if ctx.loss is not None else ctx.instance.make_loss()
    H = getattr(loss, "H", None)
    if H is None:
        raise KeyError(f"the {loss.name!r} loss has no constant Hessian: mu, L_F, kappa and Gamma are known in "
                       "closed form for least squares only")
    return np.asarray(H, dtype=float).reshape(ctx.instance.n, ctx.instance.p, ctx.instance.p)


def _mu(ctx):
    H = _hessians(ctx)
    return Value(float(np.min(np.linalg.eigvalsh(H)[:, 0])), True,
                 "min_k lambda_min(A_k^T A_k / m): every client's f_k is mu-strongly convex")


def _weights(ctx) -> np.ndarray | None:
    """The instance's client weights ``p_k`` (``None``: ``1/n`` each)."""
    return getattr(ctx.instance, "weights", None)


def _average_hessian(ctx) -> np.ndarray:
    H, w = _hessians(ctx), _weights(ctx)
    return H.mean(0) if w is None else np.einsum("k,kpq->pq", w, H)


def _mu_F(ctx):
    return Value(float(np.linalg.eigvalsh(_average_hessian(ctx))[0]), True,
                 "lambda_min(sum_k p_k A_k^T A_k / m): F is mu_F-strongly convex")


def _L_F(ctx):
    return Value(float(np.linalg.eigvalsh(_average_hessian(ctx))[-1]), True,
                 "lambda_max(sum_k p_k A_k^T A_k / m): the exact smoothness of F = sum_k p_k F_k")


def _kappa(ctx):
    mu = _mu(ctx).value
    if not mu > 0:
        raise KeyError("kappa = L / mu: some client is not strongly convex (mu = 0)")
    return Value(float(_L(ctx).value / mu), True, "L / mu = max_k L_k / min_k lambda_min(H_k)")


def _client_minima(ctx) -> tuple[np.ndarray, bool]:
    """Each client's minimum of ``||A_k x - b_k||^2 / (2m)`` over R^p, and whether every client's minimizer lies
    in the set (then it is also the minimum over the set)."""
    inst = ctx.instance
    vals, inside = [], True
    for A, b in zip(np.asarray(inst.A, dtype=float), np.asarray(inst.b, dtype=float)):
        x = np.linalg.lstsq(A, b, rcond=None)[0]
        r = A @ x - b
        vals.append(float(r @ r) / (2 * A.shape[0]))
        inside = inside and bool(np.all(inst.set.contains(x, 1e-9)))
    return np.asarray(vals), inside


def _Gamma(ctx):
    _hessians(ctx)
    loss = ctx.loss if ctx.loss is not None else ctx.instance.make_loss()
    x = ctx.solution.x_star
    vals = loss.value(np.broadcast_to(x, (ctx.instance.n, ctx.instance.p)))
    fk, inside = _client_minima(ctx)
    w = _weights(ctx)
    if w is None:
        gamma, how = float(np.mean(vals)) - float(fk.mean()), "Gamma = F* - (1/n) sum_k F_k* (weights p_k = 1/n"
    else:
        gamma, how = float(vals @ w) - float(fk @ w), "Gamma = F* - sum_k p_k F_k* (the instance's client weights p_k"
    return Value(gamma, inside, how + "; F_k* over R^p by least squares" +
                 ("" if inside else ", below the minimum over the set: an upper bound of Gamma") + ")")


def _F_k_star_max(ctx):
    fk, inside = _client_minima(ctx)
    return Value(float(fk.max()), inside, "max_k F_k*, each client's least-squares minimum (over R^p)")


#: What each constant of :data:`GENERIC` is (the README's table "Constants a bound may use" is made from it).
#: ``p_k`` are the client weights (``Instance(weights=...)``, ``1/n`` each without them), ``H_k = A_k^T A_k / m``.
DESCRIPTIONS: dict[str, str] = {
    "n": "number of clients",
    "m": "samples (rows) per client",
    "p": "dimension",
    "L": "max_k L_k, each client's exact smoothness constant (least squares: lambda_max(H_k))",
    "D": "diameter of the feasible set (exact; infinite on R^p)",
    "Y_norm": "||Y*||_F of the consensus duals of the exact solve",
    "grad_hat_star": "(1/n) (sum_k ||grad f_k(x*)||^2)^(1/2)",
    "grad_F_star": "||grad F(x*)||, F = sum_k p_k f_k",
    "G_sup": "sup over D^n of ||grad F^(X)||_F (exact where the maximum over the set is known, else an upper bound)",
    "G_max": "max_k Lip(f_k) (Lipschitz losses)",
    "G_F": "Lipschitz constant of F(X) = (1/n) sum_k f_k(x_k) in ||.||_F (Lipschitz losses)",
    "r_0": "||x_0 - x*||, the start's distance to the solver's minimizer",
    "Delta_F": "||X_0 - X*||_F = sqrt(n) ||x_0 - x*||",
    "xstar_norm": "||x*||",
    "E_init": "F at the start minus a certified lower bound of F* (non-convex families; upper end of an interval)",
    "G_nc": "sup over D^n of ||grad F^(X)||_F for the non-convex families (upper end of a certified interval)",
    "grad_hat_x1": "(1/n) (sum_k ||grad f_k(x^1)||^2)^(1/2) at the start",
    "mu": "min_k lambda_min(H_k): every client's f_k is mu-strongly convex (least squares, exact)",
    "mu_F": "lambda_min(sum_k p_k H_k): F is mu_F-strongly convex (least squares, exact)",
    "L_F": "lambda_max(sum_k p_k H_k): the exact smoothness of F = sum_k p_k f_k (least squares)",
    "kappa": "L / mu (least squares, exact)",
    "Gamma": "F* - sum_k p_k F_k*, the heterogeneity of Li et al. (least squares, exact; F_k* over R^p)",
    "F_k_star_max": "max_k F_k*, each client's least-squares minimum over R^p",
}

#: Generic names a user's :func:`register_constant` may still claim (they came after users had named their own).
SHADOWABLE = frozenset({"mu", "mu_F", "L_F", "kappa", "Gamma", "F_k_star_max"})


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
    "mu": _mu,
    "mu_F": _mu_F,
    "L_F": _L_F,
    "kappa": _kappa,
    "Gamma": _Gamma,
    "F_k_star_max": _F_k_star_max,
}
