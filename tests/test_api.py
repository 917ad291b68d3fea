"""The Python API (``fedcheck.verify`` -> ``Results``), the tidy table and ``verify --table``, run copies."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedcheck
from fedcheck.api import TABLE_COLUMNS, Results, to_frame
from fedcheck.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
FEDPROX = ROOT / "examples" / "fedprox_claims.py"


@pytest.fixture(scope="module")
def t1():
    return fedcheck.verify("theorem1", seeds=2, rounds=150)


@pytest.fixture(scope="module")
def mixed():
    """A round-axis user claim refuted, a horizon claim and a cases (point) claim."""
    return fedcheck.verify(str(FEDPROX), "fedfw.theorem2", "lemma2", seeds=1, rounds=120)


def test_import_stays_light():
    code = "import sys, fedcheck; print(sorted(m for m in ('numpy', 'pandas', 'sympy', 'fedcheck.api') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
    assert fedcheck.verify.__module__ == "fedcheck.api" and fedcheck.Results is Results


def test_runconfig_takes_a_count():
    assert fedcheck.RunConfig(seeds=2).seeds == [0, 1]


def test_verify_by_alias_id_paper_claim_and_file(t1):
    assert t1.ids == ["fedfw.theorem1"] and t1.verdicts == {"fedfw.theorem1": "holds"}
    assert t1["theorem1"] is t1["fedfw.theorem1"] is t1[0] and list(t1) == [t1[0]]
    assert isinstance(t1[0], fedcheck.Result) and len(t1[0].instances) == 2
    assert t1.provenance["command"] == "fedcheck verify fedfw.theorem1 --seeds 0,1 --rounds 150"
    from theorems.fedfw import theorem1
    by_claim = fedcheck.verify(theorem1, seeds=[0, 1], rounds=150)
    assert by_claim[0].max_ratio == t1[0].max_ratio            # same seeds, same numbers
    from_file = fedcheck.verify(theorem_file=str(FEDPROX), seeds=1, rounds=100)
    assert from_file.verdicts == {"mine.fedprox_gd_rate": "holds", "mine.fedprox_no_drift": "violated"}
    assert from_file.exit_code == 1
    by_paper = fedcheck.verify("mine", theorem_file=FEDPROX, seeds=1, rounds=100)
    assert by_paper.ids == from_file.ids


def test_short_repr_and_html_card(t1, mixed):
    for res in (t1, mixed):
        text = repr(res)
        assert len(text.splitlines()) == len(res) + 1
        assert all(len(line) < 200 for line in text.splitlines()) and "[" not in text
        for r in res:
            assert len(repr(r)) < 200 and r.id in repr(r)
    assert re.search(r"\n  mine\.fedprox_no_drift  violated +max measured/bound ", repr(mixed))
    assert all("max measured/bound" in line for line in repr(mixed).splitlines()[1:])   # a long headline never hides it
    html = t1._repr_html_()         # the report's card: the verdict and the main figure, inline
    assert "fedcheck-card" in html and ">holds<" in html and ("<svg" in html or "<img" in html)
    assert "<script" not in html
    html = mixed["mine.fedprox_no_drift"]._repr_html_()
    assert ">violated<" in html and ("<svg" in html or "<img" in html)
    assert mixed._repr_html_().count("fedcheck-card") == 4


def test_the_card_shows_headline_readings_rate_and_feasibility(t1, mixed):
    import html as _h
    d = t1[0].to_dict()
    card = t1._repr_html_()
    for name, reading in d["readings"].items():       # every reading, paper or analysis, with its verdict
        assert _h.escape(name) in card
    assert "fedcheck-readings" in card and ">paper<" in card
    assert "rate: fitted" in card and "vs claimed -0.5" in card        # Theorem 1 claims O(t^{-1/2})
    assert f"feasibility of the iterates: {d['feasibility']['verdict']}" in card
    drift = mixed["mine.fedprox_no_drift"]
    dd = drift.to_dict()
    card = drift._repr_html_()
    assert "<b>Why:</b>" in card and ">violated<" in card
    assert "fedcheck-headline" not in card              # its headline is its verdict: not said twice
    from fedcheck.report import card_html               # a headline that says more is shown on its own line
    head = "partly holds: 1 of 2 paper findings refuted"
    assert f'<b>{head}</b>' in card_html({**dd, "headline": head}, figure=False)


def test_to_frame_is_tidy_and_consistent_with_the_result(t1, mixed):
    df = t1.to_frame()
    assert list(df.columns) == list(TABLE_COLUMNS) + ["p_lambda_0"]
    assert (df["p_lambda_0"] == t1[0].params["lambda_0"]).all()
    r = t1[0].to_dict()
    valid_from = r["formula"]["valid_from"]
    points = df[df["row"] == "point"]
    expected = sum(sum(k >= valid_from for k in inst["rounds"]) * len(inst["bound"]) for inst in r["instances"])
    assert len(points) == expected
    assert set(points["reading"]) == set(r["readings"]) and set(points["axis"]) == {"round"}
    assert set(points["instance"]) == {"seed 0", "seed 1"} and set(points["seed"]) == {0, 1}
    # the run's provenance on every row; paper is the paper's key, finding_kind whether the finding is the paper's
    assert set(df["run_id"]) == {t1.provenance["run_id"]} and set(df["git_commit"]) == {t1.provenance["git"]}
    assert set(df["fedcheck_version"]) == {fedcheck.__version__} and df["time"].notna().all()
    assert set(df["paper"]) == {"fedfw"}
    assert dict(df.groupby("finding")["finding_kind"].first()) == {
        "feasibility": "feasibility", **{n: "paper" if d["paper"] else "analysis" for n, d in r["readings"].items()}}
    # the numbers are the result's: measured, bound and the worst ratio per reading (t: the iterate's index)
    inst = r["instances"][1]
    row = points[(points["instance"] == "seed 1") & (points["reading"] == "statement") & (points["t"] == 10)].iloc[0]
    i = inst["rounds"].index(10.0)
    assert row["measured"] == inst["metric"][i] and row["bound_value"] == inst["bound"]["statement"][i]
    assert row["stat_lo"] == inst["metric_interval"]["lo"][i] and row["stat_hi"] == inst["metric_interval"]["hi"][i]
    assert row["ratio"] == pytest.approx(row["measured"] / row["bound_value"])
    assert row["idx_rep"] == 0 and row["n_replicates"] == 1 and pd.isna(row["se"])
    for name, reading in r["readings"].items():
        worst = points[points["finding"] == name]["ratio"].max()
        assert worst == pytest.approx(max(rec["readings"][name]["max_ratio"] for rec in r["instances"]))
        assert set(df[df["finding"] == name]["finding_verdict"]) == {reading["verdict"]}
    # every round: one row per comparison with the counts of what was judged between the recorded rounds too
    every = df[df["row"] == "every round"]
    assert len(every) == 2 * len(r["readings"]) and (every["points_judged"] == 151 - (valid_from - 1)).all()
    # horizons and cases
    dm = mixed.to_frame()
    pm = dm[dm["row"] == "point"]
    assert set(pm.groupby("check")["axis"].first().items()) == {
        ("mine.fedprox_gd_rate", "round"), ("mine.fedprox_no_drift", "round"), ("fedfw.theorem2", "horizon"),
        ("fedfw.lemma2", "point")}
    drift = pm[pm["check"] == "mine.fedprox_no_drift"]
    assert set(drift["finding_verdict"]) == {"violated"} and (drift["ratio"] > 1).any()
    assert (drift["p_mu"] == 0.1).all() and set(dm["paper"]) == {"mine", "fedfw"}
    l2 = mixed["fedfw.lemma2"].to_dict()
    assert (pm[pm["check"] == "fedfw.lemma2"]["ratio"].max() == pytest.approx(l2["max_ratio"]))
    # the same table from the JSON read back (no re-run)
    back = Results.read(mixed.to_json(Path("mixed.json")))      # (the test's own folder: conftest)
    pd.testing.assert_frame_equal(back.to_frame(), dm)


def test_param_values_are_columns_of_the_table():
    res = fedcheck.verify("theorem1", seeds=1, rounds=60, params={"lambda_0": 0.5})
    df = res.to_frame()
    assert "params" not in df.columns and (df["p_lambda_0"] == 0.5).all()


def test_report_and_json(t1, tmp_path):
    written = t1.report(tmp_path / "out")
    names = {str(p.relative_to(tmp_path / "out")) for p in written}
    assert {"checks/fedfw.theorem1/report.html", "checks/fedfw.theorem1/report.pdf", "results.json"} <= names
    assert all(p.is_file() for p in written)
    assert json.loads((tmp_path / "out" / "results.json").read_text())["checks"] == t1.dicts
    path = t1.to_json(tmp_path / "r.json")
    back = Results.read(path)
    assert back.verdicts == t1.verdicts and back[0].to_dict() == t1[0].to_dict()


@pytest.mark.parametrize("kwargs, message", [
    ({"claims": ("theorem_one",)}, "unknown check 'theorem_one'; did you mean"),
    ({"claims": ("theorem1",), "seeds": 0}, "--seeds '0': expected a count"),
    ({"claims": ("theorem1",), "seeds": [1, -2]}, "--seeds [1, -2]: expected a count"),
    ({"claims": ("theorem1",), "rounds": 0}, "--rounds must be >= 1"),
    ({"claims": ("theorem1",), "params": {"lambda_00": 1.0}}, "--param lambda_00: not a parameter of fedfw.theorem1"),
    ({"claims": ("theorem1",), "params": {"lambda_0": "x"}}, "--param 'lambda_0=x': 'x' is not a number"),
    ({"claims": ("theorem1",), "params": {"lambda_0": -1}}, "--param lambda_0=-1.0: fedfw.theorem1"),
    ({"claims": ("nothere.py",)}, "--theorem-file nothere.py: no such file"),
    ({"claims": ("theorem1",), "instances": ["missing.npz"]}, "missing.npz"),
    ({"claims": ()}, "nothing to verify"),
    ({"claims": (3,)}, "expected a check id"),
])
def test_bad_input_raises_with_the_cli_message(kwargs, message):
    kwargs = dict(kwargs)
    with pytest.raises(fedcheck.BadInput) as e:
        fedcheck.verify(*kwargs.pop("claims"), **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


# ------------------------------------------------------------------------------------------------
# the command line: --table and the timestamped copies
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_verify_table_round_trips(tmp_path, suffix, capsys):
    table, js = tmp_path / f"t{suffix}", tmp_path / "r.json"
    rc = main(["verify", "theorem1", "--seeds", "1", "--rounds", "100", "-q", "--no-report", "--json", str(js),
               "--table", str(table)])
    assert rc == 0 and f"table: {table}" in capsys.readouterr().out
    df = pd.read_csv(table) if suffix == ".csv" else pd.read_parquet(table)
    doc = json.loads(js.read_text())
    expected = to_frame(doc["checks"], doc["provenance"])
    assert list(df.columns) == list(expected.columns) and len(df) == len(expected) > 0
    assert list(df.columns)[:len(TABLE_COLUMNS)] == list(TABLE_COLUMNS)
    assert np.allclose(df["measured"], expected["measured"], equal_nan=True)
    assert np.allclose(df["t"], expected["t"], equal_nan=True)
    assert (df["finding_verdict"].astype(str) == expected["finding_verdict"].astype(str)).all()
    assert set(df["run_id"].astype(str)) == {doc["provenance"]["run_id"]}
    if suffix == ".parquet":        # the file documents its own columns
        import pyarrow.parquet as pq
        schema = pq.read_schema(table)
        meta = json.loads(schema.metadata[b"fedcheck"])
        assert set(meta["columns"]) == set(df.columns) and meta["policy"]["rtol"] == 1e-9
        for c in TABLE_COLUMNS:
            assert schema.field(c).metadata[b"description"].decode() == meta["columns"][c] != ""


@pytest.mark.parametrize("table, message", [
    ("t.xlsx", "--table {d}/t.xlsx: expected a .csv or .parquet file, not '.xlsx'"),
    ("t", "expected a .csv or .parquet file, not 'no suffix'"),
    ("file.txt/t.csv", "is not a directory"),
])
def test_verify_bad_table_exits_2_before_running(tmp_path, capsys, table, message):
    (tmp_path / "file.txt").write_text("x")
    out = tmp_path / "out"
    rc = main(["verify", "theorem1", "--seeds", "1", "--rounds", "100", "-q", "--out", str(out),
               "--table", str(tmp_path / table)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message.format(d=tmp_path) in err[0], err
    assert not out.exists()


def test_each_run_keeps_a_timestamped_copy(tmp_path, capsys):
    out, js = tmp_path / "out", tmp_path / "r.json"
    argv = ["verify", "theorem1", "--seeds", "1", "--rounds", "60", "-q", "--out", str(out), "--json", str(js)]
    assert main(argv) == 0
    assert main(argv[:5] + ["61"] + argv[6:]) == 0
    printed = capsys.readouterr().out
    runs = sorted((out / "runs").iterdir())
    assert len(runs) == 2 and all(p.name.endswith("-fedfw.theorem1.json") and p.name[8] == "T" for p in runs)
    assert [ln for ln in printed.splitlines() if ln.startswith("run: ")] == [f"run: {p}" for p in runs]
    docs = [json.loads(p.read_text()) for p in runs]
    assert [d["checks"][0]["evidence"]["rounds"] for d in docs] == [60, 61]
    assert docs[1] == json.loads(js.read_text())       # the --json file is still written where asked (the last run)
    assert not [p for p in (out / "runs").iterdir() if p.name.startswith(".")]     # nothing temporary left
    assert runs[1].read_bytes() == (out / "results.json").read_bytes()   # a copy of the report's results.json
    assert runs[1].stat().st_ino != (out / "results.json").stat().st_ino   # a copy, not a link
