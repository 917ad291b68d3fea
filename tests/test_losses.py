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
