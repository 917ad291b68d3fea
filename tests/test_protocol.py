"""The one protocol: claims, evidence, the runner, the registry and users' own files."""
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from fedcheck import MEAN, Bound, BoundTest, Claim, Domain, Fact, Measurement, Paper, Proof, Reading, Rounds, RunConfig
from fedcheck.algorithms import federated
from fedcheck.cli import main
from fedcheck.core import verdict as V
from fedcheck.core.errors import BadInput
from fedcheck.core.evidence import Comparison, Finding, MeasureResult, PATHWISE, fraction
from fedcheck.catalog.registry import Registry, load_user_file
from fedcheck.problems.instances import RandomFamily
from fedcheck.symbols import D, L, t

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
P = Paper(key="tp", title="test paper", authors="t")


def _gd_claim(**kw):
    fam = RandomFamily(loss="least_squares", set="l2", n=3, m=8, p=4, heterogeneity=0.0, noise=0.0, outside=0.5)

    def gd_round(X, x, ctx, *, eta):
        Y = ctx.broadcast(x) - ctx.col(eta) * ctx.grad(ctx.broadcast(x))
        return Y, ctx.project(Y.mean(1))
    return Claim(id="tp.gd", paper=P, reference="r", statement="s",
                 evidence=BoundTest(Rounds(family=fam, algorithm=federated(gd_round), schedules={"eta": 1 / L},
                                           seeds=2, rounds=200, valid_from=2),
                                    bounds=(Bound("pgd", L * D**2 / (2 * (t - 1))),)), **kw)


# ---- declarations are validated when made ------------------------------------------------------
def test_claim_is_frozen_and_validated():
    c = _gd_claim(expected="holds")
    with pytest.raises(Exception):
        c.expected = "violated"          # no declaration changes after it is made
    with pytest.raises(TypeError, match="must be a SymPy expression"):
        Bound("b", "L / t")
    with pytest.raises(TypeError, match="evidence must be"):
        Claim(id="tp.x", paper=P, reference="r", statement="s", evidence=42)
    with pytest.raises(ValueError, match="expected verdict"):
        _gd_claim(expected="fine")
    with pytest.raises(TypeError, match="namespaced"):
        Claim(id="nodot", paper=P, reference="r", statement="s", evidence=Proof((Fact("f", lambda: (V.HOLDS, "")),)))
    with pytest.raises(ValueError, match="share a name"):
        _gd_claim(readings=(Reading("a"), Reading("a")))


def test_verdict_comes_from_the_run_not_the_declaration():
    """The expected verdict is only compared by the catalog test; a wrong expectation changes nothing."""
    right, wrong = _gd_claim(expected="holds"), _gd_claim(expected="violated")
    a, b = right.run(RunConfig(seeds=2)), wrong.run(RunConfig(seeds=2))
    assert a.verdict == b.verdict == V.HOLDS and a.max_ratio == b.max_ratio
    assert b.expected == "violated"


def test_every_round_is_checked_on_the_recorded_grid_and_counts_are_reported():
    r = _gd_claim().run(RunConfig(seeds=2, rounds=300))
    f = r.readings["as stated"]
    assert f["points_checked"] == 2 * 300            # iterates 2..301 of a 300-round run, both instances


# ---- one statistic vocabulary ------------------------------------------------------------------
def test_statistics_pathwise_mean_fraction():
    rng = np.random.default_rng(0)
    lhs = rng.normal(1.0, 0.5, size=(400, 3))        # 400 runs, 3 points, bound 1.5
    cmp = Comparison(lhs_lo=lhs, rhs_lo=1.5)
    assert cmp.judge(PATHWISE)["verdict"] == V.VIOLATED                     # some runs exceed 1.5
    assert cmp.judge(MEAN)["verdict"] == V.HOLDS                            # the mean is far below
    fails = int(cmp.failing_samples().sum())
    assert 0 < fails < 400
    # the fraction statistic goes through the runner: fraction of failing runs against a claimed maximum
    from fedcheck.experiments import Case, Cases

    def cases(config, params):
        return [Case("draws", {"as stated": cmp})]
    lo = Claim(id="tp.frac_lo", paper=P, reference="r", statement="s",
               evidence=BoundTest(Cases(cases), statistic=fraction(0.5)))
    hi = Claim(id="tp.frac_hi", paper=P, reference="r", statement="s",
               evidence=BoundTest(Cases(cases), statistic=fraction(0.01)))
    r_lo, r_hi = lo.run(), hi.run()
    assert r_lo.verdict == V.HOLDS and r_hi.verdict == V.VIOLATED
    assert r_hi.readings["as stated"]["failed_runs"] == fails and r_hi.readings["as stated"]["runs"] == 1200 // 3


