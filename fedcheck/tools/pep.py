"""Certified worst cases with performance estimation (PEP), an optional extra: ``pip install fedcheck[pep]``.

Random and searched instances give lower bounds on the worst case; a performance-estimation problem
(PEPit, Taylor, Hendrickx & Glineur) computes the worst case *over a whole function class*, as a
semidefinite program whose dual solution certifies it.  Two analogues of the FedFW paper:

* :func:`frank_wolfe_worst_case` -- the centralized analogue of Theorem 1: Frank-Wolfe with
  ``eta_t = 2/(t+1)`` on ``F = f + indicator(D)``, ``f`` L-smooth convex, ``D`` convex of diameter ``D``
  (FedFW with one client is exactly this method: the penalty ``lambda_t (x_i - xbar)`` vanishes).  The
  worst ``F(x^{T+1}) - F*`` after ``T`` rounds is compared with the paper's bound at ``n = 1``: (38) with
  ``Y* = 0`` is at least ``2 L D^2 / t`` for every ``lambda_0 > 0`` and ``G >= 0`` (its infimum, at
  ``lambda_0 -> 0`` and ``G = 0``; it is also the ``lambda_0 -> 0`` limit of (31)), so worst case / that floor
  is an upper bound on the tightness of (38) under any reading.
* :func:`naive_averaging_worst_case` -- the paper's motivating counterexample (Appendix A, (20)): clients take
  a Frank-Wolfe step from the server point with their own gradient and the server averages, over
  ``clients`` L-smooth convex ``f_i`` with ``||grad f_i(x*)|| <= zeta`` (without such a bound the worst case
  is unbounded).  Its worst case does not decay with ``T`` (the stall), while centralized FW in the same
  class does; instance (21) (``f_1 = (x-3)^2/2``, ``f_2 = (x+1)^2/2`` on ``[-1, 1]``: ``L = 1``, ``D = 2``,
  ``zeta = 2``) is a member of the class whose gap is ``1/2`` at every round, an exact lower bound.

Each solve reports the dual value (an upper bound on the worst case, PEPit's default) and the primal value
(a feasible worst-case Gram matrix, a lower bound); they agree up to the solver's accuracy.  Solver: cvxpy
with Clarabel (interior point; no MOSEK needed), SCS at tight tolerances as a recorded fallback -- never a
silent one.  Results are cached in ``$FEDCHECK_CACHE/pep`` (keyed by the problem, the versions and the
solver).  PEPit keeps global state: one PEP at a time per process.

Command line: ``fedcheck pep [--horizon 6] [--clients 2] [--zeta 2]`` (see README); as checks,
:func:`pep_checks` returns ``fedfw.pep_frank_wolfe`` and ``fedfw.pep_naive_averaging`` for a theorem file.
"""
from __future__ import annotations

import hashlib
import json
import math
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedcheck.core import verdict as V

__all__ = ["available", "require", "PepUnavailable", "frank_wolfe_worst_case", "naive_averaging_worst_case",
           "instance21_gaps", "paper_floor", "jaggi_bound", "pep_checks", "run_pep", "add_arguments", "cmd_pep"]

ACCURACY = 1e-4   # relative margin given to a solve whose status is not 'optimal' (optimal_inaccurate)


class PepUnavailable(ImportError):
    pass


def available() -> tuple[bool, str]:
    """Whether PEPit (and an SDP solver for cvxpy) can be used, and why not."""
    try:
        import PEPit  # noqa: F401
    except ImportError as e:
        return False, f"PEPit is not installed ({e}); install the extra: pip install 'fedcheck[pep]' (or pip install pepit)"
    import cvxpy as cp
    solvers = set(cp.installed_solvers())
    if not ({"CLARABEL", "SCS"} & solvers):
        return False, f"no SDP solver for cvxpy (need CLARABEL or SCS; installed: {sorted(solvers)})"
    return True, ""


def require() -> None:
    ok, why = available()
    if not ok:
        raise PepUnavailable(why)


def _versions() -> dict:
    from importlib import metadata
    out = {}
    for p in ("pepit", "cvxpy", "clarabel", "scs"):
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


