"""Vacuity: a bound at least as large as the largest value its metric can take (its trivial bound) at every point
checked could not have failed -- the verdict stays, the headline, the JSON and the findings say so; a metric without
a trivial bound is "vacuity: unknown", never claimed non-vacuous."""
import json
from pathlib import Path

import numpy as np
import pytest

import fedcheck
from fedcheck.core.evidence import Comparison, merge_judgements
from fedcheck.core.schema import schema_errors

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mlp_claims.py"
BOUND = "bounds=(Bound(\"(12)\", Ghat + (G_nc + L * D) * delta,"


def _claim_file(tmp_path, factor: str | None, trivial: bool = True) -> Path:
    src = EXAMPLE.read_text()
    assert BOUND in src
    if factor is not None:
        src = src.replace(BOUND, f"bounds=(Bound(\"(12)\", {factor} * (Ghat + (G_nc + L * D) * delta),")
    if not trivial:
        src = src.replace("trivial={\"min_gap\": fw_gap_trivial(G_nc)}", "")
    f = tmp_path / "my_mlp_claims.py"
    f.write_text(src)
    return f


def _run(tmp_path, factor, trivial=True, frame=False):
    res = fedcheck.verify(theorem_file=str(_claim_file(tmp_path, factor, trivial)))
    (r,) = list(res)
    return (r, res.to_frame()) if frame else r


@pytest.mark.parametrize("factor", ["1e6", None])
def test_a_bound_above_the_largest_fw_gap_everywhere_is_reported_vacuous(tmp_path, factor):
    # Theorem 2's bound on this MLP is ~1e4 at T <= 40 while sqrt(n) G D (the largest FW gap, G at its certified
    # upper end) is ~44: the bound as written is already vacuous at these horizons; times 1e6 all the more
    r, df = _run(tmp_path, factor, frame=True)
    pts = df[df["row"] == "point"]
    assert len(pts) and pts["vacuous"].all() and (pts["bound_lo"] >= pts["trivial"]).all()   # the tidy table says so
    assert r.verdict == "holds"
    assert r.headline.startswith("holds (vacuous at these horizons: the bound exceeds the largest Frank-Wolfe gap")
    assert r.vacuity["status"] == "vacuous"
    f = next(iter(r.readings.values()))["vacuity"]
    assert f["status"] == "vacuous" and f["vacuous_points"] == f["points"] > 0
    doc = r.to_dict()
    assert doc["vacuity"]["status"] == "vacuous"
    assert schema_errors({"schema": "fedcheck.results/1", "checks": [json.loads(json.dumps(doc))]}) is None


def test_a_bound_below_the_trivial_bound_bites_and_is_not_vacuous(tmp_path):
    r, df = _run(tmp_path, "1e-3", frame=True)
    pts = df[df["row"] == "point"]
    assert not pts["vacuous"].all() and pts["trivial"].notna().all()
    assert (pts["ratio"] == pts["measured"] / pts["bound_lo"]).all()          # the deciding (lower) end of the bound
    assert r.verdict == "holds" and r.headline == "holds"
    assert r.vacuity["status"] == "not vacuous"
    f = next(iter(r.readings.values()))["vacuity"]
    assert f["first_biting"]["bound"] < f["first_biting"]["trivial"]


def test_without_a_trivial_bound_vacuity_is_unknown(tmp_path):
    r = _run(tmp_path, "1e6", trivial=False)
    assert r.verdict == "holds" and r.headline == "holds"
    assert r.vacuity["status"] == "unknown"
    assert next(iter(r.readings.values()))["vacuity"]["why_unknown"]


def test_comparison_vacuity_and_its_merge():
    c = Comparison(lhs_lo=[[0.1, 0.1]], rhs_lo=[5.0, 1.0], rhs_hi=[50.0, 10.0], trivial=2.0, trivial_what="2",
                   points=[1, 2], point_name="T")
    v = c.judge()["vacuity"]
    # decided at the lower ends: 5 >= 2 is vacuous, 1 < 2 bites (the upper end 10 would have hidden it)
    assert v["vacuous_points"] == 1 and v["first_biting"] == 2 and v["bound_at_first_biting"] == 1.0
    a = Comparison(lhs_lo=[[0.1]], rhs_lo=[5.0], trivial=2.0).judge()
    assert a["vacuity"]["vacuous_points"] == 1 and a["vacuity"]["first_biting"] is None
    m = merge_judgements(a, c.judge())
    assert m["vacuity"]["points"] == 3 and m["vacuity"]["vacuous_points"] == 2 and m["vacuity"]["first_biting"] == 2
    # a stretch without a trivial bound makes the merged one unknown
    assert merge_judgements(a, Comparison(lhs_lo=[[0.1]], rhs_lo=[5.0]).judge())["vacuity"] is None
    # a measured value beyond the trivial bound: it does not apply to this run
    assert Comparison(lhs_lo=[[3.0]], rhs_lo=[5.0], trivial=2.0).judge()["vacuity"]["contradicted"]
    # a lower bound: vacuous when at most the trivial (smallest possible) value
    low = Comparison(lhs_lo=[[3.0]], rhs_lo=[0.0], relation=">=", trivial=0.0).judge()
    assert low["vacuity"]["vacuous_points"] == 1


