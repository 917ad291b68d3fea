"""Federated composite problems for the FedDualAvg paper (Yuan, Zaheer, Reddi, ICML 2021).

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

Families (seeded with :func:`fedcheck.instances.instance_rng`) follow ``shared/notes/feddualavg.md``
Sec. 6.1: :class:`SharedQuadraticFamily` (F1), :class:`ConstrainedQuadraticFamily` (F2), the
curved-boundary instance of Sec. 4.2 (:func:`curse_instance`), the Lemma C.3 instance of Sec. 4.6
(:func:`lemma_c3_instance`), and the scaled-down experiment generators of Sec. 5
(:func:`lasso_experiment`, :func:`matrix_sensing_experiment`, :func:`breast_cancer_logistic`).

The experiment of the rate theorems (expectation bounds at horizon-dependent steps, with a swept limit):
:class:`HorizonExpectations`, a bound test's experiment (:mod:`fedcheck.core.evidence`).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from fedcheck.core import verdict as V
from fedcheck.core.evidence import Comparison, Finding, Observations, Observed
from fedcheck.core.results import atomic_write
from fedcheck.core.symbols import R as R_sym
from fedcheck.problems.constants import InstanceContext, Value, _trs_max, resolve_all
from fedcheck.problems.instances import instance_rng
from fedcheck.problems.losses import Loss, _lam_max_gram
from fedcheck.problems.regularizers import (L1, L1BallIndicator, L2BallIndicator, Nuclear, Regularizer, Zero, make_regularizer,
                            stack_regularizers)
from fedcheck.problems.solve import Solution, SolutionCache, close
from fedcheck.core.verdict import POLICY

__all__ = ["QuadInstance", "QuadraticClients", "FiniteSumInstance", "FiniteSumClients", "FiniteSumLoss",
           "solve_composite", "SharedQuadraticFamily", "ConstrainedQuadraticFamily", "curse_instance",
           "lemma_c3_instance", "lasso_experiment", "matrix_sensing_experiment", "breast_cancer_logistic",
           "save_problem", "load_problem", "batch_of", "HorizonExpectations", "geometric_horizons", "fit_horizon_rate",
           "evaluate_expr"]


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
            return float(np.sqrt(_trs_max(A, -b, float(reg.radius)))), True
        if isinstance(reg, L1BallIndicator):
            r = float(reg.radius)
            V = np.concatenate([r * A.T, -r * A.T]) + b  # rows A(+-r e_j) + b
            return float(np.linalg.norm(V, axis=1).max()), True
        return float("inf"), True

    # -- batch ----------------------------------------------------------------------------------
    def batch(self, insts: "Sequence[QuadInstance]") -> "QuadraticClients":
        return QuadraticClients(insts)


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
        """``(compiled kernel, c, sd)`` for :func:`fedcheck.algorithms.kernels.quad_noisy_grad` at ``shape``,
        spread and checked once per shape (the round loop calls the kernel directly); ``None``: numpy."""
        fused = self._fused.get(shape)
        if fused is None:
            from fedcheck.algorithms import kernels
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
            from fedcheck.algorithms.kernels import quad_value
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
    size ``batch`` (``K = n / batch``), on ``clients_per_round`` clients drawn uniformly."""

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
        if self.X.shape[1] % self.batch_size:
            raise ValueError("n must be a multiple of the batch size (one epoch = K full minibatches)")

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
        return self.n // self.batch_size

    stochastic = True

    def x0(self):
        return np.zeros(self.d)

    def quadratic(self):
        if self.loss != "lsq":
            return None
        Xp = self.X.reshape(-1, self.d)
        yp = self.y.reshape(-1)
        N = Xp.shape[0]
        return 2 * Xp.T @ Xp / N, -2 * Xp.T @ yp / N, float(yp @ yp / N)

    def F(self, w):
        return _fs_value(self.loss, self.X.reshape(-1, self.d), self.y.reshape(-1), np.asarray(w, dtype=float))

    def grad_F(self, w):
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
        lam = _lam_max_gram(self.X) / self.m
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
    ``grad(W, ctx, k, rng)`` (minibatch ``k`` of the round's permutation)."""

    def __init__(self, insts: Sequence[FiniteSumInstance]):
        insts = list(insts)
        first = insts[0]
        for i in insts:
            if i.X.shape != first.X.shape or i.loss != first.loss or i.batch_size != first.batch_size:
                raise ValueError("a batch needs finite-sum instances of one shape, loss and batch size")
        self.instances = insts
        self.X = np.stack([i.X for i in insts])      # (B, M, n, d)
        self.y = np.stack([i.y for i in insts])      # (B, M, n)
        Loss.__init__(self, self.X, self.y, kind=first.loss)
        self.B, self.M, self.n_samples, self.d = self.X.shape       # n (the Loss's) = M clients
        self.K, self.b, self.loss = first.K, first.batch_size, first.loss
        self.reg = stack_regularizers([i.reg for i in insts])
        self.stochastic = True
        self.geometry = "euclidean"
        self._bidx = np.arange(self.B)[:, None]
        self.Xp = self.X.reshape(self.B, -1, self.d)
        self.yp = self.y.reshape(self.B, -1)

    def x0(self):
        return np.zeros((self.B, self.d))

    def start_round(self, sel, rng):
        """The selected clients' data and one random permutation of each client's samples (an epoch)."""
        Xs = self.X if sel is None else self.X[self._bidx, sel]
        ys = self.y if sel is None else self.y[self._bidx, sel]
        perm = np.argsort(rng.random(ys.shape), axis=-1)
        return Xs, ys, perm

    def grad(self, W, ctx=_FULL, k=None, rng=None):
        if ctx is _FULL:            # the Loss interface
            return FiniteSumLoss.grad(self, W)
        Xs, ys, perm = ctx
        idx = perm[..., k * self.b:(k + 1) * self.b]
        Xb = np.take_along_axis(Xs, idx[..., None], axis=2)
        yb = np.take_along_axis(ys, idx, axis=2)
        z = np.einsum("bsnd,bsd->bsn", Xb, W)
        return np.einsum("bsnd,bsn->bsd", Xb, self.residual(self.loss, z, yb, self.b))

    def map(self, fn):
        raise TypeError("FiniteSumClients is built from instances: use FiniteSumLoss(X, y, kind=...) for arrays")

    def take(self, k: int) -> "FiniteSumClients":
        """Instance ``k``, as a batch of one (the engine's shapes)."""
        return FiniteSumClients([self.instances[k]])

    @classmethod
    def stack(cls, losses):
        return cls([i for l in losses for i in l.instances])

    def F(self, w):
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


def _versions() -> str:
    import clarabel
    import cvxpy
    return f"cvxpy={cvxpy.__version__};clarabel={getattr(clarabel, '__version__', '?')}"


def _fenchel_lower(inst, w) -> float:
    """``Phi* >= -F^*(-u) - psi^*(u)`` with ``u`` = ``-grad F(w)`` projected onto ``dom psi^*``."""
    quad = inst.quadratic()
    if quad is None:
        return float("nan")
    Q, c, e = quad
    if np.linalg.eigvalsh(Q)[0] <= 0:
        return float("nan")
    u = inst.reg.dual_project(-(Q @ w + c))
    v = u + c
    return float(-0.5 * v @ np.linalg.solve(Q, v) + e - inst.reg.conj(u))


def _polish(inst, w, iters: int = 20000):
    """Accelerated prox-gradient (FISTA with restart, step 1/L) from the solver's point; keeps the point
    with the best certificate (or the best objective when there is no certificate)."""
    quad = inst.quadratic()
    Lf = float(np.linalg.norm(quad[0], 2)) if quad is not None else float(inst.smoothness())
    reg = inst.reg
    x = reg.prox(np.asarray(w, dtype=float), 0.0)
    y, tk = x.copy(), 1.0
    fx = float(inst.Phi(x))
    best = (x.copy(), fx, _fenchel_lower(inst, x))
    target = POLICY.atol
    for it in range(iters):
        xn = reg.prox(y - inst.grad_F(y) / Lf, 1.0 / Lf)
        fn = float(inst.Phi(xn))
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
                    best = (x.copy(), fx, lo)
                if best[1] - best[2] <= target * max(1.0, abs(best[1])):
                    break
            elif fx < best[1]:
                best = (x.copy(), fx, lo)
    return best


def _cache_key(inst) -> str:
    return hashlib.sha256(f"{inst.content_hash()}|{SOLVE_VERSION}|{_versions()}".encode()).hexdigest()


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
        return Solution(nan, nan, np.full(inst.d, np.nan), status, "CLARABEL", _versions(), elapsed, certified=False,
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
                   _versions(), elapsed, certified=certified, info={"dist_bound": dist}, notes=notes)
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


# =============================================================================================
# families
@dataclass(frozen=True)
class SharedQuadraticFamily:
    """F1 (note Sec. 6.1): shared Hessian ``Q = A^T A / n_A + mu I``, ``F_m = 1/2 w^T Q w + c_m^T w`` with
    ``c_m = c_0 + tau N(0, I)``, Gaussian noise ``N(0, s^2 I)``, ``psi`` = ``l1`` (``lam``), ``nuclear``
    (``lam``, a ``p x p`` matrix with ``d = p^2``) or ``l2ball`` / ``l1ball`` (``radius``).  In the Q geometry of
    Assumption 2 every constant of Theorem 4.3 / D.1 is exact."""

    d: int = 8
    M: int = 4
    K: int = 5
    mu: float = 0.1
    tau: float = 0.5
    noise: float = 0.3
    reg: str = "l1"
    lam: float = 0.1
    radius: float = 1.0
    geometry: str = "Q"
    scale_c: float = 1.0

    @property
    def key(self) -> str:
        return ("feddualavg:F1:" + ":".join(f"{k}={getattr(self, k)}" for k in
                ("d", "M", "K", "mu", "tau", "noise", "reg", "lam", "radius", "geometry", "scale_c")))

    def draw(self, seed: int) -> QuadInstance:
        rng = instance_rng(seed, self.key)
        d = self.d
        A = rng.standard_normal((2 * d, d))
        Q = A.T @ A / (2 * d) + self.mu * np.eye(d)
        c0 = self.scale_c * rng.standard_normal(d)
        c = c0 + self.tau * rng.standard_normal((self.M, d))
        reg = _make_reg(self.reg, d, self.lam, self.radius)
        return QuadInstance(Q=Q, c=c, reg=reg, K=self.K, noise="gaussian" if self.noise > 0 else "none",
                            noise_scale=float(self.noise), geometry=self.geometry, seed=int(seed), source=self.key,
                            params={k: getattr(self, k) for k in ("d", "M", "K", "mu", "tau", "noise", "reg", "lam",
                                                                   "radius", "geometry")})


@dataclass(frozen=True)
class ConstrainedQuadraticFamily:
    """F2 (note Sec. 6.1): ``psi = chi_C`` with ``C`` an l2 or l1 ball, client Hessians
    ``Q_m = A_m^T A_m / n_A + mu I`` (different per client), ``c_m = c_0 + tau N(0, I)`` with ``c_0`` scaled so
    that the unconstrained optimum lies ``outside`` times the radius away (optimum on the boundary), noise
    uniform on the sphere of radius ``s`` (Assumption 3 needs bounded gradients: ``sigma = s`` and
    ``G = max_m sup_C ||Q_m w + c_m|| + s``, both exact)."""

    d: int = 6
    M: int = 4
    K: int = 5
    mu: float = 0.2
    tau: float = 0.5
    noise: float = 0.3
    ball: str = "l2ball"
    radius: float = 1.0
    outside: float = 2.0

    @property
    def key(self) -> str:
        return ("feddualavg:F2:" + ":".join(f"{k}={getattr(self, k)}" for k in
                ("d", "M", "K", "mu", "tau", "noise", "ball", "radius", "outside")))

    def draw(self, seed: int) -> QuadInstance:
        rng = instance_rng(seed, self.key)
        d, M = self.d, self.M
        A = rng.standard_normal((M, 2 * d, d))
        Q = np.einsum("mki,mkj->mij", A, A) / (2 * d) + self.mu * np.eye(d)
        u = rng.standard_normal(d)
        Qbar = Q.mean(0)
        # unconstrained minimizer -Qbar^-1 c0 at `outside * radius` (in the ball's own norm)
        target = u / (np.abs(u).sum() if self.ball == "l1ball" else np.linalg.norm(u)) * self.outside * self.radius
        c0 = -Qbar @ target
        c = c0 + self.tau * rng.standard_normal((M, d))
        reg = _make_reg(self.ball, d, 0.0, self.radius)
        return QuadInstance(Q=Q, c=c, reg=reg, K=self.K, noise="sphere" if self.noise > 0 else "none",
                            noise_scale=float(self.noise), geometry="euclidean", seed=int(seed), source=self.key,
                            params={k: getattr(self, k) for k in ("d", "M", "K", "mu", "tau", "noise", "ball",
                                                                   "radius", "outside")})


def _make_reg(kind, d, lam, radius) -> Regularizer:
    if kind == "l1":
        return L1(lam, d)
    if kind == "nuclear":
        p = int(round(np.sqrt(d)))
        if p * p != d:
            raise ValueError("the nuclear-norm family needs d = p^2")
        return Nuclear(lam, (p, p))
    if kind == "l2ball":
        return L2BallIndicator(radius, d)
    if kind == "l1ball":
        return L1BallIndicator(radius, d)
    if kind == "zero":
        return Zero(d)
    raise ValueError(f"unknown regularizer kind {kind!r}")


def curse_instance(K: int = 100, noise: float = 0.0) -> QuadInstance:
    """Note Sec. 4.2: ``d = M = 2``, ``C`` the unit l2 ball, ``F_m(w) = 1/2 ||w - a_m||^2`` with
    ``a_1 = (3, 1)``, ``a_2 = (3, -1)``; ``w* = (1, 0)``, ``Phi* = 2.5``.  FedMiD's server average of the
    clients' projected points stalls at ``avg_m Proj_C(a_m) = (3/sqrt(10), 0)`` for large ``eta_c K``."""
    a = np.array([[3.0, 1.0], [3.0, -1.0]])
    return QuadInstance(Q=np.eye(2)[None], c=-a, e=0.5 * (a * a).sum(1), reg=L2BallIndicator(1.0, 2), K=K,
                        noise="sphere" if noise > 0 else "none", noise_scale=float(noise), geometry="euclidean",
                        seed=None, source="feddualavg:curse:note-4.2", params={"a": a.tolist()})


def lemma_c3_instance(G: float = 1.0) -> QuadInstance:
    """Note Sec. 4.6: ``M = 2``, ``K = 1``, ``d = 1``, ``dom psi = [-1, 1]``, ``f_1(w) = G w``, ``f_2(w) = -G w``
    (exact gradients, ``sup ||grad f|| = G``)."""
    return QuadInstance(Q=np.zeros((1, 1, 1)), c=np.array([[G], [-G]]), reg=L2BallIndicator(1.0, 1), K=1,
                        noise="none", geometry="euclidean", seed=None, source="feddualavg:lemma-c3:note-4.6",
                        params={"G": G})


# ---------------------------------------------------------------------------------------------
# experiments of Section 5, scaled down
def _pick_lambda(make, grid, ok):
    """The first ``lam`` of ``grid`` whose exact solution satisfies ``ok`` (and the solutions tried)."""
    tried = []
    for lam in grid:
        inst = make(lam)
        sol = solve_composite(inst)
        tried.append((lam, sol))
        if sol.accurate and ok(sol.w_star):
            return inst, sol, tried
    return inst, sol, tried


def lasso_experiment(seed: int = 0, d: int = 32, d1: int = 4, M: int = 16, n: int = 32, batch: int = 4,
                     clients_per_round: int = 4, lam_grid=(0.05, 0.1, 0.2, 0.3, 0.5), threshold: float = 1e-2):
    """Federated LASSO (5.1)/(A.1)-(A.4) scaled down: ``w_real = [1_{d1}; 0]``, ``b_real ~ N(0,1)``,
    client means ``mu_m ~ N(0, I)``, ``x = mu_m + N(0, I)``, ``y = w_real^T x + b_real + N(0, 1)``; objective
    ``(1/M) sum_m mean (x^T w + b - y)^2 + lam ||w||_1`` with the bias unregularized (last coordinate).
    ``lam`` is the first value of ``lam_grid`` whose centralized solution has exactly the support of
    ``w_real`` (|w_i| >= threshold), as in the paper ("selected so the centralized solver recovers the
    sparse pattern")."""
    rng = instance_rng(seed, f"feddualavg:lasso:{d}:{d1}:{M}:{n}")
    w_real = np.r_[np.ones(d1), np.zeros(d - d1)]
    b_real = rng.standard_normal()
    mu = rng.standard_normal((M, 1, d))
    Xf = mu + rng.standard_normal((M, n, d))
    y = Xf @ w_real + b_real + rng.standard_normal((M, n))
    X = np.concatenate([Xf, np.ones((M, n, 1))], axis=-1)
    mask = np.r_[np.ones(d), 0.0]
    supp = w_real != 0

    def make(lam):
        return FiniteSumInstance(X=X, y=y, loss="lsq", reg=L1(lam, d + 1, mask), batch_size=batch,
                                 clients_per_round=clients_per_round, seed=seed, source="feddualavg:lasso",
                                 truth={"w_real": w_real, "b_real": b_real, "support": supp},
                                 params={"d": d, "d1": d1, "M": M, "n": n, "batch": batch, "lam": lam,
                                         "clients_per_round": clients_per_round, "threshold": threshold})
    inst, sol, tried = _pick_lambda(make, lam_grid, lambda w: np.array_equal(np.abs(w[:d]) >= threshold, supp))
    inst.params["lam_tried"] = [t[0] for t in tried]
    return inst, sol


def matrix_sensing_experiment(seed: int = 0, p: int = 6, rank: int = 2, M: int = 8, n: int = 32, batch: int = 4,
                              clients_per_round: int = 4, lam_grid=(0.05, 0.1, 0.2, 0.3, 0.5, 0.8),
                              threshold: float = 1e-2):
    """Nuclear-norm matrix estimation (5.2)/(A.5)-(A.8) scaled down: ``W_real = diag(1_rank, 0)``,
    ``X = mu_m + N(0, I)``, ``y = <W_real, X> + b_real + N(0, 1)``, objective ``(1/M) sum_m mean(<X, W> + b - y)^2
    + lam ||W||_*`` (bias unregularized); ``lam`` the first of ``lam_grid`` whose centralized solution has the
    exact rank (singular values > threshold)."""
    rng = instance_rng(seed, f"feddualavg:nuclear:{p}:{rank}:{M}:{n}")
    W_real = np.zeros((p, p))
    W_real[np.arange(rank), np.arange(rank)] = 1.0
    b_real = rng.standard_normal()
    mu = rng.standard_normal((M, 1, p * p))
    Xf = mu + rng.standard_normal((M, n, p * p))
    y = Xf @ W_real.ravel() + b_real + rng.standard_normal((M, n))
    X = np.concatenate([Xf, np.ones((M, n, 1))], axis=-1)

    def make(lam):
        return FiniteSumInstance(X=X, y=y, loss="lsq", reg=Nuclear(lam, (p, p), 1), batch_size=batch,
                                 clients_per_round=clients_per_round, seed=seed, source="feddualavg:nuclear",
                                 truth={"W_real": W_real, "b_real": b_real, "rank": rank},
                                 params={"p": p, "rank": rank, "M": M, "n": n, "batch": batch, "lam": lam,
                                         "clients_per_round": clients_per_round, "threshold": threshold})

    def ok(w):
        s = np.linalg.svd(w[:p * p].reshape(p, p), compute_uv=False)
        return int((s > threshold).sum()) == rank
    inst, sol, tried = _pick_lambda(make, lam_grid, ok)
    inst.params["lam_tried"] = [t[0] for t in tried]
    return inst, sol


def breast_cancer_logistic(seed: int = 0, M: int = 12, n: int = 32, batch: int = 4, clients_per_round: int = 4,
                           lam: float = 0.02):
    """Sparse (l1) logistic regression on scikit-learn's breast-cancer data (569 x 30), a stand-in for the
    paper's fMRI task (Sec. 5.3): features standardized, labels +-1, a bias column (unregularized); the
    samples sorted by the first principal component and dealt to ``M`` clients in contiguous blocks
    (heterogeneous clients, as sessions are), ``n`` training samples per client, the rest validation."""
    from sklearn.datasets import load_breast_cancer
    data = load_breast_cancer()
    Xa = (data.data - data.data.mean(0)) / data.data.std(0)
    ya = np.where(data.target == 1, 1.0, -1.0)
    rng = instance_rng(seed, "feddualavg:breast_cancer")
    order = rng.permutation(len(ya))
    Xa, ya = Xa[order], ya[order]
    ntr = M * n
    Xtr, ytr, Xva, yva = Xa[:ntr], ya[:ntr], Xa[ntr:], ya[ntr:]
    pc = np.linalg.svd(Xtr - Xtr.mean(0), full_matrices=False)[2][0]
    srt = np.argsort(Xtr @ pc)
    Xtr, ytr = Xtr[srt], ytr[srt]
    d = Xa.shape[1]
    X = np.concatenate([Xtr, np.ones((ntr, 1))], 1).reshape(M, n, d + 1)
    y = ytr.reshape(M, n)
    mask = np.r_[np.ones(d), 0.0]
    inst = FiniteSumInstance(X=X, y=y, loss="logistic", reg=L1(lam, d + 1, mask), batch_size=batch,
                             clients_per_round=clients_per_round, seed=seed, source="sklearn:breast_cancer",
                             validation={"X": np.concatenate([Xva, np.ones((len(yva), 1))], 1), "y": yva},
                             params={"M": M, "n": n, "batch": batch, "lam": lam,
                                     "clients_per_round": clients_per_round, "features": d,
                                     "validation_samples": int(len(yva))})
    return inst, solve_composite(inst)


# =============================================================================================
# the experiment of the rate theorems: expectation bounds at horizon-dependent parameters
from fedcheck.core.schedules import evaluate_expr  # noqa: E402  (one definition)


def geometric_horizons(lo: int, hi: int, points: int) -> tuple:
    """``points`` integers spaced geometrically from ``lo`` to ``hi`` (distinct, sorted)."""
    return tuple(sorted({int(round(x)) for x in np.geomspace(lo, hi, points)}))


def fit_horizon_rate(R, mean, floor, policy=POLICY) -> dict | None:
    """The one rate fitter over every horizon (``fit_rate(window="all")``): the slope of ``log mean`` against
    ``log R`` over the points above ``policy.resolution_factor * floor``; ``None`` with fewer than
    ``policy.fit_min_points``."""
    return V.fit_rate(R, mean, floor, policy, window="all", min_points=max(policy.fit_min_points, 3))


def _sweep_verdict(vs: list) -> str:
    """A reading holds when it holds at the last (most extreme) value of the sweep, is violated when it is
    violated at every value, and is inconclusive otherwise."""
    if not vs:
        return V.INCONCLUSIVE
    if all(v == V.VIOLATED for v in vs):
        return V.VIOLATED
    return V.HOLDS if vs[-1] == V.HOLDS else V.INCONCLUSIVE


def _inst_label(inst) -> str:
    return f"seed {inst.seed}" if getattr(inst, "seed", None) is not None else getattr(inst, "source", "instance")


@dataclass(frozen=True)
class HorizonExpectations:
    """Expectation bounds at horizon-dependent parameters (the experiment of Theorems 4.1-4.3 / C.1, D.1, E.1).

    Rate theorems of stochastic federated methods read "for a horizon ``R`` and the step size ``eta(R, L, B,
    sigma, ...)``, ``E[Phi(output_R)] - Phi* <= bound(R, ...)``".  Every horizon ``R`` of a geometric grid is its
    own set of runs (one batch of ``instances x replicates``; a single run records every ``R`` when no schedule
    depends on ``R``), and the expectation is estimated over ``replicates`` independent random streams:

    * the measured quantity is ``Phi(output) - Phi*`` per run, an interval since ``Phi*`` is certified to an
      interval (``solution.phi_lower``, ``solution.phi_star``);
    * the bound is an interval when a constant is (``Value.interval``, e.g. ``B = D_h(w*, w_0)`` from an
      approximate ``w*``): it is evaluated at the corners of the intervals;
    * a reading is compared with the bound of its own name (else with every bound of the test), under the
      test's statistic (``mean``: mean + z standard errors over the replicates; a deterministic instance is run
      once, and under ``mean`` its run is given twice -- its own expectation, standard error 0);
    * rate: the log-log slope of the mean gap against ``R`` (points above ``POLICY.resolution_factor`` times
      the certified floor), one fit per instance, pooled by the runner; ``rate_decides=True`` adds a ``rate``
      finding (a big-O claim whose constant is not given).

    ``sweep = (name, quick values[, full values])`` repeats everything for several values of a parameter whose
    *limit* the theorem is about ("there exists eta_c^max such that for every eta_c <= eta_c^max ...", swept as
    ``eta_s = 1, 10, 100`` at fixed ``eta = eta_s eta_c``): a reading holds when it holds at the last (most
    extreme) value, is violated when it is violated at *every* value, and is inconclusive otherwise.  The
    runner combines observations by their worst case, which is not that rule, so with a sweep this experiment
    judges every comparison itself (``Comparison.judge`` under the test's statistic) and returns the readings
    as findings; without a sweep it returns the comparisons (one per reading and instance) for the runner.

    Problem protocol: ``family.draw(seed)`` gives an instance with ``constant_names(solution)`` and
    ``constant(name, ctx) -> Value`` (read by :func:`fedcheck.problems.constants.resolve`), ``stochastic``, ``describe()`` and ``batch(instances)``; ``solver(instance, use_cache=)`` gives a solution
    with ``phi_star``, ``phi_lower``, ``reason`` and ``record()``; ``algorithm(batch, rounds=, grid=, rng=,
    **schedules, **algorithm_kwargs)`` returns a trace whose ``metrics[output]`` is ``Phi`` of the output at the
    recorded numbers of rounds.  ``controls``: ``{label: algorithm or (algorithm, metric)}`` run beside,
    reported only; ``save_instance(instance, stem, extra) -> paths`` writes a refuting instance."""

    family: object
    algorithm: object
    output: str
    schedules: dict
    solver: object
    seeds: int = 3
    full_seeds: int | None = None
    horizons: tuple = (16, 32, 64, 128, 256, 512, 1024, 2048)
    full_horizons: tuple | None = None
    replicates: int = 30
    full_replicates: int | None = None
    sweep: tuple | None = None
    algorithm_kwargs: dict = field(default_factory=dict)
    controls: dict = field(default_factory=dict)
    rate_decides: bool = False
    save_instance: object = None
    metric_label: str = "E[Phi(w_hat)] - Phi*"
    axis = "horizon"

    def __post_init__(self):
        import sympy as sp
        object.__setattr__(self, "schedules", {k: sp.sympify(v) for k, v in self.schedules.items()})
        object.__setattr__(self, "horizons", tuple(self.horizons))
        if self.full_horizons is not None:
            object.__setattr__(self, "full_horizons", tuple(self.full_horizons))

    def validate(self, claim, test) -> None:
        if not test.bounds:
            raise TypeError(f"{claim.id}: HorizonExpectations needs a bound")
        missing = [b.name for b in test.bounds if b.expr is None]
        if missing:
            raise TypeError(f"{claim.id}: HorizonExpectations evaluates SymPy bounds; bound(s) {missing} have no "
                            "expression")
        if test.findings not in ("reading", "auto"):
            raise ValueError(f"{claim.id}: HorizonExpectations names its findings by reading")
        kinds = {test.statistic_of(r).kind for r in claim.readings}
        if self.sweep is not None and "fraction" in kinds:
            raise ValueError(f"{claim.id}: a swept HorizonExpectations judges the mean or every run, not a fraction")

    # -- declaration helpers ------------------------------------------------------------------
    def bounds_of(self, test, reading) -> list:
        """The bounds a reading is compared with: the one of its own name, else every bound."""
        own = [b for b in test.bounds if b.name == reading.name]
        return own or list(test.bounds)

    def reading_bound(self, bound, reading):
        """``bound`` with the reading's substitutions and the schedules substituted (a bound may name a step
        size, e.g. (C.2) at the step (C.3))."""
        import sympy as sp
        b = sp.sympify(bound.expr).subs(dict(reading.substitutions))
        sub = {sp.Symbol(k, positive=True): v for k, v in self.schedules.items()}
        for s in b.free_symbols:
            if s.name in self.schedules:
                sub[s] = self.schedules[s.name]
        return b.subs(sub)

    def _formula(self, claim, test) -> dict:
        import sympy as sp
        return {"bound": sp.latex(test.bounds[0].expr), "bound_text": sp.sstr(test.bounds[0].expr),
                "schedules": {k: sp.latex(v) for k, v in self.schedules.items()},
                "readings": {r.name: {"latex": sp.latex(sp.sympify(self.bounds_of(test, r)[0].expr)
                                                        .subs(dict(r.substitutions))),
                                      "substitutions": {sp.sstr(k): sp.latex(v) for k, v in dict(r.substitutions).items()},
                                      "paper": r.paper, "description": r.description} for r in claim.readings},
                "metric": self.metric_label,
                "statistic": test.statistic.describe() + " (per instance; deterministic instances: their one run)",
                "statistical_z": V.POLICY.statistical_z,
                "sweep": None if self.sweep is None else {"parameter": self.sweep[0],
                                                          "semantics": "holds if it holds at the last value; violated "
                                                                       "only if violated at every value"}}

    def _pick(self, config):
        full = bool(config.full)
        seeds = list(config.seeds) if config.seeds is not None else \
            list(range((self.full_seeds or self.seeds) if full else self.seeds))
        hs = list(self.full_horizons if (full and self.full_horizons) else self.horizons)
        if config.rounds:
            hs = [h for h in hs if h <= config.rounds] or [int(config.rounds)]
        reps = (self.full_replicates or self.replicates) if full else self.replicates
        sw = None
        if self.sweep is not None:
            vals = self.sweep[2] if (full and len(self.sweep) > 2) else self.sweep[1]
            sw = (self.sweep[0], list(vals))
        return seeds, hs, int(reps), sw

    # -- the run ------------------------------------------------------------------------------------
    def observe(self, claim, test, config, params):
        obs = Observations()
        obs.formula = self._formula(claim, test)
        readings = claim.readings
        if config.instances:
            obs.reasons.append(f"{claim.id} runs on its own problem family; --instance files do not apply "
                               "(run without it)")
            obs.findings = [Finding(r.name, V.INCONCLUSIVE, r.paper, r.description) for r in readings]
            return obs
        seeds, horizons, reps, sweep = self._pick(config)
        insts = [self.family.draw(s) for s in seeds]
        sols = [self.solver(i, use_cache=config.use_cache) for i in insts]
        consts = [resolve_all(InstanceContext(i, None, s, {})) for i, s in zip(insts, sols)]
        for c in consts:
            for k, v in params.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    c[k] = Value(float(v), True, "parameter")
        S = [reps if i.stochastic else 1 for i in insts]
        sweep_vals = sweep[1] if sweep else [None]
        pairs = [(r, b) for r in readings for b in self.bounds_of(test, r)]
        rb = {(r.name, b.name): self.reading_bound(b, r) for r, b in pairs}
        depends_R = any(R_sym in e.free_symbols for e in self.schedules.values())
        # results[v_idx][i] = {"lo": (S, P), "hi": (S, P), "bound": {(reading, bound): (lo (P,), hi (P,))}, "controls"}
        results: list = []
        for v in sweep_vals:
            per_inst = [{"lo": np.full((S[i], len(horizons)), np.nan), "hi": np.full((S[i], len(horizons)), np.nan),
                         "bound": {key: (np.full(len(horizons), np.nan), np.full(len(horizons), np.nan)) for key in rb},
                         "controls": {c: np.full((S[i], len(horizons)), np.nan) for c in self.controls}}
                        for i in range(len(insts))]
            groups = [[h] for h in horizons] if depends_R else [list(horizons)]
            for hs in groups:
                self._run_group(claim.id, insts, sols, consts, S, hs, horizons, v, sweep, per_inst, rb)
            results.append(per_inst)
        # comparisons and their judgements under the test's statistic
        last = len(sweep_vals) - 1
        cmps = [[{} for _ in insts] for _ in sweep_vals]
        summaries = [[{} for _ in insts] for _ in sweep_vals]
        verdict_table = {r.name: [] for r in readings}    # per sweep value: combined over instances
        for vi in range(len(sweep_vals)):
            for r in readings:
                st = test.statistic_of(r)
                vs = []
                for i, inst in enumerate(insts):
                    d = results[vi][i]
                    lo, hi = d["lo"], d["hi"]
                    if st.kind == "mean" and lo.shape[0] == 1:     # one deterministic run: its own expectation
                        lo, hi = np.repeat(lo, 2, 0), np.repeat(hi, 2, 0)
                    js = []
                    for b in self.bounds_of(test, r):
                        blo, bhi = d["bound"][(r.name, b.name)]
                        cmp = Comparison(lhs_lo=lo, lhs_hi=hi, rhs_lo=blo, rhs_hi=bhi, relation=b.relation,
                                         scale=max(1.0, abs(sols[i].phi_star)) if np.isfinite(sols[i].phi_star) else 1.0,
                                         points=horizons, point_name="R")
                        cmps[vi][i][(r.name, b.name)] = cmp
                        s = cmp.judge(st)
                        if sols[i].reason:
                            s["verdict"] = V.combine([s["verdict"], V.INCONCLUSIVE])
                            s["inconclusive_reason"] = sols[i].reason
                        js.append(s)
                    s = js[0] if len(js) == 1 else {
                        "verdict": V.combine([j["verdict"] for j in js]),
                        "max_ratio": max((j["max_ratio"] for j in js if j["max_ratio"] is not None), default=None),
                        "bounds": js}
                    summaries[vi][i][r.name] = s
                    vs.append(s["verdict"])
                verdict_table[r.name].append(V.combine(vs))
        if sweep is None:       # the runner judges the comparisons
            for i, inst in enumerate(insts):
                for (rname, bname), cmp in cmps[0][i].items():
                    save = None
                    if self.save_instance is not None:
                        save = (lambda stem, inst=inst, i=i: self.save_instance(inst, stem, {
                            "check": claim.id, "readings": summaries[0][i], "horizons": list(horizons)}))
                    obs.items.append(Observed(rname, bname, _inst_label(inst), cmp, instance=inst,
                                              reason=sols[i].reason, save=save, key=i))
        else:                   # the sweep rule, per reading
            for r in readings:
                vt = verdict_table[r.name]
                ratios = [summaries[last][i][r.name]["max_ratio"] for i in range(len(insts))
                          if summaries[last][i][r.name]["max_ratio"] is not None]
                bad = [i for i in range(len(insts)) if summaries[last][i][r.name]["verdict"] == V.VIOLATED]
                ev = "; ".join(f"{sweep[0]}={val:g}: {vv}" for val, vv in zip(sweep_vals, vt))
                if bad:
                    s = summaries[last][bad[0]][r.name]
                    s = s if "bounds" not in s else next(j for j in s["bounds"] if j["verdict"] == V.VIOLATED)
                    ev = (f"violated on {len(bad)}/{len(insts)} instance(s); first: {_inst_label(insts[bad[0]])} from "
                          f"R={s['first_violation_R']} (worst R={s['argmax_R']}: measured {s['lhs_at_argmax']:.4g} vs "
                          f"bound {s['rhs_at_argmax']:.4g}); {ev}")
                obs.findings.append(Finding(r.name, _sweep_verdict(vt), r.paper, r.description,
                                            max(ratios) if ratios else None, ev,
                                            {"statistic": test.statistic_of(r).describe(), "cases": len(insts),
                                             "sweep": {sweep[0]: sweep_vals, "verdicts": vt}}))
        # rates (last sweep value), records, series
        claimed = test.rate if test.rate is not None else claim.claimed_rate
        series, fits = [], []
        for i, inst in enumerate(insts):
            d = results[last][i]
            mean = np.nanmean(d["hi"], 0)
            floor = np.nanmean(d["hi"] - d["lo"], 0)
            fit = fit_horizon_rate(horizons, mean, floor) if claimed is not None else None
            fits.append(fit)
            rec = {"seed": inst.seed, "instance": inst.describe(), "F_star": sols[i].phi_star,
                   "F_star_lower": sols[i].phi_lower, "solver": sols[i].record(),
                   "constants": {k: {"value": c.value, "exact": c.exact, "note": c.note,
                                     **({"interval": list(c.interval)} if getattr(c, "interval", None) else {})}
                                 for k, c in consts[i].items()},
                   "replicates": S[i], "rounds": list(horizons), "x_label": "R (rounds; one run per horizon)",
                   "metric": mean, "metric_lo": np.nanmean(d["lo"], 0),
                   "metric_se": (np.nanstd(d["hi"], 0, ddof=1) / np.sqrt(S[i])) if S[i] > 1 else np.zeros(len(horizons)),
                   "bound": {r.name: d["bound"][(r.name, self.bounds_of(test, r)[0].name)][1] for r in readings},
                   "readings": summaries[last][i], "fit": fit}
            if sols[i].reason:
                rec["inconclusive_reason"] = sols[i].reason
            if self.controls:
                rec["controls"] = {c: np.nanmean(a, 0) for c, a in d["controls"].items()}
            if sweep:
                rec["sweep"] = [{"value": val, "metric": np.nanmean(results[vi][i]["hi"], 0),
                                 "bound": {r.name: results[vi][i]["bound"][(r.name, self.bounds_of(test, r)[0].name)][1]
                                           for r in readings},
                                 "readings": {k: {"verdict": s["verdict"], "max_ratio": s["max_ratio"]}
                                              for k, s in summaries[vi][i].items()}}
                                for vi, val in enumerate(sweep_vals)]
            obs.records.append(rec)
            if i == 0:
                panel = f"{claim.id}: {_inst_label(inst)}" + (f" ({sweep[0]}={sweep_vals[last]:g})" if sweep else "")
                common = {"panel": panel, "x": list(horizons), "xlabel": "R", "ylabel": self.metric_label,
                          "logx": True, "logy": True}
                series.append({**common, "label": self.metric_label, "y": mean, "role": "measured"})
                for r in readings:
                    series.append({**common, "label": f"bound ({r.name})", "y": rec["bound"][r.name], "role": "bound"})
                for c, a in d["controls"].items():
                    series.append({**common, "label": c, "y": np.nanmean(a, 0), "role": "reference"})
        obs.series = series
        obs.fits = fits
        if claimed is not None and self.rate_decides:
            pooled = V.pooled_rate(fits)
            slope, ci = (pooled["slope"], pooled["ci"]) if pooled else (None, None)
            obs.findings.append(Finding("rate", V.rate_verdict(ci, float(claimed)), True,
                                        f"fitted slope of the mean gap in R vs the claimed {float(claimed):g}",
                                        None, f"slope {slope} CI {ci}"))
        obs.reasons.extend(sorted({s.reason for s in sols if s.reason}))
        obs.evidence = {"horizons": list(horizons), "instances": len(insts), "replicates": S,
                        "sweep": None if sweep is None else {"parameter": sweep[0], "values": sweep_vals,
                                                             "verdicts": verdict_table},
                        "one_run_per_horizon": depends_R, "statistical_z": V.POLICY.statistical_z}
        # a refuted sweep: write the refuting instances (without a sweep the runner saves them)
        if sweep is not None and config.save_dir and self.save_instance is not None:
            paper_findings = [f for f in obs.findings if f.paper] or obs.findings
            if V.combine(f.verdict for f in paper_findings) == V.VIOLATED:
                paper = {r.name for r in readings if r.paper}
                for i, inst in enumerate(insts):
                    if any(summaries[last][i][n]["verdict"] == V.VIOLATED for n in paper):
                        stem = f"{config.save_dir}/{claim.id}-seed{inst.seed}"
                        obs.saved_instances.extend(self.save_instance(inst, stem, {
                            "check": claim.id, "readings": summaries[last][i], "horizons": list(horizons),
                            "sweep": {sweep[0]: sweep_vals}}))
        return obs

    def _values(self, consts_i: dict, R: int, sweep, v) -> dict:
        vals = {k: float(c.value) for k, c in consts_i.items()}
        vals[R_sym.name] = float(R)
        if sweep is not None:
            vals[sweep[0]] = float(v)
        return vals

    def _run_group(self, cid, insts, sols, consts, S, hs, horizons, v, sweep, per_inst, rb):
        import itertools
        Rrun = max(hs)
        # batches of instances of one shape
        shape_groups: dict = {}
        for i, inst in enumerate(insts):
            key = (type(inst).__name__, inst.M, inst.d, inst.K, type(inst.reg).__name__, inst.noise)
            shape_groups.setdefault(key, []).append(i)
        for idxs in shape_groups.values():
            elems = [(i, s) for i in idxs for s in range(S[i])]
            vals = [self._values(consts[i], Rrun, sweep, v) for i, _ in elems]
            N = len(elems)
            steps = {}
            for name, expr in self.schedules.items():
                need = {s.name for s in expr.free_symbols}
                arr = {k: np.array([vv[k] for vv in vals]) for k in need}
                steps[name] = evaluate_expr(expr, arr, N)
            batch = insts[idxs[0]].batch([insts[i] for i, _ in elems])
            tag = f"{cid}|{v}|{Rrun}|" + ",".join(str(insts[i].seed) for i in idxs)
            rng = instance_rng(0, tag)
            grid = np.array(sorted(hs))
            trace = self.algorithm(batch, rounds=Rrun, grid=grid, rng=rng, **steps, **self.algorithm_kwargs)
            phi = trace.metrics[self.output]                    # (len(grid), N)
            ctrl = {}
            for cname, spec in self.controls.items():
                calg, cmetric = spec if isinstance(spec, tuple) else (spec, self.output)
                ctr = calg(batch, rounds=Rrun, grid=grid, rng=instance_rng(1, tag), **steps, **self.algorithm_kwargs)
                ctrl[cname] = ctr.metrics[cmetric if cmetric in ctr.metrics else "Phi_avg"]
            cols = [horizons.index(h) for h in grid]
            for n, (i, s) in enumerate(elems):
                sol = sols[i]
                per_inst[i]["lo"][s, cols] = phi[:, n] - sol.phi_star
                lower = sol.phi_lower if np.isfinite(sol.phi_lower) else np.nan
                per_inst[i]["hi"][s, cols] = phi[:, n] - lower
                for cname, arr in ctrl.items():
                    per_inst[i]["controls"][cname][s, cols] = arr[:, n] - sol.phi_star
            for i in idxs:
                for key, expr in rb.items():
                    for col, h in zip(cols, grid):
                        base = self._values(consts[i], h, sweep, v)
                        ivals = {k: getattr(c, "interval", None) for k, c in consts[i].items()}
                        ivals = {k: iv for k, iv in ivals.items() if iv is not None and
                                 k in {s.name for s in expr.free_symbols}}
                        outs = []
                        for corner in itertools.product(*[[(k, iv[0]), (k, iv[1])] for k, iv in ivals.items()]):
                            vv = dict(base)
                            vv.update(dict(corner))
                            outs.append(float(evaluate_expr(expr, vv)))
                        if not outs:
                            outs = [float(evaluate_expr(expr, base))]
                        per_inst[i]["bound"][key][0][col] = min(outs)
                        per_inst[i]["bound"][key][1][col] = max(outs)
