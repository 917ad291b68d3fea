"""The composite family's prox of the l1 regularizer, compiled (issue 28, point 2).

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

__all__ = ["prox_of"]


def _soft_rows(Z, t, out):
    """``out[b, i] = sign(Z[b, i]) * maximum(|Z[b, i]| - t[b], 0)`` on ``(B, N)`` rows."""
    B, N = Z.shape
    for b in range(B):
        tb = t[b]
        for i in range(N):
            x = Z[b, i]
            v = abs(x) - tb
            m = v if (v >= 0.0 or v != v) else 0.0
            s = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else (0.0 if x == 0.0 else x))
            out[b, i] = s * m
    return out


_soft_rows_c = numba.njit(cache=True, fastmath=False, nogil=True)(_soft_rows) if AVAILABLE else None


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
        if lam_f is not None:
            t = av * lam_f if av.ndim == 1 else np.full(B, float(av) * lam_f)
        else:
            t = av * lam if av.ndim == 1 else float(av) * lam
        flat = z.reshape(B, -1)
        return _soft_rows_c(flat, t, np.empty(flat.shape)).reshape(z.shape)
    prox.compiled = True
    return prox