def test_old_results_without_vacuity_still_load():
    from fedcheck.api import Result
    r = Result.from_dict({"id": "x.y", "verdict": "holds"})
    assert r.vacuity == {}


def test_objective_gap_trivial_bound_is_certified_on_an_instance():
    from fedcheck.experiments import objective_gap
    from fedcheck.problems import RandomFamily
    from fedcheck.problems.constants import InstanceContext
    from fedcheck.problems.solve import solve_consensus
    fam = RandomFamily()
    inst = fam.draw(0)
    sol = solve_consensus(inst)
    ctx = InstanceContext(inst, inst.make_loss(), sol, {})
    v = objective_gap("F").trivial.evaluate(ctx)
    assert v is not None and np.isfinite(v)
    # F - F* at points of D never exceeds it
    rng = np.random.default_rng(0)
    S, loss = inst.set, inst.make_loss()
    for _ in range(20):
        x = S.project(rng.normal(size=(1, inst.p)) * 10)[0] if hasattr(S, "project") else sol.x_star
        F = float(loss.value(np.broadcast_to(x, (inst.n, inst.p))).mean())
        assert F - sol.F_star <= v * (1 + 1e-9)


def test_a_declared_start_of_biting_is_reported_beside_the_runs_vacuity():
    from fedcheck import Bound, BoundTest, Claim, Paper
    from fedcheck.experiments import Case, Cases

    def cases(config, params):
        cmp = Comparison(lhs_lo=np.array([[0.1, 0.1, 0.1]]), rhs_lo=[9.0, 3.0, 1.0], trivial=2.0,
                         trivial_what="the largest gap", points=[10, 100, 1000], point_name="T")
        return [Case("one", {"r": cmp})]

    claim = Claim(id="bites.demo", paper=Paper(key="bites", title="t", authors="a"), reference="r", title="t",
                  statement="s", expected="holds",
                  evidence=BoundTest(Cases(cases), bounds=(Bound("b", bites_from=1000),)))
    res = claim.run()
    v = res.readings["r"]["vacuity"]
    assert res.headline == "holds" and res.vacuity["status"] == "not vacuous"
    assert v["bites_from"] == {"b": 1000} and v["first_biting"]["T"] == 1000 and v["vacuous_points"] == 2


# ---- trivial bounds along the axis, declared infinite, and the catalog's -------------------------------------------
def test_a_trivial_bound_moves_along_the_axis_and_reads_the_schedules():
    import sympy as sp
    from fedcheck import Trivial
    from fedcheck.symbols import T, t
    tr = Trivial(2 * sp.sqrt(t) + sp.Symbol("eta") * T)
    assert tr.axes == {"t", "T"}
    assert tr.evaluate(None) is None                   # the axis is not known: unknown, never a number
    v = tr.evaluate(None, {"t": np.array([1.0, 4.0]), "T": 10.0, "eta": 0.5})
    assert np.allclose(v, [7.0, 9.0])


def test_a_metric_without_a_finite_trivial_bound_says_why():
    from fedcheck import Bound, BoundTest, Claim, Paper, no_trivial_bound
    from fedcheck.experiments import Case, Cases
    nt = no_trivial_bound("the domain R^d is unbounded")
    assert nt.evaluate(None) == np.inf and nt.what == "no finite trivial bound: the domain R^d is unbounded"

    def cases(config, params):
        return [Case("one", {"r": Comparison(lhs_lo=[[0.1, 0.2]], rhs_lo=[9.0, 3.0], trivial=np.inf,
                                             trivial_what=nt.what, points=[1, 2], point_name="T")}),
                Case("two", {"e": Comparison(lhs_lo=[[0.1]], rhs_lo=[0.1], relation="==")})]

    claim = Claim(id="unbounded.demo", paper=Paper(key="unbounded", title="t", authors="a"), reference="r", title="t",
                  statement="s", expected="holds", evidence=BoundTest(Cases(cases), bounds=(Bound("b"),)))
    res = claim.run()
    v = res.readings["r"]["vacuity"]
    assert v["status"] == "unknown" and v["why_unknown"] == nt.what      # never "not vacuous"
    assert res.readings["e"]["vacuity"]["why_unknown"].startswith("an equality")
    assert res.vacuity["status"] == "unknown" and nt.what in res.vacuity["why_unknown"]
    assert res.headline == "holds"


