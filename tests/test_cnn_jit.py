"""The compiled pieces of a CNN's convolution block (:mod:`fedcheck.problems.cnn_jit`) against the numpy code of
:class:`fedcheck.problems.networks.CNN` they replace (what ``FEDCHECK_JIT=0`` runs): the same bits.

* max pooling: numpy's chain of ``np.maximum`` over the window offsets -- ties (also ``-0.0`` against ``0.0``), NaN,
  rows and columns past a multiple of the pool size;
* the backward pass below the pooling (``dH * act'(Zp)``, the first maximum of each window, the bias sums): ReLU
  and tanh, ties and NaN windows, odd sizes;
* the whole gradient of a CNN, compiled against numpy, bit for bit;
* it declines (``None``) for average pooling, no pooling, non-contiguous or non-float64 input.
"""
import numpy as np
import pytest

from fedcheck.problems import cnn_jit as CJ
from fedcheck.problems import networks as NW

needs_numba = pytest.mark.skipif(CJ._compiled is None, reason="numba is off (FEDCHECK_JIT=0 or absent)")


def _cnn(rng, pool=2, activation="relu", m=5, n=3, image=(7, 8, 2), channels=(4,), pooling="max"):
    H, W, C = image
    A = rng.standard_normal((2, n, m, H * W * C))
    A[..., : H * W * C // 3] = 0.0                       # background pixels: equal conv outputs (ties in the pooling)
    y = rng.integers(0, 3, size=(2, n, m))
    w = np.full((2, n, m), 1.0 / m)
    return NW.CNN(A, y, w, K=3, image=image, channels=channels, kernel=3, pool=pool, pooling=pooling, hidden=(6,),
                  activation=activation)


def _numpy(fn):
    saved = CJ._compiled, CJ._pool_compiled
    CJ._compiled = CJ._pool_compiled = None
    try:
        return fn()
    finally:
        CJ._compiled, CJ._pool_compiled = saved


def _same(a, b):
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))


@needs_numba
@pytest.mark.parametrize("q", [2, 3])
@pytest.mark.parametrize("shape", [(3, 6, 6, 4), (2, 2, 7, 9, 3), (1, 5, 4, 1)])
def test_max_pool_is_numpys_chain(q, shape):
    rng = np.random.default_rng(sum(shape) + q)
    V = rng.standard_normal(shape)
    V[rng.random(shape) < 0.3] = 0.5                     # ties
    V[rng.random(shape) < 0.1] = 0.0
    V[rng.random(shape) < 0.1] = -0.0
    V[rng.random(shape) < 0.03] = np.nan
    net = _cnn(rng, pool=q)
    fast = CJ.max_pool(V, q)
    assert fast is not None
    assert _same(fast, _numpy(lambda: net._pool_forward(V)))


@needs_numba
@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("q,shape", [(2, (2, 3, 4, 6, 6, 5)), (2, (1, 2, 7, 9, 3)), (3, (2, 5, 7, 6, 2))])
def test_conv_pool_backward_is_numpys(activation, q, shape):
    rng = np.random.default_rng(len(shape) * 7 + q)
    net = _cnn(rng, pool=q, activation=activation)
    Z = rng.standard_normal(shape)
    Z[rng.random(shape) < 0.3] = 0.25                    # tied maxima
    Z[rng.random(shape) < 0.02] = np.nan                 # NaN windows: no hit
    Zp = _numpy(lambda: net._pool_forward(Z))
    Hc = NW._act(Zp, activation)
    dH = rng.standard_normal(Zp.shape)
    dH[rng.random(Zp.shape) < 0.05] = 0.0
    got = CJ.conv_pool_backward(dH, Zp, Hc, Z, q, "max", activation)
    assert got is not None
    dZ, gb = got
    want = _numpy(lambda: net._pool_backward(dH * NW._dact(Zp, Hc, activation), Z, Zp))
    assert _same(dZ, want)
    assert _same(gb, want.reshape(want.shape[:-4] + (-1, shape[-1])).sum(-2))


@needs_numba
@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("seed", range(3))
def test_cnn_gradient_compiled_is_numpys_bit_for_bit(activation, seed):
    rng = np.random.default_rng(seed)
    net = _cnn(rng, activation=activation, channels=(4, 3) if seed == 2 else (4,),
               image=(9, 9, 1) if seed == 2 else (7, 8, 2))
    X = rng.standard_normal((2, 3, net.p)) * 0.5
    v1, g1 = net.value_and_grad(X)
    v2, g2 = _numpy(lambda: net.value_and_grad(X))
    assert _same(v1, v2) and _same(g1, g2)


def test_declines():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((2, 3, 6, 6, 4))
    Zp = np.ascontiguousarray(Z[..., ::2, ::2, :])
    assert CJ.conv_pool_backward(Zp, Zp, Zp, Z, 2, "avg", "relu") is None
    assert CJ.conv_pool_backward(Zp, Zp, Zp, Z, 1, "max", "relu") is None
    assert CJ.conv_pool_backward(Z[..., ::2, ::2, :], Zp, Zp, Z, 2, "max", "relu") is None     # not contiguous
    assert CJ.conv_pool_backward(Zp.astype(np.float32), Zp, Zp, Z, 2, "max", "relu") is None
    assert CJ.max_pool(Z, 1) is None
    assert CJ.max_pool(Z.astype(np.float32), 2) is None
    if CJ._compiled is None:
        assert CJ.conv_pool_backward(Zp, Zp, Zp, Z, 2, "max", "relu") is None
        assert CJ.max_pool(Z, 2) is None
