"""Compiled FedMLS pieces: least absolute deviations (the library's :class:`~fedcheck.problems.losses.LAD`) and
the round.

* :func:`lad_prox_steps` -- :func:`fedcheck.algorithms.mls.approx_prox` with the LAD subgradient fused in:
  one compiled call runs every step of every client row (instance by instance, step by step, the client rows
  the innermost, vectorized loop), instead of a numpy oracle call (two stacked ``matmul``, ``sign``) and two
  kernels per step;
* :func:`lad_full_value` -- ``F(x) = (1/n) sum_i f_i(x)`` of LAD in one pass (the default recorder's ``F``);
* :func:`round_kernels` -- the rest of a FedMLS round (line 6 and lines 14-19 of Algorithm 1), any loss.

**The same bits as numpy.**  FedMLS's iterates depend on ``sign(A_i u - b_i)``: one ulp in a product can send
a later iterate elsewhere.  So the kernels do numpy's operations in numpy's order: ``np.matmul`` of an ``(m,
p)`` matrix by a vector is BLAS ``gemv`` (OpenBLAS's ``dgemv_t`` tail for ``p = 2, 3``: ``0 + fma(a2, x2,
fma(a0, x0, a1 x1))``; ``ddot`` when ``m = 1``, with or without FMA), the subgradient ``(sign / m)^T A`` is
``dgemv_n`` (blocks of 4 rows, ``t + fma(a_j s_j, a_(j+1) s_(j+1))``; or every product rounded, ``t + (a_j s_j +
a_(j+1) s_(j+1))``, as measured with OpenBLAS 0.3.31's Haswell kernels on an AMD EPYC), the step's norm is
``einsum``'s SIMD order (``(u0^2 + u2^2) + u1^2``), ``F``'s means are numpy's pairwise sums, the round's client
mean is summed row by row.  Those orders belong to the BLAS build and the CPU: they are not assumed.  Before a
shape is used, a probe runs the compiled kernels and numpy's reference (``FEDCHECK_JIT=0``'s code:
``LAD.residual`` and ``LAD.grad``, ``approx_prox``'s numpy loop, ``Loss.full_value``, the round's numpy
functions) on random data of that shape, and the compiled path is taken only if every number agrees bit for bit
(the orders above that do); otherwise (another BLAS, another order, ``p`` not 2 or 3, LAD's ``einsum`` kernel
option, a subclass, any other loss or oracle) the callers run numpy as before.
"""
from __future__ import annotations

import numpy as np

from fedcheck.algorithms.jit import AVAILABLE as _JIT, numba as _numba

__all__ = ["lad_prox_steps", "lad_full_value", "lad_of", "dcs_inner", "pairwise_sum"]

_PROBE_SEED = 2028


# ------------------------------------------------------------------------------------------------ kernels
def _fma_stub(a, b, c):      # pragma: no cover - replaced by the LLVM intrinsic when numba is on
    return a * b + c


if _JIT:
    from numba import types as _types
    from numba.extending import intrinsic as _intrinsic

    @_intrinsic
    def _fma(typingctx, a, b, c):
        """``llvm.fma.f64``: ``a b + c`` rounded once (what GCC's contraction makes of BLAS's C kernels)."""
        sig = _types.float64(_types.float64, _types.float64, _types.float64)

        def codegen(context, builder, signature, args):
            return builder.fma(*args)
        return sig, codegen
else:
    _fma = _fma_stub


# The kernels read the data transposed, ``AT[b, k, j, i] = A[b, i, j, k]`` and ``bT[b, j, i] = b[b, i, j]``: the
# client rows ``i`` are the innermost, unit-stride loop of every stretch (residuals, subgradient, step), which
# LLVM vectorizes (each row's arithmetic is unchanged, only several rows are done at once): 4.1 -> 0.32 ms per
# 8-step call of 64 x 32 x 12 x 3 against the rows-outer scalar loop (load 5).
def _resid(AT, bT, bi, j, i, x0, x1, x2, p, rorder):
    """``(A_i x)_j - b_ij`` in BLAS's order: ``dgemv_t``'s (``rorder`` 0: ``y = 0; y += fma(a2, x2, fma(a0, x0,
    a1 x1))``) or, when ``m = 1`` makes numpy's ``matmul`` a dot product, ``ddot``'s (1: ``fma(a2, x2, fma(a1,
    x1, a0 x0))``; 2: the same without contraction, ``((0 + a0 x0) + a1 x1) + a2 x2``)."""
    if rorder == 0:
        if p == 3:
            y = 0.0 + _fma(AT[bi, 2, j, i], x2, _fma(AT[bi, 0, j, i], x0, AT[bi, 1, j, i] * x1))
        else:
            y = 0.0 + _fma(AT[bi, 0, j, i], x0, AT[bi, 1, j, i] * x1)
    elif rorder == 1:
        if p == 3:
            y = 0.0 + _fma(AT[bi, 2, j, i], x2, _fma(AT[bi, 1, j, i], x1, AT[bi, 0, j, i] * x0))
        else:
            y = 0.0 + _fma(AT[bi, 1, j, i], x1, AT[bi, 0, j, i] * x0)
    elif p == 3:
        y = ((0.0 + AT[bi, 0, j, i] * x0) + AT[bi, 1, j, i] * x1) + AT[bi, 2, j, i] * x2
    else:
        y = (0.0 + AT[bi, 0, j, i] * x0) + AT[bi, 1, j, i] * x1
    return y - bT[bi, j, i]


