"""The tidy table stands alone: every verdict of a catalog run is recomputed from its Parquet file with
pandas in a process that never imports fedcheck (tests/table_recompute.py, the procedure of docs/TABLE.md, with the
tolerances the file stores); ``--param`` values are columns; the columns are documented in docs/TABLE.md and in the
file itself."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from fedcheck.api import TABLE_COLUMNS, TABLE_DOC, to_frame, write_table
from fedcheck.catalog.registry import default_registry
from fedcheck.cli.main import main
from fedcheck.core.results import provenance, run_options

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
REG = default_registry()
CLAIMS = list(REG.checks.values())

_RECOMPUTE = """
import json, sys
sys.path.insert(0, {tests!r})
import pandas as pd
from table_recompute import case_mismatches, recompute
df = pd.read_parquet({path!r})
got = recompute(df)
cases = case_mismatches(df)
leaked = sorted(m for m in sys.modules if m == "fedcheck" or m.startswith("fedcheck.") or m.startswith("theorems"))
print(json.dumps({{"got": got, "cases": cases, "leaked": leaked, "rows": len(df)}}))
"""


def recompute_elsewhere(path: Path) -> dict:
    """The recomputation in a fresh interpreter that imports pandas, numpy and scipy -- and nothing of fedcheck."""
    code = _RECOMPUTE.format(tests=str(TESTS), path=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(path.parent))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.xdist_group("catalog")        # the session's runs of the catalog (tests/conftest.py::catalog_run)
def test_every_verdict_of_a_catalog_run_is_recomputed_from_its_parquet_file_alone(catalog_run, tmp_path):
    checks = [catalog_run(c).to_dict() for c in CLAIMS]
    prov = provenance(["verify", *REG.papers], None, run_options())
    path = tmp_path / "catalog.parquet"
    df = to_frame(checks, prov)
    write_table(df, path, prov)
    back = pd.read_parquet(path)
    assert list(back.columns) == list(df.columns) and len(back) == len(df)
    res = recompute_elsewhere(path)
    assert res["leaked"] == [], res["leaked"]
    assert set(res["got"]) == {c["id"] for c in checks}, "every check has rows"
    wrong = []
    for c in checks:
        verdict, findings = res["got"][c["id"]]
        if verdict != c["verdict"]:
            wrong.append(f"{c['id']}: recomputed {verdict}, fedcheck {c['verdict']}")
        for name, d in (c.get("readings") or {}).items():
            if findings.get(name) != d["verdict"]:
                wrong.append(f"{c['id']} [{name}]: recomputed {findings.get(name)}, fedcheck {d['verdict']}")
    assert not wrong, "\n".join(wrong)
    assert res["cases"] == [], res["cases"][:20]
    # the bound tests' verdicts come from rows of observations, not from a verdict copied into the table
    points = back[back["row"].isin(["point", "every round"])]
    decided_by_rows = {c["id"] for c in checks if c["kind"] in ("bound", "expectation") and c["instances"]}
    assert decided_by_rows <= set(points["check"]) | {c["id"] for c in checks if not c.get("observations")}
    assert len(set(points["check"])) >= 30
    # a finding judged over a sweep (Theorem 4.1 for all small eta_c: eta_s = 1, 10, 100) is recomputed by the sweep
    # rule from its rows at every value, not taken from a verdict
    swept = back[back["sweep_index"].notna()]
    assert "feddualavg.theorem_4_1" in set(swept["check"]) and set(swept["sweep_parameter"]) == {"eta_s"}
    assert not ((back["row"] == "recorded") & back["check"].isin(set(swept["check"]))).any()


def test_recomputing_sees_a_changed_observation(tmp_path):
    """The recomputation reads the numbers: moving one measured interval above its bound changes the verdict."""
    sys.path.insert(0, str(TESTS))
    from table_recompute import recompute
    import fedcheck
    res = fedcheck.verify("theorem1", seeds=1, rounds=40)
    df = res.to_frame()
    assert recompute(df)["fedfw.theorem1"][0] == "holds"
    i = df.index[(df["row"] == "point") & (df["reading"] == "statement")][5]
    df.loc[i, ["stat_lo", "stat_hi"]] = df.loc[i, "bound_value"] * 2 + 1
    assert recompute(df)["fedfw.theorem1"][0] == "violated"


def test_param_values_are_p_columns_and_the_file_reads_without_fedcheck(tmp_path, capsys):
    table = tmp_path / "t.parquet"
    rc = main(["verify", "theorem1", "--seeds", "1", "--rounds", "50", "--param", "lambda_0=0.5", "-q", "--no-report",
               "--table", str(table)])
    assert rc == 0
    code = textwrap.dedent(f"""
        import sys, pandas as pd
        df = pd.read_parquet({str(table)!r})
        assert not any(m.startswith("fedcheck") for m in sys.modules)
        print(sorted(set(df["p_lambda_0"])), "params" in df.columns)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[0.5] False"


def test_every_column_is_documented_alike_in_the_code_the_docs_and_the_file():
    doc = (ROOT / "docs" / "TABLE.md").read_text(encoding="utf-8")
    for c, d in TABLE_DOC.items():
        assert f"| `{c}` | " in doc, c
        assert d, c
    assert tuple(TABLE_DOC) == TABLE_COLUMNS
    import importlib.util
    spec = importlib.util.spec_from_file_location("fedcheck_docs_readme", ROOT / "docs" / "readme.py")
    R = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(R)
    assert R.rendered(doc, R.TABLE_PARTS) == doc, "docs/TABLE.md is not up to date: run python docs/readme.py"
