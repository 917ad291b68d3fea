"""Compiled FedFW rounds (numba) for the common case: quadratic client losses, a set whose vertices
have one non-zero coordinate (l1 ball, simplex) and schedules equal across instances.

One call is one whole round over every instance and client, fused: gradient from the incrementally
kept ``(1/n) H_i x_i`` (recomputed exactly every ``refresh`` rounds), penalty, LMO, client and server
updates.  The operations and their order are those of the numpy path in :mod:`.fedfw` (ties to the
lowest index, ``sign(0) = +1``), so both give the same iterates up to the rounding of the exact
refreshes; ``tests/test_engine_speed.py`` checks it against the plain loop.

numba is a dependency; if it cannot be imported the engine uses its numpy path (``AVAILABLE`` False).
``FEDCHECK_JIT=0`` disables the compiled path.
"""
from __future__ import annotations

import functools

import numpy as np

from fedcheck.algorithms.lanes import LANES, aligned_empty, blocks_of, lanes_consensus, lanes_sumsq, tile_in
from fedcheck.problems.compiled import AVAILABLE, numba  # numba, unless FEDCHECK_JIT=0 (one switch)

__all__ = ["AVAILABLE", "fedfw_round", "fedfw_round_factored", "bind_fedfw_round", "consensus_distance",
           "least_squares_recorder"]

L1, SIMPLEX = 0, 1


def _fedfw_round(X, xbar, HX, HT, c, r_row, e, lam, refresh, kind, sbar):
    B, n, p = X.shape
    om = 1.0 - e
    if refresh:
        for b in range(B):
            for i in range(n):
                for k in range(p):
                    HX[b, i, k] = 0.0
                for j in range(p):
                    xj = X[b, i, j]
                    for k in range(p):
                        HX[b, i, k] += xj * HT[b, i, j, k]
    for b in range(B):
        for k in range(p):
            sbar[k] = 0.0
        for i in range(n):
            row = b * n + i
            r = r_row[row]
            jbest = 0
            gbest = 0.0
            best = -1.0
            for k in range(p):
                g = (HX[b, i, k] - c[b, i, k]) + (X[b, i, k] - xbar[b, k]) * lam
                if kind == L1:
                    a = abs(g)
                    if a > best:
                        best, jbest, gbest = a, k, g
                else:  # simplex: argmin g
                    if k == 0 or g < gbest:
                        jbest, gbest = k, g
            if kind == L1:
                val = r if gbest < 0 else -r
            else:
                val = r
            ev = val * e
            for k in range(p):
                X[b, i, k] *= om
                HX[b, i, k] = HX[b, i, k] * om + HT[b, i, jbest, k] * ev
            X[b, i, jbest] += ev
            sbar[jbest] += val
        for k in range(p):
            xbar[b, k] = xbar[b, k] * om + (sbar[k] / n) * e


def _fedfw_round_factored(X, xbar, AX, A, bvec, r_row, e, lam, refresh, kind, sbar, scale, g):
    """One FedFW round for least squares in factored form (``A`` ``(B, n, m, p)``, no ``p x p`` matrix):
    ``(1/n) grad f_i(x_i) = scale A_i^T (A_i x_i - b_i)`` with ``scale = (1/n)/m`` (the numpy kernel's), from
    the incrementally kept ``A_i x_i`` (one column of ``A_i`` per client per round; recomputed exactly when
    ``refresh``).  The rest is :func:`_fedfw_round`'s, in the same order."""
    B, n, m, p = A.shape
    om = 1.0 - e
    if refresh:
        for b in range(B):
            for i in range(n):
                for j in range(m):
                    acc = 0.0
                    for k in range(p):
                        acc += A[b, i, j, k] * X[b, i, k]
                    AX[b, i, j] = acc
    for b in range(B):
        for k in range(p):
            sbar[k] = 0.0
        for i in range(n):
            row = b * n + i
            r = r_row[row]
            for k in range(p):
                g[k] = 0.0
            Ai = A[b, i]
            for j in range(m):
                res = AX[b, i, j] - bvec[b, i, j]
                Aij = Ai[j]
                for k in range(p):          # (vectorizes: each g[k] still sums j = 0 .. m-1 in order)
                    g[k] += Aij[k] * res
            jbest = 0
            gbest = 0.0
            best = -1.0
            for k in range(p):
                gk = g[k] * scale + (X[b, i, k] - xbar[b, k]) * lam
                if kind == L1:
                    a = abs(gk)
                    if a > best:
                        best, jbest, gbest = a, k, gk
                else:  # simplex: argmin g
                    if k == 0 or gk < gbest:
                        jbest, gbest = k, gk
            if kind == L1:
                val = r if gbest < 0 else -r
            else:
                val = r
            ev = val * e
            for k in range(p):
                X[b, i, k] *= om
            X[b, i, jbest] += ev
            for j in range(m):
                AX[b, i, j] = AX[b, i, j] * om + A[b, i, j, jbest] * ev
            sbar[jbest] += val
        for k in range(p):
            xbar[b, k] = xbar[b, k] * om + (sbar[k] / n) * e


