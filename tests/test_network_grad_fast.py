"""The networks' gradients with in-place layers, reused scratch arrays and compiled passes equal the former
implementation (kept here as the reference, verbatim) bit for bit (central differences: tests/test_networks.py);
the bucketed runs equal the padded batch to 1e-12."""
import numpy as np
import pytest

from fedcheck.problems import dense_jit, networks
from fedcheck.problems.networks import CNN, MLP, log_softmax


@pytest.fixture(autouse=True)
def _blas_products(monkeypatch):
    """The tests below compare bits: the compiled gradient with numpy's BLAS (``dense_jit.VECTOR`` off); the
    vector products (other sums' orders, within a stated tolerance) are tested on their own at the end."""
    monkeypatch.setattr(dense_jit, "VECTOR", False)


def _old_dense_forward(loss, X, H, layers, act, cache):
    for j, (kw, kb) in enumerate(layers):
        Z = np.matmul(H, loss._tensor(X, kw))
        Z += loss._tensor(X, kb)[..., None, :]
        if j == len(layers) - 1:
            return Z
        Hn = np.tanh(Z) if act == "tanh" else np.maximum(Z, 0.0)
        cache.append((H, Z, Hn))
        H = Hn


def _old_dense_backward(loss, X, cache, delta, G, layers, act, H0):
    sl = loss.param_slices()
    for j in range(len(layers) - 1, -1, -1):
        kw, kb = layers[j]
        HT = np.swapaxes(H0 if j == 0 else cache[j - 1][2], -1, -2)
        gW = np.matmul(HT, delta)
        G[..., sl[kw]] = gW.reshape(gW.shape[:-2] + (-1,))
        G[..., sl[kb]] = delta.sum(-2)
        if j == 0:
            return
        back = np.matmul(delta, np.swapaxes(loss._tensor(X, kw), -1, -2))
        Z, H = cache[j - 1][1], cache[j - 1][2]
        delta = back * (1.0 - H * H if act == "tanh" else (Z > 0).astype(float))


def old_mlp_grad(loss: MLP, X):
    """The MLP's gradient as it was computed before (softmax via exp(log_softmax), a fresh array per step)."""
    X = np.asarray(X, dtype=float)
    cache: list = []
    logits = _old_dense_forward(loss, X, loss.A, loss.layers, loss.activation, cache)
    delta = (np.exp(log_softmax(logits)) - loss.onehot) * loss.w[..., None]
    G = np.empty(np.broadcast_shapes(X.shape[:-1], loss.lead_shape) + (loss.p,))
    _old_dense_backward(loss, X, cache, delta, G, loss.layers, loss.activation, loss.A)
    return G


def old_mlp_value(loss: MLP, X):
    """The MLP's losses as the numpy path computes them (numpy's forward pass, then the log-softmax)."""
    logits = _old_dense_forward(loss, np.asarray(X, dtype=float), loss.A, loss.layers, loss.activation, [])
    return -(loss.w * (loss.onehot * log_softmax(logits)).sum(-1)).sum(-1)


def _data(rng, lead=(2, 3), m=9, d=7, K=4):
    A = rng.standard_normal(lead + (m, d))
    y = rng.integers(0, K, lead + (m,))
    w = np.full(lead + (m,), 1.0 / (m - 2))
    w[..., -2:] = 0.0                        # padding rows
    return A, y, w


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("xlead", [(2, 3), (3,), (4, 2, 3)])
def test_mlp_gradient_equals_the_former_implementation(activation, xlead):
    rng = np.random.default_rng(3)
    A, y, w = _data(rng)
    if len(xlead) == 3:                      # runs sharing the data: a singleton axis that broadcasts
        A, y, w = A[None], y[None], w[None]
        A, y, w = (np.moveaxis(a, 0, 1) for a in (A, y, w))          # (2, 1, 3, ...)
        xlead = (2, 4, 3)
    loss = MLP(A, y, w, K=4, hidden=(6, 5), activation=activation)
    X = 0.7 * rng.standard_normal(xlead + (loss.p,))
    assert np.array_equal(loss.grad(X), old_mlp_grad(loss, X))        # the same operations in the same order
    v, g = loss.value_and_grad(X)
    assert _rel(g, old_mlp_grad(loss, X)) < 1e-12
    assert np.array_equal(v, loss.value(X))


