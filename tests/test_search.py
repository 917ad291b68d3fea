"""Adversarial search (``fedcheck search``): worst instances, determinism, shrinking, rejection."""
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from fedcheck.core import verdict as V
from fedcheck.cli import main
from fedcheck.problems.instances import RandomFamily, load_instance
from fedcheck.tools.search import (Candidate, NotSearchable, SearchSpace, draw_candidate, mutate, restrict, search,
                             search_document, search_result)

QUICK = ["--rounds", "60", "--verify-rounds", "120", "--restarts", "1", "-q"]


@pytest.fixture(scope="module")
def theorem1():
    from theorems.fedfw import theorem1
    return theorem1


@pytest.fixture(scope="module")
def small_check(theorem1):
    """Theorem 1 on a small family (quick solves)."""
    import dataclasses
    ev = theorem1.evidence
    exp = dataclasses.replace(ev.experiment, family=RandomFamily(n=3, m=5, p=4), side_conditions=(), rounds=150)
    return dataclasses.replace(theorem1, symbolic=(), evidence=dataclasses.replace(ev, experiment=exp))


TOO_GOOD = textwrap.dedent('''
    import sympy as sp
    from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Rounds
    from fedcheck import algorithms as engine
    from fedcheck.problems.instances import RandomFamily
    from fedcheck.symbols import D, L, lambda_0, t

    too_good = Claim(
        id="mine.too_good", paper=Paper(key="mine", title="mine", authors="me"), reference="conjecture",
        statement="F(xbar^t) - F* <= L D^2 / (100 (t + 1))",
        evidence=BoundTest(Rounds(family=RandomFamily(n=4, m=6, p=4), algorithm=engine.fedfw,
                                  schedules={"eta": 2 / (t + 1), "lam": lambda_0 * sp.sqrt(t + 1)},
                                  valid_from=2, rounds=80),
                           bounds=(Bound("too good", L * D**2 / (100 * (t + 1))),)),
        params={"lambda_0": 1.0},
        domain=Domain(fixed={"loss": "least_squares", "set": ("l1", "l2", "box", "simplex")},
                      free={"n": (1, None), "m": (1, None), "p": (1, None), "radius": (0, None), "x0": None}))
''')


def search_dir(out, check_id: str) -> Path:
    """Where ``fedcheck search`` puts a check's worst instance, shrunk instance and trajectory."""
    from fedcheck.core.outputs import check_folder
    return Path(out) / "search" / "checks" / check_folder(f"{check_id}.search")


def test_search_writes_an_instance_that_verify_accepts(tmp_path):
    out = tmp_path / "s"
    rc = main(["search", "theorem1", "--budget", "4", "--out", str(out), "--no-report"] + QUICK)
    assert rc == 0
    worst = search_dir(out, "fedfw.theorem1") / "worst.npz"
    inst = load_instance(worst)            # the documented format
    assert inst.A.ndim == 3
    doc = json.loads((search_dir(out, "fedfw.theorem1") / "trajectory.json").read_text())
    assert doc["schema"] == "fedcheck.search/1"
    assert len(doc["trajectory"]["search"]) == 4 and len(doc["trajectory"]["baseline"]) == 4
    best = [p["best"] for p in doc["trajectory"]["search"]]
    assert best == sorted(best)                          # best-so-far is monotone
    assert doc["best"]["ratio_search_rounds"] == pytest.approx(max(p["ratio"] for p in doc["trajectory"]["search"]))
    assert doc["best"]["rerun"].startswith(f"fedcheck verify fedfw.theorem1 --instance {worst}")
    params = [a for p in doc["best"]["rerun"].split(" --param ")[1:] for a in ("--param", p)]
    assert main(["verify", "theorem1", "--instance", str(worst), "--rounds", "120", "--no-report", "-q",
                 "--json", str(tmp_path / "v.json")] + params) == 0
    again = json.loads((tmp_path / "v.json").read_text())["checks"][0]
    assert again["max_ratio"] == pytest.approx(doc["best"]["ratio_verified"], rel=1e-9)
    assert not (out / "results.json").exists()           # verify's name: search writes search.json
    res = json.loads((out / "search.json").read_text())["checks"][0]
    assert res["id"] == "fedfw.theorem1.search" and res["series"] and res["tables"] and "search" in res["evidence"]


