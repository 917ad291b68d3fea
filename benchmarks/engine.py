"""Engine throughput, measured against a plain per-client loop and the bare gradient floor.

    python benchmarks/engine.py                 # throughput against the loop and the floor (a minute or so)
    python benchmarks/engine.py --repeat 5      # more repetitions (medians are reported)
    python benchmarks/engine.py --scale         # also the scale curves (time and memory)
    python benchmarks/engine.py --stream-only   # only the every-round stream overhead ("for all t")

All numbers come from one process on the same instances: Theorem 1's default
family (``theorems.fedfw.theorem1.family``), 64 instances x 10 clients x 20
dimensions, its declared schedules, recording as ``verify`` does
(``default_recorder`` on ``record_grid(rounds + 1)``).  Three ways of running the
same rounds:

* engine  -- ``fedcheck.engine.fedfw`` (also timed with recording switched off);
* loop    -- ``fedcheck.engine.reference.fedfw_loop_least_squares_l1``: Python loops over
             instances, rounds and clients, one client's numpy update at a time; it runs
             ``--loop-rounds`` rounds and is scaled per client-round;
* floor   -- ``loss.grad`` on the (64, 10, 20) batch once per round and nothing else.

The measurements are interleaved (engine, engine without recording, floor, the
engine's own gradient kernel) and repeated; the machine is shared, so medians are
printed.  The last line is
``speedup_vs_loop=<engine/loop throughput> ratio_to_floor=<engine round time / floor round time>``.

Every-round stream overhead (:func:`stream_overhead`): the same engine run with
``stream=`` (the recorder's scalar metrics at every iterate 1..T+1, in blocks) against
the run without, interleaved; the line is ``every_round_stream_overhead=<time with /
time without>`` (target <= 1.3).  Also printed, for information: the numpy path
(numba switched off) and classical Frank-Wolfe, which stream through the recorder.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fedcheck.algorithms import default_recorder, evaluate_schedule, fedfw, record_grid, with_iterates  # noqa: E402
from fedcheck.algorithms.kernels import make_grad_kernel  # noqa: E402
from fedcheck.algorithms.reference import fedfw_loop_least_squares_l1  # noqa: E402
from fedcheck.problems.instances import InstanceBatch, RandomFamily  # noqa: E402
from theorems.fedfw import theorem1  # noqa: E402


def _declared(name: str):
    """Theorem 1's declared ``family`` / ``schedules`` (on the claim, or on its experiment)."""
    value = getattr(theorem1, name, None)
    return value if value is not None else getattr(theorem1.evidence.experiment, name)


def schedules(batch: InstanceBatch, rounds: int) -> dict[str, np.ndarray]:
    tt = np.arange(1, rounds + 1)
    values = {k: np.full(batch.B, float(v)) for k, v in theorem1.params.items()}
    values["n"] = np.full(batch.B, float(batch.n))
    return {name: evaluate_schedule(e, tt, values, batch.B) for name, e in _declared("schedules").items()}


