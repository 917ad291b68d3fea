"""The fast engine computes what the plain algorithm computes.

The optimized FedFW (fused kernels, sparse vertices, cache-sized instance groups, buffered
recording) is compared with plain per-client loops (fedcheck.engine.reference), its kernels with
the oracles of fedcheck.losses / fedcheck.sets, and the chunked driver with the plain one.  No
wall-clock assertions here: timings live in benchmarks/engine.py.
"""
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedcheck.algorithms.core as core
from fedcheck.algorithms import default_recorder, evaluate_schedule, fedfw, frank_wolfe, record_grid, with_iterates
from fedcheck.algorithms.kernels import make_full_grad_kernel, make_grad_kernel, make_vertex_lmo, slice_set
from fedcheck.algorithms.reference import fedfw_loop, fedfw_loop_least_squares_l1
from fedcheck.problems.instances import Instance, InstanceBatch, RandomFamily
from fedcheck.problems.losses import LeastSquares, Loss, Logistic
from fedcheck.problems.sets import L1Ball, L2Ball, Simplex
from fedcheck.testing import families
from theorems.fedfw import theorem1

T1 = theorem1.evidence.experiment      # its family and schedules


def _sched(B, T, lam0=1.0, per_instance=False, rng=None):
    tt = np.arange(1, T + 1)
    eta = evaluate_schedule(T1.schedules["eta"], tt, {}, B)
    lam = evaluate_schedule(T1.schedules["lam"], tt, {"lambda_0": lam0}, B)
    if per_instance:  # a different penalty (and step) per instance: the broadcast paths
        rng = rng or np.random.default_rng(0)
        lam = lam * rng.uniform(0.5, 2.0, B)[None, :]
        eta = np.minimum(1.0, eta * rng.uniform(0.8, 1.2, B)[None, :])
    return eta, lam


@pytest.fixture
def small_groups(monkeypatch):
    """Make the engine split even tiny batches into instance groups (the cache-blocked driver)."""
    monkeypatch.setattr(core, "CACHE_BYTES", 1)
    monkeypatch.setattr(core, "MIN_CHUNK_ROWS", 1)


# ---- engine == plain loops ---------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(families(n=st.integers(1, 5), m=st.integers(2, 8), p=st.integers(2, 6)), st.integers(0, 2**31),
       st.integers(1, 4), st.booleans())
def test_engine_matches_plain_loop_any_loss_and_set(fam, seed, B, per_instance):
    T = 30
    batch = InstanceBatch([fam.draw(seed + k) for k in range(B)])
    eta, lam = _sched(B, T, per_instance=per_instance, rng=np.random.default_rng(seed))
    tr = fedfw(batch, eta=eta, lam=lam, rounds=T)
    X, xbar = fedfw_loop(batch, eta, lam, T)
    # On the l2 ball the LMO -r g/||g|| amplifies rounding differences by 1/||g|| (see test_engine.py);
    # vertex sets (l1, simplex, box) agree to rounding.
    tol = 1e-8 if fam.set == "l2" else 1e-12
    np.testing.assert_allclose(tr.final["X"], X, rtol=tol, atol=tol)
    np.testing.assert_allclose(tr.final["xbar"], xbar, rtol=tol, atol=tol)


@pytest.mark.parametrize("per_instance", [False, True])
def test_engine_matches_research_loop_theorem1_family(per_instance):
    B, T = 4, 300
    batch = InstanceBatch([T1.family.draw(s) for s in range(B)])
    eta, lam = _sched(B, T, per_instance=per_instance)
    tr = fedfw(batch, eta=eta, lam=lam, rounds=T)
    X, xbar = fedfw_loop_least_squares_l1(batch, eta, lam, T)
    np.testing.assert_allclose(tr.final["X"], X, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tr.final["xbar"], xbar, rtol=1e-12, atol=1e-12)
    # and the recorded F is F of the loop's server point, through the base-class oracle
    F = Loss.full_value(batch.loss, xbar)
    np.testing.assert_allclose(tr.metrics["F"][-1], F, rtol=1e-13)


def test_overridden_oracles_use_the_generic_path():
    """A subclass that changes grad / lmo must not get the least-squares / l1 shortcuts."""
    class Scaled(LeastSquares):
        def grad(self, X):
            return 2.0 * super().grad(X)

    class Dense(L1Ball):
        def lmo(self, g):
            return L2Ball(self.radius, self.dim).lmo(g)

    inst = T1.family.draw(0)
    batch = InstanceBatch([inst])
    batch.loss = Scaled(batch.loss.A, batch.loss.b)
    batch.set = Dense(1.0, inst.p)
    assert not make_grad_kernel(batch.loss).fast and make_vertex_lmo(batch.set, (1, inst.n, inst.p)) is None
    eta, lam = _sched(1, 40)
    tr = fedfw(batch, eta=eta, lam=lam, rounds=40)
    X, xbar = fedfw_loop(batch, eta, lam, 40)
    np.testing.assert_allclose(tr.final["xbar"], xbar, rtol=1e-12, atol=1e-12)