def test_cnn_dense_part_equals_the_former_implementation():
    """The CNN's dense layers share the MLP's code: its gradient against the former dense passes."""
    rng = np.random.default_rng(6)
    A = rng.random((2, 3, 5, 8 * 8))
    y = rng.integers(0, 4, (2, 3, 5))
    w = np.full((2, 3, 5), 0.2)
    loss = CNN(A, y, w, K=4, image=(8, 8, 1), channels=(3,), kernel=3, pool=2, hidden=(5,), activation="relu")
    X = 0.5 * rng.standard_normal((2, 3, loss.p))
    G = loss.grad(X)
    logits, (conv_cache, Hd, _) = loss._forward(X, A)
    cache: list = []
    logits = _old_dense_forward(loss, X, Hd, loss.layers, "relu", cache)
    delta = (np.exp(log_softmax(logits)) - loss.onehot) * w[..., None]
    G0 = np.zeros_like(G)
    _old_dense_backward(loss, X, cache, delta, G0, loss.layers, "relu", Hd)
    dense = slice(loss.param_slices()[2].start, loss.p)
    assert _rel(G[..., dense], G0[..., dense]) < 1e-12


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_bucketed_runs_equal_the_padded_batch(activation):
    """Clients of very different sizes (a non-IID split) are evaluated in buckets of similar sizes: the same values
    and gradients as the batch padded to the largest client."""
    from fedcheck.problems.networks import repeat_runs
    rng = np.random.default_rng(8)
    I, n, M, d, R = 2, 5, 40, 6, 3
    counts = np.array([[40, 3, 17, 25, 9], [2, 38, 11, 30, 6]])
    A = rng.standard_normal((I, n, M, d))
    y = rng.integers(0, 4, (I, n, M))
    w = np.where(np.arange(M)[None, None, :] < counts[..., None], 1.0 / counts[..., None], 0.0)
    A *= (w != 0)[..., None]
    loss = MLP(A, y, w, K=4, hidden=(5, 4), activation=activation)
    rep = repeat_runs(loss, R)
    assert rep.parts is not None and len(rep.parts) > 1
    X = 0.6 * rng.standard_normal((I * R, n, loss.p))
    padded = loss.map(lambda a: a[:, None])
    V = X.reshape(I, R, n, loss.p)
    assert _rel(rep.grad(X), padded.grad(V).reshape(X.shape)) < 1e-12
    np.testing.assert_allclose(rep.value(X), padded.value(V).reshape(I * R, n), rtol=1e-12)
    same = repeat_runs(MLP(A[..., :3, :], y[..., :3], np.full((I, n, 3), 1 / 3), K=4, hidden=(5,)), R)
    assert same.parts is None                  # equal sizes: the one padded batch


