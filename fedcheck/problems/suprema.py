"""Suprema of gradient norms over a feasible set: the exact (or certified upper) values of constants such as
``G_sup = sup_{X in D^n} ||grad F^(X)||_F`` (trust-region maxima, vertex enumeration), shared by
:mod:`fedcheck.problems.constants`, :mod:`fedcheck.problems.nonconvex` and the composite problems."""
from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from fedcheck.problems.losses import LeastSquares, Loss
from fedcheck.problems.sets import Box, L1Ball, L2Ball, Simplex

__all__ = ["sup_grad_norm_sq", "MAX_BOX_DIM", "trs_max"]


def trs_max(M: np.ndarray, c: np.ndarray, r: float) -> float:
    """max_{||x|| <= r} ||M x - c||^2 for symmetric PSD M (exact; secular equation)."""
    lam, Q = np.linalg.eigh(M)
    cp_ = Q.T @ c
    l2 = lam ** 2
    top = l2.max()
    if top <= 0:
        return float(c @ c)
    w = (lam * cp_) ** 2

    def phi(mu):
        return np.sum(w / (l2 - mu) ** 2) - r ** 2

    on_top = np.isclose(l2, top, rtol=1e-12, atol=0)
    rest = ~on_top
    # hard case: the secular function stays below r^2 as mu -> top
    if np.all(w[on_top] <= 1e-300):
        y = np.zeros_like(cp_)
        y[rest] = lam[rest] * cp_[rest] / (l2[rest] - top)
        rem = r ** 2 - y @ y
        if rem >= 0:
            y[np.argmax(on_top)] = np.sqrt(rem)
            return float(np.sum((lam * y - cp_) ** 2))
    lo = top * (1 + 1e-15) + 1e-300
    hi = top + np.sqrt(w.sum()) / r + 1.0
    while phi(hi) > 0:
        hi = top + 2 * (hi - top)
    while phi(lo) < 0 and lo > top:
        lo = top + (lo - top) / 10
        if lo - top < 1e-300:
            break
    mu = brentq(phi, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    y = lam * cp_ / (l2 - mu)
    return float(np.sum((lam * y - cp_) ** 2))


MAX_BOX_DIM = 16


# Above this size the vertex enumeration of sup ||grad f_i||^2 runs in chunks of vertices.
_ENUM_LIMIT_BYTES = 64 * 2**20


class _ClientHessians:
    """``H[i] = A_i^T A_i / m`` formed on demand (least squares in factored form)."""

    def __init__(self, loss):
        self.loss = loss

    def __getitem__(self, i):
        A = self.loss.A[i]
        return A.T @ A / self.loss.m


def _vertex_sup_chunked(loss, r: float, p: int, symmetric: bool) -> np.ndarray:
    """``max_j ||H_i (+-r e_j) - c_i||^2`` per client, a block of columns ``H_i e_j`` at a time (formed from
    ``A_i`` in the factored form): memory ``n p k`` instead of ``n (2p) p``."""
    n, c = loss.n, loss.c
    k = max(1, int(_ENUM_LIMIT_BYTES // (8 * n * p * 4)))
    best = np.full(n, -np.inf)
    for lo in range(0, p, k):
        hi = min(p, lo + k)
        if loss.factored:
            cols = np.einsum("imp,imk->ikp", loss.A, loss.A[:, :, lo:hi]) / loss.m   # rows: H_i e_j
        else:
            cols = np.swapaxes(loss.H[:, :, lo:hi], -1, -2)
        for sign in ((1.0, -1.0) if symmetric else (1.0,)):
            vals = sign * r * cols - c[:, None, :]
            best = np.maximum(best, (vals ** 2).sum(-1).max(-1))
    return best


def sup_grad_norm_sq(loss: Loss, S) -> tuple[np.ndarray, bool, str]:
    """Per client ``sup_{x in D} ||grad f_i(x)||^2`` for one (unbatched) instance.

    Exact for least squares on the l1 ball and simplex (vertex enumeration), the box
    up to dimension 16 (2^p vertices), and the l2 ball (trust-region secular
    equation).  Otherwise a certified upper bound, flagged ``exact=False``."""
    n, p = loss.n, loss.p
    r = float(S.radius)
    if isinstance(loss, LeastSquares):
        # the factored form keeps no stacked H: one client's H_i at a time (p x p)
        H = _ClientHessians(loss) if loss.factored else loss.H
        c = loss.c
        if isinstance(S, (L1Ball, Simplex)):
            V = r * np.eye(p)
            if isinstance(S, L1Ball):
                V = np.concatenate([V, -V])
            if n * len(V) * p * 8 <= _ENUM_LIMIT_BYTES:
                vals = np.einsum("ipq,vq->ivp", H, V) - c[:, None, :]
                return (vals ** 2).sum(-1).max(-1), True, "vertex enumeration"
            return _vertex_sup_chunked(loss, r, p, isinstance(S, L1Ball)), True, "vertex enumeration"
        if isinstance(S, Box) and p <= MAX_BOX_DIM:
            V = r * (1 - 2 * ((np.arange(2 ** p)[:, None] >> np.arange(p)) & 1))
            out = np.empty(n)
            for i in range(n):
                out[i] = ((V @ H[i].T - c[i]) ** 2).sum(-1).max()
            return out, True, f"enumeration of the 2^{p} box vertices"
        if isinstance(S, L2Ball):
            return np.array([trs_max(H[i], c[i], r) for i in range(n)]), True, "trust-region secular equation"
        if isinstance(S, Box):  # max ||x|| over the box is r sqrt(p)
            opn = (np.asarray(loss.smoothness(), dtype=float) if loss.factored
                   else np.linalg.norm(H, ord=2, axis=(-2, -1)))
            ub = (opn * r * np.sqrt(p) + np.linalg.norm(c, axis=-1)) ** 2
            return ub, False, "upper bound (||H_i|| r sqrt(p) + ||c_i||)^2"
        return np.full(n, np.inf), False, f"no bound implemented for the {S.name} set"
    A = loss.A
    row = np.linalg.norm(A, axis=-1).mean(-1)
    opn = np.linalg.norm(A, ord=2, axis=(-2, -1)) / np.sqrt(loss.m)
    return np.minimum(row, opn) ** 2, False, "upper bound min((1/m) sum_j ||a_ij||, ||A_i|| / sqrt(m)) (sigmoid weights <= 1)"