# ---- cache-blocked driver == plain driver ---------------------------------------------------------
@pytest.mark.parametrize("set_name", ["l1", "l2", "simplex"])
@pytest.mark.parametrize("per_instance", [False, True])
def test_instance_groups_give_identical_traces(monkeypatch, set_name, per_instance):
    B, T = 7, 1300
    fam = RandomFamily(loss="least_squares", set=set_name, n=3, m=6, p=5, radius=1.5)
    insts = [fam.draw(s) for s in range(B)]
    # per-instance radii: the sets are batched
    insts = [Instance(i.A, i.b, i.loss, type(i.set)(1.0 + 0.25 * k, i.p)) for k, i in enumerate(insts)]
    batch = InstanceBatch(insts)
    eta, lam = _sched(B, T, per_instance=per_instance)
    grid = record_grid(T + 1)
    plain = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid, recorder=with_iterates(default_recorder(batch)))
    monkeypatch.setattr(core, "CACHE_BYTES", 1)
    monkeypatch.setattr(core, "MIN_CHUNK_ROWS", 1)
    blocked = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid, recorder=with_iterates(default_recorder(batch)))
    assert np.array_equal(plain.rounds, blocked.rounds)
    assert set(plain.metrics) == set(blocked.metrics)
    for k in plain.metrics:
        assert np.array_equal(plain.metrics[k], blocked.metrics[k]), k
    assert np.array_equal(plain.final["X"], blocked.final["X"])


def test_blocked_driver_records_every_grid_point_in_order(small_groups):
    """Irregular grids (dense runs, gaps, the first and last iterate) through the buffered recording."""
    batch = InstanceBatch([T1.family.draw(s) for s in range(5)])
    T = 400
    eta, lam = _sched(5, T)
    grid = np.unique(np.r_[1, 2, 3, 50:90, 91, 200, 201, 250:320:3, 399, 401])
    seen = []

    def rec(k, X, xbar):
        seen.append(k)
        return {"x0": xbar[:, 0].copy(), "k": np.full(5, float(k))}
    tr = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid, recorder=rec)
    assert seen == list(grid)
    assert np.array_equal(tr.metrics["k"][:, 0], grid)
    ref = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=np.arange(1, T + 2), recorder=rec)
    assert np.array_equal(tr.metrics["x0"], ref.metrics["x0"][grid - 1])


def test_frank_wolfe_fast_path_matches_oracles():
    inst = T1.family.draw(3)
    batch = InstanceBatch([inst])
    T = 200
    eta, _ = _sched(1, T)
    tr = frank_wolfe(batch, eta=eta, rounds=T)
    loss, S = inst.make_loss(), inst.set
    x = inst.start()
    for t in range(T):
        x = (1 - eta[t, 0]) * x + eta[t, 0] * S.lmo(Loss.full_grad(loss, x))
    np.testing.assert_allclose(tr.final["xbar"][0], x, rtol=1e-12, atol=1e-13)


# ---- kernels == oracles ---------------------------------------------------------------------------
@pytest.mark.parametrize("S", [L1Ball(np.array([1.0, 2.0, 0.5]), 5), Simplex(np.array([1.0, 2.0, 0.5]), 5),
                               L1Ball(1.5, 5)])
def test_vertex_lmo_equals_set_lmo_with_ties_zeros_and_nan(S):
    rng = np.random.default_rng(0)
    lmo = make_vertex_lmo(S, (3, 4, 5))
    for trial in range(500):
        G = rng.integers(-2, 3, (3, 4, 5)).astype(float) if trial % 2 else rng.standard_normal((3, 4, 5))
        if trial % 7 == 0:
            G[0, 1] = 0.0
            G[1, 2] = -0.0
        if trial % 11 == 0:
            G[2, 3, 2] = np.nan
        j, val = lmo(G)
        s = np.zeros(G.size)
        s[lmo.flat] = val
        assert np.array_equal(s, S.lmo(G).reshape(-1))
    sub = lmo.slice(1, 3)
    G = rng.standard_normal((2, 4, 5))
    j, val = sub(G)
    s = np.zeros(G.size)
    s[sub.flat] = val
    assert np.array_equal(s, slice_set(S, 1, 3).lmo(G).reshape(-1))


