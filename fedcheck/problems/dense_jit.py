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

The MLP's whole gradient (:func:`mlp_grad`) and forward pass (:func:`mlp_value`): by default (:data:`VECTOR`) with
the products in AVX-512 vectors written as LLVM IR (:func:`_vec_codegen`: OpenBLAS runs its 256-bit Haswell kernels
here and packs both operands at every call), the points sharing a data set stacked in the first layer, the
gradient in one pass over those groups with the softmax's exponentials in vectors (:func:`_exp_codegen`): sums in
another order than BLAS's, within 1e-12 of the numpy path (the reference); with :data:`VECTOR` off, numpy's own BLAS
from numba, the numpy path's bits.

The passes above: the same bits as the numpy path (``tests/test_network_grad_fast.py``); the row sums are
sequential from ``0.0``, numpy's order for a reduction over a non-contiguous axis.  Broadcasting: the activations have the lead shape of
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


def _groups(order, didx, paired, t):
    """How many points from position ``t`` of ``order`` go together: 2 when ``paired`` and the next point shares
    this one's data set, else 1."""
    n = order[t]
    return 2 if (paired and t + 1 < order.size and didx[order[t + 1]] == didx[n]) else 1


def _mlp_forward_loop(Af, X2, Hf, H0, Zf, order, didx, xidx, offs, widths, paired, Wst):
    """Per client ``n`` (in ``order``): ``H_{j+1} = relu(H_j W_j + b_j)`` (``H_0`` the client's data), the logits'
    products ``H_{L-1} W_{L-1}`` plus the last bias, shifted by their row maxima, into ``Zf``; ``offs[j]`` the
    offset of ``W_j`` in a point (``b_j`` after it).  Flat arrays: ``Af`` the data, ``Hf[j]`` the hidden layer
    ``j + 1`` (``j >= 1``), ``Zf`` the logits, each ``(N, m, width)`` in C order.  The first hidden layer ``H0``:
    the points at positions ``t, t + 1`` of ``order`` sharing a data set (``paired``) make one product
    ``A [W W']`` into ``(m, 2 h)`` rows at ``t m h`` (``Wst`` the two weights side by side), a lone point ``A W``
    into ``(m, h)`` rows there; the next layer reads its point's half through the leading dimension."""
    L = widths.size - 1
    k0, h1 = widths[0], widths[1]
    m = Zf.size // (order.size * widths[L])
    hmax = 0
    for j in range(L + 1):
        hmax = max(hmax, widths[j])
    bb = np.empty(2 * hmax)         # the layer's bias, copied out of the point: a local array the loops vectorize
    t = 0                           # over (a load from the point may alias the store to ``dst``)
    while t < order.size:
        g = _groups(order, didx, paired, t)
        n = order[t]
        ld = g * h1
        base = t * m * h1
        for q in range(g):
            x = X2[xidx[order[t + q]]]
            ob = offs[0] + k0 * h1
            for c in range(h1):
                bb[q * h1 + c] = x[ob + c]
        aptr = Af[didx[n] * m * k0:].ctypes
        if g == 1:
            _dgemm(_ROW, _NOTRANS, _NOTRANS, m, h1, k0, 1.0, aptr, k0, X2[xidx[n]][offs[0]:].ctypes, h1, 0.0,
                   H0[base:].ctypes, h1)
        else:
            for q in range(2):
                x = X2[xidx[order[t + q]]]
                for k in range(k0):
                    for c in range(h1):
                        Wst[k * ld + q * h1 + c] = x[offs[0] + k * h1 + c]
            _dgemm(_ROW, _NOTRANS, _NOTRANS, m, ld, k0, 1.0, aptr, k0, Wst.ctypes, ld, 0.0, H0[base:].ctypes, ld)
        for r in range(m):
            for c in range(ld):
                z = H0[base + r * ld + c] + bb[c]
                H0[base + r * ld + c] = z if (z >= 0.0 or z != z) else 0.0
        for q in range(g):
            n = order[t + q]
            x = X2[xidx[n]]
            for j in range(1, L):
                k, h, o = widths[j], widths[j + 1], offs[j]
                if j == 1:
                    src, so, lda = H0, base + q * h1, ld
                else:
                    src, so, lda = Hf[j - 1], n * m * k, k
                dst = Zf if j == L - 1 else Hf[j]
                do = n * m * h
                _dgemm(_ROW, _NOTRANS, _NOTRANS, m, h, k, 1.0, src[so:].ctypes, lda, x[o:].ctypes, h, 0.0,
                       dst[do:].ctypes, h)
                ob = o + k * h
                for c in range(h):
                    bb[c] = x[ob + c]
                if j < L - 1:
                    for r in range(m):
                        for c in range(h):
                            z = dst[do + r * h + c] + bb[c]
                            dst[do + r * h + c] = z if (z >= 0.0 or z != z) else 0.0
                else:
                    for r in range(m):
                        ro = do + r * h
                        top = -np.inf
                        for c in range(h):
                            z = dst[ro + c] + bb[c]
                            dst[ro + c] = z
                            if z > top:
                                top = z
                        if top == -np.inf:
                            top = dst[ro]
                        for c in range(h):
                            dst[ro + c] = dst[ro + c] - top
        t += g
    return Zf


