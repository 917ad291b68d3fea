"""The building blocks of a strongly convex FedAvg theorem: a family whose mu and L are known exactly, client weights
p_k = n_k / N in the instance format, the solves and the constants, and FedAvg's weighted aggregation; each against
cvxpy or a closed form."""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedcheck.algorithms import run_fedavg
from fedcheck.algorithms.pieces import static_oracle
from fedcheck.problems import (Instance, InstanceBatch, InstanceError, StronglyConvexFamily, load_instance,
                               save_instance, solve_consensus)
from fedcheck.problems.constants import InstanceContext, resolve

DATA = Path(__file__).parent / "data"


def _ctx(inst):
    return InstanceContext(inst, inst.make_loss(), solve_consensus(inst, use_cache=False), {})


@st.composite
def families(draw, weighted=st.booleans()):
    n, p = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    m = draw(st.integers(p, p + 4))
    mu = draw(st.floats(0.05, 2.0))
    L = mu * draw(st.floats(1.0, 20.0))
    samples = tuple(draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))) if draw(weighted) else None
    return StronglyConvexFamily(n=n, m=m, p=p, mu=mu, L=L, heterogeneity=draw(st.floats(0.0, 2.0)), samples=samples)


@settings(max_examples=25, deadline=None)
@given(families(), st.integers(0, 2**31 - 1))
def test_family_spectrum_is_the_declared_one(fam, seed):
    inst = fam.draw(seed)
    H = np.einsum("kmp,kmq->kpq", inst.A, inst.A) / inst.m
    ev = np.linalg.eigvalsh(H)
    lo, hi = (fam.mu, fam.L) if fam.p >= 2 or fam.n >= 2 else (fam.mu, fam.mu)
    assert ev.min() == pytest.approx(lo, rel=1e-9) and ev.max() == pytest.approx(hi, rel=1e-9)
    ctx = _ctx(inst)
    assert resolve("mu", ctx).value == pytest.approx(lo, rel=1e-9)
    assert resolve("L", ctx).value == pytest.approx(hi, rel=1e-9)
    assert resolve("kappa", ctx).value == pytest.approx(hi / lo, rel=1e-9)
    w = inst.client_weights()
    avg = np.linalg.eigvalsh(np.einsum("k,kpq->pq", w, H))
    assert resolve("mu_F", ctx).value == pytest.approx(avg[0], rel=1e-12)
    assert resolve("L_F", ctx).value == pytest.approx(avg[-1], rel=1e-12)
    if fam.samples is not None:
        assert np.allclose(w, np.asarray(fam.samples) / sum(fam.samples), rtol=0, atol=1e-15)


@settings(max_examples=12, deadline=None)
@given(families(weighted=st.just(True)), st.integers(0, 2**31 - 1))
def test_weighted_optimum_and_gamma_against_cvxpy(fam, seed):
    import cvxpy as cp
    inst = fam.draw(seed)
    w = inst.weights
    x = cp.Variable(inst.p)
    F = sum(w[k] * cp.sum_squares(inst.A[k] @ x - inst.b[k]) / (2 * inst.m) for k in range(inst.n))
    F_star = cp.Problem(cp.Minimize(F)).solve(solver=cp.CLARABEL)
    fk = []
    for k in range(inst.n):
        y = cp.Variable(inst.p)
        fk.append(cp.Problem(cp.Minimize(cp.sum_squares(inst.A[k] @ y - inst.b[k]) / (2 * inst.m))).solve(
            solver=cp.CLARABEL))
    ctx = _ctx(inst)
    scale = max(1.0, abs(F_star))
    assert ctx.solution.accurate and abs(ctx.solution.F_star - F_star) <= 1e-7 * scale
    H = np.einsum("kmp,kmq->kpq", inst.A, inst.A) / inst.m
    c = np.einsum("kmp,km->kp", inst.A, inst.b) / inst.m
    x_closed = np.linalg.solve(np.einsum("k,kpq->pq", w, H), w @ c)      # sum_k p_k (H_k x - c_k) = 0
    assert np.allclose(ctx.solution.x_star, x_closed, rtol=1e-7, atol=1e-8)
    gamma = resolve("Gamma", ctx)
    assert gamma.exact and abs(gamma.value - (F_star - float(w @ np.asarray(fk)))) <= 1e-7 * scale
    assert resolve("F_k_star_max", ctx).value == pytest.approx(max(fk), rel=1e-6, abs=1e-9)


def test_weighted_solve_on_a_ball_against_cvxpy():
    """A constrained weighted instance: the solve's F* and its certificate (the weighted client Lagrangians)."""
    import cvxpy as cp
    inst = StronglyConvexFamily(n=3, m=6, p=3, set="l2", radius=0.3, samples=(1, 2, 7)).draw(5)
    x = cp.Variable(3)
    F = sum(inst.weights[k] * cp.sum_squares(inst.A[k] @ x - inst.b[k]) / 12 for k in range(3))
    ref = cp.Problem(cp.Minimize(F), [cp.norm(x) <= 0.3]).solve(solver=cp.CLARABEL)
    sol = solve_consensus(inst, use_cache=False)
    assert sol.accurate and abs(sol.F_star - ref) <= 1e-7 and sol.gap <= 1e-7
    assert sol.dual_residual <= 1e-7 and np.linalg.norm(sol.duals["Y"].sum(0)) <= 1e-12


def test_old_instance_files_read_as_before(tmp_path):
    """A file written by the code before client weights (version 1, no 'format' key) reads as it did: same
    content hash, no weights; an unweighted instance still writes version 1's keys."""
    inst = load_instance(DATA / "instance_v1.npz")
    assert inst.weights is None
    assert inst.content_hash() == "c32632ffd10009c1ffecc8a27487a7c94e7d3ac27424e8032a221aac7d1abb4e"
    save_instance(inst, tmp_path / "again.npz")
    with np.load(tmp_path / "again.npz") as z:
        assert sorted(z.files) == sorted(np.load(DATA / "instance_v1.npz").files)


