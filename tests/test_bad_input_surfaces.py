"""Bad input on the newer surfaces: network families, declared sizes, complex values, the OS's refusals and shared
output folders.  Each case is the user's mistake: exit 2 with one line naming it (never a verdict computed from
impossible input, never an internal error), nothing written."""
import re
from pathlib import Path

import pytest

from fedcheck.cli import main
from fedcheck.core.errors import BadInput

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
MLP_EXAMPLE = (ROOT / "examples" / "mlp_claims.py").read_text()
FAMILY_LINE = re.compile(r"SMALL_MLP = NetworkFamily\(.*?\)\n", re.S)


def _run(capsys, argv):
    code = main(argv + ["-q"])
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def _one_line_exit_2(capsys, argv, message, out=None):
    code, err = _run(capsys, argv)
    assert code == 2, err
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert message in err[0], err[0]
    if out is not None:
        assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))
    return err[0]


# -- network families ----------------------------------------------------------------------------------------------
NETWORK_CASES = [
    ("radius=-1.0", "radius must be a finite number > 0"),
    ("radius=0.0", "radius must be a finite number > 0"),
    ("radius=float('nan')", "radius must be a finite number > 0"),
    ("samples=0", "samples must be an integer >= 1"),
    ("classes=1", "classes must be an integer >= 2"),
    ("hidden=(-3,)", "hidden must be a tuple of integers >= 1"),
    ("hidden=(0,)", "hidden must be a tuple of integers >= 1"),
    ("n=0", "n must be an integer >= 1"),
    ("features=0", "features must be an integer >= 1"),
    ("activation='swish'", "activation must be one of 'tanh', 'relu', not 'swish'"),
    ("hidden=(100000, 100000)", "GiB of memory"),
    ("samples=10**9", "GiB of memory"),
]


def _family_file(tmp_path, fields: str) -> str:
    base = dict(data="'synthetic'", model="'mlp'", hidden="(8,)", activation="'tanh'", n="4", features="10",
                classes="3", samples="20", set="'l2'", radius="2.0")
    for item in fields.split(";"):
        k, v = item.split("=", 1)
        base[k.strip()] = v
    text = FAMILY_LINE.sub("SMALL_MLP = NetworkFamily(" + ", ".join(f"{k}={v}" for k, v in base.items()) + ")\n",
                           MLP_EXAMPLE)
    f = tmp_path / "mine.py"
    f.write_text(text)
    return str(f)


@pytest.mark.parametrize("fields, message", NETWORK_CASES, ids=[c[0] for c in NETWORK_CASES])
def test_network_family_fields_are_checked_at_load(tmp_path, capsys, fields, message):
    out = tmp_path / "out"
    line = _one_line_exit_2(capsys, ["verify", "--theorem-file", _family_file(tmp_path, fields), "mlpdemo",
                                     "--out", str(out)], message, out)
    assert "NetworkFamily" in line


@pytest.mark.parametrize("fields, message", NETWORK_CASES, ids=[c[0] for c in NETWORK_CASES])
def test_network_family_fields_through_the_api_are_bad_input(fields, message):
    from fedcheck.problems import NetworkFamily
    kw = eval(f"dict({fields})")
    with pytest.raises(BadInput, match=re.escape(message)) as e:
        NetworkFamily(**kw)
    assert isinstance(e.value, ValueError)          # what the constructor raised before


def test_network_family_client_without_data_is_refused_at_draw():
    from fedcheck.problems import NetworkFamily
    with pytest.raises(BadInput, match="client 1797 of 2000 gets no training sample"):
        NetworkFamily(data="digits", n=2000).draw(0)


# -- real numbers only -----------------------------------------------------------------------------------------------
CLAIM = '''
import sympy as sp
from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
from fedcheck import algorithms as engine
from fedcheck.problems.instances import RandomFamily
from fedcheck.symbols import D, L, lambda_0, t
c = Claim(id="mine.x", paper=Paper(key="mine", title="x", authors="y"), reference="r", statement="s",
          evidence=BoundTest(Rounds(family=RandomFamily(n=2, m=3, p=2), algorithm=engine.fedfw,
                                    schedules={{"eta": {eta}, "lam": lambda_0 * sp.sqrt(t + 1)}}, rounds={rounds}
                                    {more}),
                             bounds=(Bound("b", {bound}),)), params={{"lambda_0": 1.0}})
'''