def _fw_gap(loss, S, x, n):
    g = loss.grad(np.broadcast_to(x, (n, x.size))).mean(0)
    return float(g @ (x - S.lmo(g[None])[0]))


def _points(S, p, rng, k=40):
    """Points of the set: projections of large (boundary) and small (interior) Gaussian draws."""
    return [S.project(rng.normal(size=(1, p)) * s)[0] for s in np.geomspace(0.01, 100, k)]


@pytest.mark.parametrize("family", ["SignedQuadraticFamily", "SigmoidFamily"])
def test_theorem2_trivial_bounds_are_certified_on_sampled_points(family):
    """FedFW Theorem 2's trivial bounds (sqrt(n) G_nc D for the FW gap, (G_nc + lambda sqrt(n) D) sqrt(n) D for the
    surrogate gap, sqrt(n) D for the distance to consensus) are never below the quantity at points of D^n."""
    import sympy as sp
    from fedcheck.symbols import T, lambda_0
    from theorems.fedfw import measurements as FP
    from theorems.fedfw.claims import trivial_nc
    inst = getattr(FP, family)().draw(1)
    sol = FP.nonconvex_solver(inst)
    lam = 5.0
    ctx = FP.horizon_context(inst, sol, {"lambda_0": lam})
    triv = trivial_nc(lambda_0 * T ** sp.Rational(1, 3))
    at = {"T": 1.0}
    tg, ts, td = (triv[k].evaluate(ctx, at) for k in ("min_gap", "avg_gap_hat", "dist_tilde"))
    assert all(v is not None and np.isfinite(v) for v in (tg, ts, td))
    loss, S, n, p = inst.make_loss(), inst.set, inst.n, inst.p
    rng = np.random.default_rng(0)
    pts = _points(S, p, rng) + [S.lmo(rng.normal(size=(1, p)))[0] for _ in range(20)]
    for x in pts:
        assert _fw_gap(loss, S, x, n) <= tg * (1 + 1e-9)
    for _ in range(40):
        X = np.stack([pts[j] for j in rng.integers(len(pts), size=n)])
        xbar = X.mean(0)
        Gb = loss.grad(X) / n + lam * (X - xbar)               # grad of F^ + (lam/2) dist^2(X, C)
        Sv = np.stack([S.lmo(Gb[i:i + 1])[0] for i in range(n)])
        assert float((Gb * (X - Sv)).sum()) <= ts * (1 + 1e-9)
        assert float(np.sqrt(((X - xbar) ** 2).sum())) <= td * (1 + 1e-9)


def test_the_surrogate_gap_trivial_bound_is_certified_on_sampled_points():
    from fedcheck.problems.constants import InstanceContext
    from fedcheck.problems.solve import solve_consensus
    from theorems.fedfw.claims import SURROGATE_TRIVIAL, THEOREM1_FAMILY
    inst = THEOREM1_FAMILY.draw(0)
    sol = solve_consensus(inst)
    ctx = InstanceContext(inst, inst.make_loss(), sol, {"lambda_0": 1.0})
    tt = np.array([2.0, 5.0, 50.0])
    tv = SURROGATE_TRIVIAL.evaluate(ctx, {"t": tt})
    loss, S, n = inst.make_loss(), inst.set, inst.n
    rng = np.random.default_rng(1)
    pts = _points(S, inst.p, rng)
    for _ in range(60):
        X = np.stack([pts[j] for j in rng.integers(len(pts), size=n)])
        d2 = float(((X - X.mean(0)) ** 2).sum())
        val = float(loss.value(X).mean()) + 0.5 * np.sqrt(tt) * d2 - sol.F_star     # lambda_{t-1} = sqrt(t)
        assert np.all(val <= tv * (1 + 1e-9))


