"""Declarations checked when a user's file loads, and options that would change what a claim states.

Every free symbol of a bound or schedule is a parameter, a known constant or the axis variable (t over rounds, T over
horizons: a horizon's schedule may depend on T only); anything else is exit 2 at load, one line naming the claim and
the symbol, before any solve.  ``--rounds`` on a claim over horizons keeps its declared horizons <= R (a violation at a
declared horizon is never dropped) and says so.
"""
import json
import textwrap

import pytest

from fedcheck.cli import main

HEAD = '''
import sympy as sp
from fedcheck import Bound, BoundTest, Claim, HorizonCase, Horizons, Paper, Rounds
from fedcheck.algorithms import federated
from fedcheck.problems import RandomFamily
from fedcheck.symbols import D, L, T, t
P = Paper(key="mine", title="t", authors="me")
FAM = RandomFamily(loss="least_squares", set="l1", n=3, m=6, p=5)
zeta = sp.Symbol("zeta", positive=True)


def gd(X, x, ctx, *, eta):
    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))
    return Y, Y.mean(1)
'''


def _rounds(bound, schedule="1 / L", params="{}"):
    return f'''
c = Claim(id="mine.c", paper=P, reference="r", statement="s", params={params},
          evidence=BoundTest(Rounds(family=FAM, algorithm=federated(gd), schedules={{"eta": {schedule}}}, seeds=2,
                                    rounds=20), bounds=(Bound("b", {bound}),)))
'''


def _horizons(bound, schedule="1 / (L * T)", horizons="(4, 16, 64)"):
    return f'''
c = Claim(id="mine.h", paper=P, reference="r", statement="s",
          evidence=BoundTest(Horizons(algorithm=federated(gd), cases=(HorizonCase("c", FAM, horizons={horizons},
                                                                                  seeds=1),),
                                      schedules={{"eta": {schedule}}}), bounds=(Bound("b", {bound}, metric="gap"),)))
'''


def _write(tmp_path, body):
    f = tmp_path / "mine.py"
    f.write_text(textwrap.dedent(HEAD + body))
    return f


def _verify(capsys, f, *extra):
    rc = main(["verify", "--theorem-file", str(f), "mine", "--no-report", "-q", *extra])
    out, err = capsys.readouterr()
    return rc, out, err


REFUSED = {
    "unknown symbol in a bound": (_rounds("L * D**2 * zeta / (t + 1)"), "mine.c: bound 'b' uses the symbol 'zeta'"),
    "unknown symbol in a schedule": (_rounds("L * D**2 / t", schedule="zeta / L"), "schedule 'eta' uses the symbol 'zeta'"),
    "a composite problem's constant on the generic family": (_rounds("sp.Symbol('sigma') * L / t"), "symbol 'sigma'"),
    "the horizon T over rounds": (_rounds("L * D**2 / T"), "symbol 'T'"),
    "a round variable t of its own": (_rounds("L * D**2 / sp.Symbol('t')"), "other assumptions than the round"),
    "a horizon schedule in t": (_horizons("L * D**2 / T", schedule="1 / (L * t)"), "depends on the round t"),
    "a horizon bound in t": (_horizons("L * D**2 / t"), "depends on the round t"),
    "a horizon bound measuring what the runner does not": (_horizons("L * D**2 / T").replace('metric="gap"', ""),
                                                           "bound 'b' measures '', which its runner does not give"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_unresolvable_declaration_is_refused_when_the_file_loads(tmp_path, capsys, monkeypatch, case):
    monkeypatch.setenv("FEDCHECK_CACHE", str(tmp_path / "cache"))
    body, what = REFUSED[case]
    f = _write(tmp_path, body)
    rc, out, err = _verify(capsys, f)
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert what in err and "mine.py" in err, err
    cache = __import__("fedcheck.core.cache", fromlist=["info"]).info()
    assert not cache.entries.get("solutions")      # refused before any solve


def test_known_names_pass(tmp_path, capsys):
    """A parameter, a constant registered after the claim (the file is checked once it has run), the round t."""
    f = _write(tmp_path, "mu = sp.Symbol('mu', positive=True)\n"
               + _rounds("mu * sp.Symbol('kappa_x') * L * D**2 / t", params='{"mu": 1.0}')
               + "from fedcheck.problems import register_constant\n"
               + "register_constant('kappa_x', lambda ctx: 100.0)\n")
    rc, out, err = _verify(capsys, f)
    assert rc == 0, out + err


def test_the_catalog_passes_its_own_check():
    from fedcheck.catalog.registry import default_registry
    from fedcheck.experiments import check_declaration
    for c in default_registry().checks.values():
        check_declaration(c)


def test_a_claim_object_from_python_is_checked_too(tmp_path):
    import fedcheck
    ns: dict = {}
    exec(textwrap.dedent(HEAD + _rounds("L * D**2 * zeta / (t + 1)")), ns)
    with pytest.raises(fedcheck.BadInput, match="symbol 'zeta'"):
        fedcheck.verify(ns["c"])


# ---- --rounds on a claim over horizons ---------------------------------------------------------------------------
VIOLATED_AT_4 = "sp.Piecewise((0, T < 10), (100, True))"      # 0 at T = 4 (the gap is positive: violated)


def test_rounds_keeps_the_declared_horizons_below_it(tmp_path, capsys):
    """--rounds 64 once replaced the horizons (4, 16, 64) by [64]: a claim violated at T = 4 came out holds."""
    f = _write(tmp_path, _horizons(VIOLATED_AT_4))
    rc, out, err = _verify(capsys, f)
    assert rc == 1, out + err
    rc, out, err = _verify(capsys, f, "--rounds", "64", "--json", str(tmp_path / "r.json"))
    assert rc == 1, out + err                                    # T = 4 is still run: still violated
    assert "note: --rounds 64: mine.h is stated over horizons; only its declared horizons T <= 64 are run" in out
    r = json.loads((tmp_path / "r.json").read_text())["checks"][0]
    assert r["evidence"]["cases"][0]["horizons"] == [4, 16, 64]
    assert "rounds_option" in r["evidence"]
    rc, out, err = _verify(capsys, f, "--rounds", "16", "--json", str(tmp_path / "r.json"))
    r = json.loads((tmp_path / "r.json").read_text())["checks"][0]
    assert rc == 1 and r["evidence"]["cases"][0]["horizons"] == [4, 16]


def test_rounds_below_every_horizon_is_said(tmp_path, capsys):
    f = _write(tmp_path, _horizons("100 + 0 * T", horizons="(16, 64)"))
    rc, out, err = _verify(capsys, f, "--rounds", "8", "--json", str(tmp_path / "r.json"))
    assert rc == 0, out + err
    assert "none is <= 8, so it runs at T = 8 only, a horizon it does not declare" in " ".join(out.split())
    r = json.loads((tmp_path / "r.json").read_text())["checks"][0]
    assert r["evidence"]["cases"][0]["horizons"] == [8] and r["evidence"]["cases"][0]["declared_horizons"] == [16, 64]