def _claim_file(tmp_path, eta="2 / (t + 1)", bound="10 * L * D**2", rounds="10", more="", name="user.py") -> str:
    f = tmp_path / name
    f.write_text(CLAIM.format(eta=eta, bound=bound, rounds=rounds, more=more))
    return str(f)


@pytest.mark.parametrize("where, kw", [("schedule", {"eta": "sp.sqrt(-1 / L) / t"}),
                                       ("bound", {"bound": "10 * L * D**2 * sp.sqrt(-t)"})])
def test_a_complex_schedule_or_bound_is_refused_not_read_as_its_real_part(tmp_path, capsys, where, kw):
    out = tmp_path / "out"
    line = _one_line_exit_2(capsys, ["verify", "--theorem-file", _claim_file(tmp_path, **kw), "mine.x",
                                     "--out", str(out)], "is not a real number at", out)
    assert "t=1" in line and where in line


def test_evaluation_names_the_expression_and_the_point():
    import numpy as np
    import sympy as sp

    from fedcheck.core.schedules import evaluate_expr, evaluate_schedule
    from fedcheck.symbols import L, T, t
    with pytest.raises(BadInput, match=r"is not a real number at L=2, t=3 "):
        evaluate_schedule(sp.Piecewise((1 / t, t <= 2), (sp.sqrt(-L) / t, True)), np.arange(1, 5), {"L": 2.0}, 1)
    with pytest.raises(BadInput, match=r"I\*L\*sqrt\(T\) is not a real number at L=2, T=1"):
        evaluate_expr(sp.sqrt(-T) * L, {"T": np.array([1.0, 2.0]), "L": 2.0})
    assert evaluate_expr(sp.sqrt(T) * L, {"T": np.array([1.0, 4.0]), "L": 2.0}).tolist() == [2.0, 4.0]


# -- concurrent runs on one output folder ----------------------------------------------------------------------------
RACER = r'''
import sys, tempfile
from pathlib import Path
from fedcheck.core.outputs import Outputs
root, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
for k in range(count):
    o = Outputs(root).adds_to("runs").replaces("results.json")
    st = o.stage()
    (st / "r.json").write_text(f"{tag} {k}")
    (st / "res.json").write_text(f"results of {tag} {k}")
    o.publish({"runs/20260101T000000Z-same.json": st / "r.json"}, new=True)
    o.publish({"results.json": st / "res.json"})
    o.discard()
'''


def test_two_runs_on_one_folder_never_lose_an_entry_of_the_record(tmp_path):
    """Two processes publish into one --out at the same time, each a new runs/ file of the same name and the shared
    results.json, many times: every file is recorded with its content, none is lost or overwritten."""
    import json
    import os
    import subprocess
    import sys

    from fedcheck.core.outputs import MANIFEST, Outputs, _sha
    script = tmp_path / "racer.py"
    script.write_text(RACER)
    root = tmp_path / "out"
    count = 60
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, str(script), str(root), tag, str(count)], env=env,
                              stderr=subprocess.PIPE, text=True) for tag in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    record = json.loads((root / MANIFEST).read_text())["paths"]
    runs = sorted((root / "runs").iterdir())
    assert len(runs) == 2 * count
    assert sorted(p.read_text() for p in runs) == sorted(f"{t} {k}" for t in "ab" for k in range(count))
    for p in [*runs, root / "results.json"]:
        rel = p.relative_to(root).as_posix()
        assert record.get(rel, {}).get("sha256") == _sha(p), rel
    Outputs(root).adds_to("runs").replaces("results.json").check()       # and the next run is not refused


# -- latex= symbol maps ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ['"foo bar"', "object()"])
def test_a_latex_symbol_map_that_is_not_sympy_is_refused_at_load(tmp_path, capsys, value):
    bound = f'10 * L * D**2, latex="10 L D^2", latex_symbols={{"L": {value}, "D": D}}'
    out = tmp_path / "out"
    line = _one_line_exit_2(capsys, ["verify", "--theorem-file", _claim_file(tmp_path, bound=bound), "mine.x",
                                     "--out", str(out)], "latex_symbols['L']", out)
    assert "is not a SymPy expression" in line