def test_same_seed_same_result(small_check, tmp_path):
    docs = []
    for k in range(2):
        o = search(small_check, budget=4, restarts=1, seed=7, rounds=40, verify_rounds=60, out=tmp_path / str(k))
        d = search_document(o, small_check)
        docs.append((d["trajectory"], d["best"]["instance"]["hash"], d["best"]["ratio_verified"]))
    assert docs[0] == docs[1]
    o = search(small_check, budget=4, restarts=1, seed=8, rounds=40, verify_rounds=60, baseline=False)
    assert search_document(o, small_check)["trajectory"]["search"] != docs[0][0]["search"]


def test_search_beats_or_matches_its_random_phase_and_reports(small_check):
    o = search(small_check, budget=6, restarts=1, seed=0, rounds=40, verify_rounds=60)
    assert o.best.score == max(t["ratio"] for t in o.trajectory)
    assert o.verified is not None and o.verified_ratio >= o.best.ratio * (1 - 1e-9)   # more rounds: max over more
    entry = search_result(o, small_check)
    from fedcheck.documents import validate
    validate({"checks": [entry]})
    panels = {s["panel"] for s in entry["series"]}
    assert any("adversarial search" in p for p in panels)
    roles = {s["role"] for s in entry["series"]}
    assert {"measured", "baseline"} <= roles


