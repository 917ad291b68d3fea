"""Hot-path kernels of the engine: gradients into preallocated buffers and vertex LMOs.

A round of a Frank-Wolfe method is a gradient, a linear minimization and a convex
combination.  The generic oracles of :mod:`fedcheck.losses` and :mod:`fedcheck.sets`
return new arrays; these kernels compute the same quantities into buffers that an
algorithm allocates once, and know two shortcuts:

* least squares (a loss whose ``grad`` is :meth:`LeastSquares.grad`): the gradient
  scaled by ``w`` (FedFW's client weight ``1/n``) is one batched ``matmul`` with
  ``(w H)^T`` precomputed, written into ``out``, minus ``w c``;
* sets whose vertices have one non-zero coordinate (the l1 ball and the simplex,
  when their ``lmo`` is the library's): the LMO returns, per row, the coordinate and
  its value, so the update ``x <- (1 - eta) x + eta s`` is a scaling plus a scatter
  of one number per client instead of a dense vertex.

Everything else falls back to the oracles themselves (``loss.grad``, ``S.lmo``),
so new losses and sets work unchanged, only without the shortcuts.  The shortcuts
compute the same values as the oracles (same argmax, same tie rule, same signs);
``tests/test_engine_speed.py`` checks them against the oracles and against a
plain per-client loop.

Kernels that can be restricted to a contiguous range of instances (``slice``)
let the engine run cache-sized groups of instances (see
:func:`fedcheck.engine.core.instance_chunks`); a group's kernel works on views of
the batch's arrays, so the numbers are the same whichever grouping runs.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fedcheck.algorithms.lanes import blocks_of
from fedcheck.problems.losses import LeastSquares, Loss
from fedcheck.problems.sets import FeasibleSet, L1Ball, ProductSet, Simplex

__all__ = ["GradKernel", "make_grad_kernel", "make_full_grad_kernel", "VertexLMO", "make_vertex_lmo",
           "slice_set", "uniform_rows", "FUSE_LIMIT_BYTES", "FactoredGrad", "L1Vertex", "SimplexVertex",
           "client_mean_compiled", "ls_local_steps_compiled", "blocked_layout", "pairwise_sq"]

# Precomputing (w H)^T doubles the memory of H; above this size the product is taken on H as stored.
FUSE_LIMIT_BYTES = 256 * 2**20


class GradKernel:
    """``out <- w * grad(X)`` for a fixed weight ``w`` (generic: calls ``loss.grad``)."""

    fast = False
    bytes_per_instance: float | None = None   # per-round data of one instance (None: do not group)

    def __init__(self, loss: Loss, weight: float = 1.0):
        self.loss, self.weight = loss, float(weight)

    def __call__(self, X: np.ndarray, out: np.ndarray) -> np.ndarray:
        g = self.loss.grad(X)
        if self.weight == 1.0:
            out[...] = g
        else:
            np.multiply(g, self.weight, out=out)
        return out

    def slice(self, lo: int, hi: int) -> "GradKernel | None":
        return None

    def bind(self, X: np.ndarray, out: np.ndarray) -> Callable[[], np.ndarray]:
        """A no-argument function computing ``self(X, out)`` for these two buffers (views made once)."""
        return lambda: self(X, out)


class _QuadraticGrad(GradKernel):
    """``out <- (w H) X - w c`` for stacked ``H`` (B, ..., p, p) and ``c`` (B, ..., p), one ``matmul``.

    The product is taken in row form, ``x^T (w H)^T``, with the transpose stored contiguously: numpy's
    stacked ``matmul`` is faster that way round for small matrices (and ``(w H)^T`` is a copy made
    anyway to fuse the weight); it is ``w H x`` for any ``H``, symmetric or not."""

    fast = True

    def __init__(self, H: np.ndarray, c: np.ndarray, weight: float = 1.0):
        self.weight = float(weight)
        if H.nbytes > FUSE_LIMIT_BYTES:  # no copy of a huge H: column form, weight applied afterwards
            self.HT, self.H, self.c, self.post = None, H, c, self.weight
        else:
            Hw = H if self.weight == 1.0 else H * self.weight
            self.HT, self.H, self.post = np.ascontiguousarray(np.swapaxes(Hw, -1, -2)), None, 1.0
            self.c = c if self.weight == 1.0 else c * self.weight
        B = H.shape[0]
        self.bytes_per_instance = (H.nbytes + self.c.nbytes) / B

    @classmethod
    def _views(cls, HT, H, c, post, weight):
        k = cls.__new__(cls)
        k.HT, k.H, k.c, k.post, k.weight = HT, H, c, post, weight
        k.bytes_per_instance = ((HT if HT is not None else H).nbytes + c.nbytes) / c.shape[0]
        return k

    def slice(self, lo, hi):
        return _QuadraticGrad._views(None if self.HT is None else self.HT[lo:hi],
                                     None if self.H is None else self.H[lo:hi], self.c[lo:hi], self.post,
                                     self.weight)

    def bind(self, X, out):
        if self.HT is None or self.post != 1.0:
            return super().bind(X, out)
        X4, out4, HT, c = X[..., None, :], out[..., None, :], self.HT, self.c
        matmul, subtract = np.matmul, np.subtract

        def grad():
            matmul(X4, HT, out4)
            subtract(out, c, out)
            return out
        return grad

    def __call__(self, X, out):
        if self.HT is not None:
            np.matmul(X[..., None, :], self.HT, out=out[..., None, :])
        else:
            np.matmul(self.H, X[..., None], out=out[..., None])
        np.subtract(out, self.c, out=out)
        if self.post != 1.0:
            np.multiply(out, self.post, out=out)
        return out


class FactoredGrad(GradKernel):
    """``out <- (w/m) A^T (A X - b)`` for least squares in factored form (no ``p x p`` matrix per client):
    two stacked ``matmul`` into buffers allocated at the first call (``(..., m)`` residuals)."""

    fast = True

    def __init__(self, A: np.ndarray, b: np.ndarray, m: int, weight: float = 1.0):
        self.A, self.b, self.m, self.weight = A, b, int(m), float(weight)
        self.AT = np.swapaxes(A, -1, -2)
        self.scale = self.weight / self.m
        self.bytes_per_instance = (A.nbytes + b.nbytes) / A.shape[0]
        self._r = None

    def slice(self, lo, hi):
        return FactoredGrad(self.A[lo:hi], self.b[lo:hi], self.m, self.weight)

    def __call__(self, X, out):
        r = self._r
        if r is None or r.shape != self.b.shape + (1,):
            r = self._r = np.empty(self.b.shape + (1,))
        np.matmul(self.A, X[..., None], out=r)
        np.subtract(r, self.b[..., None], out=r)
        np.matmul(self.AT, r, out=out[..., None])
        np.multiply(out, self.scale, out=out)
        return out


def make_grad_kernel(loss: Loss, weight: float = 1.0) -> GradKernel:
    """The client-gradient kernel ``out <- weight * loss.grad(X)`` for ``X`` shaped like the batch."""
    if isinstance(loss, LeastSquares) and type(loss).grad is LeastSquares.grad:
        if loss.factored:
            return FactoredGrad(loss.A, loss.b, loss.m, weight)
        return _QuadraticGrad(loss.H, loss.c, weight)
    return GradKernel(loss, weight)


class _FullGrad(GradKernel):
    def __call__(self, x, out):
        out[...] = self.loss.full_grad(x)
        return out


def make_full_grad_kernel(loss: Loss) -> GradKernel:
    """``out <- grad F(x)`` at one point per instance, ``x`` of shape ``(B, p)``."""
    if isinstance(loss, LeastSquares) and type(loss).grad is LeastSquares.grad \
            and type(loss).full_grad is LeastSquares.full_grad and not loss.factored and loss.weights is None:
        return _QuadraticGrad(loss.H.mean(-3), loss.c.mean(-2), 1.0)
    return _FullGrad(loss)


class VertexLMO:
    """LMO of a set whose vertices have a single non-zero coordinate, on arrays of one fixed shape
    ``(B, ..., p)`` (``B`` instances first).  ``__call__(G)`` returns ``(j, val)``: per row (all axes but
    the last, flattened) the coordinate and the value of the vertex ``S.lmo(G)``.

    ``instance`` maps a row to its instance; ``row_base + j`` indexes the raveled array and
    ``server_base + j`` the raveled ``(B, p)`` server array."""

    def __init__(self, radius: np.ndarray, shape: tuple[int, ...]):
        self.shape = tuple(shape)
        B, p = self.shape[0], self.shape[-1]
        R = int(np.prod(self.shape[:-1]))
        self.radius = np.broadcast_to(np.asarray(radius, dtype=float), (B,))
        self.rows, self.p = R, p
        self.instance = np.repeat(np.arange(B), R // B)
        self.row_base = np.arange(R) * p
        self.server_base = self.instance * p
        self.r_row = np.ascontiguousarray(self.radius[self.instance])
        self.neg_r_row = -self.r_row

    def slice(self, lo: int, hi: int) -> "VertexLMO":
        return type(self)(self.radius[lo:hi], (hi - lo,) + self.shape[1:])

    def bind(self, G: np.ndarray) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        """A no-argument function computing ``self(G)`` for this buffer."""
        return lambda: self(G)

    def __call__(self, G: np.ndarray):
        raise NotImplementedError


class L1Vertex(VertexLMO):
    """l1 ball: ``j = argmax |g|`` (lowest index on ties), value ``-r sign(g_j)`` with sign(0) = +1.

    (A branch-free argmax over the transposed magnitudes was tried: inside the engine it was no faster
    than numpy's row-wise ``argmax``, see benchmarks/HISTORY.md.)"""

    def __init__(self, radius, shape):
        super().__init__(radius, shape)
        self._abs = np.empty((self.rows, self.p))
        self._flat = np.empty(self.rows, dtype=np.intp)

    def __call__(self, G):
        """``(j, val)``; also leaves ``row_base + j`` in ``self.flat`` (the raveled index of each vertex)."""
        G2 = G.reshape(self.rows, self.p)
        j = np.abs(G2, self._abs).argmax(-1)
        flat = np.add(self.row_base, j, self._flat)
        gj = G2.ravel().take(flat)
        return j, np.where(gj < 0, self.r_row, self.neg_r_row)

    @property
    def flat(self) -> np.ndarray:
        return self._flat

    def bind(self, G):
        G2 = G.reshape(self.rows, self.p)
        Gflat, A, flat, base, r, neg_r = G2.reshape(-1), self._abs, self._flat, self.row_base, self.r_row, self.neg_r_row
        absolute, add, where = np.abs, np.add, np.where

        def lmo():
            j = absolute(G2, A).argmax(-1)
            add(base, j, flat)
            return j, where(Gflat.take(flat) < 0, r, neg_r)
        return lmo


class SimplexVertex(VertexLMO):
    """Simplex: ``j = argmin g`` (lowest index on ties), value ``r``."""

    def __init__(self, radius, shape):
        super().__init__(radius, shape)
        self._flat = np.empty(self.rows, dtype=np.intp)

    def __call__(self, G):
        j = G.reshape(self.rows, self.p).argmin(-1)
        np.add(self.row_base, j, self._flat)
        return j, self.r_row

    @property
    def flat(self) -> np.ndarray:
        return self._flat


def make_vertex_lmo(S: FeasibleSet, shape) -> VertexLMO | None:
    """A sparse-vertex LMO for ``S`` if it has one (its ``lmo`` is the library's), else ``None``."""
    if isinstance(S, L1Ball) and type(S).lmo is L1Ball.lmo:
        return L1Vertex(S.radius, shape)
    if isinstance(S, Simplex) and type(S).lmo is Simplex.lmo:
        return SimplexVertex(S.radius, shape)
    return None


def slice_set(S: FeasibleSet, lo: int, hi: int) -> FeasibleSet | None:
    """The set of instances ``lo:hi`` of a batched set (``None`` when the set cannot say)."""
    if not S.batched:
        return S
    if isinstance(S, ProductSet):
        blocks = [slice_set(b, lo, hi) for b in S.blocks]
        return None if any(b is None for b in blocks) else ProductSet(tuple(blocks))
    try:
        return S._with_radius(np.asarray(S.radius)[lo:hi])
    except (NotImplementedError, AttributeError, TypeError, IndexError):
        return None


def uniform_rows(a: np.ndarray) -> bool:
    """Whether every row of a ``(rounds, B)`` schedule is constant across instances (then the engine
    multiplies by a Python float, which numpy does faster than by a broadcast ``(B, 1, 1)`` array)."""
    a = np.asarray(a)
    if a.ndim < 2 or a.shape[1] <= 1:
        return True
    for lo in range(0, a.shape[0], 4096):  # in blocks: no temporary proportional to the rounds
        blk = a[lo:lo + 4096]
        if not np.array_equal(blk.min(1), blk.max(1)):
            return False
    return True


# ----------------------------------------------------------------------------------------------
# the clients' mean (composite engines, the one FedAvg): numpy's ``W.mean(1)`` on a small
# ``(B, S, p)`` array costs ~7 us of reduction set-up for ~1,500 additions; a compiled loop in
# numpy's own order (clients added one after the other, then divided by ``S``) gives the same bits.
def _client_mean_loop(W, out):
    B, S, p = W.shape
    for b in range(B):
        for i in range(p):
            out[b, i] = W[b, 0, i]
        for s in range(1, S):
            for i in range(p):
                out[b, i] += W[b, s, i]
        for i in range(p):
            out[b, i] /= S
    return out


try:
    from fedcheck.algorithms.jit import AVAILABLE as _JIT, numba as _numba
    # W.mean(1) in numpy's order, compiled (None when numba is off); the engine of fedcheck.algorithms.fedavg_jit
    client_mean_compiled = _numba.njit(cache=True, fastmath=False, nogil=True)(_client_mean_loop) if _JIT else None
except Exception:  # pragma: no cover
    client_mean_compiled = None


def clients_mean(W: np.ndarray) -> np.ndarray:
    """``W.mean(1)`` of a ``(B, S, p)`` array, bit for bit, compiled when it is certainly numpy's order:
    C-contiguous float64 with ``p >= 2`` and ``S >= 1`` (numpy then adds the clients one after the other
    along the contiguous last axis; with ``p == 1`` or other layouts it may sum pairwise: numpy is used)."""
    if (client_mean_compiled is not None and W.ndim == 3 and W.dtype == np.float64 and W.shape[1] >= 1
            and W.shape[2] >= 2 and W.flags.c_contiguous):
        return client_mean_compiled(W, np.empty((W.shape[0], W.shape[2])))
    return W.mean(1)


# ----------------------------------------------------------------------------------------------
# the compiled kernels of quadratic clients (FedDualAvg's family) live with their loss
from fedcheck.problems.compiled import quad_noisy_grad, quad_value  # noqa: E402,F401


# ----------------------------------------------------------------------------------------------
# local gradient steps of least-squares clients (the one FedAvg's local steps, pieces.local_steps: FedProx and
# any user round function built on it), compiled: every instance, client and local step in one call.
#     g = H_i w - c_i  [+ mu (w - anchor)];   w <- w - eta g;   [w <- proj_{||.|| <= r}(w)]
# numpy's path spends ~10 calls of ~1 us per local step on (B, n, p) arrays of a few thousand numbers; this is
# one pass per client with its H_i in L1.  The same formula and the same elementwise order as numpy's; the
# product H_i w is summed in index order (BLAS's gemv sums in another order: the last bits differ) and the
# projection's norm is numpy's pairwise sum (``np.add.reduce`` of the squares, bit for bit).
def pairwise_sq(v, p):
    """``np.add.reduce(v[:p] * v[:p])``, numpy's pairwise order (8 accumulators for 8 <= p <= 128)."""
    if p < 8:
        s = 0.0
        for k in range(p):
            s += v[k] * v[k]
        return s
    if p > 128:       # numpy splits recursively above 128 elements: halves (a multiple of 8)
        h = p // 2
        h -= h % 8
        return pairwise_sq(v, h) + pairwise_sq(v[h:], p - h)
    r0, r1, r2, r3 = v[0] * v[0], v[1] * v[1], v[2] * v[2], v[3] * v[3]
    r4, r5, r6, r7 = v[4] * v[4], v[5] * v[5], v[6] * v[6], v[7] * v[7]
    i = 8
    while i + 8 <= p:
        r0 += v[i] * v[i]
        r1 += v[i + 1] * v[i + 1]
        r2 += v[i + 2] * v[i + 2]
        r3 += v[i + 3] * v[i + 3]
        r4 += v[i + 4] * v[i + 4]
        r5 += v[i + 5] * v[i + 5]
        r6 += v[i + 6] * v[i + 6]
        r7 += v[i + 7] * v[i + 7]
        i += 8
    s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < p:
        s += v[i] * v[i]
        i += 1
    return s


def _ls_local_steps_loop(W, H, c, eta, steps, anchor, mu, prox, rad, proj, buf):
    """In place on ``W`` ``(B, S, p)``: ``steps[b]`` steps of instance ``b`` with sizes ``eta[t, b]``; ``H``
    ``(B, S, p, p)``, ``c`` ``(B, S, p)``; ``prox``: add ``mu[b] (w - anchor[b])``; ``proj``: project onto the
    ball of radius ``rad[b]`` (numpy's ``L2Ball.project``: scale ``r / ||w||`` when ``||w|| > r``)."""
    B, S, p = W.shape
    g = buf
    for b in range(B):
        nb = steps[b]
        for i in range(S):
            w = W[b, i]
            Hi = H[b, i]
            ci = c[b, i]
            for t in range(nb):
                e = eta[min(t, eta.shape[0] - 1), b]
                for k in range(p):
                    acc = 0.0
                    for j in range(p):
                        acc += Hi[k, j] * w[j]
                    g[k] = acc - ci[k]
                if prox:
                    m_ = mu[b]
                    for k in range(p):
                        g[k] = g[k] + m_ * (w[k] - anchor[b, k])
                for k in range(p):
                    w[k] = w[k] - e * g[k]
                if proj:
                    nrm = np.sqrt(pairwise_sq(w, p))
                    r = rad[b]
                    if nrm > r:
                        sc = r / (nrm if nrm > 0 else 1.0)
                        for k in range(p):
                            w[k] = w[k] * sc
    return W


try:
    pairwise_sq = _numba.njit(cache=True, fastmath=False, nogil=True)(pairwise_sq) if _JIT else pairwise_sq
    # the local steps of least-squares clients, compiled (None when numba is off): fedcheck.algorithms.fedavg_jit
    ls_local_steps_compiled = (_numba.njit(cache=True, fastmath=False, nogil=True)(_ls_local_steps_loop)
                               if _JIT else None)
except Exception:  # pragma: no cover
    ls_local_steps_compiled = None


def blocked_layout(loss):
    """``(Hb, cb)``: ``H`` and ``c`` of the client rows in blocks of ``lanes.LANES``, made once per loss."""
    lay = loss.__dict__.get("_blocked_layout")
    H = loss.H
    if lay is None or lay[0] is not H:
        B, S, p = loss.c.shape
        R = B * S
        lay = loss.__dict__["_blocked_layout"] = (H, blocks_of(H.reshape(R, p, p), R),
                                                  blocks_of(loss.c.reshape(R, p), R))
    return lay[1], lay[2]


def plain_least_squares(loss) -> bool:
    """Whether ``loss`` is the library's least squares in its ``H`` form, batched ``(B, n, ...)``."""
    return (isinstance(loss, LeastSquares) and type(loss).grad is LeastSquares.grad and not loss.factored
            and loss.A.ndim == 4 and loss.H.dtype == np.float64)


# ----------------------------------------------------------------------------------------------
# FedMLS's approx-prox step (fedcheck.algorithms.mls.approx_prox) around the numpy oracle and numpy's
# ``einsum`` norm: the two elementwise stretches of a step, each one compiled pass instead of ~6 numpy calls
# on (B, n, p) arrays, with the numpy formulas' exact operations (no contraction into FMAs): the same bits.
def _approx_prox_pre(U, V, G, a, sc, out):
    """``out = ((1 - a) U + a V) - G (a sc_b)`` (numpy: ``G *= a * sc; Uh = (1 - a) * U; Uh += a * V; Uh -= G``)."""
    B, n, p = U.shape
    om = 1.0 - a
    for b in range(B):
        f = a * sc[b]
        for i in range(n):
            for k in range(p):
                out[b, i, k] = (om * U[b, i, k] + a * V[b, i, k]) - G[b, i, k] * f
    return out


def _approx_prox_post(Uh, nrm2, R, U, Ut, th, T, t):
    """``Uh *= R / max(sqrt(nrm2), R)``; rows with ``t <= T_b``: ``U = Uh``; ``Ut += (th [t <= T_b]) (U - Ut)``
    (numpy's ``np.maximum`` NaN rule: a NaN norm gives NaN)."""
    B, n, p = Uh.shape
    for b in range(B):
        r = R[b]
        act = t <= T[b]
        c = th if act else 0.0
        for i in range(n):
            nrm = np.sqrt(nrm2[b, i])
            m = r if nrm <= r else nrm
            f = r / m
            for k in range(p):
                Uh[b, i, k] = Uh[b, i, k] * f
            if act:
                for k in range(p):
                    U[b, i, k] = Uh[b, i, k]
            for k in range(p):
                Ut[b, i, k] = Ut[b, i, k] + c * (U[b, i, k] - Ut[b, i, k])


try:
    _approx_prox_pre_c = _numba.njit(cache=True, fastmath=False, nogil=True)(_approx_prox_pre) if _JIT else None
    _approx_prox_post_c = _numba.njit(cache=True, fastmath=False, nogil=True)(_approx_prox_post) if _JIT else None
except Exception:  # pragma: no cover
    _approx_prox_pre_c = _approx_prox_post_c = None
