"""The compiled minibatch oracle of the hinge loss (:mod:`fedcheck.problems.hinge_jit`) against the numpy closure of
:func:`fedcheck.algorithms.mls.minibatch_oracle` it replaces (the reference, what ``FEDCHECK_JIT=0`` runs).

* the sample: the compiled partial Fisher-Yates shuffle selects the numpy path's rows from the same draws, every
  ``k``-subset equally likely (a chi-square test over all subsets), the largest draw taking the last row;
* the rows: with the margins exact (integer data, ``U = 0``) and one coordinate per row, both oracles give the same
  bits, so they select the same rows -- also on draws with many ties (a generator whose draws are rounded);
* the subgradients: on random hinge instances (unequal clients, padding rows, labels 0) and a moving ``U``, equal
  within ``1e-12`` of ``max_i weight_i * sum_j ||b_ij a_ij||_inf`` (the two dot products are summed in another order
  than BLAS's; a margin within an ulp of 1 would flip a row -- none here), and the generator left in the same state;
* an empty client draws nothing and gets a zero subgradient on both paths;
* it declines (the numpy closure is returned, or runs for the call) for another loss, a subclass or an instance that
  replaces ``grad``, numba off, a ``U`` of another shape.
"""
import numpy as np
import pytest

from fedcheck.algorithms import mls as E
from fedcheck.problems import hinge_jit as HJ
from fedcheck.problems import losses as L
from fedcheck.problems.instances import InstanceBatch

needs_numba = pytest.mark.skipif(HJ._oracle_compiled is None, reason="numba is off (FEDCHECK_JIT=0 or absent)")


def _hinge_batch(rng, B=3, n=4, m=17, p=5, sizes=None, integer=False, cls=L.Hinge):
    sizes = rng.integers(1, m + 1, size=(B, n)) if sizes is None else np.broadcast_to(sizes, (B, n))
    A = rng.integers(-3, 4, size=(B, n, m, p)).astype(float) if integer else rng.standard_normal((B, n, m, p))
    b = np.where(rng.random((B, n, m)) < 0.5, -1.0, 1.0)
    b[rng.random((B, n, m)) < 0.1] = 0.0                              # a few unlabelled rows among the real ones
    b[np.arange(m)[None, None, :] >= sizes[..., None]] = 0.0          # padding
    A[np.arange(m)[None, None, :] >= sizes[..., None]] = 0.0
    loss = cls(A, b)
    return loss, sizes


def _oracles(loss, sizes, fraction, seed, rng_cls=np.random.default_rng):
    """(compiled, numpy) oracles on generators started from the same seed."""
    B, n = sizes.shape
    batch = _Batch(loss, B, n)
    fast = E.minibatch_oracle(batch, fraction, rng_cls(seed), sizes=sizes)
    saved, HJ._oracle_compiled = HJ._oracle_compiled, None
    try:
        slow = E.minibatch_oracle(batch, fraction, rng_cls(seed), sizes=sizes)
    finally:
        HJ._oracle_compiled = saved
    return fast, slow


class _Batch:
    """What :func:`minibatch_oracle` reads of an :class:`InstanceBatch`, for losses built directly."""
    def __init__(self, loss, B, n):
        self.loss, self.B, self.n, self.instances = loss, B, n, []


class _TiedGenerator:
    """A generator whose uniform draws are rounded to one decimal: many equal draws (and draws of exactly 0)."""
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def random(self, size=None, out=None):
        x = np.round(self.rng.random(size if out is None else out.shape), 1)
        if out is None:
            return x
        out[...] = x
        return out


def _numpy_rows(u, r, k, m):
    """The numpy path's sample for one client with ``r`` real rows of ``m``: the rows given weight."""
    batch = _Batch(L.Hinge(np.zeros((1, 1, m, 1)), np.ones((1, 1, m))), 1, 1)
    seen = []
    grad = batch.loss.grad
    batch.loss.grad = lambda U, weights=None: (seen.append(weights), grad(U, weights=weights))[1]

    class Fixed:                                   # hands the oracle the draws ``u``
        def random(self, size=None, out=None):
            x = np.zeros(size)
            x[..., :len(u)] = u
            return x
    o = E.minibatch_oracle(batch, k / r, Fixed(), sizes=np.array([[r]]))
    o(np.zeros((1, 1, 1)))
    return set(np.flatnonzero(seen[0][0, 0]).tolist())


