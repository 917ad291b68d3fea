"""A CNN's max pooling and the backward pass of the convolution block below it, compiled (numba): one pass per image.

:func:`max_pool`: the forward pooling as :meth:`CNN._pool_forward`'s chain of ``np.maximum`` over the window offsets
(0.65 -> 0.23 ms on the Table 2 CNN's batch).  :func:`conv_pool_backward`: where
:meth:`fedcheck.problems.networks.CNN._backward` (the reference, kept as the numpy path) computes, per convolution
layer, ``dP = dH * act'(Zp)`` (an elementwise pass), the max pooling's backward pass ``dZ`` (``dP`` to the first
maximum of each window in row-major order, :func:`max_pool_backward`), and the bias
gradient ``dZ.reshape(..., m Ho Wo, c).sum(-2)`` (a strided reduction: ~0.9 ms of the Table 2 CNN's ~5.4 ms
gradient).  Here the three in one pass over each image, with the same floating-point operations in the same order:
``dH * (1.0 if Zp > 0 else 0.0)`` (ReLU) or ``dH * (1.0 - H * H)`` (tanh), ``dP * hit``, and the bias sums from
``0.0`` adding the rows in order (numpy's order for a reduction over a non-contiguous axis: sequential, identity
first) -- the same bits (``tests/test_cnn_jit.py``).  Declines (``None``: numpy runs) when numba is off
(``FEDCHECK_JIT=0``), for average pooling or no pooling, or arrays that are not C-contiguous float64 of the shapes
it takes.
"""
from __future__ import annotations

import numpy as np

from fedcheck.problems.compiled import AVAILABLE, numba

__all__ = ["conv_pool_backward", "max_pool", "max_pool_backward"]

RELU, TANH, IDENTITY = 0, 1, 2     # IDENTITY: dH is already dP (the pooling's backward pass alone)


def _loop(dH, Zp, Hc, V, q, kind, per, out, bsum, taken, dP):
    N, Ho, Wo, C = V.shape
    Hp, Wp = Zp.shape[1], Zp.shape[2]
    for n in range(N):
        g = n // per
        if n % per == 0:
            for c in range(C):
                bsum[g, c] = 0.0
        if kind == RELU:                            # dP = dH * act'(Zp), elementwise as numpy's
            for i in range(Hp):
                for j in range(Wp):
                    for c in range(C):
                        dP[i, j, c] = dH[n, i, j, c] * (1.0 if Zp[n, i, j, c] > 0 else 0.0)
        elif kind == TANH:
            for i in range(Hp):
                for j in range(Wp):
                    for c in range(C):
                        h = Hc[n, i, j, c]
                        dP[i, j, c] = dH[n, i, j, c] * (1.0 - h * h)
        else:
            for i in range(Hp):
                for j in range(Wp):
                    for c in range(C):
                        dP[i, j, c] = dH[n, i, j, c]
        for i in range(Hp):
            taken[:, :] = False
            for a in range(q):                      # the windows' offsets in row-major order, as numpy's masks
                r = i * q + a
                for j in range(Wp):
                    for b in range(q):
                        col = j * q + b
                        for c in range(C):
                            hit = (V[n, r, col, c] == Zp[n, i, j, c]) & (not taken[j, c])
                            out[n, r, col, c] = dP[i, j, c] * (1.0 if hit else 0.0)
                            taken[j, c] |= hit
        for r in range(Ho):                         # the bias gradient: rows in order (numpy's sequential sum)
            for col in range(Wo):
                for c in range(C):
                    bsum[g, c] += out[n, r, col, c]
    return out


def _pool_loop(V, q, out):
    N, Hp, Wp, C = out.shape
    for n in range(N):
        for i in range(Hp):
            for j in range(Wp):
                for c in range(C):
                    out[n, i, j, c] = V[n, i * q, j * q, c]
            for a in range(q):                      # numpy's chain np.maximum(out, view) over the offsets in order
                for b in range(q):
                    if a == 0 and b == 0:
                        continue
                    for j in range(Wp):
                        for c in range(C):
                            acc = out[n, i, j, c]
                            v = V[n, i * q + a, j * q + b, c]
                            out[n, i, j, c] = acc if (acc > v or acc != acc) else v   # NaN kept, ties -> v
    return out


try:
    _pool_compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_pool_loop) if AVAILABLE else None
except Exception:  # pragma: no cover
    _pool_compiled = None