def _fedfw_round_factored_streamed(X, xbar, AX, A, bvec, r_row, e, lam, refresh, kind, sbar, scale, g,
                                   R, RT, tri, q, rho, fscale, radius, gauge, F, cons, infeas, row, with_cons, acc):
    _fedfw_round_factored_c(X, xbar, AX, A, bvec, r_row, e, lam, refresh, kind, sbar, scale, g)
    _stream_F_columns_c(RT, q, rho, fscale, xbar, F, row, acc, tri)
    _stream_metrics_c(R, tri, q, rho, fscale, X, xbar, radius, gauge, F, cons, infeas, row, with_cons, False)


def _consensus(X, xbar, out):
    B, n, p = X.shape
    for b in range(B):
        acc = 0.0
        for i in range(n):
            for k in range(p):
                d = X[b, i, k] - xbar[b, k]
                acc += d * d
        out[b] = np.sqrt(acc)
    return out


GAUGES = {"l1": 0, "simplex": 1, "l2": 2, "box": 3}
COLUMNS_FROM = 64    # F of least squares by columns (vectorized) when R has at least this many columns


def _expect(arrays: dict, shapes: dict, kernel: str) -> None:
    """Refuse (``ValueError``) arrays a compiled kernel would read out of bounds: every array must be float64 of
    exactly the shape the kernel was built for (numba does not check bounds)."""
    for name, a in arrays.items():
        want = shapes[name]
        if not isinstance(a, np.ndarray) or a.dtype != np.float64 or a.shape != tuple(want):
            got = f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
            raise ValueError(f"compiled {kernel}: {name} is {got}, expected float64 {tuple(want)}")


def _ls_record(R, q, rho, scale, X, xbar, radius, gauge, F, cons, infeas, with_F=True, cons_from=0):
    """F(xbar) = (||R xbar - q||^2 + rho) * scale, the consensus distance (:func:`_consensus`) and the set's gauge
    at xbar (``with_F=False``: F is computed elsewhere, :func:`_stream_F_columns`; the consensus of the instances
    before ``cons_from`` too, :func:`_ls_record_lanes`)."""
    B, _, p = X.shape
    k_rows = R.shape[1] if with_F else 0
    for b in range(B):
        acc = 0.0
        for k in range(k_rows):
            rk = 0.0
            for j in range(p):
                rk += R[b, k, j] * xbar[b, j]
            rk -= q[b, k]
            acc += rk * rk
        if with_F:
            F[b] = (acc + rho[b]) * scale
        r = radius[b]
        if gauge == 0:      # l1 ball
            s = 0.0
            for j in range(p):
                s += abs(xbar[b, j])
            infeas[b] = max(s - r, 0.0)
        elif gauge == 1:    # simplex: |sum x - r| and negativity
            s = 0.0
            lo = 0.0
            for j in range(p):
                s += xbar[b, j]
                lo = min(lo, xbar[b, j])
            infeas[b] = max(abs(s - r), -lo)
        elif gauge == 2:    # l2 ball
            s = 0.0
            for j in range(p):
                s += xbar[b, j] * xbar[b, j]
            infeas[b] = max(np.sqrt(s) - r, 0.0)
        else:               # box
            s = 0.0
            for j in range(p):
                s = max(s, abs(xbar[b, j]))
            infeas[b] = max(s - r, 0.0)
    _consensus_compiled(X[cons_from:], xbar[cons_from:], cons[cons_from:])


