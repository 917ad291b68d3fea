"""Compiled FedSGM (numba): a whole run of :func:`fedcheck.algorithms.switching.fedsgm` in one call.

The numpy path spends ~380 us per round of the peer benchmark (64 x 5 x 5, m = 10, E = 3) on per-call overhead
of ~60 tiny numpy operations (einsum, reductions, elementwise).  Here every round, local step and client is one
compiled loop, each operation over all instances at once (the instance axis is the last, contiguous one, so the
loops over it vectorize), with every recorded metric and every ``trace.final`` entry computed by the numpy path's
formulas **in numpy's floating-point order**, so that the two give the same bits (FedSGM's trajectory branches on
``sign(A w - b)``, on the maximizing piece and on the switching test ``g(w) <= eps``: a last-bit difference could
change a later iterate):

* ``einsum("...mp,...p->...m")`` (a residual, the pieces): numpy's ``sum_of_products_contig_contig_outstride0_two``
  with 2-lane SSE2 vectors (:func:`_lane_orders`, :func:`_rows_dot`);
* ``einsum("...mp,...m->...p")`` (``A^T s``): the rows added one after the other for ``p >= 2``, the 2-lane order
  along the rows for ``p == 1`` (numpy's iterator then coalesces the axes) (:func:`_ATs`);
* ``.sum(-1)``, ``.mean(-1)`` and ``np.linalg.norm(axis=-1)`` over a contiguous axis: the identity plus numpy's
  pairwise sum (:func:`fedcheck.problems.compiled.lane_pairwise_sum`: sequential below 8 terms, 8 accumulators up to 128; longer axes are declined);
* the clients' mean ``X.mean(1)``: clients added one after the other for ``d >= 2`` (pairwise for ``d == 1``);
* ties: ``sign(0) = 0`` (``sign(NaN) = NaN``), ``argmax`` the lowest index (the first NaN if any), maxima
  propagate NaN, ``np.clip``'s NaN rule; no fused multiply-add (``fastmath=False``).

These orders are those of this numpy build (its baseline SIMD); :func:`numpy_orders_hold` probes them once per
process against numpy itself and the compiled path declines if any differs.  ``tests/test_switching_jit.py`` checks
compiled against numpy (``FEDCHECK_JIT=0``) bit for bit on random instances of every covered class, rule and
compressor.

Covered (:func:`eligible` says why not otherwise, and :func:`fedsgm` then runs numpy): client functions
:class:`~fedcheck.problems.losses.LAD` and :class:`~fedcheck.problems.losses.MaxAffine` with ``kernel="einsum"``
(the FedSGM components), :class:`~fedcheck.problems.losses.Affine`, :class:`~fedcheck.problems.losses.Distance`,
:class:`~fedcheck.problems.losses.L2Residual`, :class:`~fedcheck.problems.losses.Huber` (exact types, not
subclasses); compressors :class:`~fedcheck.problems.compression.Identity`, ``Bernoulli``, ``RandK`` and
``RandomQuantization`` (their uniforms still come from the one
:class:`~fedcheck.problems.compression.UniformStream`, drawn in blocks of rounds); hard and soft switching; axes
(``n``, ``m``, ``d``) up to :data:`MAX_AXIS`.  Not covered: ``WeightedLogistic`` (numpy's ``tanh``/``log1p``/``exp``
are not libm's to the last bit) and the ``matmul`` kernels of LAD and MaxAffine (BLAS order).
"""
from __future__ import annotations

import numpy as np

import functools

from fedcheck.problems.compiled import AVAILABLE, lane_pairwise_sum as _psum, numba

__all__ = ["eligible", "run_fedsgm", "numpy_orders_hold"]

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
# numpy's summation orders, every operation over all instances at once (the instance axis is the last,
# contiguous one: the loops over it vectorize, and each instance sees numpy's order exactly)
def _lane_orders(p):
    """The two lanes of numpy's ``einsum`` dot product of length ``p`` (``sum_of_products_contig_contig_
    outstride0_two`` with 2-lane SSE2 vectors): blocks of 8 products enter the lanes from the last pair back
    (6, 4, 2, 0 | 7, 5, 3, 1), then the remaining pairs in order, an odd last product to lane 0; the result is
    ``(lane0 + lane1) + 0`` (the output's initial 0)."""
    o0, o1, i = [], [], 0
    while p - i >= 8:
        o0 += [i + 6, i + 4, i + 2, i]
        o1 += [i + 7, i + 5, i + 3, i + 1]
        i += 8
    while i < p:
        o0.append(i)
        if i + 1 < p:
            o1.append(i + 1)
        i += 2
    return np.array(o0, dtype=np.int64), np.array(o1, dtype=np.int64)


