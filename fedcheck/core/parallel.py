"""Checks and seeds in parallel processes, with results identical to a serial run.

``fedcheck verify ... -j N`` runs :func:`run_checks` with ``jobs=N``.  The work is cut in two ways:

* a claim whose evidence is a bound test over a :class:`~fedcheck.experiments.Rounds` experiment is split by instances:
  its instances (seeds) are dealt into contiguous parts, and each part runs in a worker
  process -- exact solves and the engine, the expensive work.  The workers send back what the
  solver and the algorithm returned for each instance.  The parent then *replays* the check's
  own ``run`` with a solver and an algorithm that hand back those results: the per-instance
  records, verdicts, rate fits and every aggregate are computed by the check's own code, in
  the serial order, so the result is the serial result (the engine's numbers for an instance do
  not depend on which other instances share its batch; ``tests/test_engine_speed.py`` and
  ``tests/test_parallel.py`` check this).  The SymPy claims of the check are evaluated once,
  in the parent, while the workers run;
* every other check runs whole in one worker process.

Workers are forked where the platform allows it (they inherit the registry, including checks
from ``--theorem-file``); elsewhere they are spawned and rebuild the registry from the check ids
and theorem files.  BLAS is limited to one thread per worker.  ``jobs <= 1`` runs serially, in
this process, exactly as before.
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence

import numpy as np

from fedcheck.algorithms import Trace
from fedcheck.core.claim import Claim, Result, RunConfig
from fedcheck.core.evidence import BoundTest, Fact

CheckResult = Result
Check = Claim

__all__ = ["run_checks", "splittable", "default_jobs"]

_CHECKS: list[Check] = []           # the checks of the current run (inherited by forked workers)
_REFS: list[tuple[str, tuple]] = []  # (id, theorem files) to find them again in spawned workers


def default_jobs() -> int:
    """The number of CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def splittable(check: Claim) -> bool:
    """Whether a claim can be cut by instances and replayed (a bound test over a ``Rounds`` experiment)."""
    from fedcheck.experiments import Rounds
    if not (isinstance(check.evidence, BoundTest) and type(check.evidence.experiment) is Rounds):
        return False
    exp = check.evidence.experiment     # one run per instance: a trace row is keyed by its instance
    from fedcheck.experiments import _streams
    if _streams(exp.algorithm):         # judged at every round inside the run: the claim runs whole in a worker
        return False
    return exp.replicates == 1 and (exp.full_replicates or 1) == 1 and len(exp.param_grid) == 1


def _with_experiment(check: Claim, **changes) -> Claim:
    ev = check.evidence
    return dataclasses.replace(check, evidence=dataclasses.replace(ev, experiment=dataclasses.replace(ev.experiment, **changes)))


def _key(inst) -> tuple:
    return (inst.seed, inst.content_hash())


# ------------------------------------------------------------------------------------------------
# worker side
def _init_worker(refs) -> None:
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:  # pragma: no cover - threadpoolctl is optional
        pass
    if not _CHECKS and refs:  # spawned: find the checks again
        from fedcheck.core.registry import default_registry
        reg = default_registry()
        for f in sorted({f for _, files in refs for f in files}):
            reg.load_file(f)
        _CHECKS.extend(reg.resolve([cid])[0] for cid, _ in refs)


def _slice_trace(trace: Trace, j: int) -> Trace:
    """Instance ``j`` of a batch's trace (metrics: instances on axis 1; final: on axis 0)."""
    return Trace(rounds=np.asarray(trace.rounds),
                 metrics={k: np.asarray(v)[:, j] for k, v in trace.metrics.items()},
                 final={k: np.asarray(v)[j] for k, v in trace.final.items()})


def _run_part(index: int, config: RunConfig) -> dict:
    """Run instances of a splittable check; return the solver's and the algorithm's results per instance."""
    check = _CHECKS[index]
    sols, traces = {}, {}

    exp = check.evidence.experiment
    base_solver = exp._solver()

    def solver(inst, use_cache=True):
        sol = base_solver(inst, use_cache=use_cache)
        sols[_key(inst)] = sol
        return sol

    def algorithm(batch, **kwargs):
        trace = exp.algorithm(batch, **kwargs)
        for j, inst in enumerate(batch.instances):
            traces[_key(inst)] = _slice_trace(trace, j)
        return trace
    worker_check = dataclasses.replace(_with_experiment(check, solver=solver, algorithm=algorithm), symbolic=())
    worker_check.run(config)
    return {"solutions": sols, "traces": traces}


