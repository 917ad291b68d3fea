"""Compiled FedSGM (:mod:`fedcheck.algorithms.switching_jit`) against the numpy path it replaces (no timing here).

The compiled run reproduces numpy's floating-point order (einsum's lane sums, pairwise reductions, the clients'
mean), so the comparison is **bit for bit** (tolerance 0, NaN equal to NaN): every recorded metric and every
``trace.final`` entry, on random instances of every covered client-function class, both switching rules and every
compressor, including the degenerate axes (``d = 1``, ``n = 1``, ``m = 1``).  The numpy path is the reference
(``switching_jit.AVAILABLE`` off is what ``FEDCHECK_JIT=0`` does)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcheck.algorithms import switching as S
from fedcheck.algorithms import switching_jit as J
from fedcheck.problems import constrained as P
from theorems.fedsgm.problems import ConstrainedFamily, UnconstrainedFamily
from fedcheck.problems.compression import UniformStream, make_compressor
from fedcheck.problems.losses import LAD, MaxAffine

needs_numba = pytest.mark.skipif(J._run_compiled is None, reason="numba is off (FEDCHECK_JIT=0 or absent)")

COMPRESSORS = (None, {"name": "bernoulli", "p": 0.4}, {"name": "rand_k", "k": 1}, {"name": "rand_k", "k": 2},
               {"name": "random_quantization", "s": 2})


def _both(batch, monkeypatch, **kw):
    """(compiled, numpy) traces of the same call; asserts the compiled path was taken."""
    taken = []
    real = J.run_fedsgm

    def spy(*a, **k):
        out = real(*a, **k)
        taken.append(out is not None)
        return out
    with monkeypatch.context() as mp:
        mp.setattr(J, "run_fedsgm", spy)
        fast = S.fedsgm(batch, **kw)
    assert taken == [True], J.eligible(batch, make_compressor(kw.get("compressor")), kw.get("rule", "hard"),
                                       kw.get("local_steps", 1))
    with monkeypatch.context() as mp:
        mp.setattr(J, "AVAILABLE", False)
        ref = S.fedsgm(batch, **kw)
    return fast, ref


def _assert_same(fast, ref):
    assert fast.metrics.keys() == ref.metrics.keys() and fast.final.keys() == ref.final.keys()
    for k in ref.metrics:
        np.testing.assert_array_equal(fast.metrics[k], ref.metrics[k], err_msg=k)   # NaN == NaN, bits otherwise
    for k in ref.final:
        np.testing.assert_array_equal(fast.final[k], ref.final[k], err_msg=k)


def _kw(B, d, rng, rule, comp, E, T=40, comparator=True):
    return dict(rounds=T, eta=0.05 * rng.uniform(0.5, 1.5, B), eps=np.full(B, 0.05), rule=rule,
                beta=np.full(B, 20.0) if rule == "soft" else None, local_steps=E, compressor=make_compressor(comp),
                seeds=list(range(B)), comparator=rng.standard_normal((B, d)) if comparator else None)


@needs_numba
@pytest.mark.parametrize("kind,n,m,d", [("pl", 5, 10, 5), ("pl", 3, 7, 1), ("pl", 1, 20, 9), ("pl", 4, 10, 20),
                                        ("norm", 5, 10, 5), ("huber", 5, 10, 5), ("huber", 2, 3, 2), ("axis", 1, 1, 5),
                                        ("norm", 2, 1, 1)])
@pytest.mark.parametrize("rule", ["hard", "soft"])
@pytest.mark.parametrize("comp", COMPRESSORS)
def test_compiled_fedsgm_equals_numpy_bit_for_bit(kind, n, m, d, rule, comp, monkeypatch):
    if comp and comp.get("k", 0) > d:
        pytest.skip("Rand-K with K > d")
    fam = ConstrainedFamily(kind=kind, n=n, m=m, d=d, start="zero" if kind == "norm" else "infeasible")
    B = 5
    batch = P.ConstrainedBatch([fam.draw(s) for s in range(B)])
    rng = np.random.default_rng(n * 100 + m * 10 + d)
    fast, ref = _both(batch, monkeypatch, **_kw(B, d, rng, rule, comp, E=3))
    _assert_same(fast, ref)


@needs_numba
@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 12), d=st.integers(1, 10), E=st.integers(1, 4),
       seed=st.integers(0, 10**6), soft=st.booleans(), a_set=st.sampled_from([None, "le", "lt"]),
       comparator=st.booleans(), start=st.sampled_from(["zero", "infeasible"]))
def test_compiled_fedsgm_equals_numpy_on_random_shapes(n, m, d, E, seed, soft, a_set, comparator, start):
    mp = pytest.MonkeyPatch()
    try:
        fam = ConstrainedFamily(kind="pl", n=n, m=m, d=d, pieces=1 + seed % 4, start=start)
        batch = P.ConstrainedBatch([fam.draw(seed + s) for s in range(3)])
        rng = np.random.default_rng(seed)
        kw = _kw(3, d, rng, "soft" if soft else "hard", None, E, T=25, comparator=comparator)
        fast, ref = _both(batch, mp, a_set=a_set, **kw)
        _assert_same(fast, ref)
    finally:
        mp.undo()


@needs_numba
def test_unconstrained_family_g_zero(monkeypatch):
    fam = UnconstrainedFamily()
    batch = P.ConstrainedBatch([fam.draw(s) for s in range(4)])
    rng = np.random.default_rng(0)
    fast, ref = _both(batch, monkeypatch, **_kw(4, batch.d, rng, "hard", {"name": "rand_k", "k": 3}, E=2))
    _assert_same(fast, ref)


def _tied_run_is_numpys(monkeypatch, levels, n, d, B, k, E, T, seed):
    """Uniforms on a grid of ``levels`` values tie at the K-th smallest: numpy's argpartition picks among them, the
    kernel cannot know which: it leaves the run to numpy (from a fresh stream), and the traces are numpy's."""
    class Coarse(UniformStream):
        def next(self):
            return np.floor(super().next() * levels) / levels

    monkeypatch.setattr(S, "UniformStream", Coarse)
    fam = ConstrainedFamily(kind="pl", n=n, m=6, d=d)
    batch = P.ConstrainedBatch([fam.draw(s) for s in range(B)])
    kw = _kw(B, d, np.random.default_rng(seed), "hard", {"name": "rand_k", "k": k}, E=E, T=T)
    results = []
    real = J.run_fedsgm
    monkeypatch.setattr(J, "run_fedsgm", lambda *a, **kw_: results.append(real(*a, **kw_)) or results[-1])
    fast = S.fedsgm(batch, **kw)
    assert results == [None]                       # the kernel declined mid-run
    monkeypatch.setattr(J, "AVAILABLE", False)
    _assert_same(fast, S.fedsgm(batch, **kw))