def _sign_over(r, inv):
    """``np.sign(r) / m`` with ``inv = 1 / m`` (``(+-1) / m`` is ``+-(1 / m)`` exactly), branch-free (the signs
    of residuals are coin flips to a branch predictor); NaN stays NaN."""
    s = inv * float((r > 0.0) - (r < 0.0))
    return r if r != r else s


def _signs(AT, bT, bi, u, inv, p, rorder, S):
    """``S[j, i] = sign((A_i u_i - b_i)_j) / m`` for every row ``i`` (``u`` is ``(p, n)``); one loop over the rows
    per order, the order a constant in it (a branch inside the loop keeps LLVM from vectorizing it)."""
    m, n = S.shape
    for j in range(m):
        if rorder == 0:
            for i in range(n):
                S[j, i] = _sign_over(_resid(AT, bT, bi, j, i, u[0, i], u[1, i], u[2 % p, i], p, 0), inv)
        elif rorder == 1:
            for i in range(n):
                S[j, i] = _sign_over(_resid(AT, bT, bi, j, i, u[0, i], u[1, i], u[2 % p, i], p, 1), inv)
        else:
            for i in range(n):
                S[j, i] = _sign_over(_resid(AT, bT, bi, j, i, u[0, i], u[1, i], u[2 % p, i], p, 2), inv)


def _subgrads(AT, bi, S, g, gorder):
    """``g[k, i] = (S[:, i]^T A_i)_k`` in ``dgemv_n``'s order: 4 rows a block (``t + (a_j s_j + a_(j+1)
    s_(j+1))`` twice), then one at a time (``t + a_j s_j``); without the final ``0 +`` (the caller adds it).
    ``gorder`` 0: with FMA (``t + fma(a_j s_j, a_(j+1) s_(j+1))``, then ``fma(a_j, s_j, t)``: OpenBLAS's SkylakeX
    kernels on an Intel CPU); 1: every product rounded (its Haswell kernels on an AMD EPYC)."""
    m, n = S.shape
    p = g.shape[0]
    for k in range(p):
        for i in range(n):
            g[k, i] = 0.0
        j = 0
        while j + 4 <= m:
            for q in range(j, j + 4, 2):
                if gorder == 0:
                    for i in range(n):
                        g[k, i] = g[k, i] + _fma(AT[bi, k, q, i], S[q, i], AT[bi, k, q + 1, i] * S[q + 1, i])
                else:
                    for i in range(n):
                        g[k, i] = g[k, i] + (AT[bi, k, q, i] * S[q, i] + AT[bi, k, q + 1, i] * S[q + 1, i])
            j += 4
        while j < m:
            if gorder == 0:
                for i in range(n):
                    g[k, i] = _fma(AT[bi, k, j, i], S[j, i], g[k, i])
            else:
                for i in range(n):
                    g[k, i] = g[k, i] + AT[bi, k, j, i] * S[j, i]
            j += 1


def _sq_norm(h0, h1, h2, p, order):
    """``einsum("bnp,bnp->bn")`` of one row: ``order`` 1 is its SIMD order for 3 terms, 0 the index order."""
    if p == 2:
        return h0 * h0 + h1 * h1
    if order == 1:
        return (h0 * h0 + h2 * h2) + h1 * h1
    return (h0 * h0 + h1 * h1) + h2 * h2


def _step3(u, v, w, g, om, a, f, r, c, act, order):
    """One step of every row, ``p = 3`` (branch-free loops over the rows: LLVM vectorizes them, square root and
    division included): ``h = ((1 - a) u + a v) - (0 + g) f``; ``h *= r / max(||h||, r)``; ``u = h`` if
    ``act``; ``w += c (u - w)``."""
    n = u.shape[1]
    if act:
        for i in range(n):
            h0 = (om * u[0, i] + a * v[0, i]) - (0.0 + g[0, i]) * f
            h1 = (om * u[1, i] + a * v[1, i]) - (0.0 + g[1, i]) * f
            h2 = (om * u[2, i] + a * v[2, i]) - (0.0 + g[2, i]) * f
            nrm = np.sqrt((h0 * h0 + h2 * h2) + h1 * h1 if order == 1 else (h0 * h0 + h1 * h1) + h2 * h2)
            gg = r / (r if nrm <= r else nrm)
            u[0, i] = h0 * gg
            u[1, i] = h1 * gg
            u[2, i] = h2 * gg
    for k in range(3):
        for i in range(n):
            w[k, i] = w[k, i] + c * (u[k, i] - w[k, i])