def test_feddualavg_trivial_bounds_are_certified_on_sampled_points():
    """Phi - Phi* on the l2 ball (F2) and on the simplex never exceeds the declared trivial bound; the l1 family
    on R^d declares none."""
    from fedcheck.problems import solve_composite
    from theorems.feddualavg import entropic as PE
    from theorems.feddualavg.problems import F1_Q, F2_L2, UNBOUNDED_DOMAIN, gap_trivial_what, objective_gap_trivial
    rng = np.random.default_rng(2)
    inst = F2_L2.draw(0)
    sol = solve_composite(inst)
    tv = objective_gap_trivial(inst, sol.phi_lower)
    W = rng.normal(size=(400, inst.d))
    W = W / np.linalg.norm(W, axis=1, keepdims=True) * rng.random((400, 1)) ** 0.1      # mostly near the boundary
    assert np.isfinite(tv) and np.max(inst.Phi(W)) - sol.phi_star <= tv
    f1 = F1_Q.draw(0)
    assert objective_gap_trivial(f1, 0.0) == np.inf and gap_trivial_what(f1) == UNBOUNDED_DOMAIN
    s = PE.SimplexQuadraticFamily(d=6, M=4, K=5).draw(0)
    top = s.sup_phi()
    P = rng.dirichlet(np.full(s.d, 0.3), size=2000)
    assert np.max(s.Phi(np.vstack([P, np.eye(s.d)]))) <= top * (1 + 1e-12) + 1e-12


GENERIC = "no trivial bound of the metric is known"


@pytest.mark.xdist_group("catalog")        # the catalog's one run (tests/conftest.py::catalog_run)
@pytest.mark.parametrize("claim", [c for c in __import__("test_catalog").CLAIMS], ids=lambda c: c.id)
def test_every_catalog_bound_claim_knows_its_vacuity_or_says_why_not(claim, catalog_run):
    """Every bound test of the catalog is vacuous, partly or not vacuous, or unknown with a specific reason (a
    metric without a finite trivial bound, an equality) -- never the generic 'no trivial bound is known'."""
    res = catalog_run(claim)
    generic = [k for k, r in res.readings.items() if isinstance(r.get("vacuity"), dict)
               and r["vacuity"].get("why_unknown") == GENERIC]
    assert not generic, f"{claim.id}: findings without a trivial bound or a reason: {generic}"
    # a certified trivial bound is never exceeded by what the run measured (else it is not an upper bound there)
    beyond = [k for k, r in res.readings.items() if isinstance(r.get("vacuity"), dict)
              and (r["vacuity"].get("why_unknown") or "").startswith("a measured value exceeds")]
    assert not beyond, f"{claim.id}: a measured value above the declared trivial bound: {beyond}"
    if res.vacuity.get("status") == "unknown":
        assert res.vacuity.get("why_unknown") and GENERIC not in res.vacuity["why_unknown"], (claim.id, res.vacuity)


@pytest.mark.xdist_group("catalog")
def test_fedfw_theorem2_knows_its_vacuity_and_its_vacuous_bound(catalog_run):
    from test_catalog import REG
    res = catalog_run(REG.checks["fedfw.theorem2"])
    assert res.vacuity["status"] == "not vacuous"           # (52) and (57) bite
    assert res.vacuity["vacuous_bounds"] == ["(12)"]        # (12) is above sqrt(n) G_nc D at every horizon checked
    assert res.headline.startswith("holds (vacuous at these horizons for bound (12)")


def test_a_finding_over_several_bounds_names_the_vacuous_one_in_the_headline():
    from fedcheck import Bound, BoundTest, Claim, Paper
    from fedcheck.experiments import Case, Cases

    def cases(config, params):
        mk = lambda rhs: Comparison(lhs_lo=[[0.1, 0.1]], rhs_lo=rhs, trivial=2.0, trivial_what="2",  # noqa: E731
                                    points=[10, 100], point_name="T")
        return [Case("one", {("(a)", "r"): mk([5.0, 3.0]), ("(b)", "r"): mk([5.0, 1.0])})]

    claim = Claim(id="several.demo", paper=Paper(key="several", title="t", authors="a"), reference="r", title="t",
                  statement="s", expected="holds",
                  evidence=BoundTest(Cases(cases), bounds=(Bound("(a)"), Bound("(b)")), findings="reading"))
    res = claim.run()
    assert res.readings["r"]["vacuity"]["status"] == "not vacuous"           # (b) bites at T = 100
    assert res.readings["r"]["vacuity"]["vacuous_bounds"] == ["(a)"]
    assert res.vacuity["vacuous_bounds"] == ["(a)"]
    assert res.headline == ("holds (vacuous at these points for bound (a): above the largest value its quantity can "
                            "take everywhere)")
