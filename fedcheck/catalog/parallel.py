"""Checks, seeds and searches as Dask tasks, with results identical to a serial run.

``fedcheck verify ... -j N`` runs :func:`run_checks` on an embedded :class:`distributed.LocalCluster` of
``N`` worker processes (one thread each); ``--scheduler tcp://host:8786`` runs the same tasks on an existing
Dask cluster instead; ``-j 1`` runs serially, in this process, with no cluster.  The work is cut in two ways:

* a claim whose evidence is a bound test over a :class:`~fedcheck.experiments.Rounds` experiment with one
  parameter setting is split by instances (:func:`splittable`): its instances (seeds) are dealt into
  contiguous parts, and each part runs as one task -- exact solves and the engine, the expensive work, with
  every replicate run of its instances.  The tasks send back what the solver and the algorithm returned for
  each instance and, for a claim judged at every round from the engine's stream, what its every-round check
  judged for each instance (the judgements are per instance, over that instance's replicates; the replicate
  streams are seeded by instance and replicate, never by position).  The parent then *replays*
  the check's own ``run`` with a solver and an algorithm that hand back those results: the per-instance
  records, verdicts, rate fits and every aggregate are computed by the check's own code, in the serial
  order (its every-round check is handed the parts' judgements: :func:`_fill_stream`), so the result is the
  serial result (the engine's numbers for an instance do not depend on which
  other instances share its batch; ``tests/test_engine_speed.py`` and ``tests/test_parallel.py`` check
  this).  The SymPy claims of the check are evaluated once, in the parent, while the workers run;
* every other check runs whole as one task.

Randomness comes only from the claims' own ``SeedSequence`` streams, so where a task runs does not change
its numbers; results are put back in the order of the claims whatever the order the tasks finish in.
Tasks are queued longest first (the durations of the last runs, kept beside the solve cache; claims never
timed go first), which keeps the two cores of a small machine busy until the end.

A claim is sent to a worker by reference where it can be: a catalog claim by its id, a claim of a user's
``--theorem-file`` by its id and the file (path and source: the worker loads the file once, from its path
when it holds the same text, else from a copy of the source, so a remote worker needs no shared disk).
Any other claim (built in Python) is pickled by value.  Refuting instances a task saves are written in a
scratch folder of the worker and sent back with its result; the parent writes them where a serial run
would have.  BLAS is limited to one thread per task.

:func:`map_tasks` is the general tool (``search`` uses it for its batches): ``fn`` over ``items`` as Dask
tasks, results in the order of ``items``.  :func:`session` keeps one cluster (or one connection) open for
several calls.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from fedcheck.core.claim import Claim, Result, RunConfig
from fedcheck.core.errors import BadInput, SchedulerLost
from fedcheck.core.evidence import BoundTest, Fact

CheckResult = Result
Check = Claim

__all__ = ["run_checks", "map_tasks", "session", "splittable", "default_jobs", "auto_jobs", "check_scheduler",
           "CONNECT_TIMEOUT", "WORKER_TIMEOUT", "LOST_TIMEOUT", "worker_timeout"]

CONNECT_TIMEOUT = 10.0     # seconds to reach a --scheduler before giving up (exit 2)
WORKER_TIMEOUT = 30.0      # seconds for a first worker to join a --scheduler before giving up (exit 2)
LOST_TIMEOUT = 20.0        # seconds without the scheduler of a running --scheduler run before giving up (exit 5)
_ACTIVE: list = []         # the Dask client of the open session(s), innermost last
_LOGGERS = ("distributed", "tornado", "bokeh", "asyncio")


def default_jobs() -> int:
    """The number of CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def splittable(check: Claim) -> bool:
    """Whether a claim can be cut by instances and replayed: a bound test over a ``Rounds`` experiment with one
    parameter setting -- also with replicates per instance (each instance's runs stay in one part; their
    streams are seeded per instance and replicate) and when it is judged at every round from the engine's
    stream (each part judges its instances; the judgements are per instance)."""
    from fedcheck.experiments import Rounds
    if not (isinstance(check.evidence, BoundTest) and type(check.evidence.experiment) is Rounds):
        return False
    return len(check.evidence.experiment.param_grid) == 1


# ------------------------------------------------------------------------------------------------
# scheduler addresses and sessions
_ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z][a-z0-9+.-]*)://)?(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)"
                      r":(?P<port>[0-9]{1,5})/?$")
_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")