# ----------------------------------------------------------------------------------------------
# solving, with the solver and status recorded (and a cache)
def _cache_path(key: dict) -> Path | None:
    from fedcheck.problems.solve import cache_dir
    d = cache_dir()
    if d is None:
        return None
    h = hashlib.sha256(json.dumps({**key, "versions": _versions()}, sort_keys=True).encode()).hexdigest()
    return d / "pep" / f"{h}.json"


def _solve(pb, solver: str) -> dict:
    """Solve a built PEP with ``solver`` (CLARABEL or SCS), falling back to the other on failure; returns
    dual (upper) and primal (lower) values, status and the solver actually used."""
    import cvxpy as cp
    order = [solver.upper()] + [s for s in ("CLARABEL", "SCS") if s != solver.upper()]
    order = [s for s in order if s in cp.installed_solvers()]
    attempts = []
    best = None
    for name in order:
        kw = {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000} if name == "SCS" else {}
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dual = pb.solve(wrapper="cvxpy", solver=name, verbose=0, **kw)
            status = str(pb.wrapper.prob.status)
            primal = float(pb.objective.eval())
            rec = {"solver": name, "status": status, "dual": None if dual is None else float(dual), "primal": primal,
                   "seconds": time.perf_counter() - t0}
        except Exception as e:  # solver errors: try the next one, and say so
            rec = {"solver": name, "status": f"error: {type(e).__name__}: {e}"[:300], "dual": None, "primal": None,
                   "seconds": time.perf_counter() - t0}
        attempts.append(rec)
        if rec["dual"] is not None and np.isfinite(rec["dual"]):
            best = rec      # an 'optimal_inaccurate' value is kept: its interval is widened by ACCURACY
            break
    if best is None:
        return {"dual": None, "primal": None, "status": "failed", "solver": None, "attempts": attempts}
    return {**best, "attempts": attempts}


def _interval(res: dict) -> tuple[float, float]:
    """Where the worst case lies: [primal, dual], widened by ``ACCURACY`` when the solve is not 'optimal'."""
    if res.get("dual") is None:
        return math.nan, math.nan
    lo, hi = sorted((res["primal"], res["dual"]))
    if res.get("status") != "optimal":
        m = ACCURACY * max(1.0, abs(hi))
        lo, hi = lo - m, hi + m
    return lo, hi


def _cached(key: dict, build, solver: str, use_cache: bool) -> dict:
    path = _cache_path(key) if use_cache else None
    if path is not None and path.exists():
        try:
            out = json.loads(path.read_text())
            out["cached"] = True
            return out
        except (OSError, ValueError):
            pass
    require()
    t0 = time.perf_counter()
    pb = build()
    out = {**key, **_solve(pb, solver), "total_seconds": time.perf_counter() - t0, "cached": False}
    if path is not None and out.get("dual") is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            from fedcheck.core.results import atomic_write_text
            atomic_write_text(path, json.dumps(out))
        except OSError:
            pass
    return out


# ----------------------------------------------------------------------------------------------
# the two PEPs
def frank_wolfe_worst_case(T: int, L: float = 1.0, D: float = 1.0, solver: str = "CLARABEL",
                           use_cache: bool = True) -> dict:
    """Worst ``F(x^{T+1}) - F*`` of Frank-Wolfe with ``eta_t = 2/(t+1)``, t = 1..T, over L-smooth convex ``f``
    plus the indicator of a convex set of diameter ``D`` (any starting point in the set)."""
    if T < 1 or L <= 0 or D <= 0:
        raise ValueError("need T >= 1, L > 0, D > 0")

    def build():
        from PEPit import PEP
        from PEPit.functions import ConvexIndicatorFunction, SmoothConvexFunction
        from PEPit.primitive_steps import linear_optimization_step
        pb = PEP()
        f = pb.declare_function(SmoothConvexFunction, L=L)
        ind = pb.declare_function(ConvexIndicatorFunction, D=D)
        F = f + ind
        xs = F.stationary_point()
        Fs = F(xs)
        x = pb.set_initial_point()
        f(x), ind(x)                       # the start is in the set
        for t in range(1, T + 1):
            s, _, _ = linear_optimization_step(f.gradient(x), ind)
            eta = 2.0 / (t + 1)
            x = (1 - eta) * x + eta * s
        pb.set_performance_metric(F(x) - Fs)
        return pb
    return _cached({"pep": "frank_wolfe", "T": int(T), "L": float(L), "D": float(D), "solver": solver.upper()},
                   build, solver, use_cache)


