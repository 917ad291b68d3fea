"""FedSGM: components (values vs cvxpy, subgradients vs finite differences, Lipschitz constants),
compressors (unbiasedness and variance, exactly by enumeration and by sampling), the engine's
reductions (centralized switching subgradient bit for bit, FedAvg, identical clients), the exact
constrained solve, and every check's verdict on its quick run."""
import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcheck.core import verdict as V
from fedcheck.core.claim import RunConfig
from fedcheck.algorithms.compression import Bernoulli, Identity, RandK, RandomQuantization, UniformStream, make_compressor
from fedcheck.algorithms import fedsgm, switching_subgradient, switching_weight
from theorems.fedsgm.methods import centralized_local_sgm, fedavg, fedsgm_lemma4
from fedcheck.problems import constrained as P
from theorems.fedsgm import problems as PX
from fedcheck.problems.solve import Solution, SolutionWarning
from fedcheck.problems.losses import LAD, Affine, Distance, L2Residual, Loss, MaxAffine

KINDS = ("pl", "norm", "logistic_np", "huber", "axis")


def _family(kind, n=3, d=4):
    return PX.ConstrainedFamily(kind=kind, n=n, m=6, d=d, start="infeasible" if kind in ("pl", "huber") else "zero")


# ---------------------------------------------------------------------------------------------
# components
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", ("f", "g"))
def test_values_match_cvxpy(kind, which):
    import cvxpy as cp
    inst = _family(kind).draw(3)
    comp = getattr(inst, which)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = rng.standard_normal(inst.d)
        mine = comp.value(np.broadcast_to(w, (1, inst.n, inst.d)))[0]
        x = cp.Variable(inst.d)
        x.value = w
        ref = np.array([comp.cvx(0, j, x).value for j in range(inst.n)])
        np.testing.assert_allclose(mine, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", ("f", "g"))
def test_subgradients_match_finite_differences(kind, which):
    """At random points the client functions are differentiable (almost surely): the subgradient is
    the gradient, checked by central differences; and its norm is below the declared Lipschitz bound."""
    inst = _family(kind).draw(5)
    comp = getattr(inst, which)
    rng = np.random.default_rng(1)
    lip, _, _ = comp.lipschitz()
    h = 1e-6
    for _ in range(3):
        W = rng.standard_normal((1, inst.n, inst.d)) * 2
        G = comp.subgrad(W)
        fd = np.empty_like(G)
        for k in range(inst.d):
            e = np.zeros(inst.d)
            e[k] = h
            fd[..., k] = (comp.value(W + e) - comp.value(W - e)) / (2 * h)
        np.testing.assert_allclose(G, fd, rtol=1e-5, atol=1e-6)
        assert np.all(np.linalg.norm(G, axis=-1) <= lip * (1 + 1e-12))


@pytest.mark.parametrize("kind", ("pl", "huber", "logistic_np"))
def test_lipschitz_bound_is_not_exceeded_far_away(kind):
    inst = _family(kind).draw(2)
    G, _, _ = inst.lipschitz()
    rng = np.random.default_rng(2)
    W = 50 * rng.standard_normal((200, inst.n, inst.d))
    for comp in (inst.f, inst.g):
        big = Loss.stack([comp] * 200)
        assert np.linalg.norm(big.subgrad(W), axis=-1).max() <= G * (1 + 1e-12)


def test_save_and_load_roundtrip(tmp_path):
    inst = _family("pl").draw(0)
    back = P.load_constrained(P.save_constrained(inst, tmp_path / "x.npz"))
    assert back.content_hash() == inst.content_hash()
    paths = inst.save(str(tmp_path / "y"))          # the instance's own save(stem) -> [paths]
    assert paths == [str(tmp_path / "y.npz")]
    assert P.load_constrained(paths[0]).content_hash() == inst.content_hash()


def test_components_are_losses_with_fedsgm_options_and_file_names(tmp_path):
    """FedSGM's kinds are losses of fedcheck.problems.losses; ``l1_residual`` and ``max_affine`` are LAD and
    MaxAffine with FedSGM's options, and files keep FedSGM's array names (``C, e`` with ``g = max(C w - e)``)."""
    inst = _family("pl").draw(1)
    assert type(inst.f) is LAD and inst.f.opts == {"lipschitz_bound": "row_norms", "kernel": "einsum"}
    assert type(inst.g) is MaxAffine and inst.g.opts == {"kernel": "einsum"}
    assert P.component_kind(inst.f) == "l1_residual" and P.component_kind(inst.g) == "max_affine"
    P.save_constrained(inst, tmp_path / "x.npz")
    with np.load(tmp_path / "x.npz") as z:
        assert sorted(z.files) == ["f_A", "f_b", "f_kind", "g_C", "g_e", "g_kind", "slater", "w0"]
        C, e = z["g_C"], z["g_e"]
    w = np.random.default_rng(0).standard_normal(inst.d)
    np.testing.assert_array_equal(inst.g.value(np.broadcast_to(w, (1, inst.n, inst.d)))[0], (C @ w - e).max(-1))
    for kind in KINDS:
        i = _family(kind).draw(0)
        for comp in (i.f, i.g):
            assert isinstance(comp, Loss) and P.COMPONENTS[P.component_kind(comp)][0] is type(comp)
            assert np.array_equal(comp.subgrad(np.broadcast_to(w, (1, i.n, i.d))),
                                  comp.grad(np.broadcast_to(w, (1, i.n, i.d))))


# ---------------------------------------------------------------------------------------------
# exact solves
@pytest.mark.parametrize("kind", KINDS)
def test_constrained_solve_is_feasible_and_bracketed(kind):
    inst = _family(kind).draw(0)
    sol = P.solve_constrained(inst)
    assert isinstance(sol, Solution)                      # the one solution type
    assert sol.accurate and sol.reason is None
    assert sol.g_star <= 0 and sol.info["g_star"] <= 0
    assert sol.F_lower <= sol.F_star
    assert sol.F_star - sol.F_lower < 1e-6
    assert sol.D == pytest.approx(np.linalg.norm(inst.w0 - sol.x_star))
    assert np.isfinite(sol.duals["lam"]) and sol.lam == sol.duals["lam"]
    assert P.verify_constrained(inst, sol) is None


def test_axis_instance_has_the_known_optimum():
    inst = PX.ConstrainedFamily(kind="axis", n=1, d=5).draw(0)
    sol = P.solve_constrained(inst)
    assert sol.F_star == pytest.approx(2.0, abs=1e-6)
    assert sol.D == pytest.approx(1.0, abs=1e-6)
    assert inst.lipschitz()[:2] == (1.0, True)


def test_inaccurate_status_makes_a_reason():
    sol = Solution(F_star=1.0, F_lower=0.9, x_star=np.zeros(2), status="optimal_inaccurate",
                   duals={"lam": 0.0}, info={"g_star": 0.0, "D": 1.0})
    assert not sol.accurate and "optimal_inaccurate" in sol.reason


def test_cached_constrained_solution_is_reverified_and_identical(tmp_path, monkeypatch):
    """A cache entry is read back only after verify_constrained; a tampered entry is solved again (warning)."""
    monkeypatch.setenv("FEDCHECK_CACHE", str(tmp_path))
    inst = _family("pl").draw(0)
    fresh = P.solve_constrained(inst, use_cache=False)
    first = P.solve_constrained(inst)
    assert not first.cached
    again = P.solve_constrained(inst)
    assert again.cached and again.F_star == fresh.F_star and again.F_lower == fresh.F_lower
    assert np.array_equal(again.x_star, fresh.x_star) and again.D == fresh.D and again.lam == fresh.lam
    [meta] = list(tmp_path.glob("*.json"))
    d = json.loads(meta.read_text())
    for key, bad in (("F_star", d["F_star"] + 1e-3), ("info", {**d["info"], "D": d["info"]["D"] * 2}),
                     ("info", {**d["info"], "g_star": 0.5}), ("status", "optimal_inaccurate")):
        meta.write_text(json.dumps({**d, key: bad}))
        with pytest.warns(SolutionWarning):
            sol = P.solve_constrained(inst)
        assert not sol.cached and sol.F_star == fresh.F_star
    meta.write_text("{not json")
    with pytest.warns(SolutionWarning):
        assert P.solve_constrained(inst).F_star == fresh.F_star
    # an infeasible stored point is refused even when f, g and D are stated consistently for it
    w = next(v for v in (np.asarray(inst.w0, float), fresh.x_star + 10.0, fresh.x_star - 10.0) if inst.Gc(v) > 0)
    bad = Solution(F_star=inst.F(w), F_lower=inst.F(w) - 1, x_star=w, status="optimal",
                   info={"g_star": inst.Gc(w), "D": float(np.linalg.norm(inst.w0 - w))}, duals={"lam": 0.0})
    assert "infeasible" in P.verify_constrained(inst, bad)


# ---------------------------------------------------------------------------------------------
# compressors
def _subsets_uniforms(d, k):
    """One uniform array per K-subset that makes Rand-K pick exactly that subset."""
    for S in itertools.combinations(range(d), k):
        U = np.ones(d)
        U[list(S)] = 0.0
        yield U


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6).flatmap(lambda d: st.tuples(st.just(d), st.integers(1, d))),
       st.lists(st.floats(-10, 10), min_size=6, max_size=6))