def make_batch(B: int, family: RandomFamily | None = None) -> InstanceBatch:
    fam = family or _declared("family")
    return InstanceBatch([fam.draw(s) for s in range(B)])


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def _timed(fn) -> dict[str, float]:
    """CPU time of this process and wall time of one call."""
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return {"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0}


def run_engine(batch, sched, rounds, record=True):
    if record:
        return fedfw(batch, rounds=rounds, grid=record_grid(rounds + 1), recorder=default_recorder(batch), **sched)
    return fedfw(batch, rounds=rounds, grid=np.zeros(0, dtype=int), **sched)


def run_floor(batch, rounds):
    grad = batch.loss.grad
    X = np.zeros((batch.B, batch.n, batch.p))
    for _ in range(rounds):
        grad(X)


def run_kernel(batch, rounds):
    """The engine's own gradient kernel ((1/n) grad, fused, into a buffer), alone."""
    kern = make_grad_kernel(batch.loss, 1.0 / batch.n)
    X = np.zeros((batch.B, batch.n, batch.p))
    G = np.empty_like(X)
    for _ in range(rounds):
        kern(X, G)


def headline(args) -> dict:
    batch = make_batch(args.instances)
    B, n, p = batch.B, batch.n, batch.p
    T, TL = args.rounds, args.loop_rounds
    sched = schedules(batch, T)
    sched_l = {k: v[:TL] for k, v in sched.items()}
    # the same iterates: engine and loop over the loop's rounds
    eng = run_engine(batch, sched_l, TL)
    Xl, xbl = fedfw_loop_least_squares_l1(batch, sched_l["eta"], sched_l["lam"], TL)
    diff_X = float(np.max(np.abs(eng.final["X"] - Xl)))
    diff_x = float(np.max(np.abs(eng.final["xbar"] - xbl)))
    # interleaved repetitions of every measurement
    runs = {
        "engine": (lambda: run_engine(batch, sched, T, True), B * n * T),
        "engine_norecord": (lambda: run_engine(batch, sched, T, False), B * n * T),
        "floor": (lambda: run_floor(batch, T), B * n * T),
        "kernel": (lambda: run_kernel(batch, T), B * n * T),
        "loop": (lambda: fedfw_loop_least_squares_l1(batch, sched_l["eta"], sched_l["lam"], TL), B * n * TL),
    }
    run_engine(batch, sched, min(T, 200))  # warm up
    times = {k: {"cpu": [], "wall": []} for k in runs}
    for _ in range(args.repeat):
        for name, (fn, _) in runs.items():
            for clock, v in _timed(fn).items():
                times[name][clock].append(v)
    clock = args.clock
    med = {k: {c: statistics.median(v[c]) for c in v} for k, v in times.items()}
    per_cr = {k: med[k][clock] / runs[k][1] for k in runs}          # seconds per client-round
    tp = {k: 1.0 / v for k, v in per_cr.items()}
    print(f"# {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}, python {platform.python_version()};"
          f" load average {os.getloadavg()[0]:.2f}")
    print(f"# instances={B} clients={n} dim={p} rounds={T} (loop: {TL} rounds, scaled per client-round); "
          f"{args.repeat} interleaved repeats, medians of {clock} time")
    notes = {"engine": f"recording as verify does ({len(record_grid(T + 1))} recorded rounds)",
             "engine_norecord": "no recording", "floor": "loss.grad on the batch, once per round",
             "kernel": "the engine's fused gradient kernel alone, whole batch",
             "loop": "Python loops over instances and clients, one client's numpy update at a time"}
    print(f"{'':16}{'client-rounds/s':>16}{'us/round':>11}{'wall us/round':>15}")
    for k in runs:
        rnd = runs[k][1] / (B * n)
        print(f"{k:16}{tp[k]:16,.0f}{1e6 * med[k][clock] / rnd:11.1f}{1e6 * med[k]['wall'] / rnd:15.1f}   {notes[k]}")
    rec_over = med["engine"][clock] / med["engine_norecord"][clock] - 1
    print(f"recording_overhead={rec_over:.1%}  engine/kernel={med['engine'][clock] / med['kernel'][clock]:.2f}")
    print(f"same_iterates: max|X_engine - X_loop|={diff_X:.2e} max|xbar_engine - xbar_loop|={diff_x:.2e} "
          f"after {TL} rounds")
    print(f"all runs ({clock} s): " + "; ".join(f"{k}=" + ",".join(f"{v:.3f}" for v in vs[clock])
                                               for k, vs in times.items()))
    speed = tp["engine"] / tp["loop"]
    ratio = per_cr["engine"] / per_cr["floor"]
    print(f"speedup_vs_loop={speed:.1f} ratio_to_floor={ratio:.2f}")
    return {"speedup_vs_loop": speed, "ratio_to_floor": ratio, "recording_overhead": rec_over,
            "diff_X": diff_X, "diff_xbar": diff_x}


# ------------------------------------------------------------------------------------------------
class _Sink:
    """A stream consumer as cheap as a bound check can be: the running max of F per instance."""

    def __init__(self):
        self.n, self.top = 0, None

    def __call__(self, k, values):
        F = values["F"].max(0)
        self.top = F if self.top is None else np.maximum(self.top, F)
        self.n += len(k)


def stream_overhead(args) -> dict:
    """``time(run with stream) / time(run without)`` on the headline batch, interleaved repetitions."""
    from fedcheck.algorithms import frank_wolfe, jit
    batch = make_batch(args.instances)
    T = args.rounds
    sched = schedules(batch, T)
    grid = record_grid(T + 1)

    def engine(stream):
        sink = _Sink() if stream else None
        fedfw(batch, rounds=T, grid=grid, recorder=default_recorder(batch), stream=sink, **sched)
        if sink is not None:
            assert sink.n == T + 1

    def fw(stream):
        frank_wolfe(batch, eta=sched["eta"], rounds=T, grid=grid, recorder=default_recorder(batch),
                    stream=_Sink() if stream else None)

    def numpy_path(stream):
        saved = jit.AVAILABLE, jit._ls_record_compiled, jit._consensus_compiled
        jit.AVAILABLE, jit._ls_record_compiled, jit._consensus_compiled = False, None, None
        try:
            engine(stream)
        finally:
            jit.AVAILABLE, jit._ls_record_compiled, jit._consensus_compiled = saved

    cases = {"fedfw": engine}
    if not args.stream_main_only:
        cases.update({"fedfw_numpy": numpy_path, "frank_wolfe": fw})
    for fn in cases.values():   # warm up (compilation)
        fn(False)
        fn(True)
    times = {(c, s): [] for c in cases for s in (False, True)}
    for _ in range(args.repeat):
        for c, fn in cases.items():
            for s in (False, True):
                times[(c, s)].append(_timed(lambda: fn(s))[args.clock])
    clock = args.clock
    print(f"# every-round stream: {batch.B} instances x {batch.n} clients x {batch.p} dims, {T} rounds, "
          f"recording on record_grid({T + 1}) ({len(grid)} rounds) in both runs; {args.repeat} interleaved "
          f"repeats, medians of {clock} time; load average {os.getloadavg()[0]:.2f}")
    out = {}
    for c in cases:
        a, b = statistics.median(times[(c, False)]), statistics.median(times[(c, True)])
        pairs = sorted(y / x for x, y in zip(times[(c, False)], times[(c, True)]))
        out[c] = b / a
        print(f"{c:12} without {a:7.3f} s  with stream {b:7.3f} s  ratio {b / a:5.3f}  "
              f"(per-repeat ratios {', '.join(f'{r:.2f}' for r in pairs)})")
    print(f"every_round_stream_overhead={out['fedfw']:.3f}")
    return out


def _peak_mib(fn) -> float:
    """Peak traced allocation (MiB) while ``fn`` runs, above what was allocated before it."""
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


def scale(args) -> None:
    """Time and memory of the engine against rounds, instances, clients and dimension (each doubling)."""
    base = dict(B=64, n=10, p=20, T=2000)
    axes = [("rounds", "T", [1000, 2000, 4000, 8000, 16000]),
            ("instances", "B", [16, 32, 64, 128, 256]),
            ("clients", "n", [5, 10, 20, 40, 80]),
            ("dimension", "p", [10, 20, 40, 80, 160])]
    print("\n# scale: engine time against each size with the others at "
          f"instances={base['B']} clients={base['n']} dim={base['p']} rounds={base['T']} (m = 20 samples per client)")
    print("# us per client-round should stay flat along rounds/instances/clients (linear time); along the"
          " dimension the p x p gradient grows it; peak memory is traced inside the run (inputs excluded)")
    print(f"{'axis':10} {'value':>7} {'seconds':>9} {'us/client-round':>16} {'peak MiB':>9} {'peak MiB +iterates':>19}")
    for axis, key, values in axes:
        for v in values:
            cfg = dict(base)
            cfg[key] = v
            fam = RandomFamily(loss="least_squares", set="l1", n=cfg["n"], m=20, p=cfg["p"], radius=1.0,
                               heterogeneity=1.0)
            batch = make_batch(cfg["B"], fam)
            T = cfg["T"]
            sched = schedules(batch, T)
            ts = [_timed(lambda: run_engine(batch, sched, T))[args.clock] for _ in range(args.scale_repeat)]
            t = statistics.median(ts)
            grid = record_grid(T + 1)
            mem = _peak_mib(lambda: fedfw(batch, rounds=T, grid=grid, recorder=default_recorder(batch), **sched))
            mem_it = _peak_mib(lambda: fedfw(batch, rounds=T, grid=np.arange(1, T + 2),
                                             recorder=with_iterates(default_recorder(batch)), **sched))
            per = 1e6 * t / (cfg["B"] * cfg["n"] * T)
            print(f"{axis:10} {v:7d} {t:9.3f} {per:16.3f} {mem:9.2f} {mem_it:19.2f}")
    print("# (+iterates: xbar recorded at every round, grid = 1..T+1)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5000)
    ap.add_argument("--instances", type=int, default=64)
    ap.add_argument("--loop-rounds", type=int, default=40, help="rounds of the plain loop (scaled per client-round)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                    help="cpu: this process's CPU time (robust on a shared machine; default); wall: elapsed time")
    ap.add_argument("--scale", action="store_true", help="also print the scale curves")
    ap.add_argument("--scale-repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None,
                    help="limit BLAS threads (threadpoolctl); default: leave as configured")
    ap.add_argument("--stream-only", action="store_true", help="only the every-round stream overhead")
    ap.add_argument("--stream-main-only", action="store_true",
                    help="stream overhead of the compiled FedFW only (not the numpy path / Frank-Wolfe)")
    args = ap.parse_args(argv)
    if args.threads is not None:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads)
    if not args.stream_only:
        headline(args)
    stream_overhead(args)
    if args.scale:
        scale(args)


if __name__ == "__main__":
    main()