def test_a_serial_run_uses_one_blas_thread(monkeypatch):
    """``verify -j 1`` runs its checks with one BLAS thread, as the Dask workers do (two BLAS threads on the small
    GEMMs of a network spin against each other: the DNN's --full ran 8x longer on a loaded machine)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from fedcheck.catalog import parallel
    from fedcheck.core.results import RunConfig
    seen = []

    class Check:
        id = "test.blas"

        def run(self, config):
            seen.append(max((i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"),
                            default=1))
            return type("R", (), {"seconds": 0.0})()
    monkeypatch.setattr(parallel, "_save_durations", lambda *a: None)
    parallel.run_checks([Check()], RunConfig(), jobs=1)
    assert seen == [1]


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_gradient_in_scratch_arrays_equals_fresh_arrays(model):
    """``grad`` keeps its large intermediates in scratch arrays reused from call to call; ``value_and_grad`` allocates
    them fresh: the same bits, call after call (a stale scratch array would show in the second call)."""
    rng = np.random.default_rng(9)
    if model == "mlp":
        A, y, w = _data(rng)
        loss = MLP(A, y, w, K=4, hidden=(6, 5), activation="relu")
    else:
        A = rng.random((2, 3, 5, 8 * 8))              # 8 -> 7 (odd: the rows past the pooling get 0) -> 3 -> 2 -> 1
        y = rng.integers(0, 4, (2, 3, 5))
        w = np.full((2, 3, 5), 0.2)
        loss = CNN(A, y, w, K=4, image=(8, 8, 1), channels=(3, 2), kernel=2, pool=2, hidden=(5,), activation="relu")
    for scale in (0.5, 2.0, 0.1):
        X = scale * rng.standard_normal((2, 3, loss.p))
        assert np.array_equal(loss.grad(X), loss.value_and_grad(X)[1])
    assert loss.__dict__.get("_scratch")                 # the scratch arrays were used


def _numpy_path(monkeypatch):
    """The numpy path alone: the compiled passes and the compiled MLP gradient declined."""
    for name in ("bias_act", "mask_sums", "softmax_delta", "mlp_grad"):
        monkeypatch.setattr(networks, name, lambda *a, **k: None)
    monkeypatch.setattr(networks, "DENSE_COMPILED", False)


@pytest.mark.parametrize("hidden", [(6, 5), (7,), (5, 4, 3)])
@pytest.mark.parametrize("K", [4, 10, 19])
@pytest.mark.parametrize("xlead,dlead", [((2, 3), (3,)), ((3,), (3,)), ((2, 4, 3), (2, 1, 3)), ((1, 3), (2, 3))])
def test_compiled_mlp_gradient_is_the_numpy_path_bit_for_bit(hidden, K, xlead, dlead, monkeypatch):
    """The compiled ReLU gradient (client by client, numpy's BLAS from numba, the softmax's row sums in numpy's
    pairwise order for K >= 8) against the numpy path and the former implementation: the same bits, with the points
    and the data broadcasting either way; called twice (the scratch arrays reused)."""
    if dense_jit._mlp_forward is None:
        pytest.skip("numba off or no BLAS found: the numpy path runs")
    assert dense_jit._blas_is_numpys()                 # the dgemm found is np.matmul's (checked once per process)
    rng = np.random.default_rng(11)
    m = 9
    A = rng.standard_normal(dlead + (m, 7))
    y = rng.integers(0, K, dlead + (m,))
    w = np.full(dlead + (m,), 1.0 / (m - 2))
    w[..., -2:] = 0.0
    loss = MLP(A, y, w, K=K, hidden=hidden, activation="relu")
    for scale in (0.7, 3.0):
        X = scale * rng.standard_normal(xlead + (loss.p,))
        offs = tuple(loss._params[kw][0] for kw, _ in loss.layers)
        fast = dense_jit.mlp_grad(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs)
        assert fast is not None
        assert np.array_equal(loss.grad(X), fast)
        assert np.array_equal(fast, old_mlp_grad(loss, X))
    with monkeypatch.context() as mp:
        _numpy_path(mp)
        assert np.array_equal(loss.grad(X), fast)



@pytest.mark.parametrize("m", [1091, 300, 9])
def test_paired_first_layer_keeps_the_numpy_bits_where_used(m, monkeypatch):
    """Two points sharing a data set make their first layer's products as one (``A [W W']``, ``A^T [D D']``) only
    where a check of the shape finds the separate products' bits (Table 2's DNN: yes with OpenBLAS); the gradient
    and the losses are the numpy path's bits either way; forced on where the check declines, the pair's products
    sum in another order: equal within 1e-12 (relative to the largest entry)."""
    if dense_jit._mlp_forward is None:
        pytest.skip("numba off or no BLAS found: the numpy path runs")
    rng = np.random.default_rng(5)
    A = rng.standard_normal((2, m, 60))
    y = rng.integers(0, 10, (2, m))
    w = np.full((2, m), 1.0 / m)
    loss = MLP(A, y, w, K=10, hidden=(20, 20), activation="relu")
    X = 0.3 * rng.standard_normal((3, 2, loss.p))          # three points per data set: a pair and a lone point
    offs = tuple(loss._params[kw][0] for kw, _ in loss.layers)
    paired = dense_jit._pairs_keep_bits(m, loss.widths, offs)
    assert paired or m < 1091                             # Table 2's size pairs (OpenBLAS)
    ref = old_mlp_grad(loss, X)
    assert np.array_equal(loss.grad(X), ref)
    assert np.array_equal(loss.value(X), old_mlp_value(loss, X))
    forced = dense_jit._mlp_grad(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs, None, True)
    assert _rel(forced, ref) < 1e-12
    if paired:
        assert np.array_equal(forced, ref)

def test_compiled_mlp_gradient_declines_where_numpy_calls_no_gemm():
    """A width or a row count of 1 (``np.matmul`` calls gemv or dot there), tanh (numpy's SIMD tanh), data that are
    not C-contiguous: ``None`` (the gradient and the value), and the loss runs the numpy path (the same values as
    the former implementation)."""
    rng = np.random.default_rng(12)
    A, y, w = _data(rng)
    for hidden, act, m in (((6, 1), "relu", 9), ((6, 5), "tanh", 9), ((6, 5), "relu", 1)):
        loss = MLP(A[..., :m, :], y[..., :m], w[..., :m], K=4, hidden=hidden, activation=act)
        X = rng.standard_normal((2, 3, loss.p))
        offs = tuple(loss._params[kw][0] for kw, _ in loss.layers)
        assert dense_jit.mlp_grad(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs, act) is None
        assert dense_jit.mlp_value(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs, act) is None
        assert _rel(loss.grad(X), old_mlp_grad(loss, X)) < 1e-12
        assert np.array_equal(loss.value(X), old_mlp_value(loss, X))
    loss = MLP(A, y, w, K=4, hidden=(6, 5), activation="relu")
    offs = tuple(loss._params[kw][0] for kw, _ in loss.layers)
    X = rng.standard_normal((2, 3, loss.p))
    At = np.asfortranarray(loss.A)
    assert dense_jit.mlp_grad(At, X, loss.onehot, loss._w_c(), loss.widths, offs) is None
    assert dense_jit.mlp_value(At, X, loss.onehot, loss._w_c(), loss.widths, offs) is None


def test_compiled_dense_passes_are_numpys_bit_for_bit():
    """The elementwise passes one by one against numpy: bias + ReLU / tanh, the softmax's delta and its row sums
    (numpy's pairwise order, short and long rows), the masks with the bias gradient's sums."""
    if not dense_jit.COMPILED:
        pytest.skip("numba off")
    rng = np.random.default_rng(13)
    for K in (3, 8, 10, 17, 40):
        Z = 3 * rng.standard_normal((2, 3, 50, K))
        b = rng.standard_normal((2, 1, K))
        oh = np.eye(K)[rng.integers(0, K, (3, 50))]
        w = rng.random((3, 50))
        ref = (np.exp(log_softmax(Z + b[..., None, :])) - oh) * w[..., None]
        delta, gb = dense_jit.softmax_delta(Z.copy(), b, oh, w)
        assert np.array_equal(delta, ref) and np.array_equal(gb, ref.sum(-2))
        E = rng.random((40, K)) * np.exp(5 * rng.standard_normal((40, K)))
        assert np.array_equal(dense_jit._row_sums(E, np.empty(40)), E.sum(-1))
    Z = rng.standard_normal((2, 3, 50, 6))
    b = rng.standard_normal((3, 6))
    for act in ("relu", "tanh"):
        ref = Z + b[..., None, :]
        ref = np.maximum(ref, 0.0) if act == "relu" else np.tanh(ref)
        assert np.array_equal(dense_jit.bias_act(Z.copy(), b, act), ref)
        B = rng.standard_normal(ref.shape)
        want = B * (ref > 0) if act == "relu" else B * (1.0 - ref * ref)
        out = np.empty((2, 3, 6))
        assert np.array_equal(dense_jit.mask_sums(B.copy(), ref, act, out), want)
        assert np.array_equal(out, want.sum(-2))
    assert dense_jit.lead_index((2, 4, 3), (2, 1, 3)).tolist() == [0, 1, 2] * 4 + [3, 4, 5] * 4


@pytest.mark.parametrize("p,radius", [(5, 2.0), (37, np.array([1.0, 3.0])), (1850, 10.0)])
def test_compiled_l2_fedfw_round_is_the_numpy_round_bit_for_bit(p, radius):
    """FedFW's round after the gradients on the l2 ball, compiled (fedcheck/algorithms/l2_round_jit.py) against
    the numpy path of ``fedfw_variant``'s step written out: penalty, LMO (``e_1`` where the gradient is 0; the
    norm's pairwise sum, short and long), client and server updates -- the same bits."""
    from fedcheck.algorithms.l2_round_jit import _compiled, l2_round
    from fedcheck.problems import L2Ball
    if _compiled is None:
        pytest.skip("numba off")
    rng = np.random.default_rng(14)
    B, n = 2, 4
    S = L2Ball(radius, p)
    X = rng.standard_normal((B, n, p))
    xbar = X.mean(1)
    g = 3 * rng.standard_normal((B, n, p))
    g[1, 2] = 0.0                                      # a zero gradient and no penalty: the LMO's e_1
    X[1, 2] = xbar[1]
    lam, eta = np.array([0.3, 2.0]), np.array([0.5, 0.25])
    inv_n = 1.0 / n
    ref_g = g.copy() * inv_n                          # fedfw_variant's step, numpy
    ref_g += lam[:, None, None] * (X - xbar[:, None, :])
    s = S.lmo(ref_g)
    e = eta[:, None, None]
    Xr = X + e * (s - X)
    xr = xbar + e[:, 0] * (s.mean(1) - xbar)
    Xc = X.copy()
    xc = l2_round(Xc, xbar, g.copy(), inv_n, lam, eta, S)
    assert np.array_equal(Xc, Xr) and np.array_equal(xc, xr)
    assert np.array_equal(s[1, 2], -S._r(s)[1, 0] * np.eye(p)[0]) if np.ndim(radius) else True


def _fedfw_on_an_mlp(seed):
    """``run()``: 6 rounds of ``fedfw_variant`` (Table 2's method, the l2 ball) on a small ReLU MLP, its final
    iterates and server points."""
    from fedcheck.algorithms import ProblemBatch, fedfw_variant
    from fedcheck.problems import L2Ball
    rng = np.random.default_rng(seed)
    A, y, w = _data(rng, lead=(3,), m=12, d=7, K=10)
    loss = MLP(A, y, w, K=10, hidden=(6, 5), activation="relu")
    G, T = 2, 6
    S = L2Ball(10.0, loss.p)
    X0 = np.broadcast_to(S.project(0.3 * rng.standard_normal(loss.p)), (G, 3, loss.p)).copy()
    tt = np.arange(1, T + 1, dtype=float)[:, None]
    eta = np.broadcast_to(2.0 / (tt + 1), (T, G)).copy()
    lam = np.array([0.1, 1.0])[None, :] * np.sqrt(tt + 1)
    prob = ProblemBatch(loss=loss, set=S, B=G, n=3, p=loss.p, X0=X0)

    def run():
        tr = fedfw_variant(prob, eta, lam, T, grid=np.array([T + 1]), recorder=lambda k, X, xb: {})
        return tr.final["X"], tr.final["xbar"]
    return run


def test_fedfw_on_an_mlp_with_the_compiled_round_equals_the_numpy_round(monkeypatch):
    """``fedfw_variant`` on an MLP (Table 2's method): the compiled round and gradient against the numpy ones,
    iterates and server points equal bit for bit after 6 rounds."""
    from fedcheck.algorithms import fedfw_variants
    run = _fedfw_on_an_mlp(15)
    fast = run()
    monkeypatch.setattr(fedfw_variants, "l2_round", lambda *a, **k: None)
    _numpy_path(monkeypatch)
    slow = run()
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])