def test_weights_round_trip_and_refusals(tmp_path):
    base = load_instance(DATA / "instance_v1.npz")
    w = np.array([0.5, 0.3, 0.2])
    inst = Instance(A=base.A, b=base.b, loss=base.loss, set=base.set, weights=w)
    save_instance(inst, tmp_path / "w.npz")
    back = load_instance(tmp_path / "w.npz")
    assert np.array_equal(back.weights, w) and back.content_hash() == inst.content_hash() != base.content_hash()
    with np.load(tmp_path / "w.npz") as z:
        assert str(z["format"]) == "fedcheck.instance/2"
    x = np.array([0.3, -0.2])
    assert back.make_loss().full_value(x) == pytest.approx(float(w @ back.make_loss().value(np.tile(x, (3, 1)))))
    for bad, why in (([0.5, 0.5, 0.5], "sum to 1"), ([1.0, 0.0, 0.0], "positive"), ([0.5, 0.5], "shape")):
        arrays = dict(np.load(tmp_path / "w.npz"))
        arrays["weights"] = np.array(bad)
        np.savez(tmp_path / "bad.npz", **arrays)
        with pytest.raises(InstanceError, match=why):
            load_instance(tmp_path / "bad.npz")
    arrays["weights"], arrays["format"] = w, np.array("fedcheck.instance/9")
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(InstanceError, match="unknown format"):
        load_instance(tmp_path / "bad.npz")


def test_fedavg_weighted_aggregation_converges_to_the_weighted_optimum():
    fam = StronglyConvexFamily(n=4, m=6, p=3, mu=0.5, L=2.0, samples=(1, 3, 5, 11))
    insts = [fam.draw(s) for s in range(3)]
    batch = InstanceBatch(insts)
    x0 = np.zeros((3, 3))
    st_w = run_fedavg(x0, static_oracle(batch.loss.grad), rounds=3000, n=4, eta=0.2, steps=1,
                      weights=batch.loss.weights)
    for b, inst in enumerate(insts):
        assert np.allclose(st_w.final["x"][b], solve_consensus(inst, use_cache=False).x_star, atol=1e-8)
    # one round by hand: sum_k p_k W_k
    W = x0[:, None, :] - 0.2 * batch.loss.grad(np.repeat(x0[:, None, :], 4, axis=1))
    one = run_fedavg(x0, static_oracle(batch.loss.grad), rounds=1, n=4, eta=0.2, weights=batch.loss.weights)
    assert np.allclose(one.final["x"], np.einsum("bk,bkp->bp", batch.loss.weights, W), rtol=1e-14, atol=1e-15)


def test_fedavg_uniform_weights_and_no_weights():
    """No weights: the plain mean (the compiled fused round, as before); weights 1/n: the same to rounding."""
    fam = StronglyConvexFamily(n=5, m=6, p=3)
    batch = InstanceBatch([fam.draw(s) for s in range(2)])
    x0 = np.zeros((2, 3))
    plain = run_fedavg(x0, static_oracle(batch.loss.grad), rounds=50, n=5, eta=0.1, steps=3)
    uni = run_fedavg(x0, static_oracle(batch.loss.grad), rounds=50, n=5, eta=0.1, steps=3, weights=np.full(5, 0.2))
    assert np.allclose(plain.final["x"], uni.final["x"], rtol=1e-12, atol=1e-14)


def test_every_generic_constant_is_described_in_the_readme():
    """The README's table of the constants a bound may use is made from the one description per constant."""
    import sys
    from fedcheck.problems.constants import DESCRIPTIONS, GENERIC
    assert set(DESCRIPTIONS) == set(GENERIC)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
    import readme
    readme_text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme.render_constants()
    assert table in readme_text and all(f"| `{name}` |" in table for name in GENERIC)


def test_the_family_refuses_what_cannot_be_strongly_convex():
    from fedcheck.core.errors import BadValue
    for kw, why in (({"m": 2, "p": 3}, "m >= p"), ({"mu": 2.0, "L": 1.0}, "at most"), ({"mu": 0.0}, "> 0"),
                    ({"samples": (1, 2)}, "samples"), ({"set": "l2"}, "radius")):
        with pytest.raises(BadValue, match=why):
            StronglyConvexFamily(**kw)


def test_a_weighted_instance_runs_only_where_the_claim_says_so(tmp_path):
    """A catalog claim states F = (1/n) sum_k f_k and averages uniformly: an instance with client weights is outside
    it (exit 2, never a refutation); the example's Li et al. claim declares weights and takes it."""
    from fedcheck.cli.main import main
    save_instance(StronglyConvexFamily(n=3, m=4, p=2, samples=(1, 2, 3), set="l2", radius=1.0).draw(0),
                  tmp_path / "wl2.npz")
    assert main(["verify", "fedfw.theorem1", "--instance", str(tmp_path / "wl2.npz"), "--rounds", "20",
                 "--no-report", "-q"]) == 2
    inst = StronglyConvexFamily(n=3, m=4, p=2, samples=(1, 2, 3)).draw(0)
    save_instance(inst, tmp_path / "w.npz")
    ex = Path(__file__).resolve().parents[1] / "examples" / "fedavg_strongly_convex.py"
    assert main(["verify", "li2020.theorem1", "--theorem-file", str(ex), "--instance", str(tmp_path / "w.npz"),
                 "--rounds", "50", "--no-report", "-q"]) == 0
