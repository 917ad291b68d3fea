"""Every-round values (``stream=``): the engine hands the recorder's scalar metrics of every iterate
k = 1..T+1 to ``stream(k, values)`` in blocks, so that a bound "for all t" can be checked at every round
while the recorded Trace (the grid) is unchanged.

Checked for FedFW (the compiled round, which computes F and infeasibility itself, and the numpy path),
classical Frank-Wolfe, naive FW averaging and the ``federated`` protocol:

1. at the grid indices the streamed values equal the Trace's -- exactly (tolerance 0: the compiled round
   adds the same terms in the same order as the compiled recorder; elsewhere the values are the
   recorder's own); off the grid the compiled F is compared with ``loss.full_value`` at every round
   (worst relative discrepancy printed; asserted <= 1e-12);
2. the stream covers every index 1..T+1 exactly once, in increasing order, in consecutive blocks;
3. the Trace (metrics and final iterates) is bitwise identical with and without a stream.
No wall-clock assertions: the overhead is measured in benchmarks/engine.py.
"""
import sys

import numpy as np
import pytest

from fedcheck.algorithms import default_recorder, federated, fedfw, frank_wolfe, naive_fw_averaging, record_grid, \
    with_iterates
from fedcheck.algorithms import jit
from fedcheck.algorithms.core import StreamBuffer, scalar_source
from fedcheck.problems.instances import InstanceBatch, RandomFamily
from fedcheck.problems.losses import Loss

fedfw_module = sys.modules["fedcheck.algorithms.fedfw"]   # the package attribute ``fedfw`` is the function


class Collect:
    """A stream that keeps every block (and checks the blocks' shapes as they come)."""

    def __init__(self, B):
        self.B, self.blocks = B, []

    def __call__(self, k, values):
        k = np.asarray(k)
        assert k.ndim == 1 and k.dtype.kind == "i" and len(k) > 0
        for name, v in values.items():
            assert v.shape == (len(k), self.B), (name, v.shape)
        self.blocks.append((k.copy(), {n: np.array(v) for n, v in values.items()}))

    @property
    def k(self):
        return np.concatenate([b[0] for b in self.blocks])

    def values(self, name):
        return np.concatenate([b[1][name] for b in self.blocks])


def _batch(set_name="l1", B=5, n=4, m=6, p=7, seed0=0):
    fam = RandomFamily(loss="least_squares", set=set_name, n=n, m=m, p=p, radius=1.0, heterogeneity=1.0)
    return InstanceBatch([fam.draw(seed0 + s) for s in range(B)])


def _sched(B, T, lam0=1.0):
    t = np.arange(1, T + 1, dtype=float)[:, None]
    eta = np.broadcast_to(2.0 / (t + 1.0), (T, B)).copy()           # Theorem 1's schedules
    lam = np.broadcast_to(lam0 * np.sqrt(t + 1.0), (T, B)).copy()
    return eta, lam


def _grid(T):
    """A log grid that leaves most rounds out (dense only up to 50), so off-grid indices exist."""
    return record_grid(T + 1, dense_until=50, per_decade=20)


def _assert_same_trace(a, b):
    assert np.array_equal(a.rounds, b.rounds)
    assert set(a.metrics) == set(b.metrics)
    for k in a.metrics:
        assert np.array_equal(a.metrics[k], b.metrics[k]), k
    assert set(a.final) == set(b.final)
    for k in a.final:
        assert np.array_equal(a.final[k], b.final[k]), k


def _assert_stream(col, T, trace, grid, tol=0.0):
    # (2) every index exactly once, in order, in consecutive blocks
    assert np.array_equal(col.k, np.arange(1, T + 2))
    for k, _ in col.blocks:
        assert np.array_equal(k, np.arange(k[0], k[0] + len(k)))
    names = set(col.blocks[0][1])
    assert "F" in names and "infeasibility" in names
    assert all(set(v) == names for _, v in col.blocks)
    assert names <= {k for k, v in trace.metrics.items() if v.ndim == 2}
    # (1) at the grid indices: the Trace's values
    for name in names:
        got = col.values(name)[np.asarray(grid) - 1]
        if tol == 0.0:
            assert np.array_equal(got, trace.metrics[name]), name
        else:
            np.testing.assert_allclose(got, trace.metrics[name], rtol=tol, atol=0.0, err_msg=name)