def check_scheduler(text: str) -> str:
    """A ``--scheduler`` value in Dask's form (``tcp://host:8786``, ``tls://...``, ``host:8786``) or the path of
    a scheduler file (``dask scheduler --scheduler-file FILE.json``); anything else is bad input (exit 2)."""
    text = (text or "").strip()
    if text.endswith(".json") and "://" not in text:
        if not Path(text).is_file():
            raise BadInput(f"--scheduler {text}: no such scheduler file")
        return text
    m = _ADDRESS.match(text)
    if not m:
        raise BadInput(f"--scheduler {text!r}: not a Dask scheduler address (expected e.g. tcp://host:8786 "
                       "or a scheduler file .json)")
    if m.group("scheme") and m.group("scheme") not in _SCHEMES:
        raise BadInput(f"--scheduler {text!r}: unknown protocol {m.group('scheme')!r} (expected one of "
                       f"{', '.join(_SCHEMES)})")
    if not 1 <= int(m.group("port")) <= 65535:
        raise BadInput(f"--scheduler {text!r}: port {m.group('port')} is out of range 1-65535")
    return text if m.group("scheme") else f"tcp://{text}"


@contextlib.contextmanager
def _quiet_logs(level=logging.CRITICAL):
    """Dask's loggers (and their children, which Dask's logging config gives levels of their own: a lost
    scheduler's reconnection attempts would print tracebacks) silenced; fedcheck says what happened in one line."""
    import distributed  # noqa: F401  (its import configures its loggers: silence them after that)
    names = [n for n in list(logging.root.manager.loggerDict) if n.split(".")[0] in _LOGGERS] + list(_LOGGERS)
    saved = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(level)
    try:
        yield
    finally:
        for name, lv in saved.items():
            logging.getLogger(name).setLevel(lv)


