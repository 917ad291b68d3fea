"""An output folder fedcheck owns, and a cache it can prove is its own.

Per-check files live in checks/<check>/ and instances/<check>/ with injective folder names, so no id -- ``runs.x``,
``instances.x``, ``results``, ``index``, ``x`` beside ``x.html``, ``../evil`` -- collides with fedcheck's own names or
another check's; every subcommand checks its outputs before computing, stages them and moves them in at the end, and
names its results file after itself; a file fedcheck did not write is never replaced or deleted; an interrupt leaves
no half-written file and no earlier output overwritten.  ``cache clear`` refuses a folder fedcheck did not create.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from fedcheck.cli import main
from fedcheck.core.outputs import MANIFEST, check_folder, check_folders

CLAIMS = '''
import sympy as sp
from fedcheck import Bound, BoundTest, Claim, Fact, Paper, ProofStep, Proof, Rounds
from fedcheck.algorithms import federated
from fedcheck.problems import RandomFamily
from fedcheck.symbols import D, L, t
from fedcheck.tools.audit import prove_identity


def gd(X, x, ctx, *, eta):
    Y = ctx.project(X - ctx.col(eta) * ctx.grad(X))
    return Y, Y.mean(1)


def claim(key, name, bound, **kw):
    return Claim(id=f"{key}.{name}", paper=Paper(key=key, title=key, authors="me"), reference="r", statement="s",
                 evidence=BoundTest(Rounds(family=RandomFamily(loss="least_squares", set="l1", n=3, m=6, p=5),
                                           algorithm=federated(gd), schedules={"eta": 1 / L}, seeds=2, rounds=20),
                                    bounds=(Bound("b", bound),)), **kw)


x = sp.Symbol("x", positive=True)
CLAIMS = [claim("runs", "x", 1e-9 / t),             # refuted: its instances are saved
          claim("instances", "x", 1e-9 / t),
          claim("mine", "ok", 100 * L * D**2 / t,
                proof_steps=(ProofStep("id", "x = x", "symbolic", lambda: prove_identity(x, x)),))]
'''


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): (_sha(p) if p.is_file() else "dir") for p in sorted(root.rglob("*"))
            if not p.is_symlink()}


@pytest.fixture()
def user_file(tmp_path):
    f = tmp_path / "claims.py"
    f.write_text(textwrap.dedent(CLAIMS))
    return f


def _verify(capsys, f, out, *ids):
    rc = main(["verify", "--theorem-file", str(f), *(ids or ("runs", "instances", "mine")), "--out", str(out), "-q"])
    o, e = capsys.readouterr()
    return rc, o, e


def test_ids_named_like_fedchecks_own_files_collide_with_nothing(tmp_path, capsys, user_file):
    """Claims runs.x and instances.x once deleted --out/runs/ and --out/instances/, including the refuting instances
    the terminal said were saved."""
    out = tmp_path / "out"
    rc, o, e = _verify(capsys, user_file, out)
    assert rc == 1, o + e
    text = o.replace(" \\\n", " ")          # the printed commands, their continuation lines joined
    reruns = re.findall(r"--instance (\S+)", text)
    saved = reruns + [ln.split("instance saved to ")[1] for ln in text.splitlines() if "instance saved to " in ln]
    assert len(saved) == 4 and all(Path(p).is_file() for p in saved), o
    listed = {str(Path(p)) for c in json.loads((out / "results.json").read_text())["checks"]
              for p in c.get("saved_instances") or []}
    assert {str(Path(p).resolve()) for p in reruns} <= listed      # rerun paths name the files the results list
    assert (out / "runs").is_dir() and len(list((out / "runs").iterdir())) == 1
    assert (out / "checks" / "runs.x" / "report.html").is_file() and (out / "results.json").is_file()
    assert sorted(p.name for p in (out / "instances").iterdir()) == ["instances.x", "runs.x"]
    before = _tree(out)
    rc, o, e = _verify(capsys, user_file, out)       # again: the earlier run's copy is kept, the rest replaced
    assert rc == 1 and len(list((out / "runs").iterdir())) == 2
    assert all(Path(p).is_file() for p in saved)
    assert set(before) <= set(_tree(out))


HOSTILE = ["results", "index", "runs", "instances", "checks", "x", "x.html", "X", "a/b", "../evil", "", "report",
           "fedfw.theorem1", "fedfw.theorem1", ".fedcheck-outputs.json", "a" * 300]


def test_report_of_hostile_ids_writes_each_in_its_own_folder(tmp_path, capsys, user_file):
    out = tmp_path / "out"
    _verify(capsys, user_file, out)
    verify_files = {k: v for k, v in _tree(out).items() if not k.startswith("checks") and k != "index.html"
                    and k != MANIFEST}
    doc = {"schema": "fedcheck.results/1", "provenance": {},
           "checks": [{"id": cid or "empty", "verdict": "holds", "title": f"check {k}"} for k, cid in enumerate(HOSTILE)]}
    (tmp_path / "hostile.json").write_text(json.dumps(doc))
    rc = main(["report", str(tmp_path / "hostile.json"), "--out", str(out), "-q"])
    o, e = capsys.readouterr()
    assert rc == 0, e
    after = _tree(out)
    for k, v in verify_files.items():           # verify's results, runs and instances: untouched
        assert after.get(k) == v, k
    assert (out / "report.json").is_file() and not (tmp_path / "evil").exists()
    folders = [p for p in (out / "checks").iterdir()]
    assert len({p.name.lower() for p in folders}) == len(folders)
    pages = sorted((out / "checks").glob("*/report.html"))
    assert len(pages) == len(HOSTILE) + 3           # verify's three, and one per hostile check (a repeated id too)
    index = (out / "index.html").read_text()
    for f in check_folders([c["id"] for c in doc["checks"]]):
        assert f'href="checks/{f}/report.html"' in index
    assert 'href="report.json"' in index


@given(st.lists(st.text(min_size=0, max_size=30), min_size=2, max_size=8, unique=True))
@settings(max_examples=300, deadline=None)
def test_check_folders_are_injective_and_plain(ids):
    names = check_folders(ids + ids[:1])
    assert len({n.lower() for n in names}) == len(names)
    for n in names:
        assert n and "/" not in n and "\\" not in n and n not in (".", "..") and not n.startswith(".") and len(n) < 120


def test_a_symlinked_check_folder_is_refused_before_anything_runs(tmp_path, capsys, user_file):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("mine")
    (out / "checks").mkdir(parents=True)
    (out / "checks" / check_folder("mine.ok")).symlink_to(elsewhere)
    t0 = time.time()
    rc, o, e = _verify(capsys, user_file, out, "mine.ok")
    assert rc == 2 and e.count("\n") == 1 and "symbolic link" in e, e
    assert (elsewhere / "precious.txt").read_text() == "mine" and sorted(p.name for p in elsewhere.iterdir()) == \
        ["precious.txt"]
    assert not (out / "results.json").exists() and time.time() - t0 < 30


@pytest.mark.parametrize("plant", ["results.json", "index.html", "checks", "runs", "instances/runs.x/mine.npz",
                                   MANIFEST])
def test_a_file_fedcheck_did_not_write_is_never_replaced(tmp_path, capsys, user_file, plant):
    out = tmp_path / "out"
    path = out / plant
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("the user's own file")
    rc, o, e = _verify(capsys, user_file, out)
    assert rc == 2 and e.count("\n") == 1 and "Traceback" not in e, e
    assert path.read_text() == "the user's own file"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [plant]   # nothing written


def test_a_file_the_user_changed_is_not_replaced(tmp_path, capsys, user_file):
    out = tmp_path / "out"
    assert _verify(capsys, user_file, out, "mine.ok")[0] == 0
    (out / "results.json").write_text("edited by hand")
    rc, o, e = _verify(capsys, user_file, out, "mine.ok")
    assert rc == 2 and "changed since fedcheck wrote it" in e
    assert (out / "results.json").read_text() == "edited by hand"


def test_search_and_audit_write_their_own_results_beside_verifys(tmp_path, capsys, user_file):
    """audit and search once overwrote verify's results.json in the same --out."""
    out = tmp_path / "out"
    assert _verify(capsys, user_file, out, "mine.ok")[0] == 0
    results = _sha(out / "results.json")
    pages = _sha(out / "checks" / "mine.ok" / "report.html")
    rc = main(["audit", "--theorem-file", str(user_file), "mine.ok", "--out", str(out)])
    assert rc == 0, capsys.readouterr()
    rc = main(["search", "--theorem-file", str(user_file), "mine.ok", "--budget", "4", "--rounds", "10",
               "--verify-rounds", "20", "--out", str(out), "-q", "-j", "1", "--no-shrink"])
    o, e = capsys.readouterr()
    assert rc == 0, o + e
    assert _sha(out / "results.json") == results and _sha(out / "checks" / "mine.ok" / "report.html") == pages
    assert (out / "audit.json").is_file() and (out / "search.json").is_file()
    folder = out / "search" / "checks" / check_folder("mine.ok.search")
    assert (folder / "worst.npz").is_file() and (folder / "trajectory.json").is_file()
    rerun = next(ln for ln in o.splitlines() if "rerun:" in ln)
    assert str(folder / "worst.npz") in rerun


