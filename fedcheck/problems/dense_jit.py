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
* :func:`softmax_delta` -- ``(exp(log_softmax(Z + b)) - onehot) * w`` and its sum over the rows (the last layer's
  bias gradient): the bias and the shift by the row maximum in one pass, then numpy's ``exp``, the row sums in numpy's pairwise order,
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

__all__ = ["COMPILED", "bias_act", "lead_index", "mask_sums", "mlp_grad", "mlp_value", "softmax_delta"]

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


def _shift_loop(Z, b, bidx):
    """``Z + b``, then minus its row maximum (a NaN in a row makes the whole row NaN further on, as numpy's
    NaN-propagating ``np.maximum`` does: the row's sum of exponentials is NaN)."""
    N, m, K = Z.shape
    for n in range(N):
        bn = bidx[n]
        for r in range(m):
            top = -np.inf
            for k in range(K):
                z = Z[n, r, k] + b[bn, k]
                Z[n, r, k] = z
                if z > top:
                    top = z
            if top == -np.inf:              # all -inf (or NaN): numpy's maximum is the first value
                top = Z[n, r, 0]
            for k in range(K):
                Z[n, r, k] = Z[n, r, k] - top
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
    acc = np.zeros(K)                   # a local accumulator: the stores to ``gb`` would serialize the loop
    for n in range(N):
        dn = didx[n]
        acc[:] = 0.0
        for r in range(m):
            wr = w[dn, r]
            for k in range(K):
                v = (Z[n, r, k] - onehot[dn, r, k]) * wr
                Z[n, r, k] = v
                acc[k] += v
        for k in range(K):
            gb[n, k] = acc[k]
    return Z


def _mask_sums_loop(B, H, kind, gb):
    N, m, h = B.shape
    acc = np.zeros(h)
    for n in range(N):
        acc[:] = 0.0
        for r in range(m):
            for k in range(h):
                a = H[n, r, k]
                v = B[n, r, k] * ((1.0 if a > 0.0 else 0.0) if kind == RELU else (1.0 - a * a))
                B[n, r, k] = v
                acc[k] += v
        for k in range(h):
            gb[n, k] = acc[k]
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


_INDEX: dict = {}


def lead_index(lead_out: tuple, lead_in: tuple) -> np.ndarray:
    """For each entry of the lead shape ``lead_out`` (flattened, C order), the flat index of the entry of
    ``lead_in`` broadcast to it (``lead_in`` broadcasts against ``lead_out``); kept per pair of shapes."""
    key = (tuple(lead_out), tuple(lead_in))
    idx = _INDEX.get(key)
    if idx is None:
        size = int(np.prod(lead_in, dtype=np.int64))
        idx = np.ascontiguousarray(np.broadcast_to(np.arange(size).reshape(lead_in), lead_out)).reshape(-1)
        idx.flags.writeable = False
        if len(_INDEX) > 256:
            _INDEX.clear()
        _INDEX[key] = idx
    return idx


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