def test_rand_k_exactly_unbiased_with_the_stated_variance(dk, xs):
    d, k = dk
    x = np.array(xs[:d])
    C = RandK(k)
    outs = np.array([C.apply(x, U) for U in _subsets_uniforms(d, k)])
    np.testing.assert_allclose(outs.mean(0), x, rtol=1e-12, atol=1e-12)
    var = ((outs - x) ** 2).sum(-1).mean()
    assert var == pytest.approx(float(C.variance(x)), rel=1e-12, abs=1e-12)
    assert C.q(d) == pytest.approx(d / k - 1)


def _two_point_outcomes(d, probs):
    """All 2^d outcomes of independent coordinates: (probability, uniforms selecting 'up' where 1)."""
    for bits in itertools.product((0, 1), repeat=d):
        b = np.array(bits)
        p = np.prod(np.where(b == 1, probs, 1 - probs))
        U = np.where(b == 1, 0.0, np.nextafter(1.0, 0.0))   # U < prob  <=>  'up'
        yield p, U


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(1, 4), st.lists(st.floats(-10, 10), min_size=5, max_size=5))
def test_random_quantization_exactly_unbiased_with_the_stated_variance(d, s, xs):
    x = np.array(xs[:d])
    C = RandomQuantization(s)
    norm = np.linalg.norm(x)
    frac = (s * np.abs(x) / norm) % 1.0 if norm > 0 else np.zeros(d)
    mean, var = np.zeros(d), 0.0
    for p, U in _two_point_outcomes(d, frac):
        c = C.apply(x, U)
        mean += p * c
        var += p * ((c - x) ** 2).sum()
    np.testing.assert_allclose(mean, x, rtol=1e-10, atol=1e-10)
    assert var == pytest.approx(float(C.variance(x)), rel=1e-9, abs=1e-10)
    assert var <= C.q(d) * (x @ x) * (1 + 1e-12) + 1e-12


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.floats(0.05, 1.0), st.lists(st.floats(-10, 10), min_size=5, max_size=5))
def test_bernoulli_exactly_unbiased_with_the_stated_variance(d, p, xs):
    x = np.array(xs[:d])
    C = Bernoulli(p)
    mean, var = np.zeros(d), 0.0
    for pr, U in _two_point_outcomes(d, np.full(d, p)):
        c = C.apply(x, U)
        mean += pr * c
        var += pr * ((c - x) ** 2).sum()
    np.testing.assert_allclose(mean, x, rtol=1e-10, atol=1e-10)
    assert var == pytest.approx(float(C.variance(x)), rel=1e-9, abs=1e-10)


