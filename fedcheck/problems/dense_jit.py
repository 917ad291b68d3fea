"""The elementwise passes of a network's dense layers, compiled (numba): one pass each where numpy makes several.

:meth:`fedcheck.problems.networks._Network._dense_forward`, ``_softmax_delta`` and ``_dense_backward`` (the
reference, kept as the numpy path) spend, at FedFW's Table 2 DNN (2 x 10 clients x 1,091 rows, widths 60-20-20-10),
about a third of the gradient's time outside the matmuls: the bias add and the activation (two passes over each
hidden layer), the softmax's short rows of ``K = 10`` (a chain of ``np.maximum``, a broadcast subtraction, a
reduction over a short last axis, the one-hot subtraction and the weights: ~1 ms of a ~9 ms gradient), ReLU's mask
``back * (H > 0)`` (a boolean temporary and a pass) and the bias gradients ``delta.sum(-2)`` (a strided reduction).
Here:

* :func:`bias_act` -- ``act(Z + b)`` in place, one pass (ReLU as ``np.maximum(z, 0.0)``: NaN kept; tanh: the
  bias here and numpy's ``tanh`` after it, whose SIMD bits libm's would not give);
* :func:`softmax_delta` -- ``(exp(log_softmax(Z)) - onehot) * w`` and its sum over the rows (the last layer's
  bias gradient): the shift by the row maximum, then numpy's ``exp``, the row sums in numpy's pairwise order,
  numpy's ``log``, the subtraction, numpy's ``exp``, then the one-hot and the weights with the column sums in
  the same pass -- the operations of the reference in its order, the transcendental functions numpy's own;
* :func:`mask_sums` -- ``back * act'(H)`` in place (ReLU: ``* 1.0`` where ``H > 0``, else ``* 0.0``; tanh:
  ``* (1.0 - H * H)``) and its sums over the rows (the layer's bias gradient), one pass.

The same bits as the numpy path (``tests/test_network_grad_fast.py``); the row sums are sequential from ``0.0``,
numpy's order for a reduction over a non-contiguous axis.  Broadcasting: the activations have the lead shape of
the points and the data broadcast together; the biases (lead shape of the points) and the data's one-hot labels
and weights are read through index maps (:func:`lead_index`), so no array is broadcast into a copy.  Each function
declines (``None``: the caller runs numpy) when numba is off (``FEDCHECK_JIT=0``) or an array is not float64 of
the expected layout.
"""
from __future__ import annotations

import numpy as np

from fedcheck.problems.compiled import AVAILABLE, numba

__all__ = ["bias_act", "lead_index", "mask_sums", "softmax_delta"]

RELU, TANH = 0, 1
_PW_BLOCK = 128          # numpy's pairwise summation: 8 accumulators up to this length


def _bias_act_loop(Z, b, bidx, kind):
    N, m, h = Z.shape
    for n in range(N):
        bn = bidx[n]
        for r in range(m):
            for k in range(h):
                z = Z[n, r, k] + b[bn, k]
                if kind == RELU:
                    z = z if (z >= 0.0 or z != z) else 0.0        # np.maximum(z, 0.0): NaN kept, -0.0 kept
                Z[n, r, k] = z
    return Z


def _shift_loop(Z):
    """``Z`` minus its row maximum (``np.maximum`` over the columns in order: NaN propagated)."""
    R, K = Z.shape
    for r in range(R):
        top = Z[r, 0]
        for k in range(1, K):
            z = Z[r, k]
            if z > top or z != z:
                top = z
        for k in range(K):
            Z[r, k] = Z[r, k] - top
    return Z


def _row_sums_loop(E, S):
    """``E.sum(-1)`` as numpy computes it over a contiguous last axis of length ``K <= 128``: its pairwise sum
    (under 8 values: sequential from 0.0; else 8 accumulators over blocks of 8, a fixed tree, the rest in order)."""
    R, K = E.shape
    for r in range(R):
        if K < 8:
            res = 0.0
            for i in range(K):
                res += E[r, i]
        else:
            a0 = E[r, 0]
            a1 = E[r, 1]
            a2 = E[r, 2]
            a3 = E[r, 3]
            a4 = E[r, 4]
            a5 = E[r, 5]
            a6 = E[r, 6]
            a7 = E[r, 7]
            i = 8
            while i < K - (K % 8):
                a0 += E[r, i]
                a1 += E[r, i + 1]
                a2 += E[r, i + 2]
                a3 += E[r, i + 3]
                a4 += E[r, i + 4]
                a5 += E[r, i + 5]
                a6 += E[r, i + 6]
                a7 += E[r, i + 7]
                i += 8
            res = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
            while i < K:
                res += E[r, i]
                i += 1
        S[r] = res
    return S


def _sub_rows_loop(Z, S):
    R, K = Z.shape
    for r in range(R):
        s = S[r]
        for k in range(K):
            Z[r, k] = Z[r, k] - s
    return Z


def _delta_loop(Z, onehot, w, didx, gb):
    """``(Z - onehot) * w`` in place and its column sums per batch entry (sequential from 0.0) into ``gb``."""
    N, m, K = Z.shape
    for n in range(N):
        dn = didx[n]
        for k in range(K):
            gb[n, k] = 0.0
        for r in range(m):
            wr = w[dn, r]
            for k in range(K):
                v = (Z[n, r, k] - onehot[dn, r, k]) * wr
                Z[n, r, k] = v
                gb[n, k] += v
    return Z


