"""Certified worst cases (``fedcheck pep``).  PEPit is a dependency; the PEP tests are still marked ``pep`` and
skip with the reason when PEPit cannot be imported."""
import json

import pytest

from theorems.fedfw import pep
from fedcheck.core import verdict as V
from fedcheck.cli import main

_OK, _WHY = pep.available()
needs_pepit = pytest.mark.skipif(not _OK, reason=f"optional extra missing: {_WHY}")


def test_instance_21_stalls_exactly():
    """No PEPit needed: naive averaging (20) on (21) stays at xbar = 0, gap 1/2 (the 1/2-scaled reading)."""
    assert pep.instance21_gaps(8) == [0.5] * 8
    assert pep.paper_floor(3, 1.0, 2.0) == pytest.approx(2.0) and pep.jaggi_bound(2, 1.0, 1.0) == pytest.approx(0.5)


def test_missing_extra_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setattr(pep, "available", lambda: (False, "PEPit is not installed; pip install 'fedcheck[pep]'"))
    assert main(["pep", "--horizon", "1", "--no-report"]) == 2
    assert "fedcheck[pep]" in capsys.readouterr().err


@pytest.mark.pep
@needs_pepit
def test_frank_wolfe_worst_case_matches_known_values_and_is_below_the_paper():
    known = {1: 0.5, 2: 0.3126169, 3: 0.2278481}       # L = D = 1 (PEPit's example; Clarabel)
    for T, v in known.items():
        r = pep.frank_wolfe_worst_case(T, 1.0, 1.0)
        assert r["dual"] == pytest.approx(v, rel=1e-4), r
        assert r["primal"] == pytest.approx(r["dual"], rel=1e-4)
        assert r["solver"] in ("CLARABEL", "SCS") and r["status"].startswith("optimal")
        assert r["dual"] <= pep.paper_floor(T, 1.0, 1.0) and r["dual"] <= pep.jaggi_bound(T, 1.0, 1.0)
    # scaling: the worst case is proportional to L D^2
    assert pep.frank_wolfe_worst_case(2, 2.0, 0.5)["dual"] == pytest.approx(0.5 * known[2], rel=1e-4)


@pytest.mark.pep
@needs_pepit
def test_naive_averaging_worst_case_stays_above_the_instance_and_above_fw():
    for T in (1, 2, 3):
        naive = pep.naive_averaging_worst_case(T)
        central = pep.naive_averaging_worst_case(T, centralized=True)
        assert naive["primal"] >= 0.5                   # instance (21) is in the class: gap 1/2 at every round
        assert naive["dual"] > central["dual"]
    assert pep.naive_averaging_worst_case(3)["dual"] > 2.0 > pep.naive_averaging_worst_case(3, centralized=True)["dual"]


@pytest.mark.pep
@needs_pepit
def test_pep_command_results_and_report(tmp_path, capsys):
    rc = main(["pep", "--horizon", "3", "--json", str(tmp_path / "p.json"), "--no-report", "-q"])
    out = capsys.readouterr().out
    assert rc == 0 and "fedfw.pep_frank_wolfe" in out and "tightness" in out
    doc = json.loads((tmp_path / "p.json").read_text())
    fw, naive = doc["checks"]
    assert fw["verdict"] == V.HOLDS and fw["max_ratio"] == pytest.approx(0.5, rel=1e-6)   # T = 1: L D^2/2 vs L D^2
    assert naive["verdict"] == V.REPRODUCED
    assert naive["readings"]["centralized FW goes below"]["verdict"] == V.NOT_REPRODUCED   # T = 3 is too short
    assert {s["role"] for s in fw["series"]} == {"measured", "bound", "reference"}
    from fedcheck.documents import validate
    validate(doc)
    assert main(["pep", "--horizon", "0", "--no-report"]) == 2


@pytest.mark.pep
@needs_pepit
def test_pep_checks_run_from_a_theorem_file():
    from fedcheck.core.claim import RunConfig
    fw, naive = pep.pep_checks()
    r = fw.run(RunConfig(rounds=2))
    assert r.id == "fedfw.pep_frank_wolfe" and r.verdict == V.HOLDS and r.series