@pytest.mark.parametrize("C", [RandK(2), RandomQuantization(1), Bernoulli(0.3)])
def test_sampled_compression_is_unbiased(C):
    """The sampling path (UniformStream + apply): the mean of 20000 draws is within
    POLICY.statistical_z standard errors of x in every coordinate, and the variance matches."""
    d, S = 6, 20000
    x = np.array([1.0, -2.0, 0.5, 3.0, 0.0, -0.25])
    stream = UniformStream([7], "test", (S, d), chunk=1)
    out = C.apply(np.broadcast_to(x, (S, d)), stream.next()[0])
    se = out.std(0, ddof=1) / math.sqrt(S)
    assert np.all(np.abs(out.mean(0) - x) <= V.POLICY.statistical_z * se + 1e-12)
    sq = ((out - x) ** 2).sum(-1)
    assert abs(sq.mean() - C.variance(x)) <= V.POLICY.statistical_z * sq.std(ddof=1) / math.sqrt(S)


def test_uniform_stream_rows_do_not_depend_on_the_batch():
    a = UniformStream([3, 5], "k", (2, 3), chunk=4)
    b = UniformStream([5], "k", (2, 3), chunk=3)
    ra = np.stack([a.next() for _ in range(7)])
    rb = np.stack([b.next() for _ in range(7)])
    np.testing.assert_array_equal(ra[:, 1], rb[:, 0])


