"""Reports against no reports: `fedcheck verify theorem1` with its HTML/PDF reports takes at most 1.5x the same
run with --no-report.

The runs are measured in one session, as subprocesses of the same command line (same seeds, same rounds),
after a warm-up run that fills the solve cache, alternating them so that a change of machine load hits all
alike; the ratio of the medians is the figure of merit.  Three variants: ``--no-report``; with reports, as
``verify`` renders them (renderer processes started with the checks, ``fedcheck.render.RenderPool``); with
reports rendered in the main process after the checks (``FEDCHECK_REPORT_WORKERS=0``), for comparison.
Then the pooled report phase is shown piece by piece (``FEDCHECK_RENDER_TRACE=1``: which renderer ran what,
how long) and the report phase is timed step by step in this process (what the profile says it costs).

    python benchmarks/reports.py                      # fedcheck verify theorem1, 3 repeats
    python benchmarks/reports.py --repeats 5 -- theorem1 --seeds 2 --rounds 2000
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


def run(cmd: list[str], env: dict, trace: bool = False, variant: str | None = None):
    import resource
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if variant:
        CPU.setdefault(variant, []).append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    if r.returncode not in (0, 1, 3):
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    return (dt, r.stderr) if trace else dt


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
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--workers", type=int, default=None,
                    help="renderer processes of the run with reports (FEDCHECK_REPORT_WORKERS; default: automatic)")
    ap.add_argument("verify_args", nargs="*", default=["theorem1"], help="arguments of fedcheck verify (after --)")
    a = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        base = [sys.executable, "-m", "fedcheck", "verify", *a.verify_args, "-q", "-j", "1"]
        warm = run(base + ["--no-report", "--json", str(d / "r.json")], env)        # fills the solve cache
        print(f"fedcheck verify {' '.join(a.verify_args)}  (warm-up {warm:.1f} s)")
        print(f"load average {os.getloadavg()[0]:.2f}")
        plain, full, here, chosen = [], [], [], []
        serial_env = {**env, "FEDCHECK_REPORT_WORKERS": "0"}
        full_env = env if a.workers is None else {**env, "FEDCHECK_REPORT_WORKERS": str(a.workers)}
        for q in range(a.repeats):
            plain.append(run(base + ["--no-report", "--json", str(d / f"p{q}.json")], env, variant="plain"))
            dt, err = run(base + ["--out", str(d / f"out{q}")], {**full_env, "FEDCHECK_RENDER_TRACE": "1"},
                          trace=True, variant="full")
            full.append(dt)
            m = re.search(r"render: (\d+) renderer process", err)
            chosen.append(int(m.group(1)) if m else 0)
            here.append(run(base + ["--out", str(d / f"here{q}")], serial_env, variant="here"))
            print(f"  repeat {q + 1}: --no-report {plain[-1]:.2f} s, with reports {full[-1]:.2f} s "
                  f"(rendered in the main process: {here[-1]:.2f} s; renderer processes: {chosen[-1]})")
        mp, mf, mh = statistics.median(plain), statistics.median(full), statistics.median(here)
        ratio = mf / mp
        print(f"load average {os.getloadavg()[0]:.2f}")
        print(f"median: --no-report {mp:.2f} s, with reports {mf:.2f} s: ratio {ratio:.2f} (target <= {TARGET})"
              f"  -> {'OK' if ratio <= TARGET else 'MISSED'}")
        print(f"  rendered in the main process after the checks: {mh:.2f} s, ratio {mh / mp:.2f}")
        cp, cf, ch = (statistics.median(CPU[k]) for k in ("plain", "full", "here"))
        print(f"  CPU time (user + system, with the renderer processes): --no-report {cp:.2f} s, with reports "
              f"{cf:.2f} s, rendered in the main process {ch:.2f} s")
        print(f"  renderer processes of the runs with reports: {chosen} ({os.cpu_count()} cores; "
              + ("automatic: fedcheck.render.default_workers)" if a.workers is None else "--workers)"))
        written = sorted(p.relative_to(d / "out0").as_posix() for p in (d / "out0").rglob("*") if p.is_file())
        print(f"  files written with reports: {len(written)} ({', '.join(w for w in written if '/' not in w)}, "
              f"+ {sum('/' in w for w in written)} in subfolders)")
        dt, err = run(base + ["--out", str(d / "traced")], {**full_env, "FEDCHECK_RENDER_TRACE": "1"}, trace=True)
        print(f"the pooled report phase piece by piece ({dt:.2f} s run; 'end' is the wall clock mod 100 s):")
        for line in err.splitlines():
            if line.startswith("render: "):
                print("  " + re.sub(r"/\S*/\.fedcheck-report-[^/ ]+/?", "", line[8:]))
        print("report phase, step by step (in this process, one results file):")
        for name, sec in steps(d / "r.json", a.profile):
            print(f"  {name:40s} {sec:6.2f} s")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