def _ls_record_lanes(R8, Q8, R, q, rho, scale, X, xbar, radius, gauge, F, cons, infeas, x8, out8):
    """:func:`_ls_record` with ``F`` by :func:`.lanes.lanes_sumsq` and the consensus by
    :func:`.lanes.lanes_consensus`, eight instances at a time (``R8`` ``(G, k_rows, p, LANES)`` and ``Q8``
    ``(G, k_rows, LANES)``: ``R`` and ``q`` in blocks of instances; the last, partial block's consensus the scalar
    way): every instance's sums in :func:`_ls_record`'s order, the same bits."""
    B, n, p = X.shape
    k_rows = R8.shape[1]
    for g in range(R8.shape[0]):
        b0 = g * LANES
        if b0 + LANES <= B:
            tile_in(xbar, x8, b0, p)
        else:
            for j in range(p):
                for l in range(LANES):
                    x8[j, l] = xbar[b0 + l, j] if b0 + l < B else 0.0
        lanes_sumsq(R8[g], x8, Q8[g], out8, p, k_rows)
        for l in range(min(LANES, B - b0)):
            F[b0 + l] = (out8[0, l] + rho[b0 + l]) * scale
        if b0 + LANES <= B:
            lanes_consensus(X, x8, out8, b0, n, p)
            for l in range(LANES):
                cons[b0 + l] = np.sqrt(out8[0, l])
    _ls_record_compiled(R, q, rho, scale, X, xbar, radius, gauge, F, cons, infeas, False, B - B % LANES)


def _stream_F_columns(RT, q, rho, scale, xbar, F, row, acc, tri):
    """Row ``row`` of ``F`` as :func:`_ls_record` computes it, bit for bit, from ``RT`` (``R`` transposed,
    contiguous): every ``(R xbar)_k`` still sums ``j = 0 .. p-1`` in order, but the loop over ``k`` is innermost
    and vectorizes (for the large ``R`` of factored least squares: 200 x 200 per instance).

    ``tri`` (``R`` upper triangular with exact zeros below the diagonal): column ``j`` adds only to ``k <= j``.
    The terms left out are ``0 * x_j = +-0`` added to a partial sum that is still ``+0`` (every earlier term of
    row ``k`` is such a zero too), which leaves it ``+0``: the same bits -- when ``x_j`` is finite; an instance
    with a non-finite coordinate takes every term (``0 * inf`` is NaN)."""
    B, p, k_rows = RT.shape
    for b in range(B):
        for k in range(k_rows):
            acc[k] = 0.0
        Rb = RT[b]
        skip = tri
        if tri:
            for j in range(p):
                if not np.isfinite(xbar[b, j]):
                    skip = False
        for j in range(p):
            xj = xbar[b, j]
            Rj = Rb[j]
            for k in range(min(j + 1, k_rows) if skip else k_rows):
                acc[k] += Rj[k] * xj
        s = 0.0
        for k in range(k_rows):
            a0 = acc[k] - q[b, k]
            s += a0 * a0
        F[row, b] = (s + rho[b]) * scale