def naive_averaging_worst_case(T: int, clients: int = 2, L: float = 1.0, D: float = 2.0, zeta: float = 2.0,
                               centralized: bool = False, solver: str = "CLARABEL", use_cache: bool = True) -> dict:
    """Worst ``F(xbar^{T+1}) - F*`` of naive Frank-Wolfe model averaging (20) -- ``s_i = lmo(grad f_i(xbar))``,
    ``xbar <- (1 - eta_t) xbar + eta_t mean_i s_i``, ``eta_t = 2/(t+1)`` -- over ``F = mean_i f_i + indicator(D)``
    with L-smooth convex ``f_i`` and ``||grad f_i(x*)|| <= zeta``; ``centralized=True``: Frank-Wolfe on the same
    class (``s = lmo(grad F(xbar))``)."""
    if T < 1 or clients < 1 or L <= 0 or D <= 0 or zeta < 0:
        raise ValueError("need T >= 1, clients >= 1, L > 0, D > 0, zeta >= 0")

    def build():
        from PEPit import PEP
        from PEPit.functions import ConvexIndicatorFunction, SmoothConvexFunction
        from PEPit.primitive_steps import linear_optimization_step
        pb = PEP()
        fs = [pb.declare_function(SmoothConvexFunction, L=L) for _ in range(clients)]
        ind = pb.declare_function(ConvexIndicatorFunction, D=D)
        fbar = fs[0]
        for g in fs[1:]:
            fbar = fbar + g
        fbar = (1.0 / clients) * fbar
        F = fbar + ind
        xs = F.stationary_point()
        Fs = F(xs)
        for fi in fs:
            pb.add_constraint(fi.gradient(xs) ** 2 <= zeta ** 2)
        x = pb.set_initial_point()
        ind(x)
        for t in range(1, T + 1):
            eta = 2.0 / (t + 1)
            if centralized:
                s, _, _ = linear_optimization_step(fbar.gradient(x), ind)
            else:
                ss = [linear_optimization_step(fi.gradient(x), ind)[0] for fi in fs]
                s = ss[0]
                for q in ss[1:]:
                    s = s + q
                s = (1.0 / clients) * s
            x = (1 - eta) * x + eta * s
        pb.set_performance_metric(F(x) - Fs)
        return pb
    return _cached({"pep": "naive_averaging" if not centralized else "centralized_fw_same_class", "T": int(T),
                    "clients": int(clients), "L": float(L), "D": float(D), "zeta": float(zeta),
                    "solver": solver.upper()}, build, solver, use_cache)


def paper_floor(T: int, L: float, D: float) -> float:
    """(38) at n = 1 (Y* = 0) for the iterate after T rounds (t = T + 1), infimum over lambda_0 > 0, G >= 0:
    2 L D^2 / (T + 1) -- also the lambda_0 -> 0 limit of the surrogate bound (31) at n = 1."""
    return 2.0 * L * D**2 / (T + 1)


def jaggi_bound(T: int, L: float, D: float) -> float:
    """The textbook bound 2 L D^2 / (T + 2) for Frank-Wolfe after T steps (Jaggi 2013, Theorem 1)."""
    return 2.0 * L * D**2 / (T + 2)


def instance21_gaps(T: int) -> list[float]:
    """Naive averaging (20) on instance (21) (f_1 = (x-3)^2/2, f_2 = (x+1)^2/2, D = [-1, 1], xbar^1 = 0): the gap
    F(xbar^{t+1}) - F(1) for t = 1..T, computed exactly (the LMO of [-1, 1] is -sign(g))."""
    def F(x):
        return 0.5 * (0.5 * (x - 3) ** 2 + 0.5 * (x + 1) ** 2)
    x, out = 0.0, []
    for t in range(1, T + 1):
        eta = 2.0 / (t + 1)
        s = [-1.0 if g > 0 else 1.0 for g in (x - 3, x + 1)]   # lmo(g) = -sign(g) (sign(0) = +1)
        x = (1 - eta) * x + eta * float(np.mean(s))
        out.append(F(x) - F(1.0))
    return out


