"""Budgets with estimates, and a scheduler that is not there.

``search`` streams its candidates (``--budget 1000000000`` once drew every candidate up front: 2.8 GB after 30 s, no
output) and refuses a budget beyond a memory/time estimate before anything runs; ``pep`` refuses non-finite and
out-of-range numbers (``--D 1e308`` overflowed); ``--scheduler`` with no worker is one line within
``FEDCHECK_WORKER_TIMEOUT`` (it hung silently), and a scheduler lost during the run is exit 5 with one line.
"""
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedcheck.cli import main


def _limited(mb: int):
    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (mb * 2**20, mb * 2**20))
    return pre


@pytest.mark.parametrize("argv", [["search", "theorem1", "--budget", "1000000000"],
                                  ["search", "theorem1", "--budget", "20000000", "--rounds", "100000"]])
def test_a_budget_beyond_the_estimate_is_refused_at_once(tmp_path, argv):
    t0 = time.time()
    p = subprocess.run([sys.executable, "-m", "fedcheck", *argv, "--out", str(tmp_path / "out")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, preexec_fn=_limited(3000))
    assert p.returncode == 2, p.stderr[-2000:]
    assert p.stderr.count("\n") == 1 and "--budget" in p.stderr and "smaller budget" in p.stderr, p.stderr
    assert time.time() - t0 < 60 and not (tmp_path / "out").exists()


def test_search_draws_its_candidates_in_batches(monkeypatch):
    """The random phase draws a batch, evaluates it, then draws the next: never the whole budget first."""
    from fedcheck.catalog.registry import default_registry
    from fedcheck.tools import search as S
    check = default_registry().checks["fedfw.theorem1"]
    drawn, at_first_eval = [], []

    def draw(space, rng, k):
        drawn.append(k)
        return real_draw(space, rng, k)
    real_draw = S.draw_candidate

    class Stop(Exception):
        pass

    def evaluate(chk, cands, config):
        at_first_eval.append(len(drawn))
        raise Stop
    monkeypatch.setattr(S, "draw_candidate", draw)
    monkeypatch.setattr(S, "evaluate_batch", evaluate)
    with pytest.raises(Stop):
        S.search(check, budget=100000, rounds=5, baseline=False)
    assert at_first_eval == [8]


@pytest.mark.parametrize("opt", [["--D", "1e308"], ["--L", "inf"], ["--L", "nan"], ["--D", "0"], ["--L", "-1"],
                                 ["--zeta", "-0.5"], ["--zeta", "1e300"], ["--clients", "0"], ["--horizon", "0"]])
def test_pep_refuses_numbers_it_cannot_solve_with(tmp_path, capsys, opt):
    rc = main(["pep", *opt, "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1 and opt[0] in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


# ---- a scheduler without workers, a scheduler that goes away ------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask(*args, log: Path) -> subprocess.Popen:
    exe = shutil.which("dask") or str(Path(sys.executable).parent / "dask")
    return subprocess.Popen([exe, *args], stdout=open(log, "w"), stderr=subprocess.STDOUT)


def _wait_port(port: int, timeout: float = 60.0) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("the Dask scheduler did not start")


@pytest.fixture()
def scheduler(tmp_path):
    port = _free_port()
    proc = _dask("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard", log=tmp_path / "s.log")
    try:
        _wait_port(port)
        yield proc, f"tcp://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


def test_a_scheduler_without_workers_is_one_line_within_the_timeout(tmp_path, scheduler):
    _, address = scheduler
    env = dict(os.environ, FEDCHECK_WORKER_TIMEOUT="3", FEDCHECK_PROGRESS="0")
    t0 = time.time()
    p = subprocess.run([sys.executable, "-m", "fedcheck", "verify", "theorem1", "--seeds", "2", "--rounds", "20",
                        "--no-report", "--scheduler", address], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "no Dask worker joined" in p.stderr and "within 3 s" in p.stderr
    assert time.time() - t0 < 60


SLOW_CLAIM = """
import time
from fedcheck import Claim, Finding, Measurement, MeasureResult, Paper

def measure(ctx):
    time.sleep(600)          # still running when the scheduler goes away
    return MeasureResult(findings=[Finding("slow", "holds")])

slow = Claim(id="slowpaper.slow", paper=Paper(key="slowpaper", title="t", authors="a"), reference="r",
             statement="s", evidence=Measurement(measure))
"""


def test_a_scheduler_lost_during_the_run_is_exit_5(tmp_path, scheduler):
    proc, address = scheduler
    worker = _dask("worker", address, "--nthreads", "1", "--no-dashboard", log=tmp_path / "w.log")
    try:
        (tmp_path / "slow.py").write_text(SLOW_CLAIM)
        env = dict(os.environ, FEDCHECK_PROGRESS="0")
        run = subprocess.Popen([sys.executable, "-m", "fedcheck", "verify", "--theorem-file", str(tmp_path / "slow.py"),
                                "slowpaper", "--out", str(tmp_path / "out"), "--scheduler", address], cwd=tmp_path,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(15)              # connected, the task running on the worker (it sleeps for 10 minutes)
        assert run.poll() is None, run.communicate()
        proc.kill()
        t0 = time.time()
        out, err = run.communicate(timeout=120)
        assert run.returncode == 5, err
        assert err.count("\n") == 1 and "went away during the run" in err and "Traceback" not in err, err
        assert time.time() - t0 < 60
        assert not (tmp_path / "out").exists()
    finally:
        worker.kill()
        worker.wait()
