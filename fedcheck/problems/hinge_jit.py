"""The minibatch subgradient oracle of the hinge loss, compiled (numba): sample and weighted sum in one pass.

:func:`fedcheck.algorithms.mls.minibatch_oracle` (the reference, kept as the numpy path) samples each client's
``k_i`` rows by a partial Fisher-Yates shuffle driven by ``u = rng.random((B, n, max k_i))`` (draw ``j`` swaps
position ``j`` with ``j + floor(u_j (m_i - j))``), writes the selected rows' weights into a dense ``(B, n, m)``
array and calls :meth:`Hinge.grad`, which computes the margins of *every* row (a batched ``matmul``) and sums the
weighted active rows (a second one).

Here: the same ``rng.random`` draw (the same numbers from the same stream: the generator is the caller's), the same
swaps on one permutation buffer (undone after each client, so it stays the identity), and the margins of the ``k_i``
selected rows only -- on the paper's SVM (10 clients x 279 padded rows x 10 features, 10 % minibatches) 28 rows a
client instead of 279.  The rows are the numpy path's; the sums are in selection order, not BLAS's, so the
subgradients equal numpy's to the rounding of those sums: a margin exactly at 1 within an ulp could flip a row's
activity, which a test on random instances does not meet (``tests/test_hinge_jit.py`` states the tolerance).
Declines (the numpy oracle runs) when numba is off (``FEDCHECK_JIT=0``), for any loss whose ``margin``/``grad`` is
not :class:`Hinge`'s, arrays that are not per-instance float64 ``(B, n, m, p)``, or non-finite data.
"""
from __future__ import annotations

import numpy as np

from fedcheck.problems.compiled import AVAILABLE, numba

__all__ = ["minibatch_hinge_oracle", "sampled_rows"]


def _fisher_yates(u, r, k, perm, hist):
    """Positions ``0..k-1`` of ``perm`` after the partial shuffle of ``perm[:r]`` driven by ``u[:k]``
    (``minibatch_oracle``'s rule); ``hist`` keeps each swap's partner so that :func:`_undo` restores ``perm``."""
    for j in range(k):
        h = r - j
        o = np.int64(np.floor(u[j] * h))
        if o > h - 1:
            o = h - 1
        t = j + o
        hist[j] = t
        a = perm[j]
        perm[j] = perm[t]
        perm[t] = a


def _undo(k, perm, hist):
    for j in range(k - 1, -1, -1):
        t = hist[j]
        a = perm[j]
        perm[j] = perm[t]
        perm[t] = a


def _oracle_loop(u, nreal, take, weight, src, BA, labelled, U, out, perm, hist, acc):
    B, n = u.shape[:2]
    p = BA.shape[3]
    for b in range(B):
        s = src[b]
        for i in range(n):
            k = take[b, i]
            _fisher_yates(u[b, i], nreal[b, i], k, perm, hist)
            w = weight[b, i]
            for q in range(p):
                acc[q] = 0.0
            for j in range(k):
                row = perm[j]
                if labelled[s, i, row]:
                    mg = 0.0
                    for q in range(p):
                        mg += BA[s, i, row, q] * U[b, i, q]
                    if mg < 1.0:
                        for q in range(p):
                            acc[q] += w * BA[s, i, row, q]
            _undo(k, perm, hist)
            for q in range(p):
                out[b, i, q] = -acc[q]
    return out


def _sample_loop(u, r, k, m):
    perm = np.arange(m)
    hist = np.empty(max(k, 1), dtype=np.int64)
    _fisher_yates(u, r, k, perm, hist)
    return perm[:k].copy()


try:
    if AVAILABLE:
        _jit = numba.njit(cache=True, fastmath=False, nogil=True)
        _fisher_yates = _jit(_fisher_yates)
        _undo = _jit(_undo)
        _oracle_compiled = _jit(_oracle_loop)
        _sample_compiled = _jit(_sample_loop)
    else:
        _oracle_compiled = _sample_compiled = None
