"""The compiled paths (numba) against the numpy reference they replace (no timing here).

* least squares' local steps (``fedavg_jit.ls_local_steps``: the one FedAvg's local steps, ``pieces.local_steps``
  and so FedProx through ``federated``): the blocked (vectorized) and the per-row kernel give the same bits;
  against numpy the products ``H_i w`` are summed in index order instead of BLAS's order, so the results agree
  to a few units in the last place (ulps of the largest entry), not bit for bit;
* the fused FedAvg round and the unrolled blocked kernel (``fedavg_jit``): the bits of the kernels they replace;
* FedFW on least squares in factored form (compiled round with an incremental ``A_i x_i``): the same iterates
  as the numpy path up to rounding, and its every-round stream equal to the recorder's values bit for bit.
"""
import numpy as np
import pytest

from fedcheck.algorithms import fedavg_jit as FJ
from fedcheck.algorithms import kernels as K
from fedcheck.algorithms import pieces
from fedcheck.problems import losses as L
from fedcheck.problems.instances import InstanceBatch, RandomFamily

needs_numba = pytest.mark.skipif(K.ls_local_steps_compiled is None, reason="numba is off (FEDCHECK_JIT=0 or absent)")


def ulps(a, b) -> float:
    """max |a - b| in units of the last place of the largest |b| (0 when equal)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / np.spacing(np.max(np.abs(b))))


def _batch(n=4, p=7, B=5, seed=0):
    fam = RandomFamily(loss="least_squares", set="l2", n=n, m=12, p=p, radius=1.0, heterogeneity=2.0)
    return InstanceBatch([fam.draw(seed + s) for s in range(B)])


def _numpy_steps(batch, W, eta, steps, anchor=None, mu=None, project=False):
    loss = batch.loss
    Y = W.copy()
    for t in range(steps):
        G = loss.grad(Y)
        if anchor is not None:
            G = G + mu[:, None, None] * (Y - anchor[:, None, :])
        Y = Y - eta[t][:, None, None] * G
        if project:
            Y = batch.set.project(Y)
    return Y


@needs_numba
@pytest.mark.parametrize("n,p", [(3, 5), (4, 8), (5, 11), (2, 20)])
@pytest.mark.parametrize("prox", [False, True])
def test_ls_local_steps_equal_numpy_to_a_few_ulps(n, p, prox):
    batch = _batch(n=n, p=p)
    B = batch.B
    rng = np.random.default_rng(p)
    W = rng.standard_normal((B, n, p))
    eta = 0.3 / np.asarray(batch.loss.smoothness()).max(-1) * rng.uniform(0.5, 1.5, (6, B))
    anchor, mu = (W.mean(1), np.full(B, 0.1)) if prox else (None, None)
    rad = np.broadcast_to(np.asarray(batch.set.radius, dtype=float), (B,))
    got = FJ.ls_local_steps(batch.loss, W, eta, 6, anchor=anchor, mu=mu, radius=rad)
    ref = _numpy_steps(batch, W, eta, 6, anchor, mu, project=True)
    assert ulps(got, ref) <= 16
    # the per-row kernel (taken when the instances' step counts differ) gives the blocked kernel's bits
    counts = np.array([6] * (B - 1) + [5])
    per_row = FJ.ls_local_steps(batch.loss, W, eta, counts, anchor=anchor, mu=mu, radius=rad)
    np.testing.assert_array_equal(per_row[:-1], got[:-1])
    assert ulps(per_row[-1], _numpy_steps(batch, W, eta, 5, anchor, mu, project=True)[-1]) <= 16


@needs_numba
def test_ls_local_steps_declines_what_it_does_not_take():
    batch = _batch()
    W = np.zeros((batch.B, batch.n, batch.p))
    eta = np.full((2, batch.B), 0.1)
    assert FJ.ls_local_steps(batch.loss, W[:, :2], eta, 2) is None              # not the batch's clients
    assert FJ.ls_local_steps(batch.loss, W, eta[:, :2], 2) is None              # step sizes of other rows
    lad = L.LAD(batch.loss.A, batch.loss.b)
    assert FJ.ls_local_steps(lad, W, eta, 2) is None                            # another loss


@needs_numba
def test_fedprox_round_function_compiled_equals_numpy(monkeypatch):
    """The FedProx example through ``federated``: the compiled building block against numpy's steps."""
    from examples.fedprox_claims import fedprox
    batch = _batch(n=4, p=6, B=4)
    T = 30
    L_ = np.asarray(batch.loss.smoothness()).max(-1)
    kw = dict(eta=np.broadcast_to(1.0 / L_, (T, batch.B)).copy(), mu=np.full((T, batch.B), 0.1), local_steps=3)
    fast = fedprox(batch, rounds=T, **kw)
    monkeypatch.setattr(pieces, "_compiled_local_steps", lambda *a: None)
    ref = fedprox(batch, rounds=T, **kw)
    assert ulps(fast.final["X"], ref.final["X"]) <= 64
    assert ulps(fast.metrics["F"], ref.metrics["F"]) <= 64


