"""Compiled FedSGM (numba): a whole run of :func:`fedcheck.algorithms.switching.fedsgm` in one call.

The numpy path spends ~380 us per round of the peer benchmark (64 x 5 x 5, m = 10, E = 3) on per-call overhead
of ~60 tiny numpy operations (einsum, reductions, elementwise).  Here every instance, round, local step and client
is one compiled loop (rows are independent: the instance is the outer loop), with every recorded metric and every
``trace.final`` entry, computed by the numpy path's formulas **in numpy's floating-point order**, so that the two
give the same bits (FedSGM's trajectory branches on ``sign(A w - b)``, on the maximizing piece and on the switching
test ``g(w) <= eps``: a last-bit difference could change a later iterate):

* ``einsum("...mp,...p->...m")`` (a residual, the pieces): numpy's ``sum_of_products_contig_contig_outstride0_two``
  with 2-lane SSE2 vectors: blocks of 8 products added to the two lane accumulators from the last pair back, then
  pairs, then ``lane0 + lane1`` (:func:`_dot`);
* ``einsum("...mp,...m->...p")`` (``A^T s``): the rows added one after the other for ``p >= 2``, :func:`_dot` along
  the rows for ``p == 1`` (numpy's iterator then coalesces the axes);
* ``.sum(-1)``, ``.mean(-1)`` and ``np.linalg.norm(axis=-1)`` over a contiguous axis: numpy's pairwise sum
  (:func:`_pairwise`: sequential below 8 terms, 8 accumulators up to 128, halves above);
* the clients' mean ``X.mean(1)``: clients added one after the other for ``d >= 2`` (pairwise for ``d == 1``);
* ties: ``sign(0) = 0`` (``sign(NaN) = NaN``), ``argmax`` the lowest index (the first NaN if any), maxima
  propagate NaN, ``np.clip``'s NaN rule; no fused multiply-add (``fastmath=False``).

``tests/test_switching_jit.py`` checks compiled against numpy (``FEDCHECK_JIT=0``) bit for bit on random
instances of every covered class, rule and compressor.

Covered (:func:`eligible` says why not otherwise, and :func:`fedsgm` then runs numpy): client functions
:class:`~fedcheck.problems.losses.LAD` and :class:`~fedcheck.problems.losses.MaxAffine` with ``kernel="einsum"``
(the FedSGM components), :class:`~fedcheck.problems.losses.Affine`, :class:`~fedcheck.problems.losses.Distance`,
:class:`~fedcheck.problems.losses.L2Residual`, :class:`~fedcheck.problems.losses.Huber` (exact types, not
subclasses); compressors :class:`~fedcheck.problems.compression.Identity`, ``Bernoulli``, ``RandK`` and
``RandomQuantization`` (their uniforms still come from the one
:class:`~fedcheck.problems.compression.UniformStream`, drawn in blocks of rounds); hard and soft switching.
Not covered: ``WeightedLogistic`` (numpy's ``tanh``/``log1p``/``exp`` are not libm's to the last bit) and the
``matmul`` kernels of LAD and MaxAffine (BLAS order).
"""
from __future__ import annotations

import numpy as np

from fedcheck.problems.compiled import AVAILABLE, numba

__all__ = ["eligible", "run_fedsgm"]

# client-function kinds of the kernel
LAD_K, MAXAFF_K, AFFINE_K, DIST_K, L2RES_K, HUBER_K = 1, 2, 3, 4, 5, 6
# compressors
ID_C, BERN_C, RANDK_C, QSGD_C = 0, 1, 2, 3
# recorded metrics, in the kernel's order
KEYS = ("f", "g", "sigma", "in_A", "weight", "dist2", "cond_dist2", "h", "drift_step", "drift_sq",
        "agg_sq", "agg_sq_cond", "max_dir")
MAX_AXIS = 128     # n, m, d: numpy's pairwise sums of up to 128 terms are one block (no recursion)
ROUND_BLOCK = 64   # rounds per kernel call with a random compressor (the uniforms of a block are drawn first)