def test_make_compressor():
    assert isinstance(make_compressor(None), Identity)
    assert make_compressor({"name": "rand_k", "k": 3}) == RandK(3)
    with pytest.raises(ValueError):
        make_compressor({"name": "top_k", "k": 1})


# ---------------------------------------------------------------------------------------------
# the engine: switching rule and reductions
def test_switching_weights():
    z = np.array([-1.0, -0.06, -0.05, -0.02, 0.0, 0.01])
    np.testing.assert_array_equal(switching_weight(z, "hard"), [0, 0, 0, 0, 0, 1])
    np.testing.assert_allclose(switching_weight(z, "soft", beta=20.0), [0, 0, 0, 0.6, 1, 1])


@pytest.mark.parametrize("rule", ("hard", "soft"))
@pytest.mark.parametrize("kind", ("pl", "norm", "logistic_np"))
def test_n1_E1_uncompressed_is_centralized_sgm_bit_for_bit(rule, kind):
    fam = PX.ConstrainedFamily(kind=kind, n=1, m=8, d=4, start="infeasible" if kind == "pl" else "zero")
    b = P.ConstrainedBatch([fam.draw(s) for s in range(3)])
    kw = dict(rounds=150, eta=np.array([0.01, 0.03, 0.1]), eps=0.05, rule=rule, beta=40.0 if rule == "soft" else None)
    tr = fedsgm(b, local_steps=1, **kw)
    ref = switching_subgradient(b, **kw).metrics["w"]
    assert np.array_equal(tr.final["w_T"], ref[-1])
    np.testing.assert_array_equal(tr.metrics["g"], np.stack([b.full_g(w) for w in ref]))


def test_zero_constraint_is_fedavg():
    fam = PX.ConstrainedFamily(kind="pl", n=5, m=8, d=4, start="infeasible")
    insts = [fam.draw(s) for s in range(3)]
    zero = [P.ConstrainedInstance(i.f, Affine(a=np.zeros((1, i.n, i.d)), b=np.zeros((1, i.n))), w0=i.w0)
            for i in insts]
    b = P.ConstrainedBatch(zero)
    for rule in ("hard", "soft"):
        tr = fedsgm(b, rounds=100, eta=0.02, eps=0.1, rule=rule, beta=20.0, local_steps=3)
        assert np.all(tr.metrics["sigma"] == 0) and np.all(tr.final["A_size"] == 100)
        np.testing.assert_allclose(tr.final["w_T"], fedavg(b, rounds=100, eta=0.02, local_steps=3)[-1],
                                   rtol=1e-12, atol=1e-12)


def test_identical_clients_are_one_client_with_E_inner_steps():
    fam = PX.ConstrainedFamily(kind="norm", n=1, m=8, d=4)
    one = [fam.draw(s) for s in range(2)]
    many = [P.ConstrainedInstance(L2Residual(A=np.repeat(i.f.A, 3, 1), b=np.repeat(i.f.b, 3, 1)),
                                  Distance(c=np.repeat(i.g.c, 3, 1), r=np.repeat(i.g.r, 3, 1)), w0=i.w0) for i in one]
    tr = fedsgm(P.ConstrainedBatch(many), rounds=80, eta=0.05, eps=0.0, rule="hard", local_steps=4)
    ref = centralized_local_sgm(P.ConstrainedBatch(one), rounds=80, eta=0.05, eps=0.0, rule="hard", local_steps=4)
    np.testing.assert_allclose(tr.final["w_T"], ref[-1], rtol=1e-12, atol=1e-12)