def _mlp_backward_loop(Af, X2, Hf, H0, Zf, onehot, w, order, didx, xidx, offs, widths, paired, G2, buf0, buf1,
                       Dst, Gst):
    """Per client ``n``: ``delta = (softmax - onehot) * w`` in place in ``Zf`` (which holds the softmax), then
    for each layer from the last ``G[W_j] = H_j^T delta``, ``G[b_j] = delta.sum(0)`` (rows in order from 0.0),
    ``delta <- (delta W_j^T) * (H_j > 0)`` (the products as ``np.matmul`` of the transposed views makes them).  The
    first hidden layer's delta goes into ``Dst`` in :func:`_mlp_forward_loop`'s layout of ``H0`` (a pair's two
    deltas side by side), and the pair's first-layer gradients are one product ``A^T [D D']`` (into ``Gst``)."""
    L = widths.size - 1
    K = widths[L]
    k0, h1 = widths[0], widths[1]
    m = Zf.size // (order.size * K)
    hmax = 0
    for j in range(L + 1):
        hmax = max(hmax, widths[j])
    acc = np.zeros(hmax)
    t = 0
    while t < order.size:
        g = _groups(order, didx, paired, t)
        ld = g * h1
        base = t * m * h1
        dn = didx[order[t]]
        for q in range(g):
            n = order[t + q]
            x = X2[xidx[n]]
            gq = G2[n]
            zo = n * m * K
            acc[:K] = 0.0
            for r in range(m):
                wr = w[dn, r]
                for c in range(K):
                    v = (Zf[zo + r * K + c] - onehot[dn, r, c]) * wr
                    Zf[zo + r * K + c] = v
                    acc[c] += v
            o = offs[L - 1] + widths[L - 1] * K
            for c in range(K):
                gq[o + c] = acc[c]
            dsrc, dof = Zf, zo
            for j in range(L - 1, 0, -1):
                k, h, o = widths[j], widths[j + 1], offs[j]
                if j == 1:
                    src, so, lda = H0, base + q * h1, ld
                else:
                    src, so, lda = Hf[j - 1], n * m * k, k
                _dgemm(_ROW, _TRANS, _NOTRANS, k, h, m, 1.0, src[so:].ctypes, lda, dsrc[dof:].ctypes, h, 0.0,
                       gq[o:].ctypes, h)
                if j == 1:
                    back, bo, ldb = Dst, q * h1, ld
                else:
                    back, bo, ldb = (buf0 if (L - 1 - j) % 2 == 0 else buf1), 0, k
                _dgemm(_ROW, _NOTRANS, _TRANS, m, k, h, 1.0, dsrc[dof:].ctypes, h, x[o:].ctypes, h, 0.0,
                       back[bo:].ctypes, ldb)
                acc[:k] = 0.0
                for r in range(m):
                    for c in range(k):
                        v = back[bo + r * ldb + c] * (1.0 if src[so + r * lda + c] > 0.0 else 0.0)
                        back[bo + r * ldb + c] = v
                        acc[c] += v
                ob = offs[j - 1] + widths[j - 1] * k
                for c in range(k):
                    gq[ob + c] = acc[c]
                dsrc, dof = back, bo
        aptr = Af[dn * m * k0:].ctypes
        if g == 1:
            _dgemm(_ROW, _TRANS, _NOTRANS, k0, h1, m, 1.0, aptr, k0, Dst.ctypes, h1, 0.0,
                   G2[order[t]][offs[0]:].ctypes, h1)
        else:
            _dgemm(_ROW, _TRANS, _NOTRANS, k0, ld, m, 1.0, aptr, k0, Dst.ctypes, ld, 0.0, Gst.ctypes, ld)
            for q in range(2):
                gq = G2[order[t + q]]
                for k in range(k0):
                    for c in range(h1):
                        gq[offs[0] + k * h1 + c] = Gst[k * ld + q * h1 + c]
        t += g
    return G2


if _dgemm is not None:
    _groups = _jit(_groups)
    _mlp_forward, _mlp_backward = (_jit(f) for f in (_mlp_forward_loop, _mlp_backward_loop))
else:
    _mlp_forward = _mlp_backward = None


# ----------------------------------------------------------------------------------------------------------
# The MLP's products in AVX-512 vectors (LLVM IR from numba intrinsics), no BLAS: OpenBLAS runs its Haswell
# (256-bit) kernels on this machine and packs both operands at every call; here a block of R rows of the output
# keeps its accumulators in registers, the weights (a few KB) stay in L1 and the data rows are read in place.
_V = 8                      # doubles per vector
_R = 4                      # output rows per block of the row-major products
_NVMAX = 6                  # vectors per output row at most (48 columns)
_TN_CHUNK = 128             # rows per chunk of H^T D (with D's, ~110 KB at Table 2's first layer)
_EPI_BIAS, _EPI_RELU, _EPI_NONE, _EPI_MASK = 0, 1, 2, 3


def _pad8(h):
    return (h + _V - 1) // _V * _V