# ------------------------------------------------------------------------------------------------
# numpy's summation orders
def _block(v, lo, n):
    """numpy's pairwise sum of ``v[lo:lo + n]`` for ``n <= 128`` (no identity)."""
    if n < 8:
        s = -0.0
        for k in range(n):
            s += v[lo + k]
        return s
    r0, r1, r2, r3 = v[lo], v[lo + 1], v[lo + 2], v[lo + 3]
    r4, r5, r6, r7 = v[lo + 4], v[lo + 5], v[lo + 6], v[lo + 7]
    i = 8
    while i + 8 <= n:
        r0 += v[lo + i]
        r1 += v[lo + i + 1]
        r2 += v[lo + i + 2]
        r3 += v[lo + i + 3]
        r4 += v[lo + i + 4]
        r5 += v[lo + i + 5]
        r6 += v[lo + i + 6]
        r7 += v[lo + i + 7]
        i += 8
    s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        s += v[lo + i]
        i += 1
    return s


def _pairwise(v, n):
    """``np.add.reduce(v[:n])`` without the identity: numpy's pairwise sum, for ``n <= 128`` (above, numpy halves
    recursively: :func:`eligible` declines sizes above :data:`MAX_AXIS`)."""
    return _block(v, 0, n)


def _sum(v, n):
    """``v[:n].sum()`` as numpy's ``add.reduce``: the identity ``0.0`` plus the pairwise sum."""
    return 0.0 + _pairwise(v, n)


def _dot(A, ar, X, xr, p):
    """``einsum("p,p->", A[ar], X[xr])``: numpy's ``contig_contig_outstride0_two`` with 2-lane vectors (plus
    the output's initial 0).  Rows of 2-D arrays by index: no array view in the hot loops."""
    l0 = 0.0
    l1 = 0.0
    i = 0
    while p - i >= 8:
        t0 = l0 + A[ar, i + 6] * X[xr, i + 6]
        t1 = l1 + A[ar, i + 7] * X[xr, i + 7]
        t0 = t0 + A[ar, i + 4] * X[xr, i + 4]
        t1 = t1 + A[ar, i + 5] * X[xr, i + 5]
        t0 = t0 + A[ar, i + 2] * X[xr, i + 2]
        t1 = t1 + A[ar, i + 3] * X[xr, i + 3]
        l0 = t0 + A[ar, i] * X[xr, i]
        l1 = t1 + A[ar, i + 1] * X[xr, i + 1]
        i += 8
    while i + 2 <= p:
        l0 = l0 + A[ar, i] * X[xr, i]
        l1 = l1 + A[ar, i + 1] * X[xr, i + 1]
        i += 2
    if i < p:
        l0 = l0 + A[ar, i] * X[xr, i]
    return (l0 + l1) + 0.0


def _sign(r):
    if r > 0:
        return 1.0
    if r < 0:
        return -1.0
    if r == 0:
        return 0.0
    return r


def _nanmax(a, b):
    """``np.maximum(a, b)`` (NaN propagates)."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


def _ATs(A, base, s, m, p, out):
    """``einsum("mp,m->p", A[base:base + m], s)`` in numpy's order: rows added in turn for ``p >= 2``; for
    ``p == 1`` numpy's iterator coalesces the axes and sums by 2-lane vectors along the rows."""
    if p == 1:
        l0 = 0.0
        l1 = 0.0
        i = 0
        while m - i >= 8:
            t0 = l0 + A[base + i + 6, 0] * s[i + 6]
            t1 = l1 + A[base + i + 7, 0] * s[i + 7]
            t0 = t0 + A[base + i + 4, 0] * s[i + 4]
            t1 = t1 + A[base + i + 5, 0] * s[i + 5]
            t0 = t0 + A[base + i + 2, 0] * s[i + 2]
            t1 = t1 + A[base + i + 3, 0] * s[i + 3]
            l0 = t0 + A[base + i, 0] * s[i]
            l1 = t1 + A[base + i + 1, 0] * s[i + 1]
            i += 8
        while i + 2 <= m:
            l0 = l0 + A[base + i, 0] * s[i]
            l1 = l1 + A[base + i + 1, 0] * s[i + 1]
            i += 2
        if i < m:
            l0 = l0 + A[base + i, 0] * s[i]
        out[0] = (l0 + l1) + 0.0
        return
    for q in range(p):
        out[q] = 0.0
    for k in range(m):
        sk = s[k]
        for q in range(p):
            out[q] = out[q] + A[base + k, q] * sk


