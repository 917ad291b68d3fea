"""Reports against no reports: `fedcheck verify theorem1` with its HTML/PDF reports takes at most 1.5x the same
run with --no-report.

The two runs are whole processes of the command a user types (``python -m fedcheck verify theorem1``, same
seeds, same rounds), after a warm-up run that fills the solve cache, in alternated pairs (the order within a
pair alternates too, so that a drift of the machine's load hits both alike).  A run ends when its last process
ends: each runs in its own process group, and its time stops only once no process of the group is left (a
renderer process still alive when ``fedcheck`` exits is part of the run).  The figure of merit is the ratio of
the medians over the pairs (at least 5 pairs for a figure in the README); the minima, each pair's ratio, the CPU
time (renderers included) and the load average before and after are printed too.  ``--here`` adds a third run
per pair with the reports rendered in the main process after the checks (``FEDCHECK_REPORT_WORKERS=0``).  Then
the pooled report phase is shown piece by piece (``FEDCHECK_RENDER_TRACE=1``: which renderer ran what, how long)
and the report phase is timed step by step in this process.

    python benchmarks/reports.py                      # fedcheck verify theorem1, 5 pairs
    python benchmarks/reports.py --repeats 7 -- theorem1 --seeds 2 --rounds 2000
    python benchmarks/reports.py --profile            # also a cProfile of the report phase (top 25)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TARGET = 1.5


CPU: dict[str, list[float]] = {}      # CPU seconds (user + system) of each run and its renderers, by variant


def _group_alive(pgid: int) -> bool:
    """Whether a process of the process group ``pgid`` still runs.  A zombie (ended, not yet reaped) does not
    count: an orphan is reaped by process 1, which here does it only every second or two (``os.killpg(pgid,
    0)`` would count it, and add up to 2 s to a run)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZX":      # state, ppid, pgrp, ...
            return True
    return False


def run(cmd: list[str], env: dict, trace: bool = False, variant: str | None = None):
    """Run ``cmd`` as a whole process tree: its wall time lasts until the last process of its process group
    has ended (renderers included), not only until ``cmd`` itself exits."""
    import resource
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True,
                                start_new_session=True)
        rc = proc.wait()
        while _group_alive(proc.pid):               # the group's other processes (renderers) still running
            time.sleep(0.005)
        dt = time.perf_counter() - t
        err.seek(0)
        stderr = err.read()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if variant:
        CPU.setdefault(variant, []).append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    if rc not in (0, 1, 3):
        sys.exit(f"failed ({rc}): {' '.join(cmd)}\n{stderr[-3000:]}")
    return (dt, stderr) if trace else dt