def _mask_sums_loop(B, H, kind, gb):
    N, m, h = B.shape
    for n in range(N):
        for k in range(h):
            gb[n, k] = 0.0
        for r in range(m):
            for k in range(h):
                a = H[n, r, k]
                v = B[n, r, k] * ((1.0 if a > 0.0 else 0.0) if kind == RELU else (1.0 - a * a))
                B[n, r, k] = v
                gb[n, k] += v
    return B


def _jit(fn):
    try:
        return numba.njit(cache=True, fastmath=False, nogil=True)(fn) if AVAILABLE else None
    except Exception:  # pragma: no cover
        return None


_bias_act, _shift, _row_sums, _sub_rows, _delta, _mask_sums = (
    _jit(f) for f in (_bias_act_loop, _shift_loop, _row_sums_loop, _sub_rows_loop, _delta_loop, _mask_sums_loop))


def _ok(*arrays) -> bool:
    return all(isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.c_contiguous for a in arrays)


def lead_index(lead_out: tuple, lead_in: tuple) -> np.ndarray:
    """For each entry of the lead shape ``lead_out`` (flattened, C order), the flat index of the entry of
    ``lead_in`` broadcast to it (``lead_in`` broadcasts against ``lead_out``)."""
    size = int(np.prod(lead_in, dtype=np.int64))
    return np.ascontiguousarray(np.broadcast_to(np.arange(size).reshape(lead_in), lead_out)).reshape(-1)


def _rows(b: np.ndarray) -> np.ndarray:
    """A bias ``(..., h)`` (a view into the points) as a C-contiguous ``(N, h)`` array (small)."""
    return np.ascontiguousarray(b.reshape(-1, b.shape[-1]) if b.ndim > 1 else b[None])


def bias_act(Z: np.ndarray, b: np.ndarray, activation: str) -> np.ndarray | None:
    """``act(Z + b)`` in place for ``Z`` ``(..., m, h)`` (C-contiguous) and ``b`` ``(..., h)`` (its lead shape
    broadcasting to ``Z``'s): the same bits as ``Z += b[..., None, :]`` then ``np.maximum(Z, 0.0, out=Z)`` (ReLU)
    or ``np.tanh(Z, out=Z)``; ``None`` when it does not apply."""
    if _bias_act is None or activation not in ("relu", "tanh") or Z.ndim < 2 or not _ok(Z) or b.dtype != np.float64:
        return None
    lead, (m, h) = Z.shape[:-2], Z.shape[-2:]
    if b.shape[-1] != h or np.broadcast_shapes(lead, b.shape[:-1]) != lead:
        return None
    _bias_act(Z.reshape(-1, m, h), _rows(b), lead_index(lead, b.shape[:-1]), RELU if activation == "relu" else TANH)
    if activation == "tanh":
        np.tanh(Z, out=Z)
    return Z


def softmax_delta(Z: np.ndarray, onehot: np.ndarray, w: np.ndarray, E: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(delta, bias_grad)``: ``delta = (exp(log_softmax(Z)) - onehot) * w[..., None]`` in place in the logits
    ``Z`` ``(..., m, K)`` (``onehot`` ``(..., m, K)`` and ``w`` ``(..., m)`` of a lead shape broadcasting to
    ``Z``'s) and ``bias_grad = delta.sum(-2)``, the same bits as the numpy path; ``E`` a scratch array of ``Z``'s
    shape (or ``None``); ``None`` when it does not apply."""
    if _shift is None or Z.ndim < 2 or not _ok(Z, onehot, w):
        return None
    lead, (m, K) = Z.shape[:-2], Z.shape[-2:]
    dlead = onehot.shape[:-2]
    if (K < 1 or K > _PW_BLOCK or onehot.shape[-2:] != (m, K) or w.shape != dlead + (m,)
            or np.broadcast_shapes(lead, dlead) != lead):
        return None
    Z2 = Z.reshape(-1, K)
    _shift(Z2)
    if E is None or E.shape != Z.shape or not _ok(E):
        E = np.empty(Z.shape)
    np.exp(Z, out=E)
    S = _row_sums(E.reshape(-1, K), np.empty(Z2.shape[0]))
    np.log(S, out=S)
    _sub_rows(Z2, S)
    np.exp(Z, out=Z)
    gb = np.empty(lead + (K,))
    _delta(Z.reshape(-1, m, K), onehot.reshape(-1, m, K), w.reshape(-1, m), lead_index(lead, dlead), gb.reshape(-1, K))
    return Z, gb


def mask_sums(B: np.ndarray, H: np.ndarray, activation: str, out: np.ndarray) -> np.ndarray | None:
    """``B *= act'`` in place (``H = act(Z)``, both ``(..., m, h)`` C-contiguous; ReLU: ``* 1.0`` where ``H > 0``,
    else ``* 0.0``; tanh: ``* (1.0 - H * H)``) and ``B.sum(-2)`` into ``out`` ``(..., h)`` (any strides, e.g. a view
    of the gradient), the same bits as numpy's; ``None`` when it does not apply."""
    if (_mask_sums is None or activation not in ("relu", "tanh") or B.ndim < 2 or not _ok(B, H) or B.shape != H.shape
            or out.shape != B.shape[:-2] + B.shape[-1:] or out.dtype != np.float64):
        return None
    h = B.shape[-1]
    o2 = out.reshape(-1, h)
    if not np.shares_memory(o2, out):                # out's lead axes cannot be merged into a view
        return None
    _mask_sums(B.reshape(-1, B.shape[-2], h), H.reshape(-1, H.shape[-2], h), RELU if activation == "relu" else TANH,
               o2)
    return B