# ------------------------------------------------------------------------------------------------
# client functions of client c = (instance, client): rows base..base+m-1 of A (rows, p) and b (rows,), M[c];
# the point is row xr of X; tmp, tmp2 scratch of length >= max(m, p)
def _value(kind, A, b, M, base, c, X, xr, m, p, tmp):
    if kind == LAD_K:
        for k in range(m):
            tmp[k] = abs(_dot(A, base + k, X, xr, p) - b[base + k])
        return _sum(tmp, m) / m
    if kind == MAXAFF_K:
        mx = _dot(A, base, X, xr, p) + b[base]
        for k in range(1, m):
            mx = _nanmax(mx, _dot(A, base + k, X, xr, p) + b[base + k])
        return mx
    if kind == AFFINE_K:
        return _dot(A, base, X, xr, p) + b[base]
    if kind == DIST_K:
        for q in range(p):
            v = X[xr, q] - A[base, q]
            tmp[q] = v * v
        return np.sqrt(_sum(tmp, p)) - b[base]
    if kind == L2RES_K:
        for k in range(m):
            r = _dot(A, base + k, X, xr, p) - b[base + k]
            tmp[k] = r * r
        return np.sqrt(_sum(tmp, m)) / np.sqrt(float(m))
    # HUBER_K
    Mc = M[c]
    for k in range(m):
        r = _dot(A, base + k, X, xr, p) - b[base + k]
        a = abs(r)
        tmp[k] = r * r if a <= Mc else 2.0 * Mc * a - Mc * Mc
    return _sum(tmp, m) / m


def _clip(r, lo, hi):
    """``np.clip`` of floats: ``min(max(r, lo), hi)`` with numpy's NaN rule."""
    if r == r:
        r = r if r > lo else lo
    if r == r:
        r = r if r < hi else hi
    return r


def _subgrad(kind, A, b, M, base, c, X, xr, m, p, out, tmp, tmp2):
    if kind == LAD_K:
        for k in range(m):
            tmp[k] = _sign(_dot(A, base + k, X, xr, p) - b[base + k])
        _ATs(A, base, tmp, m, p, out)
        for q in range(p):
            out[q] = out[q] / m
        return
    if kind == MAXAFF_K:
        best = _dot(A, base, X, xr, p) + b[base]
        j = 0
        if best == best:
            for k in range(1, m):
                z = _dot(A, base + k, X, xr, p) + b[base + k]
                if z != z:
                    j = k
                    break
                if z > best:
                    best = z
                    j = k
        for q in range(p):
            out[q] = A[base + j, q]
        return
    if kind == AFFINE_K:
        for q in range(p):
            out[q] = A[base, q]
        return
    if kind == DIST_K:
        for q in range(p):
            v = X[xr, q] - A[base, q]
            tmp2[q] = v
            tmp[q] = v * v
        nv = np.sqrt(_sum(tmp, p))
        for q in range(p):
            out[q] = tmp2[q] / nv if nv > 0 else 0.0
        return
    if kind == L2RES_K:
        for k in range(m):
            r = _dot(A, base + k, X, xr, p) - b[base + k]
            tmp2[k] = r
            tmp[k] = r * r
        nr = np.sqrt(_sum(tmp, m))
        for k in range(m):
            tmp[k] = tmp2[k] / nr if nr > 0 else 0.0
        _ATs(A, base, tmp, m, p, out)
        sm = np.sqrt(float(m))
        for q in range(p):
            out[q] = out[q] / sm
        return
    # HUBER_K
    Mc = M[c]
    for k in range(m):
        tmp[k] = 2 * _clip(_dot(A, base + k, X, xr, p) - b[base + k], -Mc, Mc)
    _ATs(A, base, tmp, m, p, out)
    for q in range(p):
        out[q] = out[q] / m


