"""Every family's engine against its plain per-client loop (``benchmarks/families.py``), on tiny shapes:
the same iterates (bitwise where the benchmark reports bitwise, else within 1e-10).  No timing."""
import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "fedcheck_bench_families", Path(__file__).resolve().parent.parent / "benchmarks" / "families.py")
F = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = F          # dataclasses look their module up
_spec.loader.exec_module(F)

# families whose loop reproduces the engine bit for bit (the others: the batched ``W @ Q^T`` of the
# shared-Hessian gradient (gemm) sums in another order than the loop's one-client ``Q @ w`` (gemv))
BITWISE = {"fedfw", "fedavg", "fedavg_paper", "fedmls", "mopes", "fedsgm", "fedprox"}


@pytest.mark.parametrize("name", sorted(F.TINY))
def test_engine_equals_loop(name):
    case = F.CASES[name](**F.TINY[name])
    bitwise, diff = F.check_equal(case)
    if name in BITWISE:
        assert bitwise, f"{name}: max |engine - loop| = {diff:.3e}"
    else:
        assert bitwise or diff <= F.TOL, f"{name}: max |engine - loop| = {diff:.3e}"


def test_compare_sees_a_difference():
    import numpy as np
    a = {"x": np.array([1.0, np.nan])}
    assert F.compare(a, {"x": np.array([1.0, np.nan])}) == (True, 0.0)
    assert F.compare(a, {"x": np.array([1.0 + 1e-9, np.nan])})[0] is False
    assert F.compare(a, {"x": np.array([1.0, 0.0])})[1] == float("inf")


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