def _step2(u, v, w, g, om, a, f, r, c, act):
    """:func:`_step3` for ``p = 2``."""
    n = u.shape[1]
    if act:
        for i in range(n):
            h0 = (om * u[0, i] + a * v[0, i]) - (0.0 + g[0, i]) * f
            h1 = (om * u[1, i] + a * v[1, i]) - (0.0 + g[1, i]) * f
            nrm = np.sqrt(h0 * h0 + h1 * h1)
            gg = r / (r if nrm <= r else nrm)
            u[0, i] = h0 * gg
            u[1, i] = h1 * gg
    for k in range(2):
        for i in range(n):
            w[k, i] = w[k, i] + c * (u[k, i] - w[k, i])


def _lad_prox_loop(AT, bT, U, Ut, V, scale, T, R, Tmax, order, rorder, gorder, u, w, v, g, S):
    """Every step of :func:`fedcheck.algorithms.mls.approx_prox` with ``oracle = LAD.grad``, in place on
    ``U, Ut``.  Per step ``t`` and row: ``G = (sign(A u - b) / m)^T A``; ``Uh = ((1 - a) u + a v) - G (a sc)``;
    ``Uh *= R / max(||Uh||, R)``; active rows ``u = Uh``; ``ut += (th [t <= T]) (u - ut)``.  Instance by
    instance (its ``A_b`` stays in L1), step by step, the client rows innermost.  ``u, w, v, g`` are ``(p, n)``
    scratch, ``S`` ``(m, n)``."""
    B, p, m, n = AT.shape
    inv = 1.0 / float(m)
    for bi in range(B):
        for k in range(p):
            for i in range(n):
                u[k, i] = U[bi, i, k]
                w[k, i] = Ut[bi, i, k]
                v[k, i] = V[bi, i, k]
        r = R[bi]
        for t in range(1, Tmax + 1):
            tf = float(t)
            a = 2.0 / (tf + 2.0)
            om = 1.0 - a
            f = a * scale[bi]
            act = t <= T[bi]
            c = 2.0 * (tf + 1.0) / (tf * (tf + 3.0)) if act else 0.0
            if act:              # a frozen row's subgradient is not used
                _signs(AT, bT, bi, u, inv, p, rorder, S)
                _subgrads(AT, bi, S, g, gorder)
            if p == 3:
                _step3(u, v, w, g, om, a, f, r, c, act, order)
            else:
                _step2(u, v, w, g, om, a, f, r, c, act)
        for k in range(p):
            for i in range(n):
                U[bi, i, k] = u[k, i]
                Ut[bi, i, k] = w[k, i]


def _dcs_loop(AT, bT, U, ex, w, e, R, Tk, Tmax, order, rorder, gorder, Uh, lam_sum, u, g, S):
    """Every inner step of :func:`fedcheck.algorithms.sliding.dcs`'s communication sliding with ``oracle = LAD.grad``,
    in place on ``U``, ``Uh``, ``lam_sum`` (``(B, n, p)``, ``(B, n, p)``, ``(B,)``).  Per step ``t`` and row, as
    :func:`fedcheck.algorithms.sliding._numpy_inner`: ``beta = (t + 1) / 2``; ``H = (0 + (sign(A u - b) / m)^T A) / n``;
    ``z = (((ex + (e beta) u) - w) - H) / (e (1 + beta))``; ``z *= R / max(||z||, R)``; rows of an active
    instance (``t <= Tk``) take ``u = z``; ``Uh += lam u`` and ``lam_sum += lam`` with ``lam = (t + 1) [t <= Tk]``.
    Instance by instance, step by step, the client rows innermost.  ``u, g`` ``(p, n)`` scratch, ``S`` ``(m, n)``."""
    B, p, m, n = AT.shape
    inv = 1.0 / float(m)
    nf = float(n)
    for bi in range(B):
        for k in range(p):
            for i in range(n):
                u[k, i] = U[bi, i, k]
        r = R[bi]
        for t in range(1, Tmax + 1):
            beta = (t + 1.0) / 2.0
            eb = e[bi] * beta
            den = e[bi] * (1.0 + beta)
            act = t <= Tk[bi]
            lam = (t + 1.0) * (1.0 if act else 0.0)
            if act:              # a frozen instance's step is not used (numpy computes and discards it)
                _signs(AT, bT, bi, u, inv, p, rorder, S)
                _subgrads(AT, bi, S, g, gorder)
            for i in range(n):
                if act:
                    z0 = (((ex[bi, i, 0] + eb * u[0, i]) - w[bi, i, 0]) - (0.0 + g[0, i]) / nf) / den
                    z1 = (((ex[bi, i, 1] + eb * u[1, i]) - w[bi, i, 1]) - (0.0 + g[1, i]) / nf) / den
                    z2 = (((ex[bi, i, 2] + eb * u[2, i]) - w[bi, i, 2]) - (0.0 + g[2, i]) / nf) / den if p == 3 else 0.0
                    nrm = np.sqrt(_sq_norm(z0, z1, z2, p, order))
                    gg = r / (r if nrm <= r else nrm)
                    u[0, i] = z0 * gg
                    u[1, i] = z1 * gg
                    if p == 3:
                        u[2, i] = z2 * gg
                for k in range(p):
                    Uh[bi, i, k] = Uh[bi, i, k] + lam * u[k, i]
            lam_sum[bi] = lam_sum[bi] + lam
        for k in range(p):
            for i in range(n):
                U[bi, i, k] = u[k, i]