# ----------------------------------------------------------------------------------------------
# as checks (for theorem files) and as the `fedcheck pep` command
@dataclass
class PepSettings:
    horizon: int = 6
    clients: int = 2
    L: float = 1.0
    D: float = 2.0
    zeta: float = 2.0
    solver: str = "CLARABEL"
    use_cache: bool = True


def _fw_result(s: PepSettings, log=None):
    rows, findings_codes, ratios, j_codes, j_ratios = [], [], [], [], []
    per_T = []
    t0 = time.perf_counter()
    for T in range(1, s.horizon + 1):
        r = frank_wolfe_worst_case(T, s.L, s.D, s.solver, s.use_cache)
        lo, hi = _interval(r)
        b, jb = paper_floor(T, s.L, s.D), jaggi_bound(T, s.L, s.D)
        code = int(V.compare_upper(lo, hi, b, max(1.0, b)))
        jcode = int(V.compare_upper(lo, hi, jb, max(1.0, jb)))
        findings_codes.append(code)
        j_codes.append(jcode)
        ratios.append(hi / b)
        j_ratios.append(hi / jb)
        per_T.append({"T": T, "worst_case_dual": r.get("dual"), "worst_case_primal": r.get("primal"),
                      "status": r.get("status"), "solver": r.get("solver"), "seconds": r.get("total_seconds"),
                      "cached": r.get("cached"), "paper_floor": b, "jaggi": jb, "tightness": hi / b})
        rows.append([T, r.get("dual"), r.get("primal"), b, hi / b, jb, hi / jb, f"{r.get('solver')} {r.get('status')}"])
        if log:
            log(f"  FW T={T}: worst case {r.get('dual'):.6g} (primal {r.get('primal'):.6g}, {r.get('solver')} "
                f"{r.get('status')}), paper floor {b:.6g}, tightness {hi / b:.4f}")
    return per_T, rows, findings_codes, ratios, j_codes, j_ratios, time.perf_counter() - t0


