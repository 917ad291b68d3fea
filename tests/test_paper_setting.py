"""The committed run of the catalog in the papers' own setting (docs/paper-setting.json, written by
docs/paper_setting.py): every claim has a record, each record's "paper's setting" classification is re-derived
from its stored findings (never taken from the file on trust), each run names its provenance, and the README's
column is the file's."""
from __future__ import annotations

import copy
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fedcheck_docs_paper_setting", ROOT / "docs" / "paper_setting.py")
PS = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PS)

DATA = PS.load()


def _registry():
    from fedcheck.catalog.registry import default_registry
    return default_registry()


def test_every_claim_of_the_catalog_has_a_record():
    missing = sorted(set(_registry().checks) - set(DATA["claims"]))
    assert not missing, f"docs/paper-setting.json has no record of {missing}: python docs/paper_setting.py run ..."


def test_no_record_of_a_claim_that_is_gone():
    assert not sorted(set(DATA["claims"]) - set(_registry().checks))


@pytest.mark.parametrize("cid", sorted(DATA["claims"]))
def test_each_record_is_rederived_from_its_findings(cid):
    r = DATA["claims"][cid]
    if r["status"] != "ran":
        assert r["why"], f"{cid}: a claim that did not run says why"
        return
    assert PS.setting_of(r) == r["setting"]
    assert PS.remaining_deviations(PS.deciding(r["findings"])) == r["remaining_deviations"]
    prov = r["provenance"]
    assert re.fullmatch(r"[0-9a-f]{40}", prov["git"] or ""), f"{cid}: no commit"
    words = prov["command"].split()
    assert "--full" in words and (cid in words or cid.split(".")[0] in words), f"{cid}: not a --full run of it"
    assert prov["created"] and prov["packages"].get("numpy")
    assert r["seconds"] > 0 and r["jobs"] >= 1


def test_a_deviation_left_at_full_makes_the_verdict_an_analysis():
    ran = next(r for r in DATA["claims"].values() if r["status"] == "ran" and r["setting"] == "paper")
    planted = copy.deepcopy(ran)
    planted["findings"] = [{"name": "x", "paper": True, "verdict": "violated", "max_ratio": 2.0,
                            "deviations": [{"parameter": "data", "paper": "MNIST", "run": "digits", "of_size": False}]}]
    assert PS.setting_of(planted) == "deviates"
    planted["setting"] = "deviates"
    planted["remaining_deviations"] = PS.remaining_deviations(planted["findings"])
    assert "analysis: data differ" in PS.column(ran["id"], {"claims": {ran["id"]: planted}})
    sized = copy.deepcopy(planted)
    sized["findings"][0]["deviations"] = [{"parameter": "images", "paper": 60000, "run": 5000, "of_size": True}]
    assert PS.setting_of(sized) == "paper"


def test_an_undecided_placeholder_with_analyses_elsewhere_is_not_the_papers_setting():
    r = {"status": "ran", "findings": [
        {"name": "in the paper's setting", "paper": True, "verdict": "inconclusive", "ran": False, "deviations": []},
        {"name": "digits", "paper": False, "verdict": "violated",
         "deviations": [{"parameter": "data", "paper": "EMNIST", "run": "digits", "of_size": False}]}]}
    assert PS.setting_of(r) == "deviates"
    assert [d["parameter"] for d in PS.remaining_deviations(PS.deciding(r["findings"]))] == ["data"]


def test_an_undecided_finding_that_ran_in_the_papers_setting_keeps_it():
    """fedmls.standard_parameters: its paper findings ran on the paper's data and are undecided; an analysis beside
    them (exact subgradients) does not make the claim's run an analysis."""
    r = {"status": "ran", "findings": [
        {"name": "in the paper's setting", "paper": True, "verdict": "inconclusive", "ran": True, "deviations": []},
        {"name": "exact subgradients", "paper": False, "verdict": "violated",
         "deviations": [{"parameter": "oracle", "paper": "10% minibatches", "run": "exact", "of_size": False}]}]}
    assert PS.setting_of(r) == "paper"
    check = {"id": "x", "verdict": "inconclusive", "readings": {
        "placeholder": {"verdict": "inconclusive", "paper": True, "evidence": "not run: no EMNIST data"},
        "ran": {"verdict": "inconclusive", "paper": True, "evidence": "slope -0.5, CI [-0.9, -0.1]"}}}
    rec = PS.record_of(check, {}, {"seconds": 1.0, "jobs": 1})
    assert [f["ran"] for f in rec["findings"]] == [False, True]


def test_the_file_check_sees_a_hand_edited_classification(tmp_path, monkeypatch):
    data = copy.deepcopy(DATA)
    cid = next(k for k, r in data["claims"].items() if r["status"] == "ran")
    data["claims"][cid]["setting"] = "deviates" if data["claims"][cid]["setting"] == "paper" else "paper"
    monkeypatch.setattr(PS, "FILE", tmp_path / "paper-setting.json")
    PS.save(data)
    assert PS.check() == 1


def test_the_readme_column_is_the_files():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for cid in DATA["claims"]:
        row = next((ln for ln in readme.splitlines() if ln.startswith(f"| `{cid}` |")), None)
        assert row is not None, cid
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert cells[2] == PS.column(cid, DATA).replace("|", "\\|"), cid


def test_the_benchmarks_time_table_is_the_files():
    text = PS.TIMES_FILE.read_text(encoding="utf-8")
    block = text[text.index(PS.TIMES_START) + len(PS.TIMES_START):text.index(PS.TIMES_END)]
    assert block == "\n" + PS.times_table(DATA), "python docs/paper_setting.py times --write"


def test_the_time_table_names_sizes_smaller_than_the_papers():
    r = {"status": "ran", "verdict": "holds", "setting": "paper", "seconds": 12.0, "jobs": 1, "load_before": 1.0,
         "load_after": 1.5, "findings": [{"name": "f", "paper": True, "verdict": "holds", "deviations": [
             {"parameter": "images", "paper": 60000, "run": 5000, "of_size": True}]}]}
    table = PS.times_table({"claims": {"x.y": dict(r, id="x.y")}})
    assert "| `x.y` | holds | paper | 12.0 | 1 | 1.00 -> 1.50 | images 60000 -> 5000 |" in table
    assert "1 of 1 claims ran" in table and "12 s in all" in table