@pytest.fixture
def numpy_path(monkeypatch):
    """The engine without numba (as with FEDCHECK_JIT=0): numpy rounds and the numpy recorder."""
    monkeypatch.setattr(jit, "AVAILABLE", False)
    monkeypatch.setattr(jit, "_ls_record_compiled", None)
    monkeypatch.setattr(jit, "_consensus_compiled", None)


def _fedfw_runs(batch, T, grid, recorder=None, block=None, monkeypatch=None):
    eta, lam = _sched(batch.B, T)
    rec = recorder or default_recorder(batch)
    plain = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid, recorder=rec)
    col = Collect(batch.B)
    streamed = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid, recorder=rec, stream=col)
    return plain, streamed, col


# ---- FedFW, compiled path ------------------------------------------------------------------------
@pytest.mark.parametrize("set_name", ["l1", "simplex"])
def test_fedfw_compiled_streams_every_round(set_name, monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not available")
    monkeypatch.setattr("fedcheck.algorithms.core.STREAM_BLOCK", 64)   # several blocks, a partial last one
    batch = _batch(set_name)
    T = 700
    grid = _grid(T)
    calls = []
    real = fedfw_module._jit_stream_step

    def spy(*a):
        out = real(*a)
        calls.append(out)
        return out
    monkeypatch.setattr(fedfw_module, "_jit_stream_step", spy)
    plain, streamed, col = _fedfw_runs(batch, T, grid)
    assert calls and calls[0] is not None, "the compiled streaming round was not used"
    _assert_same_trace(plain, streamed)
    _assert_stream(col, T, plain, grid, tol=0.0)     # bit for bit at the grid
    assert len(col.blocks) > 1


def test_fedfw_compiled_F_equals_the_exact_objective_at_every_round():
    """Off the grid too: the streamed F is F(xbar^k) of the loss's own oracle at every k (the run is
    replayed with xbar recorded at every round; the worst relative discrepancy is printed)."""
    batch = _batch("l1", B=4)
    T = 400
    eta, lam = _sched(batch.B, T)
    full = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=np.arange(1, T + 2),
                 recorder=with_iterates(default_recorder(batch)))
    col = Collect(batch.B)
    fedfw(batch, eta=eta, lam=lam, rounds=T, grid=_grid(T), stream=col)
    exact = Loss.full_value(batch.loss, full.metrics["xbar"])          # (T+1, B), residual form, numpy
    worst = float(np.max(np.abs(col.values("F") - exact) / np.abs(exact)))
    print(f"worst relative |F_stream - F_exact| over every round: {worst:.2e}")
    assert worst <= 1e-12
    assert np.array_equal(col.values("F"), full.metrics["F"])           # and the recorder's F, bit for bit
    assert np.array_equal(col.values("infeasibility"), full.metrics["infeasibility"])


def test_fedfw_compiled_stream_with_consensus(monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not available")
    monkeypatch.setattr(fedfw_module, "STREAM_CONSENSUS", True)
    batch = _batch("l1", B=6)       # 6 instances: the 4-wide consensus loop and its remainder
    T = 300
    grid = _grid(T)
    plain, streamed, col = _fedfw_runs(batch, T, grid)
    _assert_same_trace(plain, streamed)
    _assert_stream(col, T, plain, grid, tol=0.0)
    assert "consensus" in col.blocks[0][1]


def test_fedfw_stream_through_with_iterates():
    """``with_iterates`` adds non-scalar entries: they are not streamed; the scalar ones still are."""
    batch = _batch("l1")
    T = 250
    grid = _grid(T)
    plain, streamed, col = _fedfw_runs(batch, T, grid, recorder=with_iterates(default_recorder(batch)))
    _assert_same_trace(plain, streamed)
    _assert_stream(col, T, plain, grid)
    assert "xbar" not in col.blocks[0][1]


# ---- FedFW, numpy path (FEDCHECK_JIT=0) ------------------------------------------------------------
@pytest.mark.parametrize("set_name", ["l1", "simplex", "l2"])
def test_fedfw_numpy_path_streams_every_round(set_name, numpy_path, monkeypatch):
    # tiny instance groups: without a stream the cache-blocked driver runs, with one the plain rounds
    monkeypatch.setattr("fedcheck.algorithms.core.CACHE_BYTES", 1)
    monkeypatch.setattr("fedcheck.algorithms.core.MIN_CHUNK_ROWS", 1)
    batch = _batch(set_name)
    T = 400
    grid = _grid(T)
    plain, streamed, col = _fedfw_runs(batch, T, grid)
    _assert_same_trace(plain, streamed)
    _assert_stream(col, T, plain, grid, tol=0.0)
    assert set(col.blocks[0][1]) == {"F", "consensus", "infeasibility"}


def test_fedfw_per_instance_schedules_stream(numpy_path):
    batch = _batch("l1")
    T = 200
    eta, lam = _sched(batch.B, T)
    lam = lam * np.linspace(0.5, 2.0, batch.B)[None, :]
    grid = _grid(T)
    plain = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid)
    col = Collect(batch.B)
    streamed = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid, stream=col)
    _assert_same_trace(plain, streamed)
    _assert_stream(col, T, plain, grid)


