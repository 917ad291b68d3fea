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


def test_each_readings_lower_and_upper_bound_of_G_follow_from_its_definition():
    """Symbolic: each reading's G (as fedfw.theorem1 declares it) minus G_floor is >= 0 and G_ceiling minus it is
    >= 0 on every instance of the class: ||grad F(x*)|| = e + b, ||grad F^(X*)||_F = ||grad F(x*)||/sqrt(n) + a,
    with a, b >= 0 (Cauchy-Schwarz; e <= ||grad F(x*)|| by smoothness) and both below zeta, zeta/sqrt(n)."""
    import sympy as sp
    from fedcheck import symbols as S
    from theorems.fedfw import claims as C
    a, b, e, z, u, w = sp.symbols("a b e zeta u w", nonnegative=True)
    n, L, D = S.n, S.L, S.D
    lower = {S.grad_F_star: e + b, S.grad_hat_star: (e + b) / sp.sqrt(n) + a}
    upper = {S.grad_F_star: z - u, S.grad_hat_star: z / sp.sqrt(n) - w}       # u, w >= 0: below zeta, zeta/sqrt(n)
    floors = {"statement": L * D / n + e / sp.sqrt(n), "proof-end": L * D / sp.sqrt(n) + n * e,
              "repair": L * D / sp.sqrt(n) + e / sp.sqrt(n)}
    ceilings = {"statement": L * D / n + z / sp.sqrt(n), "proof-end": L * D / sp.sqrt(n) + n * z,
                "repair": (L * D + z) / sp.sqrt(n)}
    Gs = {"statement": C.G_statement, "proof-end": C.G_proof_end, "repair": C.G_repair}
    vals = {n: 3, L: 1.5, D: 2.0, e: 0.7, z: 4.0}
    for g, G in Gs.items():
        diff = sp.expand(G.subs(lower) - floors[g])
        assert diff.is_nonnegative or sp.simplify(diff).is_nonnegative, (g, diff)
        up = sp.expand(ceilings[g] - G.subs(upper))
        assert up.is_nonnegative, (g, up)
        gap = 2.0 + 0.7 * 2.0        # e = (gap - L D^2/2)/D = 0.7 at L = 1.5, D = 2: gap = 3 + 1.4
        assert pep.G_floor(g, 3, 1.5, 2.0, gap=4.4) == pytest.approx(float(floors[g].subs(vals)))
        assert pep.G_ceiling(g, 3, 1.5, 2.0, 4.0) == pytest.approx(float(ceilings[g].subs(vals)))
    # at gap 0 the floors are the plain ones: LD/n (statement), LD/sqrt(n) (proof-end, repair), 0 (sup)
    assert [pep.G_floor(g, 4, 1.0, 2.0) for g in pep.G_READINGS] == [0.5, 1.0, 1.0, 0.0]
    assert pep.G_floor("sup", 4, 1.0, 2.0, gap=3.0) == pytest.approx(3.0 / (2 * 2.0))
    assert pep.G_ceiling("sup", 4, 1.0, 2.0, 1.0) == pytest.approx(3.0 / 2)
    with pytest.raises(ValueError):
        pep.G_floor("proof", 2, 1.0, 1.0)


def test_the_sup_and_gap_floors_hold_on_random_instances():
    """Numeric: on random quadratic clients on the l2 ball and random points xbar of D, ||grad F^(xbar 1^T)||_F (<= the
    sup over D^n) >= gap/(sqrt(n) D), and ||grad F(x*)|| >= (gap - L D^2/2)/D, the facts behind G_floor."""
    import numpy as np
    rng = np.random.default_rng(np.random.SeedSequence(38))
    B, n, p, r = 64, 3, 4, 1.0
    Q = np.linalg.qr(rng.standard_normal((B, n, p, p)))[0]
    H = np.einsum("bnij,bnj,bnkj->bnik", Q, rng.uniform(0, 1, (B, n, p)), Q)
    C = 3 * rng.standard_normal((B, n, p))
    xs = pep._quad_opt(H, C, r)
    Fs, Hs = pep._quad_F(H, C, xs)
    L, D = np.linalg.eigvalsh(H.mean(1))[..., -1], 2 * r
    for _ in range(8):
        x = rng.standard_normal((B, p))
        x *= r * rng.uniform(0, 1, (B, 1)) ** (1 / p) / np.linalg.norm(x, axis=-1, keepdims=True)
        F, Hd = pep._quad_F(H, C, x)
        gap = F - Fs
        g_hat = np.sqrt((Hd ** 2).sum((-2, -1))) / n                 # ||grad F^(x 1^T)||_F
        assert (g_hat >= gap / (np.sqrt(n) * D) - 1e-9).all()
        assert (np.linalg.norm(Hs.mean(1), axis=-1) >= (gap - L * D ** 2 / 2) / D - 1e-6).all()


def test_at_t_up_to_4_38_follows_from_convexity_alone():
    """For t <= 4, (38) at every reading's floor of G is above any gap (reading_ratio <= 1 whatever the worst case,
    lambda_0, n): the test of (38) there says nothing about FedFW's rate; at t = 5 it is not so."""
    import itertools
    for t, n, lam, worst, g in itertools.product((1, 2, 3, 4), (1, 2, 5, 30), (1e-3, 0.1, 1.0, 100.0),
                                                 (0.0, 0.5, 2.0, 10.0, 1e3, 1e6), pep.G_READINGS):
        assert pep.reading_ratio(g, t, n, 1.0, 2.0, lam, worst)[0] <= 1 + 1e-12, (t, n, lam, worst, g)
        assert pep.trivially_true(t)
    assert not pep.trivially_true(5)
    assert pep.reading_ratio("sup", 5, 2, 1.0, 2.0, 100.0, 1e6)[0] > 1     # (2/sqrt(5)) G D sqrt(n) < gap


