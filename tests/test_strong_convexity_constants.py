"""The generic constants of strongly convex least squares -- mu, mu_F, L_F (the smoothness of the average), kappa,
Gamma = F* - (1/n) sum_k F_k*, max_k F_k* -- against their definitions: cvxpy's per-client minima and the
strong convexity / smoothness inequalities, tight along the extreme eigenvectors."""
import cvxpy as cp
import numpy as np
import pytest

from fedcheck.problems import RandomFamily
from fedcheck.problems.instances import Instance
from fedcheck.problems.sets import make_set
from fedcheck.problems.constants import GENERIC, InstanceContext, resolve
from fedcheck.problems.solve import solve_consensus


def _ctx(seed, radius=1.0):
    rng = np.random.default_rng(seed)       # heterogeneous clients: each its own minimizer, of norm about 1
    A = rng.standard_normal((3, 12, 4))
    b = np.einsum("kmp,kp->km", A, rng.standard_normal((3, 4)) / 2) + 0.1 * rng.standard_normal((3, 12))
    inst = Instance(A=A, b=b, loss="least_squares", set=make_set("l2", radius, 4), seed=None, source="test")
    return inst, InstanceContext(inst, inst.make_loss(), solve_consensus(inst, use_cache=False), {})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mu_and_L_F_are_the_tight_strong_convexity_and_smoothness(seed):
    inst, ctx = _ctx(seed)
    mu, mu_F, L_F = (resolve(k, ctx).value for k in ("mu", "mu_F", "L_F"))
    assert 0 < mu <= mu_F <= L_F <= resolve("L", ctx).value + 1e-12
    assert resolve("kappa", ctx).value == pytest.approx(resolve("L", ctx).value / mu)
    loss = ctx.loss
    rng = np.random.default_rng(seed)
    gF = lambda x: loss.grad(np.broadcast_to(x, (inst.n, inst.p))).mean(0)  # noqa: E731
    for _ in range(20):
        x, y = rng.standard_normal(inst.p), rng.standard_normal(inst.p)
        d = np.linalg.norm(gF(x) - gF(y))
        assert mu_F * np.linalg.norm(x - y) - 1e-9 <= d <= L_F * np.linalg.norm(x - y) + 1e-9
    H = np.asarray(loss.H).mean(0)
    w, V = np.linalg.eigh(H)
    x = rng.standard_normal(inst.p)
    assert np.linalg.norm(gF(x + V[:, -1]) - gF(x)) == pytest.approx(L_F)       # tight
    assert np.linalg.norm(gF(x + V[:, 0]) - gF(x)) == pytest.approx(mu_F)
    Hk = np.asarray(loss.H)
    assert min(np.linalg.eigvalsh(h)[0] for h in Hk) == pytest.approx(mu)


@pytest.mark.parametrize("seed, radius", [(0, 1e3), (1, 1e3), (2, 0.3)])
def test_Gamma_against_cvxpy(seed, radius):
    inst, ctx = _ctx(seed, radius=radius)
    fk = []
    for A, b in zip(inst.A, inst.b):
        x = cp.Variable(inst.p)
        fk.append(cp.Problem(cp.Minimize(cp.sum_squares(A @ x - b) / (2 * inst.m))).solve())
    x = cp.Variable(inst.p)
    F = sum(cp.sum_squares(A @ x - b) / (2 * inst.m) for A, b in zip(inst.A, inst.b)) / inst.n
    F_star = cp.Problem(cp.Minimize(F), [cp.norm(x, 2) <= radius]).solve()
    g = resolve("Gamma", ctx)
    assert g.value == pytest.approx(F_star - np.mean(fk), rel=1e-5, abs=1e-7)
    assert g.value >= -1e-9
    assert g.exact == (radius > 1)          # a small ball cuts the clients' minimizers off: an upper bound then
    assert resolve("F_k_star_max", ctx).value == pytest.approx(max(fk), rel=1e-5, abs=1e-8)


def test_a_loss_without_a_constant_hessian_has_no_mu():
    inst = RandomFamily(loss="logistic", set="l2", n=2, m=6, p=3).draw(0)
    ctx = InstanceContext(inst, inst.make_loss(), None, {})
    with pytest.raises(KeyError, match="least squares"):
        GENERIC["mu"](ctx)