def test_excess_is_reported_where_a_bound_vanishes():
    cmp = Comparison(lhs_lo=np.array([1e-3, 0.5]), rhs_lo=np.array([0.0, 10.0]))
    j = cmp.judge()
    assert j["verdict"] == V.VIOLATED and j["max_excess"] == pytest.approx(1e-3)
    assert j["max_ratio_where_bound_not_negligible"] == pytest.approx(0.05)


def test_measurement_and_proof_evidence():
    meas = Claim(id="tp.m", paper=P, reference="r", statement="s", evidence=Measurement(
        lambda ctx: MeasureResult([Finding("a", V.HOLDS), Finding("b (analysis)", V.VIOLATED, paper=False)])))
    r = meas.run()
    assert r.verdict == V.HOLDS and "analyses refuted" in r.reason
    x = sp.Symbol("x", positive=True)
    proof = Claim(id="tp.p", paper=P, reference="r", statement="s", evidence=Proof((
        Fact("x + 1/x >= 2", lambda: (V.HOLDS if sp.simplify((x + 1 / x - 2) - (x - 1) ** 2 / x) == 0 else V.INCONCLUSIVE, "AM-GM")),
        Fact("broken", lambda: 1 / 0))))
    # a user's fact that raises is the user's error, named with its line; fedcheck's own facts that
    # SymPy cannot finish are inconclusive (tests/test_user_code.py)
    from fedcheck.core.errors import UserCodeError
    with pytest.raises(UserCodeError, match=r"proof fact .*test_protocol.py:105\): ZeroDivisionError"):
        proof.run()


# ---- the algorithm protocol -------------------------------------------------------------------
def test_round_function_matches_a_plain_loop_over_clients():
    fam = RandomFamily(loss="least_squares", set="l1", n=4, m=6, p=5)
    insts = [fam.draw(s) for s in range(3)]
    from fedcheck.algorithms import default_recorder
    from fedcheck.problems.instances import InstanceBatch
    batch = InstanceBatch(insts)

    def prox_round(X, x, ctx, *, eta, mu, local_steps):
        from fedcheck.algorithms import pieces
        Y = pieces.local_steps(ctx, ctx.broadcast(x), eta, local_steps, anchor=x, mu=mu)
        return Y, Y.mean(1)
    algo = federated(prox_round)
    T = 25
    eta = np.full((T, 3), 0.05)
    mu = np.full((T, 3), 0.3)
    tr = algo(batch, rounds=T, eta=eta, mu=mu, local_steps=3, recorder=lambda k, X, x: {"x": x.copy()})
    for b, inst in enumerate(insts):   # the same method, one instance and one client at a time
        loss, S = inst.make_loss(), inst.set
        x = inst.start()
        for _ in range(T):
            ys = []
            for i in range(inst.n):
                y = x.copy()
                for _ in range(3):
                    g = loss.grad(np.broadcast_to(y, (inst.n, inst.p)))[i] + 0.3 * (y - x)
                    y = S.project(y - 0.05 * g)
                ys.append(y)
            x = np.mean(ys, axis=0)
        np.testing.assert_allclose(tr.metrics["x"][-1, b], x, rtol=1e-12, atol=1e-14)
    assert callable(default_recorder)