def _rows_dot(A, j, m, X, xj, o0, o1, l0, l1, SB, signs, R, Rj):
    """``R[Rj, k, :] = einsum("p,p->", A[j, k, :, b], X[xj, :, b]) + SB[j, k, b]`` (the offset of the row, with
    its sign: ``x - y`` is ``x + (-y)`` bit for bit), or its ``sign`` when ``signs``, for every row ``k < m`` and
    instance ``b`` (``A`` (n, m, p, B), ``X`` (., p, B)) in numpy's lane order (lane 0 accumulated in ``R`` itself, the lanes'
    products of one position in one pass)."""
    B = l0.shape[0]
    n1 = o1.shape[0]           # lane 1 has as many products as lane 0, or one fewer
    p = X.shape[1]
    if p < 8:                  # one pass: lane 0 = products 0, 2, 4, 6, lane 1 = 1, 3, 5 (no block of 8)
        for k in range(m):
            for b in range(B):
                a = 0.0 + A[j, k, 0, b] * X[xj, 0, b]
                c = 0.0
                if p > 1:
                    c = c + A[j, k, 1, b] * X[xj, 1, b]
                if p > 2:
                    a = a + A[j, k, 2, b] * X[xj, 2, b]
                if p > 3:
                    c = c + A[j, k, 3, b] * X[xj, 3, b]
                if p > 4:
                    a = a + A[j, k, 4, b] * X[xj, 4, b]
                if p > 5:
                    c = c + A[j, k, 5, b] * X[xj, 5, b]
                if p > 6:
                    a = a + A[j, k, 6, b] * X[xj, 6, b]
                r = ((a + c) + 0.0) + SB[j, k, b]
                R[Rj, k, b] = _sign(r) if signs else r
        return
    for k in range(m):
        i0, i1 = o0[0], o1[0] if n1 > 0 else 0
        if n1 > 0:
            for b in range(B):
                R[Rj, k, b] = 0.0 + A[j, k, i0, b] * X[xj, i0, b]
                l1[b] = 0.0 + A[j, k, i1, b] * X[xj, i1, b]
        else:
            for b in range(B):
                R[Rj, k, b] = 0.0 + A[j, k, i0, b] * X[xj, i0, b]
                l1[b] = 0.0
        for q in range(1, n1):
            i0, i1 = o0[q], o1[q]
            for b in range(B):
                R[Rj, k, b] = R[Rj, k, b] + A[j, k, i0, b] * X[xj, i0, b]
                l1[b] = l1[b] + A[j, k, i1, b] * X[xj, i1, b]
        for q in range(max(n1, 1), o0.shape[0]):
            i0 = o0[q]
            for b in range(B):
                R[Rj, k, b] = R[Rj, k, b] + A[j, k, i0, b] * X[xj, i0, b]
        for b in range(B):
            r = ((R[Rj, k, b] + l1[b]) + 0.0) + SB[j, k, b]
            R[Rj, k, b] = _sign(r) if signs else r


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


def _clip(r, lo, hi):
    """``np.clip`` of floats: ``min(max(r, lo), hi)`` with numpy's NaN rule."""
    if r == r:
        r = r if r > lo else lo
    if r == r:
        r = r if r < hi else hi
    return r


def _ATs(A, j, m, p, S, sj, om0, om1, l0, l1, div, out):
    """``out[q, b] = einsum("mp,m->p", A[j, :, :, b], S[sj, :, b]) / div`` in numpy's order: rows added in turn (from
    the output's initial 0) for ``p >= 2``; for ``p == 1`` numpy's iterator coalesces the axes and sums by 2-lane
    vectors along the rows (lane orders ``om0, om1`` of length ``m``)."""
    B = l0.shape[0]
    if p == 1:
        for b in range(B):
            l0[b] = 0.0
            l1[b] = 0.0
        for q in range(om0.shape[0]):
            k = om0[q]
            for b in range(B):
                l0[b] = l0[b] + A[j, k, 0, b] * S[sj, k, b]
        for q in range(om1.shape[0]):
            k = om1[q]
            for b in range(B):
                l1[b] = l1[b] + A[j, k, 0, b] * S[sj, k, b]
        for b in range(B):
            out[0, b] = ((l0[b] + l1[b]) + 0.0) / div
        return
    for q in range(p):         # eight, then up to four rows per pass over the instances, each instance's sum
        k = 0                  # row by row
        while k + 8 <= m:
            first = k == 0
            last = k + 8 == m
            for b in range(B):
                v = 0.0 if first else out[q, b]
                v = (((v + A[j, k, q, b] * S[sj, k, b]) + A[j, k + 1, q, b] * S[sj, k + 1, b])
                     + A[j, k + 2, q, b] * S[sj, k + 2, b]) + A[j, k + 3, q, b] * S[sj, k + 3, b]
                v = (((v + A[j, k + 4, q, b] * S[sj, k + 4, b]) + A[j, k + 5, q, b] * S[sj, k + 5, b])
                     + A[j, k + 6, q, b] * S[sj, k + 6, b]) + A[j, k + 7, q, b] * S[sj, k + 7, b]
                out[q, b] = v / div if last else v
            k += 8
        while k < m:
            c = min(4, m - k)
            first = k == 0
            last = k + c == m
            for b in range(B):
                v = 0.0 if first else out[q, b]
                v = v + A[j, k, q, b] * S[sj, k, b]
                if c > 1:
                    v = v + A[j, k + 1, q, b] * S[sj, k + 1, b]
                if c > 2:
                    v = v + A[j, k + 2, q, b] * S[sj, k + 2, b]
                if c > 3:
                    v = v + A[j, k + 3, q, b] * S[sj, k + 3, b]
                out[q, b] = v / div if last else v
            k += c


