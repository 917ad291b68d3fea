"""The one FedAvg against a plain per-client loop, same instances, same process.

    python benchmarks/fedavg.py                  # the paper family (below) and a 20-dim synthetic one
    python benchmarks/fedavg.py --repeat 5 --B 32 --rounds 30 --steps 3
    python benchmarks/fedavg.py --synthetic --n 10 --m 20 --p 20   # only the synthetic instances

Instances: least-absolute-deviation clients ``f_i(x) = (1/m) ||A_i x - b_i||_1`` (the non-smooth FedAvg of
``theorems.fedmls.methods``): FedMLS's own family of its n-scaling claim (``LADFamily(n=32, m=12, p=3,
heterogeneity=0.5)``, ``theorems/fedmls/claims.py``), ``B`` seeds; and a synthetic family with ``--n --m --p``
(default 10 x 20 x 20).  Step ``eta_k = eta_0 / sqrt(k)`` varying per instance.  The batched subgradient
oracle is the floor of the one FedAvg (its round is the oracle plus a few array operations), so the
speedup over a per-client loop grows as the per-client work shrinks: a Python iteration costs a few
microseconds whatever the size, the batched oracle ~``m p`` flops per client.
Three ways of running the same rounds:

* one      -- :func:`fedcheck.algorithms.fedavg.run_fedavg` with the batch's subgradient oracle
              (all instances and clients at once);
* adapter  -- :func:`theorems.fedmls.methods.fedavg` (the paper's entry point, recording ``F``,
              ``calls``, ``comms`` at the start and the end);
* loop     -- Python loops over instances, rounds, clients and local steps, one client's numpy update
              at a time.

CPU time of this process, medians over interleaved repetitions (the machine is shared).  The iterates of
all three are compared (max abs difference, must be <= 1e-12).  Last line:
``speedup_vs_loop=<loop time / one time> adapter_speedup_vs_loop=<loop time / adapter time> max_abs_diff=<..>``.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from theorems.fedmls.methods import fedavg as mls_fedavg
from fedcheck.algorithms.fedavg import run_fedavg
from fedcheck.algorithms.pieces import static_oracle
from fedcheck.problems.instances import Instance, InstanceBatch, instance_rng
from fedcheck.problems.sets import L2Ball


def paper_batch(B: int) -> InstanceBatch:
    from theorems.fedmls.problems import LADFamily
    fam = LADFamily(n=32, m=12, p=3, heterogeneity=0.5)
    return InstanceBatch([fam.draw(s) for s in range(B)])


def make_batch(B: int, n: int, m: int, p: int) -> InstanceBatch:
    rng = instance_rng(0, f"benchmarks:fedavg:{B}:{n}:{m}:{p}")
    insts = []
    for _ in range(B):
        A = rng.standard_normal((n, m, p))
        b = A @ rng.standard_normal(p) + 0.3 * rng.standard_normal((n, m)) + rng.standard_normal((n, 1))
        insts.append(Instance(A, b, "lad", L2Ball(100.0, p)))
    return InstanceBatch(insts)


def loop_fedavg(A, b, rounds, steps, eta):
    """The reference: plain Python over instances, rounds, clients and local steps."""
    B, n, m, p = A.shape
    out = np.zeros((B, p))
    for bi in range(B):
        x = np.zeros(p)
        for k in range(rounds):
            acc = np.zeros(p)
            for i in range(n):
                Ai, bi_ = A[bi, i], b[bi, i]
                w = x.copy()
                for _ in range(steps):      # LAD.grad's order: (sign(A w - b) / m) @ A
                    r = Ai @ w
                    r -= bi_
                    w = w - eta[k, bi] * ((np.sign(r) / m) @ Ai)
                acc += w
            x = acc / n
        out[bi] = x
    return out


def measure(batch: InstanceBatch, label: str, rounds: int, steps: int, repeat: int) -> tuple[float, float]:
    B, n, p = batch.B, batch.n, batch.p
    A = np.stack([inst.A for inst in batch.instances])
    b = np.stack([inst.b for inst in batch.instances])
    k = np.arange(1, rounds + 1, dtype=float)[:, None]
    eta = 0.5 / np.sqrt(k) * np.linspace(0.5, 1.5, B)[None, :]
    T = np.full((rounds, B), float(steps))
    x0 = np.zeros((B, p))

    def one():
        return run_fedavg(x0, static_oracle(batch.loss.grad), rounds=rounds, n=n, eta=eta, steps=T).final["x"]

    def adapter():
        return mls_fedavg(batch, rounds=rounds, T=T, eta=eta, grid=[0, rounds]).final["xbar"]

    def loop():
        return loop_fedavg(A, b, rounds, steps, eta)

    X = np.full((B, n, p), 0.1)

    def floor():                                   # the oracle alone, as often as the run calls it
        for _ in range(rounds * steps):
            batch.loss.grad(X)

    times = {"one": [], "adapter": [], "loop": [], "oracle floor": []}
    res = {}
    for _ in range(repeat):
        for name, fn in (("one", one), ("adapter", adapter), ("loop", loop), ("oracle floor", floor)):
            t0 = time.process_time()
            res[name] = fn()
            times[name].append(time.process_time() - t0)
    med = {k_: statistics.median(v) for k_, v in times.items()}
    diff = max(float(np.max(np.abs(res["one"] - res["loop"]))), float(np.max(np.abs(res["adapter"] - res["loop"]))))
    same = bool(np.array_equal(res["one"], res["adapter"]))
    print(f"# {label}: {B} instances x {n} clients x {p} dims (m={A.shape[2]}), {rounds} rounds x {steps} local "
          f"steps; CPU-time medians of {repeat}")
    for name in ("one", "adapter", "loop", "oracle floor"):
        print(f"{name:12s} {med[name]:9.4f} s")
    print(f"one == adapter bit for bit: {same}")
    print(f"speedup_vs_loop={med['loop'] / med['one']:.1f} adapter_speedup_vs_loop={med['loop'] / med['adapter']:.1f} "
          f"one_over_floor={med['one'] / med['oracle floor']:.2f} max_abs_diff={diff:.2e}")
    if diff > 1e-12 or not same:
        raise SystemExit("iterates differ")
    return med["loop"] / med["one"], diff


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--B", type=int, default=64)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--m", type=int, default=20)
    ap.add_argument("--p", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--synthetic", action="store_true", help="only the synthetic instances")
    a = ap.parse_args(argv)
    if not a.synthetic:
        measure(paper_batch(a.B), "FedMLS LAD family (n-scaling claim)", a.rounds, a.steps, a.repeat)
    measure(make_batch(a.B, a.n, a.m, a.p), "synthetic LAD", a.rounds, a.steps, a.repeat)


if __name__ == "__main__":
    main()
