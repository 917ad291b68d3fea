"""``verify -j N`` / ``--scheduler``: checks and seeds as Dask tasks give the results of a serial run.

One real ``LocalCluster`` (two worker processes, one thread each) is shared by the module; the tests reach it
by its address, as ``--scheduler tcp://...`` does.  One test starts the embedded cluster of ``-j 2``."""
import json
import time
from pathlib import Path

import numpy as np
import pytest

from fedcheck import Bound, BoundTest, Claim, Measurement, MeasureResult, Rounds, RunConfig
from fedcheck.cli import main
from fedcheck.catalog import parallel as P
from fedcheck.core.evidence import Finding
from fedcheck.catalog.parallel import _parts, auto_jobs, map_tasks, run_checks, splittable
from fedcheck.catalog.registry import default_registry
from fedcheck.problems.instances import RandomFamily
from theorems.fedfw import theorem1

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "my_claims.py"
TIMING = {"seconds"}
FAST = ["fedfw.lemma2", "fedfw.condition29", "fedsgm.lemma5", "feddualavg.theorem_4_3", "fedfw.naive_averaging_random"]


def _strip(x):
    """Drop timing fields (wall-clock seconds) anywhere in a result."""
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in TIMING}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


@pytest.fixture(scope="module")
def cluster():
    """A real LocalCluster of 2 worker processes; its address, as ``--scheduler`` takes it."""
    import logging

    import distributed
    with P._quiet_logs():
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"},
                                      silence_logs=logging.ERROR, memory_limit=0)
        try:
            yield lc.scheduler_address
        finally:
            lc.close()


# ---- map_tasks ------------------------------------------------------------------------------------
def _late(x):
    time.sleep(0.3 * (3 - x))     # the first items finish last
    return x * x


def test_map_tasks_serial_is_a_plain_map():
    assert map_tasks(_late, [2, 3], jobs=1) == [4, 9]


def test_map_tasks_on_an_embedded_cluster_keeps_the_order():
    """``jobs=2``: a LocalCluster of its own, closed afterwards; results in the order of the items."""
    assert map_tasks(_late, [0, 1, 2, 3], jobs=2) == [0, 1, 4, 9]
    assert not P._ACTIVE


FORKSERVER_SCRIPT = """
import json, os, sys, time
from fedcheck.catalog.parallel import map_tasks

def facts(_):
    import os, sys, time
    time.sleep(0.5)          # both workers get a task
    return {"pid": os.getpid(), "parent": os.getppid(), "warm": "fedcheck.catalog.warm" in sys.modules,
            "blas": os.environ.get("OPENBLAS_NUM_THREADS"), "mark": os.environ.get("FEDCHECK_TEST_MARK"),
            "malloc": sys.modules["fedcheck.core.allocator"]._STATE.get("applied")
            if "fedcheck.core.allocator" in sys.modules else None,
            "tick": __import__("dask").config.get("distributed.admin.tick.interval"),
            "stealing": __import__("dask").config.get("distributed.scheduler.work-stealing")}

if __name__ == "__main__":
    os.environ["FEDCHECK_TEST_MARK"] = "first"
    first = map_tasks(facts, range(4), jobs=2)
    again = map_tasks(facts, range(4), jobs=2)
    os.environ["FEDCHECK_TEST_MARK"] = "changed"
    changed = map_tasks(facts, range(4), jobs=2)
    print(json.dumps({"me": os.getpid(), "first": first, "again": again, "changed": changed}))
"""


