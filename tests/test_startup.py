"""Start-up, the catalog manifest, ``fedcheck cache info/clear`` and the progress display.

Speed itself is measured in ``benchmarks/startup.py`` (ratios); these tests check what makes it fast: which
modules ``fedcheck list`` / ``--help`` import, and that the cached listing is never stale."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "scipy", "sympy", "cvxpy", "matplotlib", "numba", "tqdm", "theorems.fedfw", "theorems.fedsgm",
         "theorems.fedmls", "theorems.feddualavg", "fedcheck.core.claim", "fedcheck.tools.search")

_LOADED = ("import sys, json; from fedcheck.cli.main import main; rc = main({argv!r}); "
           "sys.stderr.write('LOADED ' + json.dumps(sorted(m for m in sys.modules if m in {heavy!r} "
           "or m.split('.')[0] in {heavy!r})) + '\\n'); sys.exit(rc)")


def _env(cache, **extra):
    env = dict(os.environ, FEDCHECK_CACHE=str(cache), FEDCHECK_PROGRESS="0", **extra)
    return env


def _run(argv, cache, cwd=ROOT, **extra):
    """Run the CLI in a fresh interpreter; returns (rc, stdout, heavy modules it imported)."""
    code = _LOADED.format(argv=list(argv), heavy=HEAVY)
    p = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=_env(cache, **extra), capture_output=True,
                       text=True, timeout=300)
    loaded = [json.loads(line[len("LOADED "):]) for line in p.stderr.splitlines() if line.startswith("LOADED ")]
    return p.returncode, p.stdout, p.stderr, (loaded[0] if loaded else None)


def _key(cache: Path) -> str:
    """The manifest's key.  A rebuild between two runs is legitimate only when a source changed meanwhile
    (another process editing the tree), which changes the key."""
    return json.loads((cache / "catalog.json").read_text())["key"]


# ----------------------------------------------------------------------------------------------------------
# start-up: what `--help` and `list` import
def test_help_imports_nothing_heavy(tmp_path):
    rc, out, err, loaded = _run(["--help"], tmp_path / "cache")
    assert rc == 0 and "cache" in out and "verify" in out
    assert loaded == [], loaded
    rc, out, err, loaded = _run(["--version"], tmp_path / "cache")
    from fedcheck import __version__
    assert rc == 0 and out.strip() == f"fedcheck {__version__}" and loaded == []


def test_list_imports_nothing_heavy_once_the_manifest_exists(tmp_path):
    cache = tmp_path / "cache"
    rc, cold, _, loaded_cold = _run(["list"], cache)          # builds the manifest (imports the catalog)
    assert rc == 0 and "theorems.fedfw" in loaded_cold
    assert (cache / "catalog.json").is_file()
    key = _key(cache)
    rc, warm, _, loaded = _run(["list"], cache)
    assert rc == 0 and warm == cold
    assert loaded == [] or _key(cache) != key, f"fedcheck list imported {loaded}"
    assert "fedfw.theorem1" in warm and "theorem1" in warm


def test_tool_subcommands_parse_their_arguments_on_demand():
    from fedcheck.cli.main import build_parser
    args = build_parser().parse_args(["search", "theorem1", "--budget", "7"])
    assert args.command == "search" and args.budget == 7
    assert "--horizon" in build_parser()._subparsers._group_actions[0].choices["pep"].format_help()
    args = build_parser().parse_args(["cache", "info"])
    assert args.command == "cache" and args.cache_command == "info"


# ----------------------------------------------------------------------------------------------------------
# the manifest is never stale
def _copy_catalog(tmp_path) -> Path:
    """A copy of the theorems package first on the path (so an edit does not touch the repository)."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "theorems", site / "theorems", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def test_manifest_follows_an_edit_of_a_theorem_module(tmp_path):
    site = _copy_catalog(tmp_path)
    cache = tmp_path / "cache"
    env = {"PYTHONPATH": str(site)}
    rc, before, _, _ = _run(["list"], cache, cwd=site, **env)
    assert rc == 0
    src = site / "theorems" / "fedmls" / "claims.py"
    text = src.read_text()
    title = json.loads((cache / "catalog.json").read_text())["claims"]
    mls = next(r for r in title if r["module"] == "fedmls")
    assert mls["title"] in before and mls["title"] in text
    src.write_text(text.replace(mls["title"], "EDITED: " + mls["title"], 1))
    rc, after, _, loaded = _run(["list"], cache, cwd=site, **env)
    assert rc == 0 and "EDITED: " + mls["title"] in after and "EDITED" not in before
    assert "theorems.fedmls" in loaded                       # rebuilt from the edited source
    key = _key(cache)
    rc, again, _, loaded = _run(["list"], cache, cwd=site, **env)
    assert again == after and (loaded == [] or _key(cache) != key)     # and cached again


