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

from fedcheck.problems.compiled import AVAILABLE, numba

__all__ = ["DualStep", "prox_of"]


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