# ------------------------------------------------------------------------------------------------
# client functions (client j of every instance): A (n, m, p, B), b (n, m, B), M (n, B); the point is
# X[xj] (p, B); R (n, m, B) holds the rows' dot products A x (computed by the caller for the kinds that use them)
def _uses_dots(kind):
    return kind == LAD_K or kind == MAXAFF_K or kind == AFFINE_K or kind == L2RES_K or kind == HUBER_K


def _value(kind, A, bb, M, j, m, p, X, xj, R, T, r8, out):
    """``out[b] = f_j(x_b)`` (numpy's formulas; ``T`` scratch (L, B))."""
    B = out.shape[0]
    if kind == LAD_K:
        for k in range(m):
            for b in range(B):
                T[k, b] = abs(R[j, k, b])
        _psum(T, m, out, r8)
        for b in range(B):
            out[b] = out[b] / m
    elif kind == MAXAFF_K:
        for b in range(B):
            out[b] = R[j, 0, b]
        for k in range(1, m):
            for b in range(B):
                out[b] = _nanmax(out[b], R[j, k, b])
    elif kind == AFFINE_K:
        for b in range(B):
            out[b] = R[j, 0, b]
    elif kind == DIST_K:
        for q in range(p):
            for b in range(B):
                v = X[xj, q, b] - A[j, 0, q, b]
                T[q, b] = v * v
        _psum(T, p, out, r8)
        for b in range(B):
            out[b] = np.sqrt(out[b]) - bb[j, 0, b]
    elif kind == L2RES_K:
        for k in range(m):
            for b in range(B):
                r = R[j, k, b]
                T[k, b] = r * r
        _psum(T, m, out, r8)
        sm = np.sqrt(float(m))
        for b in range(B):
            out[b] = np.sqrt(out[b]) / sm
    else:  # HUBER_K
        for k in range(m):
            for b in range(B):
                r = R[j, k, b]
                a = abs(r)
                Mc = M[j, b]
                T[k, b] = r * r if a <= Mc else 2.0 * Mc * a - Mc * Mc
        _psum(T, m, out, r8)
        for b in range(B):
            out[b] = out[b] / m


def _subgrad(kind, A, bb, M, j, m, p, X, xj, R, signed, T3, T2, r8, om0, om1, l0, l1, nv, out):
    """``out[:, b]`` = the numpy oracle's subgradient of ``f_j`` at ``x_b`` (``T3`` (1, L, B), ``T2`` (L, B)
    scratch)."""
    B = l0.shape[0]
    T = T3[0]
    if kind == LAD_K:
        if signed:             # the rows' signs are in R already
            _ATs(A, j, m, p, R, j, om0, om1, l0, l1, float(m), out)
            return
        for k in range(m):
            for b in range(B):
                T[k, b] = _sign(R[j, k, b])
        _ATs(A, j, m, p, T3, 0, om0, om1, l0, l1, float(m), out)
    elif kind == MAXAFF_K:
        # argmax over the pieces, the lowest index on ties and the first NaN if any (numpy's), branch-free over
        # the instances: best in l0, the index in l1, "a NaN was met" in nv
        for b in range(B):
            z = R[j, 0, b]
            l0[b] = z
            l1[b] = 0.0
            nv[b] = 1.0 if z != z else 0.0
        for k in range(1, m):
            fk = float(k)
            for b in range(B):
                z = R[j, k, b]
                take = nv[b] == 0.0 and (z != z or z > l0[b])
                l0[b] = z if take else l0[b]
                l1[b] = fk if take else l1[b]
                nv[b] = 1.0 if (nv[b] != 0.0 or z != z) else 0.0
        for q in range(p):
            for b in range(B):
                out[q, b] = A[j, int(l1[b]), q, b]
    elif kind == AFFINE_K:
        for q in range(p):
            for b in range(B):
                out[q, b] = A[j, 0, q, b]
    elif kind == DIST_K:
        for q in range(p):
            for b in range(B):
                v = X[xj, q, b] - A[j, 0, q, b]
                T2[q, b] = v
                T[q, b] = v * v
        _psum(T, p, nv, r8)
        for b in range(B):
            nv[b] = np.sqrt(nv[b])
        for q in range(p):
            for b in range(B):
                out[q, b] = T2[q, b] / nv[b] if nv[b] > 0 else 0.0
    elif kind == L2RES_K:
        for k in range(m):
            for b in range(B):
                r = R[j, k, b]
                T2[k, b] = r
                T[k, b] = r * r
        _psum(T, m, nv, r8)
        for b in range(B):
            nv[b] = np.sqrt(nv[b])
        for k in range(m):
            for b in range(B):
                T[k, b] = T2[k, b] / nv[b] if nv[b] > 0 else 0.0
        _ATs(A, j, m, p, T3, 0, om0, om1, l0, l1, np.sqrt(float(m)), out)
    else:  # HUBER_K
        for k in range(m):
            for b in range(B):
                Mc = M[j, b]
                T[k, b] = 2 * _clip(R[j, k, b], -Mc, Mc)
        _ATs(A, j, m, p, T3, 0, om0, om1, l0, l1, float(m), out)