# ---- Frank-Wolfe and naive averaging ---------------------------------------------------------------
@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_frank_wolfe_streams_every_round(path, request):
    if path == "numpy":
        request.getfixturevalue("numpy_path")
    batch = _batch("l1")
    T = 500
    eta, _ = _sched(batch.B, T)
    grid = _grid(T)
    plain = frank_wolfe(batch, eta=eta, rounds=T, grid=grid)
    col = Collect(batch.B)
    streamed = frank_wolfe(batch, eta=eta, rounds=T, grid=grid, stream=col)
    _assert_same_trace(plain, streamed)
    _assert_stream(col, T, plain, grid)


def test_naive_fw_averaging_streams_every_round():
    batch = _batch("simplex")
    T = 150
    eta, _ = _sched(batch.B, T)
    grid = _grid(T)
    plain = naive_fw_averaging(batch, eta=eta, rounds=T, local_steps=2, grid=grid)
    col = Collect(batch.B)
    streamed = naive_fw_averaging(batch, eta=eta, rounds=T, local_steps=2, grid=grid, stream=col)
    _assert_same_trace(plain, streamed)
    _assert_stream(col, T, plain, grid)


# ---- the federated() protocol ---------------------------------------------------------------------
def _fedprox_round(X, x, ctx, *, eta, mu, local_steps=3):
    Y = ctx.broadcast(x)
    for _ in range(local_steps):
        Y = ctx.project(Y - ctx.col(eta) * (ctx.grad(Y) + ctx.col(mu) * (Y - x[:, None, :])))
    return Y, Y.mean(1)


def _noisy_round(X, x, ctx, *, eta):
    """A stochastic method: the stream must not disturb the random streams."""
    G = ctx.grad(X) + 0.01 * ctx.normal(X.shape[1:])
    Y = ctx.project(X - ctx.col(eta) * G)
    return Y, Y.mean(1)


@pytest.mark.parametrize("round_fn", [_fedprox_round, _noisy_round])
@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_federated_protocol_streams_every_round(round_fn, path, request):
    if path == "numpy":
        request.getfixturevalue("numpy_path")
    algo = federated(round_fn, name=round_fn.__name__)
    batch = _batch("l2")
    T = 300
    eta = np.full((T, batch.B), 0.05)
    kw = {"eta": eta}
    if round_fn is _fedprox_round:
        kw["mu"] = np.full((T, batch.B), 0.1)
    grid = _grid(T)
    plain = algo(batch, rounds=T, grid=grid, seeds=list(range(batch.B)), **kw)
    col = Collect(batch.B)
    streamed = algo(batch, rounds=T, grid=grid, seeds=list(range(batch.B)), stream=col, **kw)
    _assert_same_trace(plain, streamed)
    _assert_stream(col, T, plain, grid)


# ---- the driver's edge cases --------------------------------------------------------------------
@pytest.mark.parametrize("T", [0, 1, 2, 63, 64, 65])
def test_stream_block_edges(T, monkeypatch):
    monkeypatch.setattr("fedcheck.algorithms.core.STREAM_BLOCK", 16)
    batch = _batch("l1", B=3)
    eta, lam = _sched(batch.B, max(T, 1))
    for grid in (record_grid(T + 1), np.array([T + 1]), np.array([1, T + 1])):
        grid = np.unique(grid)
        plain = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid)
        col = Collect(batch.B)
        streamed = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid, stream=col)
        _assert_same_trace(plain, streamed)
        _assert_stream(col, T, plain, grid)
        assert all(len(k) <= 16 for k, _ in col.blocks)