def test_embedded_workers_start_from_a_preloading_forkserver(tmp_path):
    """The workers of ``-j 2`` are forked by a forkserver that imported :mod:`fedcheck.catalog.warm` (not by the
    parent, not spawned to import everything again), with the parent's environment and Dask's pre-spawn variables
    (one BLAS thread) as a spawned worker has them; once the parent's environment changes, workers are spawned
    again (the forkserver's would be stale).  Every worker runs with the embedded cluster's Dask settings
    (``LOCAL_CONFIG``); a forked one also with the forkserver's allocator settings (:mod:`fedcheck.core.allocator`)."""
    import os
    import subprocess
    import sys

    from fedcheck.core.allocator import _glibc
    (tmp_path / "facts.py").write_text(FORKSERVER_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "FEDCHECK_TUNE_MALLOC"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path), os.environ.get("PYTHONPATH", "")])
    run = subprocess.run([sys.executable, str(tmp_path / "facts.py")], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    for name in ("first", "again"):
        facts = out[name]
        assert len({f["pid"] for f in facts}) == 2
        for f in facts:
            assert f["warm"] and f["parent"] != out["me"], f          # forked by the preloading forkserver
            assert f["blas"] == "1" and f["mark"] == "first", f
            assert f["malloc"] is (_glibc() is not None), f           # the forkserver tuned it, the workers inherit
    for f in out["first"] + out["again"] + out["changed"]:
        assert f["tick"] == P.LOCAL_CONFIG["distributed.admin.tick.interval"] and f["stealing"] is False, f
    for f in out["changed"]:
        assert f["mark"] == "changed" and not f["warm"] and f["parent"] == out["me"], f   # spawned: the new value


PRESTART_SCRIPT = """
import json, os, sys
from multiprocessing import forkserver
from fedcheck.catalog import parallel as P
from fedcheck.catalog.parallel import map_tasks

def facts(_):
    import os, sys, time
    time.sleep(0.5)
    return {"parent": os.getppid(), "warm": "fedcheck.catalog.warm" in sys.modules,
            "blas": os.environ.get("OPENBLAS_NUM_THREADS"), "hashseed": os.environ.get("PYTHONHASHSEED")}

if __name__ == "__main__":
    P._save_durations("quick", {"fedfw.one": 30.0, "fedfw.two": 12.0})
    no = [P.prestart(["fedfw"], 1, None, False), P.prestart(["fedfw"], None, "tcp://h:1", False),
          P.prestart(["nothing.known"], None, None, False), P.prestart(["fedfw.one"], None, None, False),
          forkserver._forkserver._forkserver_pid is None]
    yes = P.prestart(["fedfw"], None, None, False)
    pid = forkserver._forkserver._forkserver_pid
    env = dict(os.environ)
    out = map_tasks(facts, range(4), jobs=2)
    print(json.dumps({"no": no, "yes": yes, "server": pid, "same_server": forkserver._forkserver._forkserver_pid == pid,
                      "env_kept": P._FORKSERVER.get("env") == tuple(sorted(env.items())), "facts": out}))
"""


def test_prestart_starts_the_workers_forkserver_early_only_for_a_parallel_run(tmp_path):
    """``prestart`` (called by ``verify`` before it loads the catalog) starts the local workers' forkserver only
    when the durations of the last runs say the named claims will run on local workers (not with ``-j 1``, a
    ``--scheduler``, unknown names, or one claim); the cluster then uses that forkserver, whose environment is
    the one the nanny would have given it (one BLAS thread, Dask's hash seed)."""
    import os
    import subprocess
    import sys
    cache = tmp_path / "cache"          # a new cache folder: the script writes the durations of "last runs" into it
    (tmp_path / "pre.py").write_text(PRESTART_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "OPENBLAS_NUM_THREADS")}
    env.update(FEDCHECK_CACHE=str(cache),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, str(tmp_path / "pre.py")], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["no"] == [False, False, False, False, True], out
    assert out["yes"] is True and out["server"] and out["same_server"] and out["env_kept"], out
    for f in out["facts"]:
        assert f["warm"] and f["parent"] == out["server"], f          # forked by the forkserver prestart started
        assert f["blas"] == "1" and f["hashseed"] == "6640", f


def test_map_tasks_raises_a_task_error(cluster):
    with pytest.raises(ZeroDivisionError):
        map_tasks(_divide, [1, 0], scheduler=cluster)