@contextlib.contextmanager
def session(jobs: int = 1, scheduler: str | None = None):
    """A Dask client for the tasks of a run: connected to ``scheduler``, or an embedded ``LocalCluster`` of
    ``jobs`` worker processes (one thread each); ``None`` (serial, in this process) when ``jobs <= 1`` and no
    scheduler is given.  Inside an open session, the same client is reused.  The cluster is closed on exit,
    errors, Ctrl-C and SIGTERM (which :func:`fedcheck.cli.main.main` turns into an exception)."""
    if _ACTIVE:
        yield _ACTIVE[-1]
        return
    if scheduler is None and jobs <= 1:
        yield None
        return
    import dask
    with contextlib.ExitStack() as stack:
        stack.enter_context(_quiet_logs())
        import distributed
        from distributed import Client
        if scheduler is not None:
            address = check_scheduler(scheduler)
            kw = {"scheduler_file": address} if address.endswith(".json") and "://" not in address else \
                 {"address": address}
            try:
                client = Client(**kw, timeout=CONNECT_TIMEOUT, set_as_default=False)
            except (OSError, TimeoutError, ValueError) as e:
                why = " ".join(str(e).split())[:200] or type(e).__name__
                raise BadInput(f"--scheduler {scheduler}: cannot reach a Dask scheduler there ({why})") from None
            stack.callback(_close_quietly, client)
            wait = worker_timeout()
            try:                # a scheduler without workers would leave every task queued forever
                client.wait_for_workers(1, timeout=wait)
            except (TimeoutError, OSError):
                raise BadInput(f"--scheduler {scheduler}: no Dask worker joined the scheduler within {wait:g} s "
                               f"(start some: dask worker {address})") from None
        else:
            # Dask's nanny starts each worker with MALLOC_TRIM_THRESHOLD_=65536 (memory back to the OS at once),
            # which also fixes glibc's mmap threshold: every numpy temporary over 128 KiB is then a fresh
            # mapping, its pages faulted in again.  The engine allocates such temporaries every round: Theorem 3's
            # --full runs took 1.5x the CPU time of this process's (18.8 s against 12.3 s per instance).  The
            # workers get no such variable: the forkserver they are forked from sets fedcheck's allocator settings,
            # as the CLI's process does (fedcheck.core.allocator).
            stack.enter_context(dask.config.set(LOCAL_CONFIG))
            forkserver = _preloading_forkserver(stack)
            from fedcheck.core.usercode import main_not_imported
            with main_not_imported():   # the forkserver and the workers do not run the user's script again
                cluster = distributed.LocalCluster(n_workers=int(jobs), threads_per_worker=1, processes=True,
                                                   scheduler_port=0, memory_limit=0, silence_logs=logging.CRITICAL,
                                                   dashboard_address=None,     # no dashboard; its HTTP server
                                                   scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"})
            stack.callback(cluster.close)
            if forkserver and not _FORKSERVER:  # the workers have started it: the environment it inherited
                _FORKSERVER["env"] = _environment()
            client = Client(cluster, set_as_default=False)
            stack.callback(client.close)
        _ACTIVE.append(client)
        stack.callback(_ACTIVE.pop)
        yield client


WARM_MODULES = ("distributed", "fedcheck.catalog.warm")   # what the forkserver of the local workers imports once
# The embedded cluster's Dask settings (the nanny hands them to its worker).  Dask's periodic housekeeping cost
# the idle cluster (scheduler and client here, two nannies, two workers) ~1.0 s of CPU per 15 s, ~4 s over a
# catalog run, taken from the checks; with the last four settings 0.4-0.5 s (benchmarks/HISTORY.md, "The quick
# catalog's CPU").  None of them is read by the tasks or the order they run in.
LOCAL_CONFIG = {
    "distributed.scheduler.worker-saturation": 1.0,     # tasks queue on the scheduler: longest first
    "distributed.worker.profile.enabled": False,        # no sampling profiler
    # see session(): the nanny's MALLOC_TRIM_THRESHOLD_ made every large temporary a fresh mapping
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    "distributed.admin.tick.interval": "1s",            # the event loops' latency probe (diagnostics): 20 ms by default
    "distributed.admin.system-monitor.interval": "10s",  # CPU/memory samples for the dashboard (there is none): 0.5 s
    "distributed.scheduler.active-memory-manager.start": False,   # results are gathered at once: nothing to move
    "distributed.scheduler.work-stealing": False,       # nothing to steal: tasks queue on the scheduler
}
_FORKSERVER: dict = {}      # "env": this process's environment when the forkserver of our workers started


def _environment() -> tuple:
    return tuple(sorted(os.environ.items()))


def _forkserver_usable() -> bool:
    """A forkserver exists here (POSIX) and the one of our workers, if started, has this process's environment."""
    import multiprocessing
    if "forkserver" not in multiprocessing.get_all_start_methods():     # pragma: no cover - not POSIX
        return False
    return not _FORKSERVER or _FORKSERVER["env"] == _environment()


def _preloading_forkserver(stack: contextlib.ExitStack) -> bool:
    """Start the local workers from a forkserver that has imported :mod:`fedcheck.catalog.warm` (the catalog,
    SymPy, SciPy, numba, statsmodels, the LaTeX parser) once, instead of spawning each worker to import them
    again (~3 s of CPU per worker).  The forkserver is a fresh single-threaded process started by
    ``multiprocessing`` (never a fork of this multi-threaded process); each worker gets this process's ``sys.path``
    and working directory when it starts, but the environment (and what the preloaded modules read of it) of
    when the forkserver started -- after Dask's nanny set its pre-spawn variables (one BLAS thread), as for a
    spawned worker.  So the forkserver is used only while the environment is the one it started with (one
    ``fedcheck`` command: always); after a change (a long-lived process, tests) workers are spawned as before.
    Where there is no forkserver (Windows), workers are spawned.  Returns whether the forkserver is used."""
    import dask
    if not _forkserver_usable():
        return False
    stack.enter_context(dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}))
    from distributed.utils import get_mp_context
    ctx = get_mp_context()          # sets Dask's own preload list (once per process); ours replaces it
    ctx.set_forkserver_preload(list(WARM_MODULES))
    return True


def prestart(names: Sequence[str], jobs: int | None, scheduler: str | None, full: bool) -> bool:
    """Start the forkserver of the local workers now -- before the catalog is loaded and the claims resolved
    (~1.4 s here) -- when the run will most likely start local workers: no ``--scheduler``, ``-j`` not 1, two or
    more CPUs, and the claims the names match in the durations of the last runs (an id, a paper prefix, or an id's
    last part) are at least two and expected to take :data:`MIN_PARALLEL_SECONDS`.  Its imports (~2 s on one
    core) then run beside this process's instead of after them.  Speed only: a forkserver the run does not use
    ends with this process; :func:`session` starts one as before when none was started.  Whether it started."""
    if scheduler is not None or (jobs is not None and jobs != 0 and jobs < 2) or default_jobs() < 2:
        return False
    known = _load_durations("full" if full else "quick")
    ids = {i for i in known for name in names
           if i == name or i.startswith(name + ".") or i.split(".", 1)[-1] == name}
    if len(ids) < 2 or sum(known[i] for i in ids) < MIN_PARALLEL_SECONDS:
        return False
    return _start_forkserver()