# ------------------------------------------------------------------------------------------------
# compressors: C(X[j]) into CX[j] with the uniforms U[ti, bi, j], and E||C(x) - x||^2
def _compress(ckind, cpar, X, j, U, ti, bi, d, CX):
    """False when Rand-K's uniforms tie at the boundary (numpy's ``argpartition`` would pick among equal
    values: the caller runs numpy)."""
    if ckind == BERN_C:
        for i in range(d):
            CX[j, i] = X[j, i] / cpar if U[ti, bi, j, i] < cpar else 0.0
        return True
    if ckind == RANDK_C:
        k = int(cpar)
        if k == d:
            for i in range(d):
                CX[j, i] = X[j, i]
            return True
        scale = d / k
        for i in range(d):
            ui = U[ti, bi, j, i]
            less = 0
            equal = 0
            for q in range(d):
                uq = U[ti, bi, j, q]
                if uq < ui:
                    less += 1
                elif uq == ui and q != i:
                    equal += 1
            if less < k and less + equal >= k:
                return False        # a tie straddles the K-th smallest: argpartition's choice is not ours
            CX[j, i] = X[j, i] * scale if less < k else 0.0
        return True
    if ckind == QSGD_C:
        s = cpar
        norm = np.sqrt(_dot(X, j, X, j, d))
        for i in range(d):
            x = X[j, i]
            r = s * abs(x) / norm if norm > 0 else 0.0
            lo = np.floor(r)
            xi = lo + (1.0 if U[ti, bi, j, i] < r - lo else 0.0)
            CX[j, i] = norm * _sign(x) * xi / s
        return True
    for i in range(d):
        CX[j, i] = X[j, i]
    return True


def _variance(ckind, cpar, X, j, d, tmp):
    if ckind == BERN_C:
        return (1.0 / cpar - 1.0) * _dot(X, j, X, j, d)
    if ckind == RANDK_C:
        return (d / int(cpar) - 1.0) * _dot(X, j, X, j, d)
    if ckind == QSGD_C:
        s = cpar
        norm = np.sqrt(_dot(X, j, X, j, d))
        for i in range(d):
            r = s * abs(X[j, i]) / norm if norm > 0 else 0.0
            fr = r - np.floor(r)
            tmp[i] = fr * (1 - fr)
        return (norm * norm / (s * s)) * _sum(tmp, d)
    return 0.0


def _clients_mean(Xs, n, d, out, col):
    """``X.mean(1)`` of one row ``Xs`` (n, d) as numpy (clients in order for d >= 2; pairwise for d == 1)."""
    if d == 1:
        for j in range(n):
            col[j] = Xs[j, 0]
        out[0] = _sum(col, n) / n
        return
    for i in range(d):
        out[i] = Xs[0, i]
    for j in range(1, n):
        for i in range(d):
            out[i] += Xs[j, i]
    for i in range(d):
        out[i] /= n