def _stream_metrics(R, tri, q, rho, scale, X, xbar, radius, gauge, F, cons, infeas, row, with_cons, with_F=True):
    """Row ``row`` of ``F``, ``cons``, ``infeas``: the three metrics of :func:`_ls_record`, bit for bit.

    Every sum adds the same terms in the same order as :func:`_ls_record`; only independent sums are
    interleaved, so that they run in parallel instead of waiting on one another (eight rows of ``R xbar``
    at a time; the consensus sums of four instances at a time).  With ``tri`` (``R`` upper triangular,
    exact zeros below the diagonal) row ``k`` starts at column ``k0 <= k`` (the first row of its group of
    eight): the skipped terms are ``0 * x_j = +-0``, which leave a partial sum ``+0`` unchanged, so the
    result is still identical -- for finite ``xbar``: an instance with a non-finite coordinate takes every term
    (``0 * inf`` is NaN), as the recorder does."""
    B, n, p = X.shape
    k_rows = R.shape[1]
    for b in range(B):
        acc = 0.0
        k = 0 if with_F else k_rows
        skip = tri
        if tri and with_F:
            for j in range(p):
                if not np.isfinite(xbar[b, j]):
                    skip = False
        while k + 8 <= k_rows:
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
            for j in range(k if skip else 0, p):
                xj = xbar[b, j]
                a0 += R[b, k, j] * xj
                a1 += R[b, k + 1, j] * xj
                a2 += R[b, k + 2, j] * xj
                a3 += R[b, k + 3, j] * xj
                a4 += R[b, k + 4, j] * xj
                a5 += R[b, k + 5, j] * xj
                a6 += R[b, k + 6, j] * xj
                a7 += R[b, k + 7, j] * xj
            a0 -= q[b, k]
            acc += a0 * a0
            a1 -= q[b, k + 1]
            acc += a1 * a1
            a2 -= q[b, k + 2]
            acc += a2 * a2
            a3 -= q[b, k + 3]
            acc += a3 * a3
            a4 -= q[b, k + 4]
            acc += a4 * a4
            a5 -= q[b, k + 5]
            acc += a5 * a5
            a6 -= q[b, k + 6]
            acc += a6 * a6
            a7 -= q[b, k + 7]
            acc += a7 * a7
            k += 8
        while k < k_rows:
            a0 = 0.0
            for j in range(k if skip else 0, p):
                a0 += R[b, k, j] * xbar[b, j]
            a0 -= q[b, k]
            acc += a0 * a0
            k += 1
        if with_F:
            F[row, b] = (acc + rho[b]) * scale
        rad = radius[b]
        if gauge == 0:      # l1 ball
            s = 0.0
            for j in range(p):
                s += abs(xbar[b, j])
            infeas[row, b] = max(s - rad, 0.0)
        elif gauge == 1:    # simplex
            s = 0.0
            lo = 0.0
            for j in range(p):
                s += xbar[b, j]
                lo = min(lo, xbar[b, j])
            infeas[row, b] = max(abs(s - rad), -lo)
        elif gauge == 2:    # l2 ball
            s = 0.0
            for j in range(p):
                s += xbar[b, j] * xbar[b, j]
            infeas[row, b] = max(np.sqrt(s) - rad, 0.0)
        else:               # box
            s = 0.0
            for j in range(p):
                s = max(s, abs(xbar[b, j]))
            infeas[row, b] = max(s - rad, 0.0)
    if not with_cons:
        return
    b = 0
    while b + 4 <= B:       # consensus distance, four instances' sums side by side
        c0 = c1 = c2 = c3 = 0.0
        for i in range(n):
            for j in range(p):
                d0 = X[b, i, j] - xbar[b, j]
                c0 += d0 * d0
                d1 = X[b + 1, i, j] - xbar[b + 1, j]
                c1 += d1 * d1
                d2 = X[b + 2, i, j] - xbar[b + 2, j]
                c2 += d2 * d2
                d3 = X[b + 3, i, j] - xbar[b + 3, j]
                c3 += d3 * d3
        cons[row, b] = np.sqrt(c0)
        cons[row, b + 1] = np.sqrt(c1)
        cons[row, b + 2] = np.sqrt(c2)
        cons[row, b + 3] = np.sqrt(c3)
        b += 4
    while b < B:
        c0 = 0.0
        for i in range(n):
            for j in range(p):
                d0 = X[b, i, j] - xbar[b, j]
                c0 += d0 * d0
        cons[row, b] = np.sqrt(c0)
        b += 1


def _fedfw_round_streamed(X, xbar, HX, HT, c, r_row, e, lam, refresh, kind, sbar,
                          R, tri, q, rho, scale, radius, gauge, F, cons, infeas, row, with_cons):
    _fedfw_round_c(X, xbar, HX, HT, c, r_row, e, lam, refresh, kind, sbar)
    _stream_metrics_c(R, tri, q, rho, scale, X, xbar, radius, gauge, F, cons, infeas, row, with_cons)