def test_manifest_corrupt_or_foreign_is_rebuilt(tmp_path, monkeypatch):
    from fedcheck.catalog import registry
    monkeypatch.setenv("FEDCHECK_CACHE", str(tmp_path))
    rows = registry.catalog_listing()
    assert rows == registry.build_listing()
    path = tmp_path / "catalog.json"
    for bad in ("{not json", json.dumps({"format": 1, "key": "0" * 40, "claims": [{"id": "x"}]}),
                json.dumps({"format": 1, "key": registry.catalog_key(), "claims": [{"id": 3}]})):
        path.write_text(bad)
        assert registry.catalog_listing() == rows
        assert json.loads(path.read_text())["key"] == registry.catalog_key()
    monkeypatch.setenv("FEDCHECK_CACHE", "off")             # no cache: built live
    assert registry.catalog_listing() == rows


def test_user_theorem_file_listing_is_live_and_not_cached(tmp_path):
    cache = tmp_path / "cache"
    user = tmp_path / "mine.py"
    shutil.copy(ROOT / "examples" / "fedprox_claims.py", user)
    rc, out, _, _ = _run(["list", "--theorem-file", str(user)], cache)
    assert rc == 0 and "mine.fedprox_gd_rate" in out and "fedfw.theorem1" in out
    user.write_text(user.read_text().replace('id="mine.fedprox_gd_rate"', 'id="mine.renamed"'))
    rc, out, _, _ = _run(["list", "--theorem-file", str(user)], cache)
    assert rc == 0 and "mine.renamed" in out and "mine.fedprox_gd_rate" not in out
    if (cache / "catalog.json").exists():
        assert "mine." not in (cache / "catalog.json").read_text()