def _divide(x):
    return 1 / x


# ---- claims on workers equal the serial run ------------------------------------------------------
def test_fast_claims_bit_identical_serial_and_two_workers(cluster):
    checks = default_registry().resolve(FAST)
    config = RunConfig()
    [c.run(config) for c in checks]                     # fill the solve cache (``cached`` is reported)
    serial = [c.run(config).to_dict() for c in checks]
    done = []
    parallel = run_checks(checks, config, jobs=2, scheduler=cluster, on_done=done.append)
    assert [r.id for r in parallel] == FAST and sorted(c.id for c in done) == sorted(FAST)
    for a, b in zip(serial, parallel):
        assert _strip(a) == _strip(b.to_dict()), a["id"]


def test_cli_scheduler_equals_jobs_1(tmp_path, cluster):
    def run(name, *extra):
        out = tmp_path / f"{name}.json"
        code = main(["verify", "fedfw.lemma2", "fedfw.condition29", "-q", "--no-report", "--json", str(out), *extra])
        return code, json.loads(out.read_text())["checks"]
    c1, serial = run("j1", "-j", "1")
    c2, parallel = run("dask", "--scheduler", cluster)
    assert c1 == c2 == 1
    assert _strip(serial) == _strip(parallel)


def test_saved_instances_come_back_from_the_workers(tmp_path, cluster):
    """lemma2 refutes and saves its instances: a worker writes them in its own scratch folder and sends them
    back; they land where a serial run puts them."""
    lemma2 = default_registry().resolve(["fedfw.lemma2"])
    serial = lemma2[0].run(RunConfig(save_dir=str(tmp_path / "serial"))).to_dict()
    [res] = run_checks(lemma2 * 1, RunConfig(save_dir=str(tmp_path / "dask")), jobs=2, scheduler=cluster)
    saved = [Path(p) for p in res.saved_instances]
    # each claim saves into its own folder (fedcheck.core.outputs.check_folder)
    assert saved and all(p.is_file() and p.parent == tmp_path / "dask" / "fedfw.lemma2" for p in saved)
    assert [Path(p).name for p in serial["saved_instances"]] == [p.name for p in saved]
    for p in saved:
        if p.suffix == ".npz":
            a = np.load(p, allow_pickle=False)
            b = np.load(tmp_path / "serial" / "fedfw.lemma2" / p.name, allow_pickle=False)
            assert sorted(a.files) == sorted(b.files) and all(np.array_equal(a[k], b[k]) for k in a.files)


def _tiny_measure(ctx):
    v = float(np.add(1.0, 1.0))
    return MeasureResult([Finding("1 + 1 = 2", "holds" if v == 2.0 else "violated")],
                         evidence={"value": v, "seeds": list(ctx.config.seeds or [])})


def _tiny():
    """A claim built in Python (not in the catalog): sent to the workers by value."""
    return Claim(id="fedfw.tiny", paper=theorem1.paper, reference="-", statement="1 + 1 = 2",
                 evidence=Measurement(_tiny_measure))


def _plain_fedfw(batch, **kwargs):
    """theorem1's algorithm without streaming (judged on the recorded rounds): a claim split by instances."""
    return theorem1.evidence.experiment.algorithm(batch, **kwargs)


def _split_claim():
    import dataclasses
    ev = theorem1.evidence
    return dataclasses.replace(theorem1, id="fedfw.split_by_seeds", aliases=(), evidence=dataclasses.replace(
        ev, experiment=dataclasses.replace(ev.experiment, algorithm=_plain_fedfw)))