@needs_numba
def test_fedavg_least_squares_compiled_equals_numpy(monkeypatch):
    from fedcheck.algorithms import fedavg as FA
    from theorems.fedmls.methods import fedavg
    batch = _batch(n=5, p=9, B=4)
    T = 40
    eta = np.broadcast_to(0.5 / np.asarray(batch.loss.smoothness()).max(-1), (T, batch.B)).copy()
    Tk = np.full((T, batch.B), 3)
    Tk[::7, 1] = 2                                         # per-instance step counts: the per-row kernel
    fast = fedavg(batch, rounds=T, T=Tk, eta=eta)
    monkeypatch.setattr(FA, "ls_fedavg", lambda *a: None)            # the fused round off: the local steps only
    steps_only = fedavg(batch, rounds=T, T=Tk, eta=eta)
    monkeypatch.setattr(FA, "ls_local_steps", lambda *a, **k: None)
    ref = fedavg(batch, rounds=T, T=Tk, eta=eta)
    assert ulps(fast.final["xbar"], ref.final["xbar"]) <= 64
    assert ulps(fast.metrics["F"], ref.metrics["F"]) <= 64
    # the fused round (steps from the server point and the mean in one call) is the local steps' bits
    for k in fast.metrics:
        np.testing.assert_array_equal(fast.metrics[k], steps_only.metrics[k])
    np.testing.assert_array_equal(fast.final["X"], steps_only.final["X"])


@needs_numba
@pytest.mark.parametrize("n,p,B", [(3, 2, 3), (10, 20, 7), (4, 33, 2)])
def test_fused_fedavg_round_is_the_local_steps_bit_for_bit(monkeypatch, n, p, B):
    """The fused round (``fedavg_jit.LSFedAvg``) with a step per local step (``eta_step``) and per-round step
    counts that are uniform in some rounds (fused) and not in others (the row kernel): the bits of the
    local-steps path, and within a few ulps of numpy."""
    from fedcheck.algorithms import fedavg as FA
    from theorems.fedmls.methods import fedavg
    batch = _batch(n=n, p=p, B=B, seed=3)
    T = 25
    L_ = np.asarray(batch.loss.smoothness()).max(-1)
    es = np.broadcast_to(0.5 / L_, (200, B)) * np.linspace(1.0, 0.3, 200)[:, None]
    Tk = np.full((T, B), 3)
    Tk[::4, 0] = 1
    Tk[5] = 0
    fast = fedavg(batch, rounds=T, T=Tk, eta_step=es)
    monkeypatch.setattr(FA, "ls_fedavg", lambda *a: None)
    steps_only = fedavg(batch, rounds=T, T=Tk, eta_step=es)
    for k in fast.metrics:
        np.testing.assert_array_equal(fast.metrics[k], steps_only.metrics[k])
    np.testing.assert_array_equal(fast.final["X"], steps_only.final["X"])
    monkeypatch.setattr(FA, "ls_local_steps", lambda *a, **k: None)
    ref = fedavg(batch, rounds=T, T=Tk, eta_step=es)
    assert ulps(fast.final["xbar"], ref.final["xbar"]) <= 64


@needs_numba
@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 21, 64, 128])
@pytest.mark.parametrize("prox,proj", [(False, False), (True, True), (False, True)])
def test_blocked_kernel_is_the_row_kernel_bit_for_bit(p, prox, proj):
    """``fedavg_jit.steps_blocked`` (rows in blocks of eight lanes, ``H w`` by the vector intrinsic: outputs eight,
    four and one to three at a time -- every remainder of ``p`` below) against the row kernel
    ``kernels._ls_local_steps_loop`` (one row at a time, ``H w`` term by term): the same index-order sums, the same
    bits; 12 rows, so the last block is partial."""
    batch = _batch(n=3, p=p, B=4, seed=p)
    B, n = batch.B, batch.n
    rng = np.random.default_rng(p)
    W = rng.standard_normal((B, n, p))
    eta = 0.3 / np.asarray(batch.loss.smoothness()).max(-1) * rng.uniform(0.5, 1.5, (4, B))
    anchor = W.mean(1) if prox else np.zeros((1, 1))
    mu = np.full(B, 0.1) if prox else np.zeros(1)
    rad = np.full(B, 0.7) if proj else np.zeros(1)
    Hb, cb = K.blocked_layout(batch.loss)
    a, b = W.copy(), W.copy()
    K.ls_local_steps_compiled(a, batch.loss.H, batch.loss.c, eta, np.full(B, 4, dtype=np.int64), anchor, mu, prox,
                               rad, proj, np.empty(p))
    FJ.steps_blocked(b, Hb, cb, eta, 4, anchor, mu, rad, prox, proj, np.empty((3 * p + 13, cb.shape[-1])))
    np.testing.assert_array_equal(a, b)