# ------------------------------------------------------------------------------------------------
def _run(fk, fA, fb, fM, mf, gk, gA, gb, gM, mg, w, eta, eps, beta, soft, conv_le, E, t0, t1, T, has_u, u, fu,
         gu, ckind, cpar, U, rec, S_w, S_weight, A_size, sig_A):
    """Rounds ``t0 <= t < t1`` of every row (``t == T`` records the last point only); state ``w``, ``S_w``,
    ``S_weight``, ``A_size``, ``sig_A`` in place; ``rec`` (13, T + 1, B).  Client functions: rows
    ``(b n + j) m + k`` of ``fA`` (B n m, d), ``fb`` (B n m,), ``fM`` (B n,).  Returns -1, or the first row
    whose Rand-K uniforms tie (the caller then runs numpy)."""
    B, d = w.shape[0], w.shape[1]
    n = fM.shape[0] // B
    L = max(mf, mg, d, n) + 1
    tmp = np.empty(L)
    tmp2 = np.empty(L)
    vals = np.empty(n)
    W = np.empty((n, d))
    X = np.empty((n, d))
    CX = np.empty((n, d))
    Vf = np.empty(d)
    Vg = np.empty(d)
    Xbar = np.empty(d)
    agg = np.empty(d)
    drift = np.empty((n, E))
    dsq = np.empty(n)
    var_j = np.empty(n)
    nn = float(n * n)
    for t in range(t0, t1):
        for bi in range(B):
            et = eta[bi]
            for j in range(n):
                c = bi * n + j
                vals[j] = _value(fk, fA, fb, fM, c * mf, c, w, bi, mf, d, tmp)
            fw = _sum(vals, n) / n
            for j in range(n):
                c = bi * n + j
                vals[j] = _value(gk, gA, gb, gM, c * mg, c, w, bi, mg, d, tmp)
            gw = _sum(vals, n) / n
            z = gw - eps[bi]
            if soft:
                y = 1.0 + beta[bi] * z
                if y == y:
                    y = y if y >= 0.0 else 0.0
                    y = 1.0 if 1.0 <= y else y
                sig = y
            else:
                sig = 1.0 if z > 0 else 0.0
            rec[0, t, bi] = fw
            rec[1, t, bi] = gw
            rec[2, t, bi] = sig
            if has_u:
                for i in range(d):
                    v = w[bi, i] - u[bi, i]
                    tmp[i] = v * v
                rec[5, t, bi] = _sum(tmp, d)
                rec[7, t, bi] = (1 - sig) * (fw - fu[bi]) + sig * (gw - gu[bi])
            if t == T:
                continue
            inA = gw <= eps[bi] if conv_le else gw < eps[bi]
            wt = (1.0 - sig if soft else 1.0) if inA else 0.0
            rec[3, t, bi] = 1.0 if inA else 0.0
            rec[4, t, bi] = wt
            for i in range(d):
                S_w[bi, i] = S_w[bi, i] + wt * w[bi, i]
            S_weight[bi] = S_weight[bi] + wt
            A_size[bi] = A_size[bi] + (1.0 if inA else 0.0)
            sig_A[bi] = sig_A[bi] + (sig if inA else 0.0)
            # local steps
            om = 1 - sig
            max_dir = 0.0
            for j in range(n):
                for i in range(d):
                    W[j, i] = w[bi, i]
                    X[j, i] = 0.0
                dsq[j] = 0.0
            for tau in range(E):
                for j in range(n):
                    c = bi * n + j
                    _subgrad(fk, fA, fb, fM, c * mf, c, W, j, mf, d, Vf, tmp, tmp2)
                    _subgrad(gk, gA, gb, gM, c * mg, c, W, j, mg, d, Vg, tmp, tmp2)
                    for i in range(d):
                        v = om * Vf[i] + sig * Vg[i]
                        Vf[i] = v
                        tmp[i] = v * v
                    max_dir = _nanmax(max_dir, np.sqrt(_sum(tmp, d)))
                    for i in range(d):
                        X[j, i] = X[j, i] + Vf[i]
                        W[j, i] = W[j, i] - et * Vf[i]
                        v = W[j, i] - w[bi, i]
                        tmp[i] = v * v
                    dist = np.sqrt(_sum(tmp, d))
                    drift[j, tau] = dist
                    if tau + 1 < E:
                        dsq[j] = dsq[j] + dist * dist
            ds = drift[0, 0] / (1.0 * et)
            mq = dsq[0]
            for j in range(n):
                for tau in range(E):
                    ds = _nanmax(ds, drift[j, tau] / ((tau + 1.0) * et))
                mq = _nanmax(mq, dsq[j])
            rec[8, t, bi] = ds
            rec[9, t, bi] = mq
            rec[12, t, bi] = max_dir
            # uplink
            for j in range(n):
                if ckind != ID_C:
                    if not _compress(ckind, cpar, X, j, U, t - t0, bi, d, CX):
                        return bi
                var_j[j] = _variance(ckind, cpar, X, j, d, tmp)
            _clients_mean(X, n, d, Xbar, tmp)
            if ckind != ID_C:
                _clients_mean(CX, n, d, agg, tmp)
            else:
                for i in range(d):
                    agg[i] = Xbar[i]
            var = _sum(var_j, n) / nn
            for i in range(d):
                tmp[i] = agg[i] * agg[i]
            rec[10, t, bi] = _sum(tmp, d)
            for i in range(d):
                tmp[i] = Xbar[i] * Xbar[i]
            rec[11, t, bi] = _sum(tmp, d) + var
            if has_u:
                for i in range(d):
                    v = (w[bi, i] - et * Xbar[i]) - u[bi, i]
                    tmp[i] = v * v
                rec[6, t, bi] = _sum(tmp, d) + et * et * var
            for i in range(d):
                w[bi, i] = w[bi, i] - et * agg[i]
    return -1


