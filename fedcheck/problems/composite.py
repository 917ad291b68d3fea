"""Federated composite problems (the problem class of FedDualAvg, FedMiD and composite FedAvg).

``min_w Phi(w) = F(w) + psi(w)``, ``F = (1/M) sum_m F_m``, client ``m`` querying stochastic
gradients ``grad f(w; xi)`` of ``F_m``; ``psi`` a :mod:`fedcheck.regularizers` regularizer.

Two kinds of instances (one instance = one problem; a batch stacks instances for the engine):

* :class:`QuadInstance` -- ``F_m(w) = 1/2 w^T Q_m w + c_m^T w + e_m`` with an additive-noise
  oracle ``grad f(w; xi) = Q_m w + c_m + xi`` (``xi`` Gaussian ``N(0, s^2 I)``, uniform on the
  sphere of radius ``s``, or none).  Every constant of the theorems is exact here (see
  :meth:`QuadInstance.constant`, read by :func:`fedcheck.problems.constants.resolve`).
* :class:`FiniteSumInstance` -- client data sets (least squares ``(x^T w - y)^2`` as in the paper's
  (5.1), or logistic), one local epoch of minibatches per round (``K = n / batch``), for the
  experiments of Section 5.

Exact optima: :func:`solve_composite` (cvxpy + Clarabel, then prox-gradient polishing and a
Fenchel-duality certificate ``Phi* >= Phi(w_hat) - gap`` whenever ``F`` is a quadratic with
``Qbar > 0``); cached on disk like :mod:`fedcheck.solve`.

The FedDualAvg paper's families of instances, its own instances and its experiments live in its folder
(``theorems/feddualavg/problems.py``, ``theorems/feddualavg/experiments.py``).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from fedcheck.core.results import atomic_write
from fedcheck.problems.constants import Value
from fedcheck.problems.suprema import trs_max
from fedcheck.problems.losses import Loss, lam_max_gram, take_rows
from fedcheck.problems.regularizers import (L1BallIndicator, L2BallIndicator, Regularizer, make_regularizer,
                                           stack_regularizers)
from fedcheck.problems.solve import Solution, SolutionCache, close, solver_versions
from fedcheck.core.verdict import POLICY

__all__ = ["QuadInstance", "QuadraticClients", "FiniteSumInstance", "FiniteSumClients", "FiniteSumLoss",
           "solve_composite", "verify_composite", "save_problem", "load_problem", "batch_of"]


def _sqrtm_psd(Q):
    e, V = np.linalg.eigh(Q)
    return (V * np.sqrt(np.maximum(e, 0.0))).T  # R with R^T R = Q


# =============================================================================================
# quadratic clients with an additive-noise oracle
@dataclass
class QuadInstance:
    """One problem ``F_m(w) = 1/2 w^T Q_m w + c_m^T w + e_m``, ``psi = reg``, ``M`` clients, ``K`` local
    steps.  ``Q`` has shape ``(M, d, d)`` or ``(1, d, d)`` (shared Hessian); ``noise`` is ``none``,
    ``gaussian`` (``N(0, s^2 I)``) or ``sphere`` (uniform on the sphere of radius ``s``).
    ``geometry`` names the norm of the constants: ``euclidean`` or ``Q`` (the ``Q/||Q||_2`` norm of
    Assumption 2(c), for a shared ``Q``)."""

    Q: np.ndarray
    c: np.ndarray
    reg: Regularizer
    K: int
    e: np.ndarray | None = None
    noise: str = "none"
    noise_scale: float = 0.0
    geometry: str = "euclidean"
    seed: int | None = None
    source: str = "user"
    w0: np.ndarray | None = None
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        self.Q = np.asarray(self.Q, dtype=float)
        self.c = np.asarray(self.c, dtype=float)
        if self.Q.ndim == 2:
            self.Q = self.Q[None]
        if self.e is None:
            self.e = np.zeros(self.c.shape[0])
        if self.noise not in ("none", "gaussian", "sphere"):
            raise ValueError(f"unknown noise {self.noise!r}")
        if self.geometry == "Q" and self.Q.shape[0] != 1:
            raise ValueError("the Q geometry of Assumption 2 needs a shared Hessian")

    kind = "quadratic"

    @property
    def M(self) -> int:
        return self.c.shape[0]

    @property
    def d(self) -> int:
        return self.c.shape[1]

    @property
    def stochastic(self) -> bool:
        return self.noise != "none" and self.noise_scale > 0

    @property
    def Qbar(self):
        return self.Q.mean(0)

    @property
    def cbar(self):
        return self.c.mean(0)

    def quadratic(self):
        """``(Qbar, cbar, ebar)`` with ``F(w) = 1/2 w^T Qbar w + cbar^T w + ebar``."""
        return self.Qbar, self.cbar, float(np.mean(self.e))

    def F(self, w):
        Q, c, e = self.quadratic()
        w = np.asarray(w, dtype=float)
        return 0.5 * np.einsum("...i,ij,...j->...", w, Q, w) + w @ c + e

    def grad_F(self, w):
        Q, c, _ = self.quadratic()
        return np.asarray(w) @ Q.T + c

    def Phi(self, w):
        return self.F(w) + self.reg.value(w)

    def cvx_F(self, x):
        import cvxpy as cp
        Q, c, e = self.quadratic()
        return 0.5 * cp.sum_squares(_sqrtm_psd(Q) @ x) + c @ x + e

    def x0(self):
        return np.zeros(self.d) if self.w0 is None else np.asarray(self.w0, dtype=float)

    def content_hash(self) -> str:
        h = hashlib.sha256()
        for a in (self.Q, self.c, self.e):
            a = np.ascontiguousarray(a, dtype=np.float64)
            h.update(str(a.shape).encode())
            h.update(a.tobytes())
        h.update(json.dumps(self.reg.spec(), sort_keys=True).encode())
        return h.hexdigest()

    def describe(self) -> dict:
        return {"kind": self.kind, "source": self.source, "seed": self.seed, "M": self.M, "d": self.d, "K": self.K,
                "noise": self.noise, "noise_scale": self.noise_scale, "geometry": self.geometry,
                "reg": self.reg.spec(), "shared_hessian": self.Q.shape[0] == 1, "params": self.params,
                "hash": self.content_hash()[:16]}

    # -- norms of the geometry ------------------------------------------------------------------
    def dual_norm_sq(self, V):
        """``||v||_*^2``: Euclidean, or ``||Q||_2 v^T Q^{-1} v`` (Claim D.7) in the Q geometry."""
        V = np.asarray(V, dtype=float)
        if self.geometry == "euclidean":
            return (V * V).sum(-1)
        Q = self.Qbar
        return np.linalg.norm(Q, 2) * np.einsum("...i,ij,...j->...", V, np.linalg.inv(Q), V)

    # -- exact constants ------------------------------------------------------------------------
    # read by fedcheck.problems.constants.resolve (after the check's parameters) through constant()
    CONSTANT_NAMES = ("M", "K", "d", "L", "sigma", "zeta", "G", "B")

    def constant_names(self, sol: "Solution | None" = None) -> tuple:
        """The constants this instance supplies (``B`` needs the exact solution)."""
        return self.CONSTANT_NAMES if sol is not None else self.CONSTANT_NAMES[:-1]

    def constant(self, name: str, ctx) -> Value:
        """The exact constant ``name`` (``ctx``: :class:`fedcheck.problems.constants.InstanceContext`, whose
        ``solution`` is a :class:`~fedcheck.problems.solve.Solution` or ``None``); :class:`KeyError` for a name it does
        not supply."""
        if name == "M":
            return Value(self.M, True, "number of clients (full participation)")
        if name == "K":
            return Value(self.K, True, "local steps per round")
        if name == "d":
            return Value(self.d, True, "dimension")
        if name == "L":
            return self._const_L()
        if name == "sigma":
            return self._const_sigma()
        if name == "zeta":
            return self._const_zeta()
        if name == "G":
            return self._const_G()
        if name == "B":
            if ctx.solution is None:
                raise ValueError("the constant B = D_h(w*, w0) needs the exact solution (ctx.solution is None)")
            return self._const_B(ctx.solution)
        raise KeyError(name)

    def _const_L(self) -> Value:
        if self.geometry == "Q":
            nQ = float(np.linalg.norm(self.Qbar, 2))
            return Value(nQ, True, "||Q||_2: each f(.; xi) has Hessian Q, which is ||Q||_2-smooth in the "
                                   "Q/||Q||_2 norm (Assumption 2(c))")
        return Value(float(np.linalg.norm(self.Q, 2, axis=(-2, -1)).max()), True, "max_m ||Q_m||_2 (Euclidean)")

    def _const_sigma(self) -> Value:
        if self.geometry == "Q":
            nQ = float(np.linalg.norm(self.Qbar, 2))
            Qinv = np.linalg.inv(self.Qbar)
            if self.noise == "gaussian":
                s2 = nQ * self.noise_scale ** 2 * float(np.trace(Qinv))
                return Value(float(np.sqrt(s2)), True, "sigma^2 = ||Q||_2 s^2 tr(Q^-1) (Gaussian noise, "
                                                       "dual Q-norm)")
            if self.noise == "sphere":
                s2 = nQ * self.noise_scale ** 2 * float(np.trace(Qinv)) / self.d
                return Value(float(np.sqrt(s2)), True, "sigma^2 = ||Q||_2 s^2 tr(Q^-1)/d (uniform sphere)")
            return Value(0.0, True, "exact gradients")
        if self.noise == "gaussian":
            return Value(float(self.noise_scale * np.sqrt(self.d)), True, "sigma^2 = s^2 d (Gaussian)")
        if self.noise == "sphere":
            return Value(float(self.noise_scale), True, "sigma = s (uniform on the sphere of radius s)")
        return Value(0.0, True, "exact gradients")

    def _const_zeta(self) -> Value:
        if self.geometry == "Q":
            nQ = float(np.linalg.norm(self.Qbar, 2))
            Qinv = np.linalg.inv(self.Qbar)
            D = self.c - self.cbar
            z = np.sqrt(nQ * np.einsum("mi,ij,mj->m", D, Qinv, D)).max()
            return Value(float(z), True, "max_m sqrt(||Q||_2 (c_m - cbar)^T Q^-1 (c_m - cbar)) (shared Q: "
                                         "grad F_m - grad F is constant; Assumption 2(a) read with zeta, "
                                         "not zeta^2, as its proof (D.51) uses it)")
        Qm = np.broadcast_to(self.Q, (self.M, self.d, self.d))
        zs = [self._sup_affine(Qm[m] - self.Qbar, self.c[m] - self.cbar) for m in range(self.M)]
        return Value(float(max(v for v, _ in zs)), all(ex for _, ex in zs),
                     "max_m sup_{w in dom psi} ||grad F_m(w) - grad F(w)||_2 " + zs[0][1] * "(exact)")

    def _const_G(self) -> Value:
        """G: sup over dom psi of ||grad f(w; xi)||_* for every xi."""
        if self.noise == "gaussian" and self.noise_scale > 0:
            return Value(float("inf"), True, "Gaussian noise is unbounded")
        extra = self.noise_scale if self.noise == "sphere" else 0.0
        if self.geometry == "Q":
            return Value(float("inf"), False, "G is not computed in the Q geometry")
        Qm = np.broadcast_to(self.Q, (self.M, self.d, self.d))
        gs = [self._sup_affine(Qm[m], self.c[m]) for m in range(self.M)]
        return Value(float(max(v for v, _ in gs) + extra), all(ex for _, ex in gs),
                     "max_m sup_{w in dom psi} ||Q_m w + c_m||_2" + (" + s (sphere noise)" if extra else "")
                     + (" (exact: vertex enumeration / trust-region secular equation)"
                        if all(ex for _, ex in gs) else ""))

    def _const_B(self, sol: "Solution") -> Value:
        w0 = self.x0()
        Bv = 0.5 * float(np.sum((sol.w_star - w0) ** 2))
        dist = sol.dist_bound
        r = float(np.linalg.norm(sol.w_star - w0))
        lo, hi = 0.5 * max(r - dist, 0.0) ** 2, 0.5 * (r + dist) ** 2
        out = Value(Bv, True, f"D_h(w*, w0) = 1/2 ||w* - w0||^2 with w* certified to within {dist:.1e} "
                              f"(interval [{lo:.6g}, {hi:.6g}] used for verdicts)")
        out.interval = (lo, hi)  # type: ignore[attr-defined]
        return out

    def _sup_affine(self, A, b) -> tuple[float, bool]:
        """``sup_{w in dom psi} ||A w + b||_2`` (A symmetric) and whether it is exact."""
        if not np.any(A):
            return float(np.linalg.norm(b)), True
        reg = self.reg
        if isinstance(reg, L2BallIndicator):
            return float(np.sqrt(trs_max(A, -b, float(reg.radius)))), True
        if isinstance(reg, L1BallIndicator):
            r = float(reg.radius)
            V = np.concatenate([r * A.T, -r * A.T]) + b  # rows A(+-r e_j) + b
            return float(np.linalg.norm(V, axis=1).max()), True
        return float("inf"), True

    # -- batch ----------------------------------------------------------------------------------
    def batch(self, insts: "Sequence[QuadInstance]") -> "QuadraticClients":
        return QuadraticClients(insts)


#: A least-squares instance with more entries than this (and more than twice as many samples as features) gives
#: cvxpy its d x d Cholesky form (:meth:`FiniteSumInstance.cvx_F`); the catalog's quick instances stay below it.
CVX_FACTOR_SIZE = 1 << 22

#: A batch of one finite-sum instance repeated keeps its data once above this many bytes of stacked copies
#: (:class:`FiniteSumClients`): the catalog's quick instances stay below it and keep their stacked arrays.
SHARED_DATA_BYTES = 64 << 20

_FULL = object()     # ``grad(X)`` without a round context: the Loss interface (exact per-client gradients)


class QuadraticClients(Loss):
    """A batch of :class:`QuadInstance` (one kind of regularizer, one shape) for the engine, on the one loss
    interface (:class:`fedcheck.problems.losses.Loss`): ``f_i(x) = x^T Q_i x / 2 + c_i^T x + e_i``, arrays
    ``Q`` ``(B, M, d, d)`` (``(B, 1, d, d)`` when the clients share ``Q``), ``c`` ``(B, M, d)``, ``e`` ``(B, M)``;
    ``value(X)``/``grad(X)`` per client at ``X`` ``(B, M, d)``, ``smoothness()`` = ``lambda_max(Q_i)``.

    Oracle protocol (see :mod:`fedcheck.engine.composite`): ``start_round(sel, rng)``,
    ``grad(W, ctx, k, rng)`` (with a round context: the stochastic oracle), ``full_grad_clients(W, sel)``,
    ``F(w)``, ``Phi(w)``, ``reg``, ``dual_norm_sq(V)``, ``x0()``."""

    name = "quadratic_clients"
    keys = ("Q", "c", "e")
    dims = ("pp", "p", "")

    def __init__(self, insts: Sequence[QuadInstance]):
        insts = list(insts)
        first = insts[0]
        for i in insts:
            if (i.c.shape != first.c.shape or i.Q.shape != first.Q.shape or i.noise != first.noise
                    or i.K != first.K or i.geometry != first.geometry):
                raise ValueError("a batch needs instances of one shape, noise kind, K and geometry")
        self.instances = insts
        self.B, self.M, self.d, self.K = len(insts), first.M, first.d, first.K
        self.Q = np.stack([i.Q for i in insts])             # (B, Mq, d, d)
        self.c = np.stack([i.c for i in insts])             # (B, M, d)
        self.e = np.stack([i.e for i in insts])
        self.opts, self.lead_shape, self.m, self._p = {}, self.c.shape[:-1], None, self.d   # the Loss fields
        self.Qbar = self.Q.mean(1)
        self.cbar = self.c.mean(1)
        self.ebar = self.e.mean(1)
        self.noise = first.noise
        self.noise_scale = np.array([i.noise_scale for i in insts], dtype=float)
        self.stochastic = any(i.stochastic for i in insts)
        self.reg = stack_regularizers([i.reg for i in insts])
        self.geometry = first.geometry
        self.shared = self.Q.shape[1] == 1
        self._bidx = np.arange(self.B)[:, None]
        # shared Q: the gradients are one batched matmul W @ Q^T (3x faster than einsum at small d)
        self._QT = np.ascontiguousarray(self.Q[:, 0].swapaxes(-1, -2)) if self.shared else None
        self._sd_full = {}
        self._c_full = {}
        self._fused = {}
        if self.geometry == "Q":
            self._Qinv = np.linalg.inv(self.Qbar)
            self._nQ = np.linalg.norm(self.Qbar, 2, axis=(-2, -1))

    def x0(self):
        return np.stack([i.x0() for i in self.instances])

    def start_round(self, sel, rng):
        return sel

    def full_grad_clients(self, W, sel=None):
        if self.shared:
            g = np.matmul(W, self._QT)
        else:
            Qs = self.Q if sel is None else self.Q[self._bidx, sel]
            g = np.einsum("bsij,bsj->bsi", Qs, W)
        g += self.c if sel is None else self.c[self._bidx, sel]
        return g

    def _spread(self, cache: dict, shape, a):
        """``a`` broadcast to ``shape``, contiguous, made once per shape."""
        out = cache.get(shape)
        if out is None:
            out = cache[shape] = np.ascontiguousarray(np.broadcast_to(a, shape), dtype=float)
        return out

    def _fused_inputs(self, shape):
        """``(compiled kernel, c, sd)`` for :func:`fedcheck.problems.compiled.quad_noisy_grad` at ``shape``,
        spread and checked once per shape (the round loop calls the kernel directly); ``None``: numpy."""
        fused = self._fused.get(shape)
        if fused is None:
            from fedcheck.problems import compiled as kernels
            c = self._spread(self._c_full, shape, self.c)
            sd = self._spread(self._sd_full, shape, self.noise_scale[:, None, None])
            ok = kernels.quad_noisy_grad(np.zeros(shape), self._QT, c, np.zeros(shape), sd) is not None
            fused = self._fused[shape] = (kernels._quad_noisy_grad_compiled, c, sd) if ok else False
        return fused or None

    def _unscaled_noise(self, shape, rng):
        xi = rng.standard_normal(shape)
        if self.noise == "sphere":
            xi /= np.linalg.norm(xi, axis=-1, keepdims=True)
        return xi

    def noise_draw(self, shape, rng):
        if self.noise == "none":
            return None
        xi = self._unscaled_noise(shape, rng)
        xi *= self._spread(self._sd_full, shape, self.noise_scale[:, None, None])   # same products as (B,1,1)
        return xi

    def grad(self, W, ctx=_FULL, k=None, rng=None):
        if ctx is _FULL:            # the Loss interface: the exact per-client gradients at X = W
            return self.full_grad_clients(W)
        if self.noise != "none" and self.shared and ctx is None:   # every client: one compiled pass
            fused = self._fused_inputs(W.shape)
            if fused is not None and W.dtype == np.float64 and W.flags.c_contiguous:
                fn, c, sd = fused   # the same numbers as noise_draw's, scaled inside the pass
                return fn(W, self._QT, c, self._unscaled_noise(W.shape, rng), sd, np.empty(W.shape))
        g = self.full_grad_clients(W, ctx)
        xi = self.noise_draw(W.shape, rng)
        if xi is not None:
            g += xi
        return g

    def value(self, X):
        """Per-client ``f_i(X_i)``, ``X`` of shape ``(B, M, d)``."""
        QX = self.full_grad_clients(X) - self.c
        return 0.5 * np.einsum("bsi,bsi->bs", X, QX) + np.einsum("bsi,bsi->bs", X, self.c) + self.e

    def smoothness(self):
        return np.broadcast_to(np.linalg.eigvalsh(self.Q)[..., -1], self.lead_shape)

    def cvx(self, k, i, x):
        import cvxpy as cp
        Q = self.Q[k, 0 if self.shared else i]
        return 0.5 * cp.quad_form(x, cp.psd_wrap(0.5 * (Q + Q.T))) + self.c[k, i] @ x + self.e[k, i]

    def map(self, fn):
        raise TypeError("QuadraticClients is built from instances: use take(k) or stack(batches)")

    def take(self, k: int) -> "QuadraticClients":
        """Instance ``k``, as a batch of one (the engine's shapes)."""
        return QuadraticClients([self.instances[k]])

    @classmethod
    def stack(cls, losses):
        return cls([i for l in losses for i in l.instances])

    def F(self, w):
        w = np.asarray(w)
        if w.ndim == 2 and w.dtype == np.float64:       # the server point, every round: compiled
            from fedcheck.problems.compiled import quad_value
            v = quad_value(w if w.flags.c_contiguous else np.ascontiguousarray(w), self.Qbar, self.cbar, self.ebar)
            if v is not None:
                return v
        return 0.5 * np.einsum("bi,bij,bj->b", w, self.Qbar, w) + np.einsum("bi,bi->b", w, self.cbar) + self.ebar

    def Phi(self, w):
        return self.F(w) + self.reg.value(w)

    def dual_norm_sq(self, V):
        if self.geometry == "euclidean":
            return (V * V).sum(-1)
        q = np.einsum("b...i,bij,b...j->b...", V, self._Qinv, V)
        return self._nQ.reshape((-1,) + (1,) * (q.ndim - 1)) * q


# =============================================================================================
# finite-sum clients (experiments)
@dataclass
class FiniteSumInstance:
    """Client data ``X (M, n, d)``, ``y (M, n)``; ``loss`` is ``lsq`` (``(x^T w - y)^2``, the paper's
    (5.1) without a 1/2) or ``logistic`` (labels +-1).  A round is one local epoch of minibatches of
    size ``batch`` (``K = ceil(n / batch)``; when ``batch`` does not divide ``n`` the epoch's last minibatch
    has the ``n mod batch`` samples left, as the paper's 128 samples in minibatches of 10), on
    ``clients_per_round`` clients drawn uniformly."""

    X: np.ndarray
    y: np.ndarray
    loss: str
    reg: Regularizer
    batch_size: int
    clients_per_round: int
    seed: int | None = None
    source: str = "user"
    truth: dict = field(default_factory=dict)
    validation: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)

    kind = "finite_sum"
    noise = "minibatch"
    geometry = "euclidean"

    def __post_init__(self):
        if not 1 <= self.batch_size <= self.X.shape[1]:
            raise ValueError(f"the batch size must be in [1, n = {self.X.shape[1]}], not {self.batch_size}")

    @property
    def M(self):
        return self.X.shape[0]

    @property
    def n(self):
        return self.X.shape[1]

    @property
    def d(self):
        return self.X.shape[2]

    @property
    def K(self):
        return -(-self.n // self.batch_size)

    stochastic = True

    def x0(self):
        return np.zeros(self.d)

    def quadratic(self):
        """``(Q, c, e)`` of ``F = 1/2 w^T Q w + c^T w + e`` (least squares), computed once: the solver's
        certificate asks for it every few iterations (8.6 GFLOP each at the paper-size LASSO)."""
        if self.loss != "lsq":
            return None
        if "_quad" not in self.__dict__:
            Xp = self.X.reshape(-1, self.d)
            yp = self.y.reshape(-1)
            N = Xp.shape[0]
            self.__dict__["_quad"] = (2 * Xp.T @ Xp / N, -2 * Xp.T @ yp / N, float(yp @ yp / N))
        return self.__dict__["_quad"]

    def F(self, w):
        return _fs_value(self.loss, self.X.reshape(-1, self.d), self.y.reshape(-1), np.asarray(w, dtype=float))

    def grad_F(self, w):
        if self.loss == "lsq" and self.X.size > CVX_FACTOR_SIZE:     # many samples: Q w + c (d x d, Q once)
            Q, c, _ = self.quadratic()
            return Q @ np.asarray(w, dtype=float) + c
        return _fs_grad(self.loss, self.X.reshape(-1, self.d), self.y.reshape(-1), np.asarray(w, dtype=float))

    def Phi(self, w):
        return self.F(w) + self.reg.value(w)

    def smoothness(self):
        Xp = self.X.reshape(-1, self.d)
        s2 = np.linalg.norm(Xp, 2) ** 2 / Xp.shape[0]
        return 2 * s2 if self.loss == "lsq" else s2 / 4

    def cvx_F(self, x):
        import cvxpy as cp
        Xp = self.X.reshape(-1, self.d)
        yp = self.y.reshape(-1)
        if self.loss == "lsq" and Xp.size > CVX_FACTOR_SIZE and Xp.shape[0] > 2 * self.d:
            # many samples (the paper-size LASSO: 8,192 x 1,025): the same objective through the Cholesky factor
            # of the Gram matrix, ||Xp x - y||^2 = ||L^T x - v||^2 + ||y||^2 - ||v||^2 with L v = Xp^T y (d rows)
            L = np.linalg.cholesky(Xp.T @ Xp)
            v = np.linalg.solve(L, Xp.T @ yp)
            return (cp.sum_squares(L.T @ x - v) + max(float(yp @ yp - v @ v), 0.0)) / Xp.shape[0]
        if self.loss == "lsq":
            return cp.sum_squares(Xp @ x - yp) / Xp.shape[0]
        return cp.sum(cp.logistic(-cp.multiply(yp, Xp @ x))) / Xp.shape[0]

    def content_hash(self) -> str:
        h = hashlib.sha256()
        for a in (self.X, self.y):
            a = np.ascontiguousarray(a, dtype=np.float64)
            h.update(str(a.shape).encode())
            h.update(a.tobytes())
        h.update(json.dumps([self.loss, self.reg.spec()], sort_keys=True).encode())
        return h.hexdigest()

    def describe(self) -> dict:
        return {"kind": self.kind, "source": self.source, "seed": self.seed, "loss": self.loss, "M": self.M,
                "n": self.n, "d": self.d, "K": self.K, "batch": self.batch_size,
                "clients_per_round": self.clients_per_round, "reg": self.reg.spec(), "params": self.params,
                "hash": self.content_hash()[:16]}

    def batch(self, insts):
        return FiniteSumClients(insts)


class FiniteSumLoss(Loss):
    """Finite-sum least squares ``f_i(w) = (1/m) sum_j (x_ij^T w - y_ij)^2`` (no 1/2, as in Appendix A) or
    logistic ``f_i(w) = (1/m) sum_j log(1 + exp(-y_ij x_ij^T w))`` (option ``kind``), on the one loss interface:
    arrays ``X`` ``(..., n, m, p)`` and ``y`` ``(..., n, m)`` (instances, clients, samples), ``value(W)`` /
    ``grad(W)`` per client at ``W`` ``(..., n, p)``.  :meth:`pooled_value` / :meth:`pooled_grad` are ``F`` and
    ``grad F`` over all samples at once, the formulas the solver, the recorders and the baselines use."""

    name = "finite_sum"
    keys = ("X", "y")
    dims = ("mp", "m")
    options = {"kind": ("lsq", "logistic")}

    @staticmethod
    def residual(kind, z, y, m):
        """``d f / d z`` per sample over ``m``: the weights of the gradient ``sum_j r_j x_j``."""
        if kind == "lsq":
            return 2.0 * (z - y) / m
        return -y * 0.5 * (1 - np.tanh(0.5 * y * z)) / m     # -y sigmoid(-y z) / m

    @staticmethod
    def pooled_value(kind, X, y, w):
        """``F(w)`` over the rows of ``X`` ``(..., N, p)`` (one point per leading index when ``w.ndim > 1``)."""
        z = np.einsum("...nd,...d->...n", X, w) if w.ndim > 1 else X @ w
        if kind == "lsq":
            return ((z - y) ** 2).mean(-1)
        return np.logaddexp(0.0, -y * z).mean(-1)

    @staticmethod
    def pooled_grad(kind, X, y, w):
        """``grad F(w)`` over the rows of ``X`` ``(N, p)``."""
        z = X @ w
        if kind == "lsq":
            return 2 * X.T @ (z - y) / len(y)
        s = 0.5 * (1 - np.tanh(0.5 * y * z))  # sigmoid(-y z)
        return -X.T @ (y * s) / len(y)

    def value(self, W):
        z = np.einsum("...mp,...p->...m", self.X, W)
        if self.opts["kind"] == "lsq":
            return ((z - self.y) ** 2).mean(-1)
        return np.logaddexp(0.0, -self.y * z).mean(-1)

    def grad(self, W):
        z = np.einsum("...mp,...p->...m", self.X, W)
        return np.einsum("...mp,...m->...p", self.X, self.residual(self.opts["kind"], z, self.y, self.m))

    def smoothness(self):
        lam = lam_max_gram(self.X) / self.m
        return 2 * lam if self.opts["kind"] == "lsq" else lam / 4

    def cvx(self, k, i, x):
        import cvxpy as cp
        X, y = self._client("X", k, i), self._client("y", k, i)
        if self.opts["kind"] == "lsq":
            return cp.sum_squares(X @ x - y) / self.m
        return cp.sum(cp.logistic(-cp.multiply(y, X @ x))) / self.m


def _fs_value(loss, X, y, w):
    """``F(w)`` of finite-sum ``loss`` (``"lsq"`` or ``"logistic"``): :meth:`FiniteSumLoss.pooled_value`."""
    return FiniteSumLoss.pooled_value(loss, X, y, w)


def _fs_grad(loss, X, y, w):
    """``grad F(w)``: :meth:`FiniteSumLoss.pooled_grad`."""
    return FiniteSumLoss.pooled_grad(loss, X, y, w)


class FiniteSumClients(FiniteSumLoss):
    """A batch of :class:`FiniteSumInstance` for the engine (same shapes, loss and regularizer kind): the
    :class:`FiniteSumLoss` of the batch (``X`` ``(B, M, n, d)``, ``y`` ``(B, M, n)``; ``grad(W)`` without a
    round context is the exact per-client gradient) with the engine's stochastic oracle
    ``grad(W, ctx, k, rng)`` (minibatch ``k`` of the round's permutation).

    One instance repeated (a grid of step sizes on one data set) whose stack would exceed
    :data:`SHARED_DATA_BYTES` keeps its data once (``shared``): ``X`` is a read-only broadcast view, a round
    keeps the selected clients' indices, and each step gathers only its minibatch rows -- the same samples,
    the same random draws, without ``B`` copies of the data (the paper-size federated LASSO: 392 runs of
    67 MB each)."""

    def __init__(self, insts: Sequence[FiniteSumInstance]):
        insts = list(insts)
        first = insts[0]
        for i in insts:
            if i.X.shape != first.X.shape or i.loss != first.loss or i.batch_size != first.batch_size:
                raise ValueError("a batch needs finite-sum instances of one shape, loss and batch size")
        self.instances = insts
        self.shared = len(insts) > 1 and all(i is first for i in insts) and \
            len(insts) * first.X.nbytes > SHARED_DATA_BYTES
        if self.shared:
            self.X = np.broadcast_to(first.X, (len(insts),) + first.X.shape)
            self.y = np.broadcast_to(first.y, (len(insts),) + first.y.shape)
        else:
            self.X = np.stack([i.X for i in insts])      # (B, M, n, d)
            self.y = np.stack([i.y for i in insts])      # (B, M, n)
        Loss.__init__(self, self.X, self.y, kind=first.loss)
        self.B, self.M, self.n_samples, self.d = self.X.shape       # n (the Loss's) = M clients
        self.K, self.b, self.loss = first.K, first.batch_size, first.loss
        self.reg = stack_regularizers([i.reg for i in insts])
        self.stochastic = True
        self.geometry = "euclidean"
        self._bidx = np.arange(self.B)[:, None]
        if self.shared:
            self._rows = first.X.reshape(-1, self.d)       # (M n, d): client m's sample j is row m n + j
            self._yrows = first.y.reshape(-1)
        self.Xp = self.X.reshape(self.B, -1, self.d)
        self.yp = self.y.reshape(self.B, -1)

    def x0(self):
        return np.zeros((self.B, self.d))

    def start_round(self, sel, rng):
        """The selected clients' data and one random permutation of each client's samples (an epoch); with
        shared data, the selected clients' indices instead of their data."""
        if self.shared:
            cl = np.broadcast_to(np.arange(self.M), (self.B, self.M)) if sel is None else sel
            return cl, None, np.argsort(rng.random(cl.shape + (self.n_samples,)), axis=-1)
        Xs = self.X if sel is None else self.X[self._bidx, sel]
        ys = self.y if sel is None else self.y[self._bidx, sel]
        perm = np.argsort(rng.random(ys.shape), axis=-1)
        return Xs, ys, perm

    def grad(self, W, ctx=_FULL, k=None, rng=None):
        if ctx is _FULL:            # the Loss interface
            return FiniteSumLoss.grad(self, W)
        Xs, ys, perm = ctx
        idx = perm[..., k * self.b:(k + 1) * self.b]     # the epoch's last minibatch may be shorter
        if ys is None:              # shared data: gather the minibatch rows of the selected clients (one take)
            rows = Xs[..., None] * self.n_samples + idx
            Xb = np.take(self._rows, rows, axis=0)
            yb = np.take(self._yrows, rows)
            z = np.matmul(Xb, W[..., None])[..., 0]
            r = self.residual(self.loss, z, yb, idx.shape[-1])
            return np.matmul(r[..., None, :], Xb)[..., 0, :]
        else:
            Xb = take_rows(Xs, idx)
            yb = take_rows(ys, idx)
        z = np.einsum("bsnd,bsd->bsn", Xb, W)
        return np.einsum("bsnd,bsn->bsd", Xb, self.residual(self.loss, z, yb, idx.shape[-1]))

    def map(self, fn):
        raise TypeError("FiniteSumClients is built from instances: use FiniteSumLoss(X, y, kind=...) for arrays")

    def take(self, k: int) -> "FiniteSumClients":
        """Instance ``k``, as a batch of one (the engine's shapes)."""
        return FiniteSumClients([self.instances[k]])

    @classmethod
    def stack(cls, losses):
        return cls([i for l in losses for i in l.instances])

    def F(self, w):
        if self.shared:             # one data set: one product for every run
            z = (self.Xp[0] @ w.T).T
        else:
            z = np.einsum("bnd,bd->bn", self.Xp, w)
        if self.loss == "lsq":
            return ((z - self.yp) ** 2).mean(-1)
        return np.logaddexp(0.0, -self.yp * z).mean(-1)

    def Phi(self, w):
        return self.F(w) + self.reg.value(w)

    def dual_norm_sq(self, V):
        return (V * V).sum(-1)


def batch_of(insts):
    """The engine's batch object for instances of one kind."""
    return insts[0].batch(insts)


# =============================================================================================
# exact optima
SOLVE_VERSION = "composite-v1"


def _large_lsq(inst) -> bool:
    """A least-squares finite-sum instance above :data:`CVX_FACTOR_SIZE` (the paper-size data of FedDualAvg's A.2-A.3:
    8,192 x 1,025): its solver works from the quadratic ``(Q, c, e)``, factored once."""
    return isinstance(inst, FiniteSumInstance) and inst.loss == "lsq" and inst.X.size > CVX_FACTOR_SIZE


def _q_solve(inst, Q, v):
    """``Q^{-1} v``, or ``None`` when ``Q`` is not positive definite: a large least-squares instance keeps its Cholesky
    factor (the certificate asked every 25 polish iterations for an eigendecomposition and a solve of the 1,025 x
    1,025 ``Q``, ~1 GFLOP each); the others as before (``eigvalsh``, ``solve``: the same bits)."""
    if not _large_lsq(inst):
        return None if np.linalg.eigvalsh(Q)[0] <= 0 else np.linalg.solve(Q, v)
    if "_qcho" not in inst.__dict__:
        import scipy.linalg
        try:
            inst.__dict__["_qcho"] = scipy.linalg.cho_factor(Q)
        except np.linalg.LinAlgError:
            inst.__dict__["_qcho"] = None
    import scipy.linalg
    cho = inst.__dict__["_qcho"]
    return None if cho is None else scipy.linalg.cho_solve(cho, v)


def _fenchel_lower(inst, w) -> float:
    """``Phi* >= -F^*(-u) - psi^*(u)`` with ``u`` = ``-grad F(w)`` projected onto ``dom psi^*``."""
    quad = inst.quadratic()
    if quad is None:
        return float("nan")
    Q, c, e = quad
    u = inst.reg.dual_project(-(Q @ w + c))
    v = u + c
    Qv = _q_solve(inst, Q, v)
    if Qv is None:
        return float("nan")
    return float(-0.5 * v @ Qv + e - inst.reg.conj(u))


#: iterations without the certified gap halving after which a large instance's polish stops (:func:`_polish`)
STALL_ITERS = 1000


def _polish(inst, w, iters: int = 20000):
    """Accelerated prox-gradient (FISTA with restart, step 1/L) from the solver's point; keeps the point
    with the best certificate (or the best objective when there is no certificate)."""
    quad = inst.quadratic()
    Lf = float(np.linalg.norm(quad[0], 2)) if quad is not None else float(inst.smoothness())
    reg = inst.reg
    x = reg.prox(np.asarray(w, dtype=float), 0.0)
    y, tk = x.copy(), 1.0
    phi = inst.Phi
    if _large_lsq(inst):      # Phi from the quadratic (d^2, not N d, flops); the best point's from the data, at the end
        Q, c, e = quad
        phi = lambda x: 0.5 * x @ (Q @ x) + c @ x + e + reg.value(x)
    fx = float(phi(x))
    best = (x.copy(), fx, _fenchel_lower(inst, x))
    target = POLICY.atol
    # a large instance stops when its certified gap has not shrunk for STALL_ITERS iterations: it is at the rounding
    # floor (A.3 at the paper's size ran all 20,000 iterations against a target gap of 64 eps, minutes per lambda)
    stall, last = (STALL_ITERS if _large_lsq(inst) else iters + 1), 0
    for it in range(iters):
        if it - last > stall:
            break
        xn = reg.prox(y - inst.grad_F(y) / Lf, 1.0 / Lf)
        fn = float(phi(xn))
        if fn > fx and tk > 1.0:  # the momentum step made things worse: restart from x (a plain step next)
            y, tk = x.copy(), 1.0
            continue
        tn = 0.5 * (1 + np.sqrt(1 + 4 * tk * tk))
        y = xn + ((tk - 1) / tn) * (xn - x)
        x, fx, tk = xn, fn, tn
        if it % 25 == 0 or it == iters - 1:
            lo = _fenchel_lower(inst, x)
            if np.isfinite(lo):
                if fx - lo < best[1] - best[2] or not np.isfinite(best[2]):
                    if not fx - lo >= 0.5 * (best[1] - best[2]):
                        last = it          # progress: the gap at least halved
                    best = (x.copy(), fx, lo)
                if best[1] - best[2] <= target * max(1.0, abs(best[1])):
                    break
            elif fx < best[1]:
                best = (x.copy(), fx, lo)
    return best if phi is inst.Phi else (best[0], float(inst.Phi(best[0])), best[2])


def _cache_key(inst) -> str:
    return hashlib.sha256(f"{inst.content_hash()}|{SOLVE_VERSION}|{solver_versions()}".encode()).hexdigest()


def solve_composite(inst, use_cache: bool = True) -> Solution:
    """``Phi* = min F + psi`` of one instance: cvxpy with Clarabel (status recorded), polished by
    prox-gradient and certified by Fenchel duality when ``F`` is a positive-definite quadratic.  The one
    :class:`~fedcheck.problems.solve.Solution`: ``F_star`` = Phi at the polished point, ``F_lower`` the Fenchel
    bound (NaN, ``certified=False``, without a certificate), ``info["dist_bound"]`` = sqrt(2 gap/mu)."""
    key = _cache_key(inst)
    if use_cache:
        hit = COMPOSITE_CACHE.load(key, lambda sol: verify_composite(inst, sol))
        if hit is not None:
            return hit
    import cvxpy as cp
    x = cp.Variable(inst.d)
    prob = cp.Problem(cp.Minimize(inst.cvx_F(x) + inst.reg.cvx(x)), inst.reg.cvx_constraints(x))
    t0 = time.perf_counter()
    notes = []
    try:
        prob.solve(solver=cp.CLARABEL)
        status = str(prob.status)
    except cp.error.SolverError as e:
        status, notes = "solver_error", [str(e)]
    elapsed = time.perf_counter() - t0
    if x.value is None or status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        nan = float("nan")
        return Solution(nan, nan, np.full(inst.d, np.nan), status, "CLARABEL", solver_versions(), elapsed, certified=False,
                        info={"dist_bound": nan}, notes=notes)
    w, phi, lo = _polish(inst, np.asarray(x.value))
    certified = bool(np.isfinite(lo))
    gap = max(phi - lo, 0.0) if certified else float("nan")
    dist = float("nan")
    quad = inst.quadratic()
    if certified:
        mu = float(np.linalg.eigvalsh(quad[0])[0])
        dist = float(np.sqrt(2 * gap / mu))
        notes.append(f"Fenchel certificate: Phi* in [{lo:.17g}, {phi:.17g}]; ||w_hat - w*|| <= sqrt(2 gap/mu) "
                     f"with mu = lambda_min(Qbar) = {mu:.4g}")
    else:
        notes.append("no certificate (F is not a positive-definite quadratic): Phi* from the polished solver point")
        lo = float("nan")
    sol = Solution(float(phi), float(lo), np.asarray(w), status, "CLARABEL",
                   solver_versions(), elapsed, certified=certified, info={"dist_bound": dist}, notes=notes)
    if use_cache and status == "optimal":
        COMPOSITE_CACHE.store(key, sol)
    return sol


COMPOSITE_CACHE = SolutionCache(SOLVE_VERSION)


def verify_composite(inst, sol: Solution) -> str | None:
    """Re-verify a stored composite solution without trusting it: shape, status, Phi at the stored point, and
    (certified) the Fenchel lower bound recomputed at that point."""
    x = np.asarray(sol.x_star, dtype=float)
    if x.shape != (inst.d,):
        return f"shape {x.shape} of the stored point for d = {inst.d}"
    if sol.status != "optimal" or not np.isfinite(sol.F_star):
        return sol.reason or "not a finite optimum"
    phi = float(inst.Phi(x))
    if not close(phi, sol.F_star):
        return f"Phi at the stored point is {phi:.17g}, the entry says {sol.F_star:.17g}"
    if sol.certified:
        lo = _fenchel_lower(inst, x)
        if not (np.isfinite(lo) and close(lo, sol.F_lower)):
            return f"the Fenchel lower bound at the stored point is {lo:.17g}, the entry says {sol.F_lower:.17g}"
    return None


# =============================================================================================
# saving problems (refuting instances)
def save_problem(inst, path: str | os.PathLike, extra: dict | None = None) -> list[str]:
    """Write ``path.npz`` (the arrays) and ``path.json`` (regularizer, noise, K, seed, ``extra``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(inst, QuadInstance):
        arrays = {"Q": inst.Q, "c": inst.c, "e": inst.e}
        if inst.w0 is not None:
            arrays["w0"] = inst.w0
        meta = {"kind": "quadratic", "K": inst.K, "noise": inst.noise, "noise_scale": inst.noise_scale,
                "geometry": inst.geometry}
    else:
        arrays = {"X": inst.X, "y": inst.y}
        meta = {"kind": "finite_sum", "loss": inst.loss, "batch_size": inst.batch_size,
                "clients_per_round": inst.clients_per_round}
    meta.update(reg=inst.reg.spec(), seed=inst.seed, source=inst.source, params=inst.params,
                format="fedcheck.composite/1",
                description="F_m(w) = 1/2 w^T Q_m w + c_m^T w + e_m (Q of shape (M|1, d, d)), psi = reg"
                if meta["kind"] == "quadratic" else "client data X (M, n, d), y (M, n)")
    meta["extra"] = extra or {}
    stem = path.name[:-4] if path.name.endswith((".npz", ".json")) else path.name
    stem = stem[:-1] if stem.endswith(".") else stem
    npz = path.parent / f"{stem}.npz"
    atomic_write(npz, lambda fh: np.savez(fh, **arrays))
    js = path.parent / f"{stem}.json"
    atomic_write(js, lambda fh: fh.write(json.dumps(meta, indent=1, default=_json_default).encode()))
    return [str(npz), str(js)]


def _json_default(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    return str(o)


def load_problem(path: str | os.PathLike):
    """Read a problem written by :func:`save_problem` (no pickle)."""
    path = Path(path)
    stem = path.name[:-4] if path.name.endswith(".npz") else (path.name[:-5] if path.name.endswith(".json") else path.name)
    meta = json.loads((path.parent / f"{stem}.json").read_text())
    with np.load(path.parent / f"{stem}.npz", allow_pickle=False) as z:
        arr = {k: z[k] for k in z.files}
    reg = make_regularizer(meta["reg"])
    if meta["kind"] == "quadratic":
        return QuadInstance(Q=arr["Q"], c=arr["c"], e=arr["e"], reg=reg, K=int(meta["K"]), noise=meta["noise"],
                            noise_scale=float(meta["noise_scale"]), geometry=meta["geometry"], seed=meta["seed"],
                            source=f"file:{path}", w0=arr.get("w0"), params=meta.get("params", {}))
    return FiniteSumInstance(X=arr["X"], y=arr["y"], loss=meta["loss"], reg=reg, batch_size=int(meta["batch_size"]),
                             clients_per_round=int(meta["clients_per_round"]), seed=meta["seed"],
                             source=f"file:{path}", params=meta.get("params", {}))