def _vec_codegen(kind, nv):
    def codegen(context, builder, sig, args):
        from llvmlite import ir
        from numba.core import cgutils
        b = builder
        vec = ir.VectorType(ir.DoubleType(), _V)
        i64 = ir.IntType(64)
        dbl = ir.DoubleType().as_pointer()

        def c(v):
            return ir.Constant(i64, v)

        def data(i):
            return cgutils.create_struct_proxy(sig.args[i])(context, b, value=args[i]).data

        fma = cgutils.get_or_insert_function(b.module, ir.FunctionType(vec, [vec, vec, vec]), f"llvm.fma.v{_V}f64")
        zero = ir.Constant(vec, None)
        undef = ir.Constant(vec, ir.Undefined)
        splat_mask = ir.Constant(ir.VectorType(ir.IntType(32), _V), [0] * _V)

        def vload(p, i):
            return b.load(b.bitcast(b.gep(p, [i]), vec.as_pointer()), align=8)

        def vstore(v, p, i):
            b.store(v, b.bitcast(b.gep(p, [i]), vec.as_pointer()), align=8)

        def splat(x):
            return b.shuffle_vector(b.insert_element(undef, x, ir.Constant(ir.IntType(32), 0)), undef, splat_mask)

        if kind == "nn":
            # out[ooff + r ldo + :nv*8] = epi(sum_kk A[aoff + r lda + kk] B[kk, :]), r < m
            Ap, aoff, lda, k, Bp, Bb, Op, ooff, ldo, m, epi, Mp, moff, ldm = (
                data(0), args[1], args[2], args[3], data(4), data(5), data(6), args[7], args[8], args[9], args[10],
                data(11), args[12], args[13])
            add_bias = b.icmp_signed("<=", epi, c(_EPI_RELU))
            relu = b.icmp_signed("==", epi, c(_EPI_RELU))
            mask = b.icmp_signed("==", epi, c(_EPI_MASK))
            one = ir.Constant(vec, [1.0] * _V)
            ncols = c(nv * _V)

            zslot = cgutils.alloca_once(b, vec)

            def block(r, RR):
                acc = [[cgutils.alloca_once(b, vec) for _ in range(nv)] for _ in range(RR)]
                for q in range(RR):
                    for v in range(nv):
                        b.store(zero, acc[q][v])
                rowp = [b.gep(Ap, [b.add(aoff, b.mul(b.add(r, c(q)), lda))]) for q in range(RR)]
                with cgutils.for_range(b, k) as lp:
                    kk = lp.index
                    wv = [vload(Bp, b.add(b.mul(kk, ncols), c(v * _V))) for v in range(nv)]
                    for q in range(RR):
                        a = splat(b.load(b.gep(rowp[q], [kk]), align=8))
                        for v in range(nv):
                            b.store(b.call(fma, [a, wv[v], b.load(acc[q][v])]), acc[q][v])
                for q in range(RR):
                    for v in range(nv):
                        z = b.load(acc[q][v])
                        z = b.select(add_bias, b.fadd(z, vload(Bb, c(v * _V))), z)
                        keep = b.or_(b.fcmp_ordered(">=", z, zero), b.fcmp_unordered("uno", z, z))
                        z = b.select(relu, b.select(keep, z, zero), z)
                        with b.if_then(mask):
                            hv = vload(Mp, b.add(moff, b.add(b.mul(b.add(r, c(q)), ldm), c(v * _V))))
                            b.store(b.fmul(z, b.select(b.fcmp_ordered(">", hv, zero), one, zero)), zslot)
                        z = b.select(mask, b.load(zslot), z)
                        vstore(z, Op, b.add(ooff, b.add(b.mul(b.add(r, c(q)), ldo), c(v * _V))))
            nb = b.sdiv(m, c(_R))
            with cgutils.for_range(b, nb) as lp:
                block(b.mul(lp.index, c(_R)), _R)
            with cgutils.for_range(b, b.sub(m, b.mul(nb, c(_R)))) as lp:
                block(b.add(b.mul(nb, c(_R)), lp.index), 1)
        else:
            # out[kk, :nv*8] = sum_r H[hoff + r ldh + kk] D[doff + r ldd + :nv*8], kk < k (rows in order from 0)
            Hp, hoff, ldh, k, Dp, doff, ldd, m, Op = (data(0), args[1], args[2], args[3], data(4), args[5], args[6],
                                                      args[7], data(8))
            ncols = c(nv * _V)
            RK = max(1, min(6, 24 // nv))

            accs = [[cgutils.alloca_once(b, vec) for _ in range(nv)] for _ in range(RK)]
            with cgutils.for_range(b, b.mul(k, c(nv))) as lp:      # the sums run on in ``out`` from chunk to chunk
                vstore(zero, Op, b.mul(lp.index, c(_V)))

            def block(kk0, RR, r0, cnt):
                acc = accs[:RR]
                outp = [[b.add(b.mul(b.add(kk0, c(q)), ncols), c(v * _V)) for v in range(nv)] for q in range(RR)]
                for q in range(RR):
                    for v in range(nv):
                        b.store(vload(Op, outp[q][v]), acc[q][v])
                with cgutils.for_range(b, cnt) as lp:
                    r = b.add(r0, lp.index)
                    dv = [vload(Dp, b.add(doff, b.add(b.mul(r, ldd), c(v * _V)))) for v in range(nv)]
                    hrow = b.gep(Hp, [b.add(b.add(hoff, b.mul(r, ldh)), kk0)])
                    for q in range(RR):
                        a = splat(b.load(b.gep(hrow, [c(q)]), align=8))
                        for v in range(nv):
                            b.store(b.call(fma, [a, dv[v], b.load(acc[q][v])]), acc[q][v])
                for q in range(RR):
                    for v in range(nv):
                        vstore(b.load(acc[q][v]), Op, outp[q][v])
            nb = b.sdiv(k, c(RK))
            rem = b.sub(k, b.mul(nb, c(RK)))
            nch = b.sdiv(b.add(m, c(_TN_CHUNK - 1)), c(_TN_CHUNK))
            with cgutils.for_range(b, nch) as ch:       # rows in chunks that stay in L2 across the output's blocks
                r0 = b.mul(ch.index, c(_TN_CHUNK))
                left = b.sub(m, r0)
                cnt = b.select(b.icmp_signed("<", left, c(_TN_CHUNK)), left, c(_TN_CHUNK))
                with cgutils.for_range(b, nb) as lp:
                    block(b.mul(lp.index, c(RK)), RK, r0, cnt)
                for RR in range(1, RK):                  # the last rows of the output in one pass
                    with b.if_then(b.icmp_signed("==", rem, c(RR))):
                        block(b.mul(nb, c(RK)), RR, r0, cnt)
            sums = [cgutils.alloca_once(b, vec) for _ in range(nv)]      # row k: D's column sums, rows in order
            for v in range(nv):
                b.store(zero, sums[v])
            with cgutils.for_range(b, m) as lp:
                for v in range(nv):
                    dv = vload(Dp, b.add(doff, b.add(b.mul(lp.index, ldd), c(v * _V))))
                    b.store(b.fadd(b.load(sums[v]), dv), sums[v])
            for v in range(nv):
                vstore(b.load(sums[v]), Op, b.add(b.mul(k, ncols), c(v * _V)))
        return context.get_dummy_value()
    return codegen


def _vec_typing(kind, nv):
    if kind == "nn":
        def typing(typingctx, A, aoff, lda, k, B, bias, out, ooff, ldo, m, epi, M, moff, ldm):
            from numba import types
            return (types.void(A, aoff, lda, k, B, bias, out, ooff, ldo, m, epi, M, moff, ldm),
                    _vec_codegen(kind, nv))
    else:
        def typing(typingctx, H, hoff, ldh, k, D, doff, ldd, m, out):
            from numba import types
            return types.void(H, hoff, ldh, k, D, doff, ldd, m, out), _vec_codegen(kind, nv)
    return typing



def _exp_codegen(context, builder, sig, args):
    """``X[off:off + cnt] = exp(X[off:off + cnt])`` in place, eight at a time (``cnt`` a multiple of 8) for
    arguments ``<= 0`` (shifted logits): ``2^n e^r``, ``n = rint(x log2 e)``, ``r = x - n ln 2`` in two FMAs
    (Cody-Waite), ``e^r`` by its Taylor polynomial of degree 13 (Horner, FMAs: ~1 ulp on ``|r| <= ln 2 / 2``),
    ``2^n`` from the exponent bits; ``x < -708`` gives 0 (``-inf`` included), NaN stays NaN."""
    from llvmlite import ir
    from numba.core import cgutils
    b = builder
    vec = ir.VectorType(ir.DoubleType(), _V)
    ivec = ir.VectorType(ir.IntType(64), _V)
    i64 = ir.IntType(64)
    Xp = cgutils.create_struct_proxy(sig.args[0])(context, b, value=args[0]).data
    off, cnt = args[1], args[2]

    def splat(v):
        return ir.Constant(vec, [float(v)] * _V)
    fma = cgutils.get_or_insert_function(b.module, ir.FunctionType(vec, [vec, vec, vec]), f"llvm.fma.v{_V}f64")
    rint = cgutils.get_or_insert_function(b.module, ir.FunctionType(vec, [vec]), f"llvm.rint.v{_V}f64")
    coef = [1.0]
    for i in range(1, 14):
        coef.append(coef[-1] / i)
    with cgutils.for_range(b, b.sdiv(cnt, ir.Constant(i64, _V))) as lp:
        ptr = b.bitcast(b.gep(Xp, [b.add(off, b.mul(lp.index, ir.Constant(i64, _V)))]), vec.as_pointer())
        x = b.load(ptr, align=8)
        low = b.fcmp_ordered("<", x, splat(-708.0))
        xs = b.select(low, splat(0.0), x)
        n = b.call(rint, [b.fmul(xs, splat(1.4426950408889634))])
        r = b.call(fma, [n, splat(-0.6931471803691238), xs])
        r = b.call(fma, [n, splat(-1.9082149292705877e-10), r])
        poly = splat(coef[13])
        for i in range(12, -1, -1):
            poly = b.call(fma, [poly, r, splat(coef[i])])
        nn = b.select(b.fcmp_unordered("uno", n, n), splat(0.0), n)
        bits = b.shl(b.add(b.fptosi(nn, ivec), ir.Constant(ivec, [1023] * _V)), ir.Constant(ivec, [52] * _V))
        y = b.fmul(poly, b.bitcast(bits, vec))
        b.store(b.select(low, splat(0.0), y), ptr, align=8)
    return context.get_dummy_value()


def _exp_typing(typingctx, X, off, cnt):
    from numba import types
    return types.void(X, off, cnt), _exp_codegen


def _vnn_loop(nv, A, aoff, lda, k, B, bias, out, ooff, ldo, m, epi, M, moff, ldm):
    """``out[ooff + r ldo + c] = epi(sum_kk A[aoff + r lda + kk] B[kk, c] + bias[c])`` for ``r < m``, ``c < 8 nv``
    (``B`` ``(k, 8 nv)`` C order; ``epi``: the bias, the bias and ReLU, or neither), each sum a chain of FMAs
    over ``kk`` in order from 0."""
    if nv == 1:
        _nn1(A, aoff, lda, k, B, bias, out, ooff, ldo, m, epi, M, moff, ldm)
    elif nv == 2:
        _nn2(A, aoff, lda, k, B, bias, out, ooff, ldo, m, epi, M, moff, ldm)
    elif nv == 3:
        _nn3(A, aoff, lda, k, B, bias, out, ooff, ldo, m, epi, M, moff, ldm)
    elif nv == 4:
        _nn4(A, aoff, lda, k, B, bias, out, ooff, ldo, m, epi, M, moff, ldm)
    elif nv == 5:
        _nn5(A, aoff, lda, k, B, bias, out, ooff, ldo, m, epi, M, moff, ldm)
    else:
        _nn6(A, aoff, lda, k, B, bias, out, ooff, ldo, m, epi, M, moff, ldm)


def _vtn_loop(nv, H, hoff, ldh, k, D, doff, ldd, m, out):
    """``out[kk, c] = sum_r H[hoff + r ldh + kk] D[doff + r ldd + c]`` for ``kk < k``, ``c < 8 nv`` (``out``
    ``(k, 8 nv)`` C order), each sum a chain of FMAs over the rows in order from 0."""
    if nv == 1:
        _tn1(H, hoff, ldh, k, D, doff, ldd, m, out)
    elif nv == 2:
        _tn2(H, hoff, ldh, k, D, doff, ldd, m, out)
    elif nv == 3:
        _tn3(H, hoff, ldh, k, D, doff, ldd, m, out)
    elif nv == 4:
        _tn4(H, hoff, ldh, k, D, doff, ldd, m, out)
    elif nv == 5:
        _tn5(H, hoff, ldh, k, D, doff, ldd, m, out)
    else:
        _tn6(H, hoff, ldh, k, D, doff, ldd, m, out)


if COMPILED:
    from numba.extending import intrinsic as _intrinsic
    _nn1, _nn2, _nn3, _nn4, _nn5, _nn6 = (_intrinsic(_vec_typing("nn", nv)) for nv in range(1, _NVMAX + 1))
    _tn1, _tn2, _tn3, _tn4, _tn5, _tn6 = (_intrinsic(_vec_typing("tn", nv)) for nv in range(1, _NVMAX + 1))
    _vexp = _intrinsic(_exp_typing)
    _vnn, _vtn = _jit(_vnn_loop), _jit(_vtn_loop)
else:
    _vnn = _vtn = _vexp = None


def _fill_w(Wp, x, o, k, h, hp, col0, ldw, transpose):
    """Point ``x``'s ``W`` ``(k, h)`` at ``o`` into ``Wp`` (rows of ``ldw``) at column ``col0`` (``transpose``:
    ``W^T`` ``(h, k)``, ``hp`` then the padded ``k``)."""
    if transpose:
        for c in range(h):
            for kk in range(k):
                Wp[c * ldw + col0 + kk] = x[o + kk * h + c]
    else:
        for kk in range(k):
            for c in range(h):
                Wp[kk * ldw + col0 + c] = x[o + kk * h + c]


def _group_first_layer(Af, X2, H0, hoff, order, didx, xidx, offs, widths, t, g, Wp, bp, m):
    """The first hidden layer of the ``g`` points at positions ``t ..`` of ``order`` (sharing a data set): one
    product ``relu(A [W W'] + [b b'])`` into ``H0`` at ``hoff``, point ``q`` at column ``q pad8(h)`` of rows of
    ``g pad8(h)`` (the pad columns 0)."""
    k0, h1 = widths[0], widths[1]
    h1p = _pad8(h1)
    ld0 = g * h1p
    Wp[:k0 * ld0] = 0.0
    bp[:ld0] = 0.0
    for q in range(g):
        x = X2[xidx[order[t + q]]]
        _fill_w(Wp, x, offs[0], k0, h1, ld0, q * h1p, ld0, False)
        for c in range(h1):
            bp[q * h1p + c] = x[offs[0] + k0 * h1 + c]
    _vnn(ld0 // _V, Af, didx[order[t]] * m * k0, k0, k0, Wp, bp, H0, hoff, ld0, m, _EPI_RELU, H0, 0, 0)


def _point_layers(x, H0, so0, ld0, Hf, row0, offs, widths, Wp, bp, Zp, m):
    """The further layers of the point ``x`` from its first hidden layer (``H0`` at ``so0``, rows of ``ld0``):
    ``Hf[j]`` at ``row0 pad8(h_{j+1})`` (rows of ``pad8(h_{j+1})``), the logits plus their bias padded in ``Zp``."""
    L = widths.size - 1
    for j in range(1, L):
        k, h, o = widths[j], widths[j + 1], offs[j]
        hp = _pad8(h)
        if j == 1:
            src, so, lda = H0, so0, ld0
        else:
            src, so, lda = Hf[j - 1], row0 * _pad8(k), _pad8(k)
        Wp[:k * hp] = 0.0
        bp[:hp] = 0.0
        _fill_w(Wp, x, o, k, h, hp, 0, hp, False)
        for c in range(h):
            bp[c] = x[o + k * h + c]
        if j < L - 1:
            _vnn(hp // _V, src, so, lda, k, Wp, bp, Hf[j], row0 * hp, hp, m, _EPI_RELU, src, 0, 0)
        else:
            _vnn(hp // _V, src, so, lda, k, Wp, bp, Zp, 0, hp, m, _EPI_BIAS, src, 0, 0)


def _shift_rows(Zp, Kp, K, m, dst, doff, ld, pad):
    """Each row of the logits ``Zp`` (rows of ``Kp``) minus its maximum into ``dst`` at ``doff`` (rows of ``ld``;
    a NaN makes the row NaN further on, as numpy's ``np.maximum``; all ``-inf``: the first value), the columns
    ``K .. ld`` set to ``pad``."""
    for r in range(m):
        top = -np.inf
        for c in range(K):
            z = Zp[r * Kp + c]
            if z > top:
                top = z
        if top == -np.inf:
            top = Zp[r * Kp]
        for c in range(K):
            dst[doff + r * ld + c] = Zp[r * Kp + c] - top
        for c in range(K, ld):
            dst[doff + r * ld + c] = pad


def _mlp_forward_vec_loop(Af, X2, Hf, H0, Zf, Zp, order, didx, xidx, offs, widths, paired, Wp, bp, P):
    """:func:`_mlp_forward_loop` with the products in vectors (:func:`_vnn_loop`, the bias and ReLU in its
    epilogue) on layouts padded to whole vectors (the pad columns 0): a group's first layer in ``H0`` at ``t m P``
    (:func:`_group_first_layer`); ``Hf[j]`` ``(N, m, pad8(h_{j+1}))``; the logits padded in ``Zp``, then shifted
    into ``Zf`` ``(N, m, K)``."""
    L = widths.size - 1
    h1, K = widths[1], widths[L]
    h1p = _pad8(h1)
    N = order.size
    m = Zf.size // (N * K)
    t = 0
    while t < N:
        g = _groups(order, didx, paired, t)
        base = t * m * P
        _group_first_layer(Af, X2, H0, base, order, didx, xidx, offs, widths, t, g, Wp, bp, m)
        for q in range(g):
            n = order[t + q]
            _point_layers(X2[xidx[n]], H0, base + q * h1p, g * h1p, Hf, n * m, offs, widths, Wp, bp, Zp, m)
            _shift_rows(Zp, _pad8(K), K, m, Zf, n * m * K, K, 0.0)
        t += g
    return Zf


def _mlp_grad_vec_loop(Af, X2, Hf, H0, onehot, w, order, didx, xidx, offs, widths, paired, G2, Zp, D0, D1, Wp, bp,
                       Gs, Dst):
    """The whole gradient group by group (the points sharing a data set, :func:`_groups`), its arrays in cache:
    the group's first layer (:func:`_group_first_layer`), then point by point the further layers (``Hf[j]``, one
    point's), the softmax's delta ``(e / sum e - onehot) w`` with ``e = exp(z - max z)`` (:func:`_exp_codegen`;
    the numpy path's ``exp(z - max - log sum)``: within rounding), the backward pass: ``G[W_j] = H_j^T delta`` and
    ``G[b_j]`` (the delta's column sums, rows in order from 0.0) by :func:`_vtn_loop` into ``Gs``, ``(delta W_j^T)
    * (H_j > 0)`` by :func:`_vnn_loop` with ``W_j^T`` padded and the mask in its epilogue (the deltas padded, in
    ``D0`` and ``D1`` in turn, the first hidden layer's in ``Dst`` in ``H0``'s layout); then the group's
    first-layer gradients in one product."""
    L = widths.size - 1
    k0, h1, K = widths[0], widths[1], widths[L]
    h1p, Kp = _pad8(h1), _pad8(K)
    N = order.size
    m = w.shape[1]
    t = 0
    while t < N:
        g = _groups(order, didx, paired, t)
        dn = didx[order[t]]
        ld0 = g * h1p
        _group_first_layer(Af, X2, H0, 0, order, didx, xidx, offs, widths, t, g, Wp, bp, m)
        for q in range(g):
            n = order[t + q]
            x = X2[xidx[n]]
            gq = G2[n]
            _point_layers(x, H0, q * h1p, ld0, Hf, 0, offs, widths, Wp, bp, Zp, m)
            _shift_rows(Zp, Kp, K, m, Zp, 0, Kp, -np.inf)
            _vexp(Zp, 0, m * Kp)
            for r in range(m):
                tot = 0.0
                for c in range(K):
                    tot += Zp[r * Kp + c]
                wr = w[dn, r]
                for c in range(K):
                    D0[r * Kp + c] = (Zp[r * Kp + c] / tot - onehot[dn, r, c]) * wr
                for c in range(K, Kp):
                    D0[r * Kp + c] = 0.0
            cur, nxt = D0, D1
            for j in range(L - 1, 0, -1):
                k, h, o = widths[j], widths[j + 1], offs[j]
                hp, kp = _pad8(h), _pad8(k)
                if j == 1:
                    src, so, lda = H0, q * h1p, ld0
                else:
                    src, so, lda = Hf[j - 1], 0, kp
                _vtn(hp // _V, src, so, lda, k, cur, 0, hp, m, Gs)
                for kk in range(k):
                    for c in range(h):
                        gq[o + kk * h + c] = Gs[kk * hp + c]
                for c in range(h):
                    gq[o + k * h + c] = Gs[k * hp + c]
                Wp[:h * kp] = 0.0
                _fill_w(Wp, x, o, k, h, kp, 0, kp, True)
                if j == 1:
                    _vnn(kp // _V, cur, 0, hp, h, Wp, Wp, Dst, q * h1p, ld0, m, _EPI_MASK, src, so, lda)
                else:
                    _vnn(kp // _V, cur, 0, hp, h, Wp, Wp, nxt, 0, kp, m, _EPI_MASK, src, so, lda)
                    cur, nxt = nxt, cur
        _vtn(ld0 // _V, Af, dn * m * k0, k0, k0, Dst, 0, ld0, m, Gs)
        for q in range(g):
            gq = G2[order[t + q]]
            for kk in range(k0):
                for c in range(h1):
                    gq[offs[0] + kk * h1 + c] = Gs[kk * ld0 + q * h1p + c]
            for c in range(h1):
                gq[offs[0] + k0 * h1 + c] = Gs[k0 * ld0 + q * h1p + c]
        t += g
    return G2

if COMPILED:
    _pad8 = _jit(_pad8)
    _fill_w = _jit(_fill_w)
    if _dgemm is None:
        _groups = _jit(_groups)
    _group_first_layer, _point_layers, _shift_rows = (      # inlined: specialized in each caller
        numba.njit(inline="always", cache=True)(f) for f in (_group_first_layer, _point_layers, _shift_rows))
    _mlp_forward_vec, _mlp_grad_vec = (_jit(f) for f in (_mlp_forward_vec_loop, _mlp_grad_vec_loop))
else:
    _mlp_forward_vec = _mlp_grad_vec = None


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


def _mlp_log_softmax(A, X, onehot, w, widths, offs, activation, scratch, paired=None, fused=False):
    """The compiled forward pass and numpy's log-softmax at the points ``X`` (:func:`mlp_grad`'s arguments): the
    state ``(lead, Z, ...)`` with ``Z`` ``(N, m, K)`` the log-softmax (the numpy path's bits), or ``None``.
    ``paired``: the first layer's products of two points sharing a data set as one (``None``: where
    :func:`_pairs_keep_bits` finds it gives the separate products' bits)."""
    if activation != "relu" or not _ok(A, onehot, w) or X.dtype != np.float64 or X.ndim < 1 or len(widths) < 3:
        return None
    vec = VECTOR and _mlp_forward_vec is not None and max(_padded(h) for h in widths[1:]) <= _NVMAX * _V
    if not vec and (_mlp_forward is None or not _blas_is_numpys()):
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
    if N == 0 or len(widths) < 3:
        return None
    wd = np.asarray(widths, dtype=np.int64)
    of = np.asarray(offs, dtype=np.int64)
    X2 = np.ascontiguousarray(X).reshape(-1, p)
    didx, xidx = lead_index(lead, dlead), lead_index(lead, xlead)
    order = np.argsort(didx, kind="stable")           # the clients sharing a data set one after the other
    A3, oh3, w2 = A.reshape(-1, m, widths[0]), onehot.reshape(-1, m, K), w.reshape(-1, m)
    Af = A3.reshape(-1)
    if vec and fused:                                  # the gradient in one pass: :func:`_mlp_grad_vec_loop`
        if paired is None:
            paired = N > 1 and 2 * _padded(widths[1]) <= _NVMAX * _V
        G = np.empty(lead + (p,))
        wide, hmax = _NVMAX * _V, int(max(widths))
        P = (2 if paired else 1) * _padded(widths[1])
        Hf = (buf("mlp_g_h0", (m * P,)),) + tuple(buf(("mlp_g_h", j), (m * _padded(h),))
                                                   for j, h in enumerate(widths[2:-1], 1))
        _mlp_grad_vec(Af, X2, Hf, Hf[0], oh3, w2, order, didx, xidx, of, wd, bool(paired), G.reshape(N, p),
                      buf("mlp_zp", (m * _padded(K),)), buf("mlp_dp", (m * wide,)), buf("mlp_bk", (m * wide,)),
                      buf("mlp_wp", ((hmax + 1) * wide,)), buf("mlp_bp", (wide,)), buf("mlp_gs", ((hmax + 2) * wide,)),
                      buf("mlp_dstv", (m * P,)))
        return G
    Z = buf("mlp_z", (N, m, K))
    if vec:
        if paired is None:
            paired = N > 1 and 2 * _padded(widths[1]) <= _NVMAX * _V
        P = (2 if paired else 1) * _padded(widths[1])
        Hf = (buf("mlp_h0v", (N * m * P,)),) + tuple(buf(("mlp_hv", j), (N * m * _padded(h),))
                                                       for j, h in enumerate(widths[2:-1], 1))
        _mlp_forward_vec(Af, X2, Hf, Hf[0], Z.reshape(-1), buf("mlp_zp", (m * _padded(K),)), order, didx, xidx, of,
                         wd, bool(paired), buf("mlp_wp", ((max(widths) + 1) * _NVMAX * _V,)),
                         buf("mlp_bp", (_NVMAX * _V,)), P)
    else:
        if paired is None:
            paired = N > 1 and _pairs_keep_bits(m, tuple(widths), tuple(offs))
        P = 0
        Hf = tuple(buf(("mlp_h", j), (N * m * int(h),)) for j, h in enumerate(widths[1:-1]))
        _mlp_forward(Af, X2, Hf, Hf[0], Z.reshape(-1), order, didx, xidx, of, wd, bool(paired),
                     buf("mlp_wst", (2 * widths[0] * widths[1],)))
    E = buf("exp", Z.shape)                            # the log-softmax: numpy's exp and log, as the numpy path
    np.exp(Z, out=E)
    Z2 = Z.reshape(-1, K)
    S = _row_sums(E.reshape(-1, K), np.empty(Z2.shape[0]))
    np.log(S, out=S)
    _sub_rows(Z2, S)
    return lead, Z, E, Af, X2, Hf, oh3, w2, order, didx, xidx, of, wd, bool(paired), buf, vec, P


_PAIRS: dict = {}
#: the products in vectors (:func:`_vnn_loop`, :func:`_vtn_loop`) where the widths allow; ``False``: numpy's BLAS
#: from numba, the numpy path's bits
VECTOR = True


def _padded(h: int) -> int:
    return -(-int(h) // _V) * _V
_PAIR_MIN_ROWS = 64         # below this the first layer's products are cheap: kept separate, no check


def _pairs_keep_bits(m: int, widths: tuple, offs: tuple) -> bool:
    """Once per shape: the first layer's products of two points sharing a data set made as one (``A [W W']``,
    ``A^T [D D']``, the next layer reading its half through the leading dimension) give the separate products'
    bits -- the gradient and the logits equal with and without, on four random draws -- so the numpy path's bits.
    OpenBLAS's blocking depends on the shape: at Table 2's ``m = 1,091`` (and 45, 64) the stacked products' bits
    are the separate ones', at ``m = 300`` or ``9`` not (there the products stay separate)."""
    key = (m, widths)
    ok = _PAIRS.get(key)
    if ok is None:
        ok = m >= _PAIR_MIN_ROWS
        rng = np.random.default_rng(0)
        K, p = widths[-1], offs[-1] + (widths[-2] + 1) * widths[-1]
        for _ in range(4 if ok else 0):
            A = rng.standard_normal((1, m, widths[0]))
            onehot = np.eye(K)[rng.integers(0, K, (1, m))]
            w = rng.random((1, m))
            X = 0.3 * rng.standard_normal((2, 1, p))
            try:
                g = [_mlp_grad(A, X, onehot, w, widths, offs, None, pair) for pair in (False, True)]
                v = [_mlp_log_softmax(A, X, onehot, w, widths, offs, "relu", None, pair) for pair in (False, True)]
                ok = (g[0] is not None and g[1] is not None and np.array_equal(g[0], g[1])
                      and v[0] is not None and v[1] is not None and np.array_equal(v[0][1], v[1][1]))
            except Exception:  # pragma: no cover
                ok = False
            if not ok:
                break
        if len(_PAIRS) > 64:
            _PAIRS.clear()
        _PAIRS[key] = ok
    return ok


def _mlp_grad(A, X, onehot, w, widths, offs, scratch, paired=None):
    st = _mlp_log_softmax(A, X, onehot, w, widths, offs, "relu", scratch, paired, fused=True)
    if st is None or isinstance(st, np.ndarray):
        return st
    lead, Z, _, Af, X2, Hf, oh3, w2, order, didx, xidx, of, wd, paired, buf, _, _ = st
    np.exp(Z, out=Z)
    N, m, _ = Z.shape
    p = X2.shape[-1]
    G = np.empty(lead + (p,))
    hmax = int(max(widths))
    k0, h1 = widths[0], widths[1]
    _mlp_backward(Af, X2, Hf, Hf[0], Z.reshape(-1), oh3, w2, order, didx, xidx, of, wd, paired, G.reshape(N, p),
                  buf("mlp_b0", (m * hmax,)), buf("mlp_b1", (m * hmax,)), buf("mlp_dst", (2 * m * h1,)),
                  buf("mlp_gst", (2 * k0 * h1,)))
    return G


def mlp_grad(A: np.ndarray, X: np.ndarray, onehot: np.ndarray, w: np.ndarray, widths: tuple, offs: tuple,
             activation: str = "relu", scratch=None) -> np.ndarray | None:
    """The gradient of a ReLU MLP's weighted softmax cross-entropy (:class:`fedcheck.problems.networks.MLP`'s
    layout: per layer ``W`` ``(in, out)`` row-major at ``offs[j]``, then ``b``) at the points ``X`` ``(..., p)``
    on the data ``A`` ``(..., m, d)``, ``onehot`` ``(..., m, K)``, ``w`` ``(..., m)`` (lead shapes broadcasting
    together).  With :data:`VECTOR` (widths up to 48): the products in AVX-512 vectors, in one pass over the groups
    of points sharing a data set (:func:`_mlp_grad_vec_loop`), within 1e-12 of the numpy path (relative to the largest entry;
    observed <= 4e-16); else numpy's BLAS from numba, the numpy path's operations in its order, so its bits.
    ``scratch(key, shape)`` gives reused arrays (or ``None``).  ``None`` when it does not apply (numba off, no BLAS
    found for the BLAS path, layouts, ``activation`` not ``"relu"``: numpy's SIMD ``tanh`` is not libm's)."""
    if activation != "relu":
        return None
    return _mlp_grad(A, X, onehot, w, widths, offs, scratch)


def mlp_value(A: np.ndarray, X: np.ndarray, onehot: np.ndarray, w: np.ndarray, widths: tuple, offs: tuple,
              activation: str = "relu", scratch=None) -> np.ndarray | None:
    """The values ``-sum_r w_r <onehot_r, log_softmax(logits_r)>`` of a ReLU MLP at the points ``X`` (arguments
    as :func:`mlp_grad`), ``lead`` shaped: the forward pass compiled (the products in vectors with :data:`VECTOR`,
    within 1e-12 of the numpy path; else numpy's BLAS, client by client, its bits), then the numpy path's
    operations (its row sums over ``K`` in numpy's pairwise order, its own sum over the samples); ``None`` when it
    does not apply."""
    st = _mlp_log_softmax(A, X, onehot, w, widths, offs, activation, scratch)
    if st is None:
        return None
    lead, Z, E = st[:3]
    N, m, K = Z.shape
    P = np.multiply(onehot, Z.reshape(lead + (m, K)), out=E.reshape(lead + (m, K)))      # onehot * lp
    t = _row_sums(P.reshape(-1, K), np.empty(N * m)).reshape(lead + (m,))
    return -(np.multiply(w, t, out=t)).sum(-1)
