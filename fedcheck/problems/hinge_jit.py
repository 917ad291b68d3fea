"""The minibatch subgradient oracle of the hinge loss, compiled (numba): draw, selection and weighted sum in one pass.

:func:`fedcheck.algorithms.mls.minibatch_oracle` (the reference, kept as the numpy path) draws one uniform key per
row, ``keys = rng.random((B, n, m))``, puts ``inf`` on the padding rows, takes the ``kth`` smallest key of each client
by a full sort and weights the rows with ``key <= threshold``; then :meth:`Hinge.grad` computes the margins of *every*
row (a batched ``matmul``) and sums the weighted active rows (a second one).  On the paper's SVM (9 x 10 clients x
279 rows x 10 features, 10 % minibatches) that is ~0.5 ms per call, 20,200 calls per ``fedmls.experiment``.

Here: the same ``rng.random`` draw (the same numbers from the same stream: the generator is the caller's), the
threshold by a selection (quickselect) instead of a sort -- the same value, the ``kth`` order statistic, so the same
rows, ties included (every key equal to the threshold is taken, as ``keys <= thr``) -- and the margins of the selected
rows only, summed in row order.  The iterates equal numpy's to the rounding of the two dot products (BLAS sums in
its own order): a margin exactly at 1 within an ulp could flip a row's activity, which a test on random instances
does not meet (``tests/test_hinge_jit.py`` states the tolerance).  Declines (the numpy oracle runs) when numba is off
(``FEDCHECK_JIT=0``), for any loss whose ``margin``/``grad`` is not :class:`Hinge`'s, arrays that are not per-instance
float64 ``(B, n, m, p)``, non-finite data, or a client whose minibatch would reach its padding.
"""
from __future__ import annotations

import numpy as np

from fedcheck.problems.compiled import AVAILABLE, numba

__all__ = ["minibatch_hinge_oracle", "kth_smallest"]


def _select(buf, r, k):
    """The ``k``-th smallest (0-based) of ``buf[:r]`` (Hoare's quickselect, middle pivot; reorders ``buf``).
    NaN-free input (the keys are uniform draws)."""
    lo, hi = 0, r - 1
    while lo < hi:
        pivot = buf[(lo + hi) // 2]
        i, j = lo, hi
        while i <= j:
            while buf[i] < pivot:
                i += 1
            while buf[j] > pivot:
                j -= 1
            if i <= j:
                t = buf[i]
                buf[i] = buf[j]
                buf[j] = t
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return buf[k]
    return buf[k]


def _oracle_loop(keys, nreal, kth, weight, BA, labelled, U, out, buf, acc):
    B, n, m, p = BA.shape
    for b in range(B):
        for i in range(n):
            r = nreal[b, i]
            for j in range(r):
                buf[j] = keys[b, i, j]
            thr = _select(buf, r, kth[b, i])
            w = weight[b, i]
            for q in range(p):
                acc[q] = 0.0
            for j in range(r):
                if keys[b, i, j] <= thr and labelled[b, i, j]:
                    mg = 0.0
                    for q in range(p):
                        mg += BA[b, i, j, q] * U[b, i, q]
                    if mg < 1.0:
                        for q in range(p):
                            acc[q] += w * BA[b, i, j, q]
            for q in range(p):
                out[b, i, q] = -acc[q]
    return out


def _kth_loop(keys, r, k, buf):
    for j in range(r):
        buf[j] = keys[j]
    return _select(buf, r, k)


try:
    if AVAILABLE:
        _jit = numba.njit(cache=True, fastmath=False, nogil=True)
        _select = _jit(_select)
        _oracle_compiled = _jit(_oracle_loop)
        _kth_compiled = _jit(_kth_loop)
    else:
        _oracle_compiled = _kth_compiled = None
except Exception:  # pragma: no cover
    _oracle_compiled = _kth_compiled = None


def kth_smallest(keys: np.ndarray, k: int) -> float | None:
    """The compiled selection on one 1-d float64 array (what the oracle uses per client), for the tests;
    ``None`` when numba is off."""
    if _kth_compiled is None:
        return None
    keys = np.ascontiguousarray(keys, dtype=np.float64)
    if not 0 <= k < keys.size:
        raise ValueError(f"k = {k} outside 0..{keys.size - 1}")
    return float(_kth_compiled(keys, keys.size, int(k), np.empty(keys.size)))


def _overridden(loss) -> bool:
    """``grad`` or ``margin`` replaced on the instance (a test's spy, a user's patch): the numpy closure calls them."""
    d = vars(loss)
    return "grad" in d or "margin" in d


def minibatch_hinge_oracle(loss, rng: np.random.Generator, real: np.ndarray, kth: np.ndarray, weight: np.ndarray,
                           fallback):
    """The compiled form of :func:`fedcheck.algorithms.mls.minibatch_oracle`'s closure for a :class:`Hinge` loss,
    or ``fallback`` (that closure) when it does not apply.  ``real`` ``(B, n, m)`` (a prefix of each client's rows),
    ``kth`` ``(B, n, 1)`` the order statistic of the threshold, ``weight`` ``(B, n, 1)`` the weight of a selected
    row, as the numpy closure has them.  A call with a ``U`` of another shape or dtype runs ``fallback`` (the same
    draw)."""
    from fedcheck.problems.losses import Hinge
    if _oracle_compiled is None or not isinstance(loss, Hinge):
        return fallback
    cls = type(loss)
    if cls.grad is not Hinge.grad or cls.margin is not Hinge.margin or _overridden(loss):
        return fallback
    BA, labelled = loss.BA, loss.real
    if BA.ndim != 4 or BA.dtype != np.float64 or real.shape != BA.shape[:3]:
        return fallback
    B, n, m, p = BA.shape
    nreal = real.sum(-1).astype(np.int64)
    kth = np.asarray(kth).reshape(B, n).astype(np.int64)
    weight = np.ascontiguousarray(np.asarray(weight, dtype=np.float64).reshape(B, n))
    prefix = np.arange(m)[None, None, :] < nreal[..., None]
    if not (np.array_equal(prefix, real) and np.all(kth >= 0) and np.all(kth < nreal)
            and np.isfinite(BA).all() and np.isfinite(weight).all()):
        return fallback   # e.g. an empty client (numpy then selects its padding with weight 0)
    BA = np.ascontiguousarray(BA)
    labelled = np.ascontiguousarray(labelled)
    keys = np.empty((B, n, m))
    buf, acc = np.empty(m), np.empty(p)

    def oracle(U):
        if U.shape != (B, n, p) or U.dtype != np.float64 or _overridden(loss):
            return fallback(U)
        rng.random(out=keys)                     # = rng.random((B, n, m)): the same numbers, no allocation
        return _oracle_compiled(keys, nreal, kth, weight, BA, labelled, np.ascontiguousarray(U),
                                np.empty((B, n, p)), buf, acc)
    return oracle