def test_stream_buffer_refuses_gaps_and_hands_out_fresh_blocks():
    got = []
    buf = StreamBuffer(lambda k, v: got.append((k, v)), rows=2)
    for k in (1, 2, 3):
        buf.push(k, {"F": np.full(2, float(k)), "xbar": np.zeros((2, 3))})
    with pytest.raises(ValueError):
        buf.push(5, {"F": np.zeros(2)})
    buf.flush()
    assert [list(k) for k, _ in got] == [[1, 2], [3]]
    assert got[0][1]["F"].tolist() == [[1.0, 1.0], [2.0, 2.0]]     # not overwritten by the next block
    assert set(got[0][1]) == {"F"}


def test_scalar_source_sees_through_wrappers():
    batch = _batch("l1", B=2)
    base = default_recorder(batch)
    assert scalar_source(with_iterates(with_iterates(base), clients=True)) is base
    assert scalar_source(base) is base


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba")
@pytest.mark.parametrize("factored", [False, True])
def test_fedfw_stream_rounds_in_one_call_are_the_round_by_rounds(factored, monkeypatch):
    """The compiled streamed round's ``many`` (the rounds between two recorded iterates, within one stream block, in
    one compiled call) against the same rounds one call each: the same trace, final point and stream, bit for bit,
    across block edges."""
    monkeypatch.setattr("fedcheck.algorithms.core.STREAM_BLOCK", 16)
    monkeypatch.setattr("fedcheck.problems.losses.FACTOR_LIMIT_BYTES", 0 if factored else 2 ** 62)
    batch = _batch("l1", B=3, m=4 if factored else 6, p=30 if factored else 7)
    assert bool(batch.loss.factored) == factored
    T = 150
    grid = _grid(T)
    runs = []
    for one_by_one in (False, True):
        if one_by_one:
            for name in ("bind", "bind_factored"):
                made = getattr(jit.StreamedRound, name)

                def without_many(self, *a, made=made, **k):
                    step = made(self, *a, **k)
                    del step.many
                    return step
                monkeypatch.setattr(jit.StreamedRound, name, without_many)
        eta, lam = _sched(batch.B, T)
        col = Collect(batch.B)
        runs.append((fedfw(batch, eta=eta, lam=lam, rounds=T, grid=grid, stream=col), col))
    (a, ca), (b, cb) = runs
    _assert_same_trace(a, b)
    assert np.array_equal(ca.k, cb.k)
    for name in ca.blocks[0][1]:
        assert np.array_equal(ca.values(name), cb.values(name)), name


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba")
@pytest.mark.parametrize("set_name", ["l1", "simplex"])
def test_fedfw_recorded_rows_from_the_stream_are_the_recorders_at_non_finite_points(set_name):
    """A recorded row of the compiled streamed round takes its infeasibility from the row the stream has just written
    and its consensus from the recorder's kernel: the recorder's three values, bit for bit, also at a server point
    with an infinity or a NaN in it."""
    batch = _batch(set_name)
    rec = default_recorder(batch)
    ls = scalar_source(rec).least_squares
    B, n, p = batch.B, batch.n, batch.p
    rng = np.random.default_rng(3)
    X = rng.standard_normal((B, n, p))
    xbar = X.mean(1)
    xbar[0, 1], xbar[-1, 0] = np.inf, np.nan
    fused = jit.StreamedRound(ls)
    F, inf = np.empty((1, B)), np.empty((1, B))
    with np.errstate(all="ignore"):
        jit._stream_metrics_c(fused.R, fused.tri, fused.q, fused.rho, fused.scale, X, xbar, fused.radius,
                              fused.gauge, F, F, inf, 0, False)
        got = fused.recorded(X, xbar)(2, {"F": F[0].copy(), "infeasibility": inf[0].copy()})
        want = ls(2, X, xbar)
    for name in ("F", "consensus", "infeasibility"):
        assert np.array_equal(got[name], want[name], equal_nan=True), name
    assert np.isinf(got["infeasibility"][0]) or np.isnan(got["infeasibility"][0])
