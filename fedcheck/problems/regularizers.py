"""Composite regularizers psi with their proximal maps, vectorized over a batch axis.

A regularizer acts on flat vectors of dimension ``dim`` (a matrix variable is stored
row-major, optionally followed by unregularized coordinates such as a bias).  Its
parameters (``lam``, ``radius``) are a scalar or an array of shape ``(B,)`` that
broadcasts against the *first* axis of the arrays passed to it, exactly like
:mod:`fedcheck.sets`.  A prox weight ``a`` follows the same rule (scalar or ``(B,)``).

Interface:

``value(w)``
    ``psi(w)`` over the last axis (``inf`` outside the domain of an indicator; membership
    uses ``POLICY.feasibility_tol`` relative to the radius).
``prox(z, a)``
    ``prox_{a psi}(z) = argmin_w a psi(w) + 1/2 ||w - z||_2^2`` (closed forms only);
    with ``h = 1/2||.||^2`` this is the mirror map ``grad (h + a psi)^*(z)`` of the FedDualAvg paper.
``subgrad(w)``
    an element of ``d psi(w)`` (``sign(0) = 0`` for the l1 norm), for subgradient baselines.
``conj(u)``, ``dual_project(u)``
    the convex conjugate ``psi^*(u)`` and the Euclidean projection onto ``dom psi^*``; with a
    quadratic loss they give Fenchel lower bounds that certify an optimum.
``cvx(x)``, ``cvx_constraints(x)``
    the cvxpy expression of ``psi`` at a cvxpy vector ``x`` and the constraints of its domain
    (single instance only).
``scaled(f)``
    the regularizer ``f * psi`` (indicators are unchanged: ``f chi_C = chi_C``).
``idempotent``
    ``prox_{a psi} o prox_{a psi} == prox_{a psi}`` (true for indicators only).

Every prox is property-tested against cvxpy (Clarabel) in ``tests/test_feddualavg.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedcheck.problems.sets import L1Ball as _L1Set
from fedcheck.problems.sets import L2Ball as _L2Set
from fedcheck.core.verdict import POLICY

__all__ = ["Regularizer", "Zero", "L1", "Nuclear", "SquaredL2", "L1BallIndicator", "L2BallIndicator",
           "REGULARIZERS", "make_regularizer", "stack_regularizers"]


def _b(v, x: np.ndarray):
    """A scalar, or a ``(B,)`` parameter reshaped to broadcast against the first axis of ``x``."""
    v = np.asarray(v, dtype=float)
    if v.ndim == 0:
        return float(v)
    return v.reshape(v.shape + (1,) * (np.ndim(x) - 1))


def _b0(v, x: np.ndarray):
    """Like :func:`_b` but shaped like ``x.shape[:-1]`` (for reductions over the last axis)."""
    r = _b(v, x)
    return r if np.ndim(r) == 0 else np.squeeze(r, -1)


def _svd(Wm, compute_uv=True):
    """Batched SVD that tolerates non-finite matrices (a diverged run): their factors are NaN."""
    bad = ~np.isfinite(Wm).all(axis=(-2, -1))
    if not bad.any():
        return np.linalg.svd(Wm, full_matrices=False, compute_uv=compute_uv)
    out = np.linalg.svd(np.where(bad[..., None, None], 0.0, Wm), full_matrices=False, compute_uv=compute_uv)
    if not compute_uv:
        return np.where(bad[..., None], np.nan, out)
    U, s, Vt = out
    return (np.where(bad[..., None, None], np.nan, U), np.where(bad[..., None], np.nan, s),
            np.where(bad[..., None, None], np.nan, Vt))


def _soft(x, t):
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


class Regularizer:
    name = "regularizer"
    idempotent = False
    dim: int

    # -- batching ---------------------------------------------------------------------------
    @property
    def batched(self) -> bool:
        return any(np.ndim(getattr(self, f)) > 0 for f in self._params())

    def _params(self) -> tuple:
        return ()

    def take(self, k: int) -> "Regularizer":
        kw = {f: (float(np.asarray(getattr(self, f))[k]) if np.ndim(getattr(self, f)) > 0 else getattr(self, f))
              for f in self._params()}
        return self._replace(**kw)

    def _replace(self, **kw) -> "Regularizer":
        import dataclasses
        return dataclasses.replace(self, **kw)

    def spec(self) -> dict:
        d = {"name": self.name, "dim": self.dim}
        for f in self._params():
            d[f] = np.asarray(getattr(self, f)).tolist()
        return d

    # -- oracles ------------------------------------------------------------------------------
    def value(self, w):
        raise NotImplementedError

    def prox(self, z, a):
        raise NotImplementedError

    def subgrad(self, w):
        raise NotImplementedError

    def conj(self, u):
        raise NotImplementedError

    def dual_project(self, u):
        raise NotImplementedError

    def cvx(self, x):
        return 0.0

    def cvx_constraints(self, x) -> list:
        return []

    def scaled(self, f: float) -> "Regularizer":
        raise NotImplementedError


@dataclass(frozen=True)
class Zero(Regularizer):
    """``psi = 0`` (standard federated learning)."""

    dim: int
    name: str = field(default="zero", init=False)

    def value(self, w):
        return np.zeros(np.shape(w)[:-1])

    def prox(self, z, a):
        return np.array(z, dtype=float, copy=True)

    def subgrad(self, w):
        return np.zeros_like(w, dtype=float)

    def conj(self, u):
        return np.where(np.all(u == 0, axis=-1), 0.0, np.inf)

    def dual_project(self, u):
        return np.zeros_like(u, dtype=float)

    def scaled(self, f):
        return self


@dataclass(frozen=True)
class L1(Regularizer):
    """``psi(w) = lam * sum_j mask_j |w_j|`` (``mask`` 0/1 leaves e.g. a bias unregularized);
    prox: soft-thresholding at ``a lam mask``."""

    lam: float | np.ndarray
    dim: int
    mask: np.ndarray | None = None
    name: str = field(default="l1", init=False)

    def _params(self):
        return ("lam",)

    def _m(self):
        return 1.0 if self.mask is None else np.asarray(self.mask, dtype=float)

    def value(self, w):
        w = np.asarray(w, dtype=float)
        return _b0(self.lam, w) * (np.abs(w) * self._m()).sum(-1)

    def prox(self, z, a):
        z = np.asarray(z, dtype=float)
        return _soft(z, _b(a, z) * _b(self.lam, z) * self._m())

    def subgrad(self, w):
        w = np.asarray(w, dtype=float)
        return _b(self.lam, w) * np.sign(w) * self._m()

    def conj(self, u):
        u = np.asarray(u, dtype=float)
        lim = _b(self.lam, u) * self._m()
        ok = np.all(np.abs(u) <= lim * (1 + POLICY.rtol) + POLICY.atol, axis=-1)
        return np.where(ok, 0.0, np.inf)

    def dual_project(self, u):
        u = np.asarray(u, dtype=float)
        lim = _b(self.lam, u) * self._m()
        return np.clip(u, -lim, lim)

    def cvx(self, x):
        import cvxpy as cp
        m = self._m()
        return float(self.lam) * (cp.norm1(x) if np.ndim(m) == 0 else cp.norm1(cp.multiply(m, x)))

    def scaled(self, f):
        return self._replace(lam=np.asarray(self.lam, dtype=float) * f if np.ndim(self.lam) else float(self.lam) * f)

    def spec(self):
        d = super().spec()
        d["mask"] = None if self.mask is None else np.asarray(self.mask).tolist()
        return d


@dataclass(frozen=True)
class Nuclear(Regularizer):
    """``psi(w) = lam ||W||_*`` where ``W`` is the first ``p1*p2`` coordinates of ``w`` read as a
    row-major ``p1 x p2`` matrix (remaining coordinates, e.g. a bias, are unregularized);
    prox: singular-value thresholding at ``a lam``."""

    lam: float | np.ndarray
    shape: tuple
    extra: int = 0
    name: str = field(default="nuclear", init=False)

    def _params(self):
        return ("lam",)

    @property
    def dim(self) -> int:
        return int(self.shape[0] * self.shape[1] + self.extra)

    def _split(self, w):
        w = np.asarray(w, dtype=float)
        k = self.shape[0] * self.shape[1]
        return w[..., :k].reshape(w.shape[:-1] + tuple(self.shape)), w[..., k:]

    def _join(self, Wm, rest):
        return np.concatenate([Wm.reshape(Wm.shape[:-2] + (-1,)), rest], axis=-1)

    def value(self, w):
        Wm, _ = self._split(w)
        return _b0(self.lam, np.asarray(w)) * _svd(Wm, compute_uv=False).sum(-1)

    def prox(self, z, a):
        z = np.asarray(z, dtype=float)
        Wm, rest = self._split(z)
        U, s, Vt = _svd(Wm)
        t = _b(a, z) * _b(self.lam, z)  # (B,1,..) against z -> against s (same ndim as z)
        s = np.maximum(s - t, 0.0)
        return self._join((U * s[..., None, :]) @ Vt, rest.copy())

    def subgrad(self, w):
        w = np.asarray(w, dtype=float)
        Wm, rest = self._split(w)
        U, s, Vt = _svd(Wm)
        on = (s > 0).astype(float)
        G = (U * on[..., None, :]) @ Vt
        lam = _b(self.lam, w)
        lam = lam if np.ndim(lam) == 0 else lam[..., None]
        return self._join(lam * G, np.zeros_like(rest))

    def conj(self, u):
        u = np.asarray(u, dtype=float)
        Um, rest = self._split(u)
        top = _svd(Um, compute_uv=False)[..., 0]
        lam = _b0(self.lam, u)
        ok = (top <= lam * (1 + POLICY.rtol) + POLICY.atol) & np.all(rest == 0, axis=-1)
        return np.where(ok, 0.0, np.inf)

    def dual_project(self, u):
        u = np.asarray(u, dtype=float)
        Um, rest = self._split(u)
        U, s, Vt = _svd(Um)
        lam = _b(self.lam, u)
        s = np.minimum(s, lam)
        return self._join((U * s[..., None, :]) @ Vt, np.zeros_like(rest))

    def cvx(self, x):
        import cvxpy as cp
        k = self.shape[0] * self.shape[1]
        return float(self.lam) * cp.normNuc(cp.reshape(x[:k], tuple(self.shape), order="C"))

    def scaled(self, f):
        return self._replace(lam=np.asarray(self.lam, dtype=float) * f if np.ndim(self.lam) else float(self.lam) * f)

    def spec(self):
        d = super().spec()
        d.update(shape=list(self.shape), extra=self.extra)
        return d


@dataclass(frozen=True)
class SquaredL2(Regularizer):
    """Weight decay ``psi(w) = lam ||w||_2^2``; prox ``z / (1 + 2 a lam)``."""

    lam: float | np.ndarray
    dim: int
    name: str = field(default="sql2", init=False)

    def _params(self):
        return ("lam",)

    def value(self, w):
        w = np.asarray(w, dtype=float)
        return _b0(self.lam, w) * (w * w).sum(-1)

    def prox(self, z, a):
        z = np.asarray(z, dtype=float)
        return z / (1.0 + 2.0 * _b(a, z) * _b(self.lam, z))

    def subgrad(self, w):
        w = np.asarray(w, dtype=float)
        return 2.0 * _b(self.lam, w) * w

    def conj(self, u):
        u = np.asarray(u, dtype=float)
        return (u * u).sum(-1) / (4.0 * _b0(self.lam, u))

    def dual_project(self, u):
        return np.array(u, dtype=float, copy=True)

    def cvx(self, x):
        import cvxpy as cp
        return float(self.lam) * cp.sum_squares(x)

    def scaled(self, f):
        return self._replace(lam=np.asarray(self.lam, dtype=float) * f if np.ndim(self.lam) else float(self.lam) * f)


class _BallIndicator(Regularizer):
    idempotent = True
    _set_cls = None

    def _params(self):
        return ("radius",)

    def _set(self):
        return self._set_cls(self.radius, self.dim)

    def value(self, w):
        w = np.asarray(w, dtype=float)
        tol = POLICY.feasibility_tol * np.maximum(1.0, _b0(self.radius, w))
        return np.where(self._set().gauge(w) <= tol, 0.0, np.inf)

    def prox(self, z, a):
        return self._set().project(np.asarray(z, dtype=float))

    def subgrad(self, w):
        return np.zeros_like(w, dtype=float)

    def dual_project(self, u):
        return np.array(u, dtype=float, copy=True)

    def cvx_constraints(self, x):
        return self._set().cvx_constraints(x)

    def scaled(self, f):
        return self


@dataclass(frozen=True)
class L2BallIndicator(_BallIndicator):
    """``psi = chi_C`` with ``C = {||w||_2 <= radius}``; prox = Euclidean projection (any weight)."""

    radius: float | np.ndarray
    dim: int
    name: str = field(default="l2ball", init=False)
    _set_cls = _L2Set

    def conj(self, u):
        u = np.asarray(u, dtype=float)
        return _b0(self.radius, u) * np.linalg.norm(u, axis=-1)


@dataclass(frozen=True)
class L1BallIndicator(_BallIndicator):
    """``psi = chi_C`` with ``C = {||w||_1 <= radius}``; prox = projection onto the l1 ball."""

    radius: float | np.ndarray
    dim: int
    name: str = field(default="l1ball", init=False)
    _set_cls = _L1Set

    def conj(self, u):
        u = np.asarray(u, dtype=float)
        return _b0(self.radius, u) * np.max(np.abs(u), axis=-1)


REGULARIZERS = {"zero": Zero, "l1": L1, "nuclear": Nuclear, "sql2": SquaredL2, "l2ball": L2BallIndicator,
                "l1ball": L1BallIndicator}


def make_regularizer(spec: dict) -> Regularizer:
    """Rebuild a regularizer from :meth:`Regularizer.spec` (used by saved instances)."""
    s = dict(spec)
    name = s.pop("name")
    if name == "zero":
        return Zero(int(s["dim"]))
    if name == "l1":
        m = s.get("mask")
        return L1(np.asarray(s["lam"], dtype=float) if np.ndim(s["lam"]) else float(s["lam"]), int(s["dim"]),
                  None if m is None else np.asarray(m, dtype=float))
    if name == "nuclear":
        return Nuclear(s["lam"], tuple(s["shape"]), int(s.get("extra", 0)))
    if name == "sql2":
        return SquaredL2(s["lam"], int(s["dim"]))
    if name in ("l2ball", "l1ball"):
        return REGULARIZERS[name](s["radius"], int(s["dim"]))
    raise ValueError(f"unknown regularizer {name!r}; expected one of {sorted(REGULARIZERS)}")


def stack_regularizers(regs) -> Regularizer:
    """One batched regularizer from regularizers of one kind (parameters stacked on axis 0)."""
    regs = list(regs)
    first = regs[0]
    for r in regs:
        if type(r) is not type(first) or r.dim != first.dim:
            raise ValueError("a batch needs regularizers of one kind and dimension")
    kw = {f: np.array([float(np.asarray(getattr(r, f))) for r in regs]) for f in first._params()}
    return first._replace(**kw) if kw else first
