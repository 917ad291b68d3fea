"""Measure where the FedFW performance-estimation SDP grows past what a small machine solves in minutes.

``python -m theorems.fedfw.pep_scaling [--limit 300] [--clients 2,3,4,6] [--horizons 1,2,3,4,6,8] [--model fedfw]``
solves :func:`theorems.fedfw.pep.fedfw_worst_case` (``--model fedfw``: the gap against (38)) or
:func:`theorems.fedfw.pep.fedfw_surrogate_worst_case` (``--model surrogate``: the G-free surrogate gap of (31), no
bound on ||grad f_i(x*)||, separate starts in D) without the cache for each (n, T) in a child process with a time
limit and prints one row per solve: n, T, the size of the Gram matrix, seconds (``None``: not solved within the limit;
larger T for that n are then skipped).  The table recorded in ``theorems.fedfw.pep.FEDFW_PEP_SCALING`` came from
this script (``--model fedfw``); the horizons of ``PEP_GRID_FULL["surrogate_horizons"]`` from ``--model surrogate``.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time


def _one(n, T, q, model="fedfw"):
    from theorems.fedfw import pep
    t0 = time.perf_counter()
    if model == "surrogate":
        r = pep.fedfw_surrogate_worst_case(T, n, use_cache=False, starts="separate")
    else:
        r = pep.fedfw_worst_case(T, n, use_cache=False)
    try:
        from PEPit import Point
        size = Point.counter
    except Exception:  # pragma: no cover
        size = None
    q.put({"n": n, "T": T, "gram": size, "seconds": time.perf_counter() - t0, "dual": r.get("dual"),
           "status": r.get("status")})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m theorems.fedfw.pep_scaling")
    ap.add_argument("--limit", type=float, default=300.0)
    ap.add_argument("--clients", default="2,3,4,6")
    ap.add_argument("--horizons", default="1,2,3,4,6,8,10")
    ap.add_argument("--model", default="fedfw", choices=("fedfw", "surrogate"))
    a = ap.parse_args(argv)
    ctx = mp.get_context("spawn")
    for n in (int(x) for x in a.clients.split(",")):
        for T in (int(x) for x in a.horizons.split(",")):
            q = ctx.Queue()
            p = ctx.Process(target=_one, args=(n, T, q, a.model))
            t0 = time.perf_counter()
            p.start()
            p.join(a.limit)
            if p.is_alive():
                p.terminate()
                p.join()
                print(json.dumps({"n": n, "T": T, "gram": None, "seconds": None, "limit": a.limit,
                                  "wall": time.perf_counter() - t0}), flush=True)
                break
            print(json.dumps(q.get()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