def test_client_permutation_and_uncompressed_server_step_is_model_averaging():
    inst = _family("huber", n=4).draw(1)
    perm = [2, 0, 3, 1]
    other = P.ConstrainedInstance(inst.f.map(lambda v: v[:, perm]), inst.g.map(lambda v: v[:, perm]), w0=inst.w0)
    a = fedsgm(P.ConstrainedBatch([inst]), rounds=60, eta=0.05, eps=0.1, local_steps=3)
    b = fedsgm(P.ConstrainedBatch([other]), rounds=60, eta=0.05, eps=0.1, local_steps=3)
    np.testing.assert_allclose(a.final["w_T"], b.final["w_T"], rtol=1e-12, atol=1e-12)
    # one round by hand: the server point is the mean of the local models
    batch = P.ConstrainedBatch([inst])
    W = np.repeat(batch.w0[:, None], inst.n, 1)
    for _ in range(3):
        W = W - 0.05 * batch.f.subgrad(W) if batch.full_g(batch.w0)[0] <= 0.1 else W - 0.05 * batch.g.subgrad(W)
    one = fedsgm(batch, rounds=1, eta=0.05, eps=0.1, local_steps=3)
    np.testing.assert_allclose(one.final["w_T"], W.mean(1), rtol=1e-12, atol=1e-12)


def test_compressed_runs_are_reproducible_per_seed():
    inst = _family("pl", n=3, d=6).draw(0)
    kw = dict(rounds=40, eta=0.05, eps=0.1, local_steps=2, compressor=RandK(2))
    a = fedsgm(P.ConstrainedBatch([inst, inst]), seeds=[11, 12], **kw)
    b = fedsgm(P.ConstrainedBatch([inst]), seeds=[12], **kw)
    np.testing.assert_array_equal(a.final["w_T"][1], b.final["w_T"][0])
    assert not np.array_equal(a.final["w_T"][0], a.final["w_T"][1])


def test_output_average_follows_the_theorems():
    inst = _family("pl").draw(0)
    b = P.ConstrainedBatch([inst])
    for rule in ("hard", "soft"):
        tr = fedsgm(b, rounds=50, eta=0.05, eps=0.2, rule=rule, beta=10.0)
        g, sig = tr.metrics["g"][:-1, 0], tr.metrics["sigma"][:-1, 0]
        inA = g <= 0.2 if rule == "hard" else g < 0.2
        np.testing.assert_array_equal(tr.metrics["in_A"][:-1, 0].astype(bool), inA)
        wt = np.where(inA, 1.0 if rule == "hard" else 1 - sig, 0.0)
        np.testing.assert_allclose(tr.metrics["weight"][:-1, 0], wt)
        assert tr.final["A_size"][0] == inA.sum()
        assert tr.final["A_weight"][0] == pytest.approx(wt.sum())


# ---------------------------------------------------------------------------------------------
# every check's verdict on its quick run
EXPECTED = {
    "theorem1": V.HOLDS, "theorem2": V.HOLDS, "per_round": V.HOLDS, "lemma5": V.HOLDS,
    "compression": V.VIOLATED, "scaling": V.HOLDS, "hard_vs_soft": V.HOLDS, "experiment": V.HOLDS,
    "reductions": V.HOLDS,
}


@pytest.fixture(scope="module")
def quick_results():
    import theorems.fedsgm as F
    return {name: getattr(F, name).run(RunConfig()) for name in EXPECTED}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_quick_verdicts(quick_results, name):
    import json
    r = quick_results[name]
    assert r.verdict == EXPECTED[name], (name, r.verdict, r.reason)
    assert r.expected == EXPECTED[name]
    assert r.id == f"fedsgm.{name}"
    json.dumps(r.to_dict())


def test_compression_failures_are_the_empty_A_of_the_axis_instance(quick_results):
    r = quick_results["compression"]
    stated = r.readings["hard, eps = eps_bad (N=0): every run (as stated)"]
    assert stated["verdict"] == V.VIOLATED and 0 < stated["failure_fraction"] < 0.2
    for key, d in r.readings.items():
        if key.endswith("in expectation (proof)"):
            assert d["verdict"] == V.HOLDS
    axis = [c for c in r.instances if c["label"].startswith("axis")][0]
    v = axis["evidence"]["variants"]["hard, eps = eps_bad (N=0)"]
    # P(at most one of 240 Rand-1 draws hits the constraint coordinate) = 0.98^240 + 240 0.02 0.98^239
    p = 0.98 ** 240 + 240 * 0.02 * 0.98 ** 239
    assert v["ci"][0] <= p <= v["ci"][1]
    assert v["A_empty"] == v["failed"]