# ------------------------------------------------------------------------------------------------
# compressors: C(X[j]) into CX[j] with the uniforms U[ti, j] (d, B), and E||C(x) - x||^2 into var[j]
def _xdot(X, j, o0, o1, l0, l1, out):
    """``out[b] = einsum("i,i->", X[j, :, b], X[j, :, b])`` in numpy's lane order."""
    B = l0.shape[0]
    for b in range(B):
        l0[b] = 0.0
        l1[b] = 0.0
    for q in range(o0.shape[0]):
        i = o0[q]
        for b in range(B):
            l0[b] = l0[b] + X[j, i, b] * X[j, i, b]
    for q in range(o1.shape[0]):
        i = o1[q]
        for b in range(B):
            l1[b] = l1[b] + X[j, i, b] * X[j, i, b]
    for b in range(B):
        out[b] = (l0[b] + l1[b]) + 0.0


def _compress(ckind, cpar, X, j, U, ti, d, o0, o1, l0, l1, nrm, CX, srt):
    """Returns -1, or an instance whose Rand-K uniforms tie at the K-th smallest (numpy's ``argpartition``
    would pick among equal values: the caller runs numpy).  ``srt``: scratch of at least ``d`` values.

    Rand-K keeps coordinate ``i`` when fewer than ``K`` uniforms lie below ``U_i`` -- that is, when ``U_i <= v_K``,
    the K-th smallest uniform -- and the choice is ambiguous exactly when ``v_{K+1} == v_K``.  The K + 1 smallest
    are found by selection (``K < 8``: K + 1 passes over the d uniforms) or an insertion sort, instead of counting,
    for every coordinate, the uniforms below it (d^2 comparisons): the same coordinates, the same ties."""
    B = l0.shape[0]
    if ckind == BERN_C:
        for i in range(d):
            for b in range(B):
                CX[j, i, b] = X[j, i, b] / cpar if U[ti, j, i, b] < cpar else 0.0
    elif ckind == RANDK_C:
        k = int(cpar)
        if k == d:
            for i in range(d):
                for b in range(B):
                    CX[j, i, b] = X[j, i, b]
            return -1
        scale = d / k
        for b in range(B):
            for q in range(d):
                srt[q] = U[ti, j, q, b]
            if k < 8:                       # selection: srt[0..k] become the k + 1 smallest, in order
                for r in range(k + 1):
                    m = r
                    for q in range(r + 1, d):
                        if srt[q] < srt[m]:
                            m = q
                    v = srt[m]
                    srt[m] = srt[r]
                    srt[r] = v
            else:                           # insertion sort of all d
                for q in range(1, d):
                    v = srt[q]
                    r = q - 1
                    while r >= 0 and srt[r] > v:
                        srt[r + 1] = srt[r]
                        r -= 1
                    srt[r + 1] = v
            vk = srt[k - 1]
            if srt[k] == vk:                # k < d here
                return b
            for i in range(d):
                CX[j, i, b] = X[j, i, b] * scale if U[ti, j, i, b] <= vk else 0.0
    elif ckind == QSGD_C:
        s = cpar
        _xdot(X, j, o0, o1, l0, l1, nrm)
        for b in range(B):
            nrm[b] = np.sqrt(nrm[b])
        for i in range(d):
            for b in range(B):
                x = X[j, i, b]
                norm = nrm[b]
                r = s * abs(x) / norm if norm > 0 else 0.0
                lo = np.floor(r)
                xi = lo + (1.0 if U[ti, j, i, b] < r - lo else 0.0)
                CX[j, i, b] = norm * _sign(x) * xi / s
    return -1