def run_pep(settings: PepSettings | None = None, log=None) -> list[dict]:
    """The two certified-worst-case results (dicts in the results format)."""
    from fedcheck.core.claim import Result as CheckResult, jsonable as _jsonable
    require()
    s = settings or PepSettings()
    Ts = list(range(1, s.horizon + 1))
    # -- centralized analogue
    t0 = time.perf_counter()
    per_T, rows, codes, ratios, jcodes, jratios, _ = _fw_result(s, log)
    fw = CheckResult(id="fedfw.pep_frank_wolfe", title="FedFW at n = 1 (Frank-Wolfe, eta_t = 2/(t+1)): certified "
                     "worst case (PEP) vs the paper's bound", paper="fedfw",
                     reference="Theorem 1, (31)/(38) at n = 1; PEP (PEPit)",
                     claim=("For every L-smooth convex f on a convex set of diameter D, F(x^{T+1}) - F* <= (38) at n = 1, "
                            "which is at least 2 L D^2/(T+1) for every lambda_0 > 0 and G >= 0"),
                     kind="bound", verdict=V.INCONCLUSIVE,
                     params={"L": s.L, "D": s.D, "horizon": s.horizon, "solver": s.solver})
    fw.readings = {
        "paper floor 2LD^2/(T+1)": {"verdict": V.verdict_of_codes(codes), "max_ratio": max(ratios), "paper": True,
                                    "description": "(38) at n = 1 with Y* = 0, infimum over lambda_0 and G: worst case / "
                                                   "this is an upper bound on the tightness of (38)"},
        "Jaggi 2LD^2/(T+2)": {"verdict": V.verdict_of_codes(jcodes), "max_ratio": max(jratios), "paper": False,
                              "description": "textbook bound (Jaggi 2013, Theorem 1), for reference"}}
    fw.verdict = fw.readings["paper floor 2LD^2/(T+1)"]["verdict"]
    fw.max_ratio = max(ratios)
    fw.reason = "" if fw.verdict == V.HOLDS else "see the readings: a worst case above the bound, or an undecided solve"
    fw.series = [
        {"panel": "Frank-Wolfe (FedFW at n = 1): certified worst case", "label": "worst case (PEP, dual)", "x": Ts,
         "y": [p["worst_case_dual"] for p in per_T], "role": "measured", "xlabel": "rounds T",
         "ylabel": "F(x^{T+1}) - F*", "logx": True, "logy": True},
        {"panel": "Frank-Wolfe (FedFW at n = 1): certified worst case", "label": "paper (38)/(31) at n = 1: 2LD^2/(T+1)",
         "x": Ts, "y": [p["paper_floor"] for p in per_T], "role": "bound", "xlabel": "rounds T",
         "ylabel": "F(x^{T+1}) - F*", "logx": True, "logy": True},
        {"panel": "Frank-Wolfe (FedFW at n = 1): certified worst case", "label": "Jaggi 2LD^2/(T+2)", "x": Ts,
         "y": [p["jaggi"] for p in per_T], "role": "reference", "xlabel": "rounds T", "ylabel": "F(x^{T+1}) - F*",
         "logx": True, "logy": True}]
    fw.tables = [{"title": "Certified worst case of Frank-Wolfe (eta_t = 2/(t+1)) vs the paper's bound at n = 1",
                  "columns": ["T", "worst case (dual)", "primal", "paper 2LD^2/(T+1)", "tightness",
                              "Jaggi 2LD^2/(T+2)", "worst / Jaggi", "solver"], "rows": rows}]
    fw.evidence = {"per_round": per_T, "versions": _versions(),
                   "note": ("FedFW with one client is Frank-Wolfe with eta_t = 2/(t+1) (the penalty vanishes); (38) at "
                            "n = 1 has Y* = 0 and is >= 2LD^2/t for all lambda_0 > 0, G >= 0, so a worst case below "
                            "2LD^2/(T+1) certifies (38) at n = 1 over the whole class for these T")}
    fw.seconds = time.perf_counter() - t0
    # -- naive averaging: the certified stall
    t0 = time.perf_counter()
    inst = instance21_gaps(s.horizon)
    c21 = min(inst)
    naive, cent = [], []
    for T in Ts:
        a = naive_averaging_worst_case(T, s.clients, s.L, s.D, s.zeta, False, s.solver, s.use_cache)
        b = naive_averaging_worst_case(T, s.clients, s.L, s.D, s.zeta, True, s.solver, s.use_cache)
        naive.append(a)
        cent.append(b)
        if log:
            log(f"  naive T={T}: worst case {a.get('dual'):.6g} ({a.get('status')}); centralized FW "
                f"{b.get('dual'):.6g} ({b.get('status')}); instance (21) gap {inst[T - 1]:.6g}")
    in_class = s.L >= 1.0 and s.D >= 2.0 and s.zeta >= 2.0 and s.clients == 2
    n_lo = [_interval(a)[0] for a in naive]
    c_hi = [_interval(b)[1] for b in cent]
    from fedcheck.core.evidence import reproduced_if
    f_inst = reproduced_if(min(inst) > 0) if in_class else V.INCONCLUSIVE
    if not all(np.isfinite(n_lo)):
        f_pep = V.INCONCLUSIVE
    else:
        f_pep = reproduced_if(min(n_lo) >= (c21 if in_class else 0.0) * (1 - V.POLICY.rtol) and min(n_lo) > 0)
    f_sep = reproduced_if(bool(c_hi[-1] < c21)) if in_class and np.isfinite(c_hi[-1]) else V.INCONCLUSIVE
    na = CheckResult(id="fedfw.pep_naive_averaging", title="Naive Frank-Wolfe model averaging stalls: certified worst "
                     "case (PEP) vs centralized Frank-Wolfe", paper="fedfw",
                     reference="Appendix A, (20)-(22); PEP (PEPit)",
                     claim=("Naive FW averaging (20) does not converge: its worst case over L-smooth convex clients with "
                            "||grad f_i(x*)|| <= zeta stays bounded away from 0, while Frank-Wolfe on F converges"),
                     kind="counterexample", verdict=V.INCONCLUSIVE,
                     params={"clients": s.clients, "L": s.L, "D": s.D, "zeta": s.zeta, "horizon": s.horizon,
                             "solver": s.solver})
    na.readings = {
        "instance (21) stalls": {"verdict": f_inst, "max_ratio": None, "paper": True,
                                 "description": f"exact run of (20) on (21): the gap stays {c21:g} at every round "
                                                f"(a member of the class when L >= 1, D >= 2, zeta >= 2, 2 clients)"},
        "PEP worst case stays up": {"verdict": f_pep, "max_ratio": None, "paper": True,
                                    "description": "the certified worst case of (20) (primal lower bound) stays >= "
                                                   "the instance's gap at every horizon"},
        "centralized FW goes below": {"verdict": f_sep, "max_ratio": None, "paper": False,
                                      "description": "the certified worst case of Frank-Wolfe on the same class falls "
                                                     f"below the stall level by T = {s.horizon}"}}
    decisive = [na.readings[k]["verdict"] for k in ("instance (21) stalls", "PEP worst case stays up")]
    na.verdict = V.combine(decisive)
    na.reason = "" if na.verdict == V.REPRODUCED else "; ".join(
        f"{k}: {d['verdict']}" for k, d in na.readings.items() if d["verdict"] != V.REPRODUCED)
    na.series = [
        {"panel": "naive averaging vs Frank-Wolfe: certified worst cases", "label": "naive averaging (20), PEP dual",
         "x": Ts, "y": [a.get("dual") for a in naive], "role": "measured", "xlabel": "rounds T",
         "ylabel": "F(xbar^{T+1}) - F*", "logx": True, "logy": True},
        {"panel": "naive averaging vs Frank-Wolfe: certified worst cases", "label": "centralized FW, same class, PEP dual",
         "x": Ts, "y": [b.get("dual") for b in cent], "role": "baseline", "xlabel": "rounds T",
         "ylabel": "F(xbar^{T+1}) - F*", "logx": True, "logy": True},
        {"panel": "naive averaging vs Frank-Wolfe: certified worst cases", "label": "instance (21), exact",
         "x": Ts, "y": inst, "role": "reference", "xlabel": "rounds T", "ylabel": "F(xbar^{T+1}) - F*",
         "logx": True, "logy": True}]
    na.tables = [{"title": f"Certified worst cases, {s.clients} clients, L = {s.L:g}, D = {s.D:g}, zeta = {s.zeta:g}",
                  "columns": ["T", "naive (dual)", "naive (primal)", "centralized FW (dual)", "instance (21) gap",
                              "naive / centralized", "solver"],
                  "rows": [[T, a.get("dual"), a.get("primal"), b.get("dual"), inst[T - 1],
                            (a.get("dual") / b.get("dual")) if a.get("dual") and b.get("dual") else None,
                            f"{a.get('solver')} {a.get('status')} / {b.get('solver')} {b.get('status')}"]
                           for T, a, b in zip(Ts, naive, cent)]}]
    na.evidence = {"stall_level_instance_21": c21, "instance_21_in_class": in_class,
                   "per_round": [{"T": T, "naive_dual": a.get("dual"), "naive_primal": a.get("primal"),
                                  "naive_status": a.get("status"), "centralized_dual": b.get("dual"),
                                  "centralized_status": b.get("status"), "instance_21_gap": inst[T - 1]}
                                 for T, a, b in zip(Ts, naive, cent)],
                   "versions": _versions()}
    na.seconds = time.perf_counter() - t0
    return [_jsonable(fw.to_dict()), _jsonable(na.to_dict())]


