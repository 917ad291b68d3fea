"""Network losses (MLP, CNN), the synthetic data of [52], network families and their certified constants."""
import numpy as np
import pytest

from fedcheck.algorithms import fedfw
from fedcheck.algorithms.fedfw_variants import fw_recorder
from fedcheck.problems.datasets import federated_split, synthetic_li
from fedcheck.problems.instances import InstanceBatch
from fedcheck.problems.networks import (CNN, MLP, NetworkFamily, mlp_bounds, network_constants, network_set,
                                        repeat_runs, sampled_smoothness)

# Central differences in float64 with h = 1e-6: the truncation error is O(h^2 |f'''|) ~ 1e-12 and the rounding
# error ~ eps |f| / h ~ 1e-10, so directional derivatives must agree to 1e-6 relative (a wrong term is O(1)).
FD_STEP = 1e-6
FD_RTOL = 1e-6


def _data(rng, B=2, n=3, m=7, d=5, K=4):
    A = rng.standard_normal((B, n, m, d))
    y = rng.integers(0, K, (B, n, m))
    w = np.full((B, n, m), 1.0 / (m - 1))
    w[:, :, -1] = 0.0                       # a padding row
    return A, y, w


def _fd_error(loss, X, rng, dirs=6):
    G = loss.grad(X)
    worst = 0.0
    for _ in range(dirs):
        Vd = rng.standard_normal(X.shape)
        num = (loss.value(X + FD_STEP * Vd) - loss.value(X - FD_STEP * Vd)) / (2 * FD_STEP)
        ana = (G * Vd).sum(-1)
        worst = max(worst, float(np.max(np.abs(num - ana) / (np.abs(ana) + np.abs(num) + 1e-12))))
    return worst


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_mlp_gradient_matches_central_differences(activation):
    rng = np.random.default_rng(0)
    A, y, w = _data(rng)
    loss = MLP(A, y, w, K=4, hidden=(6, 5), activation=activation)
    X = 0.5 * rng.standard_normal((2, 3, loss.p))
    assert loss.p == 5 * 6 + 6 + 6 * 5 + 5 + 5 * 4 + 4
    assert _fd_error(loss, X, rng) < FD_RTOL


@pytest.mark.parametrize("pooling", ["max", "avg"])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("channels,kernel", [((3,), 3), ((3, 2), 2)])
def test_cnn_gradient_matches_central_differences(pooling, activation, channels, kernel):
    rng = np.random.default_rng(1)
    B, n, m = 2, 3, 5
    A = rng.random((B, n, m, 8 * 8 * 2))
    y = rng.integers(0, 4, (B, n, m))
    w = np.full((B, n, m), 1.0 / m)
    loss = CNN(A, y, w, K=4, image=(8, 8, 2), channels=channels, kernel=kernel, pool=2, pooling=pooling,
               hidden=(5,), activation=activation)
    X = 0.5 * rng.standard_normal((B, n, loss.p))
    assert _fd_error(loss, X, rng) < FD_RTOL


def _per_client(cls, arrays, X, **spec):
    A, y, w = arrays
    B, n = X.shape[:2]
    out = np.empty(X.shape)
    vals = np.empty((B, n))
    for b in range(B):
        for i in range(n):
            one = cls(A[b, i][None], y[b, i][None], w[b, i][None], **spec)
            out[b, i] = one.grad(X[b, i][None])[0]
            vals[b, i] = one.value(X[b, i][None])[0]
    return vals, out