def _variance(ckind, cpar, X, j, d, o0, o1, l0, l1, T, r8, nrm, var):
    B = l0.shape[0]
    if ckind == BERN_C or ckind == RANDK_C:
        q = 1.0 / cpar - 1.0 if ckind == BERN_C else d / int(cpar) - 1.0
        _xdot(X, j, o0, o1, l0, l1, nrm)
        for b in range(B):
            var[j, b] = q * nrm[b]
    elif ckind == QSGD_C:
        s = cpar
        _xdot(X, j, o0, o1, l0, l1, nrm)
        for b in range(B):
            nrm[b] = np.sqrt(nrm[b])
        for i in range(d):
            for b in range(B):
                norm = nrm[b]
                r = s * abs(X[j, i, b]) / norm if norm > 0 else 0.0
                fr = r - np.floor(r)
                T[i, b] = fr * (1 - fr)
        _psum(T, d, l0, r8)
        for b in range(B):
            var[j, b] = (nrm[b] * nrm[b] / (s * s)) * l0[b]
    else:
        for b in range(B):
            var[j, b] = 0.0


def _clients_mean(X, n, d, out, T, r8, col):
    """``X.mean(1)`` of every instance (``X`` (n, d, B)): clients added in turn for d >= 2, pairwise for d == 1."""
    B = col.shape[0]
    if d == 1:
        for j in range(n):
            for b in range(B):
                T[j, b] = X[j, 0, b]
        _psum(T, n, col, r8)
        for b in range(B):
            out[0, b] = col[b] / n
        return
    for i in range(d):
        for b in range(B):
            out[i, b] = X[0, i, b]
    for j in range(1, n):
        for i in range(d):
            for b in range(B):
                out[i, b] += X[j, i, b]
    for i in range(d):
        for b in range(B):
            out[i, b] /= n


def _sqsum(Y, d, T, r8, out):
    """``out[b] = (Y[:, b] ** 2).sum()`` (numpy's pairwise order)."""
    B = out.shape[0]
    for i in range(d):
        for b in range(B):
            T[i, b] = Y[i, b] * Y[i, b]
    _psum(T, d, out, r8)