def _pep_measure(index: int):
    def measure(ctx):
        from fedcheck.core.evidence import Finding, MeasureResult
        ok, why = available()
        if not ok:
            return MeasureResult([Finding("PEPit is installed", V.INCONCLUSIVE, True, why, evidence=why)], reason=why)
        p = ctx.params
        s = PepSettings(horizon=int(p.get("horizon", ctx.config.rounds or 6)), clients=int(p.get("clients", 2)),
                        L=float(p.get("L", 1.0)), D=float(p.get("D", 2.0)), zeta=float(p.get("zeta", 2.0)),
                        use_cache=ctx.config.use_cache)
        d = run_pep(s)[index]
        findings = [Finding(name, r["verdict"], bool(r.get("paper", True)), r.get("description", ""),
                            r.get("max_ratio"), r.get("evidence")) for name, r in (d.get("readings") or {}).items()]
        return MeasureResult(findings, evidence=d.get("evidence") or {}, series=d.get("series") or [],
                             tables=d.get("tables") or [], formula=d.get("formula") or {}, reason=d.get("reason"))
    return measure


def pep_checks():
    """The two PEP results as claims, for a theorem file::

        from fedcheck.tools.pep import pep_checks
        pep_frank_wolfe, pep_naive_averaging = pep_checks()

    (``fedcheck verify --theorem-file FILE fedfw.pep_frank_wolfe``; inconclusive when PEPit is missing)."""
    from fedcheck.core.claim import Claim
    from fedcheck.core.evidence import Measurement
    from theorems.fedfw import FEDFW

    return (Claim(id="fedfw.pep_frank_wolfe", paper=FEDFW, reference="Theorem 1 at n = 1; PEP",
                  title="FedFW at n = 1: certified worst case (PEP) vs the paper's bound",
                  statement="worst case <= (38) at n = 1", evidence=Measurement(_pep_measure(0)), kind="bound"),
            Claim(id="fedfw.pep_naive_averaging", paper=FEDFW, reference="Appendix A; PEP",
                  title="Naive FW averaging stalls: certified worst case (PEP)",
                  statement="naive averaging does not converge", evidence=Measurement(_pep_measure(1), counterexample=True)))