def softmax_delta(Z: np.ndarray, b: np.ndarray, onehot: np.ndarray, w: np.ndarray, E: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(delta, bias_grad)``: ``delta = (exp(log_softmax(Z + b)) - onehot) * w[..., None]`` in place in ``Z``
    ``(..., m, K)`` (the last layer's products without its bias ``b`` ``(..., K)``; ``onehot`` ``(..., m, K)`` and
    ``w`` ``(..., m)``: lead shapes broadcasting to ``Z``'s) and ``bias_grad = delta.sum(-2)``, the same bits as
    ``Z += b[..., None, :]`` then the numpy path; ``E`` a scratch array of ``Z``'s shape (or ``None``); ``None``
    when it does not apply (``Z`` untouched)."""
    if _shift is None or Z.ndim < 2 or not _ok(Z, onehot, w) or b.dtype != np.float64:
        return None
    lead, (m, K) = Z.shape[:-2], Z.shape[-2:]
    dlead = onehot.shape[:-2]
    if (K < 1 or K > _PW_BLOCK or b.shape[-1] != K or onehot.shape[-2:] != (m, K) or w.shape != dlead + (m,)
            or np.broadcast_shapes(lead, dlead) != lead or np.broadcast_shapes(lead, b.shape[:-1]) != lead):
        return None
    Z2 = Z.reshape(-1, K)
    _shift(Z.reshape(-1, m, K), _rows(b), lead_index(lead, b.shape[:-1]))
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


#: whether the compiled passes run (numba present and ``FEDCHECK_JIT`` not 0)
COMPILED = _shift is not None


# ----------------------------------------------------------------------------------------------------------
# The MLP's whole gradient, client by client, in two compiled passes around numpy's exponentials: numpy's own
# BLAS ``dgemm`` (the very function ``np.matmul`` calls, with the same arguments: the same bits) called from
# numba for each client's products, the elementwise passes above in between, on one client's arrays at a time
# (the first layer's data of a client, ~0.5 MB at Table 2's size, stays in cache for the points sharing it; the
# backward pass's two scratch arrays are one client's).  numpy's batched ``matmul`` makes the same products
# layer by layer over all clients: each layer's activations (3.5 MB) leave the cache between the passes.
_ROW, _NOTRANS, _TRANS = 101, 111, 112          # CBLAS_ORDER / CBLAS_TRANSPOSE


def _find_dgemm():
    """numpy's BLAS ``cblas_dgemm`` (address, 64-bit ints?) from the shared libraries this process has loaded (numpy's
    own first), or ``None`` (no ``/proc/self/maps``, a BLAS that is not a shared library); checked against
    ``np.matmul`` before use (:func:`_blas_is_numpys`)."""
    import ctypes
    import os
    try:
        with open("/proc/self/maps") as fh:
            paths = [ln.split()[-1] for ln in fh if ln.rstrip().split()[-1].startswith("/")]
    except OSError:
        return None
    paths = [q for q in dict.fromkeys(paths) if "blas" in os.path.basename(q).lower()]
    home = os.path.dirname(os.path.dirname(np.__file__))
    paths.sort(key=lambda q: not q.startswith(os.path.join(home, "numpy")))
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name, wide in (("scipy_cblas_dgemm64_", True), ("cblas_dgemm64_", True), ("scipy_cblas_dgemm", False),
                           ("cblas_dgemm", False)):
            fn = getattr(lib, name, None)
            if fn is not None:
                return ctypes.cast(fn, ctypes.c_void_p).value, wide
    return None


def _gemm_function():
    if not COMPILED:
        return None
    found = _find_dgemm()
    if found is None:
        return None
    import llvmlite.binding as ll
    from numba import types as nt
    addr, wide = found
    name = "fedcheck_cblas_dgemm_" + ("64" if wide else "32")
    ll.add_symbol(name, addr)
    i = nt.int64 if wide else nt.int32
    return nt.ExternalFunction(name, nt.void(nt.int32, nt.int32, nt.int32, i, i, i, nt.float64, nt.voidptr, i,
                                             nt.voidptr, i, nt.float64, nt.voidptr, i))


try:
    _dgemm = _gemm_function()
except Exception:  # pragma: no cover
    _dgemm = None


def _mlp_forward_loop(A, X2, Hs, Z, order, didx, xidx, offs, widths):
    """Per client ``n`` (in ``order``): ``H_{j+1} = relu(H_j W_j + b_j)`` into ``Hs[j][n]`` (``H_0`` the client's
    data), the logits' products ``H_{L-1} W_{L-1}`` plus the last bias, shifted by their row maxima, into
    ``Z[n]``; ``offs[j]`` the offset of ``W_j`` in a point (``b_j`` after it)."""
    L = widths.size - 1
    m = Z.shape[1]
    hmax = 0
    for j in range(L + 1):
        hmax = max(hmax, widths[j])
    bb = np.empty(hmax)             # the layer's bias, copied out of the point: a local array the loops vectorize
    for t in range(order.size):     # over (a load from the point may alias the store to ``dst``)
        n = order[t]
        x = X2[xidx[n]]
        for j in range(L):
            k, h, o = widths[j], widths[j + 1], offs[j]
            src = A[didx[n]] if j == 0 else Hs[j - 1][n]
            dst = Z[n] if j == L - 1 else Hs[j][n]
            _dgemm(_ROW, _NOTRANS, _NOTRANS, m, h, k, 1.0, src.ctypes, k, x[o:].ctypes, h, 0.0, dst.ctypes, h)
            ob = o + k * h
            for c in range(h):
                bb[c] = x[ob + c]
            if j < L - 1:
                for r in range(m):
                    for c in range(h):
                        z = dst[r, c] + bb[c]
                        dst[r, c] = z if (z >= 0.0 or z != z) else 0.0
            else:
                for r in range(m):
                    top = -np.inf
                    for c in range(h):
                        z = dst[r, c] + bb[c]
                        dst[r, c] = z
                        if z > top:
                            top = z
                    if top == -np.inf:
                        top = dst[r, 0]
                    for c in range(h):
                        dst[r, c] = dst[r, c] - top
    return Z


def _mlp_backward_loop(A, X2, Hs, Z, onehot, w, order, didx, xidx, offs, widths, G2, buf0, buf1):
    """Per client ``n``: ``delta = (softmax - onehot) * w`` in place in ``Z[n]`` (``Z`` holds the softmax), then
    for each layer from the last ``G[W_j] = H_j^T delta``, ``G[b_j] = delta.sum(0)`` (rows in order from 0.0),
    ``delta <- (delta W_j^T) * (H_j > 0)`` (the products as ``np.matmul`` of the transposed views makes them)."""
    L = widths.size - 1
    m = Z.shape[1]
    K = widths[L]
    hmax = 0
    for j in range(L + 1):
        hmax = max(hmax, widths[j])
    acc = np.zeros(hmax)
    for t in range(order.size):
        n = order[t]
        x = X2[xidx[n]]
        g = G2[n]
        dn = didx[n]
        D = Z[n]
        acc[:K] = 0.0
        for r in range(m):
            wr = w[dn, r]
            for c in range(K):
                v = (D[r, c] - onehot[dn, r, c]) * wr
                D[r, c] = v
                acc[c] += v
        o = offs[L - 1] + widths[L - 1] * K
        for c in range(K):
            g[o + c] = acc[c]
        dptr = D.ctypes
        for j in range(L - 1, -1, -1):
            k, h, o = widths[j], widths[j + 1], offs[j]
            src = A[dn] if j == 0 else Hs[j - 1][n]
            _dgemm(_ROW, _TRANS, _NOTRANS, k, h, m, 1.0, src.ctypes, k, dptr, h, 0.0, g[o:].ctypes, h)
            if j == 0:
                break
            back = (buf0 if (L - 1 - j) % 2 == 0 else buf1)[:m * k].reshape((m, k))
            _dgemm(_ROW, _NOTRANS, _TRANS, m, k, h, 1.0, dptr, h, x[o:].ctypes, h, 0.0, back.ctypes, k)
            Hp = Hs[j - 1][n]
            acc[:k] = 0.0
            for r in range(m):
                for c in range(k):
                    v = back[r, c] * (1.0 if Hp[r, c] > 0.0 else 0.0)
                    back[r, c] = v
                    acc[c] += v
            ob = offs[j - 1] + widths[j - 1] * k
            for c in range(k):
                g[ob + c] = acc[c]
            dptr = back.ctypes
    return G2


_mlp_forward, _mlp_backward = (_jit(f) for f in (_mlp_forward_loop, _mlp_backward_loop)) if _dgemm is not None \
    else (None, None)


def _gemm_loop(a, b, c, ta, tb):
    M, N = c.shape
    K = a.shape[0] if ta else a.shape[1]
    _dgemm(_ROW, _TRANS if ta else _NOTRANS, _TRANS if tb else _NOTRANS, M, N, K, 1.0, a.ctypes, a.shape[1],
           b.ctypes, b.shape[1], 0.0, c.ctypes, N)
    return c


_gemm = _jit(_gemm_loop) if _dgemm is not None else None
_CHECKED: list = []


def _blas_is_numpys() -> bool:
    """Once per process: the ``dgemm`` found gives ``np.matmul``'s bits on the three forms the gradient calls
    (``A W``, ``H^T D``, ``D W^T``), at a small and at Table 2's size."""
    if not _CHECKED:
        ok = _gemm is not None
        rng = np.random.default_rng(0)
        for m, k, h in ((37, 13, 11), (1091, 60, 20)):
            if not ok:
                break
            a, w, d = rng.standard_normal((m, k)), rng.standard_normal((k, h)), rng.standard_normal((m, h))
            try:
                ok = (np.array_equal(_gemm(a, w, np.empty((m, h)), False, False), np.matmul(a, w))
                      and np.array_equal(_gemm(a, d, np.empty((k, h)), True, False), np.matmul(a.T, d))
                      and np.array_equal(_gemm(d, w, np.empty((m, k)), False, True), np.matmul(d, w.T)))
            except Exception:  # pragma: no cover
                ok = False
        _CHECKED.append(ok)
    return _CHECKED[0]


def _mlp_log_softmax(A, X, onehot, w, widths, offs, activation, scratch):
    """The compiled forward pass and numpy's log-softmax at the points ``X`` (:func:`mlp_grad`'s arguments): the
    state ``(lead, Z, ...)`` with ``Z`` ``(N, m, K)`` the log-softmax (the numpy path's bits), or ``None``."""
    if _mlp_forward is None or activation != "relu" or not _ok(A, onehot, w) or X.dtype != np.float64 or X.ndim < 1:
        return None
    if not _blas_is_numpys():
        return None
    m, K = onehot.shape[-2:]
    dlead, xlead = A.shape[:-2], X.shape[:-1]
    p = X.shape[-1]
    if (A.shape[-1] != widths[0] or widths[-1] != K or K > _PW_BLOCK or A.shape[-2] != m or m < 2
            or min(widths) < 2 or onehot.shape[:-2] != dlead or w.shape != dlead + (m,)):
        return None                 # a dimension 1: np.matmul calls gemv or dot, not gemm
    if len(offs) != len(widths) - 1 or p != offs[-1] + (widths[-2] + 1) * widths[-1]:
        return None                 # points of another length: the numpy path says so (the loops read unchecked)
    try:
        lead = np.broadcast_shapes(xlead, dlead)
    except ValueError:
        return None
    get = scratch if scratch is not None else (lambda key, shape: None)

    def buf(key, shape):
        b = get(key, shape)
        return np.empty(shape) if b is None else b
    N = int(np.prod(lead, dtype=np.int64))
    if N == 0 or len(widths) < 2:
        return None
    wd = np.asarray(widths, dtype=np.int64)
    of = np.asarray(offs, dtype=np.int64)
    X2 = np.ascontiguousarray(X).reshape(-1, p)
    didx, xidx = lead_index(lead, dlead), lead_index(lead, xlead)
    order = np.argsort(didx, kind="stable")           # the clients sharing a data set one after the other
    Hs = tuple(buf(("mlp_h", j), (N, m, int(h))) for j, h in enumerate(widths[1:-1]))
    if not Hs:
        return None
    Z = buf("mlp_z", (N, m, K))
    A3, oh3, w2 = A.reshape(-1, m, widths[0]), onehot.reshape(-1, m, K), w.reshape(-1, m)
    _mlp_forward(A3, X2, Hs, Z, order, didx, xidx, of, wd)
    E = buf("exp", Z.shape)                            # the log-softmax: numpy's exp and log, as the numpy path
    np.exp(Z, out=E)
    Z2 = Z.reshape(-1, K)
    S = _row_sums(E.reshape(-1, K), np.empty(Z2.shape[0]))
    np.log(S, out=S)
    _sub_rows(Z2, S)
    return lead, Z, E, A3, X2, Hs, oh3, w2, order, didx, xidx, of, wd


def mlp_grad(A: np.ndarray, X: np.ndarray, onehot: np.ndarray, w: np.ndarray, widths: tuple, offs: tuple,
             activation: str = "relu", scratch=None) -> np.ndarray | None:
    """The gradient of a ReLU MLP's weighted softmax cross-entropy (:class:`fedcheck.problems.networks.MLP`'s
    layout: per layer ``W`` ``(in, out)`` row-major at ``offs[j]``, then ``b``) at the points ``X`` ``(..., p)``
    on the data ``A`` ``(..., m, d)``, ``onehot`` ``(..., m, K)``, ``w`` ``(..., m)`` (lead shapes broadcasting
    together): the numpy path's operations in its order, so its bits.  ``scratch(key, shape)`` gives reused
    arrays (or ``None``).  ``None`` when it does not apply (numba off, no BLAS found, layouts, ``activation`` not
    ``"relu"``: numpy's SIMD ``tanh`` is not libm's)."""
    st = _mlp_log_softmax(A, X, onehot, w, widths, offs, activation, scratch)
    if st is None:
        return None
    lead, Z, _, A3, X2, Hs, oh3, w2, order, didx, xidx, of, wd = st
    np.exp(Z, out=Z)
    N, m, _ = Z.shape
    p = X2.shape[-1]
    G = np.empty(lead + (p,))
    hmax = int(max(widths))
    _mlp_backward(A3, X2, Hs, Z, oh3, w2, order, didx, xidx, of, wd, G.reshape(N, p), np.empty(m * hmax),
                  np.empty(m * hmax))
    return G


def mlp_value(A: np.ndarray, X: np.ndarray, onehot: np.ndarray, w: np.ndarray, widths: tuple, offs: tuple,
              activation: str = "relu", scratch=None) -> np.ndarray | None:
    """The values ``-sum_r w_r <onehot_r, log_softmax(logits_r)>`` of a ReLU MLP at the points ``X`` (arguments
    as :func:`mlp_grad`), ``lead`` shaped: the forward pass compiled (numpy's BLAS, client by client), then the
    numpy path's operations (its row sums over ``K`` in numpy's pairwise order, its own sum over the samples),
    so its bits; ``None`` when it does not apply."""
    st = _mlp_log_softmax(A, X, onehot, w, widths, offs, activation, scratch)
    if st is None:
        return None
    lead, Z, E = st[:3]
    N, m, K = Z.shape
    P = np.multiply(onehot, Z.reshape(lead + (m, K)), out=E.reshape(lead + (m, K)))      # onehot * lp
    t = _row_sums(P.reshape(-1, K), np.empty(N * m)).reshape(lead + (m,))
    return -(np.multiply(w, t, out=t)).sum(-1)
