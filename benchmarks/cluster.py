"""Speed-up from 1 to 2 local Dask workers on independent claims.

    python benchmarks/cluster.py                    # 8 independent claims of the catalog
    python benchmarks/cluster.py --jobs 4 fedfw     # other claims (ids, aliases, papers), other -j
    python benchmarks/cluster.py --full             # the paper's setting: FULL_CLAIMS at --full, 2 workers first

In one process: the claims are run once to fill the solve cache (not timed), then serially
(``run_checks(jobs=1)``: in this process, no cluster) and as Dask tasks on an embedded ``LocalCluster`` of
``--jobs`` worker processes (``run_checks(jobs=N)``: the time includes starting the cluster, the workers'
imports and the shutdown, as a user waits for them), and once more on a cluster already running (the
tasks alone).  With ``--full`` (claims at the paper's sizes, minutes each) the warm-up is the quick run (it
compiles the kernels; the full-size solves are not warmed) and the order is reversed: 2 workers first, then
serial, so the serial run has the solves the parallel one made: the speed-up printed is the lower one.  Prints
the times, the speed-ups and checks that every result equals the serial one (every
field but ``seconds``).  The machine is shared: read the ratios.  Tests never assert timings.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # this file must not shadow ``dask``
sys.path.insert(0, str(HERE.parent))

CLAIMS = ["fedfw.theorem2", "fedfw.experiments", "fedsgm.theorem2", "fedmls.tradeoff", "fedmls.corollary32",
          "feddualavg.theorem_4_1_tuned", "fedsgm.compression", "fedfw.theorem1"]

# --full: claims of minutes each at the paper's sizes, none longer than ~a quarter of the sum (the bound on 2
# cores is max(longest, sum / 2)); their serial times on 2026-11-29 in benchmarks/README.md's --full table
FULL_CLAIMS = ["feddualavg.theorem_4_1", "feddualavg.theorem_4_1_tuned", "feddualavg.theorem_4_1_fedmid",
               "feddualavg.theorem_4_1_fedmid_indicator", "feddualavg.theorem_4_1_fedmid_osp_stochastic",
               "feddualavg.theorem_4_2", "feddualavg.theorem_4_2_tuned", "fedsgm.theorem2", "fedfw.theorem3",
               "fedfw.partial_convex", "fedfw.lemma3", "fedmls.drift"]


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in ("seconds", "solve_time", "cached")}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def _warm() -> None:
    from fedcheck.catalog.registry import default_registry
    default_registry()


def main(argv=None) -> int:
    import argparse
    import os
    import time

    from fedcheck.catalog import parallel as P
    from fedcheck.core.claim import RunConfig
    from fedcheck.catalog.registry import default_registry

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("claims", nargs="*", default=CLAIMS)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="the claims at the paper's sizes (FULL_CLAIMS by default)")
    args = ap.parse_args(argv)
    if args.full:
        return _full(args.claims if args.claims != CLAIMS else FULL_CLAIMS, args.jobs)
    checks = default_registry().resolve(args.claims)
    config = RunConfig()
    print(f"{len(checks)} independent claims, 1 vs {args.jobs} local workers; {P.default_jobs()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    P.run_checks(checks, config, jobs=1)                       # warm: solve cache, compiled kernels
    t0 = time.perf_counter()
    serial = P.run_checks(checks, config, jobs=1)
    t_serial = time.perf_counter() - t0
    print(f"  serial, in this process        : {t_serial:6.1f} s", flush=True)
    t0 = time.perf_counter()
    parallel = P.run_checks(checks, config, jobs=args.jobs)
    t_par = time.perf_counter() - t0
    print(f"  {args.jobs} workers (LocalCluster start, run, close): {t_par:6.1f} s", flush=True)
    t0 = time.perf_counter()
    with P.session(args.jobs) as client:
        t_start = time.perf_counter() - t0
        client.run(_warm)                                      # the workers' imports
        t1 = time.perf_counter()
        running = P.run_checks(checks, config, jobs=args.jobs)
        t_tasks = time.perf_counter() - t1
        t2 = time.perf_counter()
    t_close = time.perf_counter() - t2
    print(f"  {args.jobs} workers, cluster already up  : {t_tasks:6.1f} s   (start {t_start:.1f} s, "
          f"close {t_close:.1f} s)", flush=True)
    same = all(_strip(a.to_dict()) == _strip(b.to_dict()) == _strip(c.to_dict())
               for a, b, c in zip(serial, parallel, running))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"speed-up 1 -> {args.jobs} workers: {t_serial / t_par:.2f}x with the cluster's start and shutdown, "
          f"{t_serial / t_tasks:.2f}x on a running cluster; results identical to the serial run: {same}")
    return 0 if same else 1


def _full(claims, jobs: int) -> int:
    import os
    import time

    from fedcheck.catalog import parallel as P
    from fedcheck.catalog.registry import default_registry
    from fedcheck.core.claim import RunConfig

    checks = default_registry().resolve(claims)
    print(f"{len(checks)} claims at --full, {jobs} local workers then 1; {P.default_jobs()} CPUs; load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    P.run_checks(checks, RunConfig(), jobs=1)                  # warm: the compiled kernels (quick sizes)
    config = RunConfig(full=True)
    t0 = time.perf_counter()
    parallel = P.run_checks(checks, config, jobs=jobs)
    t_par = time.perf_counter() - t0
    print(f"  {jobs} workers (LocalCluster start, run, close): {t_par:7.1f} s   load {os.getloadavg()[0]:.2f}",
          flush=True)
    t0 = time.perf_counter()
    serial = P.run_checks(checks, config, jobs=1)
    t_serial = time.perf_counter() - t0
    work = sorted(((r.seconds or 0.0), r.id) for r in serial)[::-1]
    print(f"  serial, in this process        : {t_serial:7.1f} s   load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"  serial work {sum(s for s, _ in work):.1f} s, longest {work[0][1]} {work[0][0]:.1f} s: bound on {jobs} "
          f"cores max(longest, work / {jobs}) = {max(work[0][0], sum(s for s, _ in work) / jobs):.1f} s")
    same = all(_strip(a.to_dict()) == _strip(b.to_dict()) for a, b in zip(serial, parallel))
    print(f"speed-up 1 -> {jobs} workers at --full: {t_serial / t_par:.2f}x (cluster start and shutdown included); "
          f"results identical to the serial run: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