def _start_forkserver() -> bool:
    """Start the local workers' forkserver as the first worker's nanny would (best effort): under
    :data:`LOCAL_CONFIG`, preloading :data:`WARM_MODULES`, with the variables the nanny sets before it spawns a
    worker (``distributed.nanny.pre-spawn-environ`` and ``PYTHONHASHSEED``, the user's own values winning as
    there; ``__DASK_PARENT_PID``, for the process titles), which the nanny then sets again, unchanged.  ``False``
    where there is no forkserver, when one runs with another environment, or on any failure."""
    if not _forkserver_usable():
        return False
    try:
        import dask
        from multiprocessing import forkserver

        from distributed.utils import get_mp_context
        with dask.config.set({**LOCAL_CONFIG, "distributed.worker.multiprocessing-method": "forkserver"}):
            env = {k: os.environ.get(k, str(v))
                   for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items() if v is not None}
            if env.get("PYTHONHASHSEED") in (None, "0"):        # as distributed.nanny.Nanny.__init__
                env["PYTHONHASHSEED"] = "6640"
            get_mp_context().set_forkserver_preload(list(WARM_MODULES))
            os.environ.update(env)
            from distributed.proctitle import enable_proctitle_on_children
            enable_proctitle_on_children()                     # as the nanny's WorkerProcess does
            from fedcheck.core.usercode import main_not_imported
            with main_not_imported():                          # as session() starts it
                forkserver.ensure_running()
        return True
    except Exception:  # noqa: BLE001  (speed only)
        return False


def worker_timeout() -> float:
    """Seconds to wait for a first worker of a ``--scheduler`` (:data:`WORKER_TIMEOUT`, or
    ``$FEDCHECK_WORKER_TIMEOUT``)."""
    try:
        return max(0.1, float(os.environ.get("FEDCHECK_WORKER_TIMEOUT", WORKER_TIMEOUT)))
    except ValueError:
        return WORKER_TIMEOUT


def _close_quietly(client) -> None:
    with contextlib.suppress(Exception):
        client.close(timeout=5)


def _workers(client) -> int:
    return max(1, sum(client.nthreads().values()))


def _submit(client, fn, *args, key: str, priority: int = 0):
    return client.submit(fn, *args, key=key, priority=priority, pure=False)


def _wait(client, futures: list, on_each: Callable[[int, Any], None]) -> None:
    """Wait for ``futures``; ``on_each(index, result)`` in the order they finish.  On any error (Ctrl-C
    included) the tasks still queued are cancelled."""
    from distributed import as_completed
    where = {f.key: i for i, f in enumerate(futures)}
    try:
        for fut in as_completed(futures, loop=client.loop):
            on_each(where[fut.key], fut.result())
    except BaseException as e:
        lost = _lost(client, e)
        with contextlib.suppress(Exception):
            client.cancel(futures, force=True)
        if lost:
            raise SchedulerLost(f"the Dask scheduler {lost} went away during the run ({type(e).__name__}); the "
                                "run is abandoned and nothing of it was written: restart the scheduler and run "
                                "again") from None
        raise


def _lost(client, exc: BaseException) -> str | None:
    """The scheduler's address when ``exc`` means the client lost its scheduler (not a task's own error)."""
    if isinstance(exc, (KeyboardInterrupt, BadInput)) or type(exc).__name__ == "Terminated":
        return None
    text = f"{type(exc).__name__} {exc}"
    status = str(getattr(client, "status", "running"))
    gone = ("scheduler-connection-lost" in text or "CommClosedError" in text or "StreamClosedError" in text
            or status not in ("running", "newly-created"))
    if not gone:
        return None
    try:
        return str(client.scheduler.address)
    except Exception:  # noqa: BLE001
        return "of --scheduler"


def map_tasks(fn: Callable, items: Iterable, *, jobs: int = 1, scheduler: str | None = None,
              priorities: Sequence[float] | None = None, on_done: Callable[[int], None] | None = None) -> list:
    """``[fn(x) for x in items]`` with each call a Dask task (on a ``LocalCluster`` of ``jobs`` processes, on the
    cluster of ``scheduler``, or of the open :func:`session`); serially in this process when ``jobs <= 1`` and
    there is neither.  Results are in the order of ``items`` whatever the order the tasks finish in.  ``fn``
    and the items are pickled (a module-level function or a ``functools.partial`` of one); a task's exception
    is raised here.  ``priorities``: larger runs first (e.g. an estimated cost); ``on_done(i)`` after item
    ``i`` finished."""
    items = list(items)
    with session(jobs, scheduler) as client:
        if client is None or len(items) == 0:
            out = []
            for i, x in enumerate(items):
                out.append(fn(x))
                if on_done:
                    on_done(i)
            return out
        token = uuid.uuid4().hex[:8]
        pr = list(priorities) if priorities is not None else [0] * len(items)
        user = _user_module_objects()
        if user:        # a user's classes and functions travel by value: a worker cannot import their module
            futures = [_submit(client, _call_packed, _pack((fn, x), user), key=f"fedcheck-task-{token}-{i}",
                               priority=_prio(pr[i])) for i, x in enumerate(items)]
        else:
            futures = [_submit(client, _call, fn, x, key=f"fedcheck-task-{token}-{i}", priority=_prio(pr[i]))
                       for i, x in enumerate(items)]
        out: list = [None] * len(items)

        def got(i, r):
            out[i] = r
            if on_done:
                on_done(i)
        _wait(client, futures, got)
        return out