_run_compiled = None
if AVAILABLE:
    try:
        _jit = numba.njit(cache=True, fastmath=False, nogil=True, error_model="numpy")
        # the helpers allocate nothing: compiled without reference counting, a call costs no atomic operation
        # on its array arguments (with it, a 5-term dot product called from the kernel costs ~26 ns, not ~6)
        _plain = numba.njit(cache=True, fastmath=False, nogil=True, error_model="numpy", _nrt=False)
        _small = numba.njit(cache=True, fastmath=False, nogil=True, error_model="numpy", _nrt=False,
                            inline="always")
        _block, _pairwise, _sum, _dot, _sign, _nanmax, _ATs, _clip = (
            _small(f) for f in (_block, _pairwise, _sum, _dot, _sign, _nanmax, _ATs, _clip))
        _value, _subgrad, _compress, _variance, _clients_mean = (
            _plain(f) for f in (_value, _subgrad, _compress, _variance, _clients_mean))
        _run_compiled = _jit(_run)
    except Exception:  # pragma: no cover
        _run_compiled = None


# ------------------------------------------------------------------------------------------------
def _component(loss, B, n, d):
    """``(kind, A (B n m, d), b (B n m,), M (B n,), m)`` (client ``c = b n + j``: rows ``c m + k``) of a covered client function, else a reason (str)."""
    from fedcheck.problems.losses import LAD, Affine, Distance, Huber, L2Residual, MaxAffine
    t = type(loss)
    if t in (LAD, MaxAffine) and loss.opts.get("kernel") != "einsum":
        return f"{t.__name__} with kernel={loss.opts.get('kernel')!r} (BLAS order)"
    if t is LAD or t is MaxAffine or t is L2Residual or t is Huber:
        A, b = loss.A, loss.b
    elif t is Affine:
        A, b = loss.a[..., None, :], loss.b[..., None]
    elif t is Distance:
        A, b = loss.c[..., None, :], loss.r[..., None]
    else:
        return f"{t.__name__} client functions"
    kind = {LAD: LAD_K, MaxAffine: MAXAFF_K, Affine: AFFINE_K, Distance: DIST_K, L2Residual: L2RES_K,
            Huber: HUBER_K}[t]
    if A.ndim != 4 or A.shape[:2] != (B, n) or A.shape[3] != d or b.shape != A.shape[:3] or A.shape[2] < 1:
        return f"{t.__name__} arrays of shape {A.shape} for a batch ({B}, {n}, {d})"
    M = loss.M if t is Huber else np.zeros((B, n))
    if np.shape(M) != (B, n):
        return f"Huber M of shape {np.shape(M)}"
    f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)
    m = A.shape[2]
    return kind, f64(A).reshape(B * n * m, d), f64(b).reshape(B * n * m), f64(M).reshape(B * n), m