def _pairwise_block(v, lo, n):
    """numpy's pairwise sum of ``v[lo:lo+n]`` for ``n <= 128`` (8 accumulators from 8 elements on)."""
    if n < 8:
        s = 0.0
        for k in range(lo, lo + n):
            s += v[k]
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


def pairwise_sum(v, lo, n):
    """``np.add.reduce(v[lo:lo+n])`` in numpy's pairwise order: above 128 elements the halves (the first a
    multiple of 8) are summed apart and added.  Without recursion (an explicit stack: a recursive kernel does
    not survive numba's on-disk cache)."""
    if n <= 128:
        return _pairwise_block(v, lo, n)
    los = np.empty(128, np.int64)
    ns = np.empty(128, np.int64)
    vals = np.empty(128)
    nv = 0
    los[0], ns[0] = lo, n
    top = 1
    while top > 0:
        top -= 1
        a, k = los[top], ns[top]
        if k < 0:                      # combine the two last values: left + right
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
        elif k <= 128:
            vals[nv] = _pairwise_block(v, a, k)
            nv += 1
        else:
            h = k // 2
            h -= h % 8
            los[top], ns[top] = 0, -1          # combine after both halves
            los[top + 1], ns[top + 1] = a + h, k - h
            los[top + 2], ns[top + 2] = a, h   # the left half first
            top += 3
    return vals[0]


def _reduce(v, n, first):
    """numpy's ``add.reduce`` of ``v[:n]``: the first element then the pairwise sum of the rest (``first``),
    or ``0 +`` the pairwise sum of all."""
    if first:
        return v[0] + pairwise_sum(v, 1, n - 1)
    return 0.0 + pairwise_sum(v, 0, n)


def _column_means(ra, m, n, first, acc, fi):
    """``fi[i] = np.add.reduce(ra[:m, i]) / m`` for every column ``i``, the columns side by side (vectorized),
    each summed in numpy's pairwise order (:func:`_reduce`); ``acc`` is ``(8, n)`` scratch.  Above 128 terms
    each column is summed on its own (:func:`pairwise_sum`)."""
    lo = 1 if first else 0
    k = m - lo
    if k > 128:
        col = np.empty(m)
        for i in range(n):
            for j in range(m):
                col[j] = ra[j, i]
            fi[i] = _reduce(col, m, first) / m
        return
    if k < 8:
        for i in range(n):
            fi[i] = 0.0
        for j in range(lo, m):
            for i in range(n):
                fi[i] += ra[j, i]
    else:
        for q in range(8):
            for i in range(n):
                acc[q, i] = ra[lo + q, i]
        j = 8
        while j + 8 <= k:
            for q in range(8):
                for i in range(n):
                    acc[q, i] += ra[lo + j + q, i]
            j += 8
        for i in range(n):
            fi[i] = ((acc[0, i] + acc[1, i]) + (acc[2, i] + acc[3, i])) + ((acc[4, i] + acc[5, i]) + (acc[6, i] + acc[7, i]))
        while j < k:
            for i in range(n):
                fi[i] += ra[lo + j, i]
            j += 1
    for i in range(n):
        fi[i] = ((ra[0, i] + fi[i]) if first else (0.0 + fi[i])) / m


def _lad_F_loop(AT, bT, x, first, rorder, out, ra, acc, fi):
    """``out[b] = mean_i mean_j |(A_i x_b)_j - b_ij|`` (scratch: ``ra`` ``(m, n)``, ``acc`` ``(8, n)``, ``fi``
    ``(n,)``): the residuals of all rows at once, the rows' means side by side, in numpy's pairwise order."""
    B, p, m, n = AT.shape
    for bi in range(B):
        x0 = x[bi, 0]
        x1 = x[bi, 1]
        x2 = x[bi, 2 % p]
        for j in range(m):
            for i in range(n):
                ra[j, i] = abs(_resid(AT, bT, bi, j, i, x0, x1, x2, p, rorder))
        _column_means(ra, m, n, first, acc, fi)
        out[bi] = _reduce(fi, n, first) / n
    return out


