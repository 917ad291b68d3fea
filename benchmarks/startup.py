"""Start-up of the command line: ``fedcheck --help``, ``fedcheck list`` and the time
``fedcheck verify`` takes to reach its first check, as ratios to ``python -c "import numpy"`` measured in
the same run (interleaved subprocesses, medians).

Target: ``fedcheck list`` takes at most 2x ``import numpy`` (with its manifest built; the first ``list``
after an edit of a source rebuilds it, shown as ``list (cold manifest)``).

    python benchmarks/startup.py [--repeats 7]

Each command runs in a fresh interpreter with ``FEDCHECK_CACHE`` set to a temporary directory (the
manifest of the catalog lives there).  ``verify``'s time to its first check is the wall time until the
runner is entered (a patched ``run_claim`` exits the process there); "whole catalog" is the same with every
paper module imported first, as ``verify`` did before it imported only the modules the named checks need.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_FIRST_CHECK = ("import os, fedcheck.core.runner as r; r.run_claim = lambda c, cfg: os._exit(0); {pre}"
                "from fedcheck.cli.main import main; main(['verify', {claim!r}, '--no-report', '-q', '-j', '1'])")


def commands(claim: str) -> dict[str, list[str]]:
    py = sys.executable
    pre_all = "from fedcheck.catalog.registry import default_registry; default_registry(); "
    return {
        "import numpy": [py, "-c", "import numpy"],
        "python (no import)": [py, "-c", "pass"],
        "fedcheck --help": [py, "-m", "fedcheck", "--help"],
        "fedcheck --version": [py, "-m", "fedcheck", "--version"],
        "fedcheck list": [py, "-m", "fedcheck", "list"],
        "fedcheck list (cold manifest)": [py, "-m", "fedcheck", "list"],
        "fedcheck cache info": [py, "-m", "fedcheck", "cache", "info"],
        f"verify {claim}: first check": [py, "-c", _FIRST_CHECK.format(pre="", claim=claim)],
        f"verify {claim}: first check, whole catalog": [py, "-c", _FIRST_CHECK.format(pre=pre_all, claim=claim)],
    }


def run(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}...: exit {p.returncode}\n{p.stderr[-2000:]}")
    return dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--claim", default="fedfw.theorem1")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="fedcheck-startup-"))
    try:
        env = dict(os.environ, FEDCHECK_CACHE=str(tmp / "cache"), FEDCHECK_PROGRESS="0")
        cmds = commands(args.claim)
        times: dict[str, list[float]] = {k: [] for k in cmds}
        run(cmds["fedcheck list"], env)             # builds the manifest once (and warms the OS file cache)
        for _ in range(args.repeats):              # interleaved: every command sees the same load
            for name, cmd in cmds.items():
                if name == "fedcheck list (cold manifest)":
                    (tmp / "cache" / "catalog.json").unlink(missing_ok=True)
                times[name].append(run(cmd, env))
        base = statistics.median(times["import numpy"])
        try:
            load = os.getloadavg()[0]
        except OSError:
            load = float("nan")
        print(f"# {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}; "
              f"load average {load:.2f}; {args.repeats} interleaved repeats, medians of wall time")
        print(f"{'command':48s} {'median s':>9s} {'min s':>7s} {'x import numpy':>15s}")
        for name, ts in times.items():
            print(f"{name:48s} {statistics.median(ts):9.3f} {min(ts):7.3f} {statistics.median(ts) / base:15.2f}")
        ratio = statistics.median(times["fedcheck list"]) / base
        print(f"list/import_numpy={ratio:.2f} (target <= 2): {'met' if ratio <= 2 else 'NOT met'}")
        ttfc = statistics.median(times[f"verify {args.claim}: first check"])
        whole = statistics.median(times[f"verify {args.claim}: first check, whole catalog"])
        print(f"verify_first_check/whole_catalog={ttfc / whole:.2f}")
        return 0 if ratio <= 2 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