def _fedfw_rounds_streamed(X, xbar, HX, HT, c, r_row, e_col, l_col, i0, count, every, kind, sbar,
                           R, tri, q, rho, scale, radius, gauge, F, cons, infeas, row0, with_cons):
    """Rounds ``i0 + 1 .. i0 + count`` of :func:`_fedfw_round_streamed` in one call (row ``row0 + s`` for round
    ``i0 + 1 + s``; the exact gradient every ``every`` rounds): the same operations, one dispatch."""
    for s in range(count):
        i = i0 + s
        _fedfw_round_c(X, xbar, HX, HT, c, r_row, e_col[i], l_col[i], i % every == 0, kind, sbar)
        _stream_metrics_c(R, tri, q, rho, scale, X, xbar, radius, gauge, F, cons, infeas, row0 + s, with_cons)


def _factored_rounds_streamed(X, xbar, AX, A, bvec, r_row, e_col, l_col, i0, count, every, kind, sbar, scale, g,
                              R, RT, tri, q, rho, fscale, radius, gauge, F, cons, infeas, row0, with_cons, acc):
    """Rounds ``i0 + 1 .. i0 + count`` of :func:`_fedfw_round_factored_streamed` in one call."""
    for s in range(count):
        i = i0 + s
        _fedfw_round_factored_c(X, xbar, AX, A, bvec, r_row, e_col[i], l_col[i], i % every == 0, kind, sbar, scale,
                                g)
        _stream_F_columns_c(RT, q, rho, fscale, xbar, F, row0 + s, acc, tri)
        _stream_metrics_c(R, tri, q, rho, fscale, X, xbar, radius, gauge, F, cons, infeas, row0 + s, with_cons,
                          False)


if AVAILABLE:
    _compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_fedfw_round)
    _fedfw_round_c = _compiled
    _stream_metrics_c = numba.njit(cache=True, fastmath=False, nogil=True)(_stream_metrics)
    _streamed_compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_fedfw_round_streamed)
    _consensus_compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_consensus)
    _ls_record_compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_ls_record)
    _ls_record_lanes_c = numba.njit(cache=True, fastmath=False, nogil=True)(_ls_record_lanes)
    _fedfw_round_factored_c = numba.njit(cache=True, fastmath=False, nogil=True)(_fedfw_round_factored)
    _stream_F_columns_c = numba.njit(cache=True, fastmath=False, nogil=True)(_stream_F_columns)
    _factored_streamed_compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_fedfw_round_factored_streamed)
    _rounds_streamed_c = numba.njit(cache=True, fastmath=False, nogil=True)(_fedfw_rounds_streamed)
    _factored_rounds_streamed_c = numba.njit(cache=True, fastmath=False, nogil=True)(_factored_rounds_streamed)
else:  # pragma: no cover
    _compiled = _consensus_compiled = _ls_record_compiled = _streamed_compiled = _ls_record_lanes_c = None
    _fedfw_round_factored_c = _factored_streamed_compiled = _rounds_streamed_c = _factored_rounds_streamed_c = None


@functools.lru_cache(maxsize=None)
def recorder_lanes_ok() -> bool:
    """Whether :func:`_ls_record_lanes` compiles here and gives :func:`_ls_record`'s values (checked once per
    process on a small random batch of 11 instances: a full block and a partial one); ``False`` keeps the
    least-squares recorder on the scalar kernel."""
    if _ls_record_lanes_c is None:
        return False
    try:
        rng = np.random.default_rng(0)
        B, n, p = 11, 3, 5
        R, q, rho = np.triu(rng.standard_normal((B, p, p))), rng.standard_normal((B, p)), rng.random(B)
        X = rng.standard_normal((B, n, p))
        xb, rad = X.mean(1), rng.random(B)
        a, b = np.empty((3, B)), np.empty((3, B))
        _ls_record_compiled(R, q, rho, 0.5, X, xb, rad, 2, a[0], a[1], a[2], True)
        _ls_record_lanes_c(blocks_of(R, B), blocks_of(q, B), R, q, rho, 0.5, X, xb, rad, 2, b[0], b[1], b[2],
                           aligned_empty((p, LANES)), aligned_empty((1, LANES)))
        return bool(np.array_equal(a, b))
    except Exception:  # noqa: BLE001 - any failure to compile or run: the scalar kernel stays
        return False