# -- sizes declared in a claim ---------------------------------------------------------------------------------------
def _horizons_file(tmp_path, horizons: str) -> str:
    f = tmp_path / "mine.py"
    f.write_text(MLP_EXAMPLE.replace("horizons=(5, 10, 20, 40)", f"horizons={horizons}"))
    return str(f)


@pytest.mark.parametrize("case", ["rounds", "seeds", "horizons"])
def test_declared_sizes_get_the_memory_estimate_of_the_options(tmp_path, capsys, case):
    out = tmp_path / "out"
    if case == "horizons":
        argv = ["verify", "--theorem-file", _horizons_file(tmp_path, "(10**12,)"), "mlpdemo"]
    else:
        f = _claim_file(tmp_path, rounds="10**12" if case == "rounds" else "10",
                        more=", seeds=10**9" if case == "seeds" else "")
        argv = ["verify", "--theorem-file", f, "mine.x"]
    line = _one_line_exit_2(capsys, argv + ["--out", str(out)], "GiB of memory", out)
    assert {"rounds": "rounds=1000000000000", "seeds": "seeds=1000000000",
            "horizons": "horizons up to 1000000000000"}[case] in line


# -- the OS's refusals -----------------------------------------------------------------------------------------------
LONG = "a" * 300


def _os_case(tp, case):
    import os
    out = tp / "out"
    return {
        "--out name too long": (["verify", "theorem1", "--out", str(tp / LONG)], "File name too long"),
        "--json name too long": (["verify", "theorem1", "--out", str(out), "--json", str(tp / f"{LONG}.json")],
                                 "File name too long"),
        "--table name too long": (["verify", "theorem1", "--out", str(out), "--table", str(tp / f"{LONG}.csv")],
                                  "File name too long"),
        "--table name too long in a new folder": (["verify", "theorem1", "--out", str(out), "--table",
                                                   str(tp / LONG / "t.csv")], "File name too long"),
        "--theorem-file name too long": (["verify", "--theorem-file", str(tp / f"{LONG}.py"), "x", "--out", str(out)],
                                         "File name too long"),
        "--out not UTF-8": (["verify", "theorem1", "--out", str(tp) + "/" + os.fsdecode(b"x\xff")], "not valid UTF-8"),
        "--json not UTF-8": (["verify", "theorem1", "--out", str(out), "--json",
                              str(tp) + "/" + os.fsdecode(b"r\xff.json")], "not valid UTF-8"),
        "--table on /proc": (["verify", "theorem1", "--out", str(out), "--table", "/proc/x.csv"],
                             "no file can be created in /proc"),
        "--json on /proc": (["verify", "theorem1", "--out", str(out), "--json", "/proc/x.json"],
                            "no file can be created in /proc"),
    }[case]


OS_CASES = ["--out name too long", "--json name too long", "--table name too long",
            "--table name too long in a new folder", "--theorem-file name too long", "--out not UTF-8",
            "--json not UTF-8", "--table on /proc", "--json on /proc"]


@pytest.mark.parametrize("case", OS_CASES)
def test_paths_the_os_refuses_are_bad_input_before_computing(tmp_path, capsys, case):
    argv, message = _os_case(tmp_path, case)
    _one_line_exit_2(capsys, argv + ["--rounds", "5", "--seeds", "1"], message)
    assert sorted(p.name for p in tmp_path.iterdir()) == []          # nothing written anywhere


# -- property tests: every field of the public families and declarations ---------------------------------------------
# Each draws the fields from a mix of valid (small) values and values outside the field's domain.  A declaration
# either is refused when it is made -- one line, as ``--theorem-file`` reports it (exit 2) -- or runs: a family draws
# an instance with finite data, a set projects into itself, a claim's verify ends with exit 0-3 or BadInput (exit 2);
# anything else would be fedcheck's internal error (exit 4).
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
WRONG = st.sampled_from([0, -1, -2.5, float("nan"), float("inf"), -float("inf"), True, None, "x", 10**9, 1.5, (),
                         (0,), (-3,), [1, "a"]])


