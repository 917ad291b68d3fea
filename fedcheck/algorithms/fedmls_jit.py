"""Compiled FedMLS pieces for least absolute deviations (the library's :class:`~fedcheck.problems.losses.LAD`).

* :func:`lad_prox_steps` -- :func:`fedcheck.algorithms.fedmls.approx_prox` with the LAD subgradient fused in:
  one compiled call runs every step of every client row (rows outermost, the ``T`` steps of a row innermost,
  its point in registers), instead of a numpy oracle call (two stacked ``matmul``, ``sign``) and two kernels
  per step;
* :func:`lad_full_value` -- ``F(x) = (1/n) sum_i f_i(x)`` of LAD in one pass (the recorder's ``F``).

**The same bits as numpy.**  FedMLS's iterates depend on ``sign(A_i u - b_i)``: one ulp in a product can send
a later iterate elsewhere.  So the kernels do numpy's operations in numpy's order: ``np.matmul`` of a
``(m, p)`` matrix by a vector is BLAS ``gemv`` (``ddot`` when ``m = 1``) (OpenBLAS's ``dgemv_t`` tail for ``p = 2, 3``: ``fma(a2, x2,
fma(a0, x0, a1 x1))``), the subgradient ``(sign / m)^T A`` is ``dgemv_n`` (blocks of 4 rows, ``t + fma(a_k s_k,
a_(k+1) s_(k+1))``), the step's norm is ``einsum``'s SIMD order (``(u0^2 + u2^2) + u1^2``), the means are
numpy's pairwise sums.  Those orders belong to the BLAS build and the CPU: they are not assumed.  Before a
shape ``(m, p)`` is used, a probe runs the compiled kernel and numpy's reference (``FEDCHECK_JIT=0``'s code:
``approx_prox``'s numpy loop with the loss's own ``grad``; ``Loss.full_value``) on random data of that shape
and the compiled path is taken only if every number agrees bit for bit; otherwise (another BLAS, another
order, ``p`` not 2 or 3, LAD's ``einsum`` kernel option, a subclass, any other loss or oracle) the callers run
numpy as before.
"""
from __future__ import annotations

import numpy as np

from fedcheck.algorithms.jit import AVAILABLE as _JIT, numba as _numba

__all__ = ["lad_prox_steps", "lad_full_value", "lad_of"]

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


def _resid(A, b, bi, i, j, x0, x1, x2, p, rorder):
    """``(A_i x)_j - b_ij`` in BLAS's order: ``dgemv_t``'s (``rorder`` 0: ``y = 0; y += fma(a2, x2, fma(a0, x0,
    a1 x1))``) or, when ``m = 1`` makes numpy's ``matmul`` a dot product, ``ddot``'s (1: ``fma(a2, x2, fma(a1,
    x1, a0 x0))``)."""
    if rorder == 0:
        if p == 3:
            y = 0.0 + _fma(A[bi, i, j, 2], x2, _fma(A[bi, i, j, 0], x0, A[bi, i, j, 1] * x1))
        else:
            y = 0.0 + _fma(A[bi, i, j, 0], x0, A[bi, i, j, 1] * x1)
    else:
        y = _fma(A[bi, i, j, 1], x1, A[bi, i, j, 0] * x0)
        if p == 3:
            y = _fma(A[bi, i, j, 2], x2, y)
        y = 0.0 + y
    return y - b[bi, i, j]


def _sign_over(r, inv):
    """``np.sign(r) / m`` with ``inv = 1 / m`` (``(+-1) / m`` is ``+-(1 / m)`` exactly), branch-free (the signs
    of residuals are coin flips to a branch predictor); NaN stays NaN."""
    s = inv * float((r > 0.0) - (r < 0.0))
    if r != r:
        s = r
    return s


def _subgrad_coord(A, s, bi, i, k, m):
    """``(s^T A_i)_k`` in ``dgemv_n``'s order (4 rows a block, then one at a time; ``y = 0; y += t``)."""
    t = 0.0
    j = 0
    while j + 4 <= m:
        t = t + _fma(A[bi, i, j, k], s[j], A[bi, i, j + 1, k] * s[j + 1])
        t = t + _fma(A[bi, i, j + 2, k], s[j + 2], A[bi, i, j + 3, k] * s[j + 3])
        j += 4
    while j < m:
        t = _fma(A[bi, i, j, k], s[j], t)
        j += 1
    return 0.0 + t