def least_squares_recorder(loss, S):
    """A compiled ``default_recorder`` for plain least squares on the l1/l2 balls, box or simplex (the
    same three metrics, one pass), or ``None`` when it does not apply."""
    from fedcheck.problems.losses import LeastSquares
    if _ls_record_compiled is None or type(loss) is not LeastSquares or S.name not in GAUGES or loss.A.ndim != 4 \
            or loss.weights is not None:      # client weights: F = sum_k p_k f_k by numpy
        return None
    R, q, rho = (np.ascontiguousarray(a, dtype=float) for a in loss._stacked_qr())
    B = loss.A.shape[0]
    p = R.shape[-1]
    radius = np.ascontiguousarray(np.broadcast_to(np.asarray(S.radius, dtype=float), (B,)))
    scale, gauge = 1.0 / (2 * loss.m * loss.n), GAUGES[S.name]
    RT = np.ascontiguousarray(np.swapaxes(R, -1, -2)) if R.shape[-1] >= COLUMNS_FROM else None
    tri = RT is not None and upper_triangular(R)
    acc = np.empty(R.shape[-2])
    # F eight instances at a time in vector lanes (the same sums; R and q in blocks of instances, made once)
    lanes = None if RT is not None or not recorder_lanes_ok() else \
        (blocks_of(R, B), blocks_of(q, B), aligned_empty((p, LANES)), aligned_empty((1, LANES)))

    def rec(k, X, xbar):
        if getattr(X, "ndim", 0) != 3 or X.shape[0] != B:
            return None
        if not (type(X) is np.ndarray and type(xbar) is np.ndarray and X.dtype == np.float64
                and xbar.dtype == np.float64 and X.shape[2] == p and xbar.shape == (B, p)
                and X.flags.c_contiguous and xbar.flags.c_contiguous):     # (what an engine's run passes)
            X, xbar = np.ascontiguousarray(X), np.ascontiguousarray(xbar)
            # never read past an array: the kernel reads p coordinates of x and of each of X's rows (any number)
            _expect({"X": X, "x": xbar}, {"X": (B, X.shape[1], p), "x": (B, p)}, "least-squares recorder")
        F, cons, inf = np.empty(B), np.empty(B), np.empty(B)
        if RT is not None:      # large R (factored least squares): F by columns, vectorized, the same bits
            _stream_F_columns_c(RT, q, rho, scale, xbar, F.reshape(1, B), 0, acc, tri)
        if lanes is not None:
            R8, Q8, x8, out8 = lanes
            _ls_record_lanes_c(R8, Q8, R, q, rho, scale, X, xbar, radius, gauge, F, cons, inf, x8, out8)
        else:
            _ls_record_compiled(R, q, rho, scale, X, xbar, radius, gauge, F, cons, inf, RT is None)
        return {"F": F, "consensus": cons, "infeasibility": inf}
    rec.names = ("F", "consensus", "infeasibility")
    rec.data = dict(R=R, q=q, rho=rho, scale=scale, radius=radius, gauge=gauge, B=B)
    return rec


def upper_triangular(R: np.ndarray) -> bool:
    """Every ``R_b`` ``(k_rows, p)`` with ``k_rows <= p`` and exact zeros below the diagonal (the kernels may then
    skip those terms, see :func:`_stream_F_columns`)."""
    k_rows, p = R.shape[-2], R.shape[-1]
    return bool(k_rows <= p and not np.any(np.tril(R, -1)))