def _ints(lo, hi):
    return st.integers(lo, hi) | WRONG


def _reals(lo, hi):
    return st.floats(lo, hi, allow_nan=False) | WRONG


def _refused_or(make, then):
    """``make()`` refused with one line (BadInput, or any exception for what a theorem file's load reports), or
    ``then(made)``, which may itself refuse with BadInput only."""
    try:
        made = make()
    except (BadInput, TypeError, ValueError) as e:      # a theorem file's load: exit 2 with this one line
        assert "\n" not in str(e) and str(e), repr(e)
        event(f"refused when made ({type(e).__name__})")
        return
    try:
        then(made)
        event("ran")
    except BadInput as e:
        assert "\n" not in str(e) and str(e), repr(e)
        event("refused at run (BadInput)")


def _finite_instance(inst):
    import numpy as np
    for a in (inst.A, inst.b, inst.start()):
        assert np.all(np.isfinite(np.asarray(a, dtype=float)))
    assert inst.n >= 1 and inst.p >= 1
    assert bool(np.all(inst.set.contains(inst.start()[None], 1e-9)))


@PROPERTY
@given(st.fixed_dictionaries({}, optional={
    "data": st.sampled_from(["synthetic", "digits", "mnist", 3]), "model": st.sampled_from(["mlp", "cnn", "rnn"]),
    "iid": st.booleans() | WRONG, "n": _ints(1, 4), "hidden": st.lists(_ints(1, 6), max_size=2).map(tuple) | WRONG,
    "activation": st.sampled_from(["tanh", "relu", "swish", ""]), "set": st.sampled_from(["l1", "l2", "linf"]),
    "radius": _reals(0.1, 20), "blocks": st.sampled_from(["whole", "tensor", "layer"]),
    "samples": st.none() | _ints(1, 30), "features": _ints(1, 8), "classes": _ints(1, 4),
    "labels_per_client": _ints(1, 4), "alpha": _reals(0, 2), "beta": _reals(0, 2), "channels": st.just((2,)) | WRONG,
    "kernel": _ints(1, 4), "pool": _ints(1, 3), "pooling": st.sampled_from(["max", "avg", "min"]),
    "test_fraction": _reals(0, 0.9)}))
def test_property_network_family_fields(fields):
    import numpy as np

    from fedcheck.problems import NetworkFamily
    fields = {k: v for k, v in fields.items() if not (k == "samples" and v is None and fields.get("data") != "digits")}
    fields.setdefault("samples", 10)
    fields.setdefault("features", 5)
    fields.setdefault("hidden", (3,))

    def drawn(fam):
        inst = fam.draw(0)
        assert np.all(np.isfinite(inst.A)) and np.all(np.isfinite(inst.x0)) and inst.p == fam.parameters()
        assert float(np.max(inst.w.sum(-1))) == pytest.approx(1.0) and float(np.min(inst.w.sum(-1))) > 0.99
        assert np.all(np.isfinite(inst.make_loss().value(np.broadcast_to(inst.x0, (inst.n, inst.p)))))
    _refused_or(lambda: NetworkFamily(**fields), drawn)


@PROPERTY
@given(st.fixed_dictionaries({}, optional={
    "loss": st.sampled_from(["least_squares", "logistic", "cubic", 1]), "set": st.sampled_from(["l1", "l2", "box",
                                                                                              "simplex", "ball"]),
    "n": _ints(1, 4), "m": _ints(1, 6), "p": _ints(1, 5), "radius": _reals(0.01, 10), "heterogeneity": _reals(0, 3),
    "noise": _reals(0, 1), "outside": _reals(0.1, 4)}))
def test_property_random_family_fields(fields):
    from fedcheck.problems.instances import RandomFamily
    _refused_or(lambda: RandomFamily(**fields), lambda fam: _finite_instance(fam.draw(0)))


