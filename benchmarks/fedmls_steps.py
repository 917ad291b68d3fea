"""What each compiled piece of FedMLS buys: the peer benchmark's FedMLS run (64 instances x 32
clients x p = 3, LAD m = 12, 100 rounds, T_k = min(ceil(k/3), 8), R = 10, F every round) with the pieces of
:mod:`fedcheck.algorithms.fedmls_jit` switched on one after the other, in one process, interleaved.

    python benchmarks/fedmls_steps.py [--repeat 7]

Times are **CPU** seconds of the process (``time.process_time``: a shared machine's load inflates wall time far
more), minimum and median of the repeats; every variant's final ``xbar`` and recorded ``F`` are checked equal
bit for bit to the first variant's (the numpy reference), or the script fails.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedcheck.algorithms import mls as M  # noqa: E402
from fedcheck.algorithms import fedmls_jit as J  # noqa: E402
from fedcheck.problems.instances import InstanceBatch  # noqa: E402
from theorems.fedmls.problems import LADFamily  # noqa: E402

VARIANTS = {  # name -> the pieces on
    "numpy (the FEDCHECK_JIT=0 paths)": dict(lad=False, rnd=False, F=False, K=False),
    "session start (elementwise kernels)": dict(lad=False, rnd=False, F=False),
    "+ fused LAD approx-prox": dict(rnd=False, F=False),
    "+ compiled LAD F (recorder)": dict(rnd=False),
    "+ compiled round (lines 6, 14-19)": dict(),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    B, T, n = 64, 100, 32
    batch = InstanceBatch([LADFamily(n=n, m=12, p=3, heterogeneity=0.5).draw(s) for s in range(B)])
    k = np.arange(1, T + 1, dtype=float)[:, None]
    lam = np.broadcast_to(1.0 / k, (T, B)).copy()
    Tk = np.broadcast_to(np.minimum(np.ceil(k / 3.0), 8.0), (T, B)).copy()
    orig = dict(lad=M.lad_prox_steps, rnd=M.round_kernels, F=J.lad_full_value, K=M._compiled_prox_steps)

    def use(lad=True, rnd=True, F=True, K=True):
        M.lad_prox_steps = orig["lad"] if lad else (lambda *a: None)
        M.round_kernels = orig["rnd"] if rnd else (lambda *a: None)
        J.lad_full_value = orig["F"] if F else (lambda loss: None)
        M._compiled_prox_steps = orig["K"] if K else (lambda *a: None)

    def run():
        return M.fedmls(batch, rounds=T, lam=lam, T=Tk, R=10.0, grid=np.arange(T + 1))

    times = {name: [] for name in VARIANTS}
    ref = None
    try:
        for _ in range(args.repeat):
            for name, on in VARIANTS.items():
                use(**on)
                run()
                t = time.process_time()
                tr = run()
                times[name].append(time.process_time() - t)
                got = (tr.final["xbar"], tr.metrics["F"])
                ref = ref or got
                if not (np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])):
                    print(f"{name}: not the numpy reference's bits", file=sys.stderr)
                    return 1
    finally:
        use()
    import os
    print(f"# FedMLS 64x32x3 LAD m=12, 100 rounds; CPU seconds, {args.repeat} interleaved repeats; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; every variant bit for bit equal")
    for name, ts in times.items():
        print(f"{name:40s} min {min(ts):.4f} s  median {float(np.median(ts)):.4f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