@pytest.mark.pep
@needs_pepit
def test_fedfw_pep_one_client_is_frank_wolfe_and_two_clients_are_below_38():
    """n = 1: FedFW is Frank-Wolfe (the penalty vanishes) -- the known FW worst cases (zeta large: inactive);
    n = 2, t = 2, 3: the certified worst case lies below (38)'s floor, and the search's instance below it."""
    known = {1: 0.5, 2: 0.3126169}
    for T, v in known.items():
        assert pep.fedfw_worst_case(T, 1, 1.0, 1.0, zeta=100.0, use_cache=False)["dual"] == pytest.approx(v, rel=1e-4)
    rows = pep.fedfw_pep_table((2,), 2, search_budget=40, use_cache=False)
    for r in rows:
        assert r["status"] == "optimal" and r["worst_primal"] == pytest.approx(r["worst_dual"], rel=1e-5)
        assert r["worst_dual"] <= r["floor_38"] <= r["ceiling_38"] and r["verdict"] == V.HOLDS
        assert 0 < r["search_best"] <= r["worst_dual"] * (1 + 1e-6)
    # (38)'s floor is the declared bound with G = 0, Y* = 0: 2 L D^2/t + 2 n D^2 lambda_0/sqrt(t)
    assert pep.fedfw_bound_38(2, 2, 1.0, 2.0, 1.0, 0.0, 0.0) == pytest.approx(4.0 + 16 / 2 ** 0.5)


@pytest.mark.pep
@needs_pepit
def test_fedfw_pep_worst_case_dominates_instance_21():
    """Instance (21) (L = 1, D = 2, zeta = 2, 2 clients) is in the class: FedFW's gap on it after T rounds is below
    the certified worst case."""
    import numpy as np
    H = np.ones((1, 2, 1, 1))
    C = np.array([[[3.0], [-1.0]]])
    xb = pep._fedfw_runs(H, C, np.zeros((1, 1)), 2, 2, 1.0, 1.0)
    F, _ = pep._quad_F(H, C, xb)
    F1, _ = pep._quad_F(H, C, np.ones((1, 1)))
    for T in (1, 2):
        assert F[T - 1, 0] - F1[0] <= pep.fedfw_worst_case(T, 2)["dual"]


@pytest.mark.pep
@needs_pepit
def test_fedfw_pep_reproduces_the_independent_model_over_starts_and_the_class():
    """An independent PEP model (PEPit and a raw SDP) found, with L = 1, D = 2: worst/floor 0.257 at the default
    point (n = 2, t = 3), 0.342 with separate starts in D, 0.392 with starts anywhere (t = 2), 0.98 at lambda_0 = 0.1,
    zeta = 2, T = 5 and 3.08 at lambda_0 = 0.1, zeta = 8, T = 4 -- the last where the floor argument cannot decide."""
    def ratio(T, zeta, lam, starts):
        r = pep.fedfw_worst_case(T, 2, 1.0, 2.0, zeta, lam, starts=starts)
        return r, r["dual"] / pep.fedfw_bound_38(T + 1, 2, 1.0, 2.0, lam, 0.0, 0.0)
    shared, separate, anywhere = ratio(2, 2.0, 1.0, "shared")[1], ratio(2, 2.0, 1.0, "separate")[1], \
        ratio(1, 2.0, 1.0, "anywhere")[1]
    assert shared == pytest.approx(0.2567, abs=2e-4) and separate == pytest.approx(0.3419, abs=2e-4)
    assert anywhere == pytest.approx(0.3918, abs=2e-4)
    assert separate >= shared                      # more freedom at the start: a larger worst case
    r, q = ratio(5, 2.0, 0.1, "shared")
    assert q == pytest.approx(0.98, abs=5e-3)
    r, q = ratio(4, 8.0, 0.1, "shared")
    assert q == pytest.approx(3.08, abs=5e-3)
    lo, hi = pep._interval(r)
    ceil = pep.fedfw_bound_38(5, 2, 1.0, 2.0, 0.1, (2.0 + 8.0) / 2 ** 0.5, 8.0 / 2 ** 0.5)
    assert pep._point_code(lo, hi, pep.fedfw_bound_38(5, 2, 1.0, 2.0, 0.1, 0.0, 0.0), ceil) == V.INCONCLUSIVE


@pytest.mark.pep
@needs_pepit
def test_fedfw_pep_claim_is_inconclusive_where_the_floor_cannot_decide_and_holds_elsewhere():
    from fedcheck.core.claim import RunConfig
    from theorems.fedfw.claims import theorem1_pep
    small = {"zeta_over_LD": (1.0,), "lambda0_over_L": (1.0,), "starts": ("shared",), "horizon": 2, "search_budget": 20}
    r = theorem1_pep.run(RunConfig(params=small))
    assert r.verdict == V.HOLDS, r.reason
    r = theorem1_pep.run(RunConfig(params={**small, "zeta_over_LD": (1.0, 4.0), "lambda0_over_L": (0.1,)}))
    f = r.readings["(38) >= the certified worst case over the class, shared start"]
    assert r.verdict == V.INCONCLUSIVE and "holds over all" not in (r.reason or "")
    assert "ranges" in r.reason and f["points"]["zeta/(LD)=4, lambda_0/L=0.1"] == "undecided"
    assert f["source"]["quote"] and f["max_ratio"] > 1