def _lad_grad_loop(AT, bT, X, rorder, gorder, out, sq, u, g, S):
    """The probe's view of the pieces: ``out`` the subgradient ``(sign(A x - b) / m)^T A`` of every row of ``X``
    (``X``'s rows are ``u``'s columns), ``sq`` their squared norms in the norm orders 0 and 1."""
    B, p, m, n = AT.shape
    inv = 1.0 / float(m)
    for bi in range(B):
        for k in range(p):
            for i in range(n):
                u[k, i] = X[bi, i, k]
        _signs(AT, bT, bi, u, inv, p, rorder, S)
        _subgrads(AT, bi, S, g, gorder)
        for i in range(n):
            for k in range(p):
                out[bi, i, k] = 0.0 + g[k, i]
            sq[bi, i, 0] = _sq_norm(u[0, i], u[1, i], u[2 % p, i], p, 0)
            sq[bi, i, 1] = _sq_norm(u[0, i], u[1, i], u[2 % p, i], p, 1)
    return out


def _lad_resid_loop(AT, bT, X, rorder, out):
    B, p, m, n = AT.shape
    for bi in range(B):
        for i in range(n):
            for j in range(m):
                out[bi, i, j] = _resid(AT, bT, bi, j, i, X[bi, i, 0], X[bi, i, 1], X[bi, i, 2 % p], p, rorder)
    return out


def _shift_loop(zi, yi, y, c, V):
    """``V = zi - c (yi - y)`` (FedMLS line 6)."""
    B, n, p = zi.shape
    for b in range(B):
        for i in range(n):
            for k in range(p):
                V[b, i, k] = zi[b, i, k] - c * (yi[b, i, k] - y[b, k])
    return V


def _tail_loop(x, y, z, xi, zi, zti, g, g1, c1, xo, yo, zo, xio, yio, acc):
    """FedMLS's round after the local steps (lines 14-19), into new arrays ``xo, yo, zo, xio, yio``::

        xi = (1-g) xi + g zti ;  yi = (1-g1) xi + g1 zi ;  x = (1-g) x + g z ;  y = (1-g1) x + g1 z
        z = z - c1 (y - mean_i yi)

    the client mean summed row by row from the first row, then divided by ``n`` (numpy's ``mean(1)`` of a
    ``(B, n, p)`` array); ``acc`` is ``(p,)`` scratch."""
    B, n, p = xi.shape
    for b in range(B):
        for i in range(n):
            for k in range(p):
                v = (1.0 - g) * xi[b, i, k] + g * zti[b, i, k]
                xio[b, i, k] = v
                yio[b, i, k] = (1.0 - g1) * v + g1 * zi[b, i, k]
        for k in range(p):
            acc[k] = yio[b, 0, k]
        for i in range(1, n):
            for k in range(p):
                acc[k] = acc[k] + yio[b, i, k]
        for k in range(p):
            xv = (1.0 - g) * x[b, k] + g * z[b, k]
            yv = (1.0 - g1) * xv + g1 * z[b, k]
            xo[b, k] = xv
            yo[b, k] = yv
            zo[b, k] = z[b, k] - c1 * (yv - acc[k] / n)


if _JIT:
    _opts = dict(cache=True, fastmath=False, nogil=True)
    _inline = dict(inline="always", **_opts)
    _resid = _numba.njit(**_inline)(_resid)
    _sign_over = _numba.njit(**_inline)(_sign_over)
    _signs = _numba.njit(**_inline)(_signs)
    _subgrads = _numba.njit(**_inline)(_subgrads)
    _sq_norm = _numba.njit(**_inline)(_sq_norm)
    _step3 = _numba.njit(**_inline)(_step3)
    _step2 = _numba.njit(**_inline)(_step2)
    _pairwise_block = _numba.njit(**_inline)(_pairwise_block)
    pairwise_sum = _numba.njit(**_opts)(pairwise_sum)
    _reduce = _numba.njit(**_inline)(_reduce)
    _column_means = _numba.njit(**_inline)(_column_means)
    _lad_prox_c = _numba.njit(**_opts)(_lad_prox_loop)
    _dcs_c = _numba.njit(**_opts)(_dcs_loop)
    _lad_F_c = _numba.njit(**_opts)(_lad_F_loop)
    _lad_grad_c = _numba.njit(**_opts)(_lad_grad_loop)
    _lad_resid_c = _numba.njit(**_opts)(_lad_resid_loop)
    _shift_c = _numba.njit(**_opts)(_shift_loop)
    _tail_c = _numba.njit(**_opts)(_tail_loop)
else:
    _lad_prox_c = _lad_F_c = _lad_grad_c = _lad_resid_c = _shift_c = _tail_c = _dcs_c = None


# ------------------------------------------------------------------------------------------------ gate
def lad_of(oracle):
    """The :class:`LAD` loss whose ``grad`` ``oracle`` is (the bound method itself), else ``None``."""
    from fedcheck.problems.losses import LAD
    loss = getattr(oracle, "__self__", None)
    if type(loss) is LAD and getattr(oracle, "__func__", None) is LAD.grad:
        return loss
    return None