def test_the_starts_outside_D_instance_breaks_31_at_t_1():
    """Explicit: two clients (x + 9)^2/2 on [-1, 1] (L = 1, D = 2, ||grad f_i(x*)|| = 8), both starting at -100: the
    first step jumps to x = 1, the surrogate gap is zeta D + L D^2/2 = 18 against (31)'s L D^2 + sqrt(2) n D^2 lambda_0
    = 5.13 at lambda_0 = 0.1; from t = 3 on the iterates are back under (31)'s trend."""
    inst = pep.outside_instance(8.0, 1.0, 2.0, -100.0, 2)
    assert inst.n == 2 and not inst.set.contains(inst.start(), 0.0)
    run = pep.outside_run(inst, 0.1, 3, use_cache=False)
    assert run["surrogate_gap_lo"][0] == pytest.approx(18.0) and run["bound_31"][0] == pytest.approx(5.1313708)
    assert run["surrogate_gap_lo"][0] > run["bound_31"][0] and run["surrogate_gap_lo"][2] <= run["bound_31"][2]


@pytest.mark.pep
@needs_pepit
def test_surrogate_pep_is_below_31_in_D_and_above_it_outside():
    """The G-free PEP: worst F^_T(X^{T+1}) - F^(X*) over L-smooth convex clients (no zeta) below (31) with starts in
    D; with starts anywhere (zeta = 4 LD) the worst case at T = 1 is zeta D + L D^2/2 + the penalty, above (31)."""
    b = pep.fedfw_bound_31(2, 2, 1.0, 2.0, 0.1)
    assert b == pytest.approx(4.0 + 8 * 0.1 * 2 ** 0.5)
    shared = pep.fedfw_surrogate_worst_case(1, 2, 1.0, 2.0, 0.1, None, use_cache=False)
    assert shared["dual"] == pytest.approx(2.1414214, rel=1e-5) and shared["dual"] <= b
    sep = pep.fedfw_surrogate_worst_case(2, 2, 1.0, 2.0, 1.0, None, use_cache=False, starts="separate")
    assert sep["dual"] == pytest.approx(4.5361032, rel=1e-5) and sep["dual"] <= pep.fedfw_bound_31(3, 2, 1.0, 2.0, 1.0)
    out = pep.fedfw_surrogate_worst_case(1, 2, 1.0, 2.0, 0.1, 8.0, use_cache=False, starts="anywhere")
    lo, hi = pep._interval(out)
    assert lo > 18.0 > b and hi == pytest.approx(18.0 + 0.1 * 2 ** 0.5, rel=1e-5)
    with pytest.raises(ValueError):
        pep.fedfw_surrogate_worst_case(1, 2, 1.0, 2.0, 0.1, starts="outside")


@pytest.mark.pep
@needs_pepit
def test_fedfw_pep_claim_decides_and_names_the_starts_outside_D_finding():
    """The claim decides: (38) holds under all four readings where the plain floor (G = 0) could not decide
    (zeta = 4 LD, lambda_0 = 0.1 L, t = 5: worst / plain floor 3.08), (31) holds with starts in D, and (31) with starts
    outside D is refuted in the paper's setting (Algorithm 1's input line), with the words of step (24), the instance
    and whether the conclusion survives."""
    from fedcheck.core.claim import RunConfig
    from theorems.fedfw import sources as SRC
    from theorems.fedfw.claims import theorem1_pep
    small = {"zeta_over_LD": (4.0,), "lambda0_over_L": (0.1,), "starts": ("shared",), "horizon": 4,
             "surrogate_lambda0_over_L": (1.0,), "surrogate_starts": ("shared",), "surrogate_horizons": [[2, [1, 2]]],
             "search_budget": 20}
    r = theorem1_pep.run(RunConfig(params=small))
    assert r.verdict == V.VIOLATED and r.expected == V.VIOLATED
    for g in pep.G_READINGS:
        f = r.readings[f"(38), G as in {g}, over the class"]
        assert f["verdict"] == V.HOLDS and f["max_ratio"] <= 1 and f["paper"] == pep.G_PAPER[g]
    assert max(row["worst_over_floor"] for row in r.evidence["rows"]) > 3       # the plain floor could not decide
    assert r.readings["(38) at t <= 4 follows from convexity alone"]["verdict"] == V.HOLDS
    assert r.readings["(31)/(35) >= the certified worst surrogate gap, shared start in D"]["verdict"] == V.HOLDS
    out = r.readings["(31) with starts outside D (Algorithm 1's x_i^1 in R^p)"]
    assert out["verdict"] == V.VIOLATED and out["paper"]
    assert out["source"]["quote"] == SRC.STEP_24.quote == "the third line holds since \\mathcal{D} is compact"
    assert "Algorithm 1" in out["description"] and out["conclusion_survives"] is True
    assert out["instance"]["run"]["surrogate_gap_lo"][0] == pytest.approx(18.0)
    assert "starts outside D" in r.reason and "convexity alone" in r.reason
    assert r.headline.startswith("partly holds: 1 of 4 paper findings refuted; refutes proof step (24)")  # one start kind
    assert "the theorem's conclusion: survives" in r.headline