def _sq_norm(u0, u1, u2, p, order):
    if p == 2:
        return u0 * u0 + u1 * u1
    if order == 1:
        return (u0 * u0 + u2 * u2) + u1 * u1
    return (u0 * u0 + u1 * u1) + u2 * u2


def _lad_prox_loop(A, b, U, Ut, V, scale, T, R, Tmax, order, rorder, s):
    """Every step of :func:`fedcheck.algorithms.fedmls.approx_prox` with ``oracle = LAD.grad``, in place on
    ``U, Ut`` (``s`` is an ``m``-scratch).  Per step ``t`` and row: ``G = (sign(A u - b) / m)^T A``;
    ``Uh = ((1 - a) u + a v) - G (a sc)``; ``Uh *= R / max(||Uh||, R)``; active rows ``u = Uh``;
    ``ut += (th [t <= T]) (u - ut)``.  Instance by instance (its ``A_b`` stays in L1), step by step, the client
    rows innermost (independent: the CPU overlaps them)."""
    B, n, m, p = A.shape
    inv = 1.0 / float(m)
    for bi in range(B):
        r = R[bi]
        Tb = T[bi]
        for t in range(1, Tmax + 1):
            tf = float(t)
            a = 2.0 / (tf + 2.0)
            om = 1.0 - a
            f = a * scale[bi]
            act = t <= Tb
            c = 2.0 * (tf + 1.0) / (tf * (tf + 3.0)) if act else 0.0
            for i in range(n):
                u0 = U[bi, i, 0]
                u1 = U[bi, i, 1]
                u2 = U[bi, i, 2] if p == 3 else 0.0
                for j in range(m):
                    s[j] = _sign_over(_resid(A, b, bi, i, j, u0, u1, u2, p, rorder), inv)
                h0 = (om * u0 + a * V[bi, i, 0]) - _subgrad_coord(A, s, bi, i, 0, m) * f
                h1 = (om * u1 + a * V[bi, i, 1]) - _subgrad_coord(A, s, bi, i, 1, m) * f
                h2 = ((om * u2 + a * V[bi, i, 2]) - _subgrad_coord(A, s, bi, i, 2, m) * f) if p == 3 else 0.0
                nrm = np.sqrt(_sq_norm(h0, h1, h2, p, order))
                mx = r if nrm <= r else nrm
                g = r / mx
                if act:
                    u0 = h0 * g
                    u1 = h1 * g
                    u2 = h2 * g
                    U[bi, i, 0] = u0
                    U[bi, i, 1] = u1
                    if p == 3:
                        U[bi, i, 2] = u2
                Ut[bi, i, 0] = Ut[bi, i, 0] + c * (u0 - Ut[bi, i, 0])
                Ut[bi, i, 1] = Ut[bi, i, 1] + c * (u1 - Ut[bi, i, 1])
                if p == 3:
                    Ut[bi, i, 2] = Ut[bi, i, 2] + c * (u2 - Ut[bi, i, 2])


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


def _pairwise(v, lo, n):
    """``np.add.reduce(v[lo:lo+n])`` in numpy's pairwise order: above 128 elements the halves (the first a
    multiple of 8) are summed apart and added.  Without recursion (an explicit stack: a recursive kernel does
    not survive numba's on-disk cache)."""
    if n <= 128:
        return _pairwise_block(v, lo, n)
    los = np.empty(128, np.int64)
    ns = np.empty(128, np.int64)
    vals = np.empty(128)
    top = 0
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
        return v[0] + _pairwise(v, 1, n - 1)
    return 0.0 + _pairwise(v, 0, n)


def _lad_F_loop(A, b, x, first, rorder, out, ra, fi):
    """``out[b] = mean_i mean_j |(A_i x_b)_j - b_ij|`` (``ra``: ``m`` scratch, ``fi``: ``n`` scratch)."""
    B, n, m, p = A.shape
    for bi in range(B):
        x0 = x[bi, 0]
        x1 = x[bi, 1]
        x2 = x[bi, 2] if p == 3 else 0.0
        for i in range(n):
            for j in range(m):
                ra[j] = abs(_resid(A, b, bi, i, j, x0, x1, x2, p, rorder))
            fi[i] = _reduce(ra, m, first) / m
        out[bi] = _reduce(fi, n, first) / n
    return out