@pytest.mark.parametrize("cmd", [["search", "theorem1", "--budget", "4"], ["audit", "theorem1"], ["pep"],
                                 ["verify", "theorem1"]])
def test_outputs_are_checked_before_computing(tmp_path, capsys, cmd):
    """search, audit and pep once checked --out only after computing (exit 4), search leaving <id>-worst.npz."""
    bad = tmp_path / "a-file"
    bad.write_text("x")
    t0 = time.time()
    rc = main([*cmd, "--out", str(bad)])
    o, e = capsys.readouterr()
    assert rc == 2 and e.count("\n") == 1 and "not a directory" in e, e
    assert time.time() - t0 < 60
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_an_interrupt_during_searchs_reverification_leaves_the_earlier_search(tmp_path, user_file):
    """SIGINT during search's re-verification once left <id>-worst.npz, overwriting an earlier search's."""
    out = tmp_path / "out"
    env = dict(os.environ, FEDCHECK_PROGRESS="0")
    base = [sys.executable, "-m", "fedcheck", "search", "--theorem-file", str(user_file), "mine.ok", "--budget", "4",
            "--rounds", "10", "--out", str(out), "-j", "1", "--no-shrink", "--no-report", "--seed"]
    first = subprocess.run(base + ["0", "--verify-rounds", "20"], env=env, capture_output=True, text=True, cwd=tmp_path,
                           timeout=300)
    assert first.returncode == 0, first.stderr
    before = _tree(out)
    p = subprocess.Popen(base + ["1", "--verify-rounds", "2000000"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in p.stderr:                      # the baseline is logged right before the re-verification
        if "baseline" in line:
            break
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=120)
    assert p.returncode == 130
    assert _tree(out) == before                 # nothing half-written, nothing of the earlier search replaced


# ---- the cache ---------------------------------------------------------------------------------------------------
def _project(tmp_path) -> Path:
    proj = tmp_path / "project"
    (proj / "sub").mkdir(parents=True)
    (proj / "catalog.json").write_text('{"my": "catalog"}')
    (proj / ("ab" * 10 + ".json")).write_text("{}")
    (proj / ("cd" * 10 + ".npz")).write_text("data")
    (proj / ("s1-" + "ef" * 10 + ".json")).write_text("{}")
    (proj / "sub" / ".draft.tmp").write_text("unsaved")
    return proj


def test_cache_clear_refuses_a_folder_fedcheck_did_not_create(tmp_path, capsys, monkeypatch):
    """FEDCHECK_CACHE set by mistake to a project folder: cache clear once deleted the user's catalog.json, hex-named
    .json/.npz and .*.tmp files."""
    proj = _project(tmp_path)
    before = _tree(proj)
    monkeypatch.setenv("FEDCHECK_CACHE", str(proj))
    rc = main(["cache", "clear"])
    o, e = capsys.readouterr()
    assert rc == 2 and e.count("\n") == 1 and "not created by fedcheck" in e, e
    assert main(["list"]) == 0                  # the listing does not write its manifest over the user's catalog.json
    rc = main(["verify", "theorem1", "--seeds", "1", "--rounds", "5", "--no-report", "-q"])
    o, e = capsys.readouterr()
    assert rc == 0 and "not created by fedcheck" in e
    assert _tree(proj) == before


def test_a_new_cache_folder_is_fedchecks_and_can_be_cleared(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "new-cache"
    monkeypatch.setenv("FEDCHECK_CACHE", str(cache))
    assert main(["verify", "theorem1", "--seeds", "1", "--rounds", "5", "--no-report", "-q"]) == 0
    assert (cache / ".fedcheck-cache").is_file() and list(cache.glob("s*-*.json"))
    (cache / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main(["cache", "clear"]) == 0
    assert sorted(p.name for p in cache.iterdir()) == [".fedcheck-cache", "notes.txt"]
