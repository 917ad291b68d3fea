"""The layers of docs/DESIGN.md, enforced: import-linter's contracts (pyproject.toml, [tool.importlinter]) hold on
the code, and an upward import planted in a copy of the code breaks them, naming the offending line."""
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LINT, str(cwd / "pyproject.toml"), "--no-cache"], cwd=cwd, capture_output=True,
                          text=True, env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin", "HOME": str(cwd)})


@pytest.fixture(scope="module")
def lint_available():
    if not Path(LINT).exists():
        pytest.fail("import-linter is a test dependency (pip install -e '.[test]'): lint-imports not found")
    return LINT


def test_the_architecture_contracts_hold(lint_available):
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    for name in ("one direction", "a paper is one folder", "no circles"):
        assert re.search(rf"{name}.*? KEPT", out.stdout, flags=re.S), out.stdout


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for d in ("fedcheck", "theorems"):
        shutil.copytree(ROOT / d, dst / d, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", dst / "pyproject.toml")
    return dst


@pytest.mark.parametrize("module, line, contract", [
    ("fedcheck/core/verdict.py", "import fedcheck.experiments", "one direction"),           # core -> experiments
    ("fedcheck/problems/sets.py", "from fedcheck.algorithms import federated", "one direction"),
    ("fedcheck/api.py", "from fedcheck.cli import main", "one direction"),                 # API -> front end
    ("theorems/fedmls/claims.py", "from theorems.fedfw import measurements", "a paper is one folder"),
])
def test_a_planted_upward_import_breaks_the_contracts(lint_available, tmp_path, module, line, contract):
    repo = _copy(tmp_path)
    path = repo / module
    src = path.read_text()
    # before the module's first import after `from __future__` (if any): the planted import is that line
    lines = src.split("\n")
    at = next(n.lineno - 1 for n in ast.parse(src).body if isinstance(n, (ast.Import, ast.ImportFrom))
              and getattr(n, "module", None) != "__future__")
    lines.insert(at, line + "  # planted")
    path.write_text("\n".join(lines))
    out = _lint(repo)
    assert out.returncode != 0, out.stdout
    assert re.search(rf"{contract}[^\n]*\n?[^\n]*BROKEN", out.stdout), out.stdout
    planted = module.replace("/", ".").removesuffix(".py")
    assert planted in out.stdout and f"l.{at + 1}" in out.stdout, out.stdout    # the offending module and line


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