def _lad_grad_loop(A, b, X, rorder, sq, out, s):
    """The probe's view of the pieces: ``out`` the subgradient ``(sign(A x - b) / m)^T A`` of every row, ``sq``
    its squared norms ``||x||^2`` in the norm orders 0 and 1."""
    B, n, m, p = A.shape
    inv = 1.0 / float(m)
    for bi in range(B):
        for i in range(n):
            x0 = X[bi, i, 0]
            x1 = X[bi, i, 1]
            x2 = X[bi, i, 2] if p == 3 else 0.0
            for j in range(m):
                s[j] = _sign_over(_resid(A, b, bi, i, j, x0, x1, x2, p, rorder), inv)
            for k in range(p):
                out[bi, i, k] = _subgrad_coord(A, s, bi, i, k, m)
            sq[bi, i, 0] = _sq_norm(X[bi, i, 0], X[bi, i, 1], x2, p, 0)
            sq[bi, i, 1] = _sq_norm(X[bi, i, 0], X[bi, i, 1], x2, p, 1)


def _lad_resid_loop(A, b, X, rorder, out):
    B, n, m, p = A.shape
    for bi in range(B):
        for i in range(n):
            x2 = X[bi, i, 2] if p == 3 else 0.0
            for j in range(m):
                out[bi, i, j] = _resid(A, b, bi, i, j, X[bi, i, 0], X[bi, i, 1], x2, p, rorder)
    return out


if _JIT:
    _opts = dict(cache=True, fastmath=False, nogil=True)
    _resid = _numba.njit(inline="always", **_opts)(_resid)
    _sign_over = _numba.njit(inline="always", **_opts)(_sign_over)
    _subgrad_coord = _numba.njit(inline="always", **_opts)(_subgrad_coord)
    _sq_norm = _numba.njit(inline="always", **_opts)(_sq_norm)
    _pairwise_block = _numba.njit(inline="always", **_opts)(_pairwise_block)
    _pairwise = _numba.njit(**_opts)(_pairwise)
    _reduce = _numba.njit(inline="always", **_opts)(_reduce)
    _lad_prox_c = _numba.njit(**_opts)(_lad_prox_loop)
    _lad_F_c = _numba.njit(**_opts)(_lad_F_loop)
    _lad_grad_c = _numba.njit(**_opts)(_lad_grad_loop)
    _lad_resid_c = _numba.njit(**_opts)(_lad_resid_loop)
else:
    _lad_prox_c = _lad_F_c = _lad_grad_c = _lad_resid_c = None


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
            and loss.A.dtype == np.float64 and loss.b.dtype == np.float64)


_probed: dict = {}


def _probe_data(m, p, B=3, n=16):
    rng = np.random.default_rng(np.random.SeedSequence([_PROBE_SEED, m, p]))
    return rng.standard_normal((B, n, m, p)), rng.standard_normal((B, n, m)), rng


def _probe_orders(m: int, p: int):
    """``(rorder, norder)``: the residual order with which every residual equals ``LAD.residual`` bit for bit
    (at client points and at one point broadcast to the clients, as ``full_value`` evaluates), and the norm order
    equal to ``einsum``'s, with the subgradients then equal to ``LAD.grad``'s; ``None`` if no order is."""
    from fedcheck.problems.losses import LAD
    A, b, rng = _probe_data(m, p)
    loss = LAD(A, b)
    B, n = A.shape[:2]
    X = 3.0 * rng.standard_normal((B, n, p))
    Xb = np.broadcast_to(3.0 * rng.standard_normal((B, 1, p)), (B, n, p))
    out = np.empty((B, n, m))
    rorder = None
    for ro in (0, 1):
        if all(np.array_equal(_lad_resid_c(A, b, np.ascontiguousarray(Y), ro, out), loss.residual(Y)) for Y in (X, Xb)):
            rorder = ro
            break
    if rorder is None:
        return None
    G, sq = np.empty((B, n, p)), np.empty((B, n, 2))
    _lad_grad_c(A, b, X, rorder, sq, G, np.empty(m))
    if not np.array_equal(G, loss.grad(X)):
        return None
    ein = np.einsum("bnp,bnp->bn", X, X)
    norder = next((o for o in (1, 0) if np.array_equal(sq[..., o], ein)), None)
    return None if norder is None else (rorder, norder)


