"""Every command a report prints runs as printed and reproduces its verdict.

A report prints "Reproduce this check with:" (the command rerunning the check as the run ran it) and, under
"Refuting instances saved", "Rerun this claim on it:" for each saved refuting instance.  These tests run
``fedcheck verify`` with reports, read every such command out of every report's HTML, run it exactly as printed
(``shlex.split``, in-process ``main`` -- the same parser as the shell's ``fedcheck``) and compare the verdict it
gives with the report's.  The default suite covers the catalog's claims that save refuting instances (every
instance rerun command a catalog run prints) and the examples' theorem file that does (its commands carry
``--theorem-file``); ``-m slow`` runs every check's command of the whole catalog."""
import html
import json
import re
import shlex
from pathlib import Path

import pytest

from fedcheck.catalog.registry import default_registry
from fedcheck.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
REG = default_registry()
# the catalog's claims whose quick run saves refuting instances the claim reruns on (every "Rerun this claim on it"
# command of a catalog run; the other saved instances -- of claims that build their own cases -- are listed as paths),
# and one claim that saves instances it does not rerun on (its report prints no rerun command for them)
SAVING = ("fedfw.partial_consensus", "fedfw.naive_averaging_random", "fedfw.lemma2", "feddualavg.lemma_c3")
COMMAND = re.compile(r'<div class="command">(.*?)</div>', re.S)
REFUTING = {"violated", "reproduced", "not_reproduced"}


def report_commands(out: Path) -> dict:
    """``{check id: (verdict, [commands printed in its report])}`` for every report under ``out``."""
    doc = json.loads((out / "results.json").read_text())
    folders = {c["id"]: c for c in doc["checks"]}
    found = {}
    from fedcheck.core.outputs import check_folder
    for cid, chk in folders.items():
        page = out / "checks" / check_folder(cid) / "report.html"
        text = page.read_text()
        found[cid] = (chk["verdict"], [html.unescape(m).strip() for m in COMMAND.findall(text)],
                      chk.get("saved_instances") or [])
    return found


def run_as_printed(command: str, capsys) -> tuple[int, dict]:
    """Run a printed ``fedcheck ...`` command in this process; its verdicts by check id, from the results file it
    writes where it says (its default output folder, ``reports/`` of the current folder)."""
    argv = shlex.split(command)
    assert argv[0] == "fedcheck", command
    rc = main(argv[1:])
    out = capsys.readouterr().out
    m = re.search(r"^results: (.+)$", out, re.M)
    path = Path(m.group(1)) if m else Path("reports") / "results.json"
    doc = json.loads(path.read_text())
    return rc, {c["id"]: c["verdict"] for c in doc["checks"]}


def _check_all(out: Path, capsys, only_instances: bool = False):
    found = report_commands(out)
    ran = 0
    for cid, (verdict, commands, saved) in found.items():
        instance_cmds = [c for c in commands if "--instance" in shlex.split(c)]
        assert len(instance_cmds) <= len(saved)
        for cmd in (instance_cmds if only_instances else commands):
            rc, verdicts = run_as_printed(cmd, capsys)
            assert cid in verdicts, (cmd, verdicts)
            if "--instance" in shlex.split(cmd):    # the refuting instance refutes again
                assert verdicts[cid] in REFUTING and verdicts[cid] == verdict, (cmd, verdicts[cid], verdict)
            else:                                   # the whole check, as the run ran it
                assert verdicts[cid] == verdict, (cmd, verdicts[cid], verdict)
            ran += 1
    return found, ran


def test_every_printed_command_of_the_catalog_claims_that_save_instances_runs_and_reproduces(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["verify", *SAVING, "--out", str(out)])
    assert rc == 1
    capsys.readouterr()
    found, ran = _check_all(out, capsys)
    reruns = sum(1 for _, cmds, _ in found.values() for c in cmds if "--instance" in c)
    assert reruns >= 3 and ran == sum(len(c) for _, c, _ in found.values())


def test_an_examples_theorem_file_rerun_carries_the_file_and_reproduces(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["verify", "--theorem-file", str(ROOT / "examples" / "fedprox_claims.py"), "mine", "--out", str(out)])
    assert rc == 1
    capsys.readouterr()
    found, ran = _check_all(out, capsys)
    assert found["mine.fedprox_no_drift"][0] == "violated"
    cmds = [c for _, cs, _ in found.values() for c in cs]
    assert cmds and all("--theorem-file" in c for c in cmds)
    assert any("--instance" in c for c in cmds) and ran == len(cmds)


@pytest.mark.slow
def test_every_printed_command_of_a_catalog_run_runs_and_reproduces(tmp_path, capsys):
    out = tmp_path / "run"
    main(["verify", *REG.papers, "--out", str(out)])
    capsys.readouterr()
    found, ran = _check_all(out, capsys)
    assert len(found) == len(REG.checks) and ran >= len(found)


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "examples").glob("*_claims.py")))
def test_every_printed_command_of_each_example_runs_and_reproduces(example, tmp_path, capsys):
    out = tmp_path / "run"
    from fedcheck.catalog.registry import load_registry
    ids = list(load_registry([str(ROOT / "examples" / example)]).checks)
    ids = [i for i in ids if i not in REG.checks]
    main(["verify", "--theorem-file", str(ROOT / "examples" / example), *ids, "--out", str(out)])
    capsys.readouterr()
    found, ran = _check_all(out, capsys)
    assert set(found) == set(ids) and ran >= len(ids)