def test_violated_bound_is_shrunk(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text(TOO_GOOD)
    out = tmp_path / "o"
    rc = main(["search", "--theorem-file", str(f), "mine.too_good", "--budget", "3", "--rounds", "30",
               "--shrink-budget", "12", "--out", str(out), "--no-report", "--restarts", "1", "--fixed-params", "-q"])
    assert rc == 1                                        # the re-verified worst instance violates the bound
    doc = json.loads((search_dir(out, "mine.too_good") / "trajectory.json").read_text())
    assert doc["best"]["verdict_verified"] == V.VIOLATED
    shrunk = doc["shrink"]
    assert shrunk is not None and shrunk["verdict_verified"] == V.VIOLATED
    big, small = doc["best"]["instance"], shrunk["instance"]
    assert small["n"] * small["m"] * small["p"] < big["n"] * big["m"] * big["p"]
    assert main(["verify", "--theorem-file", str(f), "mine.too_good", "--instance", shrunk["file"], "--no-report",
                 "-q"]) == 1


def test_only_bound_tests_are_searched(tmp_path, capsys):
    assert main(["search", "fedfw.condition29", "--budget", "3", "--out", str(tmp_path)]) == 2   # a proof
    assert "not a bound test" in capsys.readouterr().err
    assert main(["search", "fedfw.privacy", "--budget", "3", "--out", str(tmp_path)]) == 2       # a measurement
    from theorems.fedfw import condition29
    with pytest.raises(NotSearchable):
        search(condition29, budget=3)
    assert main(["search", "fedfw", "--budget", "3"]) == 2           # several checks
    assert main(["search", "theorem1", "--budget", "1"]) == 2
    assert main(["search", "theorem1", "--sets", "l1,cube"]) == 2
    assert main(["search", "theorem1", "--param-range", "nope=1:2"]) == 2
    assert main(["search", "theorem1", "--param-range", "lambda_0=2:1"]) == 2


def test_a_bound_in_expectation_is_searched_inside_its_domain(tmp_path):
    """Theorem 3 (a bound in expectation) declares no free structure: the search varies only its data,
    seeds and parameters, never the set or the number of clients."""
    from theorems.fedfw import theorem3
    out = search(theorem3, budget=3, restarts=1, rounds=100, verify_rounds=100, out=tmp_path, do_shrink=False)
    shapes = {t["instance"].split(" lambda_0")[0] for t in out.trajectory}
    assert shapes == {"n=5 m=20 p=10 l1 r=1"}
    assert out.verified.verdict == V.HOLDS


@pytest.mark.parametrize("set_name", ["l1", "l2", "box", "simplex"])
def test_moves_keep_the_start_in_the_set(theorem1, set_name):
    rng = np.random.default_rng(0)
    space = SearchSpace.for_check(theorem1, sets=(set_name,))
    c = draw_candidate(space, rng, 1)
    for _ in range(5):
        c = mutate(c, 0.8, rng, space, "test")
        assert c.instance.set.name == set_name
        assert bool(np.all(c.instance.set.contains(c.instance.start(), 1e-9)))
        lo, hi = space.params["lambda_0"]
        assert lo <= c.params["lambda_0"] <= hi
    if c.instance.p > 1:
        r = restrict(c, "dims", [0], "test")
        assert r.instance.p == 1 and bool(np.all(r.instance.set.contains(r.instance.start(), 1e-9)))
    r = restrict(c, "clients", [0], "test")
    assert r.instance.n == 1 and r.instance.A.shape[1:] == c.instance.A.shape[1:]


def test_search_space_follows_the_check(theorem1):
    s = SearchSpace.for_check(theorem1)
    assert s.loss == theorem1.evidence.experiment.family.loss and set(s.sets) == {"l1", "l2", "box", "simplex"}
    assert s.params == {"lambda_0": (0.1, 10.0)}
    assert SearchSpace.for_check(theorem1, vary_params=False).params == {}
    assert isinstance(Candidate, type)


def test_a_claim_that_builds_its_own_cases_is_searched_over_its_seeds_and_parameters(tmp_path, capsys):
    """Every bound test is searchable: a Cases claim (no instance family) is searched over the space it exposes."""
    from fedcheck.tools.search import search_seeds
    from theorems.feddualavg import lemma_c2
    found = search_seeds(lemma_c2, budget=4, seed=2)
    assert len(found["trajectory"]) == 4 and found["rerun"].startswith("fedcheck verify feddualavg.lemma_c2 --seeds ")
    assert found["best"].verdict == V.HOLDS
    code = main(["search", "feddualavg.lemma_c2", "--budget", "4", "--out", str(tmp_path), "-q"])
    assert code == 0 and "searched its seeds and parameters" in capsys.readouterr().out
    doc = json.loads((search_dir(tmp_path, "feddualavg.lemma_c2") / "trajectory.json").read_text())
    assert doc["schema"] == "fedcheck.search/1" and len(doc["trajectory"]["search"]) == 4


# ---- CMA-ES: the default method ------------------------------------------------------------------------
PLANTED = textwrap.dedent('''
    import sympy as sp
    from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Rounds
    from fedcheck import algorithms as engine
    from fedcheck.problems.instances import RandomFamily
    from fedcheck.symbols import D, L, t

    # half the certified worst case of Frank-Wolfe (PEP, L = D = 1, after T = 1..6 rounds): false, but only for
    # instances near the worst case (random draws of the family rarely reach it)
    W = (0.5, 0.31262, 0.22785, 0.17803, 0.14621, 0.12424)
    pieces = [(0.5 * w, t <= T + 2) for T, w in enumerate(W[:-1])] + [(0.5 * W[-1], True)]
    planted = Claim(
        id="mine.fw_too_good", paper=Paper(key="mine", title="mine", authors="me"), reference="a false conjecture",
        statement="F(x^t) - F* <= 0.5 L D^2 w(t-1)",
        evidence=BoundTest(Rounds(family=RandomFamily(loss="least_squares", set="l2", n=1, m=3, p=3),
                                  algorithm=engine.frank_wolfe, schedules={"eta": 2 / (t + 1)}, seeds=4, rounds=6,
                                  valid_from=2),
                           bounds=(Bound("0.5 x PEP", L * D**2 * sp.Piecewise(*pieces)),)),
        domain=Domain(fixed={"loss": "least_squares", "n": 1, "set": "l2"}, free={"x0": None}))
''')


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    from fedcheck.catalog.registry import load_user_file
    f = tmp_path_factory.mktemp("planted") / "planted.py"
    f.write_text(PLANTED)
    return f, load_user_file(f).planted


def _run(claim, method, budget, seed, **kw):
    return search(claim, budget=budget, seed=seed, rounds=6, verify_rounds=6, baseline=False, do_shrink=False,
                  method=method, **kw)


def test_cma_is_deterministic_for_a_seed(planted):
    _, claim = planted
    a, b = _run(claim, "cma", 24, 5), _run(claim, "cma", 24, 5)
    assert a.trajectory == b.trajectory
    assert a.best.instance.content_hash() == b.best.instance.content_hash()
    assert np.array_equal(a.best.instance.start(), b.best.instance.start()) and a.best.params == b.best.params
    assert any(t["phase"].startswith("cma") for t in a.trajectory)
    assert _run(claim, "cma", 24, 6).trajectory != a.trajectory


@pytest.mark.parametrize("method,budget", [("cma", 2), ("cma", 13), ("cma", 50), ("random", 7), ("perturb", 9)])
def test_the_budget_is_the_number_of_claim_evaluations(planted, monkeypatch, method, budget):
    import fedcheck.tools.search as S
    _, claim = planted
    seen = []
    real = S._evaluate_chunk

    def counting(check, chunk, config):
        seen.extend(chunk)
        return real(check, chunk, config)
    monkeypatch.setattr(S, "_evaluate_chunk", counting)
    out = _run(claim, method, budget, 0)
    assert len(out.trajectory) == budget and len(seen) == budget
    assert out.settings["method"] == method


def test_cma_stays_in_the_domain(theorem1):
    """Every coordinate is clipped into its range: even far outside cma's bounds, a decoded candidate lies in the
    claim's domain, its start in the set, its parameters in their ranges, and its discrete structure is the
    start's."""
    from fedcheck.tools.search import InstanceEncoding, domain_reason
    from tests.test_protocol import _one_client_fw
    for claim, sets in ((theorem1, ("l1", "l2", "box", "simplex")), (_one_client_fw(), ("simplex",))):
        space = SearchSpace.for_check(claim)
        for k in range(4):
            start = draw_candidate(space, np.random.default_rng(k), 1)
            enc = InstanceEncoding(start, space, np.random.SeedSequence(k))
            lo, hi = (np.asarray(v) for v in enc.coords.bounds())
            same = enc.decode(np.zeros(enc.dim), "zero")
            assert same.instance.content_hash() == start.instance.content_hash() and same.params == start.params
            for x in (lo, hi, 1e3 * np.ones(enc.dim), -1e3 * np.ones(enc.dim),
                      np.random.default_rng(k).uniform(lo, hi)):
                c = enc.decode(x, "t")
                assert domain_reason(claim, c) is None
                inst = c.instance
                assert (inst.n, inst.m, inst.p, inst.set.name) == (start.instance.n, start.instance.m,
                                                                  start.instance.p, start.instance.set.name)
                assert inst.set.name in sets and space.radius[0] <= float(inst.set.radius) <= space.radius[1]
                assert bool(np.all(inst.set.contains(inst.start(), 1e-9)))
                for name, (plo, phi) in space.params.items():
                    assert plo <= c.params[name] <= phi
    # and the whole search: only n = 1 on the simplex
    out = search(_one_client_fw(), budget=12, seed=1, rounds=40, verify_rounds=40, baseline=False, do_shrink=False)
    assert all(t["instance"].startswith("n=1 ") and " simplex " in t["instance"] for t in out.trajectory)


def test_an_out_of_domain_candidate_is_rejected_never_run(theorem1, monkeypatch):
    import fedcheck.tools.search as S
    from tests.test_protocol import _one_client_fw
    claim = _one_client_fw()
    bad = Candidate(RandomFamily(set="simplex", n=2, m=4, p=3).draw(0), {}, "outside")       # n = 2
    good = Candidate(RandomFamily(set="simplex", n=1, m=4, p=3).draw(0), {}, "inside")
    ran = []
    real = S._evaluate_chunk
    monkeypatch.setattr(S, "_evaluate_chunk", lambda c, ch, config: (ran.extend(ch), real(c, ch, config))[1])
    ratios = S.evaluate_batch(claim, [bad, good], S.EvalConfig(rounds=20))
    assert ran == [good] and np.isnan(ratios[0]) and np.isfinite(ratios[1])
    assert bad.verdict == V.INCONCLUSIVE and bad.reason.startswith("rejected (never run)") and bad.score == -np.inf


def test_cma_finds_a_planted_violation_and_it_is_reverified(planted, tmp_path):
    f, claim = planted
    out = tmp_path / "o"
    rc = main(["search", "--theorem-file", str(f), "mine.fw_too_good", "--budget", "40", "--seed", "0",
               "--no-shrink", "--out", str(out), "--no-report", "-q"])
    assert rc == 1
    doc = json.loads((search_dir(out, "mine.fw_too_good") / "trajectory.json").read_text())
    assert doc["settings"]["method"] == "cma" and len(doc["trajectory"]["search"]) == 40
    assert doc["best"]["verdict_verified"] == V.VIOLATED and doc["best"]["ratio_verified"] > 1
    # the family's own draws do not find it at this budget
    assert doc["baseline_best"]["ratio"] < 1
    assert main(["verify", "--theorem-file", str(f), "mine.fw_too_good", "--instance", doc["best"]["file"],
                 "--no-report", "-q", "--out", str(tmp_path / "v")]) == 1


def test_cma_beats_or_matches_random_draws_on_a_planted_problem(planted):
    """Equal budgets, the same seeds: the median of the best ratio over seeds (no timing)."""
    _, claim = planted
    seeds = range(3)
    cma = [_run(claim, "cma", 100, s).best.ratio for s in seeds]
    rnd = [_run(claim, "random", 100, s).best.ratio for s in seeds]
    assert np.median(cma) >= np.median(rnd)
    assert sum(r > 1 for r in cma) >= sum(r > 1 for r in rnd)


def test_methods_are_selectable_from_the_command_line(tmp_path, capsys):
    for m in ("random", "perturb", "cma"):
        rc = main(["search", "theorem1", "--budget", "3", "--method", m, "--out", str(tmp_path / m), "--no-report",
                   "--no-shrink"] + QUICK)
        assert rc == 0
        doc = json.loads((search_dir(tmp_path / m, "fedfw.theorem1") / "trajectory.json").read_text())
        assert doc["settings"]["method"] == m and len(doc["trajectory"]["search"]) == 3
    capsys.readouterr()
    assert main(["search", "theorem1", "--method", "nelder-mead", "--out", str(tmp_path / "x")]) == 2
    assert "invalid choice" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_seed_search_with_cma():
    """A claim that builds its own cases: random seeds, then CMA-ES over its parameters, inside their range."""
    from fedcheck.tools.search import search_seeds
    from theorems.feddualavg import theorem_4_1
    a = search_seeds(theorem_4_1, budget=4, seed=3, method="cma")
    assert len(a["trajectory"]) == 4 and a["method"] == "cma"
    assert [t["origin"].split(" #")[0].split(" gen")[0] for t in a["trajectory"]] == ["random seed"] + ["cma"] * 3
    assert all(0.05 <= p["c_eta"] <= 5.0 for p in [a["best"].params])
    assert search_seeds(theorem_4_1, budget=4, seed=3, method="cma")["trajectory"] == a["trajectory"]
