"""Compiled kernels of the problem library (numba) and whether compiled code runs at all.

numba is a dependency; if it cannot be imported, or ``FEDCHECK_JIT=0`` is set, every compiled path falls back to
numpy (``AVAILABLE`` False).  The kernels here belong to losses (the engine's round kernels are in
:mod:`fedcheck.algorithms.jit` and :mod:`fedcheck.algorithms.kernels`, which read ``AVAILABLE`` from here).
"""
from __future__ import annotations

import os

import numpy as np

try:  # pragma: no cover - exercised when numba is installed
    import numba
    AVAILABLE = os.environ.get("FEDCHECK_JIT", "1") not in ("0", "off", "false")
except Exception:  # pragma: no cover
    numba = None
    AVAILABLE = False

__all__ = ["AVAILABLE", "lane_pairwise_sum", "numba", "quad_noisy_grad", "quad_value"]   # the CNN's kernels: .cnn_jit


# ----------------------------------------------------------------------------------------------
# the stochastic gradient of shared-Hessian quadratic clients (FedDualAvg's family):
# ``(W Q^T + c) + xi * sd`` in one pass.  numpy's sequence (a batched ``matmul`` of 64 tiny matrices, then
# three elementwise passes) costs ~6.7 us on 64 x 4 x 6, this ~4 us; the same formula, with the products
# ``W Q^T`` summed in index order (BLAS's order differs in the last bits).
def _quad_noisy_grad_loop(W, QT, c, xi, sd, out):
    B, S, p = W.shape
    for b in range(B):
        for s in range(S):
            for i in range(p):
                acc = 0.0
                for j in range(p):
                    acc += W[b, s, j] * QT[b, j, i]
                out[b, s, i] = (acc + c[b, s, i]) + xi[b, s, i] * sd[b, s, i]
    return out


try:
    _quad_noisy_grad_compiled = (numba.njit(cache=True, fastmath=False, nogil=True)(_quad_noisy_grad_loop)
                                 if AVAILABLE else None)
except Exception:  # pragma: no cover
    _quad_noisy_grad_compiled = None


def _c_f64(a: np.ndarray) -> bool:
    return a.dtype == np.float64 and a.flags.c_contiguous


def quad_noisy_grad(W: np.ndarray, QT: np.ndarray, c: np.ndarray, xi: np.ndarray, sd: np.ndarray) -> np.ndarray | None:
    """``(W @ QT + c) + xi * sd`` for ``W, c, xi, sd`` ``(B, S, p)`` and ``QT`` ``(B, p, p)``, compiled; ``None``
    when numba is off or an input is not C-contiguous float64 of those shapes (the caller uses numpy)."""
    if (_quad_noisy_grad_compiled is None or W.ndim != 3 or not (W.shape == c.shape == xi.shape == sd.shape)
            or QT.shape != (W.shape[0], W.shape[2], W.shape[2])
            or not (_c_f64(W) and _c_f64(QT) and _c_f64(c) and _c_f64(xi) and _c_f64(sd))):
        return None
    return _quad_noisy_grad_compiled(W, QT, c, xi, sd, np.empty(W.shape))


# the objective of quadratic clients at the server point, recorded every round:
# ``0.5 w^T Qbar w + cbar^T w + ebar`` per instance; numpy's three-operand ``einsum`` costs ~7.8 us on
# 64 x 6, this ~1 us (the same formula, the sums in index order).
def _quad_value_loop(w, Q, c, e, out):
    B, p = w.shape
    for b in range(B):
        quad = 0.0
        for i in range(p):
            acc = 0.0
            for j in range(p):
                acc += Q[b, i, j] * w[b, j]
            quad += w[b, i] * acc
        lin = 0.0
        for i in range(p):
            lin += w[b, i] * c[b, i]
        out[b] = (0.5 * quad + lin) + e[b]
    return out


try:
    _quad_value_compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_quad_value_loop) if AVAILABLE else None
except Exception:  # pragma: no cover
    _quad_value_compiled = None


def quad_value(w: np.ndarray, Q: np.ndarray, c: np.ndarray, e: np.ndarray) -> np.ndarray | None:
    """``0.5 w^T Q w + c^T w + e`` per row of ``w`` ``(B, p)`` (``Q`` ``(B, p, p)``, ``c`` ``(B, p)``, ``e``
    ``(B,)``), compiled; ``None`` when numba is off or an input is not C-contiguous float64."""
    if _quad_value_compiled is None or w.ndim != 2:
        return None
    if not (_c_f64(w) and _c_f64(Q) and _c_f64(c) and _c_f64(e)):
        return None
    B, p = w.shape
    if Q.shape != (B, p, p) or c.shape != (B, p) or e.shape != (B,):
        return None
    return _quad_value_compiled(w, Q, c, e, np.empty(B))


# ----------------------------------------------------------------------------------------------
# numpy's pairwise sum along the first axis of a block whose last axis is the instances (the compiled kernels that
# run every instance at once: FedSGM's run, the composite family's rounds).
def lane_pairwise_sum(T, n, out, r):
    """``out[b] = np.add.reduce(T[:n, b])`` for every ``b``: the identity 0 plus numpy's pairwise sum (sequential
    below 8 terms, 8 accumulators up to 128; callers decline longer axes, which numpy splits in halves); ``r``
    scratch ``(8, B)``.  Compiled (no reference counting: a call from a kernel costs no atomic operation) when
    numba is on, else this function."""
    B = out.shape[0]
    if n < 8:                  # one pass over the instances: numpy's sequential sum from -0.0, then + 0.0
        for b in range(B):
            v = -0.0
            if n > 0:
                v += T[0, b]
            if n > 1:
                v += T[1, b]
            if n > 2:
                v += T[2, b]
            if n > 3:
                v += T[3, b]
            if n > 4:
                v += T[4, b]
            if n > 5:
                v += T[5, b]
            if n > 6:
                v += T[6, b]
            out[b] = 0.0 + v
        return
    for c in range(8):
        for b in range(B):
            r[c, b] = T[c, b]
    i = 8
    while i + 8 <= n:
        for c in range(8):
            for b in range(B):
                r[c, b] += T[i + c, b]
        i += 8
    for b in range(B):
        out[b] = ((r[0, b] + r[1, b]) + (r[2, b] + r[3, b])) + ((r[4, b] + r[5, b]) + (r[6, b] + r[7, b]))
    while i < n:
        for b in range(B):
            out[b] += T[i, b]
        i += 1
    for b in range(B):
        out[b] = 0.0 + out[b]


if AVAILABLE:
    lane_pairwise_sum = numba.njit(cache=True, fastmath=False, nogil=True, error_model="numpy",
                                   _nrt=False)(lane_pairwise_sum)