# ----------------------------------------------------------------------------------------------
def add_arguments(ap) -> None:
    ap.add_argument("--horizon", type=int, default=6, help="largest number of rounds T (default 6; the SDP grows "
                    "as T^2: keep T <= 10)")
    ap.add_argument("--clients", type=int, default=2, help="clients of naive averaging (default 2)")
    ap.add_argument("--L", type=float, default=1.0, help="smoothness constant (default 1)")
    ap.add_argument("--D", type=float, default=2.0, help="diameter of the set (default 2, as in instance (21))")
    ap.add_argument("--zeta", type=float, default=2.0, help="bound on ||grad f_i(x*)|| (default 2, as in (21))")
    ap.add_argument("--solver", default="clarabel", choices=["clarabel", "scs"], help="SDP solver through cvxpy")
    ap.add_argument("--json", default=None, metavar="FILE", help="write the results JSON here")
    ap.add_argument("--out", default="reports", metavar="DIR")
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--no-cache", action="store_true", help="solve again even if a cached PEP value exists")
    ap.add_argument("--quiet", "-q", action="store_true")


def cmd_pep(args, argv) -> int:
    from fedcheck.cli.errors import EXIT_BAD_INPUT, BadInput, exit_code
    from fedcheck.cli.main import summary_table
    from fedcheck.core.results import document, provenance, write_json
    ok, why = available()
    if not ok:
        print(f"fedcheck: error: {why}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not (1 <= args.horizon <= 30):
        raise BadInput("--horizon must be between 1 and 30")
    if args.clients < 1 or args.L <= 0 or args.D <= 0 or args.zeta < 0:
        raise BadInput("need --clients >= 1, --L > 0, --D > 0, --zeta >= 0")
    s = PepSettings(horizon=args.horizon, clients=args.clients, L=args.L, D=args.D, zeta=args.zeta,
                    solver=args.solver.upper(), use_cache=not args.no_cache)
    log = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    results = run_pep(s, log)
    print(summary_table(results))
    for r in results:
        for tb in r.get("tables") or []:
            print(f"\n{tb['title']}")
            print("  ".join(tb["columns"]))
            for row in tb["rows"]:
                print("  ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row))
        if r["verdict"] not in (V.HOLDS, V.REPRODUCED) and r.get("reason"):
            print(f"{r['id']}: {r['verdict']}: {r['reason']}")
    doc = document(results, provenance(argv, None))
    if args.json:
        print(f"results: {write_json(doc, args.json)}")
    if not args.no_report:
        from fedcheck.report import write_reports
        for path in write_reports(doc, Path(args.out)):
            print(f"report: {path}")
    return exit_code(results)
