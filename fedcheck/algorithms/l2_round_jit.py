"""A FedFW round on the l2 ball around any gradient, compiled (numba): one pass where numpy makes a dozen.

:func:`fedcheck.algorithms.fedfw_variants.fedfw_variant` (the reference, kept as the numpy path) does, after the
clients' gradients ``g`` ``(B, n, p)``: ``g *= 1/n``, ``g += lam * (X - xbar)``, the l2 ball's LMO
``s = -r * (g / ||g||)`` (:meth:`fedcheck.problems.sets.L2Ball.lmo`; ``e_1`` where ``||g|| = 0``), ``X += eta *
(s - X)`` and ``xbar += eta * (mean_i s_i - xbar)``: about a dozen passes over ``(B, n, p)`` arrays, most of them
fresh (0.3 MB at FedFW's Table 2 DNN, ~0.5 ms of a ~6 ms round).  :func:`l2_round` makes them in one pass per
client with the same operations in the same order: the norm's sum of squares in numpy's pairwise order
(:func:`fedcheck.algorithms.kernels.pairwise_sq`), the clients' mean as
numpy's sequential sum over the axis then ``/ n``; the same bits (``tests/test_network_grad_fast.py``).
"""
from __future__ import annotations

import math

import numpy as np

from fedcheck.algorithms.kernels import pairwise_sq
from fedcheck.problems.compiled import AVAILABLE, numba

__all__ = ["l2_round"]


def _round_loop(X, xbar, g, inv_n, lam, eta, radius, sbar):
    B, n, p = X.shape
    for b in range(B):
        lb, eb, mr = lam[b], eta[b], -radius[b]
        for k in range(p):
            sbar[k] = 0.0
        for i in range(n):
            gi = g[b, i]
            xi = X[b, i]
            for k in range(p):
                gi[k] = gi[k] * inv_n + lb * (xi[k] - xbar[b, k])
            nrm = math.sqrt(pairwise_sq(gi, p))
            for k in range(p):
                if nrm > 0:
                    s = mr * (gi[k] / nrm)
                else:                                   # (NaN too) the LMO's e_1
                    s = mr * (1.0 if k == 0 else 0.0)
                xi[k] = xi[k] + eb * (s - xi[k])
                sbar[k] = s if i == 0 else sbar[k] + s
        for k in range(p):
            xbar[b, k] = xbar[b, k] + eb * (sbar[k] / n - xbar[b, k])
    return X


try:                                    # (pairwise_sq compiled under the same switch)
    _compiled = (numba.njit(cache=True, fastmath=False, nogil=True)(_round_loop)
                 if AVAILABLE and hasattr(pairwise_sq, "py_func") else None)
except Exception:  # pragma: no cover
    _compiled = None


def _c_f64(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable


def l2_round(X: np.ndarray, xbar: np.ndarray, g: np.ndarray, inv_n: float, lam: np.ndarray, eta: np.ndarray,
             S) -> np.ndarray | None:
    """One FedFW round on the l2 ball ``S`` after the gradients ``g`` ``(B, n, p)`` (overwritten): ``X`` updated in
    place, the new server point returned (a new ``(B, p)`` array; ``xbar`` untouched), the bits of the numpy path;
    ``lam``, ``eta`` ``(B,)``.  ``None`` when it does not apply (numba off, ``S`` not an l2 ball, layouts)."""
    from fedcheck.problems.sets import L2Ball
    if _compiled is None or type(S) is not L2Ball or not (_c_f64(X) and _c_f64(g)) or X.ndim != 3:
        return None
    B, n, p = X.shape
    if g.shape != X.shape or xbar.shape != (B, p) or p < 1 or n < 1:
        return None
    r = np.asarray(S.radius, dtype=float)
    if r.ndim > 1 or r.size not in (1, B):
        return None
    lam_b, eta_b = np.asarray(lam, dtype=float), np.asarray(eta, dtype=float)
    if lam_b.shape != (B,) or eta_b.shape != (B,):
        return None
    xb = np.array(xbar, dtype=float)                    # the new server point (the caller's is kept)
    _compiled(X, xb, g, float(inv_n), lam_b, eta_b, np.ascontiguousarray(np.broadcast_to(r, (B,))), np.empty(p))
    return xb