def _covered(loss) -> bool:
    """The class the kernels are written for: exactly LAD, ``matmul`` kernel, ``(B, n, m, p)`` arrays with
    ``p`` in {2, 3}, float64 (the probe then decides whether this machine's numpy sums in the kernels' order)."""
    from fedcheck.problems.losses import LAD
    return (_lad_prox_c is not None and type(loss) is LAD and loss.opts.get("kernel") == "matmul"
            and loss.A.ndim == 4 and loss.b.ndim == 3 and loss.A.shape[-1] in (2, 3) and loss.m >= 1
            and loss.A.dtype == np.float64 and loss.b.dtype == np.float64 and loss.weights is None)


_probed: dict = {}


def _transposed(A, b):
    """``AT[b, k, j, i] = A[b, i, j, k]``, ``bT[b, j, i] = b[b, i, j]`` (the kernels' layout)."""
    return np.ascontiguousarray(np.transpose(A, (0, 3, 2, 1))), np.ascontiguousarray(np.swapaxes(b, 1, 2))


def _prox_scratch(n, m, p):
    return tuple(np.empty((p, n)) for _ in range(4)) + (np.empty((m, n)),)


def _probe_data(m, p, B=3, n=16):
    rng = np.random.default_rng(np.random.SeedSequence([_PROBE_SEED, m, p]))
    A, b = rng.standard_normal((B, n, m, p)), rng.standard_normal((B, n, m))
    return A, b, _transposed(A, b), rng


def _probe_orders(m: int, p: int):
    """``(rorder, norder, gorder)``: the residual order with which every residual equals ``LAD.residual`` bit for
    bit (at client points and at one point broadcast to the clients, as ``full_value`` evaluates), the norm order
    equal to ``einsum``'s, and the subgradient order with which the subgradients equal ``LAD.grad``'s; ``None`` if
    no order is."""
    from fedcheck.problems.losses import LAD
    A, b, (AT, bT), rng = _probe_data(m, p)
    loss = LAD(A, b)
    B, n = A.shape[:2]
    X = 3.0 * rng.standard_normal((B, n, p))
    Xb = np.broadcast_to(3.0 * rng.standard_normal((B, 1, p)), (B, n, p))
    out = np.empty((B, n, m))
    rorder = next((ro for ro in (0, 1, 2)
                   if all(np.array_equal(_lad_resid_c(AT, bT, np.ascontiguousarray(Y), ro, out), loss.residual(Y))
                          for Y in (X, Xb))), None)
    if rorder is None:
        return None
    G, sq = np.empty((B, n, p)), np.empty((B, n, 2))
    ref = loss.grad(X)
    for gorder in (0, 1):
        _lad_grad_c(AT, bT, X, rorder, gorder, G, sq, np.empty((p, n)), np.empty((p, n)), np.empty((m, n)))
        if np.array_equal(G, ref):
            break
    else:
        return None
    ein = np.einsum("bnp,bnp->bn", X, X)
    norder = next((o for o in (1, 0) if np.array_equal(sq[..., o], ein)), None)
    return None if norder is None else (rorder, norder, gorder)


def _probe_setup(m: int, p: int):
    """``(orders, loss, AT, bT, rng)`` for a probe of the compiled steps on random LAD data of this shape (the
    orders of :func:`_probe_orders`), or ``None`` when no order reproduces numpy's residuals and subgradients."""
    from fedcheck.problems.losses import LAD
    orders = _probe_orders(m, p)
    if orders is None:
        return None
    A, b, (AT, bT), rng = _probe_data(m, p)
    return orders, LAD(A, b), AT, bT, rng


def _probe_prox(m: int, p: int, reference):
    """The orders, if with them the compiled prox steps also equal numpy's reference loop ``reference`` (the
    caller's: :func:`fedcheck.algorithms.mls._numpy_prox_steps`) bit for bit on random data of this shape
    (several step counts, frozen rows, the ball active), else ``None``."""
    got = _probe_setup(m, p)
    if got is None:
        return None
    orders, loss, AT, bT, rng = got
    B, n = loss.A.shape[:2]
    U0 = 3.0 * rng.standard_normal((B, n, p))
    V = 3.0 * rng.standard_normal((B, n, p))
    scale = rng.uniform(0.5, 40.0, B)
    T = np.array([5, 2, 0])[:B]
    R = np.array([2.0, 50.0, 4.0])[:B]
    ref_U, ref_Ut = reference(loss.grad, U0.copy(), U0.copy(), V, scale[:, None, None], T, R[:, None, None],
                                      int(T.max()), False)
    U, Ut = U0.copy(), U0.copy()
    _lad_prox_c(AT, bT, U, Ut, V, scale, T.astype(np.int64), R, int(T.max()), orders[1], orders[0], orders[2],
                *_prox_scratch(n, m, p))
    return orders if np.array_equal(U, ref_U) and np.array_equal(Ut, ref_Ut) else None


