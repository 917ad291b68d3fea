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