def steps(results: Path, profile: bool) -> list[tuple[str, float]]:
    """The report phase of one results file, step by step, in this process."""
    t0 = time.perf_counter()
    import fedcheck.report as R
    out = []
    out.append(("import fedcheck.report (matplotlib)", time.perf_counter() - t0))
    t = time.perf_counter()
    engine = R.pdf_engine()
    out.append(("import weasyprint", time.perf_counter() - t))
    doc = json.loads(results.read_text())
    tot = {k: 0.0 for k in ("context + formulas", "figures: build", "figures: draw SVG (once)",
                            "figures: own PDF files", "figures: CSV", "HTML (template)", "PDF (WeasyPrint)")}
    with tempfile.TemporaryDirectory() as d:
        for chk in doc["checks"]:
            t = time.perf_counter(); ctx = R.check_context(chk, doc); tot["context + formulas"] += time.perf_counter() - t
            t = time.perf_counter(); figs = R.check_figures(chk); tot["figures: build"] += time.perf_counter() - t
            t = time.perf_counter(); R.html._render_svgs(figs); tot["figures: draw SVG (once)"] += time.perf_counter() - t
            t = time.perf_counter()
            R.figure_pdfs(figs, engine)
            tot["figures: own PDF files"] += time.perf_counter() - t
            t = time.perf_counter()
            for f in figs:
                f.csv_text()
            tot["figures: CSV"] += time.perf_counter() - t
            t = time.perf_counter(); html = R.render_check_html(ctx, figs, {"pdf": "x.pdf"}); html = R.render_check_html(ctx, figs, {"pdf": "x.pdf"}, for_print=True)
            tot["HTML (template)"] += time.perf_counter() - t
            t = time.perf_counter(); R.render_pdf(html, Path(d) / "x.pdf", engine); tot["PDF (WeasyPrint)"] += time.perf_counter() - t
        if profile:
            import cProfile
            import pstats
            pr = cProfile.Profile()
            pr.enable()
            from fedcheck.render import write_reports
            write_reports(doc, Path(d) / "again")
            pr.disable()
            pstats.Stats(pr).sort_stats("cumulative").print_stats(25)
    return out + list(tot.items())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="alternated pairs (default 5)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--here", action="store_true",
                    help="also a run per pair with the reports rendered in the main process")
    ap.add_argument("--no-steps", action="store_true", help="skip the trace and the step-by-step timing")
    ap.add_argument("--workers", type=int, default=None,
                    help="renderer processes of the run with reports (FEDCHECK_REPORT_WORKERS; default: automatic)")
    ap.add_argument("verify_args", nargs="*", default=["theorem1"], help="arguments of fedcheck verify (after --)")
    a = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        base = [sys.executable, "-m", "fedcheck", "verify", *a.verify_args, "-q"]
        warm = run(base + ["--no-report", "--json", str(d / "r.json")], env)        # fills the solve cache
        print(f"fedcheck verify {' '.join(a.verify_args)}  (warm-up {warm:.1f} s)")
        load0 = os.getloadavg()[0]
        print(f"load average {load0:.2f}")
        plain, full, here, chosen = [], [], [], []
        serial_env = {**env, "FEDCHECK_REPORT_WORKERS": "0"}
        full_env = env if a.workers is None else {**env, "FEDCHECK_REPORT_WORKERS": str(a.workers)}
        for q in range(a.repeats):
            def one_plain():
                plain.append(run(base + ["--no-report", "--json", str(d / f"p{q}.json")], env, variant="plain"))

            def one_full():
                dt, err = run(base + ["--out", str(d / f"out{q}")], {**full_env, "FEDCHECK_RENDER_TRACE": "1"},
                              trace=True, variant="full")
                full.append(dt)
                m = re.search(r"render: (\d+) renderer process", err)
                chosen.append(int(m.group(1)) if m else 0)
            for f in ((one_plain, one_full) if q % 2 == 0 else (one_full, one_plain)):
                f()
            if a.here:
                here.append(run(base + ["--out", str(d / f"here{q}")], serial_env, variant="here"))
            print(f"  pair {q + 1} ({'plain first' if q % 2 == 0 else 'reports first'}): --no-report "
                  f"{plain[-1]:.2f} s, with reports {full[-1]:.2f} s, ratio {full[-1] / plain[-1]:.2f}"
                  + (f" (rendered in the main process: {here[-1]:.2f} s)" if a.here else "")
                  + f"; renderer processes: {chosen[-1]}; load {os.getloadavg()[0]:.2f}")
        mp, mf = statistics.median(plain), statistics.median(full)
        ratio = mf / mp
        pair_ratios = sorted(f / p for f, p in zip(full, plain))
        load1 = os.getloadavg()[0]
        print(f"load average {load0:.2f} -> {load1:.2f}")
        print(f"--no-report: median {mp:.2f} s, min {min(plain):.2f} s; with reports: median {mf:.2f} s, "
              f"min {min(full):.2f} s ({len(plain)} pairs, whole process trees)")
        print(f"pair ratios: median {statistics.median(pair_ratios):.2f}, min {pair_ratios[0]:.2f}, "
              f"max {pair_ratios[-1]:.2f}; ratio of the minima {min(full) / min(plain):.2f}")
        if a.here:
            mh = statistics.median(here)
            print(f"  rendered in the main process after the checks: median {mh:.2f} s, ratio {mh / mp:.2f}")
        cpu = {k: statistics.median(v) for k, v in CPU.items()}
        print(f"  CPU time (user + system, with the renderer processes), medians: --no-report {cpu['plain']:.2f} s,"
              f" with reports {cpu['full']:.2f} s" + (f", rendered in the main process {cpu['here']:.2f} s"
                                                     if a.here else ""))
        print(f"  renderer processes of the runs with reports: {chosen} ({os.cpu_count()} cores; "
              + ("automatic: fedcheck.render.default_workers)" if a.workers is None else "--workers)"))
        written = sorted(p.relative_to(d / "out0").as_posix() for p in (d / "out0").rglob("*") if p.is_file())
        print(f"  files written with reports: {len(written)} ({', '.join(w for w in written if '/' not in w)}, "
              f"+ {sum('/' in w for w in written)} in subfolders)")
        if not a.no_steps:
            dt, err = run(base + ["--out", str(d / "traced")], {**full_env, "FEDCHECK_RENDER_TRACE": "1"},
                          trace=True)
            print(f"the pooled report phase piece by piece ({dt:.2f} s run; 'end' is the wall clock mod 100 s):")
            for line in err.splitlines():
                if line.startswith("render: "):
                    print("  " + re.sub(r"/\S*/\.fedcheck-report-[^/ ]+/?", "", line[8:]))
            print("report phase, step by step (in this process, one results file):")
            for name, sec in steps(d / "r.json", a.profile):
                print(f"  {name:40s} {sec:6.2f} s")
        print(f"reports_over_no_report={ratio:.2f} (median of {len(plain)} alternated pairs; target <= {TARGET})"
              f"  -> {'OK' if ratio <= TARGET else 'MISSED'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