def test_theorem_checks_report_readings_and_rates(quick_results):
    r = quick_results["theorem1"]
    assert {"N=0: eps = eps_bad", "N=1: eps = 2 eps_bad"} <= set(r.readings)
    assert r.fitted_rate is not None and r.rate_verdict in (V.HOLDS, V.RATE_TIGHT, V.INCONCLUSIVE)
    assert all(s["verdict"] == V.HOLDS for s in r.symbolic)
    assert r.readings["N=0: eps = eps_bad"]["bounds"]["objective"]["max_ratio"] < 1


def test_experiment_has_the_paper_side_by_side(quick_results):
    r = quick_results["experiment"]
    titles = [t["title"] for t in r.tables]
    assert any("paper's claims" in t for t in titles)
    ev = r.instances[0]["evidence"]
    assert ev["ratio_hard_over_soft"] > 1


def test_cli_runs_a_fedsgm_check(tmp_path):
    from fedcheck.cli import main
    code = main(["verify", "fedsgm.reductions", "--no-report", "--quiet", "--json", str(tmp_path / "r.json")])
    assert code == 0


def test_a_too_tight_bound_is_refuted_and_the_instance_saved(tmp_path):
    """The horizon machinery refutes a wrong claim: g(wbar) <= eps/100 fails on the axis instance."""
    import sympy as sp

    from fedcheck.core.claim import Claim, Reading
    from fedcheck.core.evidence import Bound, BoundTest
    from fedcheck.experiments import HorizonCase, Horizons
    from theorems.fedsgm import AXIS, FEDSGM, SCHEDULES_HARD, Gamma, Gamma_hard, c_eps, epsilon
    wrong = Claim(
        id="test.too_tight", paper=FEDSGM, reference="-", statement="g(wbar) <= eps/100",
        evidence=BoundTest(
            Horizons(runner=PX.run_fedsgm, schedules=SCHEDULES_HARD, solver=P.solve_constrained,
                     cases=(HorizonCase("axis", AXIS, {"rule": "hard", "E": 1}, seeds=1, horizons=(50, 100)),)),
            bounds=(Bound("feasibility / 100", expr=epsilon / 100, metric="g_out"),), findings="bound"),
        readings=(Reading("r", {Gamma: Gamma_hard, c_eps: 1}),))
    res = wrong.run(RunConfig(save_dir=str(tmp_path)))
    assert res.verdict == V.VIOLATED and "feasibility / 100" in res.reason
    assert res.saved_instances and P.load_constrained(res.saved_instances[0]).content_hash() == \
        AXIS.draw(0).content_hash()
    assert sp.sympify(res.formula["bound_text"].split("<= ")[1]) is not None


def test_an_inaccurate_solve_makes_the_check_inconclusive(monkeypatch):
    from fedcheck.core.claim import Claim, Reading
    from fedcheck.core.evidence import Bound, BoundTest
    from fedcheck.experiments import HorizonCase, Horizons
    from theorems.fedsgm import AXIS, FEDSGM, SCHEDULES_HARD, Gamma, Gamma_hard, c_eps, epsilon

    def inaccurate(inst, use_cache=True):
        sol = P.solve_constrained(inst, use_cache=use_cache)
        sol.status = "optimal_inaccurate"
        return sol
    chk = Claim(
        id="test.inaccurate", paper=FEDSGM, reference="-", statement="-",
        evidence=BoundTest(
            Horizons(runner=PX.run_fedsgm, schedules=SCHEDULES_HARD, solver=inaccurate,
                     cases=(HorizonCase("axis", AXIS, {"rule": "hard", "E": 1}, seeds=1, horizons=(50,)),)),
            bounds=(Bound("objective", expr=epsilon, metric="f_gap"),)),
        readings=(Reading("r", {Gamma: Gamma_hard, c_eps: 2}),))
    res = chk.run(RunConfig())
    assert res.verdict == V.INCONCLUSIVE and "optimal_inaccurate" in res.reason


def test_soft_switching_with_a_huge_slope_is_hard_switching():
    b = P.ConstrainedBatch([_family("pl").draw(s) for s in range(3)])
    hard = fedsgm(b, rounds=120, eta=0.03, eps=0.2, rule="hard", local_steps=2)
    soft = fedsgm(b, rounds=120, eta=0.03, eps=0.2, rule="soft", beta=1e15, local_steps=2)
    assert np.array_equal(hard.final["w_T"], soft.final["w_T"])
    np.testing.assert_allclose(hard.final["wbar"], soft.final["wbar"], rtol=1e-13, atol=1e-13)


