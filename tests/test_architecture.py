"""The layers of docs/DESIGN.md, enforced: import-linter's contracts (pyproject.toml, [tool.importlinter]; the contract
types in fedcheck_contracts.py) hold on the code, and each kind of import they once missed -- a name the root package
loads lazily, a type-only import, a circle inside a paper -- planted in a copy of the code breaks them, naming the
offending module and line."""
import ast
import importlib
import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
CONTRACTS = {c["id"]: c["name"] for c in
             tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]}


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LINT, str(cwd / "pyproject.toml"), "--no-cache"], cwd=cwd, capture_output=True,
                          text=True, env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def _flat(text: str) -> str:
    """lint-imports' report with its line wrapping undone (one space between words)."""
    return " ".join(text.split())


def _status(out: subprocess.CompletedProcess, contract: str) -> str:
    found = re.search(re.escape(_flat(CONTRACTS[contract])) + r" (KEPT|BROKEN)", _flat(out.stdout))
    assert found, out.stdout + out.stderr
    return found.group(1)


@pytest.fixture(scope="module")
def lint_available():
    if not Path(LINT).exists():
        pytest.fail("import-linter is a test dependency (pip install -e '.[test]'): lint-imports not found")
    return LINT


def _contracts_module():
    spec = importlib.util.spec_from_file_location("fedcheck_contracts", ROOT / "fedcheck_contracts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_architecture_contracts_hold(lint_available):
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert set(CONTRACTS) == {"layers", "papers", "acyclic", "circles"}
    for contract in CONTRACTS:
        assert _status(out, contract) == "KEPT"


def test_no_module_takes_part_in_an_import_circle():
    """0 file-level circles in fedcheck and theorems: the strongly connected components of the module graph (every
    import counted, type-only and lazily loaded names included)."""
    grimp = pytest.importorskip("grimp")
    C = _contracts_module()
    graph = grimp.build_graph("fedcheck", "theorems", exclude_type_checking_imports=False, cache_dir=None)
    C.add_resolved_imports(graph, C.module_files(graph))
    circles = C.import_circles(graph)

    def lines(a, b):
        return ", ".join(f"l.{d['line_number']}" for d in graph.get_import_details(importer=a, imported=b))
    listed = ["; ".join(f"{a} -> {b} ({lines(a, b)})"
                        for a in circle for b in sorted(graph.find_modules_directly_imported_by(a) & set(circle)))
              for circle in circles]
    assert circles == [], "\n".join(listed)


def test_the_contracts_read_the_maps_the_lazy_loaders_use():
    """The contracts read each lazy loader's map from its source; at run time the loader uses the same map, and every
    public name the package does not define itself is in it (so none loads unseen)."""
    grimp = pytest.importorskip("grimp")
    C = _contracts_module()
    graph = grimp.build_graph("fedcheck", "theorems", cache_dir=None)
    maps = C.lazy_maps(graph, C.module_files(graph))
    assert {"fedcheck", "fedcheck.problems", "fedcheck.algorithms"} <= set(maps)
    for package, static in maps.items():
        module = importlib.import_module(package)
        runtime = {}
        for value in vars(module).values():
            if isinstance(value, dict) and value and all(isinstance(k, str) and isinstance(v, str)
                                                         and v in graph.modules for k, v in value.items()):
                runtime.update(value)
        assert static == runtime, package
        own = vars(module)
        unseen = [n for n in module.__all__ if n not in own and n not in static
                  and f"{package}.{n}" not in graph.modules]
        assert not unseen, (package, unseen)


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for d in ("fedcheck", "theorems"):
        shutil.copytree(ROOT / d, dst / d, ignore=ignore)
    for f in ("pyproject.toml", "fedcheck_contracts.py"):
        shutil.copy(ROOT / f, dst / f)
    return dst


def _plant(repo: Path, module: str, text: str) -> int:
    """Insert ``text`` before the module's first import after ``from __future__`` (if any); returns the line number
    of its last line (the offending one)."""
    path = repo / module
    if not path.exists():
        path.write_text('"""A module planted by the test."""\nimport math\n')
    src = path.read_text()
    lines = src.split("\n")
    at = next(n.lineno - 1 for n in ast.parse(src).body if isinstance(n, (ast.Import, ast.ImportFrom))
              and getattr(n, "module", None) != "__future__")
    planted = [f"{line}  # planted" if line.strip() else line for line in text.split("\n")]
    lines[at:at] = planted
    path.write_text("\n".join(lines))
    return at + len(planted)


def _map_name(package: str) -> str:
    module = importlib.import_module(package)
    return next(k for k, v in vars(module).items() if k in ("_EXPORTS", "_LAZY") and isinstance(v, dict))


def _name(module: str) -> str:
    return module.replace("/", ".").removesuffix(".py").removesuffix(".__init__")


TYPE_ONLY = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    "


@pytest.mark.parametrize("module, text, imported, contract", [
    ("fedcheck/core/verdict.py", "import fedcheck.experiments", "fedcheck.experiments", "layers"),  # core -> experiments
    ("fedcheck/problems/sets.py", "from fedcheck.algorithms import federated", "fedcheck.algorithms", "layers"),
    ("fedcheck/api.py", "from fedcheck.cli import main", "fedcheck.cli.main", "layers"),           # API -> front end
    ("theorems/fedmls/claims.py", "from theorems.fedfw import measurements", "theorems.fedfw.measurements", "papers"),
    # names the root package and the libraries load lazily count as imports of the modules they live in
    ("fedcheck/core/verdict.py", "from fedcheck import verify", "fedcheck.api", "layers"),
    ("theorems/fedmls/claims.py", "from fedcheck import verify", "fedcheck.api", "layers"),
    ("fedcheck/core/verdict.py", "import fedcheck\n_planted = fedcheck.Results", "fedcheck.api", "layers"),
    ("fedcheck/core/evidence.py", "from fedcheck.problems import RandomFamily", "fedcheck.problems:RandomFamily",
     "layers"),
    ("fedcheck/problems/sets.py", "from fedcheck.algorithms import fedsgm", "fedcheck.algorithms:fedsgm", "layers"),
    # an import only type checkers run counts like any other
    ("fedcheck/core/evidence.py", TYPE_ONLY + "from fedcheck.api import Results", "fedcheck.api", "layers"),
    ("fedcheck/core/verdict.py", TYPE_ONLY + "from fedcheck import Results", "fedcheck.api", "layers"),
    # circles: two modules of one paper importing each other; a paper's module importing its package's __init__
    ("theorems/fedmls/claims.py", "from theorems.fedmls import planted", "theorems.fedmls.planted", "acyclic"),
    ("theorems/fedmls/claims.py", "from theorems.fedmls import planted", "theorems.fedmls.planted", "circles"),
    ("theorems/fedmls/claims.py", "from theorems.fedmls import CLAIMS", "theorems.fedmls", "circles"),
    ("fedcheck/core/verdict.py", "from fedcheck import Claim", "fedcheck.core.claim", "circles"),   # claim -> verdict
])
def test_a_planted_import_breaks_the_contracts(lint_available, tmp_path, module, text, imported, contract):
    if ":" in imported:           # a name a library loads lazily: the module its map names (the maps may grow)
        package, name = imported.split(":")
        imported = vars(importlib.import_module(package))[_map_name(package)][name]
    repo = _copy(tmp_path)
    if imported == "theorems.fedmls.planted":        # the second module of the circle imports the first one back
        (repo / "theorems/fedmls/planted.py").write_text('"""Planted."""\nfrom theorems.fedmls import claims\n')
    line = _plant(repo, module, text)
    out = _lint(repo)
    assert out.returncode != 0, out.stdout
    assert _status(out, contract) == "BROKEN", out.stdout
    if contract == "acyclic":     # import-linter's acyclic report names the package and modules, not lines
        assert "No cycles are allowed in theorems.fedmls." in out.stdout, out.stdout
    else:
        assert f"{_name(module)} -> {imported} (l.{line})" in _flat(out.stdout), out.stdout


def test_a_module_outside_every_layer_breaks_the_layers_contract(lint_available, tmp_path):
    repo = _copy(tmp_path)
    (repo / "fedcheck" / "planted.py").write_text('"""A new module no layer names."""\n')
    out = _lint(repo)
    assert _status(out, "layers") == "BROKEN" and "- fedcheck.planted" in out.stdout, out.stdout


def test_a_lazy_loader_the_contracts_cannot_read_is_an_error(lint_available, tmp_path):
    repo = _copy(tmp_path)
    pkg = repo / "fedcheck" / "planted"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('import importlib\n\n\ndef __getattr__(name):\n'
                                     '    return importlib.import_module("fedcheck." + name)\n')
    out = _lint(repo)
    assert out.returncode != 0 and "fedcheck.planted defines __getattr__" in _flat(out.stdout + out.stderr), out.stdout
    (pkg / "__init__.py").write_text('_EXPORTS = {"x": "fedcheck.planted.missing"}\n\n\ndef __getattr__(name):\n'
                                     '    raise AttributeError(name)\n')
    out = _lint(repo)
    assert out.returncode != 0 and "'x': 'fedcheck.planted.missing'" in _flat(out.stdout + out.stderr), out.stdout


TOY = '''"""A fifth paper, as a user would add it: one folder."""
import sympy as sp

from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
from fedcheck.algorithms import fedfw
from fedcheck.problems import RandomFamily
from fedcheck.symbols import D, L, lambda_0, n, t

TOY = Paper(key="toy", title="A toy paper", authors="me")
rate = Claim(id="toy.rate", paper=TOY, reference="Theorem 1", statement="F - F* <= 2 n L D^2 / (t + 1) (+ penalty)",
             evidence=BoundTest(Rounds(family=RandomFamily(loss="least_squares", set="l1", n=3, m=5, p=4),
                                       algorithm=fedfw, schedules={"eta": 2 / (t + 1), "lam": lambda_0 * sp.sqrt(t + 1)},
                                       seeds=2, rounds=50, valid_from=2),
                                bounds=(Bound("b", 50 * n * L * D**2 / sp.sqrt(t + 1)),)),
             params={"lambda_0": 1.0}, expected="holds")
CLAIMS = (rate,)
'''


def test_a_fifth_paper_is_a_folder_and_one_line_of_the_index(lint_available, tmp_path):
    repo = _copy(tmp_path)
    folder = repo / "theorems" / "toy"
    folder.mkdir()
    (folder / "__init__.py").write_text("from theorems.toy.claims import *  # noqa: F401,F403\n"
                                        "from theorems.toy.claims import CLAIMS  # noqa: F401\n")
    (folder / "claims.py").write_text(TOY)
    index = repo / "theorems" / "__init__.py"
    before = index.read_text()
    index.write_text(before.replace('    "feddualavg",\n', '    "feddualavg",\n    "toy",\n'))
    assert len(set(index.read_text().splitlines()) - set(before.splitlines())) == 1      # one line added
    env = {"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FEDCHECK_CACHE": str(tmp_path / "c"),
           "FEDCHECK_PROGRESS": "0"}
    lst = subprocess.run([sys.executable, "-m", "fedcheck", "list"], cwd=repo, env=env, capture_output=True, text=True)
    assert lst.returncode == 0 and "toy.rate" in lst.stdout, lst.stderr
    run = subprocess.run([sys.executable, "-m", "fedcheck", "verify", "toy", "--no-report", "-j", "1", "-q"], cwd=repo,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "holds" in run.stdout, run.stdout + run.stderr
    assert _lint(repo).returncode == 0
