"""The quick catalog, serial (``-j 1``) against the default (Dask workers, one per CPU), in one run.

    python benchmarks/catalog.py                 # every paper of theorems.PAPERS, -j 1 then the default -j
    python benchmarks/catalog.py --repeat 2      # serial, parallel, serial, parallel: medians
    python benchmarks/catalog.py --jobs 2 fedfw  # an explicit -j, one paper
    python benchmarks/catalog.py --cold          # each run with a new, empty cache (FEDCHECK_CACHE): no solve,
                                                 # PEP certificate or durations of earlier runs ("cold")

Each run is the command a user types (``python -m fedcheck verify <papers> --no-report -q --json FILE``) in a
fresh process, so the times include start-up, the cluster's start and its shutdown.  The benchmark prints the
serial time (the reference of today), the parallel time and their ratio, checks that both runs produced the
same results (every field of every check but ``seconds``), and compares the parallel time with the target:
60 s, half of the ~2 minutes the quick catalog took on 2 cores before it ran on local workers.  The machine is
shared: the load average is printed before and after; read the ratio, not the seconds.  Tests never assert
timings.

On a loaded machine the wall time says little; the work does: each run also prints the sum of its checks' own
seconds (``seconds`` of the results, the time of each check's tasks: the catalog's work), its longest check (the
critical path: no schedule ends before it) and the bound these give on ``N`` cores, ``max(longest, sum / N)``.
``--work FILE.json ...`` prints only that, for results files already written (e.g. a ``--json`` of the catalog).

    python benchmarks/catalog.py --work /work/baseline/s2-before.json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from theorems import PAPERS  # noqa: E402  (the index: every paper of the catalog)

BEFORE_SECONDS = 120.0       # the quick catalog on 2 cores before it ran on local workers (56 checks then)


# provenance, not results: wall times and whether a solve came from the cache (the first run fills it)
_PROVENANCE = {"seconds", "solve_time", "cached"}


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in _PROVENANCE}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def run(papers, jobs: list[str], out: Path, cache: Path | None = None) -> tuple[float, list, int]:
    cmd = [sys.executable, "-m", "fedcheck", "verify", *papers, "--no-report", "-q", "--json", str(out), *jobs]
    env = dict(os.environ) if cache is None else {**os.environ, "FEDCHECK_CACHE": str(cache)}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if proc.returncode not in (0, 1, 3) or not out.is_file():
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    noise = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    if noise:
        print(f"  stderr of {' '.join(jobs) or 'default -j'}: {len(noise)} lines, e.g. {noise[0][:120]!r}")
    return dt, json.loads(out.read_text())["checks"], proc.returncode


def work(checks: list, cores: int, label: str = "") -> float:
    """Print the catalog's work (the sum of the checks' seconds), its longest checks and the bound on ``cores``
    cores; return the sum."""
    sec = sorted(((float(c.get("seconds") or 0.0), c["id"]) for c in checks), reverse=True)
    total = sum(t for t, _ in sec)
    top = ", ".join(f"{i} {t:.1f}" for t, i in sec[:4])
    print(f"  work{(' of ' + label) if label else ''}: {len(sec)} checks, sum of their seconds {total:.1f} s; "
          f"longest: {top}; bound on {cores} cores max(longest, sum/{cores}) = "
          f"{max(sec[0][0] if sec else 0.0, total / cores):.1f} s")
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("papers", nargs="*", help="papers, claims or aliases (default: every paper of the index)")
    ap.add_argument("--jobs", default=None, help="the parallel run's -j (default: fedcheck's default)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cold", action="store_true", help="each run with a new, empty FEDCHECK_CACHE")
    ap.add_argument("--issue-checks", action="store_true",
                    help="run exactly the 56 checks the catalog had when the 60 s target was set "
                         "(benchmarks/catalog_56_ids.txt) instead of the papers' current ones")
    ap.add_argument("--work", nargs="+", metavar="FILE", help="print the work of results files and stop")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from fedcheck.catalog.parallel import default_jobs
    if args.work:
        for f in args.work:
            work(json.loads(Path(f).read_text())["checks"], default_jobs(), f)
        return 0
    args.papers = args.papers or list(PAPERS)
    par = ["-j", args.jobs] if args.jobs else []
    if args.issue_checks:
        args.papers = [ln.strip() for ln in (ROOT / "benchmarks" / "catalog_56_ids.txt").read_text().splitlines()
                       if ln.strip() and not ln.startswith("#")]
    print(f"quick catalog: {' '.join(args.papers) if len(args.papers) < 8 else f'{len(args.papers)} checks'}; {default_jobs()} CPUs; parallel run: "
          f"{'-j ' + args.jobs if args.jobs else 'default -j'}; load average {os.getloadavg()[0]:.2f}")
    serial_t, par_t = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeat):
            cold = (lambda name: Path(tmp) / name) if args.cold else (lambda name: None)
            ts, serial, cs = run(args.papers, ["-j", "1"], Path(tmp) / f"serial{k}.json", cold(f"cache-s{k}"))
            print(f"  serial   (-j 1): {ts:7.1f} s   ({len(serial)} checks, exit {cs})", flush=True)
            tp, parallel, cp = run(args.papers, par, Path(tmp) / f"parallel{k}.json", cold(f"cache-p{k}"))
            print(f"  parallel       : {tp:7.1f} s", flush=True)
            work(parallel, default_jobs(), "the parallel run")
            a, b = {r["id"]: r for r in serial}, {r["id"]: r for r in parallel}
            bad = [k for k in a if k in b and _strip(a[k]) != _strip(b[k])]
            if list(a) != list(b):      # the catalog changed between the two runs (someone edits theorems/)
                print(f"  warning: the check lists differ ({sorted(set(a) ^ set(b))}); compared the common ones")
            if bad or (cs != cp and list(a) == list(b)):
                sys.exit(f"results differ between the serial and the parallel run: {bad or 'exit codes'}")
            serial_t.append(ts)
            par_t.append(tp)
    s, p = statistics.median(serial_t), statistics.median(par_t)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"serial {s:.1f} s, parallel {p:.1f} s: speed-up {s / p:.2f}x (parallel/serial = {p / s:.2f}); "
          f"results identical (every field but seconds)")
    print(f"target ({'cold' if args.cold else 'warm'} cache): at most half of "
          f"~{BEFORE_SECONDS:.0f} s -> {BEFORE_SECONDS / 2:.0f} s; parallel {p:.1f} s: "
          f"{'met' if p <= BEFORE_SECONDS / 2 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