def test_split_claim_mixed_shapes_and_a_whole_claim(cluster):
    """Claims split by instances (parts on two workers, replayed here) over instances of two shapes (two
    batches: fits pooled in the serial order) -- one judged on the recorded rounds, one at every round from
    the engine's stream -- and a claim built in Python, whole."""
    fam_b = RandomFamily(loss="least_squares", set="l1", n=4, m=12, p=8, radius=1.0)
    insts = [theorem1.evidence.experiment.family.draw(s) for s in range(3)] + [fam_b.draw(s) for s in range(3)]
    insts = [insts[k] for k in (0, 3, 1, 4, 5, 2)]   # interleave the shapes
    config = RunConfig(instances=insts, rounds=300)
    split, tiny = _split_claim(), _tiny()
    assert splittable(split) and splittable(theorem1) and not splittable(tiny)
    theorem1.run(RunConfig(instances=insts, rounds=5))   # fill the solve cache
    serial = [c.run(config) for c in (split, theorem1, tiny)]
    parallel = run_checks([split, theorem1, tiny], config, jobs=2, scheduler=cluster)
    for a, b in zip(serial, parallel):
        assert _strip(a.to_dict()) == _strip(b.to_dict())
    assert serial[0].evidence["batches"] == 2 and len(serial[0].instances) == 6


def test_a_part_leaves_the_printed_formulas_to_the_replay(monkeypatch):
    """A part of a split claim returns the solver's and the algorithm's results only; the printed formulas'
    check (LaTeX parsing, SymPy) is made once, by the parent's replay -- not again in every part."""
    from fedcheck.core import latex
    assert any(b.latex for b in theorem1.evidence.bounds)
    insts = [theorem1.evidence.experiment.family.draw(s) for s in range(2)]
    theorem1.run(RunConfig(instances=insts, rounds=5))   # fill the solve cache

    def refuse(bound):
        raise AssertionError(f"a part checked the printed formula of {bound.name}")
    monkeypatch.setattr(latex, "check_bound", refuse)
    part = P._task_part(("value", theorem1), RunConfig(instances=insts, rounds=20, progress=False))
    assert len(part["solutions"]) == len(part["traces"]) == 2


def _tight(claim, factor, **exp_changes):
    """``claim`` with its bound scaled by ``factor`` (a planted refutation when small)."""
    import dataclasses
    ev = claim.evidence
    bounds = tuple(dataclasses.replace(b, expr=b.expr * factor) for b in ev.bounds)
    return dataclasses.replace(claim, id=f"{claim.id}_x{factor:g}", aliases=(), evidence=dataclasses.replace(
        ev, bounds=bounds, experiment=dataclasses.replace(ev.experiment, **exp_changes)))


def test_streamed_claims_with_replicates_split_by_instances_equal_serial(cluster, tmp_path):
    """Claims judged at every round from the engine's stream, with several stochastic runs per instance
    (Theorem 3), split by instances over two workers: the judgements of each part's stream, put back into the
    parent's every-round check, give the serial result -- holds, and a planted refutation (the bound scaled
    down) with its failing instances saved where a serial run saves them."""
    from fedcheck.catalog.registry import default_registry
    th3 = default_registry().resolve(["fedfw.theorem3"])[0]
    assert splittable(th3)
    cases = [_tight(th3, 1, replicates=5), _tight(th3, 1e-5, replicates=5), _tight(theorem1, 1e-3)]   # >= MIN_DRAWS
    config = RunConfig(seeds=list(range(5)), rounds=300, progress=False)
    [c.run(config) for c in cases]                                     # fill the solve cache
    serial_dir, par_dir = tmp_path / "serial", tmp_path / "par"
    import dataclasses
    serial = [c.run(dataclasses.replace(config, save_dir=str(serial_dir))) for c in cases]
    parallel = run_checks(cases, dataclasses.replace(config, save_dir=str(par_dir)), jobs=2, scheduler=cluster)
    assert [r.verdict for r in serial] == ["holds", "violated", "violated"]
    for a, b in zip(serial, parallel):
        da, db = _strip(a.to_dict()), _strip(b.to_dict())
        da.pop("saved_instances", None), db.pop("saved_instances", None)
        assert json.dumps(da, sort_keys=True, default=str) == json.dumps(db, sort_keys=True, default=str), a.id
    names = lambda d: sorted(p.name for p in d.rglob("*") if p.is_file())       # noqa: E731
    assert names(serial_dir) == names(par_dir) and names(serial_dir)