def _relu_mlp(rng, dlead, K, hidden):
    """A ReLU MLP on random data of lead shape ``dlead`` (7 features; 130 rows for ``K = 10``: numpy's pairwise sum
    over the samples splits past 128; else 9), the last two rows padding; and its weights' offsets."""
    m = 130 if K == 10 else 9
    A = rng.standard_normal(dlead + (m, 7))
    y = rng.integers(0, K, dlead + (m,))
    w = np.full(dlead + (m,), 1.0 / (m - 2))
    w[..., -2:] = 0.0
    loss = MLP(A, y, w, K=K, hidden=hidden, activation="relu")
    return loss, tuple(loss._params[kw][0] for kw, _ in loss.layers)

@pytest.mark.parametrize("hidden", [(6, 5), (7,), (5, 4, 3)])
@pytest.mark.parametrize("K", [4, 10, 19])
@pytest.mark.parametrize("xlead,dlead", [((2, 3), (3,)), ((3,), (3,)), ((2, 4, 3), (2, 1, 3)), ((1, 3), (2, 3))])
def test_compiled_mlp_value_is_the_numpy_path_bit_for_bit(hidden, K, xlead, dlead, monkeypatch):
    """The compiled ReLU forward pass and the loss after it (the row sums over ``K`` in numpy's pairwise order) against
    the numpy path and an independent numpy forward pass: the same bits, broadcasting either way, the points also a
    broadcast view (the recorder's ``F(xbar)``), called twice (the scratch arrays reused), the gradient's scratch
    arrays untouched in between."""
    if dense_jit._mlp_forward is None:
        pytest.skip("numba off or no BLAS found: the numpy path runs")
    rng = np.random.default_rng(13)
    loss, offs = _relu_mlp(rng, dlead, K, hidden)
    for scale in (0.7, 3.0):
        X = scale * rng.standard_normal(xlead + (loss.p,))
        fast = dense_jit.mlp_value(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs)
        assert fast is not None and fast.shape == np.broadcast_shapes(xlead, dlead)
        G = loss.grad(X)
        assert np.array_equal(loss.value(X), fast)
        assert np.array_equal(fast, old_mlp_value(loss, X))
        assert np.array_equal(loss.grad(X), G)
        xb = np.broadcast_to(X[..., :1, :], X.shape)
        assert np.array_equal(loss.value(xb), old_mlp_value(loss, np.ascontiguousarray(xb)))
    with monkeypatch.context() as mp:
        mp.setattr(networks, "mlp_value", lambda *a, **k: None)
        _numpy_path(mp)
        assert np.array_equal(loss.value(X), fast)


