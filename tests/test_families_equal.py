"""Every family's engine against its plain per-client loop (``benchmarks/families.py``), on tiny shapes:
the same iterates within ``F.ULPS`` units in the last place of each compared array's magnitude.  Engine and
loop sum their products in different orders (one client's ``A_i @ w`` against a batched ``matmul``/``einsum``,
BLAS, numpy's reductions), so bit identity is not promised across numpy or BLAS releases; the tolerance is
stated in ulps of the magnitude, not as an absolute number.  No timing."""
import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "fedcheck_bench_families", Path(__file__).resolve().parent.parent / "benchmarks" / "families.py")
F = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = F          # dataclasses look their module up
_spec.loader.exec_module(F)


@pytest.mark.parametrize("name", sorted(F.TINY))
def test_engine_equals_loop(name):
    case = F.CASES[name](**F.TINY[name])
    bitwise, ulps = F.check_equal(case)
    assert ulps <= F.ULPS, f"{name}: max |engine - loop| = {ulps:.3g} ulp of the magnitude (> {F.ULPS})"


def test_compare_counts_units_in_the_last_place():
    import numpy as np
    eps = np.finfo(float).eps
    a = {"x": np.array([1.0, np.nan])}
    assert F.compare(a, {"x": np.array([1.0, np.nan])}) == (True, 0.0)
    assert F.compare({"x": np.array([1.0 + eps, 2.0])}, {"x": np.array([1.0, 2.0])}) == (False, 0.5)
    assert F.compare({"x": np.array([4.0 + 8 * eps])}, {"x": np.array([4.0])}) == (False, 2.0)
    assert F.compare({"x": np.array([1.0 + 1e-9])}, {"x": np.array([1.0])})[1] > F.ULPS    # a real difference
    assert F.compare(a, {"x": np.array([1.0, 0.0])})[1] == float("inf")
    assert F.compare({"x": np.array([np.inf])}, {"x": np.array([1.0])})[1] == float("inf")


def test_local_updates_reads_step_sizes_by_value():
    """A step-size function that reuses (and mutates) one array gives the same iterates as one that returns a
    new array each step: the engine's spread step sizes are keyed by value, not by object."""
    import numpy as np
    from fedcheck.algorithms.pieces import local_updates
    rng = np.random.default_rng(0)
    W0 = rng.standard_normal((3, 4, 5))
    grad = lambda W, t: 0.5 * W + 0.1 * t                # noqa: E731
    sched = [np.array([0.1, 0.2, 0.3]) * (1 + (t % 3)) for t in range(1, 8)]
    fresh = local_updates(W0.copy(), grad, 7, lambda t: sched[t - 1].copy())
    shared = np.empty(3)

    def reused(t):
        shared[...] = sched[t - 1]
        return shared
    same = local_updates(W0.copy(), grad, 7, reused)
    np.testing.assert_array_equal(same, fresh)


def _quad_batch(B=5, M=3, d=4, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((B, d, d))
    QT = np.ascontiguousarray((A @ A.transpose(0, 2, 1) + np.eye(d)).swapaxes(-1, -2))
    return (rng.standard_normal((B, M, d)), QT, rng.standard_normal((B, M, d)), rng.standard_normal((B, M, d)),
            np.abs(rng.standard_normal((B, M, d))))


def test_compiled_kernels_of_quadratic_clients_equal_numpy():
    """The compiled stochastic gradient ``(W Q^T + c) + xi sd`` and objective ``0.5 w^T Q w + c^T w + e`` of
    quadratic clients: the numpy formulas up to the order of the sums (1e-15 relative), clients_mean bit for
    bit; ``None`` (numpy is used) for inputs they do not take."""
    import numpy as np
    from fedcheck.algorithms import kernels
    if kernels.quad_noisy_grad(*_quad_batch()) is None:
        pytest.skip("numba is off")
    W, QT, c, xi, sd = _quad_batch()
    g = kernels.quad_noisy_grad(W, QT, c, xi, sd)
    ref = (np.matmul(W, QT) + c) + xi * sd
    assert np.abs(g - ref).max() <= 1e-14 * np.abs(ref).max()
    assert kernels.quad_noisy_grad(np.asfortranarray(W), QT, c, xi, sd) is None
    assert kernels.quad_noisy_grad(W.astype(np.float32), QT, c, xi, sd) is None
    assert kernels.quad_noisy_grad(W, QT[:, :2], c, xi, sd) is None
    w, Q, cb, e = W[:, 0].copy(), np.ascontiguousarray(QT.swapaxes(-1, -2)), c[:, 0].copy(), xi[:, 0, 0].copy()
    v = kernels.quad_value(w, Q, cb, e)
    ref = 0.5 * np.einsum("bi,bij,bj->b", w, Q, w) + np.einsum("bi,bi->b", w, cb) + e
    assert np.abs(v - ref).max() <= 1e-14 * np.abs(ref).max()
    assert kernels.quad_value(w[:, :2], Q, cb, e) is None
    assert np.array_equal(kernels.clients_mean(W), W.mean(1))


def test_fused_stochastic_gradient_draws_the_same_numbers():
    """QuadraticClients.grad with every client (the compiled pass) and with a subset (numpy): the same
    normals from the same stream, the same gradient up to the order of the sums."""
    import numpy as np
    prob = F._composite_batch(4)
    W = np.random.default_rng(3).standard_normal((4, prob.M, prob.d))
    g_full = prob.grad(W, None, 0, np.random.default_rng(9))
    ref = prob.full_grad_clients(W) + prob.noise_draw(W.shape, np.random.default_rng(9))
    assert np.abs(g_full - ref).max() <= 1e-14 * np.abs(ref).max()
    wf = np.asfortranarray(W)          # not C-contiguous: the numpy path, the same numbers
    assert np.abs(prob.grad(wf, None, 0, np.random.default_rng(9)) - ref).max() <= 1e-14 * np.abs(ref).max()