def _prio(cost: float) -> int:
    return int(round(1000 * float(cost)))


# ------------------------------------------------------------------------------------------------
# worker side
_REGISTRIES: dict = {}   # (theorem files) -> the registry of a worker process


def _one_blas_thread():
    try:
        from threadpoolctl import threadpool_limits
        return threadpool_limits(1)
    except ImportError:  # pragma: no cover - threadpoolctl is optional
        return contextlib.nullcontext()


def _call(fn, x):
    with _one_blas_thread():
        return fn(x)


def _user_module_objects() -> list:
    """The users' theorem files loaded in this process (modules ``fedcheck_user_*``: no worker can import them)."""
    return [m for name, m in list(sys.modules.items()) if name.startswith("fedcheck_user_") and m is not None]


def _pack(obj, modules: Sequence) -> bytes:
    """``obj`` pickled with the classes and functions of ``modules`` by value (cloudpickle), so a worker that
    never loaded those modules rebuilds them.  An object that cannot be pickled is a :class:`BadInput` here,
    at once, never a task a worker fails to read."""
    import cloudpickle
    registered = []
    try:
        for m in modules:
            with contextlib.suppress(ValueError):
                cloudpickle.register_pickle_by_value(m)
                registered.append(m)
        return cloudpickle.dumps(obj)
    except Exception as e:  # noqa: BLE001 - whatever a user's object holds
        raise BadInput(f"cannot send a task to the Dask workers: {type(e).__name__}: {e} (run with -j 1)") from None
    finally:
        for m in registered:
            with contextlib.suppress(ValueError):
                cloudpickle.unregister_pickle_by_value(m)


def _call_packed(blob: bytes):
    import cloudpickle
    fn, x = cloudpickle.loads(blob)
    return _call(fn, x)


def _local_file(path: str, source: str) -> str:
    """``path`` if this machine holds it with the same text, else a copy of ``source`` in a scratch folder."""
    p = Path(path)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if p.is_file() and p.read_text() == source:
            return str(p)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    d = Path(tempfile.gettempdir()) / "fedcheck-theorem-files" / digest
    d.mkdir(parents=True, exist_ok=True)
    copy = d / p.name
    if not copy.is_file() or copy.read_text() != source:
        tmp = d / f".{p.name}.{os.getpid()}.tmp"
        tmp.write_text(source)
        os.replace(tmp, copy)
    return str(copy)


def _resolve(ref) -> Claim:
    """The claim a task refers to: ``("value", claim)``, or ``("id", id, files)`` found in the catalog plus the
    theorem files ``files`` (``((path, source), ...)``), loaded once per worker process."""
    if ref[0] == "value":
        return ref[1]
    _, cid, files = ref
    reg = _REGISTRIES.get(files)
    if reg is None:
        from fedcheck.catalog.registry import default_registry
        reg = default_registry()
        for path, source in files:
            reg.load_file(_local_file(path, source))
        _REGISTRIES[files] = reg
    return reg.checks[cid]


def _slice_trace(trace, cols: slice):
    """The runs ``cols`` of a batch's trace (metrics: runs on axis 1; final: on axis 0)."""
    from fedcheck.algorithms import Trace
    return Trace(rounds=np.asarray(trace.rounds),
                 metrics={k: np.asarray(v)[:, cols] for k, v in trace.metrics.items()},
                 final={k: np.asarray(v)[cols] for k, v in trace.final.items()}, start=trace.start)


def _stream_part(every, j: int, R: int) -> dict:
    """What the every-round check (:class:`fedcheck.experiments._EveryRound`) holds for instance ``j`` of its
    batch (runs ``j R .. (j + 1) R``): its judgements per (reading, bound), failing samples, and the
    infeasibility of every round."""
    cols = slice(j * R, (j + 1) * R)
    return {"acc": {(r, b): v for (jj, r, b), v in every.acc.items() if jj == j},
            "fail": {(r, b): v for (jj, r, b), v in every.fail.items() if jj == j},
            "covered": frozenset(every.covered), "infeasibility": every.infeasibility,
            "inf": [(k, np.asarray(inf)[:, cols]) for k, inf in every._inf_blocks]}