def test_batched_gradient_equals_a_per_client_loop():
    rng = np.random.default_rng(2)
    A, y, w = _data(rng, B=3, n=4)
    spec = dict(K=4, hidden=(6,), activation="tanh")
    loss = MLP(A, y, w, **spec)
    X = rng.standard_normal((3, 4, loss.p))
    vals, grads = _per_client(MLP, (A, y, w), X, **spec)
    np.testing.assert_allclose(loss.value(X), vals, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(loss.grad(X), grads, rtol=1e-12, atol=1e-14)
    img = rng.random((2, 3, 5, 36))
    yy = rng.integers(0, 3, (2, 3, 5))
    ww = np.full((2, 3, 5), 0.2)
    cspec = dict(K=3, image=(6, 6, 1), channels=(2,), kernel=3, pool=2, hidden=(4,), activation="relu")
    cnn = CNN(img, yy, ww, **cspec)
    Xc = rng.standard_normal((2, 3, cnn.p))
    vals, grads = _per_client(CNN, (img, yy, ww), Xc, **cspec)
    np.testing.assert_allclose(cnn.value(Xc), vals, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(cnn.grad(Xc), grads, rtol=1e-12, atol=1e-14)


def test_repeated_runs_share_the_data_and_equal_tiled_copies():
    rng = np.random.default_rng(3)
    A, y, w = _data(rng, B=2, n=3)
    loss = MLP(A, y, w, K=4, hidden=(5,))
    R = 3
    rep = repeat_runs(loss, R)
    X = rng.standard_normal((2 * R, 3, loss.p))
    tiled = loss.map(lambda a: np.repeat(a, R, axis=0))
    np.testing.assert_allclose(rep.grad(X), tiled.grad(X), rtol=1e-12)
    np.testing.assert_allclose(rep.full_value(X[:, 0]), tiled.full_value(X[:, 0]), rtol=1e-12)


def test_synthetic_data_is_seeded_and_as_described():
    X, y, src = synthetic_li(3)
    X2, y2, _ = synthetic_li(3)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    assert not np.array_equal(synthetic_li(4)[0][:10], X[:10])
    assert X.shape[1] == 60 and y.min() >= 0 and y.max() <= 9
    counts = np.bincount(src, minlength=10)
    assert counts.min() >= 50                               # floor(lognormal(4, 2)) + 50 per source
    Xf, yf, srcf = synthetic_li(0, samples=30, iid=True)
    assert np.bincount(srcf).tolist() == [30] * 10


def test_splits_iid_and_three_labels_per_client():
    X, y, _ = synthetic_li(0, samples=100)
    rng = np.random.default_rng(0)
    iid = federated_split(X, y, 10, rng, iid=True)
    assert iid.counts.max() - iid.counts.min() <= 1
    assert np.allclose(iid.w.sum(-1), 1.0)
    non = federated_split(X, y, 10, np.random.default_rng(0), iid=False, labels_per_client=3, classes=10)
    for i in range(10):
        labels = set(non.y[i][non.w[i] > 0].tolist())
        assert labels <= {i % 10, (i + 1) % 10, (i + 2) % 10}
    assert len(non.test_y) + non.counts.sum() == len(y)


def test_layerwise_bounds_are_above_sampled_values():
    """mlp_bounds' upper ends against gradient norms and difference quotients at random points of the set."""
    rng = np.random.default_rng(4)
    A, y, w = _data(rng, B=1, n=3, m=6)
    loss = MLP(A[0], y[0], w[0], K=4, hidden=(4, 3), activation="tanh")
    for blocks in ("whole", "tensor"):
        S = network_set("l2", 1.5, loss, blocks)
        G_hi, L_hi = mlp_bounds(loss, S)
        for _ in range(20):
            x = S.project(rng.standard_normal((3, loss.p)))
            y_ = S.project(x + 1e-3 * rng.standard_normal((3, loss.p)))
            gx, gy = loss.grad(x), loss.grad(y_)
            assert np.all(np.linalg.norm(gx, axis=-1) <= G_hi)
            q = np.linalg.norm(gx - gy, axis=-1) / np.linalg.norm(x - y_, axis=-1)
            assert np.all(q <= L_hi)
        XP = np.broadcast_to(S.project(rng.standard_normal((4, 1, loss.p))), (4, 3, loss.p))
        assert np.all(sampled_smoothness(loss, S, XP, rng) <= L_hi)
    relu = MLP(A[0], y[0], w[0], K=4, hidden=(4,), activation="relu")
    assert np.all(np.isinf(mlp_bounds(relu, network_set("l2", 1.0, relu))[1]))


def test_network_family_runs_in_the_engine_and_its_constants_are_intervals():
    fam = NetworkFamily(data="synthetic", model="mlp", hidden=(6,), activation="tanh", n=4, features=8, classes=3,
                        samples=15, set="l1", radius=2.0)
    insts = [fam.draw(s) for s in (0, 1)]
    assert np.array_equal(fam.draw(0).A, insts[0].A) and np.array_equal(fam.draw(0).x0, insts[0].x0)
    assert all(inst.set.contains(inst.x0, 1e-9) for inst in insts)
    batch = InstanceBatch(insts)
    T = 20
    eta = np.broadcast_to(2.0 / (np.arange(1, T + 1) + 1.0), (2, T)).T.copy()
    lam = 0.1 * np.sqrt(np.arange(1, T + 1) + 1.0)[:, None] * np.ones((1, 2))
    tr = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=np.arange(1, T + 2), recorder=fw_recorder(batch))
    assert np.all(tr.metrics["gap"] >= -1e-12)
    assert np.all(batch.set.gauge(tr.final["xbar"]) <= 1 + 1e-9)
    sol = network_constants(insts[0])
    for key in ("E", "G", "L"):
        iv = sol.info[key]
        assert 0 <= iv.lo <= iv.hi < np.inf, key
    # E's lower end comes from points of the set: F(x^1) minus the best value found
    loss = insts[0].make_loss()
    F1 = loss.value(np.broadcast_to(insts[0].x0, (4, loss.p))).mean()
    assert sol.info["E"].hi == pytest.approx(F1)


def test_cnn_family_on_digits():
    fam = NetworkFamily(data="digits", model="cnn", channels=(2,), kernel=3, pool=2, hidden=(4,), n=5, samples=20)
    inst = fam.draw(0)
    loss = inst.make_loss()
    assert loss.p == 9 * 2 + 2 + 18 * 4 + 4 + 4 * 10 + 10
    X = np.broadcast_to(inst.x0, (5, loss.p))
    assert loss.value(X).shape == (5,) and np.all(np.isfinite(loss.grad(X)))
    acc = loss.accuracy(inst.x0[None], inst.test_A, inst.test_y)
    assert acc.shape == (1,) and 0 <= acc[0] <= 1


@pytest.mark.parametrize("shape", [(2, 3, 6, 6, 8), (4, 7, 5, 3), (3, 6, 7, 2)])
def test_compiled_max_pool_backward_is_the_numpy_masks_bit_for_bit(shape, monkeypatch):
    """The compiled backward pass of max pooling gives numpy's ``dP * hit`` bits: the first maximum of each window
    in row-major order on ties, zeros (of dP's sign) elsewhere and past a multiple of the pool size, NaN windows
    (no maximum equals NaN) and NaN or -0.0 gradients included."""
    import fedcheck.problems.networks as N
    from fedcheck.problems import cnn_jit
    if cnn_jit._compiled is None:
        pytest.skip("numba is off")
    rng = np.random.default_rng(3)
    A, y, w = _data(rng, d=64)
    cnn = CNN(A, y, w, K=4, image=(8, 8, 1), channels=(2,), kernel=3, pool=2, pooling="max", hidden=(4,))
    V = rng.standard_normal(shape)
    V[..., ::2, :, :] = np.round(V[..., ::2, :, :])             # ties inside windows
    V.flat[5], V.flat[17] = np.nan, -0.0
    P = cnn._pool_forward(V)
    dP = rng.standard_normal(P.shape)
    dP.flat[3], dP.flat[4] = np.nan, -0.0
    fast = cnn._pool_backward(dP, V, P)
    monkeypatch.setattr(N, "max_pool_backward", lambda *a: None)
    slow = cnn._pool_backward(dP, V, P)
    assert fast.shape == slow.shape == V.shape
    assert fast.tobytes() == slow.tobytes()
    assert np.isnan(slow).any() and (np.signbit(slow) & (slow == 0)).any()      # the cases were exercised
