"""The one FedAvg (fedcheck.algorithms.fedavg): against a plain per-client Python loop, each adapter against
a frozen copy of the implementation it replaced (bit for bit), and the participation / compression pieces
with seeded streams."""
import numpy as np
import pytest

from fedcheck.algorithms import composite as C
from fedcheck.algorithms import mls as M
from fedcheck.algorithms import pieces
from theorems.fedsgm import methods as SW
from fedcheck.algorithms import per_row
from fedcheck.algorithms.compression import RandK, UniformStream
from fedcheck.algorithms.core import default_recorder as mls_default_recorder
from fedcheck.algorithms.fedavg import fedavg_rounds, run_fedavg
from fedcheck.algorithms.protocol import Round, row_generators
from fedcheck.problems import composite as PD
from theorems.feddualavg import experiments as PDX
from theorems.feddualavg import methods as PDM
from theorems.feddualavg import problems as PDF
from theorems.fedmls.methods import fedavg as mls_fedavg
from fedcheck.problems import constrained as PS
from theorems.fedsgm import problems as PX
from fedcheck.problems.instances import Instance, InstanceBatch, instance_rng
from fedcheck.problems.sets import L2Ball


# ================================================================================================
# frozen copies of the three implementations the one FedAvg replaced (as of commit 1ef8ae5)
def _old_primal_family(problem, rounds, eta_c, eta_s, client_prox, server_prox, subgradient=False, grid=None,
                       recorder=None, rng=None, clients_per_round=None, hook=None, w0=None):
    def _select(problem, S, rng):
        if S is None or S >= problem.M:
            return None
        return np.argsort(rng.random((problem.B, problem.M)), axis=1)[:, :S]
    B, K = problem.B, problem.K
    ec, es = C._vec(eta_c, B), C._vec(eta_s, B)
    ec3 = ec[:, None, None]
    reg = problem.reg
    run = C._Run(problem, rounds, grid, recorder, rng, clients_per_round)
    w = problem.x0() if w0 is None else np.array(w0, dtype=float)
    if run.want[0]:
        run.take(0, {"w": w, "w_avg": w})
    for r in range(run.R):
        sel = _select(problem, run.S, run.rng)
        ctx = problem.start_round(sel, run.rng)
        S = problem.M if sel is None else sel.shape[1]
        W = np.repeat(w[:, None, :], S, axis=1)
        for k in range(K):
            g = problem.grad(W, ctx, k, run.rng)
            if subgradient:
                g = g + reg.subgrad(W)
            W = W - ec3 * g
            if client_prox:
                W = reg.prox(W, ec)
            if hook is not None:
                hook(r, k, {"W": W, "g": g})
        delta = W.mean(1) - w
        w = w + es[:, None] * delta
        if server_prox:
            w = reg.prox(w, es * ec * K)
        run.w_sum += w
        if run.want[r + 1]:
            run.take(r + 1, {"w": w, "w_avg": run.w_sum / (r + 1)})
    return run.trace({"w": w})


def _old_mls_local_steps(rounds, B, T, eta, eta_step):
    Tk = M.step_counts(T, rounds, B)
    if (eta is None) == (eta_step is None):
        raise ValueError("give exactly one of eta (per round) and eta_step (per local step)")
    if eta is not None:
        eta = M.round_rows(eta, rounds, B, "eta")
        return Tk, lambda k, t, cum: eta[k - 1]
    eta_step = np.asarray(eta_step, dtype=float)
    need = int(Tk.sum(0).max(initial=0))
    if eta_step.shape[0] < need or eta_step.shape[1] != B:
        raise ValueError(f"eta_step has shape {eta_step.shape}; need ({need}, {B}) (row s-1 is local step s)")
    cols = np.arange(B)
    return Tk, lambda k, t, cum: eta_step[np.minimum(cum + t - 1, eta_step.shape[0] - 1), cols]