@pytest.mark.parametrize("cls", [LeastSquares, Logistic])
def test_grad_kernels_equal_oracles(cls):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((3, 4, 6, 5))
    b = np.sign(rng.standard_normal((3, 4, 6))) if cls is Logistic else rng.standard_normal((3, 4, 6))
    loss = cls(A, b)
    X = rng.standard_normal((3, 4, 5))
    out = np.empty_like(X)
    np.testing.assert_allclose(make_grad_kernel(loss, 0.25)(X, out), 0.25 * loss.grad(X), rtol=1e-13, atol=1e-15)
    x = rng.standard_normal((3, 5))
    out = np.empty_like(x)
    np.testing.assert_allclose(make_full_grad_kernel(loss)(x, out), Loss.full_grad(loss, x), rtol=1e-13, atol=1e-15)
    k = make_grad_kernel(loss, 0.25).slice(1, 3)
    if k is not None:
        out = np.empty((2, 4, 5))
        np.testing.assert_allclose(k(X[1:3], out), 0.25 * loss.grad(X)[1:3], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("shape", [(3, 4, 6, 5), (4, 6, 5), (2, 3, 2, 9)])  # (B, n, m, p); m*n < p in the last
def test_least_squares_fast_F_and_grad_F(shape):
    rng = np.random.default_rng(2)
    A = rng.standard_normal(shape)
    b = rng.standard_normal(shape[:-1])
    loss = LeastSquares(A, b)
    lead = shape[:-3]
    x = rng.standard_normal(lead + (shape[-1],))
    np.testing.assert_allclose(loss.full_value(x), Loss.full_value(loss, x), rtol=1e-13)
    np.testing.assert_allclose(loss.full_grad(x), Loss.full_grad(loss, x), rtol=1e-12, atol=1e-14)
    # extra leading axes broadcast as in the base class
    xs = rng.standard_normal((7,) + lead + (shape[-1],))
    np.testing.assert_allclose(loss.full_value(xs), Loss.full_value(loss, xs), rtol=1e-13)
    np.testing.assert_allclose(loss.full_grad(xs), Loss.full_grad(loss, xs), rtol=1e-12, atol=1e-14)
    # near a perfect fit the residual form keeps its accuracy (no cancellation against ||b||^2)
    if shape[-2] * shape[-3] > shape[-1]:
        w = rng.standard_normal(lead + (shape[-1],))
        exact = LeastSquares(A, np.einsum("...nmp,...p->...nm", A, w) + 1e-9 * rng.standard_normal(shape[:-1]))
        np.testing.assert_allclose(exact.full_value(w), Loss.full_value(exact, w), rtol=1e-6)


# ---- memory ---------------------------------------------------------------------------------------
def _peak(fn):
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def test_memory_does_not_grow_with_rounds_unless_iterates_are_recorded():
    batch = InstanceBatch([T1.family.draw(s) for s in range(8)])
    peaks, peaks_it = [], []
    for T in (1500, 6000):
        eta, lam = _sched(8, T)
        grid = record_grid(T + 1)
        peaks.append(_peak(lambda: fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid)))
        peaks_it.append(_peak(lambda: fedfw(batch, eta=eta, lam=lam, rounds=T, grid=np.arange(1, T + 2),
                                            recorder=with_iterates(default_recorder(batch)))))
    assert peaks[1] < 1.25 * peaks[0]          # the recorded grid grows only logarithmically
    assert peaks_it[1] > 3 * peaks_it[0]       # every iterate kept: linear in the rounds


# ---- the compiled path (numba) and the numpy path give the same runs ------------------------------
@pytest.mark.parametrize("set_name", ["l1", "simplex"])
def test_compiled_and_numpy_paths_agree(monkeypatch, set_name):
    from fedcheck.algorithms import jit
    from fedcheck.problems.instances import RandomFamily
    if not jit.AVAILABLE:
        pytest.skip("numba is not available: only the numpy path exists")
    fam = RandomFamily(set=set_name, n=5, m=8, p=6)
    batch = InstanceBatch([fam.draw(s) for s in range(3)])
    eta, lam = _sched(3, 300, per_instance=False)
    fast = fedfw(batch, eta=eta, lam=lam, rounds=300)
    monkeypatch.setattr(jit, "AVAILABLE", False)
    monkeypatch.setattr(jit, "_ls_record_compiled", None)
    monkeypatch.setattr(jit, "_consensus_compiled", None)
    slow = fedfw(batch, eta=eta, lam=lam, rounds=300)
    np.testing.assert_allclose(fast.final["X"], slow.final["X"], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(fast.final["xbar"], slow.final["xbar"], rtol=1e-12, atol=1e-13)
    for k in ("F", "consensus", "infeasibility"):
        np.testing.assert_allclose(fast.metrics[k], slow.metrics[k], rtol=1e-12, atol=1e-14)
    # and both equal the plain loop
    X, xbar = fedfw_loop(batch, eta, lam, 300)
    np.testing.assert_allclose(slow.final["X"], X, rtol=1e-12, atol=1e-13)
