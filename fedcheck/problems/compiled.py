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

__all__ = ["AVAILABLE", "numba", "quad_noisy_grad", "quad_value"]   # the CNN's kernels: .cnn_jit


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