class StreamedRound:
    """FedFW's compiled round that also writes the default least-squares recorder's metrics of the new
    iterate into row ``row`` of the stream buffer's columns, bit for bit what the recorder gives: ``F`` and
    ``infeasibility``, and the consensus distance when ``consensus`` (it costs as much as ``F``)."""

    def __init__(self, ls_recorder, consensus: bool = False):
        d = ls_recorder.data
        self.R = R = d["R"]
        self.tri = upper_triangular(R)
        self.q, self.rho, self.scale = d["q"], d["rho"], float(d["scale"])
        self.radius, self.gauge, self.B = d["radius"], int(d["gauge"]), d["B"]
        self.consensus = bool(consensus)
        self.names = ("F", "consensus", "infeasibility") if consensus else ("F", "infeasibility")

    def recorded(self, X, xbar):
        """``recorded(k, streamed)`` for :func:`.core.run_recorded`: the recorder's three metrics of the iterate the
        step has just written, ``F`` the streamed one (the recorder's bits: the stream computes it in the recorder's
        order, ``tests/test_compiled_paths.py``), the consensus and infeasibility by the recorder's kernel
        (:func:`_ls_record` without ``F``) -- the recorder's values without its ``F`` a second time.  The
        infeasibility is the streamed one too (:func:`_stream_metrics` computes it as :func:`_ls_record` does), the
        consensus :func:`_ls_record`'s own kernel (:func:`_consensus`)."""
        B, cons_c = self.B, _consensus_compiled

        def recorded(k, streamed):
            return {"F": streamed["F"], "consensus": cons_c(X, xbar, np.empty(B)),
                    "infeasibility": streamed["infeasibility"]}
        return recorded

    def bind_factored(self, X, xbar, AX, A, bvec, r_row, kind, sbar, scale, e_col, l_col, refresh_every):
        """``step(t, buffer)`` of the factored least-squares round (:func:`_fedfw_round_factored`)."""
        g = np.empty(X.shape[-1])
        _check_factored(X, xbar, AX, A, bvec, r_row, sbar, g)
        _expect({"X": X}, {"X": (self.B, X.shape[1], self.R.shape[-1])}, "factored FedFW round (recorder's data)")
        rnd = _factored_streamed_compiled
        R, tri, q, rho, fscale, radius, gauge, cons = (self.R, self.tri, self.q, self.rho, self.scale,
                                                       self.radius, self.gauge, self.consensus)
        e_l, l_l, kind = [float(v) for v in e_col], [float(v) for v in l_col], int(kind)
        dummy = np.empty((1, 1))
        RT = np.ascontiguousarray(np.swapaxes(R, -1, -2))
        acc = np.empty(R.shape[-2])

        def step(t, buf):
            i = t - 1
            row = buf.slot(t + 1)
            cols = buf.cols
            rnd(X, xbar, AX, A, bvec, r_row, e_l[i], l_l[i], i % refresh_every == 0, kind, sbar, scale, g,
                R, RT, tri, q, rho, fscale, radius, gauge, cols[0], cols[1] if cons else dummy, cols[-1], row, cons,
                acc)
        e_a, l_a = np.array(e_l), np.array(l_l)
        every = int(refresh_every)

        def many(t, count, row0, cols):
            """Rounds ``t .. t + count - 1`` into rows ``row0 ..`` of ``cols`` (one compiled call)."""
            _factored_rounds_streamed_c(X, xbar, AX, A, bvec, r_row, e_a, l_a, t - 1, count, every, kind, sbar,
                                        scale, g, R, RT, tri, q, rho, fscale, radius, gauge, cols[0],
                                        cols[1] if cons else dummy, cols[-1], row0, cons, acc)
        step.names = self.names
        step.many = many
        return step

    def bind(self, X, xbar, HX, HT, c, r_row, kind, sbar, e_col, l_col, refresh_every):
        """``step(t, buffer)``: round ``t`` and the metrics of iterate ``t + 1`` into ``buffer``'s row."""
        _check_round(X, xbar, HX, HT, c, r_row, sbar)
        n = X.shape[1]
        _expect({"X": X}, {"X": (self.B, n, self.R.shape[-1])}, "FedFW round (recorder's data)")
        rnd = _streamed_compiled
        R, tri, q, rho, scale, radius, gauge, cons = (self.R, self.tri, self.q, self.rho, self.scale,
                                                      self.radius, self.gauge, self.consensus)
        e_l, l_l, kind = [float(v) for v in e_col], [float(v) for v in l_col], int(kind)
        dummy = np.empty((1, 1))

        def step(t, buf):
            i = t - 1
            row = buf.slot(t + 1)
            cols = buf.cols
            rnd(X, xbar, HX, HT, c, r_row, e_l[i], l_l[i], i % refresh_every == 0, kind, sbar,
                R, tri, q, rho, scale, radius, gauge, cols[0], cols[1] if cons else dummy, cols[-1], row, cons)
        e_a, l_a = np.array(e_l), np.array(l_l)
        every = int(refresh_every)

        def many(t, count, row0, cols):
            """Rounds ``t .. t + count - 1`` into rows ``row0 ..`` of ``cols`` (one compiled call)."""
            _rounds_streamed_c(X, xbar, HX, HT, c, r_row, e_a, l_a, t - 1, count, every, kind, sbar, R, tri, q, rho,
                               scale, radius, gauge, cols[0], cols[1] if cons else dummy, cols[-1], row0, cons)
        step.names = self.names
        step.many = many
        return step