def _old_mls_fedavg(batch, *, rounds, T, eta=None, eta_step=None, grid=None, recorder=None, oracle=None, x0=None,
                    stop=None):
    B, n = batch.B, batch.n
    Tk, size = _old_mls_local_steps(rounds, B, T, eta, eta_step)
    oracle = oracle or batch.loss.grad
    st = {"x": M.start_point(batch, x0)}
    st["X"] = np.repeat(st["x"][:, None, :], n, 1)
    extra = {"calls": np.zeros(B), "comms": np.zeros(B)}
    cum = np.zeros(B, dtype=np.int64)

    def step(k):
        X = np.repeat(st["x"][:, None, :], n, 1)
        Tb = Tk[k - 1]
        uniform = bool(np.all(Tb == Tb.max(initial=0)))
        for t in range(1, int(Tb.max(initial=0)) + 1):
            G = oracle(X)
            G *= size(k, t, cum)[:, None, None]
            X = X - G if uniform else np.where((t <= Tb)[:, None, None], X - G, X)
        cum[:] += Tb
        st["X"], st["x"] = X, X.mean(1)
        extra["calls"] += Tb
        extra["comms"] += 1.0

    rec = recorder or mls_default_recorder(batch)
    trace = M.drive_rounds(rounds, grid, step, M.snapshot_of(rec, lambda: st["X"], lambda: st["x"], extra),
                           M.stop_rule(stop, lambda: st["x"]))
    trace.final = {"xbar": st["x"].copy(), "X": st["X"].copy()}
    return trace


def _old_switching_fedavg(batch, *, rounds, eta, local_steps=1, w0=None):
    B, n = batch.B, batch.n
    eta = per_row(eta, B, "eta")[:, None, None]
    w = np.array(batch.w0 if w0 is None else w0, dtype=float)
    out = [w]
    for _ in range(int(rounds)):
        W = np.repeat(w[:, None, :], n, axis=1)
        for _ in range(int(local_steps)):
            W = W - eta * batch.f.subgrad(W)
        w = W.mean(1)
        out.append(w)
    return np.stack(out)


def _same_trace(a, b):
    np.testing.assert_array_equal(a.rounds, b.rounds)
    assert set(a.metrics) == set(b.metrics)
    for k in a.metrics:
        np.testing.assert_array_equal(a.metrics[k], b.metrics[k], err_msg=k)
    assert set(a.final) == set(b.final)
    for k in a.final:
        np.testing.assert_array_equal(a.final[k], b.final[k], err_msg=k)


# ================================================================================================
# the one FedAvg against a plain per-client loop
def _lsq(B=3, n=4, m=5, p=3, key="lsq"):
    rng = instance_rng(0, f"tests:fedavg:{key}")
    A = rng.standard_normal((B, n, m, p))
    b = rng.standard_normal((B, n, m))
    return A, b


def _batched_grad(A, b):
    def grad(X, idx=None):
        Ab, bb = (A, b) if idx is None else (np.take_along_axis(A, idx[:, :, None, None], 1),
                                              np.take_along_axis(b, idx[:, :, None], 1))
        r = np.einsum("bnmp,bnp->bnm", Ab, X) - bb
        return np.einsum("bnmp,bnm->bnp", Ab, r) / A.shape[2]
    return grad


def _client_grad(A, b, bi, i, x):
    return A[bi, i].T @ (A[bi, i] @ x - b[bi, i]) / A.shape[2]


def _loop_fedavg(A, b, x0, rounds, eta, steps, eta_s=None, sel=None, masks=None, radius=None, uplink=None,
                 server_radius=None):
    """Plain Python over rounds, instances, clients and local steps (the reference)."""
    B, n, m, p = A.shape
    x = np.array(x0, dtype=float)
    out = [x.copy()]
    for r in range(rounds):
        xn = np.empty_like(x)
        for bi in range(B):
            clients = range(n) if sel is None else sel[r][bi]
            if masks is not None:
                clients = [i for i in range(n) if masks[r][bi, i]]
            e = eta[r, bi] if np.ndim(eta) == 2 else np.broadcast_to(eta, (B,))[bi]
            T = steps[r, bi] if np.ndim(steps) == 2 else steps
            acc = np.zeros(p)
            for j, i in enumerate(clients):
                w = x[bi].copy()
                for _ in range(int(T)):
                    w = w - e * _client_grad(A, b, bi, i, w)
                    if radius is not None:
                        nrm = np.linalg.norm(w)
                        w = w * min(1.0, radius / nrm) if nrm > 0 else w
                d = w - x[bi]
                if uplink is not None:
                    d = uplink[r][bi][j]
                acc += d
            mean_d = acc / len(clients)
            if eta_s is None and uplink is None:
                xn[bi] = x[bi] + mean_d
            else:
                es = 1.0 if eta_s is None else np.broadcast_to(eta_s, (B,))[bi]
                xn[bi] = x[bi] + es * mean_d
            if server_radius is not None:
                nrm = np.linalg.norm(xn[bi])
                xn[bi] = xn[bi] * min(1.0, server_radius / nrm)
        x = xn
        out.append(x.copy())
    return np.stack(out)