# ---- user theorem files on the workers -----------------------------------------------------------
def test_user_theorem_file_claims_on_workers(tmp_path, cluster):
    def run(name, *extra):
        out = tmp_path / f"{name}.json"
        code = main(["verify", "--theorem-file", str(EXAMPLE), "my.fast_rate", "my.too_good", "--rounds", "150",
                     "--seeds", "2", "-q", "--no-report", "--json", str(out), *extra])
        return code, json.loads(out.read_text())["checks"]
    run("warm", "-j", "1")
    c1, serial = run("j1", "-j", "1")
    c2, parallel = run("dask", "--scheduler", cluster)
    assert c1 == c2 == 1 and [r["verdict"] for r in parallel] == ["holds", "violated"]
    assert _strip(serial) == _strip(parallel)


def test_a_worker_without_the_file_loads_the_source_sent_along(tmp_path, cluster):
    """On a machine without the user's file (a remote worker) the claim comes from the source shipped in the task."""
    ref = ("id", "my.too_good", ((str(tmp_path / "elsewhere" / "my_claims.py"), EXAMPLE.read_text()),))
    [claim] = map_tasks(P._resolve, [ref], scheduler=cluster)
    assert claim.id == "my.too_good"


# ---- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["tcp://", "localhost", "tcp://host:port", "http//host:8786", "tcp://h:99999",
                                   "smtp://host:8786", "missing-file.json"])