# ------------------------------------------------------------------------------------------------
def _run(fk, fA, fb, fM, gk, gA, gb, gM, w, eta, eps, beta, soft, conv_le, E, t0, t1, T, has_u, u, fu, gu,
         ckind, cpar, U, od0, od1, omf0, omf1, omg0, omg1, rec, S_w, S_weight, A_size, sig_A):
    """Rounds ``t0 <= t < t1`` of every instance (``t == T`` records the last point only), the instance axis
    last: ``fA`` (n, m, d, B), ``fb`` (n, m, B), ``fM`` (n, B), ``w``, ``u``, ``S_w`` (d, B); state ``w``,
    ``S_w``, ``S_weight``, ``A_size``, ``sig_A`` in place; ``rec`` (13, T + 1, B).  Returns -1, or an instance
    whose Rand-K uniforms tie (the caller then runs numpy)."""
    n, mf, d, B = fA.shape
    mg = gA.shape[1]
    L = max(mf, mg, d, n) + 1
    Tm3 = np.empty((1, L, B))
    Tm = Tm3[0]
    Tm2 = np.empty((L, B))
    srt = np.empty(d)
    r8 = np.empty((8, B))
    l0 = np.empty(B)
    l1 = np.empty(B)
    nv = np.empty(B)
    Rf = np.empty((n, mf, B))
    Rg = np.empty((n, mg, B))
    vals = np.empty((n, B))
    w3 = w.reshape((1, d, B))
    W = np.empty((n, d, B))
    X = np.empty((n, d, B))
    CX = np.empty((n, d, B))
    Vf = np.empty((d, B))
    Vg = np.empty((d, B))
    Y = np.empty((d, B))
    Xbar = np.empty((d, B))
    agg = np.empty((d, B))
    drift = np.empty((n, E, B))
    dsq = np.empty((n, B))
    var_j = np.empty((n, B))
    fw = np.empty(B)
    gw = np.empty(B)
    sig = np.empty(B)
    om = np.empty(B)
    acc = np.empty(B)
    acc2 = np.empty(B)
    max_dir = np.empty(B)
    var = np.empty(B)
    fdots, gdots = _uses_dots(fk), _uses_dots(gk)
    nn = float(n * n)
    for t in range(t0, t1):
        # f and g at w_t; the rows' dot products stay in Rf, Rg for the first local step (W = w_t there)
        for j in range(n):
            if fdots:
                _rows_dot(fA, j, mf, w3, 0, od0, od1, l0, l1, fb, False, Rf, j)
            _value(fk, fA, fb, fM, j, mf, d, w3, 0, Rf, Tm, r8, acc)
            for b in range(B):
                vals[j, b] = acc[b]
        _psum(vals, n, fw, r8)
        for j in range(n):
            if gdots:
                _rows_dot(gA, j, mg, w3, 0, od0, od1, l0, l1, gb, False, Rg, j)
            _value(gk, gA, gb, gM, j, mg, d, w3, 0, Rg, Tm, r8, acc)
            for b in range(B):
                vals[j, b] = acc[b]
        _psum(vals, n, gw, r8)
        for b in range(B):
            fw[b] = fw[b] / n
            gw[b] = gw[b] / n
            z = gw[b] - eps[b]
            if soft:
                y = 1.0 + beta[b] * z
                if y == y:
                    y = y if y >= 0.0 else 0.0
                    y = 1.0 if 1.0 <= y else y
                sig[b] = y
            else:
                sig[b] = 1.0 if z > 0 else 0.0
            rec[0, t, b] = fw[b]
            rec[1, t, b] = gw[b]
            rec[2, t, b] = sig[b]
        if has_u:
            for i in range(d):
                for b in range(B):
                    Y[i, b] = w[i, b] - u[i, b]
            _sqsum(Y, d, Tm, r8, acc)
            for b in range(B):
                rec[5, t, b] = acc[b]
                rec[7, t, b] = (1 - sig[b]) * (fw[b] - fu[b]) + sig[b] * (gw[b] - gu[b])
        if t == T:
            break
        for b in range(B):
            inA = gw[b] <= eps[b] if conv_le else gw[b] < eps[b]
            wt = (1.0 - sig[b] if soft else 1.0) if inA else 0.0
            rec[3, t, b] = 1.0 if inA else 0.0
            rec[4, t, b] = wt
            for i in range(d):
                S_w[i, b] = S_w[i, b] + wt * w[i, b]
            S_weight[b] = S_weight[b] + wt
            A_size[b] = A_size[b] + (1.0 if inA else 0.0)
            sig_A[b] = sig_A[b] + (sig[b] if inA else 0.0)
            om[b] = 1 - sig[b]
            max_dir[b] = 0.0
        # local steps
        for j in range(n):
            for i in range(d):
                for b in range(B):
                    W[j, i, b] = w[i, b]
                    X[j, i, b] = 0.0
            for b in range(B):
                dsq[j, b] = 0.0
        for tau in range(E):
            for j in range(n):
                if tau > 0:
                    if fdots:
                        _rows_dot(fA, j, mf, W, j, od0, od1, l0, l1, fb, fk == LAD_K, Rf, j)
                    if gdots:
                        _rows_dot(gA, j, mg, W, j, od0, od1, l0, l1, gb, gk == LAD_K, Rg, j)
                _subgrad(fk, fA, fb, fM, j, mf, d, W, j, Rf, tau > 0, Tm3, Tm2, r8, omf0, omf1, l0, l1, nv, Vf)
                _subgrad(gk, gA, gb, gM, j, mg, d, W, j, Rg, tau > 0, Tm3, Tm2, r8, omg0, omg1, l0, l1, nv, Vg)
                if d < 8:   # numpy's sums of d < 8 squares are sequential: accumulated in the same passes
                    for b in range(B):
                        acc[b] = -0.0
                        acc2[b] = -0.0
                    for i in range(d):
                        for b in range(B):
                            v = om[b] * Vf[i, b] + sig[b] * Vg[i, b]
                            acc[b] += v * v
                            X[j, i, b] = X[j, i, b] + v
                            wn = W[j, i, b] - eta[b] * v
                            W[j, i, b] = wn
                            y = wn - w[i, b]
                            acc2[b] += y * y
                    for b in range(B):
                        acc[b] = 0.0 + acc[b]
                        acc2[b] = 0.0 + acc2[b]
                else:
                    for i in range(d):
                        for b in range(B):
                            Vf[i, b] = om[b] * Vf[i, b] + sig[b] * Vg[i, b]
                            X[j, i, b] = X[j, i, b] + Vf[i, b]
                            W[j, i, b] = W[j, i, b] - eta[b] * Vf[i, b]
                            Y[i, b] = W[j, i, b] - w[i, b]
                    _sqsum(Vf, d, Tm, r8, acc)
                    _sqsum(Y, d, Tm, r8, acc2)
                for b in range(B):
                    max_dir[b] = _nanmax(max_dir[b], np.sqrt(acc[b]))
                    dist = np.sqrt(acc2[b])
                    drift[j, tau, b] = dist
                    if tau + 1 < E:
                        dsq[j, b] = dsq[j, b] + dist * dist
        for b in range(B):
            et = eta[b]
            ds = drift[0, 0, b] / (1.0 * et)
            mq = dsq[0, b]
            for j in range(n):
                for tau in range(E):
                    ds = _nanmax(ds, drift[j, tau, b] / ((tau + 1.0) * et))
                mq = _nanmax(mq, dsq[j, b])
            rec[8, t, b] = ds
            rec[9, t, b] = mq
            rec[12, t, b] = max_dir[b]
        # uplink
        for j in range(n):
            if ckind != ID_C:
                bad = _compress(ckind, cpar, X, j, U, t - t0, d, od0, od1, l0, l1, nv, CX, srt)
                if bad >= 0:
                    return bad
            _variance(ckind, cpar, X, j, d, od0, od1, l0, l1, Tm, r8, nv, var_j)
        _clients_mean(X, n, d, Xbar, Tm, r8, acc)
        if ckind != ID_C:
            _clients_mean(CX, n, d, agg, Tm, r8, acc)
        else:
            for i in range(d):
                for b in range(B):
                    agg[i, b] = Xbar[i, b]
        _psum(var_j, n, var, r8)
        for b in range(B):
            var[b] = var[b] / nn
        _sqsum(agg, d, Tm, r8, acc)
        _sqsum(Xbar, d, Tm, r8, acc2)
        for b in range(B):
            rec[10, t, b] = acc[b]
            rec[11, t, b] = acc2[b] + var[b]
        if has_u:
            for i in range(d):
                for b in range(B):
                    Y[i, b] = (w[i, b] - eta[b] * Xbar[i, b]) - u[i, b]
            _sqsum(Y, d, Tm, r8, acc)
            for b in range(B):
                rec[6, t, b] = acc[b] + eta[b] * eta[b] * var[b]
        for i in range(d):
            for b in range(B):
                w[i, b] = w[i, b] - eta[b] * agg[i, b]
    return -1


