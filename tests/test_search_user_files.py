"""``fedcheck search`` on a user's theorem file as on the catalog: the user's own classes (an instance family)
reach the Dask workers by value, every rerun command the search prints runs as printed (it carries
``--theorem-file``), and an unknown id of no catalog paper names the flag."""
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fedcheck.cli.main import main

ROOT = Path(__file__).resolve().parents[1]

FAMILY_FILE = textwrap.dedent('''
    import dataclasses
    from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Rounds
    from fedcheck.algorithms import fedfw
    from fedcheck.problems import RandomFamily
    from fedcheck.symbols import D, L, t

    P = Paper(key="mine", title="a family of my own", authors="me")


    @dataclasses.dataclass(frozen=True)
    class MyFamily:                     # a class only this file defines: no worker can import it
        n: int = 4

        def draw(self, seed):
            return RandomFamily(loss="least_squares", set="l2", n=self.n, m=10, p=4, radius=1.0).draw(seed)


    fam = Claim(id="mine.fam", paper=P, reference="c", statement="a loose bound",
                evidence=BoundTest(Rounds(family=MyFamily(), algorithm=fedfw, schedules={"eta": 1 / L, "lam": 1.0},
                                          seeds=2, rounds=40, valid_from=2),
                                   bounds=(Bound("b", 100 * L * D**2 / t),)),
                domain=Domain(fixed={"loss": "least_squares"}, free={"n": (2, 6)}), expected="holds")
''')


def test_search_with_a_users_family_class_runs_on_two_workers_and_its_reruns_run(tmp_path, capsys, monkeypatch):
    f = tmp_path / "mine.py"
    f.write_text(FAMILY_FILE)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "fedcheck", "search", "mine.fam", "--theorem-file", str(f), "--budget", "6",
           "-j", "2", "--rounds", "20", "--no-report", "--out", str(tmp_path / "o")]
    try:    # before: the workers could not read the tasks (no module fedcheck_user_...) and the run hung
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("search -j 2 on a user's family class hangs")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "ModuleNotFoundError" not in p.stderr
    reruns = re.findall(r"^\s*rerun: (.+)$", p.stdout, re.M)
    assert reruns, p.stdout
    monkeypatch.chdir(tmp_path)
    for command in reruns:
        assert f"--theorem-file {f}" in command           # before: missing, and the id was unknown
        argv = shlex.split(command)
        assert argv[0] == "fedcheck"
        assert main(argv[1:] + ["--no-report", "-q"]) == 0, command
        capsys.readouterr()


def test_an_unknown_id_of_no_catalog_paper_suggests_theorem_file(capsys):
    assert main(["verify", "mine.x", "--no-report"]) == 2
    assert "--theorem-file" in capsys.readouterr().err
    assert main(["verify", "fedfw.no_such_claim", "--no-report"]) == 2     # a catalog paper: no such hint
    assert "--theorem-file" not in capsys.readouterr().err
