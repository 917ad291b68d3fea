"""Adversarial search methods at equal budgets, and against PEPit's certified worst case.

    python benchmarks/search.py --rounds 500          # budgets 50 and 200, 3 seeds, the default claims (~10 min)
    python benchmarks/search.py --budgets 50 --seeds 2 --claims fedfw.theorem1
    python benchmarks/search.py --pep-only            # only Frank-Wolfe on one client vs the PEP worst case

Part 1 -- bound claims of the catalog.  For each claim and budget, ``fedcheck.tools.search.search`` runs with
``method="cma"`` (CMA-ES, the default), ``"perturb"`` (the hand-written random + (1+lambda) search it replaces)
and ``"random"`` (random draws from the claim's domain), each for exactly ``budget`` claim evaluations at the
same rounds per evaluation and the same seeds; plus the family baseline (``budget`` draws of the claim's own
family at its declared parameters).  Printed: the median over seeds of the best max measured/bound (the
paper's readings) reached, and each method's median / random's median.

Part 2 -- classical Frank-Wolfe on one client (``eta_t = 2/(t+1)``; FedFW at n = 1 is this method, the claim
``fedcheck pep`` certifies).  PEPit gives the certified worst case ``w(T) L D^2`` of ``F(x^{T+1}) - F*`` over every
L-smooth convex f on every convex set of diameter D (``theorems.fedfw.pep.frank_wolfe_worst_case``, the upper
end of its certified interval, at L = D = 1: the worst case scales as L D^2).  A bound claim declared here
says ``F(x^t) - F* <= L D^2 w(t - 1)`` for t = 2..T+1, on one least-squares client, any set of the catalog, any
start (its domain); its max measured/bound for an instance is the **fraction of the certified worst case**
that instance reaches (at most 1 up to the solver's accuracy: a value above 1 would be a bug of the engine or
of the PEP).  Each method searches it at equal budgets.

All randomness from ``numpy.random.SeedSequence``: the same command prints the same numbers.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import numpy as np

DEFAULT_CLAIMS = ("fedfw.theorem1", "fedfw.surrogate_31", "fedfw.consensus_37")
METHODS = ("cma", "perturb", "random")


def run_methods(claim, budget: int, seeds, rounds: int | None, methods=METHODS, baseline: bool = True) -> dict:
    """``{method: [best ratio per seed]}`` (and ``"family"``: the baseline of family draws)."""
    from fedcheck.tools.search import search
    out = {m: [] for m in methods}
    if baseline:
        out["family"] = []
    for s in seeds:
        for m in methods:
            o = search(claim, budget=budget, seed=s, rounds=rounds, verify_rounds=rounds, method=m,
                       baseline=baseline and m == methods[0], do_shrink=False, out=None, use_cache=False)
            out[m].append(o.best.ratio)
            if baseline and m == methods[0]:
                out["family"].append(o.baseline_best.ratio if o.baseline_best is not None else float("nan"))
    return out


def _median(xs) -> float:
    xs = [x for x in xs if np.isfinite(x)]
    return statistics.median(xs) if xs else float("nan")


def _mean(xs) -> float:
    xs = [x for x in xs if np.isfinite(x)]
    return statistics.mean(xs) if xs else float("nan")


def table(title: str, rows: list[tuple], ref: str = "random", stat=None) -> str:
    """rows: (label, budget, {method: [values]}); ``stat``: median (default) or mean over seeds."""
    stat = stat or _median
    cols = [c for c in ("cma", "perturb", "random", "family") if any(c in r[2] for r in rows)]
    lines = [title, f"{'claim':28s} {'budget':>6s} " + " ".join(f"{c:>10s}" for c in cols)
             + "   " + " ".join(f"{c + '/' + ref:>14s}" for c in cols if c != ref)]
    for label, budget, res in rows:
        med = {c: stat(res[c]) for c in cols}
        lines.append(f"{label:28s} {budget:6d} " + " ".join(f"{med[c]:10.4g}" for c in cols) + "   "
                     + " ".join(f"{med[c] / med[ref]:14.3g}" for c in cols if c != ref))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# Frank-Wolfe on one client against the certified worst case
def pep_worst_cases(horizon: int, use_cache: bool = True) -> list[float]:
    """``w(T)``, T = 1..horizon: the certified worst ``F(x^{T+1}) - F*`` at L = D = 1 (upper end of the PEP's
    certified interval: the dual value, widened when the solve is not 'optimal')."""
    from theorems.fedfw.pep import _interval, frank_wolfe_worst_case
    out = []
    for T in range(1, horizon + 1):
        r = frank_wolfe_worst_case(T, 1.0, 1.0, use_cache=use_cache)
        lo, hi = _interval(r)
        if not np.isfinite(hi):
            raise RuntimeError(f"PEP for T = {T} undecided: {r.get('status')}")
        out.append(float(hi))
    return out


def fw_one_client_claim(w: list[float], m: int = 6, p: int = 4):
    """Frank-Wolfe (eta_t = 2/(t+1)) on one least-squares client: F(x^t) - F* <= L D^2 w(t-1), t = 2..len(w)+1."""
    import sympy as sp

    from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Rounds
    from fedcheck import algorithms as engine
    from fedcheck.problems.instances import RandomFamily
    from fedcheck.symbols import D, L, t
    H = len(w)
    pieces = [(sp.Float(w[T - 1], 17), t <= T + 1) for T in range(1, H)] + [(sp.Float(w[H - 1], 17), True)]
    return Claim(
        id="bench.fw_pep", paper=Paper(key="bench", title="PEP worst case of Frank-Wolfe", authors="PEPit"),
        reference="fedcheck pep (Frank-Wolfe, eta_t = 2/(t+1))",
        statement="F(x^t) - F* <= L D^2 w(t-1), w the certified worst case at L = D = 1",
        evidence=BoundTest(Rounds(family=RandomFamily(loss="least_squares", set="l2", n=1, m=m, p=p),
                                  algorithm=engine.frank_wolfe, schedules={"eta": 2 / (t + 1)},
                                  seeds=4, rounds=H, valid_from=2),
                           bounds=(Bound("PEP worst case", L * D**2 * sp.Piecewise(*pieces)),)),
        domain=Domain(fixed={"loss": "least_squares", "n": 1, "set": ("l1", "l2", "box", "simplex")},
                      free={"m": (1, None), "p": (2, None), "radius": (0, None), "heterogeneity": (0, None),
                            "noise": (0, None), "outside": (0, None), "scale": (0, None), "x0": None}),
        expected="holds")


def pep_part(horizon: int, budgets, seeds) -> tuple[str, dict]:
    t0 = time.perf_counter()
    w = pep_worst_cases(horizon)
    claim = fw_one_client_claim(w)
    lines = [f"Frank-Wolfe, one client: certified worst case w(T) (L = D = 1, PEPit, T = 1..{horizon}): "
             + ", ".join(f"{v:.5g}" for v in w) + f"  ({time.perf_counter() - t0:.1f} s)"]
    rows, raw = [], {}
    for b in budgets:
        res = run_methods(claim, b, seeds, rounds=horizon)
        raw[b] = res
        rows.append((f"FW n=1 (T <= {horizon})", b, res))
    lines.append(table(f"fraction of the certified worst case reached (median over {len(seeds)} seeds of the best "
                       "max_t gap(t) / (L D^2 w(t-1)))", rows))
    lines.append(table(f"the same, mean over {len(seeds)} seeds", rows, stat=_mean))
    best = max(max(v for v in res[m] if np.isfinite(v)) for res in raw.values() for m in res)
    lines.append(f"largest fraction reached by any method and seed: {best:.4g} (<= 1 up to solver accuracy: "
                 f"{'consistent' if best <= 1 + 1e-6 else 'INCONSISTENT'})")
    return "\n".join(lines), raw


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budgets", default="50,200")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--claims", default=",".join(DEFAULT_CLAIMS))
    ap.add_argument("--rounds", type=int, default=1000, help="rounds per evaluation (all methods; default 1000)")
    ap.add_argument("--horizon", type=int, default=6, help="PEP horizon T (default 6)")
    ap.add_argument("--pep-seeds", type=int, default=8, help="seeds of the PEP part (default 8; it is fast)")
    ap.add_argument("--pep-only", action="store_true")
    ap.add_argument("--no-pep", action="store_true")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    budgets = [int(b) for b in a.budgets.split(",")]
    seeds = list(range(a.seeds))
    import os
    print(f"# search benchmark: budgets {budgets}, seeds {seeds}, {a.rounds} rounds per evaluation; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    if not a.pep_only:
        from fedcheck.catalog.registry import default_registry
        reg = default_registry()
        rows = []
        for cid in [c for c in a.claims.split(",") if c]:
            claim = reg.resolve([cid])[0]
            for b in budgets:
                t0 = time.perf_counter()
                res = run_methods(claim, b, seeds, a.rounds)
                rows.append((cid, b, res))
                print(f"  {cid} budget {b}: " + "; ".join(f"{m} {[round(v, 5) for v in res[m]]}" for m in res)
                      + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
        print(table("best max measured/bound reached (median over seeds)", rows), flush=True)
    if not a.no_pep:
        text, _ = pep_part(a.horizon, budgets, list(range(a.pep_seeds)))
        print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