@needs_numba
def test_factored_fedfw_compiled_round_and_stream(monkeypatch):
    from fedcheck.algorithms import default_recorder, fedfw, jit, record_grid
    from fedcheck.algorithms.kernels import FactoredGrad, make_grad_kernel
    monkeypatch.setattr(L, "FACTOR_LIMIT_BYTES", -1)
    fam = RandomFamily(n=5, m=4, p=12)
    batch = InstanceBatch([fam.draw(s) for s in range(3)])
    assert isinstance(make_grad_kernel(batch.loss, 0.2), FactoredGrad)
    T = 150
    eta = np.broadcast_to((2.0 / (np.arange(1, T + 1) + 1))[:, None], (T, 3)).copy()
    lam = np.broadcast_to(np.sqrt(np.arange(1, T + 1) + 1.0)[:, None], (T, 3)).copy()
    rows = []
    got = fedfw(batch, eta, lam, T, grid=record_grid(T + 1), recorder=default_recorder(batch),
                stream=lambda k, v: rows.append(np.array(v["F"])))
    streamed = np.concatenate(rows)
    # the stream is the recorder's value bit for bit on the recorded rounds
    np.testing.assert_array_equal(streamed[got.rounds - 1], got.metrics["F"])
    monkeypatch.setattr(jit, "AVAILABLE", False)            # the numpy path (the reference)
    ref = fedfw(batch, eta, lam, T, grid=record_grid(T + 1), recorder=default_recorder(batch))
    np.testing.assert_allclose(got.final["xbar"], ref.final["xbar"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.metrics["F"], ref.metrics["F"], rtol=1e-12)


@needs_numba
def test_least_squares_F_by_columns_is_the_rows_form_bit_for_bit(monkeypatch):
    """``F`` of large least squares by columns (vectorized) equals the rows form of the recorder exactly."""
    from fedcheck.algorithms import jit
    fam = RandomFamily(loss="least_squares", set="l1", n=3, m=30, p=jit.COLUMNS_FROM + 6)
    batch = InstanceBatch([fam.draw(s) for s in range(3)])
    X = np.random.default_rng(0).standard_normal((batch.B, batch.n, batch.p)) * 0.1
    cols = jit.least_squares_recorder(batch.loss, batch.set)(2, X, X.mean(1))
    monkeypatch.setattr(jit, "COLUMNS_FROM", 10**9)
    rows = jit.least_squares_recorder(batch.loss, batch.set)(2, X, X.mean(1))
    for name in ("F", "consensus", "infeasibility"):
        np.testing.assert_array_equal(cols[name], rows[name])
    np.testing.assert_allclose(cols["F"], batch.loss.full_value(X.mean(1)), rtol=1e-13)


@pytest.mark.parametrize("where", ["none", "X nan", "x inf", "X -inf and inf", "overflowing finite sum"])
def test_round_contract_finiteness_by_sums_is_exact(where):
    """The round contract tests finiteness by one sum per array, the per-run test when a sum is not finite:
    every run with a NaN or an infinity is caught at its round, a finite array whose sum overflows is not."""
    from fedcheck.algorithms.contract import RoundContract
    B, n, p = 4, 3, 5
    X, x = np.ones((B, n, p)), np.ones((B, p))
    want = np.zeros(B)
    if where == "X nan":
        X[2, 1, 3] = np.nan
        want[2] = 7
    elif where == "x inf":
        x[0, 4] = np.inf
        want[0] = 7
    elif where == "X -inf and inf":
        X[1, 0, 0], X[1, 2, 1] = -np.inf, np.inf          # the sum is NaN
        want[1] = 7
    elif where == "overflowing finite sum":
        X[:] = 1e308                                        # finite; its sum is inf
    c = RoundContract(lambda *a: None, "round function", B, n, p)
    c.check((X, x), 7)
    np.testing.assert_array_equal(c.first_nonfinite, want)
    vals = c.mask({"F": np.arange(B, dtype=float)})
    assert np.array_equal(np.isnan(vals["F"]), want > 0)


@needs_numba
@pytest.mark.parametrize("lam_kind", ["scalar", "per instance"])
def test_compiled_l1_prox_is_numpys_bit_for_bit(lam_kind):
    """``composite_jit.prox_of`` (soft-thresholding in one compiled pass) against ``L1.prox``: the same bits,
    zeros of both signs, thresholds of zero, infinities and NaN included; a mask declines (numpy)."""
    from fedcheck.algorithms.composite_jit import prox_of
    from fedcheck.problems.regularizers import L1
    B, S, d = 6, 3, 7
    rng = np.random.default_rng(5)
    lam = 0.3 if lam_kind == "scalar" else rng.uniform(0.0, 1.0, B)
    reg = L1(lam, d)
    prox = prox_of(reg)
    assert getattr(prox, "compiled", False)
    Z = rng.standard_normal((B, S, d))
    Z[0, 0, :4] = [0.0, -0.0, np.inf, -np.inf]
    Z[1, 2, 1] = np.nan
    Z[2, 1, :] = 0.3                               # |z| - t exactly zero for a scalar lam, a = 1
    for a in (0.0, 1.0, rng.uniform(0.0, 2.0, B), np.float64(0.7)):
        for z in (Z, Z[:, 0, :].copy()):
            got, ref = prox(z, a), reg.prox(z, a)
            assert got.shape == ref.shape
            np.testing.assert_array_equal(got, ref)
            assert np.array_equal(np.signbit(got), np.signbit(ref))
    masked = L1(lam, d, mask=np.r_[np.ones(d - 1), 0.0])
    assert prox_of(masked) == masked.prox


@needs_numba
@pytest.mark.parametrize("method", ["feddualavg", "fedmid", "fedmid_osp"])
def test_composite_runs_with_the_compiled_prox_are_numpys_bit_for_bit(monkeypatch, method):
    from fedcheck.algorithms import composite as E
    from fedcheck.problems import composite as P
    from theorems.feddualavg.problems import SharedQuadraticFamily
    fam = SharedQuadraticFamily(d=5, M=3, K=4, mu=0.1, tau=0.5, noise=0.3, reg="l1", lam=0.2, geometry="euclidean")
    prob = P.batch_of([fam.draw(s) for s in range(4)])
    alg = getattr(E, method)
    ec = np.linspace(0.02, 0.08, 4)

    def run():
        return alg(prob, rounds=30, eta_c=ec, eta_s=1.0, rng=np.random.default_rng(np.random.SeedSequence(3)))
    fast = run()
    monkeypatch.setattr(E, "prox_of", lambda reg: reg.prox)
    ref = run()
    for k in ref.metrics:
        np.testing.assert_array_equal(fast.metrics[k], ref.metrics[k])
    for k in ref.final:
        np.testing.assert_array_equal(fast.final[k], ref.final[k])


@needs_numba
def test_fused_fedavg_round_declines_step_sizes_of_another_shape(monkeypatch):
    """Step sizes ``(rounds, 1)`` (broadcast by numpy's path) are not the fused round's ``(B,)``: it declines and
    the run is the previous paths' run."""
    from fedcheck.algorithms import fedavg as FA
    from fedcheck.algorithms.pieces import static_oracle
    batch = _batch(n=3, p=5, B=4, seed=9)
    eta = np.full((6, 1), 0.05)
    kw = dict(rounds=6, n=batch.n, eta=eta, steps=2)
    x0 = batch.x0()[:, 0, :].copy()
    got = FA.run_fedavg(x0, static_oracle(batch.loss.grad), **kw)
    monkeypatch.setattr(FA, "ls_fedavg", lambda *a: None)
    ref = FA.run_fedavg(x0, static_oracle(batch.loss.grad), **kw)
    np.testing.assert_array_equal(got.final["x"], ref.final["x"])


@needs_numba
@pytest.mark.parametrize("p", [3, 10, 21])
def test_blocked_kernel_keeps_the_row_kernels_bits_on_special_values(p):
    """Infinities, NaNs and signed zeros in the clients' points: the vector intrinsic gives the row kernel's values
    exactly, NaN where it has NaN and the sign of every zero (a NaN's own sign and payload are not compared: LLVM
    may commute an addition's operands, which changes only which NaN an addition of two NaNs returns)."""
    batch = _batch(n=3, p=p, B=4, seed=100 + p)
    B, n = batch.B, batch.n
    rng = np.random.default_rng(p)
    W = rng.standard_normal((B, n, p))
    W[0, 0, 0], W[1, 2, p - 1], W[2, 1, p // 2] = np.inf, np.nan, -np.inf
    W[3] = -0.0
    eta = 0.3 / np.asarray(batch.loss.smoothness()).max(-1) * rng.uniform(0.5, 1.5, (2, B))
    for prox, proj in [(False, False), (True, True)]:
        anchor = np.where(np.isfinite(W.mean(1)), W.mean(1), 0.0) if prox else np.zeros((1, 1))
        mu = np.full(B, 0.1) if prox else np.zeros(1)
        rad = np.full(B, 0.7) if proj else np.zeros(1)
        Hb, cb = K.blocked_layout(batch.loss)
        a, b = W.copy(), W.copy()
        K.ls_local_steps_compiled(a, batch.loss.H, batch.loss.c, eta, np.full(B, 2, dtype=np.int64), anchor, mu,
                                   prox, rad, proj, np.empty(p))
        FJ.steps_blocked(b, Hb, cb, eta, 2, anchor, mu, rad, prox, proj, FJ.work_array(p))
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(np.signbit(a) & ~np.isnan(a), np.signbit(b) & ~np.isnan(b))


@needs_numba
@pytest.mark.parametrize("B,n,p,k_rows", [(64, 8, 10, 10), (13, 3, 5, 5), (5, 2, 3, 2), (9, 4, 21, 21), (8, 1, 1, 1)])
def test_the_recorder_in_vector_lanes_is_the_scalar_recorder(B, n, p, k_rows):
    """``jit._ls_record_lanes`` (``F`` and the consensus eight instances at a time by ``lanes.lanes_sumsq`` and
    ``lanes.lanes_consensus``) against ``jit._ls_record`` (one instance at a time): the same F, consensus and
    infeasibility, also with infinities, NaNs and huge values (overflow) in the server point; B not a multiple of
    eight (the last block's consensus the scalar way)."""
    from fedcheck.algorithms import jit
    from fedcheck.algorithms.lanes import LANES, blocks_of
    rng = np.random.default_rng(B * 100 + p)
    for trial in range(20):
        R = np.triu(rng.standard_normal((B, k_rows, p)))
        q, rho = rng.standard_normal((B, k_rows)), rng.random(B)
        X = rng.standard_normal((B, n, p))
        xb = X.mean(1) * 10.0 ** rng.integers(-5, 200 if trial % 3 == 0 else 5, (B, p))
        for v in (np.inf, -np.inf, np.nan, -0.0)[: trial % 5]:
            xb[rng.integers(B), rng.integers(p)] = v
        rad, gauge = rng.random(B), trial % 4
        a = [np.empty(B) for _ in range(3)]
        b = [np.empty(B) for _ in range(3)]
        with np.errstate(all="ignore"):
            jit._ls_record_compiled(R, q, rho, 0.3, X, xb, rad, gauge, *a, True)
            jit._ls_record_lanes_c(blocks_of(R, B), blocks_of(q, B), R, q, rho, 0.3, X, xb, rad, gauge, *b,
                                   np.empty((p, LANES)), np.empty((1, LANES)))
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
            assert np.array_equal(np.signbit(u) & ~np.isnan(u), np.signbit(v) & ~np.isnan(v))


@needs_numba
def test_the_lanes_probes_pass_here_and_their_failure_turns_the_lanes_off(monkeypatch):
    """The vector lanes are checked once per process against the scalar kernels (``fedavg_jit.lanes_ok``,
    ``jit.recorder_lanes_ok``); where a probe fails (a numba the intrinsics do not fit) the local steps run the row
    kernel and the recorder the scalar kernel -- the same values, only slower."""
    from fedcheck.algorithms import default_recorder, jit
    assert FJ.lanes_ok() and jit.recorder_lanes_ok()
    batch = _batch(n=3, p=6, B=5, seed=3)
    W = np.random.default_rng(1).standard_normal((5, 3, 6))
    eta = np.full((2, 5), 0.05)
    with_lanes = FJ.ls_local_steps(batch.loss, W, eta, 2, radius=np.full(5, 0.5))
    rec = default_recorder(batch)(1, W, W.mean(1))
    monkeypatch.setattr(FJ, "lanes_ok", lambda: False)
    monkeypatch.setattr(jit, "recorder_lanes_ok", lambda: False)
    fresh = _batch(n=3, p=6, B=5, seed=3)
    assert FJ.ls_steps(fresh.loss, 5, 3, 6) is None and FJ.ls_fedavg(fresh.loss, 5, 3, 6) is None
    np.testing.assert_array_equal(FJ.ls_local_steps(fresh.loss, W, eta, 2, radius=np.full(5, 0.5)), with_lanes)
    again = default_recorder(fresh)(1, W, W.mean(1))
    for k in rec:
        np.testing.assert_array_equal(rec[k], again[k])


@pytest.mark.parametrize("shape", [(1,), (7,), (33, 8), (3, 10, 10, 8), (0, 8)])
def test_aligned_arrays_start_on_a_vector_boundary_and_blocks_keep_their_rows(shape):
    """``lanes.aligned_empty``: C-contiguous float64 of the asked shape whose data start on a 64-byte boundary (a
    block's vector never straddles two cache lines); ``lanes.blocks_of`` puts row ``c L + l`` at ``[c, ..., l]``,
    zero padded, in such an array."""
    from fedcheck.algorithms.lanes import ALIGN, LANES, aligned_empty, blocks_of
    for _ in range(5):
        a = aligned_empty(shape)
        assert a.shape == shape and a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable
        assert a.size == 0 or a.ctypes.data % ALIGN == 0
    rows = np.random.default_rng(0).standard_normal((13, 4, 3))
    blk = blocks_of(rows, 13)
    assert blk.shape == (2, 4, 3, LANES) and blk.ctypes.data % ALIGN == 0
    for r in range(16):
        want = rows[r] if r < 13 else np.zeros((4, 3))
        np.testing.assert_array_equal(blk[r // LANES, ..., r % LANES], want)


@needs_numba
def test_gather_rows_moves_the_indexed_rows_into_the_lanes():
    """``lanes.gather_rows``: ``Wb[:, l] = rows[idx[l]]`` for any indices (repeated, out of order), values moved
    unchanged (NaN, -0.0, infinities)."""
    import numba

    from fedcheck.algorithms.lanes import LANES, gather_rows

    @numba.njit
    def run(rows, Wb, idx, p):
        gather_rows(rows, Wb, idx, p)

    rng = np.random.default_rng(4)
    for p in (1, 3, 10, 17):
        rows = rng.standard_normal((5, p))
        rows[1, 0], rows[2, p - 1], rows[3, 0] = np.nan, -0.0, np.inf
        idx = rng.integers(0, 5, LANES).astype(np.int64)
        Wb = np.full((p, LANES), 7.0)
        run(rows, Wb, idx, p)
        np.testing.assert_array_equal(Wb, rows[idx].T)
        assert np.array_equal(np.signbit(Wb), np.signbit(rows[idx].T))


@needs_numba
def test_the_least_squares_recorder_takes_any_layout_of_its_arguments():
    """The compiled recorder's fast path (C-contiguous float64 of the batch's shapes, what an engine's run passes)
    and its general path (any other layout or dtype, made contiguous first) give the same values; wrong shapes
    are refused."""
    from fedcheck.algorithms import default_recorder
    batch = _batch(n=3, p=6, B=9, seed=5)
    rec = default_recorder(batch)
    X = np.random.default_rng(2).standard_normal((9, 3, 6))
    x = X.mean(1)
    fast = rec(1, X, x)
    wide = np.zeros((9, 3, 12))
    wide[..., ::2] = X
    for Xo, xo in [(np.asfortranarray(X), np.asfortranarray(x)), (wide[..., ::2], x[::-1][::-1]), (X.tolist(), x)]:
        other = rec(1, np.asarray(Xo), xo)
        for k in fast:
            np.testing.assert_array_equal(fast[k], other[k])
    with pytest.raises(ValueError, match="least-squares recorder"):
        rec(1, X[:, :, :5], x)


@needs_numba
@pytest.mark.parametrize("k_rows,p", [(70, 70), (40, 70), (1, 65)])
def test_F_by_columns_skips_the_triangles_zeros_with_the_same_bits(k_rows, p):
    """``jit._stream_F_columns`` with ``tri`` (``R`` upper triangular: column ``j`` adds only to rows ``k <= j``)
    gives the bits of every term taken (``tri=False``) and of the recorder's rows form (``jit._ls_record``) --
    also with signed zeros, and with an infinity or NaN in an instance (that instance then takes every term)."""
    from fedcheck.algorithms import jit
    rng = np.random.default_rng(k_rows + p)
    B = 6
    for trial in range(10):
        R = np.triu(rng.standard_normal((B, k_rows, p)))
        R[:, :, ::7] = 0.0
        assert jit.upper_triangular(R)
        q, rho = rng.standard_normal((B, k_rows)), rng.random(B)
        xb = rng.standard_normal((B, p)) * 10.0 ** rng.integers(-3, 3, (B, p))
        xb[0, ::3] = -0.0
        xb[1] = 0.0
        if trial % 2:
            xb[2, rng.integers(p)] = (np.inf, -np.inf, np.nan)[trial % 3]
        RT = np.ascontiguousarray(np.swapaxes(R, -1, -2))
        got = {}
        for tri in (True, False):
            F = np.empty((1, B))
            with np.errstate(all="ignore"):
                jit._stream_F_columns_c(RT, q, rho, 0.25, xb, F, 0, np.empty(k_rows), tri)
            got[tri] = F[0]
        out = [np.empty(B) for _ in range(3)]
        X = np.repeat(xb[:, None, :], 2, axis=1)
        with np.errstate(all="ignore"):
            jit._ls_record_compiled(R, q, rho, 0.25, X, xb, np.ones(B), 2, *out, True)
        np.testing.assert_array_equal(got[True], got[False])
        np.testing.assert_array_equal(got[True], out[0])


@needs_numba
@pytest.mark.parametrize("factored", [False, True])
def test_recorded_rows_of_a_streamed_fedfw_run_are_the_recorders(monkeypatch, factored):
    """With every-round values streamed, FedFW's compiled round writes F itself and its recorded rows take that F
    instead of computing it again (``jit.StreamedRound.recorded``): the trace and the stream are bit for bit those
    of a run whose recorded rows call the recorder."""
    from fedcheck.algorithms import default_recorder, fedfw, jit, record_grid
    if factored:
        monkeypatch.setattr(L, "FACTOR_LIMIT_BYTES", -1)
    fam = RandomFamily(n=5, m=4, p=12) if factored else RandomFamily(n=4, m=10, p=9)
    batch = InstanceBatch([fam.draw(s) for s in range(11)])
    T = 120
    eta = np.broadcast_to((2.0 / (np.arange(1, T + 1) + 1))[:, None], (T, 11)).copy()
    lam = np.broadcast_to(np.sqrt(np.arange(1, T + 1) + 1.0)[:, None], (T, 11)).copy()

    def run():
        rows = []
        tr = fedfw(batch, eta, lam, T, grid=record_grid(T + 1), recorder=default_recorder(batch),
                   stream=lambda k, v: rows.append({n: np.array(a) for n, a in v.items()}))
        return tr, rows
    used = []
    made = jit.StreamedRound.recorded
    monkeypatch.setattr(jit.StreamedRound, "recorded", lambda self, X, x: used.append(1) or made(self, X, x))
    a, sa = run()
    assert used, "the shortcut was not taken"
    monkeypatch.setattr(jit.StreamedRound, "recorded", lambda self, X, x: None)
    b, sb = run()
    for k in ("F", "consensus", "infeasibility"):
        np.testing.assert_array_equal(a.metrics[k], b.metrics[k])
    assert len(sa) == len(sb)
    for u, v in zip(sa, sb):
        for k in u:
            np.testing.assert_array_equal(u[k], v[k])


@needs_numba
def test_streamed_metrics_of_a_non_finite_iterate_are_the_recorders():
    """``jit._stream_metrics`` with ``tri`` skips the zeros of an upper-triangular ``R`` only for an instance whose
    server point is finite: with an infinity or NaN in it, F is the recorder's (NaN from ``0 * inf``), not a
    value the skipped terms would have changed."""
    from fedcheck.algorithms import jit
    rng = np.random.default_rng(9)
    B, n, p = 5, 3, 12
    R = np.triu(rng.standard_normal((B, p, p)))
    q, rho = rng.standard_normal((B, p)), rng.random(B)
    X = rng.standard_normal((B, n, p))
    xb = X.mean(1)
    xb[1, 7], xb[3, 2], xb[4, 0] = np.inf, np.nan, -np.inf
    got = [np.empty((1, B)) for _ in range(3)]
    want = [np.empty(B) for _ in range(3)]
    with np.errstate(all="ignore"):
        jit._stream_metrics_c(R, True, q, rho, 0.5, X, xb, np.ones(B), 0, *got, 0, True)
        jit._ls_record_compiled(R, q, rho, 0.5, X, xb, np.ones(B), 0, *want, True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g[0], w)
    assert np.isnan(got[0][0, 1]) and np.isnan(got[0][0, 3])


@needs_numba
@pytest.mark.parametrize("d,M,S", [(5, 3, None), (9, 20, None), (2, 8, None), (17, 12, 9), (3, 300, None), (1, 4, None)])
def test_feddualavg_step_fused_is_numpys_bit_for_bit(monkeypatch, d, M, S):
    """FedDualAvg's step bookkeeping in one compiled pass (``composite_jit.DualStep``: the discrepancy's sums of
    squares and over clients in numpy's pairwise orders -- sequential below eight terms, eight accumulators from
    eight on --, ``Z - eta_c g``, the clients' mean, the (4.4) average's prox) against numpy: the same trace and
    final point bit for bit, with sampled clients, per-instance ``lam``, more than 128 clients (numpy's pairwise sum
    in halves), and one coordinate (declined: numpy); zeros included by the l1 prox's sparsity."""
    from fedcheck.algorithms import composite as E
    from fedcheck.problems import composite as P
    from theorems.feddualavg.problems import SharedQuadraticFamily
    fam = SharedQuadraticFamily(d=d, M=M, K=3, mu=0.1, tau=0.5, noise=0.3, reg="l1", lam=0.2, geometry="euclidean")
    prob = P.batch_of([fam.draw(s) for s in range(5)])
    ec = np.linspace(0.02, 0.08, 5)
    monkeypatch.setattr(E.CompositeRounds, "of", staticmethod(lambda *a: None))     # the step, not whole rounds
    calls = []
    made = E.DualStep.of
    monkeypatch.setattr(E.DualStep, "of", staticmethod(lambda *a: calls.append(a) or made(*a)))

    def run():
        return E.feddualavg(prob, rounds=25, eta_c=ec, eta_s=1.0, clients_per_round=S,
                            rng=np.random.default_rng(np.random.SeedSequence(3)))
    fast = run()
    assert calls and (made(*calls[0]) is None) == (d < 2)
    monkeypatch.setattr(E.DualStep, "of", staticmethod(lambda *a: None))
    ref = run()
    for k in ref.metrics:
        np.testing.assert_array_equal(fast.metrics[k], ref.metrics[k])
        assert np.array_equal(np.signbit(fast.metrics[k]), np.signbit(ref.metrics[k]))
    for k in ref.final:
        np.testing.assert_array_equal(fast.final[k], ref.final[k])


@needs_numba
@pytest.mark.parametrize("method", ["feddualavg", "fedmid"])
@pytest.mark.parametrize("d,M,noise,lam,block", [(6, 4, "gaussian", 0.2, 2 ** 20), (5, 3, "sphere", None, 700),
                                                  (9, 12, "gaussian", 0.05, 2 ** 20), (2, 130, "gaussian", 0.2, 5000),
                                                  (2, 5, "gaussian", 0.2, 700), (3, 4, "gaussian", None, 2 ** 20),
                                                  (4, 3, "sphere", 0.2, 2 ** 20), (7, 2, "gaussian", 0.1, 900),
                                                  (8, 6, "gaussian", None, 2 ** 17)])
def test_composite_whole_rounds_are_numpys_bit_for_bit(monkeypatch, method, d, M, noise, lam, block):
    """FedDualAvg's and FedMiD's rounds compiled (``composite_jit.CompositeRounds``: blocks of rounds, the block's
    normals drawn at once, the instance axis last; more than 128 clients: the per-instance kernel) against the
    step-by-step path: the same trace on a sparse grid, with a recorder of its own, and the same final points, bit
    for bit (signs of zeros included); per-instance ``lam`` and server steps, blocks that split the run, every
    dimension from 2 to 9 (the sums over ``j`` written out up to 8 coordinates, a loop from 9 on)."""
    from fedcheck.algorithms import composite as E
    from fedcheck.problems import composite as P
    from theorems.feddualavg.problems import SharedQuadraticFamily
    fam = SharedQuadraticFamily(d=d, M=M, K=3, mu=0.1, tau=0.5, noise=0.3, reg="l1", lam=0.2, geometry="euclidean")
    insts = [fam.draw(s) for s in range(5)]
    from dataclasses import replace
    if noise == "sphere":
        insts = [replace(i, noise="sphere") for i in insts]
    if lam is None:
        from fedcheck.problems.regularizers import L1
        insts = [replace(i, reg=L1(0.1 * (s + 1), d)) for s, i in enumerate(insts)]
    prob = P.batch_of(insts)
    alg = getattr(E, method)
    ec, es = np.linspace(0.02, 0.08, 5), np.linspace(0.6, 1.0, 5)
    monkeypatch.setattr(E.CompositeRounds, "BLOCK_NUMBERS", block)
    calls = []
    made = E.CompositeRounds.of
    monkeypatch.setattr(E.CompositeRounds, "of", staticmethod(lambda *a: calls.append(a) or made(*a)))

    def run(**kw):
        return alg(prob, rounds=23, eta_c=ec, eta_s=es, rng=np.random.default_rng(np.random.SeedSequence(3)), **kw)
    mine = lambda problem, R, pts: {"n" + k: np.abs(v).sum(-1) for k, v in pts.items()}   # noqa: E731
    fast = [run(), run(grid=np.array([0, 4, 23])), run(recorder=mine)]
    assert calls and made(*calls[0]) is not None
    monkeypatch.setattr(E.CompositeRounds, "of", staticmethod(lambda *a: None))
    ref = [run(), run(grid=np.array([0, 4, 23])), run(recorder=mine)]
    for f, r in zip(fast, ref):
        np.testing.assert_array_equal(f.rounds, r.rounds)
        assert list(f.metrics) == list(r.metrics)
        for k in r.metrics:
            np.testing.assert_array_equal(f.metrics[k], r.metrics[k])
            assert np.array_equal(np.signbit(f.metrics[k]), np.signbit(r.metrics[k]))
        for k in r.final:
            np.testing.assert_array_equal(f.final[k], r.final[k])
            assert np.array_equal(np.signbit(f.final[k]), np.signbit(r.final[k]))


@needs_numba
def test_lane_pairwise_sum_is_numpys_sum_over_a_contiguous_axis():
    """``compiled.lane_pairwise_sum`` (the one pairwise sum of FedSGM's compiled run and the composite family's
    rounds: the instances in the last axis of its block) against ``np.add.reduce`` over the contiguous last axis of
    each instance's row: the same bits for every length up to 128 (sequential below eight terms, eight accumulators
    from eight on), signs of zeros and NaN included."""
    from fedcheck.problems.compiled import lane_pairwise_sum
    rng = np.random.default_rng(5)
    for n in list(range(0, 41)) + [63, 64, 127, 128]:
        V = rng.standard_normal((6, max(n, 1)))
        V[1] = -0.0                             # every term a negative zero
        V[2] = 0.0
        if n > 3:
            V[3, 3] = np.nan
            V[4, 1] = -V[4, 0]                  # a sum through an exact zero
        out = np.empty(6)
        lane_pairwise_sum(np.ascontiguousarray(V.T), n, out, np.empty((8, 6)))
        want = np.add.reduce(V[:, :n], axis=-1)
        np.testing.assert_array_equal(out, want)
        assert np.array_equal(np.signbit(out), np.signbit(want)), n