def test_compiled_mlp_declines_points_of_another_length():
    """Points one entry short or long: the compiled value and gradient decline (their loops do not check bounds)
    and the loss does what the numpy path does (short: raises; long: the trailing entry unread)."""
    rng = np.random.default_rng(16)
    A, y, w = _data(rng)
    loss = MLP(A, y, w, K=4, hidden=(6, 5), activation="relu")
    offs = tuple(loss._params[kw][0] for kw, _ in loss.layers)
    for p in (loss.p - 1, loss.p + 1):
        X = rng.standard_normal((2, 3, p))
        assert dense_jit.mlp_grad(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs) is None
        assert dense_jit.mlp_value(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs) is None
        for f in (loss.grad, loss.value):
            if p < loss.p:
                with pytest.raises(ValueError):
                    f(X)
            else:
                assert np.array_equal(f(X), f(np.ascontiguousarray(X[..., :loss.p])))


def test_mlp_without_numba_runs_the_numpy_path():
    """``FEDCHECK_JIT=0``: the compiled value and gradient decline (``None``) and the loss gives the numpy path's
    value and gradient, bit for bit (a fresh process: the switch is read at import)."""
    import os
    import subprocess
    import sys
    code = (
        "import numpy as np\n"
        "from fedcheck.problems import dense_jit\n"
        "from fedcheck.problems.networks import MLP, _Network\n"
        "rng = np.random.default_rng(15)\n"
        "A = rng.standard_normal((3, 9, 7)); y = rng.integers(0, 4, (3, 9)); w = np.full((3, 9), 1 / 9)\n"
        "loss = MLP(A, y, w, K=4, hidden=(6, 5), activation='relu')\n"
        "X = rng.standard_normal((2, 3, loss.p))\n"
        "offs = tuple(loss._params[kw][0] for kw, _ in loss.layers)\n"
        "assert dense_jit.mlp_value(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs) is None\n"
        "assert dense_jit.mlp_grad(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs) is None\n"
        "assert np.array_equal(loss.value(X), _Network.value(loss, X))\n"
        "assert np.array_equal(loss.grad(X), _Network.grad(loss, X))\n"
        "print('ok')\n")
    env = dict(os.environ, FEDCHECK_JIT="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -------------------------------------------------------------------------------- the products in vectors
VECTOR_TOL = 1e-12          # dense_jit.VECTOR: relative to the largest entry (observed <= 3e-15)


def _vector_path(monkeypatch):
    if dense_jit._mlp_forward_vec is None:
        pytest.skip("numba off: the numpy path runs")
    monkeypatch.setattr(dense_jit, "VECTOR", True)


@pytest.mark.parametrize("hidden", [(6, 5), (7,), (5, 4, 3), (20, 20), (24, 9)])
@pytest.mark.parametrize("K", [4, 10, 19])
@pytest.mark.parametrize("xlead,dlead", [((2, 3), (3,)), ((3,), (3,)), ((2, 4, 3), (2, 1, 3)), ((1, 3), (2, 3)),
                                         ((3, 2), (2,))])
def test_vector_products_equal_the_numpy_path_within_tolerance(hidden, K, xlead, dlead, monkeypatch):
    """The gradient and the losses with the products in vectors (``dense_jit.VECTOR``: FMA chains in another order
    than BLAS's, the bias and ReLU in the products' epilogue, two points of a data set stacked in the first layer,
    a pair and a lone point when three share one; the gradient group by group, the softmax from
    :func:`dense_jit._exp_codegen`'s exponentials) against the former implementation: within 1e-12 of the largest
    entry, on random networks, broadcasting either way, called twice (the padded scratch arrays reused)."""
    _vector_path(monkeypatch)
    rng = np.random.default_rng(21)
    loss, offs = _relu_mlp(rng, dlead, K, hidden)
    for scale in (0.7, 3.0):
        X = scale * rng.standard_normal(xlead + (loss.p,))
        fast = dense_jit.mlp_grad(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs)
        assert fast is not None
        assert _rel(fast, old_mlp_grad(loss, X)) < VECTOR_TOL
        assert np.array_equal(loss.grad(X), fast)
        v = dense_jit.mlp_value(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs)
        assert _rel(v, old_mlp_value(loss, X)) < VECTOR_TOL
        assert np.array_equal(loss.value(X), v)


def test_vector_products_at_table2_size_and_beyond_their_widths(monkeypatch):
    """Table 2's DNN (60-20-20-10, 1,091 rows, three points per data set): within the tolerance, paired or not;
    a width past 48 (the vectors' registers): the BLAS path, the numpy path's bits."""
    _vector_path(monkeypatch)
    rng = np.random.default_rng(22)
    A = rng.standard_normal((2, 1091, 60))
    y = rng.integers(0, 10, (2, 1091))
    w = np.full((2, 1091), 1.0 / 1091)
    loss = MLP(A, y, w, K=10, hidden=(20, 20), activation="relu")
    X = 0.3 * rng.standard_normal((3, 2, loss.p))
    offs = tuple(loss._params[kw][0] for kw, _ in loss.layers)
    ref = old_mlp_grad(loss, X)
    assert _rel(loss.grad(X), ref) < VECTOR_TOL
    alone = dense_jit._mlp_grad(loss.A, X, loss.onehot, loss._w_c(), loss.widths, offs, None, False)
    assert _rel(alone, ref) < VECTOR_TOL
    assert _rel(loss.value(X), old_mlp_value(loss, X)) < VECTOR_TOL
    wide = MLP(A[:, :40], y[:, :40], w[:, :40], K=10, hidden=(50,), activation="relu")
    Xw = 0.3 * rng.standard_normal((2, 2, wide.p))
    if dense_jit._mlp_forward is not None:
        assert np.array_equal(wide.grad(Xw), old_mlp_grad(wide, Xw))


def test_fedfw_on_an_mlp_with_vector_products_follows_the_numpy_run(monkeypatch):
    """``fedfw_variant`` on an MLP, 6 rounds: the vector products' iterates within 1e-10 of the numpy path's (the
    rounding differences of a non-convex network, carried through the rounds)."""
    run = _fedfw_on_an_mlp(23)
    with monkeypatch.context() as mp:
        _vector_path(mp)
        fast = run()
    _numpy_path(monkeypatch)
    slow = run()
    assert _rel(fast[0], slow[0]) < 1e-10 and _rel(fast[1], slow[1]) < 1e-10


def test_vector_exponential_is_numpys_within_two_ulp():
    """The fused gradient's ``exp`` (arguments <= 0: shifted logits): within 2.2e-16 relative of numpy's down to
    ``exp(-708)``; 0 below (``-inf`` included); NaN kept."""
    if dense_jit._vexp is None:
        pytest.skip("numba off")
    import numba

    @numba.njit
    def vexp(x):
        dense_jit._vexp(x, 0, x.size)
        return x
    rng = np.random.default_rng(24)
    x = -np.abs(30 * rng.standard_normal(4000))
    x[:8] = [0.0, -1e-300, -708.5, -np.inf, np.nan, -707.9, -0.5, -745.0]
    y = vexp(x.copy())
    ok = x > -708
    assert np.max(np.abs(y[ok] - np.exp(x[ok])) / np.exp(x[ok])) < 4.5e-16
    assert np.all(y[(x < -708) | np.isneginf(x)] == 0.0) and np.isnan(y[4])


@pytest.mark.slow
def test_vector_products_give_the_same_bits_on_every_x86_cpu(tmp_path):
    """The vector path's FMAs are correctly rounded whatever the instructions (AVX-512 here, AVX2, or SSE2 with
    libm's ``fma``): compiled for a baseline x86-64 CPU (a fresh process, its own numba cache), the same bits as
    here -- unlike numpy's BLAS, whose kernels OpenBLAS picks per CPU."""
    import os
    import subprocess
    import sys
    if dense_jit._mlp_forward_vec is None:
        pytest.skip("numba off")
    code = (
        "import sys, numpy as np\n"
        "from fedcheck.problems.networks import MLP\n"
        "rng = np.random.default_rng(25)\n"
        "A = rng.standard_normal((3, 70, 13)); y = rng.integers(0, 10, (3, 70)); w = np.full((3, 70), 1 / 70)\n"
        "loss = MLP(A, y, w, K=10, hidden=(20, 9), activation='relu')\n"
        "X = 0.5 * rng.standard_normal((2, 3, loss.p))\n"
        "np.save(sys.argv[1], np.concatenate([loss.grad(X).ravel(), loss.value(X).ravel()]))\n")
    out = {}
    for cpu in ("", "x86-64"):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / f"cache{cpu}"))
        if cpu:
            env["NUMBA_CPU_NAME"] = cpu
        f = tmp_path / f"g{cpu}.npy"
        run = subprocess.run([sys.executable, "-c", code, str(f)], env=env, capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stderr
        out[cpu] = np.load(f)
    assert np.array_equal(out[""], out["x86-64"])
