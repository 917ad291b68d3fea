"""Client losses: finite-difference gradients, exact smoothness, cvxpy expressions."""
import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcheck.problems.losses import LeastSquares, Logistic, make_loss
from fedcheck.testing import instances


@settings(max_examples=30, deadline=None)
@given(instances(), st.integers(0, 1000))
def test_gradient_matches_finite_differences(inst, seed):
    loss = inst.make_loss()
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((inst.n, inst.p))
    G = loss.grad(X)
    h = 1e-6
    for j in range(inst.p):
        E = np.zeros_like(X)
        E[:, j] = h
        fd = (loss.value(X + E) - loss.value(X - E)) / (2 * h)
        np.testing.assert_allclose(G[:, j], fd, rtol=1e-5, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(instances())
def test_smoothness_is_exact(inst):
    """L_i is a valid Lipschitz constant of grad f_i and it is attained (least squares) or the
    curvature at 0 along the top direction equals it (logistic, where sigma' = 1/4 at 0)."""
    loss = inst.make_loss()
    L = loss.smoothness()
    A = inst.A
    _, _, Vt = np.linalg.svd(A)
    v = Vt[:, 0, :]  # top right-singular vector per client
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((2, inst.n, inst.p))
    ratio = np.linalg.norm(loss.grad(X) - loss.grad(Y), axis=-1) / np.linalg.norm(X - Y, axis=-1)
    assert np.all(ratio <= L * (1 + 1e-10))
    h = 1e-4
    attained = np.linalg.norm(loss.grad(h * v) - loss.grad(-h * v), axis=-1) / (2 * h)
    np.testing.assert_allclose(attained, L, rtol=1e-5 if isinstance(loss, Logistic) else 1e-9)


@settings(max_examples=15, deadline=None)
@given(instances())
def test_cvxpy_expression_matches_value(inst):
    loss = inst.make_loss()
    x = np.random.default_rng(1).standard_normal(inst.p)
    var = cp.Variable(inst.p)
    var.value = x
    for i in range(inst.n):
        assert loss.cvx(None, i, var).value == pytest.approx(loss.value(np.broadcast_to(x, (inst.n, inst.p)))[i],
                                                             rel=1e-10, abs=1e-12)


def test_batched_equals_single():
    rng = np.random.default_rng(3)
    A, b = rng.standard_normal((4, 3, 5, 2)), rng.standard_normal((4, 3, 5))
    X = rng.standard_normal((4, 3, 2))
    for cls, bb in ((LeastSquares, b), (Logistic, np.sign(b) + (b == 0))):
        batched = cls(A, bb)
        for k in range(4):
            single = batched.take(k)
            np.testing.assert_allclose(batched.grad(X)[k], single.grad(X[k]))
            np.testing.assert_allclose(batched.value(X)[k], single.value(X[k]))


def test_logistic_is_stable_for_large_margins():
    A = np.array([[[1000.0], [-1000.0]]])
    loss = Logistic(A, np.array([[1.0, 1.0]]))
    v = loss.value(np.array([[1.0]]))
    g = loss.grad(np.array([[1.0]]))
    assert np.all(np.isfinite(v)) and np.all(np.isfinite(g))
    assert v[0] == pytest.approx(1000.0 / 2, rel=1e-12)


def test_bad_losses():
    with pytest.raises(ValueError, match="unknown loss"):
        make_loss("hinge2", np.zeros((1, 1, 1)), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="labels"):
        Logistic(np.zeros((1, 2, 1)), np.array([[0.5, 1.0]]))
    with pytest.raises(ValueError, match="must be"):
        LeastSquares(np.zeros((1, 2, 1)), np.zeros((1, 3)))


# ---------------------------------------------------------------------------------------------
# the constraint kinds moved from FedSGM (one hierarchy) and the merged LAD / MaxAffine
from fedcheck.problems.losses import (LAD, Affine, Distance, Huber, L2Residual, Loss, MaxAffine,  # noqa: E402
                                      WeightedLogistic)

B_, N_, M_, P_ = 2, 3, 5, 4   # instances, clients, rows, dimension


def _draw(kind: str, rng) -> Loss:
    A = rng.standard_normal((B_, N_, M_, P_))
    b = rng.standard_normal((B_, N_, M_))
    if kind == "lad":
        return LAD(A, b)
    if kind == "lad_fedsgm":
        return LAD(A, b, lipschitz_bound="row_norms", kernel="einsum")
    if kind == "max_affine":
        return MaxAffine(A, b)
    if kind == "max_affine_fedsgm":
        return MaxAffine(A, b, kernel="einsum")
    if kind == "l2_residual":
        return L2Residual(A, b)
    if kind == "distance":
        return Distance(rng.standard_normal((B_, N_, P_)), rng.uniform(0, 2, (B_, N_)))
    if kind == "weighted_logistic":
        v = rng.uniform(0, 1, (B_, N_, M_)) * (rng.uniform(size=(B_, N_, M_)) < 0.8)   # zeros: padding rows
        return WeightedLogistic(X=A, y=(rng.uniform(size=(B_, N_, M_)) < 0.5).astype(float), v=v,
                                kappa=rng.uniform(0, 1, (B_, N_)))
    if kind == "huber":
        return Huber(A, b, rng.uniform(0.1, 2.0, (B_, N_)))
    if kind == "affine":
        return Affine(rng.standard_normal((B_, N_, P_)), rng.standard_normal((B_, N_)))
    raise KeyError(kind)


MOVED = ("lad", "lad_fedsgm", "max_affine", "max_affine_fedsgm", "l2_residual", "distance", "weighted_logistic",
         "huber", "affine")


@pytest.mark.parametrize("kind", MOVED)
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_subgradient_inequality(kind, seed):
    """Convexity and the subgradient: ``f(y) >= f(x) + <g(x), y - x>`` for every client, also at kinks
    (``x`` put on a kink of LAD / MaxAffine / Distance) and far away; and ``||g|| <= Lip``."""
    rng = np.random.default_rng(seed)
    loss = _draw(kind, rng)
    X = rng.standard_normal((B_, N_, P_)) * rng.choice([0.1, 1.0, 30.0])
    if kind.startswith("lad"):   # row 0 on its kink: a_0^T x = b_0
        a0 = loss.A[..., 0, :]
        X = X + ((loss.b[..., 0] - np.einsum("...p,...p->...", a0, X)) / (a0 * a0).sum(-1))[..., None] * a0
    if kind == "distance" and seed % 2:
        X = loss.c.copy()   # the centre: subgradient 0
    G = loss.grad(X)
    fx = loss.value(X)
    lip = loss.lipschitz()[0]
    assert np.all(np.linalg.norm(G, axis=-1) <= lip * (1 + 1e-10) + 1e-12)
    for _ in range(5):
        Y = X + rng.standard_normal(X.shape) * rng.choice([1e-3, 1.0, 10.0])
        lower = fx + np.einsum("...p,...p->...", G, Y - X)
        assert np.all(loss.value(Y) >= lower - 1e-9 * (1 + np.abs(lower)))


@pytest.mark.parametrize("kind", MOVED)
@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_gradient_matches_finite_differences_at_random_points(kind, seed):
    """At random points every kind is differentiable (almost surely): its (sub)gradient is the gradient."""
    rng = np.random.default_rng(seed)
    loss = _draw(kind, rng)
    X = 2 * rng.standard_normal((B_, N_, P_))
    G = loss.grad(X)
    h = 1e-6
    for j in range(P_):
        E = np.zeros_like(X)
        E[..., j] = h
        fd = (loss.value(X + E) - loss.value(X - E)) / (2 * h)
        np.testing.assert_allclose(G[..., j], fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", MOVED)
def test_cvx_expression_matches_value(kind):
    rng = np.random.default_rng(11)
    loss = _draw(kind, rng)
    for _ in range(3):
        X = rng.standard_normal((B_, N_, P_))
        mine = loss.value(X)
        for k in range(B_):
            single = loss.take(k)
            for i in range(N_):
                var = cp.Variable(P_)
                var.value = X[k, i]
                ref = loss.cvx(k, i, var).value
                assert ref == pytest.approx(mine[k, i], rel=1e-10, abs=1e-12)
                assert single.cvx(None, i, var).value == pytest.approx(ref, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("kind", MOVED)
def test_take_stack_map_and_constructor_convention(kind):
    loss = _draw(kind, np.random.default_rng(5))
    X = np.random.default_rng(6).standard_normal((B_, N_, P_))
    again = Loss.stack([loss.take(k).map(lambda v: v[None]) for k in range(B_)])
    assert type(again) is type(loss) and again.opts == loss.opts
    for k in range(B_):
        np.testing.assert_array_equal(loss.take(k).value(X[k]), loss.value(X)[k])
    np.testing.assert_array_equal(again.grad(X), loss.grad(X))
    positional = type(loss)(*loss.arrays.values(), **loss.opts)
    np.testing.assert_array_equal(positional.value(X), loss.value(X))
    assert loss.n == N_ and loss.p == P_ and loss.batch_shape == (B_,)
    assert np.array_equal(loss.subgrad(X), loss.grad(X))


def test_lad_and_max_affine_kernels_differ_in_rounding_only():
    """The ``kernel`` option changes the evaluation order, not the function or the subgradient choice
    (``sign(0) = 0``; lowest maximizing piece)."""
    rng = np.random.default_rng(8)
    A, b = rng.standard_normal((B_, N_, M_, P_)), rng.standard_normal((B_, N_, M_))
    X = rng.standard_normal((B_, N_, P_))
    for make in (lambda **o: LAD(A, b, **o), lambda **o: MaxAffine(A, b, **o)):
        m, e = make(kernel="matmul"), make(kernel="einsum")
        np.testing.assert_allclose(m.value(X), e.value(X), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(m.grad(X), e.grad(X), rtol=1e-13, atol=1e-13)
    tie = MaxAffine(np.array([[[[1.0, 0.0], [0.0, 1.0]]]]), np.zeros((1, 1, 2)), kernel="einsum")
    np.testing.assert_array_equal(tie.grad(np.ones((1, 1, 2))), [[[1.0, 0.0]]])
    lad = LAD(A, b, lipschitz_bound="row_norms")
    exact = LAD(A, b).lipschitz()
    assert exact[1] and not lad.lipschitz()[1]
    assert np.all(exact[0] <= lad.lipschitz()[0] * (1 + 1e-12))


def test_smoothness_of_the_smooth_moved_kinds():
    rng = np.random.default_rng(9)
    wl = _draw("weighted_logistic", rng)
    H = np.einsum("...mp,...m,...mq->...pq", wl.X, wl.v, wl.X) / 4     # the Hessian at 0: L is attained there
    v = np.linalg.eigh(H)[1][..., -1]
    h = 1e-4
    attained = np.linalg.norm(wl.grad(h * v) - wl.grad(-h * v), axis=-1) / (2 * h)
    np.testing.assert_allclose(attained, wl.smoothness(), rtol=1e-6)
    for loss in (wl, _draw("huber", rng), _draw("affine", rng)):
        L = loss.smoothness()
        X, Y = 3 * rng.standard_normal((2, B_, N_, P_))
        ratio = np.linalg.norm(loss.grad(X) - loss.grad(Y), axis=-1) / np.linalg.norm(X - Y, axis=-1)
        assert np.all(ratio <= L * (1 + 1e-10) + 1e-15)
    for kind in ("lad", "max_affine", "l2_residual", "distance"):
        assert np.all(np.isinf(_draw(kind, rng).smoothness())) and not _draw(kind, rng).smooth


def test_bad_moved_losses():
    with pytest.raises(ValueError, match="must be"):
        Distance(np.zeros((1, 2, 3)), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="labels"):
        WeightedLogistic(np.zeros((1, 2, 1)), np.array([[-1.0, 1.0]]), np.ones((1, 2)), np.zeros(1))
    with pytest.raises(ValueError, match="kernel"):
        LAD(np.zeros((1, 2, 1)), np.zeros((1, 2)), kernel="blas")
    with pytest.raises(TypeError, match="unknown options"):
        MaxAffine(np.zeros((1, 2, 1)), np.zeros((1, 2)), lipschitz_bound="exact")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=0, max_size=3), st.integers(1, 9), st.integers(1, 6),
       st.lists(st.integers(1, 3), min_size=0, max_size=2), st.integers(0, 2**32 - 1), st.booleans())
def test_take_rows_is_take_along_axis(lead, m, b, tail, seed, strided):
    """The minibatch oracles' row gather (``take_rows``) is ``np.take_along_axis`` element for element, on
    contiguous and strided arrays, with and without trailing axes; an index out of range raises."""
    from fedcheck.problems.losses import take_rows
    rng = np.random.default_rng(seed)
    lead, tail = tuple(lead), tuple(tail)
    A = rng.standard_normal(lead + (m,) + tail + ((2,) if strided else ()))
    if strided:
        A = A[..., 0]
    rows = rng.integers(0, m, size=lead + (b,))
    want = np.take_along_axis(A, rows.reshape(rows.shape + (1,) * len(tail)), axis=len(lead))
    got = take_rows(A, rows)
    assert got.shape == want.shape and np.array_equal(got, want)
    assert not np.shares_memory(got, A)
    bad = rows.copy()
    bad.reshape(-1)[0] = m
    with pytest.raises(IndexError):
        take_rows(A, bad)


def test_take_rows_broadcasting_leading_axes_is_take_along_axis():
    from fedcheck.problems.losses import take_rows
    rng = np.random.default_rng(1)
    A = rng.standard_normal((1, 3, 5, 2))
    rows = rng.integers(0, 5, size=(4, 3, 2))
    assert np.array_equal(take_rows(A, rows), np.take_along_axis(A, rows[..., None], axis=2))