def test_bad_scheduler_is_one_line_exit_2(value, capsys):
    assert main(["verify", "fedfw.lemma2", "theorem1", "-q", "--no-report", "--scheduler", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fedcheck: error: --scheduler"), err


def test_unreachable_scheduler_is_one_line_exit_2(capsys, monkeypatch):
    monkeypatch.setattr(P, "CONNECT_TIMEOUT", 1.0)
    t0 = time.perf_counter()
    assert main(["verify", "fedfw.lemma2", "theorem1", "-q", "--no-report", "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tcp://127.0.0.1:9" in err[0] and "cannot reach" in err[0], err
    assert time.perf_counter() - t0 < 30


def test_good_scheduler_addresses():
    assert P.check_scheduler("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert P.check_scheduler("node-7.cluster:8786") == "tcp://node-7.cluster:8786"
    assert P.check_scheduler("tls://[::1]:8786") == "tls://[::1]:8786"


def test_cli_rejects_negative_jobs(tmp_path, capsys):
    assert main(["verify", "theorem1", "--seeds", "2", "--rounds", "50", "-q", "--no-report", "-j", "-1"]) == 2


def test_default_jobs_runs_a_single_claim_here():
    assert auto_jobs([theorem1], RunConfig()) == 1
    assert auto_jobs([theorem1, _tiny()], RunConfig(seeds=[0])) == 1     # little work: no workers


# ---- pieces ----------------------------------------------------------------------------------------
def test_full_mode_uses_full_rounds_and_seeds():
    exp = theorem1.evidence.experiment

    def claim(**kw):
        return Claim(id="x.bound", paper=theorem1.paper, reference="-", statement="-",
                     evidence=BoundTest(Rounds(family=exp.family, algorithm=exp.algorithm, schedules=exp.schedules, **kw),
                                        bounds=theorem1.evidence.bounds))
    r = claim(rounds=40, full_rounds=250, seeds=2, full_seeds=3).evidence.experiment
    assert r.rounds_for(RunConfig()) == 40
    assert r.rounds_for(RunConfig(full=True)) == 250
    assert r.rounds_for(RunConfig(full=True, rounds=7)) == 7
    assert len(r.instances(RunConfig())) == 2 and len(r.instances(RunConfig(full=True))) == 3
    plain = claim(rounds=100).evidence.experiment
    assert plain.rounds_for(RunConfig()) == plain.rounds_for(RunConfig(full=True)) == 100


@pytest.mark.parametrize("n,k", [(5, 2), (2, 4), (16, 3), (1, 1)])
def test_parts_keep_order_and_cover(n, k):
    items = list(range(n))
    parts = _parts(items, k)
    assert sum(parts, []) == items and len(parts) == min(n, k)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_search_on_the_cluster_is_bit_identical_to_serial(cluster, tmp_path):
    """`fedcheck search` spreads its batches (random screen, CMA-ES generations, baseline) over Dask workers;
    the draws stay in the parent, so the trajectory and the best instance are those of a serial search."""
    from fedcheck.tools.search import search, search_document
    docs = []
    for k, kw in enumerate(({}, {"jobs": 2, "scheduler": cluster})):
        o = search(theorem1, budget=8, restarts=1, seed=3, rounds=40, verify_rounds=60, do_shrink=False,
                   out=tmp_path / str(k), **kw)
        d = search_document(o, theorem1)
        docs.append((d["trajectory"], d["best"]["instance"]["hash"], d["best"]["ratio_verified"]))
    assert docs[0] == docs[1]


def test_search_cli_takes_jobs_and_scheduler(cluster, tmp_path, capsys):
    assert main(["search", "theorem1", "--budget", "4", "--restarts", "1", "--rounds", "30", "--verify-rounds", "40",
                 "--no-shrink", "--no-report", "-q", "--scheduler", cluster, "--out", str(tmp_path)]) in (0, 1)
    assert main(["search", "theorem1", "--budget", "4", "-j", "0", "--out", str(tmp_path / "x")]) == 2
    assert "-j/--jobs must be >= 1" in capsys.readouterr().err


UNGUARDED_SCRIPT = """
import json
import sympy as sp
import fedcheck
from fedcheck import Bound, BoundTest, Claim, Paper, Rounds
from fedcheck import algorithms as engine
from fedcheck.problems import RandomFamily
from fedcheck.symbols import D, L, lambda_0, n, t

print("script body ran", flush=True)
mine = Claim(id="mine.fast_rate", paper=Paper(key="mine", title="mine", authors="me"), reference="conjecture",
             statement="F(xbar^t) - F* <= 2 n L D^2 / (t + 1)",
             evidence=BoundTest(Rounds(family=RandomFamily(loss="least_squares", set="l1", n=4, m=8, p=6),
                                       algorithm=engine.fedfw, schedules={"eta": 2 / (t + 1),
                                                                          "lam": lambda_0 * sp.sqrt(t + 1)},
                                       valid_from=2, seeds=2, rounds=300),
                                bounds=(Bound("conjecture", 2 * n * L * D**2 / (t + 1)),)),
             params={"lambda_0": 1.0})
res = fedcheck.verify(mine, "fedfw.lemma3", jobs=2, rounds=300)
serial = fedcheck.verify(mine, "fedfw.lemma3", rounds=300)
print(json.dumps([[(r.verdict, r.max_ratio) for r in res], [(r.verdict, r.max_ratio) for r in serial]]))
"""


def test_a_script_without_a_main_guard_runs_its_claims_on_workers(tmp_path):
    """A user's script with no ``if __name__ == "__main__":`` guard, verifying with ``jobs=2`` a claim it defines
    and one of the catalog: the workers (and their forkserver) do not run the script again -- it would start its
    own cluster there and fail -- and the script's own claim reaches them by value."""
    import os
    import subprocess
    import sys
    (tmp_path / "mine.py").write_text(UNGUARDED_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, str(tmp_path / "mine.py")], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    assert lines.count("script body ran") == 1, run.stdout      # once: in the user's process only
    on_workers, here = json.loads(lines[-1])
    assert len(on_workers) == 2 and on_workers == here, (on_workers, here)     # as a serial run in the script