except Exception:  # pragma: no cover
    _oracle_compiled = _sample_compiled = None


def sampled_rows(u: np.ndarray, r: int, k: int, m: int | None = None) -> np.ndarray | None:
    """The ``k`` rows the compiled shuffle selects among ``0..r-1`` from the draws ``u`` (what the oracle does per
    client), in selection order, for the tests; ``None`` when numba is off."""
    if _sample_compiled is None:
        return None
    u = np.ascontiguousarray(u, dtype=np.float64)
    if not 0 <= k <= r or u.size < k:
        raise ValueError(f"need 0 <= k <= r and k draws (k = {k}, r = {r}, {u.size} draws)")
    return _sample_compiled(u, int(r), int(k), int(r if m is None else m))


def _distinct(BA: np.ndarray, labelled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(src, first)``: instance ``b`` has the data of instance ``first[src[b]]`` (equal bytes of ``BA`` and
    ``labelled``), ``first`` the distinct ones in order."""
    seen: dict = {}
    src, first = np.empty(BA.shape[0], dtype=np.int64), []
    for b in range(BA.shape[0]):
        src[b] = seen.setdefault((BA[b].tobytes(), labelled[b].tobytes()), len(first))
        if src[b] == len(first):
            first.append(b)
    return src, np.array(first, dtype=np.int64)


def _overridden(loss) -> bool:
    """``grad`` or ``margin`` replaced on the instance (a test's spy, a user's patch): the numpy closure calls them."""
    d = vars(loss)
    return "grad" in d or "margin" in d


def minibatch_hinge_oracle(loss, rng: np.random.Generator, nreal: np.ndarray, take: np.ndarray,
                           weight: np.ndarray, kmax: int, fallback):
    """The compiled form of :func:`fedcheck.algorithms.mls.minibatch_oracle`'s closure for a :class:`Hinge` loss,
    or ``fallback`` (that closure) when it does not apply.  ``nreal`` ``(B, n)`` the real rows of each client (a
    prefix), ``take`` ``(B, n)`` the rows sampled, ``weight`` ``(B, n)`` the weight of a sampled row, ``kmax`` the
    draws per client and call, as the numpy closure has them.  A call with a ``U`` of another shape or dtype runs
    ``fallback`` (the same draw)."""
    from fedcheck.problems.losses import Hinge
    if _oracle_compiled is None or not isinstance(loss, Hinge):
        return fallback
    cls = type(loss)
    if cls.grad is not Hinge.grad or cls.margin is not Hinge.margin or _overridden(loss):
        return fallback
    BA, labelled = loss.BA, loss.real
    if BA.ndim != 4 or BA.dtype != np.float64 or nreal.shape != BA.shape[:2]:
        return fallback
    B, n, m, p = BA.shape
    nreal = np.ascontiguousarray(nreal, dtype=np.int64)
    take = np.ascontiguousarray(take, dtype=np.int64)
    weight = np.ascontiguousarray(np.asarray(weight, dtype=np.float64).reshape(B, n))
    if not (np.all(take >= 0) and np.all(take <= nreal) and np.all(nreal <= m) and take.max(initial=0) <= kmax
            and np.isfinite(BA).all() and np.isfinite(weight).all()):
        return fallback
    src, first = _distinct(BA, labelled)   # a batch of replicates of one instance reads one copy (cache-resident)
    BA = np.ascontiguousarray(BA[first])
    labelled = np.ascontiguousarray(labelled[first])
    u = np.empty((B, n, kmax))
    perm, hist, acc = np.arange(m), np.empty(max(kmax, 1), dtype=np.int64), np.empty(p)

    def oracle(U):
        if U.shape != (B, n, p) or U.dtype != np.float64 or _overridden(loss):
            return fallback(U)
        rng.random(out=u)                     # = rng.random((B, n, kmax)): the same numbers, no allocation
        return _oracle_compiled(u, nreal, take, weight, src, BA, labelled, np.ascontiguousarray(U),
                                np.empty((B, n, p)), perm, hist, acc)
    return oracle
