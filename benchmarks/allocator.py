"""The C allocator's settings (``fedcheck.core.allocator``) against glibc's defaults, interleaved, in fresh processes.

    python benchmarks/allocator.py                       # fedfw.table2_cnn serially (-j 1), 3 repeats each way
    python benchmarks/allocator.py --catalog --repeat 2  # the quick catalog (default -j)
    python benchmarks/allocator.py fedfw.table2_dnn fedfw.figure3

Each run is the command a user types (``python -m fedcheck verify ... --no-report -q --json FILE``); "glibc's
defaults" is the same command with ``FEDCHECK_TUNE_MALLOC=0``.  The CPU times (user, system) and page faults are
those of the whole process tree -- the local workers and their forkserver included: this process is a child
subreaper (Linux), so every descendant is reaped here.  Printed: each run, then the medians and the ratio of
the wall times; the results of the two settings are checked equal (every field but the timings).  The machine
is shared: the load average is printed with each run.  Tests never assert timings.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catalog import PAPERS, ROOT, _strip  # noqa: E402  (the catalog benchmark's papers and provenance fields)


def _subreaper() -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0     # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _reap() -> None:
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def run(names: list[str], jobs: str | None, tuned: bool, out: Path) -> dict:
    env = dict(os.environ)
    env.pop("FEDCHECK_TUNE_MALLOC", None)
    if not tuned:
        env["FEDCHECK_TUNE_MALLOC"] = "0"
    cmd = [sys.executable, "-m", "fedcheck", "verify", *names, "--no-report", "-q", "--json", str(out)]
    if jobs:
        cmd += ["-j", jobs]
    load = os.getloadavg()[0]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    _reap()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1, 3):        # holds / refuted / inconclusive verdicts are all fine here
        sys.exit(f"run failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return {"tuned": tuned, "wall": wall, "user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime,
            "minflt": r1.ru_minflt - r0.ru_minflt, "load": load,
            "checks": _strip(json.loads(out.read_text())["checks"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="claims or papers (default: fedfw.table2_cnn)")
    ap.add_argument("--catalog", action="store_true", help="the quick catalog of the four papers, default -j")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-j", "--jobs", default=None, help="-j of the runs (default: 1 for claims, the default for --catalog)")
    a = ap.parse_args(argv)
    names = PAPERS if a.catalog else (a.names or ["fedfw.table2_cnn"])
    jobs = a.jobs if a.jobs is not None else (None if a.catalog else "1")
    if not _subreaper():
        print("note: not a child subreaper here: the workers' CPU time may be missing", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.repeat):
            for tuned in (True, False):
                r = run(names, jobs, tuned, Path(tmp) / f"r{i}{int(tuned)}.json")
                rows.append(r)
                print(f"{'tuned   ' if tuned else 'defaults'} run {i + 1}: wall {r['wall']:6.1f} s  user {r['user']:6.1f} s  "
                      f"sys {r['sys']:5.1f} s  minor faults {r['minflt']:>9,d}  load {r['load']:.2f}", flush=True)
    same = all(r["checks"] == rows[0]["checks"] for r in rows)
    med = {t: {k: statistics.median(r[k] for r in rows if r["tuned"] == t) for k in ("wall", "user", "sys", "minflt")}
           for t in (True, False)}
    print(f"# {' '.join(names)} (-j {jobs or 'default'}), medians of {a.repeat} interleaved runs each")
    for t in (True, False):
        m = med[t]
        print(f"{'tuned   ' if t else 'defaults'}: wall {m['wall']:.1f} s, user {m['user']:.1f} s, sys {m['sys']:.1f} s, "
              f"minor faults {int(m['minflt']):,d}")
    print(f"results identical: {same}")
    print(f"allocator_wall_ratio={med[False]['wall'] / med[True]['wall']:.2f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