@needs_numba
def test_tied_rand_k_uniforms_fall_back_to_numpy(monkeypatch):
    _tied_run_is_numpys(monkeypatch, levels=3, n=3, d=6, B=3, k=2, E=2, T=10, seed=1)


@needs_numba
@pytest.mark.parametrize("k", [1, 7, 8, 13, 19])
def test_rand_k_by_selection_and_by_sorting_keeps_numpys_coordinates(k, monkeypatch):
    """The kernel finds the K + 1 smallest uniforms by selection (K < 8) or by an insertion sort (K >= 8): the
    kept coordinates (``U_i <= v_K``) are those of numpy's ``argpartition``, K = d - 1 included."""
    fam = ConstrainedFamily(kind="pl", n=3, m=6, d=20)
    batch = P.ConstrainedBatch([fam.draw(s) for s in range(4)])
    rng = np.random.default_rng(k)
    for rule in ("hard", "soft"):
        fast, ref = _both(batch, monkeypatch, **_kw(4, 20, rng, rule, {"name": "rand_k", "k": k}, E=2, T=30))
        _assert_same(fast, ref)


@needs_numba
@pytest.mark.parametrize("k", [2, 9])
def test_tied_rand_k_uniforms_fall_back_to_numpy_on_both_branches(k, monkeypatch):
    """A tie at the K-th smallest uniform (``v_{K+1} == v_K``) is found by the selection and by the sort."""
    _tied_run_is_numpys(monkeypatch, levels=4, n=2, d=12, B=2, k=k, E=1, T=5, seed=k)


@needs_numba
def test_declines_what_it_does_not_cover():
    Id = make_compressor(None)
    npf = ConstrainedFamily(kind="logistic_np", n=2, m=4, d=3)
    batch = P.ConstrainedBatch([npf.draw(0)])
    assert isinstance(J.eligible(batch, Id, "hard", 1), str)                 # logistic: numpy's tanh/log1p
    inst = ConstrainedFamily(kind="pl", n=2, m=4, d=3).draw(0)
    mat = P.ConstrainedInstance(LAD(A=inst.f.A, b=inst.f.b), MaxAffine(A=inst.g.A, b=inst.g.b), w0=inst.w0)
    assert "BLAS" in J.eligible(P.ConstrainedBatch([mat]), Id, "hard", 1)   # the matmul kernels
    pl = P.ConstrainedBatch([inst])
    assert isinstance(J.eligible(pl, Id, "hard", 0), str)
    assert isinstance(J.eligible(pl, Id, "other", 1), str)
    big = P.ConstrainedBatch([ConstrainedFamily(kind="pl", n=2, m=130, d=3).draw(0)])
    assert "128" in J.eligible(big, Id, "hard", 1)
    assert J.numpy_orders_hold()                                            # this numpy sums as the kernel does


@needs_numba
@pytest.mark.parametrize("kind", ["pl", "norm", "huber", "axis"])
@pytest.mark.parametrize("rule", ["hard", "soft"])
def test_a_run_that_overflows_gives_numpys_infinities_and_nans(kind, rule, monkeypatch):
    """Starts near the largest float (and one infinite, one NaN coordinate) and steps of 1e300: the residuals,
    signs, argmax (first NaN), clipping and norms meet inf and NaN; the compiled run still gives numpy's values
    (NaN where numpy has NaN)."""
    fam = ConstrainedFamily(kind=kind, n=3, m=4, d=3, start="zero" if kind == "norm" else "infeasible")
    B = 4
    batch = P.ConstrainedBatch([fam.draw(s) for s in range(B)])
    rng = np.random.default_rng(7)
    kw = _kw(B, 3, rng, rule, {"name": "random_quantization", "s": 2}, E=2, T=12)
    kw["eta"] = np.array([1e300, 1e150, 0.05, 1e307])
    kw["w0"] = np.array([[1.7e308, -1.7e308, 1.0], [np.inf, 0.0, -1.0], [1e300, 2.0, np.nan], [0.5, -0.5, 1e308]])
    with np.errstate(all="ignore"):
        fast, ref = _both(batch, monkeypatch, **kw)
    assert not np.all(np.isfinite(ref.metrics["f"]))            # the case is what it says
    _assert_same(fast, ref)