def consensus_distance(X: np.ndarray, xbar: np.ndarray) -> np.ndarray:
    """``||X_b - xbar_b 1^T||_F`` per instance (compiled when numba is available)."""
    if _consensus_compiled is not None and X.ndim == 3 and X.dtype == np.float64 and xbar.dtype == np.float64:
        _expect({"x": xbar}, {"x": (X.shape[0], X.shape[2])}, "consensus distance")
        return _consensus_compiled(X, xbar, np.empty(X.shape[0]))
    return np.sqrt(((X - xbar[:, None, :]) ** 2).sum((-2, -1)))


def _check_round(X, xbar, HX, HT, c, r_row, sbar) -> None:
    B, n, p = X.shape if getattr(X, "ndim", 0) == 3 else (-1, -1, -1)
    _expect({"X": X, "x": xbar, "HX": HX, "HT": HT, "c": c, "r_row": r_row, "sbar": sbar},
            {"X": (B, n, p), "x": (B, p), "HX": (B, n, p), "HT": (B, n, p, p), "c": (B, n, p), "r_row": (B * n,),
             "sbar": (p,)}, "FedFW round")


def bind_fedfw_round(X, xbar, HX, HT, c, r_row, kind, sbar):
    """``step(e, lam, refresh)``: :func:`fedfw_round` on these arrays (updated in place, so their shapes are checked
    once, here, not every round)."""
    _check_round(X, xbar, HX, HT, c, r_row, sbar)
    kind, rnd = int(kind), _compiled

    def step(e, lam, refresh):
        rnd(X, xbar, HX, HT, c, r_row, float(e), float(lam), bool(refresh), kind, sbar)
    return step


def fedfw_round(X, xbar, HX, HT, c, r_row, e, lam, refresh, kind, sbar):
    """One FedFW round in place (see the module doc); ``HT[b, i, j, :]`` is column ``j`` of ``(1/n) H_i``."""
    _check_round(X, xbar, HX, HT, c, r_row, sbar)
    return _compiled(X, xbar, HX, HT, c, r_row, float(e), float(lam), bool(refresh), int(kind), sbar)


def _check_factored(X, xbar, AX, A, bvec, r_row, sbar, g) -> None:
    B, n, m, p = A.shape if getattr(A, "ndim", 0) == 4 else (-1, -1, -1, -1)
    _expect({"X": X, "x": xbar, "AX": AX, "A": A, "b": bvec, "r_row": r_row, "sbar": sbar, "g": g},
            {"X": (B, n, p), "x": (B, p), "AX": (B, n, m), "A": (B, n, m, p), "b": (B, n, m), "r_row": (B * n,),
             "sbar": (p,), "g": (p,)}, "factored FedFW round")


def fedfw_round_factored(X, xbar, AX, A, bvec, r_row, e, lam, refresh, kind, sbar, scale, g):
    """One FedFW round in place for least squares in factored form (see :func:`_fedfw_round_factored`)."""
    _check_factored(X, xbar, AX, A, bvec, r_row, sbar, g)
    return _fedfw_round_factored_c(X, xbar, AX, A, bvec, r_row, float(e), float(lam), bool(refresh), int(kind), sbar,
                                   float(scale), g)
