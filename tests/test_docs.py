"""The README cannot drift from the code: its generated parts are what docs/readme.py writes, each headline it
states is a run's, its Quickstart test command is the one .ci/run runs, the lock pins every installed package,
and what it says of search and PEPit is what the code and ``fedcheck --help`` say."""
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from fedcheck.catalog.registry import default_registry

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
_spec = importlib.util.spec_from_file_location("fedcheck_docs_readme", ROOT / "docs" / "readme.py")
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)
REG = default_registry()


def quickstart() -> list[str]:
    block = re.search(r"## Quickstart\s+```bash\n(.*?)```", README, re.S).group(1)
    return [ln.strip() for ln in block.strip().splitlines()]


def test_the_readme_is_what_docs_readme_writes():
    assert R.rendered(README) == README, "README.md is not up to date: run python docs/readme.py"


def test_the_generator_sees_a_stale_readme():
    stale = README.replace("| `fedcheck list` |", "| `fedcheck list --old` |", 1)
    assert stale != README and R.rendered(stale) == README


def test_every_catalog_entry_names_a_claim():
    table = R.catalog_entries()
    assert set(table) <= set(REG.checks), sorted(set(table) - set(REG.checks))
    for cid, e in table.items():
        assert set(e) <= {"summary", "headline"}, (cid, e)


def test_every_claim_has_a_row_with_its_declared_verdict():
    table = R.catalog_entries()
    for c in REG.checks.values():
        row = f"| `{c.id}` | {R._cell(R.stated_headline(c, table.get(c.id, {})))} |"
        assert row in README, row
    assert f"runs the {len(REG.checks)} claims of the {len(REG.papers)} papers" in README


@pytest.mark.xdist_group("catalog")        # the session's runs of the catalog (tests/conftest.py::catalog_run)
@pytest.mark.parametrize("claim", list(REG.checks.values()), ids=list(REG.checks))
def test_the_stated_headline_is_the_runs(claim, catalog_run):
    """A quick run's headline is the README's: the declared `headline` (docs/catalog.toml), else the expected
    verdict (a partial headline -- '3 of 5 paper findings refuted' -- must be declared, with its count)."""
    res = catalog_run(claim)
    stated = R.stated_headline(claim, R.catalog_entries().get(claim.id, {}))
    assert (res.headline or res.verdict) == stated, f"{claim.id}: a run says {res.headline or res.verdict!r}, " \
        f"the README {stated!r} (docs/catalog.toml)"


def test_the_quickstart_test_command_is_what_ci_runs():
    install, tests = quickstart()
    assert install == "python -m pip install -c constraints.txt -e . && fedcheck verify theorem1"
    assert tests.startswith("python -m pip install -c constraints.txt -e '.[test]'"), tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(rf"^\s*{re.escape(tests)}\s*$", ci, re.M), "the README's test command is not in .ci/run"
    assert "-m venv" in ci                                     # CI installs into a new environment


def test_the_lock_pins_every_package_and_covers_what_fedcheck_needs():
    from importlib import metadata
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.+!\-]+)", line)
            assert m, f"constraints.txt: {line!r} is not pinned with =="
            pins[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    with open(ROOT / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["test"]
    for req in wanted:
        name = re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.\-]+", req).group(0)).lower()
        assert name in pins, f"{req} is not in constraints.txt"
    # transitive ones too: every requirement of a pinned package is pinned (where it is installed here)
    for name in pins:
        try:
            reqs = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for r in reqs:
            if ";" in r:           # extras and markers: only what this environment installed
                continue
            dep = re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.\-]+", r).group(0)).lower()
            assert dep in pins or dep in ("pip", "setuptools", "wheel"), \
                f"{dep} (required by {name}) is not in constraints.txt"   # those three come with the venv


def test_search_and_the_readme_split_the_budget_alike():
    from fedcheck.tools.search import RANDOM_FRACTION
    words = {0.25: "A quarter", 0.5: "half", 1.0: "all of it"}
    said = (f"{words[RANDOM_FRACTION['cma']]}\n  of the budget (`--method cma`, the default; "
            f"{words[RANDOM_FRACTION['perturb']]} with `--method perturb`, {words[RANDOM_FRACTION['random']]} "
            f"with `--method random`)")
    assert said in README


def test_help_and_readme_say_pepit_is_a_dependency():
    out = subprocess.run([sys.executable, "-m", "fedcheck", "--help"], capture_output=True, text=True,
                         cwd=ROOT).stdout
    assert "optional" not in out.lower() and "(PEPit, a dependency)" in " ".join(out.split()), out
    assert "(PEPit, a dependency" in README
    with open(ROOT / "pyproject.toml", "rb") as fh:
        deps = tomllib.load(fh)["project"]["dependencies"]
    assert any(d.lower().startswith("pepit") for d in deps)


def test_the_proof_step_example_runs():
    """The one description of proof steps (``fedcheck.core.steps``; ``fedcheck.tools.audit`` refers to it) shows
    an example that runs as written."""
    import doctest

    import fedcheck.core.steps as steps
    failed, tried = doctest.testmod(steps, verbose=False)
    assert tried >= 5 and failed == 0


def test_every_benchmark_has_todays_figure_and_its_command():
    """benchmarks/README.md has a section for every script of benchmarks/ with its command, its target and its
    latest figure (dated), a row in the summary, and points to the log (benchmarks/HISTORY.md)."""
    bench = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert "(HISTORY.md)" in bench and (ROOT / "benchmarks" / "HISTORY.md").is_file()
    sections = dict(re.findall(r"^## `(\w+\.py)`: .*?\n(.*?)(?=^## |\Z)", bench, re.S | re.M))
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
    assert sorted(sections) == scripts, "benchmarks/README.md: one section per script of benchmarks/"
    for name, body in sections.items():
        assert f"python benchmarks/{name}" in body, f"{name}: no command"
        for part in ("**Measures.**", "**Command.**", "**Target", "**Latest.**"):
            assert part in body, f"{name}: no {part}"
        assert re.search(r"\*\*Latest\.\*\*\s+(?:[^\n]*\n)?[^\n]*20\d\d-\d\d-\d\d", body), f"{name}: undated figure"
        assert re.search(rf"^\| \[`{re.escape(name)}`\]\(#", bench, re.M), f"{name}: not in the summary"