def _probe_F(m: int, p: int):
    """``(first, rorder)`` with which the compiled ``F`` equals ``LAD.full_value`` bit for bit (more than 128
    clients: numpy's pairwise sum splits there), else ``None``."""
    from fedcheck.problems.losses import LAD
    orders = _probe_orders(m, p)
    if orders is None:
        return None
    A, b, (AT, bT), rng = _probe_data(m, p, B=4, n=139)
    loss = LAD(A, b)
    x = 2.0 * rng.standard_normal((A.shape[0], p))
    ref = loss.full_value(x)
    n = A.shape[1]
    for first in (1, 0):
        got = _lad_F_c(AT, bT, x, first, orders[0], np.empty(A.shape[0]), np.empty((m, n)), np.empty((8, n)),
                       np.empty(n))
        if np.array_equal(got, ref):
            return first, orders[0]
    return None


def _probe_dcs(m: int, p: int, reference):
    """The orders, if with them the compiled DCS inner steps equal numpy's (``reference``: the caller's
    :func:`fedcheck.algorithms.sliding._numpy_inner`) bit for bit on random data of this shape (instances with fewer
    steps, the ball active and not), else ``None``."""
    got = _probe_setup(m, p)
    if got is None:
        return None
    orders, loss, AT, bT, rng = got
    B, n = loss.A.shape[:2]
    x, w = 3.0 * rng.standard_normal((B, n, p)), 3.0 * rng.standard_normal((B, n, p))
    e = rng.uniform(0.5, 8.0, B)
    ex = e[:, None, None] * x
    Tk = np.array([6, 2, 0])[:B]
    R = np.array([2.0, 50.0, 4.0])[:B]
    ref = reference(loss.grad, x, ex, w, e[:, None, None], R, Tk, int(Tk.max()), n)
    U, Uh, ls = x.copy(), np.zeros_like(x), np.zeros(B)
    _dcs_c(AT, bT, U, ex, w, e, R, Tk.astype(np.int64), int(Tk.max()), orders[1], orders[0], orders[2], Uh, ls,
           np.empty((p, n)), np.empty((p, n)), np.empty((m, n)))
    same = all(np.array_equal(a, r) for a, r in zip((U, Uh, ls), (ref[0], ref[1], ref[2][:, 0, 0])))
    return orders if same else None


def _probe(kind: str, m: int, p: int, reference=None):
    key = (kind, m, p)
    if key not in _probed:
        try:
            _probed[key] = (_probe_prox(m, p, reference) if kind == "prox" else
                            _probe_dcs(m, p, reference) if kind == "dcs" else _probe_F(m, p))
        except Exception:  # pragma: no cover - a kernel that fails to compile: numpy runs
            _probed[key] = None
    return _probed[key]


# ------------------------------------------------------------------------------------------------ entry points
def lad_prox_steps(oracle, U, Ut, V, scale, T, R, Tmax, reference):
    """:func:`approx_prox`'s steps compiled with the LAD subgradient fused in, in place on ``U, Ut`` (returned);
    ``reference`` is the numpy loop they replace (the probe's yardstick).  ``None`` when ``oracle`` is not the library LAD's own ``grad`` of a covered shape, an array is not of the
    expected shape, or the probe found this machine's numpy summing in another order (then numpy runs)."""
    loss = lad_of(oracle)
    if loss is None or not _covered(loss) or getattr(U, "ndim", 0) != 3:
        return None
    B, n, m, p = loss.A.shape
    if not (U.shape == (B, n, p) and np.shape(Ut) == U.shape and np.shape(V) == U.shape and np.shape(scale) == (B,)
            and np.shape(R) == (B,) and np.shape(T) == (B,)):
        return None
    orders = _probe("prox", m, p, reference)
    if orders is None:
        return None
    AT, bT = _layout(loss)
    U = np.ascontiguousarray(U, dtype=float)
    Ut = np.ascontiguousarray(Ut, dtype=float)
    _lad_prox_c(AT, bT, U, Ut, np.ascontiguousarray(V, dtype=float), np.ascontiguousarray(scale, dtype=float),
                np.ascontiguousarray(T, dtype=np.int64), np.ascontiguousarray(R, dtype=float), int(Tmax), orders[1],
                orders[0], orders[2], *_prox_scratch(n, m, p))
    return U, Ut


def dcs_inner(oracle, x, ex, w, e, R, Tk, Tmax, reference):
    """DCS's inner steps (:func:`fedcheck.algorithms.sliding._numpy_inner`, the ``reference`` the probe compares with)
    compiled with the LAD subgradient fused in: ``(U, Uh, lam_sum)`` with ``lam_sum`` ``(B, 1, 1)``, or ``None``
    when ``oracle`` is not the library LAD's own ``grad`` of a covered shape, an array is not of the expected
    shape, or the probe found this machine's numpy summing in another order (then numpy runs)."""
    loss = lad_of(oracle)
    if loss is None or not _covered(loss) or _dcs_c is None or getattr(x, "ndim", 0) != 3:
        return None
    B, n, m, p = loss.A.shape
    if not (x.shape == (B, n, p) and np.shape(ex) == x.shape and np.shape(w) == x.shape
            and np.shape(e) in ((B, 1, 1), (B,)) and np.shape(R) == (B,) and np.shape(Tk) == (B,)):
        return None
    orders = _probe("dcs", m, p, reference)
    if orders is None:
        return None
    AT, bT = _layout(loss)
    U = np.array(x, dtype=float, order="C")
    Uh, lam_sum = np.zeros((B, n, p)), np.zeros(B)
    _dcs_c(AT, bT, U, np.ascontiguousarray(ex, dtype=float), np.ascontiguousarray(w, dtype=float),
           np.ascontiguousarray(np.reshape(e, B), dtype=float), np.ascontiguousarray(R, dtype=float),
           np.ascontiguousarray(Tk, dtype=np.int64), int(Tmax), orders[1], orders[0], orders[2], Uh, lam_sum,
           np.empty((p, n)), np.empty((p, n)), np.empty((m, n)))
    return U, Uh, lam_sum[:, None, None]


