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

import os

import numpy as np

try:  # pragma: no cover - exercised when numba is installed
    import numba
    AVAILABLE = os.environ.get("FEDCHECK_JIT", "1") not in ("0", "off", "false")
except Exception:  # pragma: no cover
    numba = None
    AVAILABLE = False

__all__ = ["AVAILABLE", "fedfw_round", "consensus_distance", "least_squares_recorder"]

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


def _ls_record(R, q, rho, scale, X, xbar, radius, gauge, F, cons, infeas):
    """F(xbar) = (||R xbar - q||^2 + rho) * scale, the consensus distance and the set's gauge at xbar."""
    B, n, p = X.shape
    k_rows = R.shape[1]
    for b in range(B):
        acc = 0.0
        for k in range(k_rows):
            rk = 0.0
            for j in range(p):
                rk += R[b, k, j] * xbar[b, j]
            rk -= q[b, k]
            acc += rk * rk
        F[b] = (acc + rho[b]) * scale
        acc = 0.0
        for i in range(n):
            for j in range(p):
                d = X[b, i, j] - xbar[b, j]
                acc += d * d
        cons[b] = np.sqrt(acc)
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


if AVAILABLE:
    _compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_fedfw_round)
    _consensus_compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_consensus)
    _ls_record_compiled = numba.njit(cache=True, fastmath=False, nogil=True)(_ls_record)
else:  # pragma: no cover
    _compiled = _consensus_compiled = _ls_record_compiled = None


def least_squares_recorder(loss, S):
    """A compiled ``default_recorder`` for plain least squares on the l1/l2 balls, box or simplex (the
    same three metrics, one pass), or ``None`` when it does not apply."""
    from fedcheck.problems.losses import LeastSquares
    if _ls_record_compiled is None or type(loss) is not LeastSquares or S.name not in GAUGES or loss.A.ndim != 4:
        return None
    R, q, rho = (np.ascontiguousarray(a, dtype=float) for a in loss._stacked_qr())
    B = loss.A.shape[0]
    radius = np.ascontiguousarray(np.broadcast_to(np.asarray(S.radius, dtype=float), (B,)))
    scale, gauge = 1.0 / (2 * loss.m * loss.n), GAUGES[S.name]

    def rec(k, X, xbar):
        if X.ndim != 3 or X.shape[0] != B:
            return None
        F, cons, inf = np.empty(B), np.empty(B), np.empty(B)
        _ls_record_compiled(R, q, rho, scale, np.ascontiguousarray(X), np.ascontiguousarray(xbar), radius, gauge,
                            F, cons, inf)
        return {"F": F, "consensus": cons, "infeasibility": inf}
    return rec


def consensus_distance(X: np.ndarray, xbar: np.ndarray) -> np.ndarray:
    """``||X_b - xbar_b 1^T||_F`` per instance (compiled when numba is available)."""
    if _consensus_compiled is not None and X.ndim == 3 and X.dtype == np.float64 and xbar.dtype == np.float64:
        return _consensus_compiled(X, xbar, np.empty(X.shape[0]))
    return np.sqrt(((X - xbar[:, None, :]) ** 2).sum((-2, -1)))


def fedfw_round(X, xbar, HX, HT, c, r_row, e, lam, refresh, kind, sbar):
    """One FedFW round in place (see the module doc); ``HT[b, i, j, :]`` is column ``j`` of ``(1/n) H_i``."""
    return _compiled(X, xbar, HX, HT, c, r_row, float(e), float(lam), bool(refresh), int(kind), sbar)