def _probe_prox(m: int, p: int):
    """The orders, if with them the compiled prox steps also equal numpy's reference loop bit for bit on random
    data of this shape (several step counts, frozen rows, the ball active), else ``None``."""
    from fedcheck.algorithms.fedmls import _numpy_prox_steps
    from fedcheck.problems.losses import LAD
    orders = _probe_orders(m, p)
    if orders is None:
        return None
    A, b, rng = _probe_data(m, p)
    loss = LAD(A, b)
    B, n = A.shape[:2]
    U0 = 3.0 * rng.standard_normal((B, n, p))
    V = 3.0 * rng.standard_normal((B, n, p))
    scale = rng.uniform(0.5, 40.0, B)
    T = np.array([5, 2, 0])[:B]
    R = np.array([2.0, 50.0, 4.0])[:B]
    ref_U, ref_Ut = _numpy_prox_steps(loss.grad, U0.copy(), U0.copy(), V, scale[:, None, None], T, R[:, None, None],
                                      int(T.max()), False)
    U, Ut = U0.copy(), U0.copy()
    _lad_prox_c(A, b, U, Ut, V, scale, T.astype(np.int64), R, int(T.max()), orders[1], orders[0], np.empty(m))
    return orders if np.array_equal(U, ref_U) and np.array_equal(Ut, ref_Ut) else None


def _probe_F(m: int, p: int):
    """``(first, rorder)`` with which the compiled ``F`` equals ``LAD.full_value`` bit for bit, else ``None``."""
    from fedcheck.problems.losses import LAD
    orders = _probe_orders(m, p)
    if orders is None:
        return None
    A, b, rng = _probe_data(m, p, B=8, n=37)
    loss = LAD(A, b)
    x = 2.0 * rng.standard_normal((A.shape[0], p))
    ref = loss.full_value(x)
    for first in (1, 0):
        got = _lad_F_c(A, b, x, first, orders[0], np.empty(A.shape[0]), np.empty(m), np.empty(A.shape[1]))
        if np.array_equal(got, ref):
            return first, orders[0]
    return None


def _probe(kind: str, m: int, p: int):
    key = (kind, m, p)
    if key not in _probed:
        try:
            _probed[key] = (_probe_prox if kind == "prox" else _probe_F)(m, p)
        except Exception:  # pragma: no cover - a kernel that fails to compile: numpy runs
            _probed[key] = None
    return _probed[key]


# ------------------------------------------------------------------------------------------------ entry points
def lad_prox_steps(oracle, U, Ut, V, scale, T, R, Tmax):
    """:func:`approx_prox`'s steps compiled with the LAD subgradient fused in, in place on ``U, Ut`` (returned);
    ``None`` when ``oracle`` is not the library LAD's own ``grad`` of a covered shape, an array is not of the
    expected shape, or the probe found this machine's numpy summing in another order (then numpy runs)."""
    loss = lad_of(oracle)
    if loss is None or not _covered(loss) or getattr(U, "ndim", 0) != 3:
        return None
    B, n, m, p = loss.A.shape
    if not (U.shape == (B, n, p) and np.shape(Ut) == U.shape and np.shape(V) == U.shape and np.shape(scale) == (B,)
            and np.shape(R) == (B,) and np.shape(T) == (B,)):
        return None
    orders = _probe("prox", m, p)
    if orders is None:
        return None
    A, b = _contiguous(loss)
    U = np.ascontiguousarray(U, dtype=float)
    Ut = np.ascontiguousarray(Ut, dtype=float)
    _lad_prox_c(A, b, U, Ut, np.ascontiguousarray(V, dtype=float), np.ascontiguousarray(scale, dtype=float),
                np.ascontiguousarray(T, dtype=np.int64), np.ascontiguousarray(R, dtype=float), int(Tmax), orders[1],
                orders[0], np.empty(m))
    return U, Ut


def _contiguous(loss):
    got = loss.__dict__.get("_c_Ab")
    if got is None or got[0] is not loss.A or got[1] is not loss.b:
        got = loss._c_Ab = (loss.A, loss.b, np.ascontiguousarray(loss.A), np.ascontiguousarray(loss.b))
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
    A, b = _contiguous(loss)
    ra, fi = np.empty(m), np.empty(n)

    def F(x):
        x = np.asarray(x)
        if x.shape != (B, p) or x.dtype != np.float64:
            return loss.full_value(x)
        return _lad_F_c(A, b, np.ascontiguousarray(x), first, rorder, np.empty(B), ra, fi)
    return F