def max_pool(V: np.ndarray, pool: int, out: np.ndarray | None = None) -> np.ndarray | None:
    """``pool x pool`` max pooling of ``V`` ``(..., H, W, C)`` (rows and columns past a multiple of ``pool`` dropped),
    as :meth:`CNN._pool_forward`'s chain of ``np.maximum`` over the window offsets in row-major order (NaN propagated;
    equal values, ``-0.0`` and ``0.0`` included, give the later one), into ``out`` when given (a C-contiguous float64
    array of the result's shape); ``None`` when it does not apply."""
    q = int(pool)
    if _pool_compiled is None or q < 2 or not _c_f64(V) or V.ndim < 3:
        return None
    H, W, C = V.shape[-3:]
    if H < q or W < q:
        return None
    lead = V.shape[:-3]
    N = int(np.prod(lead, dtype=np.int64))
    if out is None or out.shape != lead + (H // q, W // q, C) or not _c_f64(out):
        out = np.empty(lead + (H // q, W // q, C))
    _pool_compiled(V.reshape(N, H, W, C), q, out.reshape(N, H // q, W // q, C))
    return out


try:
    _compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_loop) if AVAILABLE else None
except Exception:  # pragma: no cover
    _compiled = None


def _c_f64(a: np.ndarray) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.c_contiguous


def conv_pool_backward(dH: np.ndarray, Zp: np.ndarray, Hc: np.ndarray, Z: np.ndarray, pool: int, pooling: str,
                       activation: str, out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """``(dZ, bias_grad)`` of a convolution layer ``Z`` ``(..., m, Ho, Wo, c)`` followed by ``pool x pool`` max pooling
    ``Zp`` ``(..., m, Ho // pool, Wo // pool, c)`` and the activation ``Hc = act(Zp)``, given ``dH`` the gradient
    with respect to ``Hc``: ``dZ`` as :meth:`CNN._pool_backward` of ``dH * act'(Zp)``, ``bias_grad`` ``(..., c)`` its
    sum over the images and positions; ``dZ`` in ``out`` when given (a C-contiguous float64 array of ``Z``'s shape,
    reused: no fresh pages).  ``None`` when it does not apply (the caller runs numpy)."""
    if _compiled is None or pooling != "max" or pool < 2 or activation not in ("relu", "tanh"):
        return None
    if not all(_c_f64(a) for a in (dH, Zp, Hc, Z)) or Z.ndim < 4:
        return None
    Ho, Wo, C = Z.shape[-3:]
    lead, m = Z.shape[:-4], Z.shape[-4]
    q = int(pool)
    want = lead + (m, Ho // q, Wo // q, C)
    if not (Zp.shape == Hc.shape == dH.shape == want) or m < 1 or Ho < q or Wo < q:
        return None
    N = int(np.prod(lead, dtype=np.int64)) * m
    if out is None or out.shape != Z.shape or not _c_f64(out):
        out = np.empty(Z.shape)
    if Ho % q or Wo % q:
        out.fill(0.0)                               # rows and columns past a multiple of q: no window, gradient 0
    bsum = np.empty(lead + (C,))
    _compiled(dH.reshape(N, Ho // q, Wo // q, C), Zp.reshape(N, Ho // q, Wo // q, C), Hc.reshape(N, Ho // q, Wo // q, C),
              Z.reshape(N, Ho, Wo, C), q, RELU if activation == "relu" else TANH, m, out.reshape(N, Ho, Wo, C),
              bsum.reshape(-1, C), np.empty((Wo // q, C), dtype=np.bool_), np.empty((Ho // q, Wo // q, C)))
    return out, bsum


def max_pool_backward(dP: np.ndarray, V: np.ndarray, P: np.ndarray, q: int) -> np.ndarray | None:
    """The gradient with respect to ``V`` ``(..., H, W, C)`` of its ``q x q`` max pooling ``P`` ``(..., H // q,
    W // q, C)`` given the gradient ``dP`` with respect to ``P``: ``dP`` to the first maximum of each window in
    row-major order, ``dP * 0.0`` elsewhere (rows and columns past a multiple of ``q``: 0) -- numpy's ``dP * hit``
    of :meth:`CNN._pool_backward`, bit for bit (NaN windows: no hit); ``None`` when it does not apply."""
    if _compiled is None or V.ndim < 3 or q < 2 or not (_c_f64(dP) and _c_f64(V) and _c_f64(P)):
        return None
    H, W, C = V.shape[-3:]
    if P.shape != dP.shape or P.shape != V.shape[:-3] + (H // q, W // q, C) or H < q or W < q:
        return None
    N = int(np.prod(V.shape[:-3], dtype=np.int64))
    out = np.zeros(V.shape) if (H % q or W % q) else np.empty(V.shape)
    sh = (N, H // q, W // q, C)
    _compiled(dP.reshape(sh), P.reshape(sh), P.reshape(sh), V.reshape(N, H, W, C), int(q), IDENTITY, max(N, 1),
              out.reshape(N, H, W, C), np.empty((1, C)), np.empty((W // q, C), dtype=np.bool_),
              np.empty((H // q, W // q, C)))
    return out
