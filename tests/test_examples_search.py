"""Examples that survive search: every example claim states its premises in its domain, so a small
``fedcheck search`` (budget 8, 100 rounds) gives its declared verdict -- exit 0 for a claim said to hold, 1 for one
said to be violated.  (Before, the README's ``mine.fedprox_gd_rate``, said to hold, was refuted: its premise,
clients sharing a minimizer inside the set, was only in its description.)"""
from pathlib import Path

import pytest

from fedcheck.catalog.registry import Registry
from fedcheck.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _claims():
    out = []
    for f in sorted(EXAMPLES.glob("*.py")):
        reg = Registry()
        reg.load_file(f)
        out += [pytest.param(f, cid, c.expected, id=cid) for cid, c in reg.checks.items()]
    return out


@pytest.mark.parametrize("path, cid, expected", _claims())
def test_every_example_claim_keeps_its_declared_verdict_under_search(path, cid, expected, tmp_path, capsys):
    assert expected in ("holds", "violated"), f"{cid}: declare what a search should find"
    rc = main(["search", cid, "--theorem-file", str(path), "--budget", "8", "--rounds", "100", "--no-report",
               "--out", str(tmp_path), "-q"])
    out = capsys.readouterr()
    assert rc == {"holds": 0, "violated": 1}[expected], out.out[-2000:] + out.err[-2000:]


def test_the_published_fedavg_theorem_runs_in_verify_and_search_on_two_workers(tmp_path, capsys):
    """Li et al. (ICLR 2020) Theorem 1 in at most 80 lines of public modules: it holds, its rate squared is refuted
    by verify and by search -j 2 (a user's family class on the workers)."""
    import os
    import subprocess
    import sys
    f = EXAMPLES / "fedavg_strongly_convex.py"
    assert len(f.read_text().splitlines()) <= 80
    assert main(["verify", "li2020.theorem1", "--theorem-file", str(f), "--no-report", "-q"]) == 0
    assert main(["verify", "li2020.theorem1_squared", "--theorem-file", str(f), "--no-report", "-q"]) == 1
    capsys.readouterr()
    root = str(EXAMPLES.parent)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "fedcheck", "search", "li2020.theorem1_squared", "--theorem-file", str(f),
                        "--budget", "8", "-j", "2", "--no-report", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert p.returncode == 1, p.stdout[-1500:] + p.stderr[-1500:]