# ----------------------------------------------------------------------------------------------------------
# verify imports only the paper modules it needs; names stay those of the whole catalog
def test_verify_registry_imports_only_the_named_papers(tmp_path):
    from fedcheck.catalog.registry import build_listing
    rows = tmp_path / "rows.json"       # the manifest's rows, given as they are (staleness is tested above)
    rows.write_text(json.dumps(build_listing()))
    code = ("import sys, json; from fedcheck.catalog import registry; "
            f"registry.catalog_listing = lambda: json.load(open({str(rows)!r})); "
            "r = registry.load_registry((), ['theorem1']); print([c.id for c in r.resolve(['theorem1'])]); "
            "print(sorted(m for m in sys.modules if m.startswith('theorems.')))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[-2] == "['fedfw.theorem1']"
    assert {m.split(".")[1] for m in eval(lines[-1])} == {"fedfw"}     # modules of the fedfw folder only


def test_partial_registry_matches_the_whole_catalog(tmp_path):
    from fedcheck.core.errors import BadInput
    from fedcheck.catalog.registry import UnknownCheck, default_registry, load_registry
    full = default_registry()
    part = load_registry((), ["fedfw"])
    assert [c.id for c in part.resolve(["fedfw", "fedsgm1"])] == [c.id for c in full.resolve(["fedfw", "fedsgm1"])]
    with pytest.raises(UnknownCheck) as a:
        load_registry((), ["fedfw"]).resolve(["fedsgm9"])
    with pytest.raises(UnknownCheck) as b:
        full.resolve(["fedsgm9"])
    assert str(a.value) == str(b.value)
    # a user's claim may not take a built-in alias, even one of a paper module that was not imported
    user = tmp_path / "clash.py"
    user.write_text("import dataclasses\nfrom theorems.fedfw import CLAIMS\n"
                    "MINE = dataclasses.replace(CLAIMS[0], id='fedfw.mine', aliases=('fedsgm1',))\nCLAIMS = (MINE,)\n")
    msgs = []
    for names in (None, ["fedfw.mine"]):
        with pytest.raises(BadInput) as e:
            load_registry([str(user)], names)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "fedsgm1" in msgs[0] and "built-in" in msgs[0]


# ----------------------------------------------------------------------------------------------------------
# fedcheck cache info / clear
def _fill_cache(cache: Path) -> None:
    from fedcheck.problems.solve import CACHE
    cache.mkdir(parents=True)
    for key in ("ab" * 32, "cd" * 32):
        old = os.environ.get("FEDCHECK_CACHE")
        os.environ["FEDCHECK_CACHE"] = str(cache)
        try:
            for p in CACHE._paths(key):              # the names SolutionCache writes
                p.write_bytes(b"x" * 100)
        finally:
            if old is None:
                os.environ.pop("FEDCHECK_CACHE")
            else:
                os.environ["FEDCHECK_CACHE"] = old
    (cache / "pep").mkdir()
    (cache / "pep" / ("e" * 64 + ".json")).write_text("{}")
    (cache / "formulas").mkdir()
    (cache / "formulas" / ("f" * 40 + ".svg")).write_text("<svg/>")
    (cache / "durations.json").write_text("{}")
    (cache / "notes.txt").write_text("mine, not fedcheck's")


def test_cache_info_and_clear(tmp_path):
    cache = tmp_path / "cache"
    _fill_cache(cache)
    rc, out, err, loaded = _run(["cache", "info"], cache)
    assert rc == 0, err
    assert str(cache) in out
    lines = {ln.split()[0]: ln for ln in out.splitlines()[1:] if ln.strip() and not ln.strip().startswith("(")}
    assert " 2 entries" in lines["solutions"] and "400 B" in lines["solutions"]
    assert " 1 entry" in lines["pep"] and " 1 entry" in lines["formulas"] and " 1 entry" in lines["durations"]
    assert " 5 entries" in lines["total"]
    assert "1 other file" in out
    assert loaded == []
    rc, out, err, _ = _run(["cache", "clear"], cache)
    assert rc == 0 and "removed" in out and " 5 entries" in out
    assert sorted(p.name for p in cache.rglob("*")) == [".fedcheck-cache", "notes.txt"]   # only its entries (the
    #                                                                   marker that makes the folder fedcheck's stays)
    rc, out, _, _ = _run(["cache", "clear"], cache)
    assert rc == 0 and "nothing to remove" in out
    rc, out, _, _ = _run(["cache", "info"], cache)
    assert rc == 0 and " 0 entries" in out


def test_cache_disabled(tmp_path):
    rc, out, _, _ = _run(["cache", "info"], "off")
    assert rc == 0 and "disabled" in out
    rc, out, _, _ = _run(["cache", "clear"], "off")
    assert rc == 0 and "disabled" in out


# ----------------------------------------------------------------------------------------------------------
# the progress display: an ETA after the warm-up
class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_eta_ignores_the_warm_up_interval():
    from fedcheck.core import progress
    clock = _Clock()
    t = progress.Task("rounds", total=1001, unit="round", clock=clock)
    assert t.eta() is None
    clock.t = 30.0                       # the first interval: 30 s of JIT compile for 1 round
    t.update(1)
    assert t.eta() is None and not t.warm       # no estimate from the warm-up alone
    clock.t = 31.0                       # then 100 rounds per second
    t.advance_to(101)
    assert t.rate() == pytest.approx(100.0)
    assert t.eta() == pytest.approx(9.0)         # (1001 - 101) / 100; the naive average would say ~276 s
    naive = (1001 - 101) / (101 / 31.0)
    assert naive > 250
    clock.t = 40.0
    t.advance_to(1001)
    assert t.eta() == pytest.approx(0.0)


def test_eta_ignores_a_warm_up_in_the_second_interval():
    """The recorder may see round 1 before the compiled loop starts: the compile is then the second interval."""
    from fedcheck.core import progress
    clock = _Clock()
    t = progress.Task("rounds", total=10001, unit="round", clock=clock)
    clock.t = 0.01
    t.update(1)                          # round 1, before the kernel is compiled
    clock.t = 1.46
    t.update(1)                          # round 2, after 1.45 s of compile
    assert t.eta() is None               # (tqdm's own estimate here was 4 hours)
    clock.t = 1.81
    t.advance_to(1052)                   # 1050 rounds in 0.35 s
    assert t.eta() == pytest.approx((10001 - 1052) / 3000.0)
    for k in range(2000, 10001, 1000):   # a later slow interval does not restart the estimate
        clock.t += 0.9 if k == 6000 else 1000 / 3000.0
        t.advance_to(k)
    assert t._warm == (1.46, 2)


def test_bar_shows_unknown_eta_during_warm_up_then_the_honest_one():
    from fedcheck.core import progress
    clock = _Clock()
    buf = io.StringIO()
    t = progress.Task("rounds", total=1001, unit="round", show=True, clock=clock, file=buf)
    clock.t = 30.0
    t.update(1)
    line = str(t._bar)
    assert "<?" in line and "?round/s" in line, line
    clock.t = 31.0
    t.advance_to(101)
    line = str(t._bar)
    assert "<00:09" in line and "100.00round/s" in line, line
    t.close()


def test_display_is_off_when_quiet_or_not_a_terminal(monkeypatch):
    from fedcheck.core import progress
    monkeypatch.delenv("FEDCHECK_PROGRESS", raising=False)
    assert not progress.enabled(True, io.StringIO())            # not a terminal
    assert not progress.enabled(False, io.StringIO())
    monkeypatch.setenv("FEDCHECK_PROGRESS", "1")
    assert progress.enabled(True, io.StringIO())
    assert not progress.enabled(False, io.StringIO())           # --quiet wins
    monkeypatch.setenv("FEDCHECK_PROGRESS", "0")
    with progress.task("x", 3, enabled=True) as t:
        assert t._bar is None
        t.update(3)
    assert t.n == 3


def test_rounds_solves_proofs_and_reports_use_it(monkeypatch):
    from fedcheck.core import progress
    from fedcheck.experiments import with_progress
    from fedcheck.problems.solve import solve_all
    monkeypatch.setenv("FEDCHECK_PROGRESS", "0")
    rec = lambda k, X, xbar: k                                      # noqa: E731
    assert with_progress(rec, 10, "r", True) is rec                 # off: the recorder itself
    monkeypatch.setenv("FEDCHECK_PROGRESS", "1")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    wrapped = with_progress(rec, 10, "r", True)
    assert wrapped is not rec and [wrapped(k, None, None) for k in (0, 5, 10)] == [0, 5, 10]
    assert wrapped.scalars_of is rec
    seen = []
    out = solve_all(lambda inst, use_cache=True: (seen.append(use_cache), inst * 2)[1], [1, 2, 3], False, True)
    assert out == [2, 4, 6] and seen == [False] * 3
    with progress.task("reports", unit="report") as t:
        cb = progress.callback(t)
        cb(1, 4, "theorem1")
        cb(3, 4, "lemma2")
        assert (t.n, t.total) == (3, 4)
