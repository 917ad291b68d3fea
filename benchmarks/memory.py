"""Peak memory of `fedcheck verify theorem1 --instance` on a 40 MB instance.

    python benchmarks/memory.py [--rounds T]

Builds the instance (n = 200 clients, m = 50 rows, p = 500 features: A is 40 MB), then runs,
each in its own process, (a) the imports a run needs and (b) the whole check with `--no-report`, and prints
their peak resident memory.  Target: (b) at most 0.5 GB.

What it took (benchmarks/HISTORY.md, "Memory"): least squares with m < p keeps its factored form
(A_i^T (A_i x - b_i) / m, no stacked n p^2 Hessians: 400 MB here, and the kernel's transposed copy another
400 MB), the vertex enumeration of sup ||grad f_i||^2 runs in chunks (it built an n x 2p x p array: 800 MB,
and its square), and the stacked QR of the recorder forms R of [A | b] without Q.  Before: 2.6 GB, 111 s.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_GB = 0.5

_PEAK = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)")


def peak_of(cmd: list[str], env: dict) -> tuple[float, int, float]:
    """(peak RSS in GB, exit code, seconds) of ``cmd`` run in a fresh process."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _PEAK, *cmd], env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    kb, rc = out.stdout.strip().splitlines()[-1].split()
    return int(kb) / 2**20, int(rc), dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default: the check's own, 10000)")
    args = ap.parse_args(argv)
    from fedcheck.problems.instances import RandomFamily, save_instance
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        inst = RandomFamily(n=200, m=50, p=500).draw(0)
        path = save_instance(inst, tmp / "big.npz")
        size_mb = inst.A.nbytes / 1e6
        env = dict(os.environ, FEDCHECK_CACHE=str(tmp / "cache"))
        imports = [sys.executable, "-c", "import fedcheck.cli.main, theorems.fedfw, cvxpy, numba, "
                                         "fedcheck.algorithms.jit"]
        run = [sys.executable, "-m", "fedcheck", "verify", "theorem1", "--instance", str(path), "--no-report",
               "-q", "--json", str(tmp / "r.json"), "--out", str(tmp / "out")]
        if args.rounds:
            run += ["--rounds", str(args.rounds)]
        base, _, _ = peak_of(imports, env)
        peak, rc, dt = peak_of(run, env)
        verdict = json.loads((tmp / "r.json").read_text())["checks"][0]["verdict"] if rc in (0, 1) else "-"
    print(f"instance: n=200 m=50 p=500, A = {size_mb:.0f} MB")
    print(f"imports only        peak {base:.3f} GB")
    print(f"verify theorem1     peak {peak:.3f} GB  ({dt:.0f} s, exit {rc}, verdict {verdict})")
    print(f"peak / target       {peak / TARGET_GB:.2f}  (target <= 1.00: at most {TARGET_GB} GB)")
    return 0 if peak <= TARGET_GB and rc in (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