def test_stochastic_rows_do_not_depend_on_their_batch():
    fam = RandomFamily(loss="least_squares", set="l2", n=3, m=6, p=4)
    from fedcheck.problems.instances import InstanceBatch

    def noisy(X, x, ctx, *, eta):
        Y = ctx.broadcast(x) - ctx.col(eta) * (ctx.grad(ctx.broadcast(x)) + ctx.normal((ctx.n, ctx.p)))
        return Y, ctx.project(Y.mean(1))
    algo = federated(noisy)
    a, b = fam.draw(0), fam.draw(1)
    rec = lambda k, X, x: {"x": x.copy()}  # noqa: E731
    both = algo(InstanceBatch([a, b]), rounds=10, eta=np.full((10, 2), 0.1), seeds=[11, 12], recorder=rec)
    alone = algo(InstanceBatch([b]), rounds=10, eta=np.full((10, 1), 0.1), seeds=[12], recorder=rec)
    np.testing.assert_array_equal(both.metrics["x"][:, 1], alone.metrics["x"][:, 0])


# ---- the registry and users' files --------------------------------------------------------------
def _write(tmp_path, text, name="claims.py"):
    f = tmp_path / name
    f.write_text(textwrap.dedent(text))
    return f


@pytest.mark.parametrize("body, message", [
    ("raise RuntimeError('boom')\n", "line 1: RuntimeError: boom"),
    ("x = 1/0\n", "line 1: ZeroDivisionError"),
    ("import sys\nsys.exit(0)\n", "line 2: calls sys.exit"),
    ("import sys\nsys.exit('msg')\n", "line 2: calls sys.exit"),
    ("def f(:\n", "syntax error"),
    ("import no_such_module_xyz\n", "ModuleNotFoundError"),
    ("from fedcheck import Bound\nb = Bound('x', 'L/t')\n", "line 2: TypeError"),
    ("y = undefined_symbol\n", "NameError"),
    ("x = 1\n", "defines no claim"),
])
def test_theorem_file_errors_are_one_line(tmp_path, capsys, body, message):
    f = _write(tmp_path, body)
    assert main(["verify", "--theorem-file", str(f), "whatever", "--no-report", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and str(f) in err[0] and "Traceback" not in err[0]


def test_user_claims_never_shadow_builtins():
    reg = Registry()
    c = _gd_claim()
    reg.add(c, builtin=True)
    with pytest.raises(BadInput, match="already a built-in"):
        reg.add(Claim(id="tp.other", aliases=("tp.gd",), paper=P, reference="r", statement="s",
                      evidence=c.evidence), origin="user.py")
    impostor = Paper(key="tp", title="someone else's", authors="x")
    with pytest.raises(BadInput, match="paper key 'tp' is already used"):
        reg.add(Claim(id="tp.mine", paper=impostor, reference="r", statement="s", evidence=c.evidence),
                origin="user.py")


# ---- the examples, through the command line ------------------------------------------------------
@pytest.mark.parametrize("file, ids, expected", [
    ("fedprox_claims.py", ["mine.fedprox_gd_rate"], 0),
    ("fedprox_claims.py", ["mine.fedprox_no_drift"], 1),
    ("stochastic_claims.py", ["mine_sto.anytime"], 0),
    ("stochastic_claims.py", ["mine_sto.horizon"], 0),
])
def test_examples_verify_from_the_command_line(tmp_path, file, ids, expected):
    out = tmp_path / "r.json"
    code = main(["verify", "--theorem-file", str(EXAMPLES / file), *ids, "--json", str(out), "--no-report", "-q",
                 "--out", str(tmp_path)])
    assert code == expected
    doc = json.loads(out.read_text())
    for c in doc["checks"]:
        assert c["verdict"] == c["expected"]


def test_example_expectation_and_horizon_use_their_statistics(tmp_path):
    m = load_user_file(EXAMPLES / "stochastic_claims.py")
    r = m.anytime.run(RunConfig(seeds=1, rounds=200))
    assert r.readings["as stated"]["statistic"].startswith("mean") and r.evidence["replicates_per_instance"] == 32
    h = m.horizon.run(RunConfig(seeds=1))
    assert h.evidence["cases"][0]["run_seeds"] == 32 and h.verdict == V.HOLDS


@pytest.mark.parametrize("args, message", [
    (["--param", "mu0=0.5"], "not a parameter"),
    (["--param", "mu=-1"], "must be > 0"),
    (["--param", "mu=nan"], "finite number"),
    (["--param", "mu=inf"], "finite number"),
    (["--seeds", ""], "--seeds"),
])
def test_bad_parameters_are_refused_before_any_run(tmp_path, capsys, args, message):
    code = main(["verify", "--theorem-file", str(EXAMPLES / "fedprox_claims.py"), "mine.fedprox_gd_rate",
                 "--no-report", "-q", "--out", str(tmp_path / "o"), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]
    assert not (tmp_path / "o").exists()


def test_instance_outside_the_domain_is_bad_input(tmp_path, capsys):
    from fedcheck.problems.instances import save_instance
    inst = RandomFamily(loss="least_squares", set="l1", n=3, m=5, p=4).draw(0)
    path = save_instance(inst, tmp_path / "l1.npz")
    code = main(["verify", "--theorem-file", str(EXAMPLES / "fedprox_claims.py"), "mine.fedprox_gd_rate",
                 "--instance", str(path), "--no-report", "-q", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "outside the claim's domain" in err and "set='l1'" in err.replace('"', "'")


def test_search_works_on_a_users_claim(tmp_path):
    from fedcheck.tools.search import search
    m = load_user_file(EXAMPLES / "fedprox_claims.py")
    out = search(m.gd_rate, budget=6, restarts=1, seed=1, rounds=100, out=tmp_path, do_shrink=False)
    assert np.isfinite(out.best.ratio) and out.verified is not None
    # the search stays inside the domain: l2 or box only, least squares only
    assert {t["instance"].split()[3] for t in out.trajectory} <= {"l2", "box"}


# ---- every round --------------------------------------------------------------------------------
def test_a_violation_between_recorded_rounds_is_found():
    """A method whose objective jumps at one round the recording grid skips: the bound is violated there
    only.  Checking the recorded rounds alone would say 'holds'."""
    from fedcheck.core.schedules import record_grid
    T, spike = 6000, 1234
    assert spike + 1 not in set(record_grid(T + 1).tolist())

    def spiky_round(X, x, ctx, *, eta):
        Y = ctx.broadcast(x) - ctx.col(eta) * ctx.grad(ctx.broadcast(x))
        x_new = ctx.project(Y.mean(1))
        if ctx.t == spike:                      # iterate spike + 1 leaves the optimum region, once
            x_new = ctx.project(x_new + 10.0)
        return Y, x_new
    fam = RandomFamily(loss="least_squares", set="l2", n=3, m=8, p=4, heterogeneity=0.0, noise=0.0, outside=0.5)
    claim = Claim(id="tp.spike", paper=P, reference="r", statement="s",
                  evidence=BoundTest(Rounds(family=fam, algorithm=federated(spiky_round), schedules={"eta": 1 / L},
                                            seeds=1, rounds=T, valid_from=2),
                                     bounds=(Bound("pgd", L * D**2 / (2 * (t - 1))),)))
    r = claim.run(RunConfig(seeds=1))
    assert r.verdict == V.VIOLATED and r.evidence["rounds_checked"] == "every round"
    assert r.readings["as stated"]["first_violation"]["first_violation_round"] == spike + 1
    assert r.readings["as stated"]["points_checked"] == T


# ---- domains ------------------------------------------------------------------------------------
def _one_client_fw():
    """Classical Frank-Wolfe, one client, on the simplex: 2 L D^2 / (t + 1) -- a claim about n = 1 only."""
    from fedcheck import algorithms as engine
    fam = RandomFamily(loss="least_squares", set="simplex", n=1, m=10, p=6)
    return Claim(id="tp.fw", paper=P, reference="Jaggi 2013", statement="F(x^t) - F* <= 2 L D^2 / (t + 1)",
                 evidence=BoundTest(Rounds(family=fam, algorithm=engine.frank_wolfe, schedules={"eta": 2 / (t + 1)},
                                           seeds=2, rounds=200, valid_from=2),
                                    bounds=(Bound("2LD^2/(t+1)", 2 * L * D**2 / (t + 1)),)),
                 domain=Domain(fixed={"loss": "least_squares", "set": "simplex", "n": 1},
                               free={"m": (1, None), "p": (1, None), "radius": (0, None)}))


def test_search_never_leaves_the_domain(tmp_path):
    from fedcheck.tools.search import search
    c = _one_client_fw()
    out = search(c, budget=8, restarts=2, seed=3, rounds=60, out=tmp_path, do_shrink=False)
    seen = [t["instance"] for t in out.trajectory]
    assert all(s.startswith("n=1 ") and " simplex " in s for s in seen), seen
    assert out.verified.verdict == V.HOLDS


def test_sets_outside_the_domain_are_refused():
    from fedcheck.core.errors import DomainError
    from fedcheck.tools.search import SearchSpace
    with pytest.raises(DomainError, match="outside the domain"):
        SearchSpace.for_check(_one_client_fw(), sets=("box",))


def test_hypothesis_draws_inside_the_domain():
    from hypothesis import given, settings

    from fedcheck.testing import claim_instances
    c = _one_client_fw()

    @settings(max_examples=15, deadline=None, derandomize=True)
    @given(claim_instances(c))
    def check(inst):
        c.domain.check_instance(inst.properties())
        assert inst.n == 1 and inst.set.name == "simplex"
    check()


def test_an_instance_outside_the_domain_is_never_a_refutation():
    from fedcheck.core.errors import DomainError
    from fedcheck.experiments import takes_instance
    two = RandomFamily(loss="least_squares", set="simplex", n=2, m=10, p=6).draw(0)
    with pytest.raises(DomainError):
        takes_instance(_one_client_fw(), two)


def test_a_headline_never_hides_a_paper_finding():
    """When the paper's own findings disagree, the headline says so with the count."""
    mixed = Claim(id="tp.mixed", paper=P, reference="r", statement="s", evidence=Measurement(
        lambda ctx: MeasureResult([Finding("the paper's first", V.REPRODUCED), Finding("the paper's second",
                                   V.NOT_REPRODUCED), Finding("an analysis", V.REPRODUCED, paper=False)]),
        counterexample=True))
    r = mixed.run()
    assert r.verdict == V.NOT_REPRODUCED and r.headline == "partly reproduced: 1 of 2 paper findings refuted"
    clean = Claim(id="tp.clean", paper=P, reference="r", statement="s", evidence=Measurement(
        lambda ctx: MeasureResult([Finding("a", V.HOLDS), Finding("an analysis", V.VIOLATED, paper=False)])))
    r = clean.run()
    assert r.verdict == V.HOLDS and r.headline == V.HOLDS and "analyses refuted" in r.reason


def test_every_per_round_claim_of_the_catalog_is_checked_at_every_round():
    from fedcheck.catalog.registry import default_registry
    from fedcheck.experiments import Rounds, streams_every_round
    per_round = [c for c in default_registry().checks.values()
                 if isinstance(c.evidence, BoundTest) and isinstance(c.evidence.experiment, Rounds)]
    assert len(per_round) >= 8
    assert [c.id for c in per_round if not streams_every_round(c.evidence.experiment.algorithm)] == []


def test_a_rounds_random_streams_are_made_on_first_use_and_are_the_same_streams():
    """``federated`` gives its context :class:`LazyRows`: no generator is made for a method that draws nothing, a
    method that draws gets exactly :func:`row_generators`' streams, and a wrong number of seeds fails at once."""
    from fedcheck.core.streams import LazyRows, row_generators
    lazy = LazyRows([3, 4, 5], 3, "k")
    assert lazy._rows is None and len(lazy) == 3
    eager = row_generators([3, 4, 5], 3, "k")
    assert [g.standard_normal(4).tolist() for g in lazy] == [g.standard_normal(4).tolist() for g in eager]
    assert lazy[1] is lazy._rows[1]
    with pytest.raises(ValueError, match="2 stream seeds for 3 rows"):
        LazyRows([1, 2], 3, "k")

    def noisy(X, x, ctx):
        Y = X + 0.01 * ctx.normal(X.shape[1:])
        return Y, Y.mean(1)
    from fedcheck.problems.instances import InstanceBatch
    batch = InstanceBatch([RandomFamily(n=3, m=4, p=2).draw(s) for s in range(2)])
    a = federated(noisy, name="noisy")(batch, rounds=3, seeds=[7, 8]).final["x"]
    b = federated(noisy, name="noisy")(batch, rounds=3, seeds=[7, 8]).final["x"]
    np.testing.assert_array_equal(a, b)