_run_compiled = None
if AVAILABLE:
    try:
        _jit = numba.njit(cache=True, fastmath=False, nogil=True, error_model="numpy")
        _small = numba.njit(cache=True, fastmath=False, nogil=True, error_model="numpy", _nrt=False, inline="always")
        _sign, _nanmax, _clip, _uses_dots = (_small(f) for f in (_sign, _nanmax, _clip, _uses_dots))
        from numba.core.compiler import Compiler

        class _NoAlias(Compiler):
            """numba's pipeline with the array arguments marked ``noalias``: LLVM then vectorizes a helper's loops
            without the runtime overlap checks it otherwise emits before every pass (two dozen compares and
            branches for a pass of a few vector iterations).  Sound because no call passes two arrays that share
            memory (``_subgrad`` takes its scratch once, as ``T3``, and views ``T3[0]`` inside)."""

            def define_pipelines(self):
                self.state.flags.noalias = True
                return super().define_pipelines()

        # the helpers allocate nothing: compiled without reference counting, a call costs no atomic operation on
        # its array arguments (with it, a call from the kernel costs several times the arithmetic it does)
        _disjoint = numba.njit(cache=True, fastmath=False, nogil=True, error_model="numpy", _nrt=False,
                               pipeline_class=_NoAlias)
        _psum = _disjoint(getattr(_psum, "py_func", _psum))   # compiled.lane_pairwise_sum, noalias here
        _rows_dot, _ATs, _xdot, _sqsum = (_disjoint(f) for f in (_rows_dot, _ATs, _xdot, _sqsum))
        _value, _subgrad, _compress, _variance, _clients_mean = (
            _disjoint(f) for f in (_value, _subgrad, _compress, _variance, _clients_mean))
        _run_compiled = _jit(_run)
    except Exception:  # pragma: no cover
        _run_compiled = None


# ------------------------------------------------------------------------------------------------
def _component(loss, B, n, d):
    """``(kind, A (n, m, d, B), b (n, m, B), M (n, B))``, the instance axis last, of a covered client function,
    else the reason the kernel declines (str)."""
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
    last = lambda a: np.ascontiguousarray(np.moveaxis(np.asarray(a, dtype=np.float64), 0, -1))
    if t is LAD or t is L2Residual or t is Huber:
        b = np.negative(b)         # the residual A x - b is computed as A x + (-b): the same bits
    return kind, last(A), last(b), last(M)


