"""Exact optima: certificates, duals, cache, inaccurate solves."""
import numpy as np
import pytest

from fedcheck.problems.suprema import trs_max, sup_grad_norm_sq
from fedcheck.problems.instances import RandomFamily
from fedcheck.problems.solve import CACHE_STATS, solve_consensus


@pytest.mark.parametrize("loss", ["least_squares", "logistic"])
@pytest.mark.parametrize("set_name", ["l1", "l2", "box", "simplex"])
def test_certified_optimum_and_duals(loss, set_name):
    inst = RandomFamily(loss=loss, set=set_name, n=4, m=10, p=6).draw(3)
    sol = solve_consensus(inst, use_cache=False)
    assert sol.status == "optimal" and sol.accurate and sol.reason is None
    assert sol.solver == "CLARABEL" and "cvxpy=" in sol.solver_version
    assert 0 <= sol.gap < 1e-6 and sol.F_lower <= sol.F_star
    assert inst.set.contains(sol.x_star, 1e-12)
    # Y* is a dual solution of (3): sum_i y_i = 0 and x* minimizes (1/n) f_i + <y_i, .> over D
    assert sol.dual_residual < 1e-5
    assert np.linalg.norm(sol.Y_star.sum(0)) < 1e-6
    # the saddle-point inequality (33) at random feasible X and consensus R
    loss_obj = inst.make_loss()
    rng = np.random.default_rng(0)
    for _ in range(5):
        X = inst.set.project(3 * rng.standard_normal((inst.n, inst.p)))
        R = np.broadcast_to(inst.set.project(rng.standard_normal(inst.p)), X.shape)
        lag = loss_obj.value(X).mean() + np.sum(sol.Y_star * (X - R))
        assert sol.F_lower <= lag + 1e-6


def test_cache_hits_on_repeat():
    inst = RandomFamily(n=3, m=5, p=4).draw(11)
    before = dict(CACHE_STATS)
    a = solve_consensus(inst)
    b = solve_consensus(inst)
    assert not a.cached and b.cached
    assert CACHE_STATS["hits"] == before["hits"] + 1
    assert b.F_star == a.F_star and np.array_equal(b.Y_star, a.Y_star)


def test_inaccurate_status_is_not_accurate(monkeypatch):
    inst = RandomFamily(n=2, m=4, p=3).draw(5)
    sol = solve_consensus(inst, use_cache=False)
    sol.status = "optimal_inaccurate"
    assert not sol.accurate and "optimal_inaccurate" in sol.reason


def test_trust_region_maximum_matches_sampling():
    rng = np.random.default_rng(4)
    for _ in range(20):
        B = rng.standard_normal((3, 3))
        M = B @ B.T
        c = rng.standard_normal(3)
        r = rng.uniform(0.2, 3)
        exact = trs_max(M, c, r)
        U = rng.standard_normal((20000, 3))
        U = r * U / np.linalg.norm(U, axis=1, keepdims=True)
        sampled = (((U @ M.T) - c) ** 2).sum(1).max()
        assert sampled <= exact * (1 + 1e-10)
        assert sampled >= exact * (1 - 1e-2)


def test_trust_region_hard_case():
    M = np.diag([2.0, 1.0])
    c = np.array([0.0, 1.0])  # no weight on the top eigenvector
    # max over ||x|| <= 1 of (2 x1)^2 + (x2 - 1)^2: at x = (sqrt(1 - x2^2), x2), x2 = -1/3
    x2 = -1 / 3
    expected = 4 * (1 - x2 ** 2) + (x2 - 1) ** 2
    assert trs_max(M, c, 1.0) == pytest.approx(expected, rel=1e-9)


def test_sup_grad_exact_for_small_box_matches_l2_bound_order():
    inst = RandomFamily(set="box", n=2, m=6, p=4).draw(0)
    s, exact, how = sup_grad_norm_sq(inst.make_loss(), inst.set)
    assert exact and "2^4" in how
    rng = np.random.default_rng(0)
    loss = inst.make_loss()
    X = inst.set.project(5 * rng.standard_normal((5000, 2, 4)))
    sampled = (loss.grad(X) ** 2).sum(-1).max(0)
    assert np.all(sampled <= s * (1 + 1e-12))
    big = RandomFamily(set="box", n=2, m=6, p=20).draw(0)
    s2, exact2, _ = sup_grad_norm_sq(big.make_loss(), big.set)
    assert not exact2 and np.all(np.isfinite(s2))