@PROPERTY
@given(st.sampled_from(["l1", "l2", "box", "simplex", "nuclear", "l3"]), _reals(0, 10), _ints(1, 6))
def test_property_sets(kind, radius, dim):
    import numpy as np

    from fedcheck.problems.sets import NuclearBall, ProductSet, make_set

    def make():
        if kind == "nuclear":
            return NuclearBall(radius, (dim, 2) if isinstance(dim, int) and not isinstance(dim, bool) else dim)
        return ProductSet((make_set(kind, radius, dim), make_set("l2", 1.0, 2)))

    def works(S):
        x = np.random.default_rng(0).standard_normal((3, S.dim)) * 5
        assert np.all(S.contains(S.project(x), 1e-7)) and np.all(np.isfinite(S.lmo(x)))
    _refused_or(make, works)


@pytest.fixture(scope="module")
def _gd():
    from fedcheck.algorithms import federated

    def gd_round(X, x, ctx, *, eta):
        Y = ctx.project(ctx.broadcast(x) - ctx.col(eta) * ctx.grad(ctx.broadcast(x)))
        return Y, Y.mean(1)
    return federated(gd_round, name="GD")


_FAM = None


def _small_family():
    global _FAM
    if _FAM is None:
        from fedcheck.problems.instances import RandomFamily
        _FAM = RandomFamily(loss="least_squares", set="l2", n=2, m=3, p=2, heterogeneity=0.0, noise=0.0, outside=0.5)
    return _FAM


def _verified(claim_of):
    import fedcheck

    def run(claim):
        res = fedcheck.verify(claim, rounds=None)
        assert res.exit_code in (0, 1, 2, 3), res
    _refused_or(claim_of, run)


@PROPERTY
@given(st.fixed_dictionaries({}, optional={
    "rounds": _ints(1, 12), "seeds": _ints(1, 2), "replicates": _ints(1, 2), "valid_from": _ints(1, 3),
    "full_rounds": st.none() | _ints(1, 12), "dense_until": _ints(1, 20), "per_decade": _ints(1, 10)}))
def test_property_rounds_declarations(_gd, fields):
    from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
    from fedcheck.symbols import D, L, t
    fields.setdefault("rounds", 5)
    fields.setdefault("seeds", 1)
    _verified(lambda: Claim(id="prop.rounds", paper=Paper(key="prop", title="t", authors="a"), reference="r",
                            statement="s", evidence=BoundTest(Rounds(family=_small_family(), algorithm=_gd,
                                                                     schedules={"eta": 1 / L}, **fields),
                                                              bounds=(Bound("b", L * D**2 / t),))))


@PROPERTY
@given(st.fixed_dictionaries({}, optional={
    "seeds": _ints(1, 2), "horizons": st.lists(_ints(1, 12), min_size=0, max_size=3).map(tuple) | WRONG,
    "run_seeds": _ints(1, 2), "full_horizons": st.none() | st.just((3, 6)) | WRONG}))
def test_property_horizon_case_declarations(_gd, fields):
    from fedcheck import Bound, BoundTest, Claim, HorizonCase, Horizons, Paper
    from fedcheck.symbols import D, L, T
    fields.setdefault("seeds", 1)
    _verified(lambda: Claim(id="prop.horizons", paper=Paper(key="prop", title="t", authors="a"), reference="r",
                            statement="s", evidence=BoundTest(
                                Horizons(algorithm=_gd, schedules={"eta": 1 / (L * T)},
                                         cases=(HorizonCase("c", _small_family(), **fields),)),
                                bounds=(Bound("b", 10 * L * D**2, metric="gap"),))))


# -- --json and --table inside --out ---------------------------------------------------------------------------------
def _verify_claim(tmp_path, out, *extra):
    f = tmp_path / "user.py"
    if not f.exists():
        _claim_file(tmp_path)
    return main(["verify", "--theorem-file", str(f), "mine.x", "--out", str(out), "-q", *extra])


def test_json_inside_out_is_recorded_and_the_next_run_is_not_refused(tmp_path, capsys):
    import json

    from fedcheck.core.outputs import MANIFEST, _sha
    out = tmp_path / "D"
    for _ in range(2):
        code = _verify_claim(tmp_path, out, "--json", str(out / "results.json"), "--table", str(out / "t.csv"))
        assert code in (0, 1, 3), capsys.readouterr().err
    record = json.loads((out / MANIFEST).read_text())["paths"]
    for name in ("results.json", "t.csv"):
        assert record[name]["sha256"] == _sha(out / name)