@functools.lru_cache(maxsize=1)
def numpy_orders_hold() -> bool:
    """Whether this numpy sums as the kernel assumes (einsum's 2 lanes, the rows of ``A^T s`` in turn, pairwise
    reductions), probed bit for bit on random data for every length up to 40 (the orders repeat beyond)."""
    rng = np.random.default_rng(20261125)
    with np.errstate(all="ignore"):
        for p in range(1, 41):
            A, x, s = rng.standard_normal((3, 7, p)), rng.standard_normal((3, p)), rng.standard_normal((3, 7))
            o0, o1 = _lane_orders(p)
            l0, l1 = np.zeros((3, 7)), np.zeros((3, 7))
            for i in o0:
                l0 = l0 + A[..., i] * x[:, None, i]
            for i in o1:
                l1 = l1 + A[..., i] * x[:, None, i]
            if not np.array_equal(np.einsum("...mp,...p->...m", A, x), (l0 + l1) + 0.0):
                return False
            At = rng.standard_normal((3, p, 2))   # A^T s with p rows of 2 columns: rows in turn
            acc = np.zeros((3, 2))
            for k in range(p):
                acc = acc + At[:, k, :] * x[:, k, None]
            if not np.array_equal(np.einsum("...mp,...m->...p", At, x), acc):
                return False
            if p <= 40:                           # pairwise sums of p terms
                v = rng.standard_normal((3, p))
                r8 = np.empty(3)
                _psum(np.ascontiguousarray(v.T), p, r8, np.empty((8, 3)))
                if not np.array_equal(v.sum(-1), r8):
                    return False
    return True


def eligible(batch, compressor, rule, local_steps) -> tuple | str:
    """The kernel's arguments of ``batch`` and ``compressor``, or the reason the compiled path declines."""
    from fedcheck.problems.compression import Bernoulli, Identity, RandK, RandomQuantization
    if _run_compiled is None:
        return "compiled code is off (FEDCHECK_JIT=0 or no numba)"
    if not numpy_orders_hold():
        return "this numpy's summation orders are not the kernel's (probe failed)"
    if rule not in ("hard", "soft"):
        return f"rule {rule!r}"
    if int(local_steps) < 1:
        return "no local step"
    B, n, d = batch.B, batch.n, batch.d
    fc, gc = _component(batch.f, B, n, d), _component(batch.g, B, n, d)
    for c in (fc, gc):
        if isinstance(c, str):
            return c
    if max(n, d, fc[1].shape[1], gc[1].shape[1]) > MAX_AXIS:
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
    (fk, fA, fb, fM), (gk, gA, gb, gM), ck, cp = args
    B, d = w.shape
    mf, mg = fA.shape[1], gA.shape[1]
    last = lambda a: np.ascontiguousarray(np.asarray(a, dtype=np.float64).T)
    wT = last(w)
    c64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)
    eta, eps = c64(eta), c64(eps)
    beta = c64(beta) if beta is not None else np.zeros(B)
    soft = rule == "soft"
    conv_le = (a_set or ("le" if rule == "hard" else "lt")) == "le"
    has_u = u is not None
    uT = last(u) if has_u else np.zeros((d, B))
    fuu = c64(fu) if has_u else np.zeros(B)
    guu = c64(gu) if has_u else np.zeros(B)
    od, omf, omg = _lane_orders(d), _lane_orders(mf), _lane_orders(mg)
    rec = np.full((len(KEYS), T + 1, B), np.nan)
    S_w, S_weight, A_size, sig_A = np.zeros((d, B)), np.zeros(B), np.zeros(B), np.zeros(B)
    if ck == ID_C:
        blocks = [(0, T + 1)]
    else:
        blocks = [(t0, min(t0 + ROUND_BLOCK, T + 1)) for t0 in range(0, T + 1, ROUND_BLOCK)]
    U0 = np.zeros((1, 1, 1, 1))
    for t0, t1 in blocks:
        U = U0
        k = min(t1, T) - t0
        if ck != ID_C and k > 0:      # the block's uniforms (k, B, n, d), instance axis last
            U = np.ascontiguousarray(np.moveaxis(np.stack([stream.next() for _ in range(k)]), 1, -1))
        bad = _run_compiled(fk, fA, fb, fM, gk, gA, gb, gM, wT, eta, eps, beta, soft, conv_le, int(E), t0, t1, int(T),
                            has_u, uT, fuu, guu, ck, cp, U, od[0], od[1], omf[0], omf[1], omg[0], omg[1], rec, S_w,
                            S_weight, A_size, sig_A)
        if bad >= 0:
            return None
    return ({k: rec[i] for i, k in enumerate(KEYS)}, np.ascontiguousarray(S_w.T), S_weight, A_size, sig_A,
            np.ascontiguousarray(wT.T))