def _layout(loss):
    """The loss's arrays in the kernels' layout, made once per loss (read only; replaced arrays are seen)."""
    got = loss.__dict__.get("_fedmls_jit")
    if got is None or got[0] is not loss.A or got[1] is not loss.b:
        got = loss._fedmls_jit = (loss.A, loss.b) + _transposed(loss.A, loss.b)
    return got[2], got[3]


def lad_full_value(loss):
    """A compiled ``x (B, p) -> F(x) (B,)`` equal bit for bit to ``loss.full_value`` for a covered LAD batch,
    else ``None``."""
    if not _covered(loss):
        return None
    B, n, m, p = loss.A.shape
    orders = _probe("F", m, p)
    if orders is None:
        return None
    first, rorder = orders
    AT, bT = _layout(loss)

    def F(x):
        x = np.asarray(x)
        if x.shape != (B, p) or x.dtype != np.float64:
            return loss.full_value(x)
        return _lad_F_c(AT, bT, np.ascontiguousarray(x), first, rorder, np.empty(B), np.empty((m, n)),
                        np.empty((8, n)), np.empty(n))
    return F


# ------------------------------------------------------------------------------------------------ the round
def numpy_shift(zi, yi, y, c):
    """FedMLS line 6 in numpy (the reference): ``V = zi - c (yi - y)``."""
    return zi - c * (yi - y[:, None, :])


def numpy_tail(x, y, z, xi, zi, zti, g, g1, c1):
    """FedMLS lines 14-19 in numpy (the reference): returns ``x, y, z, xi, yi``."""
    xi = (1.0 - g) * xi + g * zti
    yi = (1.0 - g1) * xi + g1 * zi
    x = (1.0 - g) * x + g * z
    y = (1.0 - g1) * x + g1 * z
    z = z - c1 * (y - yi.mean(1))
    return x, y, z, xi, yi


def _probe_round(n: int, p: int) -> bool:
    """Whether the compiled shift and tail equal :func:`numpy_shift` / :func:`numpy_tail` bit for bit on random
    states of ``n`` clients in ``p`` dimensions (the client mean's order is numpy's)."""
    rng = np.random.default_rng(np.random.SeedSequence([_PROBE_SEED, n, p, 1]))
    B = 3
    x, y, z = (rng.standard_normal((B, p)) for _ in range(3))
    xi, yi, zi, zti = (rng.standard_normal((B, n, p)) * 10.0 ** rng.integers(-3, 4, (B, n, 1)) for _ in range(4))
    for k in (1, 7, 100):
        g, g1, c, c1 = 2.0 / (k + 1.0), 2.0 / (k + 2.0), k / 4.0, (k + 1.0) / 4.0
        if not np.array_equal(_shift_c(zi, yi, y, c, np.empty_like(zi)), numpy_shift(zi, yi, y, c)):
            return False
        out = tuple(np.empty_like(a) for a in (x, y, z, xi, yi))
        _tail_c(x, y, z, xi, zi, zti, g, g1, c1, *out, np.empty(p))
        if not all(np.array_equal(a, b) for a, b in zip(out, numpy_tail(x, y, z, xi, zi, zti, g, g1, c1))):
            return False
    return True


def round_kernels(B: int, n: int, p: int):
    """``(shift, tail)``: compiled :func:`numpy_shift` and :func:`numpy_tail` (new arrays each call, as numpy's)
    for ``(B, n, p)`` float64 states, or ``None`` when numba is off or the probe finds another order."""
    if _tail_c is None:
        return None
    key = ("round", n, p)
    if key not in _probed:
        try:
            _probed[key] = _probe_round(n, p)
        except Exception:  # pragma: no cover
            _probed[key] = False
    if not _probed[key]:
        return None
    def shift(zi, yi, y, c):
        return _shift_c(zi, yi, y, c, np.empty((B, n, p)))

    def tail(x, y, z, xi, zi, zti, g, g1, c1):
        out = (np.empty((B, p)), np.empty((B, p)), np.empty((B, p)), np.empty((B, n, p)), np.empty((B, n, p)))
        _tail_c(x, y, z, xi, zi, zti, g, g1, c1, *out, np.empty(p))
        return out
    return shift, tail