def eligible(batch, compressor, rule, local_steps) -> tuple | str:
    """The kernel's arguments of ``batch`` and ``compressor``, or the reason the compiled path declines."""
    from fedcheck.problems.compression import Bernoulli, Identity, RandK, RandomQuantization
    if _run_compiled is None:
        return "compiled code is off (FEDCHECK_JIT=0 or no numba)"
    if rule not in ("hard", "soft"):
        return f"rule {rule!r}"
    if int(local_steps) < 1:
        return "no local step"
    B, n, d = batch.B, batch.n, batch.d
    fc, gc = _component(batch.f, B, n, d), _component(batch.g, B, n, d)
    for c in (fc, gc):
        if isinstance(c, str):
            return c
    if max(n, d, fc[4], gc[4]) > MAX_AXIS:
        return f"an axis longer than {MAX_AXIS} (numpy's pairwise sums recurse)"
    C = compressor
    t = type(C)
    if t is Identity:
        ck, cp = ID_C, 0.0
    elif t is Bernoulli:
        ck, cp = BERN_C, float(C.p)
    elif t is RandK:
        if C.k > d:
            return "Rand-K with K > d (numpy raises)"
        ck, cp = RANDK_C, float(C.k)
    elif t is RandomQuantization:
        ck, cp = QSGD_C, float(C.s)
    else:
        return f"compressor {t.__name__}"
    return fc, gc, ck, cp


def run_fedsgm(args, *, w, eta, eps, beta, rule, a_set, E, T, u, fu, gu, stream):
    """The whole run compiled (``args`` from :func:`eligible`): ``(rec, S_w, S_weight, A_size, sig_A, w)``, or
    ``None`` when the kernel meets a case it leaves to numpy (Rand-K uniforms tied at the boundary) -- the caller
    then runs numpy from the start (the stream is then consumed: the caller builds a fresh one)."""
    (fk, fA, fb, fM, mf), (gk, gA, gb, gM, mg), ck, cp = args
    B, d = w.shape
    w = np.array(w, dtype=np.float64, order="C")
    c64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)
    eta, eps = c64(eta), c64(eps)
    beta = c64(beta) if beta is not None else np.zeros(B)
    soft = rule == "soft"
    conv_le = (a_set or ("le" if rule == "hard" else "lt")) == "le"
    has_u = u is not None
    uu = c64(u) if has_u else np.zeros((B, d))
    fuu = c64(fu) if has_u else np.zeros(B)
    guu = c64(gu) if has_u else np.zeros(B)
    rec = np.full((len(KEYS), T + 1, B), np.nan)
    S_w, S_weight, A_size, sig_A = np.zeros((B, d)), np.zeros(B), np.zeros(B), np.zeros(B)
    if ck == ID_C:
        blocks = [(0, T + 1)]
    else:
        blocks = [(t0, min(t0 + ROUND_BLOCK, T + 1)) for t0 in range(0, T + 1, ROUND_BLOCK)]
    U0 = np.zeros((1, 1, 1, 1))
    for t0, t1 in blocks:
        if ck == ID_C:
            U = U0
        else:
            k = min(t1, T) - t0
            U = np.ascontiguousarray(np.stack([stream.next() for _ in range(k)])) if k > 0 else U0
        bad = _run_compiled(fk, fA, fb, fM, mf, gk, gA, gb, gM, mg, w, eta, eps, beta, soft, conv_le, int(E), t0, t1, int(T),
                            has_u, uu, fuu, guu, ck, cp, U, rec, S_w, S_weight, A_size, sig_A)
        if bad >= 0:
            return None
    return {k: rec[i] for i, k in enumerate(KEYS)}, S_w, S_weight, A_size, sig_A, w