def test_table_inside_out_never_replaces_a_users_file(tmp_path, capsys):
    out = tmp_path / "D"
    out.mkdir()
    (out / "notes.csv").write_text("mine")
    _one_line_exit_2(capsys, ["verify", "--theorem-file", _claim_file(tmp_path), "mine.x", "--out", str(out),
                              "--table", str(out / "notes.csv")], "was not written by fedcheck")
    assert (out / "notes.csv").read_text() == "mine" and sorted(p.name for p in out.iterdir()) == ["notes.csv"]


# -- the API and the pytest plugin -----------------------------------------------------------------------------------
def test_the_api_accepts_numpy_integers(tmp_path):
    import numpy as np

    import fedcheck
    from fedcheck.catalog.registry import load_user_file
    claim = load_user_file(_claim_file(tmp_path)).c
    res = fedcheck.verify(claim, rounds=np.int64(10), seeds=np.int64(1))
    assert res.exit_code in (0, 1, 3)


@pytest.mark.parametrize("seeds", [10**11, "100000000000", "0-99999999999"])
def test_a_huge_seed_count_is_refused_before_any_seed_list_is_built(tmp_path, capsys, seeds):
    import fedcheck
    from fedcheck.catalog.registry import load_user_file
    claim = load_user_file(_claim_file(tmp_path)).c
    with pytest.raises(BadInput, match="GiB of memory"):
        fedcheck.verify(claim, seeds=seeds, rounds=10)
    _one_line_exit_2(capsys, ["verify", "--theorem-file", _claim_file(tmp_path), "mine.x", "--no-report",
                              "--seeds", str(seeds)], "GiB of memory")


PLUGIN_TEST = '''
import pytest
from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
from fedcheck.algorithms import federated
from fedcheck.problems import RandomFamily
from fedcheck.symbols import D, L, t


def broken(X, x, ctx, *, eta):
    raise RuntimeError("my round function is broken")


C = Claim(id="mine.broken", paper=Paper(key="mine", title="t", authors="me"), reference="r", statement="s",
          evidence=BoundTest(Rounds(family=RandomFamily(n=2, m=3, p=2), algorithm=federated(broken),
                                    schedules={"eta": 1 / L}, seeds=1, rounds=5), bounds=(Bound("b", L * D**2 / t),)),
          expected="holds")


@pytest.mark.fedcheck(C, expect=EXPECT)
def test_claim():
    pass
'''


@pytest.mark.parametrize("expect", [False, True])
def test_the_plugins_failure_for_a_users_error_is_one_line_in_every_mode(pytester, expect):
    pytester.makepyfile(PLUGIN_TEST.replace("EXPECT", str(expect)))
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    r.assert_outcomes(failed=1)
    text = r.stdout.str()
    # the failure's own text (pytest's short summary repeats it on a "FAILED ..." line, cut to the terminal's width)
    lines = [ln for ln in text.splitlines() if "my round function is broken" in ln and not ln.startswith("FAILED ")]
    assert len(lines) == 1 and "error in your" in lines[0], text
    assert "Traceback" not in text and "fedcheck/core" not in text, text


def test_a_value_numpy_returns_as_nan_but_that_is_not_real_is_refused():
    """numpy gives NaN for sqrt(2 - t) at t = 3; the value is i, not 'undefined': the user's error, naming the point.
    A NaN that stays NaN on complex numbers (0 * log 0) is left to the judge (inconclusive)."""
    import numpy as np
    import sympy as sp
    from fedcheck.core.schedules import evaluate_expr
    t = sp.Symbol("t", positive=True)
    with pytest.raises(BadInput, match=r"sqrt\(2 - t\) is not a real number at t=3"):
        evaluate_expr(sp.sqrt(2 - t), {"t": np.array([1.0, 3.0])})
    assert np.isnan(evaluate_expr((t - 1) * sp.log(t - 1), {"t": np.array([1.0])})).all()   # 0 * (-inf)