def _fill_stream(every, parts: list[dict]) -> None:
    """Put the parts' judgements (instance ``j`` of this batch = ``parts[j]``) into the every-round check of a
    replayed run, as if it had been fed the whole batch's stream."""
    covered = {pt["covered"] for pt in parts}
    if len(covered) != 1:
        raise RuntimeError("the parts of a split claim judged different bounds at every round")
    every.covered = set(next(iter(covered)))
    every.infeasibility = parts[0]["infeasibility"]
    for j, pt in enumerate(parts):
        for (r, b), v in pt["acc"].items():
            every.acc[(j, r, b)] = v
        for (r, b), v in pt["fail"].items():
            every.fail[(j, r, b)] = v
    every._inf_blocks = [(k, np.concatenate([pt["inf"][q][1] for pt in parts], axis=1))
                         for q, (k, _) in enumerate(parts[0]["inf"])]


def _with_experiment(check: Claim, **changes) -> Claim:
    ev = check.evidence
    return dataclasses.replace(check, evidence=dataclasses.replace(ev, experiment=dataclasses.replace(ev.experiment, **changes)))


def _key(inst) -> tuple:
    return (inst.seed, inst.content_hash())


def _task_part(ref, config: RunConfig) -> dict:
    """Run instances of a splittable check; return the solver's and the algorithm's results per instance (and,
    for a claim judged at every round, the judgements of its stream per instance)."""
    from fedcheck.experiments import streams_every_round
    t0 = time.perf_counter()
    check = _resolve(ref)
    sols, traces, streams = {}, {}, {}
    exp = check.evidence.experiment
    base_solver = exp._solver()
    R = exp.replicates_for(config)

    def solver(inst, use_cache=True):
        sol = base_solver(inst, use_cache=use_cache)
        sols[_key(inst)] = sol
        return sol

    def keep(batch, trace, every):
        for j in range(len(batch.instances) // R):
            key = _key(batch.instances[j * R])
            traces[key] = _slice_trace(trace, slice(j * R, (j + 1) * R))
            if every is not None:
                streams[key] = _stream_part(every, j, R)
        return trace

    if streams_every_round(exp.algorithm):
        def algorithm(batch, stream=None, **kwargs):
            return keep(batch, exp.algorithm(batch, stream=stream, **kwargs), stream)
    else:
        def algorithm(batch, **kwargs):
            return keep(batch, exp.algorithm(batch, **kwargs), None)
    worker_check = dataclasses.replace(_with_experiment(check, solver=solver, algorithm=algorithm), symbolic=())
    # the parent's replay makes the result: its SymPy claims and the printed formulas' check (parsing LaTeX,
    # simplifying: 0.05-0.4 s a bound) are not done here too
    ev = worker_check.evidence
    worker_check = dataclasses.replace(worker_check, evidence=dataclasses.replace(ev, bounds=tuple(
        dataclasses.replace(b, latex="", latex_symbols=None, latex_note="") if b.latex else b for b in ev.bounds)))
    with _one_blas_thread():
        worker_check.run(config)
    return {"solutions": sols, "traces": traces, "streams": streams, "seconds": time.perf_counter() - t0}


def _task_whole(ref, config: RunConfig) -> tuple[CheckResult, dict]:
    """Run a check whole; refuting instances are saved in a scratch folder and returned as bytes
    (``{relative path: bytes}``) beside the result."""
    check = _resolve(ref)
    if not config.save_dir:
        with _one_blas_thread():
            return check.run(config), {}
    scratch = tempfile.mkdtemp(prefix="fedcheck-task-")
    try:
        with _one_blas_thread():
            res = check.run(dataclasses.replace(config, save_dir=scratch))
        files = {}
        for p in sorted(Path(scratch).rglob("*")):
            if p.is_file():
                files[str(p.relative_to(scratch))] = p.read_bytes()
        res.saved_instances = [_relocate(str(s), scratch, config.save_dir) for s in res.saved_instances or []]
        return res, files
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _relocate(path: str, old: str, new: str) -> str:
    return new + path[len(old):] if path.startswith(old) else path


# ------------------------------------------------------------------------------------------------
# parent side
def _replay(check: Claim, config: RunConfig, parts: Sequence[dict], symbolic: list[dict]) -> CheckResult:
    """The check's own run, here, with a solver and an algorithm that hand back the parts' results (and feed
    its every-round check the parts' judgements): the result of a serial run."""
    from fedcheck.algorithms import Trace
    from fedcheck.experiments import streams_every_round
    exp = check.evidence.experiment
    R = exp.replicates_for(config)
    sols, traces, streams = {}, {}, {}
    for part in parts:
        sols.update(part["solutions"])
        traces.update(part["traces"])
        streams.update(part.get("streams") or {})

    def solver(inst, use_cache=True):
        return sols[_key(inst)]

    def replayed(batch, every):
        keys = [_key(batch.instances[j * R]) for j in range(len(batch.instances) // R)]
        pieces = [traces[k] for k in keys]
        if every is not None:
            _fill_stream(every, [streams[k] for k in keys])
        return Trace(rounds=pieces[0].rounds,
                     metrics={k: np.concatenate([pc.metrics[k] for pc in pieces], axis=1) for k in pieces[0].metrics},
                     final={k: np.concatenate([pc.final[k] for pc in pieces]) for k in pieces[0].final},
                     start=pieces[0].start)

    if streams_every_round(exp.algorithm):
        def algorithm(batch, stream=None, **kwargs):
            return replayed(batch, stream)
    else:
        def algorithm(batch, **kwargs):
            return replayed(batch, None)
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


def _user_modules(theorem_files: Sequence[str]) -> dict:
    """``{id(claim): (path, source)}`` for the claims of the users' theorem files loaded in this process."""
    out = {}
    for f in theorem_files:
        try:
            want = Path(f).resolve()
            source = want.read_text()
        except OSError:
            continue
        for name, mod in list(sys.modules.items()):
            file = getattr(mod, "__file__", None)
            if not name.startswith("fedcheck_user_") or not file or Path(file).resolve() != want:
                continue
            claims = getattr(mod, "CLAIMS", None)
            if claims is None:
                claims = [o for o in vars(mod).values() if isinstance(o, Claim)]
            for c in claims:
                out[id(c)] = (str(f), source)
    return out


def _references(checks: Sequence[Claim], theorem_files: Sequence[str]) -> list[tuple]:
    """How each check reaches a worker: by id (catalog; user files, sent along) or by value."""
    from fedcheck.catalog.registry import default_registry
    builtin = default_registry().checks
    user = _user_modules(theorem_files)
    files = tuple(sorted(set(user.values())))
    refs = []
    for c in checks:
        if builtin.get(c.id) is c:
            refs.append(("id", c.id, ()))
        elif id(c) in user:
            refs.append(("id", c.id, files))
        else:
            refs.append(("value", c))
    return refs


def _durations_file() -> Path | None:
    try:
        from fedcheck.problems.solve import cache_dir
        d = cache_dir()
    except Exception:  # pragma: no cover - no cache
        return None
    return None if d is None else Path(d) / "durations.json"


def _load_durations(mode: str) -> dict:
    f = _durations_file()
    try:
        return dict(json.loads(f.read_text()).get(mode, {})) if f and f.is_file() else {}
    except (OSError, ValueError, AttributeError):
        return {}


def _save_durations(mode: str, seconds: dict) -> None:
    """Remember how long each check took (the order of the next parallel run); best effort, atomic."""
    f = _durations_file()
    if f is None or not seconds:
        return
    try:
        doc = json.loads(f.read_text()) if f.is_file() else {}
        if not isinstance(doc, dict):
            doc = {}
    except (OSError, ValueError):
        doc = {}
    doc.setdefault(mode, {}).update({k: round(float(v), 3) for k, v in seconds.items()})
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=f.parent, prefix=".durations.", suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, indent=0, sort_keys=True)
        os.replace(tmp, f)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


def _costs(checks: Sequence[Claim], mode: str) -> list[float]:
    """Estimated seconds per check: the last measured; never-timed checks first (as long as the longest)."""
    known = _load_durations(mode)
    top = max(known.values(), default=1.0) + 1.0
    return [float(known.get(c.id, top)) for c in checks]


MIN_PARALLEL_SECONDS = 20.0   # below this much estimated work, starting worker processes costs more than it saves
_UNTIMED_SECONDS = 5.0         # the estimate of a check never timed (for the choice of -j only)
_UNTIMED_FULL_SECONDS = 30.0   # ... in --full mode (its sweeps take minutes: 114 s for Theorem 3 on 2 cores)


def auto_jobs(checks: Sequence[Claim], config: RunConfig) -> int:
    """The default ``-j``: one worker per CPU when the run has at least two pieces and is expected to take
    long enough (:data:`MIN_PARALLEL_SECONDS`, from the durations of the last runs) to gain from them; else 1
    (serial, in this process)."""
    cpus = default_jobs()
    if cpus < 2 or not checks:
        return 1
    if len(checks) == 1 and not splittable(checks[0]):
        return 1
    known = _load_durations("full" if config.full else "quick")
    seeds = len(config.seeds) if config.seeds is not None else None
    total = 0.0
    for c in checks:
        s = known.get(c.id)
        guess = _UNTIMED_FULL_SECONDS if config.full and not config.rounds else _UNTIMED_SECONDS
        total += guess if s is None or seeds is not None or config.rounds else float(s)
    return cpus if total >= MIN_PARALLEL_SECONDS else 1


def _write_files(files: dict, save_dir: str) -> None:
    for rel, data in files.items():
        dest = Path(save_dir) / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)


def run_checks(checks: Sequence[Check], config: RunConfig, jobs: int = 1, theorem_files: Sequence[str] = (),
               on_done: Callable[[Check], None] | None = None, *, scheduler: str | None = None) -> list[CheckResult]:
    """Run ``checks`` with ``config`` as Dask tasks (``jobs`` local worker processes, or the cluster of
    ``scheduler``); results in the order of ``checks``, equal to ``[c.run(config) for c in checks]`` except
    for timings.  ``jobs <= 1`` without a scheduler (or a single unsplittable check): serially, here."""
    checks = list(checks)
    mode = "full" if config.full else "quick"
    seconds: dict = {}
    serial = not checks or (scheduler is None and (jobs <= 1 or (len(checks) == 1 and not splittable(checks[0]))))
    if serial and not _ACTIVE:
        out = []
        for chk in checks:
            with _one_blas_thread():        # as the workers: BLAS's threads on small GEMMs cost 8x on a loaded machine
                out.append(chk.run(config))
            seconds[chk.id] = out[-1].seconds
            if on_done:
                on_done(chk)
        _save_durations(mode, seconds)
        return out
    refs = _references(checks, theorem_files)
    costs = _costs(checks, mode)
    quiet = dataclasses.replace(config, progress=False)
    results: list[CheckResult | None] = [None] * len(checks)
    with session(jobs, scheduler) as client:
        k = _workers(client)
        token = uuid.uuid4().hex[:8]
        futures, owner = [], []          # owner[f] = (check index, part index or None)
        split: dict[int, int] = {}       # check index -> number of parts
        tasks = []                       # (priority, function, reference, config, key, owner)
        for i, chk in enumerate(checks):
            if splittable(chk):
                insts = chk.evidence.experiment.instances(config)
                subs = [dataclasses.replace(quiet, instances=part, seeds=None, save_dir=None,
                                            whole_instances=len(insts)) for part in _parts(insts, k)]
                split[i] = len(subs)
                for p, sub in enumerate(subs):
                    tasks.append((_prio(costs[i] / len(subs)), _task_part, refs[i], sub,
                                  f"fedcheck-part-{token}-{i}-{p}", (i, p)))
            else:
                tasks.append((_prio(costs[i]), _task_whole, refs[i], quiet, f"fedcheck-check-{token}-{i}", (i, None)))
        # submitted longest first: the first few tasks go to the workers as they arrive, before Dask's queue
        # (which honours the priorities) holds the rest, so the order of submission decides what starts first
        for prio, fn, ref, cfg, key, own in sorted(tasks, key=lambda t: -t[0]):
            futures.append(_submit(client, fn, ref, cfg, key=key, priority=prio))
            owner.append(own)
        # SymPy claims of the split checks, here, while the workers run
        symbolic = {i: [s.evaluate() for s in checks[i].symbolic] for i in split}
        parts: dict[int, dict] = {i: {} for i in split}

        def got(f, value):
            i, p = owner[f]
            if p is None:
                res, files = value
                if files and config.save_dir:
                    _write_files(files, config.save_dir)
                results[i] = res
            else:
                parts[i][p] = value
                if len(parts[i]) < split[i]:
                    return
                t0 = time.perf_counter()
                res = _replay(checks[i], config, [parts[i][q] for q in range(split[i])], symbolic[i])
                res.seconds = sum(v["seconds"] for v in parts[i].values()) + time.perf_counter() - t0
                results[i] = res
            seconds[checks[i].id] = results[i].seconds
            if on_done:
                on_done(checks[i])
        _wait(client, futures, got)
    _save_durations(mode, seconds)
    return results  # type: ignore[return-value]


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use 'fedcheck verify ... -j N'")