@needs_numba
@pytest.mark.parametrize("seed", range(4))
def test_compiled_sample_is_the_numpy_paths(seed):
    rng = np.random.default_rng(seed)
    for r, m in ((1, 1), (2, 5), (7, 7), (64, 80), (279, 279)):
        for k in sorted({1, max(1, r // 10), r // 2 or 1, r}):
            u = rng.random(k)
            rows = HJ.sampled_rows(u, r, k, m)
            assert len(set(rows.tolist())) == k and rows.min() >= 0 and rows.max() < r
            if k / r * r == k and int(np.ceil(k / r * r)) == k:
                assert set(rows.tolist()) == _numpy_rows(u, r, k, m)


@needs_numba
def test_the_largest_draw_takes_the_last_row():
    u = np.array([np.nextafter(1.0, 0.0)])
    for r in (1, 2, 3, 256, 279, 2**20 + 1):
        assert HJ.sampled_rows(u, r, 1).tolist() == [r - 1]
    assert _numpy_rows(u, 279, 1, 279) == {278}


@needs_numba
def test_every_subset_is_equally_likely():
    """r = 6 rows, k = 3: the 20 subsets' counts over 20,000 samples against uniform (chi-square, 19 dof)."""
    from itertools import combinations
    from scipy import stats
    rng = np.random.default_rng(7)
    idx = {c: j for j, c in enumerate(combinations(range(6), 3))}
    counts = np.zeros(len(idx))
    for u in rng.random((20_000, 3)):
        counts[idx[tuple(sorted(HJ.sampled_rows(u, 6, 3).tolist()))]] += 1
    assert stats.chisquare(counts).pvalue > 1e-4


@needs_numba
@pytest.mark.parametrize("tied", [False, True], ids=["uniform keys", "tied keys"])
@pytest.mark.parametrize("fraction", [0.1, 0.35, 1.0])
def test_compiled_oracle_selects_numpys_rows(fraction, tied):
    """Margins exact (integer data, U = 0: every labelled row has margin 0 < 1) and one non-zero coordinate per row,
    so every sum is exact in any order: equal bits <=> the same rows with the same weights."""
    rng = np.random.default_rng(11)
    B, n, m = 2, 3, 23
    sizes = rng.integers(1, m + 1, size=(B, n))
    A = np.zeros((B, n, m, m))
    A[..., np.arange(m), np.arange(m)] = rng.integers(1, 5, size=(B, n, m))
    b = np.where(rng.random((B, n, m)) < 0.5, -1.0, 1.0)
    b[np.arange(m)[None, None, :] >= sizes[..., None]] = 0.0
    loss = L.Hinge(A, b)
    gen = _TiedGenerator if tied else np.random.default_rng
    fast, slow = _oracles(loss, sizes, fraction, 3, rng_cls=gen)
    assert fast is not slow
    U = np.zeros((B, n, m))
    for _ in range(20):
        g1, g2 = fast(U), slow(U)
        assert np.array_equal(g1, g2)
        assert np.any(g1 != 0)


@needs_numba
@pytest.mark.parametrize("seed", range(5))
def test_compiled_oracle_equals_numpy(seed):
    rng = np.random.default_rng(100 + seed)
    loss, sizes = _hinge_batch(rng, B=3, n=5, m=31, p=6)
    fraction = float(rng.choice([0.1, 0.25, 0.5]))
    fast, slow = _oracles(loss, sizes, fraction, seed)
    assert fast is not slow
    bsz = np.maximum(np.ceil(fraction * sizes), 1.0)
    scale = float(np.max(sizes / (bsz * loss.m) * np.abs(loss.BA).sum(-2).max(-1)))
    U = rng.standard_normal((3, 5, 6)) * 0.3
    for _ in range(40):
        g1, g2 = fast(U), slow(U)
        assert g1.shape == g2.shape == U.shape and g1.dtype == np.float64
        assert np.max(np.abs(g1 - g2)) <= 1e-12 * scale
        U = U - 0.2 * g2
    # the same draws consumed: the next draw of each generator is the same
    st1 = fast.__closure__[fast.__code__.co_freevars.index("rng")].cell_contents.random()
    st2 = slow.__closure__[slow.__code__.co_freevars.index("rng")].cell_contents.random()
    assert st1 == st2


@needs_numba
def test_compiled_oracle_on_the_paper_svm_equals_numpy():
    from theorems.fedmls.problems import wisconsin_svm
    inst = wisconsin_svm()
    batch = InstanceBatch([inst, inst])
    fast = E.minibatch_oracle(batch, 0.1, np.random.default_rng(1))
    saved, HJ._oracle_compiled = HJ._oracle_compiled, None
    try:
        slow = E.minibatch_oracle(batch, 0.1, np.random.default_rng(1))
    finally:
        HJ._oracle_compiled = saved
    assert fast is not slow
    U = np.random.default_rng(2).standard_normal((2, inst.n, inst.p)) * 0.05
    scale = float(np.abs(batch.loss.BA).sum(-2).max())
    for _ in range(30):
        g1, g2 = fast(U), slow(U)
        assert np.max(np.abs(g1 - g2)) <= 1e-12 * scale
        U = U - 0.01 * g2


@pytest.mark.parametrize("bad", [-1.0, 9.0, 2.5], ids=["negative", "more than m", "fractional"])
def test_client_sizes_must_be_row_counts(bad):
    rng = np.random.default_rng(9)
    sizes = np.full((2, 3), 8.0)
    loss, _ = _hinge_batch(rng, B=2, n=3, m=8, p=4, sizes=sizes)
    sizes[1, 2] = bad
    with pytest.raises(ValueError, match="client sizes must be whole numbers in 0..8"):
        E.minibatch_oracle(_Batch(loss, 2, 3), 0.5, rng, sizes=sizes)


def test_an_empty_client_draws_nothing():
    rng = np.random.default_rng(8)
    sizes = np.array([[5, 0, 8], [8, 3, 0]])
    loss, _ = _hinge_batch(rng, B=2, n=3, m=8, p=4, sizes=sizes)
    for o in _oracles(loss, sizes, 0.5, 4):
        g = o(rng.standard_normal((2, 3, 4)) * 0.1)
        assert np.all(g[sizes == 0] == 0) and np.all(np.isfinite(g))


def test_compiled_oracle_declines():
    rng = np.random.default_rng(5)
    A, b = rng.standard_normal((2, 3, 8, 4)), rng.standard_normal((2, 3, 8))
    sizes = np.full((2, 3), 8)

    def is_numpy(o):
        return o.__qualname__.startswith("minibatch_oracle.")

    assert is_numpy(E.minibatch_oracle(_Batch(L.LAD(A, b), 2, 3), 0.5, rng, sizes=sizes))    # another loss

    class MyHinge(L.Hinge):
        def grad(self, X, weights=None):
            return super().grad(X, weights)
    loss, _ = _hinge_batch(rng, B=2, n=3, m=8, p=4, sizes=sizes, cls=MyHinge)
    assert is_numpy(E.minibatch_oracle(_Batch(loss, 2, 3), 0.5, rng, sizes=sizes))           # grad replaced
    loss, _ = _hinge_batch(rng, B=2, n=3, m=8, p=4, sizes=sizes)
    if HJ._oracle_compiled is None:
        assert is_numpy(E.minibatch_oracle(_Batch(loss, 2, 3), 0.5, rng, sizes=sizes))       # numba off
        return
    o = E.minibatch_oracle(_Batch(loss, 2, 3), 0.5, rng, sizes=sizes)
    assert not is_numpy(o)
    seen = []
    grad = loss.grad
    loss.grad = lambda U, weights=None: (seen.append(weights), grad(U, weights=weights))[1]   # a spy set afterwards
    o(np.zeros((2, 3, 4)))
    assert len(seen) == 1
    del loss.grad

    def boom(*a):
        raise AssertionError("the compiled kernel ran")
    saved, HJ._oracle_compiled = HJ._oracle_compiled, boom
    try:
        assert o(np.zeros((2, 3, 4), dtype=np.float32)).shape == (2, 3, 4)                  # another dtype: numpy
        with pytest.raises(AssertionError, match="compiled kernel ran"):
            o(np.zeros((2, 3, 4)))
    finally:
        HJ._oracle_compiled = saved