def _ball(radius):
    def proj(W):
        nrm = np.linalg.norm(W, axis=-1, keepdims=True)
        return W * np.minimum(1.0, radius / np.maximum(nrm, 1e-300))
    return proj


def test_plain_averaging_and_per_round_steps_match_the_loop():
    A, b = _lsq()
    B, n, _, p = A.shape
    R = 6
    rng = instance_rng(1, "tests:fedavg:sched")
    eta = rng.uniform(0.05, 0.3, (R, B))
    steps = rng.integers(0, 5, (R, B))
    x0 = rng.standard_normal((B, p))
    st = run_fedavg(x0, pieces.static_oracle(_batched_grad(A, b)), rounds=R, n=n, eta=eta, steps=steps, iterates=True)
    ref = _loop_fedavg(A, b, x0, R, eta, steps)
    np.testing.assert_allclose(st.metrics["x"], ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(st.final["calls"], steps.sum(0))
    np.testing.assert_array_equal(st.final["comms"], np.full(B, R))


def test_server_step_subset_sampling_and_client_projection_match_the_loop():
    A, b = _lsq(B=2, n=6, key="subset")
    B, n, _, p = A.shape
    R, S, K = 5, 3, 4
    eta, eta_s = np.array([0.1, 0.2]), np.array([1.5, 0.7])
    x0 = np.ones((B, p))
    rng = np.random.default_rng(np.random.SeedSequence(7))
    sels = []

    def participation(r):
        sels.append(pieces.subset_clients(rng, B, n, S))
        return sels[-1]
    grad = _batched_grad(A, b)
    st = run_fedavg(x0, lambda r, sel: (lambda W, t: grad(W, sel)), rounds=R, n=n, eta=eta, steps=K, eta_s=eta_s,
                    participation=participation, client_map=_ball(1.0), server_map=_ball(0.8), iterates=True)
    ref = _loop_fedavg(A, b, x0, R, eta, K, eta_s=eta_s, sel=sels, radius=1.0, server_radius=0.8)
    np.testing.assert_allclose(st.metrics["x"], ref, rtol=0, atol=1e-12)
    assert st.final["X"].shape == (B, S, p)


def test_bernoulli_participation_and_compression_match_the_loop():
    A, b = _lsq(B=3, n=5, key="mask")
    B, n, _, p = A.shape
    R, K = 4, 2
    eta = np.full(B, 0.15)
    x0 = np.zeros((B, p))
    rng = np.random.default_rng(np.random.SeedSequence(11))
    masks, ups = [], []
    comp = RandK(2)
    stream = UniformStream(range(B), "tests:fedavg:uplink", (n, p))
    up = pieces.uplink_compression(comp, stream)

    def participation(r):
        masks.append(pieces.bernoulli_clients(rng.random((B, n)), 0.5))
        return masks[-1]

    def uplink(D):
        ups.append(up(D))
        return ups[-1]
    st = run_fedavg(x0, pieces.static_oracle(_batched_grad(A, b)), rounds=R, n=n, eta=eta, steps=K,
                    participation=participation, uplink=uplink, iterates=True)
    # the loop uses the compressed updates of the participating clients (clients in order)
    ups_sel = [[u[bi][masks[r][bi]] for bi in range(B)] for r, u in enumerate(ups)]
    ref = _loop_fedavg(A, b, x0, R, eta, K, masks=masks, uplink=ups_sel)
    np.testing.assert_allclose(st.metrics["x"], ref, rtol=0, atol=1e-12)
    # and the compressed updates are the uncompressed ones on the kept coordinates, scaled p/k
    D = ups[0]
    assert np.all((D != 0).sum(-1) <= 2)


def test_per_local_step_sizes_follow_a_counter_over_rounds():
    A, b = _lsq(B=2, n=3, key="eta_step")
    B, n, _, p = A.shape
    R = 4
    steps = np.array([[1, 2], [3, 0], [2, 2], [1, 3]])
    eta_step = 0.3 / np.sqrt(np.arange(1, 8, dtype=float))[:, None] * np.array([1.0, 0.5])
    st = run_fedavg(np.zeros((B, p)), pieces.static_oracle(_batched_grad(A, b)), rounds=R, n=n, eta_step=eta_step,
                    steps=steps, iterates=True)
    x = np.zeros((B, p))
    for bi in range(B):
        cum = 0
        xb = x[bi].copy()
        for r in range(R):
            acc = np.zeros(p)
            for i in range(n):
                w = xb.copy()
                for t in range(steps[r, bi]):
                    w = w - eta_step[min(cum + t, 6), bi] * _client_grad(A, b, bi, i, w)
                acc += w
            cum += steps[r, bi]
            xb = acc / n
            np.testing.assert_allclose(st.metrics["x"][r + 1, bi], xb, rtol=0, atol=1e-12)


def test_generator_yields_the_start_and_every_round():
    A, b = _lsq(B=2, n=2, key="gen")
    seen = []
    for st in fedavg_rounds(np.zeros((2, 3)), pieces.static_oracle(_batched_grad(A, b)), rounds=3, n=2, eta=0.1):
        seen.append(st.rounds)
    assert seen == [0, 1, 2, 3]


# ================================================================================================
# adapters against the frozen implementations, bit for bit
def _composite_problems():
    quad = PDF.SharedQuadraticFamily(d=4, M=5, K=3, noise=0.3, reg="l1", lam=0.2, geometry="euclidean")
    yield "quad", PD.batch_of([quad.draw(s) for s in range(3)])
    ball = PDF.ConstrainedQuadraticFamily(d=5, M=4, K=4, noise=0.2)
    yield "ball", PD.batch_of([ball.draw(s) for s in range(2)])


@pytest.mark.parametrize("name,problem", list(_composite_problems()), ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("alg,flags", [(PDM.fedavg, (False, False, False)), (C.fedavg_subgradient, (False, False, True)),
                                       (C.fedmid, (True, True, False)), (C.fedmid_osp, (False, True, False)),
                                       (C.fedmid_no_server_prox, (True, False, False))],
                         ids=["fedavg", "fedavg_d", "fedmid", "fedmid_osp", "fedmid_nsp"])
@pytest.mark.parametrize("S", [None, 2])
def test_composite_adapters_are_the_old_primal_family(name, problem, alg, flags, S):
    cp, sp, sub = flags
    kw = dict(rounds=12, eta_c=np.array([0.05, 0.1, 0.07])[:problem.B], eta_s=1.3, grid=np.arange(0, 13, 2),
              clients_per_round=S)
    seen_new, seen_old = [], []
    new = alg(problem, rng=np.random.default_rng(np.random.SeedSequence(5)),
              hook=lambda r, k, i: seen_new.append((r, k, i["W"].copy(), i["g"].copy())), **kw)
    old = _old_primal_family(problem, kw.pop("rounds"), kw.pop("eta_c"), kw.pop("eta_s"), cp, sp, subgradient=sub,
                             rng=np.random.default_rng(np.random.SeedSequence(5)),
                             hook=lambda r, k, i: seen_old.append((r, k, i["W"].copy(), i["g"].copy())), **kw)
    _same_trace(new, old)
    assert len(seen_new) == len(seen_old) == 12 * problem.K
    for a, b in zip(seen_new, seen_old):
        assert a[:2] == b[:2]
        np.testing.assert_array_equal(a[2], b[2])
        np.testing.assert_array_equal(a[3], b[3])


def test_composite_fedavg_on_finite_sums_with_epochs_is_the_old_one():
    problem = PD.batch_of([PDX.lasso_experiment(seed=0, d=8, d1=2, M=6, n=8, batch=2, clients_per_round=3)[0]])
    kw = dict(rounds=7, eta_c=0.05, eta_s=1.0, clients_per_round=3)
    new = PDM.fedavg(problem, rng=np.random.default_rng(1), **kw)
    old = _old_primal_family(problem, 7, 0.05, 1.0, False, False, rng=np.random.default_rng(1), clients_per_round=3)
    _same_trace(new, old)


def _lad_batch(n=3, B=3, m=5, p=3):
    rng = instance_rng(0, f"tests:fedavg:lad:{n}")
    insts = []
    for _ in range(B):
        A = rng.standard_normal((n, m, p))
        bb = A @ rng.standard_normal(p) + 0.1 * rng.standard_normal((n, m))
        insts.append(Instance(A, bb, "lad", L2Ball(100.0, p)))
    return InstanceBatch(insts)


def test_fedmls_adapter_is_the_old_fedavg():
    batch = _lad_batch()
    K, B = 9, batch.B
    k = np.arange(1, K + 1, dtype=float)[:, None]
    T = np.repeat(k, B, 1)
    T[:, 0] = np.ceil(k[:, 0] / 2)
    T[3, 1] = 0
    eta = np.repeat(0.3 / np.sqrt(k), B, 1) * (1 + np.arange(B))
    _same_trace(mls_fedavg(batch, rounds=K, T=T, eta=eta), _old_mls_fedavg(batch, rounds=K, T=T, eta=eta))
    S = int(T.sum(0).max())
    eta_step = np.repeat(0.2 / np.sqrt(np.arange(1, S + 1, dtype=float))[:, None], B, 1)
    _same_trace(mls_fedavg(batch, rounds=K, T=T, eta_step=eta_step, grid=[0, 3, 9]),
                _old_mls_fedavg(batch, rounds=K, T=T, eta_step=eta_step, grid=[0, 3, 9]))
    # uniform T, a stochastic oracle with its own seeded generator, a start point and a stop rule
    Tu = np.full((K, B), 3.0)
    stop = lambda k_, x: k_ >= 5                                    # noqa: E731
    a = mls_fedavg(batch, rounds=K, T=Tu, eta=eta, x0=np.ones(batch.p), stop=stop,
                 oracle=M.minibatch_oracle(batch, 0.5, np.random.default_rng(np.random.SeedSequence(3))))
    b = _old_mls_fedavg(batch, rounds=K, T=Tu, eta=eta, x0=np.ones(batch.p), stop=stop,
                        oracle=M.minibatch_oracle(batch, 0.5, np.random.default_rng(np.random.SeedSequence(3))))
    _same_trace(a, b)
    assert a.rounds[-1] == 5


def test_fedmls_adapter_keeps_its_errors():
    batch = _lad_batch()
    with pytest.raises(ValueError, match="exactly one"):
        mls_fedavg(batch, rounds=3, T=1)
    with pytest.raises(ValueError, match="eta_step has shape"):
        mls_fedavg(batch, rounds=3, T=2, eta_step=np.ones((3, batch.B)))
    with pytest.raises(ValueError, match="non-negative integers"):
        mls_fedavg(batch, rounds=3, T=1.5, eta=0.1)


@pytest.mark.parametrize("E", [1, 3])
def test_switching_adapter_is_the_old_fedavg(E):
    fam = PX.ConstrainedFamily(kind="pl", n=5, m=8, d=4, start="infeasible")
    b = PS.ConstrainedBatch([fam.draw(s) for s in range(3)])
    eta = np.array([0.01, 0.03, 0.1])
    np.testing.assert_array_equal(SW.fedavg(b, rounds=40, eta=eta, local_steps=E),
                                  _old_switching_fedavg(b, rounds=40, eta=eta, local_steps=E))
    np.testing.assert_array_equal(SW.fedavg(b, rounds=10, eta=np.full((10, 3), 0.02), local_steps=E, w0=np.ones((3, 4))),
                                  _old_switching_fedavg(b, rounds=10, eta=np.full((10, 3), 0.02), local_steps=E,
                                                        w0=np.ones((3, 4))))


# ================================================================================================
# participation and compression pieces with seeded streams
def test_subset_clients_is_the_argsort_of_one_seeded_draw():
    a = pieces.subset_clients(np.random.default_rng(np.random.SeedSequence(4)), 3, 7, 2)
    ref = np.argsort(np.random.default_rng(np.random.SeedSequence(4)).random((3, 7)), axis=1)[:, :2]
    np.testing.assert_array_equal(a, ref)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    assert pieces.subset_clients(rng, 3, 7, None) is None and pieces.subset_clients(rng, 3, 7, 7) is None
    assert rng.bit_generator.state == state                       # full participation draws nothing
    # uniform: each client equally often
    rng = np.random.default_rng(np.random.SeedSequence(9))
    counts = np.zeros(7)
    for _ in range(3000):
        np.add.at(counts, pieces.subset_clients(rng, 1, 7, 2).ravel(), 1)
    np.testing.assert_allclose(counts / 3000, 2 / 7, atol=0.03)
    assert all(len(set(r)) == 2 for r in pieces.subset_clients(rng, 50, 7, 2))


def test_bernoulli_clients_never_empty_and_match_the_round_piece():
    U = np.random.default_rng(np.random.SeedSequence(2)).random((2000, 5))
    mask = pieces.bernoulli_clients(U, 0.3)
    assert mask.any(1).all()
    np.testing.assert_allclose(mask[:, 1:].mean(), 0.3, atol=0.02)
    # sample_clients (Round context) draws the same uniforms from the per-row streams
    batch = _lad_batch(n=5, B=3)
    ctx = Round(batch, 1, row_generators([0, 1, 2], 3, "tests:fedavg:bern"))
    gens = row_generators([0, 1, 2], 3, "tests:fedavg:bern")
    np.testing.assert_array_equal(pieces.sample_clients(ctx, np.array([0.2, 0.5, 0.9])),
                                  pieces.bernoulli_clients(np.stack([g.uniform(size=(5,)) for g in gens]),
                                                           np.array([0.2, 0.5, 0.9])))


def test_uplink_compression_is_seeded_and_unbiased():
    D = np.random.default_rng(0).standard_normal((2, 3, 6))
    comp = RandK(2)
    a = pieces.uplink_compression(comp, UniformStream([4, 5], "tests:fedavg:c", (3, 6)))
    b = pieces.uplink_compression(comp, UniformStream([4, 5], "tests:fedavg:c", (3, 6)))
    draws = [a(D) for _ in range(4000)]
    for i, d in enumerate(draws[:5]):
        np.testing.assert_array_equal(d, b(D))                    # same seeds, same stream
    np.testing.assert_allclose(np.mean(draws, 0), D, atol=0.15)
    # row 0 does not depend on row 1's seed
    c = pieces.uplink_compression(comp, UniformStream([4, 99], "tests:fedavg:c", (3, 6)))
    np.testing.assert_array_equal(c(D)[0], draws[0][0])


def test_round_local_steps_piece_is_the_plain_loop():
    batch = _lad_batch(n=4, B=2)
    ctx = Round(batch, 1, row_generators([0, 1], 2, "tests:fedavg:ls"))
    ctx2 = Round(batch, 1, row_generators([0, 1], 2, "tests:fedavg:ls"))
    Y0 = np.ones((2, 4, batch.p))
    eta, mu = np.array([0.1, 0.05]), np.array([0.5, 1.0])
    out = pieces.local_steps(ctx, Y0, eta, 3, anchor=np.zeros((2, batch.p)), mu=mu, noise=0.1)
    Y = Y0
    for _ in range(3):
        G = ctx2.grad(Y) + 0.1 * ctx2.normal(Y.shape[1:])
        G = G + ctx2.col(mu) * (Y - 0.0)
        Y = ctx2.project(Y - ctx2.col(eta) * G)
    np.testing.assert_array_equal(out, Y)
