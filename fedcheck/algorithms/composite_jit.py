"""The composite family's prox of the l1 regularizer, compiled.

FedDualAvg and FedMiD (:mod:`.composite`) call ``prox_{a psi}`` eleven times per round of five local steps on
arrays of a few hundred numbers; ``L1.prox`` is soft-thresholding, ``sign(z) * maximum(|z| - a lam mask, 0)``,
four numpy passes and the broadcasting of ``a lam`` (~5 us a call).  :func:`prox_of` returns, for the library's
:class:`~fedcheck.problems.regularizers.L1` without a mask, one compiled pass with numpy's elementwise
operations (``sign``: +1, -1, 0 for a zero, NaN for NaN; ``maximum``: NaN propagates): the same bits
(``tests/test_compiled_paths.py``); anything else (another regularizer, a mask, other shapes) is the
regularizer's own ``prox``.  ``FEDCHECK_JIT=0`` (or no numba) runs numpy.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fedcheck.problems.compiled import AVAILABLE, lane_pairwise_sum, numba

__all__ = ["CompositeRounds", "DualStep", "prox_of"]


def _soft(x, t):
    """``sign(x) * maximum(|x| - t, 0)`` with numpy's elementwise rules (``sign``: +1, -1, 0 for a zero, NaN for NaN;
    ``maximum``: NaN propagates)."""
    v = abs(x) - t
    m = v if (v >= 0.0 or v != v) else 0.0
    s = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else (0.0 if x == 0.0 else x))
    return s * m


def _soft_rows(Z, t, out):
    """``out[b, i] = sign(Z[b, i]) * maximum(|Z[b, i]| - t[b], 0)`` on ``(B, N)`` rows."""
    B, N = Z.shape
    for b in range(B):
        tb = t[b]
        for i in range(N):
            out[b, i] = _soft(Z[b, i], tb)
    return out


if AVAILABLE:
    _soft = numba.njit(cache=True, fastmath=False, nogil=True, inline="always")(_soft)
    _soft_rows_c = numba.njit(cache=True, fastmath=False, nogil=True)(_soft_rows)
else:  # pragma: no cover
    _soft_rows_c = None


def prox_of(reg) -> Callable[[np.ndarray, object], np.ndarray]:
    """``prox(z, a)`` of ``reg`` (``z`` ``(B, ...)``, ``a`` a scalar or ``(B,)``): compiled for the plain l1
    regularizer with a scalar or ``(B,)`` ``lam``, else ``reg.prox``."""
    from fedcheck.problems.regularizers import L1
    if _soft_rows_c is None or type(reg) is not L1 or reg.mask is not None or type(reg).prox is not L1.prox:
        return reg.prox
    lam = np.asarray(reg.lam, dtype=float)
    if lam.ndim > 1:
        return reg.prox
    slow = reg.prox
    lam_f = float(lam) if lam.ndim == 0 else None

    def prox(z, a):
        if type(z) is not np.ndarray or z.dtype != np.float64 or z.ndim < 2 or not z.flags.c_contiguous:
            return slow(z, a)
        B = z.shape[0]
        av = a if type(a) is np.ndarray else np.asarray(a, dtype=float)
        if av.dtype != np.float64 or av.ndim > 1 or (av.ndim == 1 and av.shape[0] != B) \
                or (lam_f is None and lam.shape[0] != B):
            return slow(z, a)
        # the threshold as L1.prox forms it: a lam per instance (times the mask factor 1.0: x * 1.0 is x)
        t = threshold(av, B)
        flat = z.reshape(B, -1)
        return _soft_rows_c(flat, t, np.empty(flat.shape)).reshape(z.shape)

    def threshold(av, B):
        """The per-instance threshold ``a lam`` as ``L1.prox`` forms it (times the mask factor 1.0: x * 1.0 is x)."""
        if lam_f is not None:
            return av * lam_f if av.ndim == 1 else np.full(B, float(av) * lam_f)
        return av * lam if av.ndim == 1 else float(av) * lam
    prox.compiled = True
    prox.threshold = threshold
    return prox


# ----------------------------------------------------------------------------------------------
# FedDualAvg's local step after the oracle (:func:`.composite._dual_family` with the (4.4) average and the
# discrepancy, Euclidean geometry, the compiled l1 prox): numpy's eight passes on (B, S, d) arrays in one.
def _dual_step(Z, g, ec, zbar, thr, Zn, zbar_n, hat_sum, disc, diff, dev):
    """One local step's bookkeeping, for every instance: ``disc += ((Z - zbar)**2).sum(-1).sum(1)``, ``Zn = Z -
    ec g``, ``zbar_n = Zn.mean(1)`` (clients in order, then ``/ S``), ``hat_sum += soft(zbar_n, thr)`` -- numpy's
    operations in numpy's orders (the sums pairwise: ``kernels.pairwise_sq``, ``fedmls_jit.pairwise_sum``; ``diff``
    ``(d,)``, ``dev`` ``(S,)`` scratch)."""
    B, S, d = Z.shape
    for b in range(B):
        for i in range(S):
            for k in range(d):
                diff[k] = Z[b, i, k] - zbar[b, k]
            dev[i] = pairwise_sq(diff, d)
        disc[b] = disc[b] + pairwise_sum(dev, 0, S)
        e = ec[b]
        for i in range(S):
            for k in range(d):
                Zn[b, i, k] = Z[b, i, k] - e * g[b, i, k]
        for k in range(d):
            zbar_n[b, k] = Zn[b, 0, k]
        for i in range(1, S):
            for k in range(d):
                zbar_n[b, k] += Zn[b, i, k]
        t = thr[b]
        for k in range(d):
            zbar_n[b, k] /= S
            hat_sum[b, k] = hat_sum[b, k] + _soft(zbar_n[b, k], t)


if AVAILABLE:
    from fedcheck.algorithms.fedmls_jit import pairwise_sum
    from fedcheck.algorithms.kernels import pairwise_sq
    _dual_step_c = numba.njit(cache=True, fastmath=False, nogil=True)(_dual_step)
else:  # pragma: no cover
    _dual_step_c = None


class DualStep:
    """:func:`_dual_step` for one run of ``B`` instances, ``S`` clients, dimension ``d`` (scratch made once), or
    ``None`` from :meth:`of` when it does not apply: numba off, a prox that is not the compiled l1's, ``d`` outside
    ``[2, 128]`` (the clients' mean is numpy's order from two coordinates on; the squares' pairwise sum is kept to
    one block of numpy's)."""

    def __init__(self, prox, B, S, d):
        self.prox, self.B, self.S, self.d = prox, B, S, d
        self.diff, self.dev = np.empty(d), np.empty(S)

    @classmethod
    def of(cls, prox, B: int, S: int, d: int):
        if _dual_step_c is None or not getattr(prox, "compiled", False) or S < 1 or not 2 <= d <= 128:
            return None
        return cls(prox, B, S, d)

    def __call__(self, Z, g, ec, zbar, a_hat, hat_sum, disc):
        """``(Zn, zbar_n)`` after updating ``hat_sum`` and ``disc`` in place, or ``None`` (arrays not as expected:
        the caller's numpy runs; nothing was changed)."""
        B, S, d = self.B, self.S, self.d
        for a, shape in ((Z, (B, S, d)), (g, (B, S, d)), (zbar, (B, d)), (hat_sum, (B, d)), (disc, (B,)), (ec, (B,))):
            if type(a) is not np.ndarray or a.dtype != np.float64 or a.shape != shape or not a.flags.c_contiguous:
                return None
        av = a_hat if type(a_hat) is np.ndarray else np.asarray(a_hat, dtype=float)
        thr = self.prox.threshold(av, B)
        if type(thr) is not np.ndarray or thr.shape != (B,) or thr.dtype != np.float64:
            return None
        Zn, zbar_n = np.empty((B, S, d)), np.empty((B, d))
        _dual_step_c(Z, g, ec, zbar, np.ascontiguousarray(thr), Zn, zbar_n, hat_sum, disc, self.diff, self.dev)
        return Zn, zbar_n


# ----------------------------------------------------------------------------------------------
# Whole rounds of FedDualAvg (with the (4.4) average and the discrepancy) and FedMiD (both proxes) on quadratic
# clients with a shared Hessian and additive noise, every client taking part, the l1 prox: a block of rounds in one
# compiled call, the normals of the block drawn first (the same numbers as the step-by-step draws: numpy's generator
# gives one call's numbers in the order of consecutive calls).  Every operation is the numpy path's in its order:
# the gradient ``(sum_j W_j QT_ji + c_i) + xi_i sd_i`` (j in order), the clients' mean (clients in order, then
# ``/ S``), the squares' pairwise sums of the discrepancy, ``Z - ec g``, the thresholds ``a lam`` formed as numpy
# forms them, so the iterates are the same bits (tests/test_compiled_paths.py).
def _noisy_grad_row(W, QT, c, xi, sd, b, s, d, out):
    """``out[:] = (W[s] @ QT[b] + c[b, s]) + xi[b, s] * sd[b, s]`` with the sums over ``j`` in order (the i loop
    inside: each sum keeps its order, the loop over ``i`` vectorizes)."""
    for i in range(d):
        out[i] = 0.0
    for j in range(d):
        wj = W[s, j]
        for i in range(d):
            out[i] += wj * QT[b, j, i]
    for i in range(d):
        out[i] = (out[i] + c[b, s, i]) + xi[b, s, i] * sd[b, s, i]


def _row_mean(Z, S, d, out):
    """``out[:] = Z[:S].mean(0)``: the clients in order, then ``/ S`` (numpy's order for ``clients_mean``)."""
    for k in range(d):
        out[k] = Z[0, k]
    for i in range(1, S):
        for k in range(d):
            out[k] += Z[i, k]
    for k in range(d):
        out[k] /= S


def _composite_rounds(dual, r0, nr, K, z, QT, c, sd, xi, ec, es, lam, wsum, hat_sum, disc,
                      out_w, out_wsum, out_hat, out_disc, Z, Zn, g, zbar, diff, dev):
    """Rounds ``r0 .. r0 + nr - 1`` for every instance (``dual``: FedDualAvg, ``z`` the dual server state; else
    FedMiD, ``z`` the server point), ``xi`` ``(nr K, B, S, d)`` the unscaled normals of the block; ``wsum``,
    ``hat_sum``, ``disc`` updated in place; per round ``j`` of the block ``out_w[:, j]`` = ``w_{r+1}``,
    ``out_wsum[:, j]`` the running sum of the ``w``, ``out_hat[:, j]`` of the virtual iterates, ``out_disc[:, j]``
    the discrepancy."""
    B, S, d = c.shape
    for b in range(B):
        e, s_, lb = ec[b], es[b], lam[b]
        for jr in range(nr):
            r = r0 + jr
            for i in range(S):
                for k in range(d):
                    Z[i, k] = z[b, k]
            if dual:                                    # clients_mean(Z) of the round's first step
                _row_mean_c(Z, S, d, zbar)
            base = s_ * e * r * K
            for t in range(K):
                x = xi[jr * K + t]
                if dual:
                    a = base + e * t
                    thr = a * lb
                    for i in range(S):                  # W = prox(Z, a), then the noisy gradient at W
                        for k in range(d):
                            Zn[i, k] = _soft(Z[i, k], thr)
                    for i in range(S):
                        _noisy_grad_row_c(Zn, QT, c, x, sd, b, i, d, g[i])
                    for i in range(S):                  # the discrepancy at Z
                        for k in range(d):
                            diff[k] = Z[i, k] - zbar[k]
                        dev[i] = pairwise_sq(diff, d)
                    disc[b] = disc[b] + pairwise_sum(dev, 0, S)
                    for i in range(S):
                        for k in range(d):
                            Z[i, k] = Z[i, k] - e * g[i, k]
                    _row_mean_c(Z, S, d, zbar)
                    th = (a + e) * lb
                    for k in range(d):
                        hat_sum[b, k] = hat_sum[b, k] + _soft(zbar[k], th)
                else:
                    for i in range(S):
                        _noisy_grad_row_c(Z, QT, c, x, sd, b, i, d, g[i])
                    th = e * lb
                    for i in range(S):
                        for k in range(d):
                            Z[i, k] = _soft(Z[i, k] - e * g[i, k], th)
            if not dual:
                _row_mean_c(Z, S, d, zbar)
            if dual:                                     # z + es (zbar - z); w = prox(z, es ec (r+1) K)
                th = s_ * e * (r + 1) * K * lb
                for k in range(d):
                    z[b, k] = z[b, k] + s_ * (zbar[k] - z[b, k])
                    out_w[b, jr, k] = _soft(z[b, k], th)
            else:                                        # x + es (mean - x); x = prox(x, es ec K)
                th = s_ * e * K * lb
                for k in range(d):
                    z[b, k] = _soft(z[b, k] + s_ * (zbar[k] - z[b, k]), th)
                    out_w[b, jr, k] = z[b, k]
            for k in range(d):
                wsum[b, k] += out_w[b, jr, k]
                out_wsum[b, jr, k] = wsum[b, k]
                out_hat[b, jr, k] = hat_sum[b, k]
            out_disc[b, jr] = disc[b]


if AVAILABLE:
    _noisy_grad_row_c = numba.njit(cache=True, fastmath=False, nogil=True, inline="always")(_noisy_grad_row)
    _row_mean_c = numba.njit(cache=True, fastmath=False, nogil=True, inline="always")(_row_mean)
    _composite_rounds_c = numba.njit(cache=True, fastmath=False, nogil=True)(_composite_rounds)
else:  # pragma: no cover
    _composite_rounds_c = None


class CompositeRounds:
    """Every round of one run compiled, or ``None`` from :meth:`of` when it does not apply: numba off; not the
    library's :class:`~fedcheck.problems.composite.QuadraticClients` with a shared Hessian and Gaussian or sphere
    noise (its own ``grad``, ``start_round``, ``F`` and ``Phi``); a prox that is not the compiled l1's; ``d`` outside
    ``[2, 128]``.  The caller has checked the rest (every client, no hook, no stability track, the Euclidean
    discrepancy).

    Up to 128 clients (:attr:`lanes`) the rounds run with the instance axis last (:func:`_composite_rounds_lanes`)
    and record what the run records at its grid inside the compiled call (:meth:`run`): the objective ``Phi`` of
    the recorded points, or the points themselves for a recorder of the caller's.  The normals are drawn per block of
    :attr:`BLOCK_NUMBERS` numbers into one buffer, cache-sized so that the kernel reads them from the core's L2
    cache.  More clients: :meth:`rounds`, the per-instance kernel, the points of every round returned."""

    BLOCK_NUMBERS = 2 ** 17      # normals drawn per block of rounds (1 MB: in the 2 MB L2 cache with the kernel's data)

    def __init__(self, problem, prox, fused):
        self.p, self.prox = problem, prox
        _, self.c, self.sd = fused
        B, S, d = problem.B, problem.M, problem.d
        self.lam = np.ascontiguousarray(np.broadcast_to(np.asarray(problem.reg.lam, dtype=float), (B,)))
        self.scratch = (np.empty((S, d)), np.empty((S, d)), np.empty((S, d)), np.empty(d), np.empty(d), np.empty(S))
        self.lanes = S <= 128 and _composite_rounds_lanes_c is not None     # the instance axis last (vectorized)
        self._rep = {}

    @classmethod
    def of(cls, problem, prox):
        from fedcheck.problems.composite import QuadraticClients
        P = QuadraticClients
        if (_composite_rounds_c is None or type(problem) is not P or not getattr(prox, "compiled", False)
                or problem.noise not in ("gaussian", "sphere") or not problem.shared or problem.Q.dtype != np.float64
                or not 2 <= problem.d <= 128 or problem.M < 1 or np.asarray(problem.reg.lam).ndim > 1):
            return None
        fused = problem._fused_inputs((problem.B, problem.M, problem.d))
        if fused is None:
            return None
        return cls(problem, prox, fused)

    def _blocks(self, R, rng):
        """``(r0, nr, xi)`` per block of rounds, ``xi`` ``(nr K, B, S, d)`` the block's unscaled normals (Gaussian:
        drawn into one buffer reused by every block; the numbers of one call of the shape's size)."""
        p = self.p
        B, S, d, K = p.B, p.M, p.d, p.K
        nb = int(min(R, max(1, self.BLOCK_NUMBERS // max(K * B * S * d, 1))))
        buf = np.empty((nb * K, B, S, d)) if p.noise == "gaussian" else None
        r0 = 0
        while r0 < R:
            nr = min(R - r0, nb)
            if buf is not None:
                xi = buf[:nr * K]
                rng.standard_normal(out=xi)
            else:
                xi = p._unscaled_noise((nr * K, B, S, d), rng)
            yield r0, nr, xi
            r0 += nr

    def run(self, dual, R, z, ec, es, wsum, hat_sum, disc, rng, want, phi):
        """Rounds ``0 .. R-1`` with the instance axis last (:attr:`lanes`); ``z`` and the sums updated in place.
        Returns ``(w, rec, pts)``: ``w`` the last server point ``(B, d)``; at the rounds ``r >= 1`` with
        ``want[r]``, in order, ``rec`` ``(4, n, B)``: ``Phi`` of ``w``, of ``w_avg``, of ``w_hat`` (``phi``; FedDualAvg
        only) and the discrepancy (FedDualAvg); ``pts`` ``(3, n, d, B)``: ``w``, ``w_avg``, ``w_hat`` (not
        ``phi``)."""
        p = self.p
        B, S, d, K = p.B, p.M, p.d, p.K
        ec, es = np.ascontiguousarray(ec, dtype=float), np.ascontiguousarray(es, dtype=float)
        idx = np.flatnonzero(want[1:R + 1]) + 1
        slot = np.full(R + 1, -1, dtype=np.int64)
        slot[idx] = np.arange(idx.size)
        n = idx.size
        rec = np.empty((4, n, B))
        pts = np.empty((0, 0, d, B)) if phi else np.empty((3, n, d, B))
        T = _last
        lanes = p._fused.get("lanes")           # the problem's arrays with the instances last, once per problem
        if lanes is None:
            lanes = p._fused["lanes"] = (T(p._QT), T(self.c), T(self.sd), T(p.Qbar.swapaxes(-1, -2)), T(p.cbar),
                                         np.ascontiguousarray(p.ebar, dtype=float))
        QTt, ct, sdt, Qbt, cbt, ebar = lanes
        zt, wst, hst = T(z), T(wsum), T(hat_sum)
        w = np.empty((d, B))
        scratch = (np.empty((S, d, B)), np.empty((S, d, B)), np.empty((S, d, B)), np.empty((d, B)),
                   np.empty((d, B)), np.empty((S, B)), np.empty((8, B)), np.empty(B), np.empty(B), np.empty(B),
                   np.empty((3, d, B)), np.empty(B), np.empty((3, d, B)))
        for r0, nr, xi in self._blocks(R, rng):
            _composite_rounds_lanes_c(dual, phi, r0, nr, K, zt, QTt, ct, sdt, xi, ec, es, self.lam, wst, hst, disc,
                                      slot, Qbt, cbt, ebar, rec, pts, w, *scratch)
        z[...], wsum[...], hat_sum[...] = zt.T, wst.T, hst.T
        return np.ascontiguousarray(w.T), rec, pts

    def rounds(self, dual, R, z, ec, es, wsum, hat_sum, disc, rng):
        """The per-instance kernel (more than 128 clients): yields ``(r0, nr, w, wsum, hat_sum, disc)`` per block
        of rounds (arrays ``(B, nr, ...)``), ``z`` and the sums updated in place."""
        p = self.p
        B, d = p.B, p.d
        ec, es = np.ascontiguousarray(ec, dtype=float), np.ascontiguousarray(es, dtype=float)
        for r0, nr, xi in self._blocks(R, rng):
            ow, ows, oh, od = np.empty((B, nr, d)), np.empty((B, nr, d)), np.empty((B, nr, d)), np.empty((B, nr))
            _composite_rounds_c(dual, r0, nr, p.K, z, p._QT, self.c, self.sd, xi, ec, es, self.lam, wsum, hat_sum,
                                disc, ow, ows, oh, od, *self.scratch)
            yield r0, nr, ow, ows, oh, od

    def Phi(self, W):
        """``problem.Phi`` of the points ``W`` ``(B, nr, d)`` (row ``[b, j]`` with instance ``b``'s data): ``(B, nr)``,
        the bits of ``Phi(W[:, j])`` (the compiled ``F`` row by row, the regularizer's value)."""
        from fedcheck.problems.compiled import quad_value
        p = self.p
        B, nr, d = W.shape
        rep = self._rep.get(nr)
        if rep is None:
            rep = self._rep[nr] = tuple(np.ascontiguousarray(np.repeat(a, nr, axis=0)) for a in (p.Qbar, p.cbar, p.ebar))
        W = np.ascontiguousarray(W)     # rows contiguous, as the step-by-step path's points (numpy's sum order)
        F = quad_value(W.reshape(B * nr, d), *rep)
        if F is None:       # pragma: no cover - the arrays are float64 and contiguous
            return np.stack([p.Phi(W[:, j]) for j in range(nr)], 1)
        return F.reshape(B, nr) + p.reg.value(W)


def _last(a):
    """``a`` with its first (instance) axis moved last, C-contiguous."""
    return np.ascontiguousarray(a.transpose(tuple(range(1, a.ndim)) + (0,)))


# The same rounds with the instance axis last (every array ``(..., B)``): each operation runs over all instances at
# once, so the loops over ``b`` vectorize; each instance's numbers see the same operations in the same order.
def _lane_mean(Z, S, d, out):
    """``out[k, b] = Z[:, k, b].mean()``: the clients in order, then ``/ S`` (numpy's ``mean(1)`` for ``d >= 2``)."""
    B = out.shape[1]
    for k in range(d):
        for b in range(B):
            out[k, b] = Z[0, k, b]
    for i in range(1, S):
        for k in range(d):
            for b in range(B):
                out[k, b] += Z[i, k, b]
    for k in range(d):
        for b in range(B):
            out[k, b] /= S


def _wq(W, QTt, i, ii, j, b):
    """``W[i, j, b] * QT[b][j, ii]``, one term of the gradient's sum."""
    return W[i, j, b] * QTt[j, ii, b]


def _lane_wq(W, QTt, S, d, g):
    """``g[i, ii, b] = sum_j W[i, j, b] QTt[j, ii, b]`` for ``i < S``, the sum over ``j`` in order from 0.0.  Up to
    eight coordinates it is written out (one pass over the instances per output, the partial sums in registers);
    from nine on, one pass per ``j``."""
    B = g.shape[2]
    for i in range(S):
        if d > 8:
            for ii in range(d):
                for b in range(B):
                    g[i, ii, b] = 0.0
            for j in range(d):
                for ii in range(d):
                    for b in range(B):
                        g[i, ii, b] += _wq(W, QTt, i, ii, j, b)
            continue
        for ii in range(d):
            if d == 2:
                for b in range(B):
                    g[i, ii, b] = (0.0 + _wq(W, QTt, i, ii, 0, b)) + _wq(W, QTt, i, ii, 1, b)
            elif d == 3:
                for b in range(B):
                    g[i, ii, b] = ((0.0 + _wq(W, QTt, i, ii, 0, b)) + _wq(W, QTt, i, ii, 1, b)) + _wq(W, QTt, i, ii, 2, b)
            elif d == 4:
                for b in range(B):
                    g[i, ii, b] = (((0.0 + _wq(W, QTt, i, ii, 0, b)) + _wq(W, QTt, i, ii, 1, b))
                                   + _wq(W, QTt, i, ii, 2, b)) + _wq(W, QTt, i, ii, 3, b)
            elif d == 5:
                for b in range(B):
                    g[i, ii, b] = ((((0.0 + _wq(W, QTt, i, ii, 0, b)) + _wq(W, QTt, i, ii, 1, b))
                                    + _wq(W, QTt, i, ii, 2, b)) + _wq(W, QTt, i, ii, 3, b)) + _wq(W, QTt, i, ii, 4, b)
            elif d == 6:
                for b in range(B):
                    g[i, ii, b] = (((((0.0 + _wq(W, QTt, i, ii, 0, b)) + _wq(W, QTt, i, ii, 1, b))
                                     + _wq(W, QTt, i, ii, 2, b)) + _wq(W, QTt, i, ii, 3, b))
                                   + _wq(W, QTt, i, ii, 4, b)) + _wq(W, QTt, i, ii, 5, b)
            elif d == 7:
                for b in range(B):
                    g[i, ii, b] = ((((((0.0 + _wq(W, QTt, i, ii, 0, b)) + _wq(W, QTt, i, ii, 1, b))
                                      + _wq(W, QTt, i, ii, 2, b)) + _wq(W, QTt, i, ii, 3, b))
                                    + _wq(W, QTt, i, ii, 4, b)) + _wq(W, QTt, i, ii, 5, b)) + _wq(W, QTt, i, ii, 6, b)
            else:
                for b in range(B):
                    g[i, ii, b] = (((((((0.0 + _wq(W, QTt, i, ii, 0, b)) + _wq(W, QTt, i, ii, 1, b))
                                       + _wq(W, QTt, i, ii, 2, b)) + _wq(W, QTt, i, ii, 3, b))
                                     + _wq(W, QTt, i, ii, 4, b)) + _wq(W, QTt, i, ii, 5, b))
                                   + _wq(W, QTt, i, ii, 6, b)) + _wq(W, QTt, i, ii, 7, b)


def _lane_grad(W, QTt, ct, sdt, x, S, d, g):
    """``g[i, :, b] = (W[i, :, b] @ QT[b] + c[b, i]) + xi[b, i] * sd[b, i]`` (sums over ``j`` in order, from 0.0:
    the compiled ``quad_noisy_grad``'s order)."""
    B = g.shape[2]
    _lane_wq_c(W, QTt, S, d, g)
    for i in range(S):
        for ii in range(d):
            for b in range(B):
                g[i, ii, b] = (g[i, ii, b] + ct[i, ii, b]) + x[b, i, ii] * sdt[i, ii, b]


def _lane_phi(V, m, QbT, cbt, ebar, lam, rec, s, sq, r8, tmp, acc, quad):
    """``rec[q, s, b] = Phi(V[q, :, b])`` for ``q < m``: ``(0.5 v^T Qbar v + cbar^T v) + ebar`` (the compiled
    ``quad_value``'s sums in index order, ``QbT[j, i, b] = Qbar[b, i, j]``) ``+ lam sum |v|`` (numpy's pairwise sum)
    for every instance; ``V`` ``(3, d, B)``, ``acc`` ``(3, d, B)`` scratch."""
    d, B = V.shape[1], V.shape[2]
    _lane_wq_c(V, QbT, m, d, acc)                # acc[q, i] = sum_j Qbar[i, j] V[q, j]
    for q in range(m):
        for b in range(B):
            quad[b] = 0.0
        for i in range(d):
            for b in range(B):
                quad[b] += V[q, i, b] * acc[q, i, b]
        for b in range(B):
            tmp[b] = 0.0
        for i in range(d):
            for b in range(B):
                tmp[b] += V[q, i, b] * cbt[i, b]
        for k in range(d):
            for b in range(B):
                sq[k, b] = abs(V[q, k, b])
        for b in range(B):
            quad[b] = (0.5 * quad[b] + tmp[b]) + ebar[b]
        lane_pairwise_sum(sq, d, tmp, r8)
        for b in range(B):
            rec[q, s, b] = quad[b] + lam[b] * tmp[b]


def _lane_record(dual, phi, n, K, w, wsum, hat_sum, disc, s, lam, Qbt, cbt, ebar, rec, pts, P, sq, r8, tmp, acc,
                 quad):
    """What round ``n`` records in slot ``s``: the points ``w``, ``wsum / n`` and (FedDualAvg) ``hat_sum / (K n)``
    into ``pts[:, s]``, or their ``Phi`` into ``rec[:, s]`` (``phi``); FedDualAvg's discrepancy into ``rec[3, s]``."""
    d, B = w.shape
    m = 3 if dual else 2
    for k in range(d):
        for b in range(B):
            P[0, k, b] = w[k, b]
            P[1, k, b] = wsum[k, b] / n
    if dual:
        for k in range(d):
            for b in range(B):
                P[2, k, b] = hat_sum[k, b] / (K * n)
        for b in range(B):
            rec[3, s, b] = disc[b]
    if phi:
        _lane_phi_c(P, m, Qbt, cbt, ebar, lam, rec, s, sq, r8, tmp, acc, quad)
    else:
        for q in range(m):
            for k in range(d):
                for b in range(B):
                    pts[q, s, k, b] = P[q, k, b]


def _composite_rounds_lanes(dual, phi, r0, nr, K, z, QTt, ct, sdt, xi, ec, es, lam, wsum, hat_sum, disc, slot, Qbt,
                            cbt, ebar, rec, pts, w, Z, W, g, zbar, sq, dev, r8, a, thr, tmp, acc, quad, P):
    """:func:`_composite_rounds` with the instance axis last: ``z``, ``wsum``, ``hat_sum`` ``(d, B)``; ``QTt``
    ``(d, d, B)``; ``ct``, ``sdt`` ``(S, d, B)``; ``xi`` ``(nr K, B, S, d)`` as drawn; ``w`` ``(d, B)`` the server
    point after each round; round ``r + 1`` recorded into slot ``slot[r + 1]`` (:func:`_lane_record`) unless it is
    negative (``Qbt``, ``cbt``, ``ebar``: ``Qbar``, ``cbar``, ``ebar`` with the instances last)."""
    S, d, B = ct.shape
    for jr in range(nr):
        r = r0 + jr
        for i in range(S):
            for k in range(d):
                for b in range(B):
                    Z[i, k, b] = z[k, b]
        if dual:
            _lane_mean_c(Z, S, d, zbar)
        for t in range(K):
            x = xi[jr * K + t]
            if dual:
                for b in range(B):
                    a[b] = es[b] * ec[b] * r * K + ec[b] * t
                    thr[b] = a[b] * lam[b]
                for i in range(S):
                    for k in range(d):
                        for b in range(B):
                            W[i, k, b] = _soft(Z[i, k, b], thr[b])
                _lane_grad_c(W, QTt, ct, sdt, x, S, d, g)
                for i in range(S):                      # the discrepancy at Z
                    for k in range(d):
                        for b in range(B):
                            v = Z[i, k, b] - zbar[k, b]
                            sq[k, b] = v * v
                    lane_pairwise_sum(sq, d, tmp, r8)
                    for b in range(B):
                        dev[i, b] = tmp[b]
                lane_pairwise_sum(dev, S, tmp, r8)
                for b in range(B):
                    disc[b] = disc[b] + tmp[b]
                for i in range(S):
                    for k in range(d):
                        for b in range(B):
                            Z[i, k, b] = Z[i, k, b] - ec[b] * g[i, k, b]
                _lane_mean_c(Z, S, d, zbar)
                for b in range(B):
                    thr[b] = (a[b] + ec[b]) * lam[b]
                for k in range(d):
                    for b in range(B):
                        hat_sum[k, b] = hat_sum[k, b] + _soft(zbar[k, b], thr[b])
            else:
                _lane_grad_c(Z, QTt, ct, sdt, x, S, d, g)
                for b in range(B):
                    thr[b] = ec[b] * lam[b]
                for i in range(S):
                    for k in range(d):
                        for b in range(B):
                            Z[i, k, b] = _soft(Z[i, k, b] - ec[b] * g[i, k, b], thr[b])
        if not dual:
            _lane_mean_c(Z, S, d, zbar)
        if dual:
            for b in range(B):
                thr[b] = es[b] * ec[b] * (r + 1) * K * lam[b]
            for k in range(d):
                for b in range(B):
                    z[k, b] = z[k, b] + es[b] * (zbar[k, b] - z[k, b])
                    w[k, b] = _soft(z[k, b], thr[b])
        else:
            for b in range(B):
                thr[b] = es[b] * ec[b] * K * lam[b]
            for k in range(d):
                for b in range(B):
                    z[k, b] = _soft(z[k, b] + es[b] * (zbar[k, b] - z[k, b]), thr[b])
                    w[k, b] = z[k, b]
        for k in range(d):
            for b in range(B):
                wsum[k, b] += w[k, b]
        s = slot[r + 1]
        if s >= 0:
            _lane_record_c(dual, phi, r + 1, K, w, wsum, hat_sum, disc, s, lam, Qbt, cbt, ebar, rec, pts, P, sq, r8,
                           tmp, acc, quad)


if AVAILABLE:
    # the helpers allocate nothing: compiled without reference counting (a call from the kernel then costs no atomic
    # operation on its array arguments); numpy's error model (no check of a division by zero in the loops)
    _lanes = dict(cache=True, fastmath=False, nogil=True, error_model="numpy")
    _wq = numba.njit(inline="always", **_lanes)(_wq)
    _lane_mean_c, _lane_wq_c, _lane_grad_c, _lane_phi_c, _lane_record_c = (
        numba.njit(_nrt=False, **_lanes)(f) for f in (_lane_mean, _lane_wq, _lane_grad, _lane_phi, _lane_record))
    _composite_rounds_lanes_c = numba.njit(**_lanes)(_composite_rounds_lanes)
else:  # pragma: no cover
    _composite_rounds_lanes_c = None