def test_soft_ramp_is_the_interval_half_eps_to_eps():
    eps = 0.1
    g = np.linspace(0, 0.2, 2001)
    s = switching_weight(g - eps, "soft", beta=2 / eps)
    inside = (s > 0) & (s < 1)
    assert np.all((g[inside] > eps / 2) & (g[inside] < eps))
    assert np.all(s[g >= eps] == 1) and np.all(s[g <= eps / 2] == 0)


# ---- Lemma 4, compression unbiasedness, the beta sweep, the variance across seeds --------------
def test_lemma4_replay_matches_fedsgm_and_holds():
    fam = PX.ConstrainedFamily(kind="pl", n=3, m=6, d=6, start="infeasible")
    insts = [fam.draw(s) for s in (0, 1)]
    sols = [P.solve_constrained(i) for i in insts]
    batch = P.ConstrainedBatch(insts)
    u = np.stack([s.x_star for s in sols])
    C = make_compressor({"name": "rand_k", "k": 2})
    kw = dict(rounds=25, eta=np.array([0.05, 0.02]), eps=np.array([0.05, 0.1]), rule="hard", local_steps=3,
              compressor=C, seeds=[11, 12])
    tr = fedsgm(batch, comparator=u, **kw)
    res = fedsgm_lemma4(batch, comparator=u, alphas=[0.01, 0.05, 1.0], G=batch.lipschitz(), **kw)
    assert np.array_equal(res["f"], tr.metrics["f"]) and np.array_equal(res["g"], tr.metrics["g"])
    assert np.all(res["lhs"][..., None] - res["rhs"] <= 1e-10 * res["scale"][..., None])


@pytest.mark.parametrize("spec", [{"name": "rand_k", "k": 2}, {"name": "bernoulli", "p": 0.3},
                                  {"name": "random_quantization", "s": 2}])
def test_compressors_unbiased_with_their_exact_variance(spec):
    C = make_compressor(spec)
    rng = np.random.default_rng(np.random.SeedSequence(17))
    X = rng.standard_normal((1, 2, 6))
    stream = UniformStream([3], "tests:issue17", (2, 6), chunk=512)
    draws = np.stack([C.apply(X, stream.next()[0][None]) for _ in range(6000)])
    mean, var = draws.mean(0), ((draws - X) ** 2).sum(-1).mean(0)
    assert np.all(np.abs(mean - X) < 5 * np.sqrt(C.variance(X).max() / 6000) + 1e-12)
    assert np.allclose(var, C.variance(X), rtol=0.08)


@pytest.mark.parametrize("cid", ["fedsgm.lemma4", "fedsgm.soft_beta_sweep"])
def test_issue17_fedsgm_claims(cid):
    from theorems import fedsgm as T
    claim = next(c for c in T.CLAIMS if c.id == cid)
    r = claim.run(RunConfig(seeds=[0], rounds=40))
    assert r.verdict == V.HOLDS, r.reason


def test_seed_variance_is_across_seeds_at_a_fixed_step():
    from theorems.fedsgm import measurements as M
    names = {"g": "g", "f": "f", "violations": "v"}
    cases = M.seed_variance_cases(RunConfig(rounds=20), {}, fractions=(0.25,), etas=(0.1,), seeds=4, readings=names)
    (c,) = cases
    assert c.evidence["configurations"] == 1 and c.evidence["seeds_per_configuration"] == 4
    assert all(-1 <= x <= 1 for v in c.evidence["relative_differences"].values() for x in v)


def test_unconstrained_family_is_g_zero_and_fedcom_holds_small():
    """The g = 0 family (FedCOM) and its claim on a few compressed runs."""
    from theorems import fedsgm as T
    fam = PX.UnconstrainedFamily(PX.ConstrainedFamily(kind="pl", n=3, m=6, d=4))
    inst = fam.draw(0)
    W = np.random.default_rng(0).standard_normal((5, 4))
    assert np.all(np.array([inst.Gc(w) for w in W]) == 0.0)
    base = fam.base.draw(0)
    assert np.allclose([inst.F(w) for w in W], [base.F(w) for w in W])
    r = T.fedcom_compression.run(RunConfig(seeds=[0], rounds=60))
    assert r.verdict == V.HOLDS, r.reason
