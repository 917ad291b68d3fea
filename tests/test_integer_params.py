"""Parameters mean what they say: an integer parameter (``Domain(params={"E": "int >= 1"})`` or an integer symbol
such as ``fedcheck.symbols.E``) takes integers only (``--param``, ``search``, the API), and a parameter a claim's
``param_grid`` sets itself is refused by ``--param`` and never searched."""
import textwrap

import pytest

from fedcheck.cli.main import main
from fedcheck.core.claim import check_range
from fedcheck.core.errors import DomainError

FILE = textwrap.dedent('''
    from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Rounds
    from fedcheck.algorithms import fedfw
    from fedcheck.problems import RandomFamily
    from fedcheck.symbols import D, E, L, t

    P = Paper(key="mine", title="integer parameters", authors="me")
    FAM = RandomFamily(loss="least_squares", set="l2", n=3, m=6, p=3, radius=1.0)


    def claim(id, **kw):
        rounds = Rounds(family=FAM, algorithm=fedfw, schedules={"eta": 1 / (L * E), "lam": 1.0}, seeds=1,
                        rounds=30, valid_from=2, **kw.pop("rounds_kw", {}))
        return Claim(id=id, paper=P, reference="r", statement="s", params={"E": 5},
                     evidence=BoundTest(rounds, bounds=(Bound("b", 100 * E * L * D**2 / t),)), expected="holds", **kw)


    by_symbol = claim("mine.by_symbol")
    declared = claim("mine.declared", domain=Domain(params={"E": "int >= 2"}))
    grid = claim("mine.grid", rounds_kw={"param_grid": ({"E": 1}, {"E": 20})})
''')


@pytest.fixture
def mine(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text(FILE)
    return str(f)


def test_ranges():
    check_range("E", 3.0, "int >= 1")
    check_range("x", 0.5, ">0")
    for value, rng in [(3.25, "int >= 1"), (0, "int >= 1"), (0.0, ">0"), (-1, ">=0"), (1.5, "int")]:
        with pytest.raises(DomainError):
            check_range("E", value, rng)


@pytest.mark.parametrize("cid, value, ok", [("mine.by_symbol", "3.25", False), ("mine.by_symbol", "3", True),
                                            ("mine.declared", "1", False), ("mine.declared", "2.5", False)])
def test_param_takes_integers_only(mine, capsys, cid, value, ok):
    rc = main(["verify", cid, "--theorem-file", mine, "--param", f"E={value}", "--no-report", "-q"])
    err = capsys.readouterr().err
    if ok:
        assert rc == 0, err
    else:       # before: E=3.25 ran
        assert rc == 2 and "E=" in err and len(err.strip().splitlines()) == 1, err


def test_the_api_takes_integers_only(mine):
    import fedcheck
    from fedcheck.core.errors import BadInput
    with pytest.raises(BadInput, match="integer"):
        fedcheck.verify("mine.by_symbol", theorem_file=mine, params={"E": 3.25}, rounds=10)


def test_a_param_its_grid_sets_is_refused_and_not_searched(mine, capsys):
    rc = main(["verify", "mine.grid", "--theorem-file", mine, "--param", "E=3.25", "--no-report", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "grid" in err, err          # before: ran E in {1, 20} and exited 0
    from fedcheck.catalog.registry import load_registry
    from fedcheck.tools.search import SearchSpace
    reg = load_registry([mine])
    assert "E" not in SearchSpace.for_check(reg.checks["mine.grid"]).params
    assert "E" in SearchSpace.for_check(reg.checks["mine.by_symbol"]).params


def test_search_draws_integers(mine, tmp_path):
    from fedcheck.catalog.registry import load_registry
    from fedcheck.tools.search import search
    reg = load_registry([mine])
    o = search(reg.checks["mine.by_symbol"], budget=6, restarts=1, rounds=15, verify_rounds=20, do_shrink=False,
               baseline=False, use_cache=False)
    values = [float(part.split("=")[1]) for step in o.trajectory for part in step["instance"].split()
              if part.startswith("E=")]
    assert values and all(v == int(v) for v in values), values
    assert float(o.best.params["E"]).is_integer()


def test_a_rerun_prints_an_integer_value_as_an_integer():
    """search's rerun command: ``--param E=3``, not ``E=3.0``; other values exactly (repr of the float)."""
    from fedcheck.tools.search import _param_args
    assert _param_args({"E": 3.0, "lambda_0": 0.1 + 0.2}) == f" --param E=3 --param lambda_0={0.1 + 0.2!r}"