def _run_whole(index: int, config: RunConfig) -> CheckResult:
    return _CHECKS[index].run(config)


# ------------------------------------------------------------------------------------------------
# parent side
def _replay(check: Claim, config: RunConfig, parts: Sequence[dict], symbolic: list[dict]) -> CheckResult:
    sols, traces = {}, {}
    for part in parts:
        sols.update(part["solutions"])
        traces.update(part["traces"])

    def solver(inst, use_cache=True):
        return sols[_key(inst)]

    def algorithm(batch, **kwargs):
        pieces = [traces[_key(inst)] for inst in batch.instances]
        return Trace(rounds=pieces[0].rounds,
                     metrics={k: np.stack([pc.metrics[k] for pc in pieces], axis=1) for k in pieces[0].metrics},
                     final={k: np.stack([pc.final[k] for pc in pieces]) for k in pieces[0].final})
    done = [Fact(d["name"], (lambda d=d: (d["verdict"], d["evidence"]))) for d in symbolic]
    replay = dataclasses.replace(_with_experiment(check, solver=solver, algorithm=algorithm), symbolic=tuple(done))
    return replay.run(dataclasses.replace(config, progress=False))


def _parts(items: list, k: int) -> list[list]:
    """``items`` dealt into at most ``k`` contiguous parts of near-equal size (order kept)."""
    k = max(1, min(k, len(items)))
    size, extra = divmod(len(items), k)
    out, start = [], 0
    for i in range(k):
        stop = start + size + (1 if i < extra else 0)
        out.append(items[start:stop])
        start = stop
    return [p for p in out if p]


def _context():
    methods = mp.get_all_start_methods()
    return mp.get_context("fork" if "fork" in methods else "spawn")


def run_checks(checks: Sequence[Check], config: RunConfig, jobs: int = 1, theorem_files: Sequence[str] = (),
               on_done: Callable[[Check], None] | None = None) -> list[CheckResult]:
    """Run ``checks`` with ``config`` using up to ``jobs`` processes; results in the order of ``checks``,
    equal to ``[c.run(config) for c in checks]`` except for timings."""
    checks = list(checks)
    if jobs <= 1 or not checks:
        out = []
        for chk in checks:
            out.append(chk.run(config))
            if on_done:
                on_done(chk)
        return out
    _CHECKS[:] = checks
    _REFS[:] = [(c.id, tuple(theorem_files)) for c in checks]
    quiet = dataclasses.replace(config, progress=False)
    t0 = time.perf_counter()
    results: list[CheckResult | None] = [None] * len(checks)
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=_context(), initializer=_init_worker,
                                 initargs=(_REFS if _context().get_start_method() != "fork" else [],)) as pool:
            pending = []
            for i, chk in enumerate(checks):
                if splittable(chk):
                    insts = chk.evidence.experiment.instances(config)
                    subs = [dataclasses.replace(quiet, instances=part, seeds=None, save_dir=None)
                            for part in _parts(insts, jobs)]
                    pending.append((i, "split", [pool.submit(_run_part, i, c) for c in subs]))
                else:
                    pending.append((i, "whole", [pool.submit(_run_whole, i, quiet)]))
            # SymPy claims of the split checks, here, while the workers run
            symbolic = {i: [s.evaluate() for s in checks[i].symbolic] for i, kind, _ in pending if kind == "split"}
            for i, kind, futs in pending:
                if kind == "whole":
                    results[i] = futs[0].result()
                else:
                    results[i] = _replay(checks[i], config, [f.result() for f in futs], symbolic[i])
                    results[i].seconds = time.perf_counter() - t0
                if on_done:
                    on_done(checks[i])
    finally:
        _CHECKS.clear()
        _REFS.clear()
    return results  # type: ignore[return-value]


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use 'fedcheck verify ... -j N'")
