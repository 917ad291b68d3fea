"""Expectation bounds at horizon-dependent parameters: :class:`HorizonExpectationCheck`.

Rate theorems of stochastic federated methods usually read "for a horizon ``R`` and the step size
``eta(R, L, B, sigma, ...)``, ``E[Phi(output_R)] - Phi* <= bound(R, ...)``".  Neither a pathwise
per-round bound (:class:`fedcheck.check.BoundCheck`, :mod:`fedcheck.expectation_bound`) nor a pathwise
fixed-horizon bound (:mod:`fedcheck.horizon`) tests that: here every horizon ``R`` of a geometric grid
is its own set of runs (one batch of ``instances x replicates``; a single run records every ``R`` when
no schedule depends on ``R``), and the expectation is estimated over ``replicates`` independent random
streams:

* the measured quantity is ``Phi(output) - Phi*`` per run, an interval since ``Phi*`` is certified to an
  interval (``solution.phi_lower``, ``solution.phi_star``);
* the bound is an interval when a constant is (``Value.interval``, e.g. ``B = D_h(w*, w_0)`` from an
  approximate ``w*``): it is evaluated at the interval's ends;
* comparison: :class:`fedcheck.inequality.Comparison` -- ``holds`` when ``mean(hi) + z SE`` is below the
  smallest bound, ``violated`` when ``mean(lo) - z SE`` exceeds the largest (``z = POLICY.statistical_z``);
  deterministic problems (``instance.stochastic`` false) are compared pathwise with one run;
* rate: the log-log slope of the mean gap against ``R`` over the grid (points above
  ``POLICY.resolution_factor`` times the certified floor, at least ``POLICY.fit_min_points`` of them),
  pooled over instances and judged with :func:`fedcheck.verdict.rate_verdict`.

``sweep = (name, values)`` repeats everything for several values of a parameter whose *limit* the
theorem is about ("there exists eta_c^max such that for every eta_c <= eta_c^max ...", swept as
``eta_s = 1, 10, 100`` at fixed ``eta = eta_s eta_c``): a reading holds when it holds at the last (most
extreme) value, is violated when it is violated at *every* value, and is inconclusive otherwise.

Problem protocol (``fedcheck.problems.feddualavg``): ``family.draw(seed)`` gives an instance with
``constants(solution) -> {name: fedcheck.constants.Value}``, ``stochastic``, ``describe()`` and
``batch(instances)`` (the engine's batch); ``solver(instance, use_cache=)`` gives a solution with
``phi_star``, ``phi_lower``, ``reason`` and ``record()``; ``algorithm(batch, rounds=, grid=, rng=,
**schedules, **algorithm_kwargs)`` returns a :class:`fedcheck.engine.Trace` whose ``metrics[output]`` is
``Phi`` of the output at the recorded numbers of rounds.

    theorem = HorizonExpectationCheck(id="paper.thm", paper=P, reference="Theorem C.1, (C.4)", claim="...",
        family=F2(), algorithm=engine.feddualavg, output="Phi_hat",
        schedules={"eta_c": Min(1/(4*L), ...), "eta_s": 1}, bound=4*L*B/(K*R) + ..., claimed_rate=-1/2)
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp
from scipy import stats

from fedcheck.core import verdict as V
from fedcheck.check import Reading, RunConfig
from fedcheck.checkbase import Finding, GenericCheck
from fedcheck.inequality import Comparison, evaluate_expr
from fedcheck.problems.instances import instance_rng
from fedcheck.core.symbols import R as R_sym

__all__ = ["HorizonExpectationCheck", "fit_horizon_rate", "geometric_horizons"]


def geometric_horizons(lo: int, hi: int, points: int) -> tuple:
    """``points`` integers spaced geometrically from ``lo`` to ``hi`` (distinct, sorted)."""
    return tuple(sorted({int(round(x)) for x in np.geomspace(lo, hi, points)}))


def fit_horizon_rate(R, mean, floor, policy: V.TolerancePolicy = V.POLICY) -> dict | None:
    """Least-squares slope of ``log mean`` against ``log R`` with a ``policy.confidence`` interval, over the
    points above ``policy.resolution_factor * floor``; ``None`` with fewer than ``policy.fit_min_points``."""
    R, mean = np.asarray(R, dtype=float), np.asarray(mean, dtype=float)
    floor = np.broadcast_to(np.asarray(floor, dtype=float), mean.shape)
    ok = np.isfinite(mean) & (mean > 0) & (mean > policy.resolution_factor * floor)
    if ok.sum() < max(policy.fit_min_points, 3):
        return None
    res = stats.linregress(np.log(R[ok]), np.log(mean[ok]))
    q = stats.t.ppf(0.5 + policy.confidence / 2, ok.sum() - 2)
    return {"slope": float(res.slope), "ci": [float(res.slope - q * res.stderr), float(res.slope + q * res.stderr)],
            "intercept": float(res.intercept), "points": int(ok.sum()), "k_range": [float(R[ok][0]), float(R[ok][-1])]}


def _sweep_verdict(vs: list[str]) -> str:
    if not vs:
        return V.INCONCLUSIVE
    if all(v == V.VIOLATED for v in vs):
        return V.VIOLATED
    return V.HOLDS if vs[-1] == V.HOLDS else V.INCONCLUSIVE


@dataclass(kw_only=True)
class HorizonExpectationCheck(GenericCheck):
    """See the module doc."""

    family: Any
    algorithm: Callable
    output: str
    schedules: dict
    bound: Any
    readings: Sequence[Reading] = (Reading("as stated"),)
    reading_bounds: dict = field(default_factory=dict)   # reading name -> its own bound expression
    solver: Callable
    seeds: int = 3
    full_seeds: int | None = None
    horizons: Sequence[int] = (16, 32, 64, 128, 256, 512, 1024, 2048)
    full_horizons: Sequence[int] | None = None
    replicates: int = 30
    full_replicates: int | None = None
    sweep: tuple | None = None                  # (symbol name, quick values[, full values])
    algorithm_kwargs: dict = field(default_factory=dict)
    controls: dict = field(default_factory=dict)   # label -> algorithm or (algorithm, metric): reported only
    rate_decides: bool = False                  # the rate verdict joins the check's verdict (big-O claims)
    save_instance: Callable[[Any, str], list] | None = None
    metric_label: str = "E[Phi(w_hat)] - Phi*"
    kind: str = "expectation"

    def __post_init__(self):
        super().__post_init__()
        self.schedules = {k: sp.sympify(v) for k, v in self.schedules.items()}
        self.bound = sp.sympify(self.bound)

    # -- declaration helpers ------------------------------------------------------------------
    def reading_bound(self, reading: Reading) -> sp.Expr:
        """The reading's bound (``reading_bounds[name]``, else ``bound`` with the reading's substitutions), with
        the schedules substituted (a bound may name a step size, e.g. (C.2) at the step (C.3))."""
        b = sp.sympify(self.reading_bounds.get(reading.name, self.bound)).subs(reading.substitutions)
        sub = {sp.Symbol(k, positive=True): v for k, v in self.schedules.items()}
        for s in b.free_symbols:
            if s.name in self.schedules:
                sub[s] = self.schedules[s.name]
        return b.subs(sub)

    def formula(self) -> dict:
        return {"bound": sp.latex(self.bound), "bound_text": sp.sstr(self.bound),
                "schedules": {k: sp.latex(v) for k, v in self.schedules.items()},
                "readings": {r.name: {"latex": sp.latex(sp.sympify(self.reading_bounds.get(r.name, self.bound))
                                                        .subs(r.substitutions)),
                                      "substitutions": {sp.sstr(k): sp.latex(v) for k, v in r.substitutions.items()},
                                      "paper": r.paper, "description": r.description} for r in self.readings},
                "metric": self.metric_label,
                "statistic": f"mean + {V.POLICY.statistical_z:g} standard errors over replicates per instance "
                             "(pathwise for deterministic instances)",
                "sweep": None if self.sweep is None else {"parameter": self.sweep[0],
                                                          "semantics": "holds if it holds at the last value; violated "
                                                                       "only if violated at every value"}}

    # -- running ----------------------------------------------------------------------------
    def _pick(self, config: RunConfig):
        full = bool(config.full)
        seeds = list(config.seeds) if config.seeds is not None else \
            list(range((self.full_seeds or self.seeds) if full else self.seeds))
        hs = list(self.full_horizons if (full and self.full_horizons) else self.horizons)
        if config.rounds:
            hs = [h for h in hs if h <= config.rounds] or [int(config.rounds)]
        reps = (self.full_replicates or self.replicates) if full else self.replicates
        sw = None
        if self.sweep is not None:
            vals = self.sweep[2] if (full and len(self.sweep) > 2) else self.sweep[1]
            sw = (self.sweep[0], list(vals))
        return seeds, hs, int(reps), sw

    def run(self, config: RunConfig):
        res, params, t0 = self.new_result(config)
        res.formula = self.formula()
        if config.instances:
            res.reason = f"{self.id} runs on its own problem family; --instance files do not apply (run without it)"
            return self.finish(res, [Finding(r.name, V.INCONCLUSIVE, r.paper, r.description) for r in self.readings],
                               t0, res.reason)
        seeds, horizons, reps, sweep = self._pick(config)
        insts = [self.family.draw(s) for s in seeds]
        sols = [self.solver(i, use_cache=config.use_cache) for i in insts]
        consts = [i.constants(s) for i, s in zip(insts, sols)]
        from fedcheck.problems.constants import Value
        for c in consts:
            for k, v in params.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    c[k] = Value(float(v), True, "parameter")
        S = [reps if i.stochastic else 1 for i in insts]
        sweep_vals = sweep[1] if sweep else [None]
        rb = {r.name: self.reading_bound(r) for r in self.readings}
        depends_R = any(R_sym in e.free_symbols for e in self.schedules.values())
        # results[v_idx][i] = {"lo": (S, P), "hi": (S, P), "bound": {reading: (lo (P,), hi (P,))}, "controls": {...}}
        results: list[list[dict]] = []
        for vi, v in enumerate(sweep_vals):
            per_inst = [{"lo": np.full((S[i], len(horizons)), np.nan), "hi": np.full((S[i], len(horizons)), np.nan),
                         "bound": {r.name: (np.full(len(horizons), np.nan), np.full(len(horizons), np.nan))
                                   for r in self.readings},
                         "controls": {c: np.full((S[i], len(horizons)), np.nan) for c in self.controls}}
                        for i in range(len(insts))]
            groups = [[h] for h in horizons] if depends_R else [list(horizons)]
            for hs in groups:
                self._run_group(insts, sols, consts, S, hs, horizons, v, sweep, per_inst, rb, config)
            results.append(per_inst)
        return self._assemble(res, t0, config, insts, sols, consts, S, horizons, sweep, results)

    def _values(self, consts_i: dict, R: int, sweep, v) -> dict:
        vals = {k: float(c.value) for k, c in consts_i.items()}
        vals[R_sym.name] = float(R)
        if sweep is not None:
            vals[sweep[0]] = float(v)
        return vals

    def _run_group(self, insts, sols, consts, S, hs, horizons, v, sweep, per_inst, rb, config):
        Rrun = max(hs)
        # batches of instances of one shape
        shape_groups: dict[tuple, list[int]] = {}
        for i, inst in enumerate(insts):
            key = (type(inst).__name__, inst.M, inst.d, inst.K, type(inst.reg).__name__, inst.noise)
            shape_groups.setdefault(key, []).append(i)
        for idxs in shape_groups.values():
            elems = [(i, s) for i in idxs for s in range(S[i])]
            vals = [self._values(consts[i], Rrun, sweep, v) for i, _ in elems]
            N = len(elems)
            steps = {}
            for name, expr in self.schedules.items():
                need = {s.name for s in expr.free_symbols}
                arr = {k: np.array([vv[k] for vv in vals]) for k in need}
                steps[name] = evaluate_expr(expr, arr, N)
            batch = insts[idxs[0]].batch([insts[i] for i, _ in elems])
            tag = f"{self.id}|{v}|{Rrun}|" + ",".join(str(insts[i].seed) for i in idxs)
            rng = instance_rng(0, tag)
            grid = np.array(sorted(hs))
            trace = self.algorithm(batch, rounds=Rrun, grid=grid, rng=rng, **steps, **self.algorithm_kwargs)
            phi = trace.metrics[self.output]                    # (len(grid), N)
            ctrl = {}
            for cname, spec in self.controls.items():
                calg, cmetric = spec if isinstance(spec, tuple) else (spec, self.output)
                ctr = calg(batch, rounds=Rrun, grid=grid, rng=instance_rng(1, tag), **steps, **self.algorithm_kwargs)
                ctrl[cname] = ctr.metrics[cmetric if cmetric in ctr.metrics else "Phi_avg"]
            cols = [horizons.index(h) for h in grid]
            for n, (i, s) in enumerate(elems):
                sol = sols[i]
                per_inst[i]["lo"][s, cols] = phi[:, n] - sol.phi_star
                lower = sol.phi_lower if np.isfinite(sol.phi_lower) else np.nan
                per_inst[i]["hi"][s, cols] = phi[:, n] - lower
                for cname, arr in ctrl.items():
                    per_inst[i]["controls"][cname][s, cols] = arr[:, n] - sol.phi_star
            for i in idxs:
                for r in self.readings:
                    expr = rb[r.name]
                    for col, h in zip(cols, grid):
                        base = self._values(consts[i], h, sweep, v)
                        ivals = {k: getattr(c, "interval", None) for k, c in consts[i].items()}
                        ivals = {k: iv for k, iv in ivals.items() if iv is not None and
                                 k in {s.name for s in expr.free_symbols}}
                        outs = []
                        for corner in itertools.product(*[[(k, iv[0]), (k, iv[1])] for k, iv in ivals.items()]):
                            vv = dict(base)
                            vv.update(dict(corner))
                            outs.append(float(evaluate_expr(expr, vv)))
                        if not outs:
                            outs = [float(evaluate_expr(expr, base))]
                        per_inst[i]["bound"][r.name][0][col] = min(outs)
                        per_inst[i]["bound"][r.name][1][col] = max(outs)

    def _assemble(self, res, t0, config, insts, sols, consts, S, horizons, sweep, results):
        findings, records, series, fits = [], [], [], []
        sweep_vals = sweep[1] if sweep else [None]
        verdict_table = {r.name: [] for r in self.readings}  # per sweep value: combined verdict over instances
        summaries = [[{} for _ in insts] for _ in sweep_vals]
        for vi in range(len(sweep_vals)):
            for r in self.readings:
                vs = []
                for i, inst in enumerate(insts):
                    d = results[vi][i]
                    cmp = Comparison(lhs_lo=d["lo"], lhs_hi=d["hi"], rhs_lo=d["bound"][r.name][0],
                                     rhs_hi=d["bound"][r.name][1], relation="<=", expectation=bool(inst.stochastic),
                                     scale=max(1.0, abs(sols[i].phi_star)) if np.isfinite(sols[i].phi_star) else 1.0,
                                     points=horizons, point_name="R")
                    s = cmp.summary()
                    if sols[i].reason:
                        s["verdict"] = V.combine([s["verdict"], V.INCONCLUSIVE])
                        s["inconclusive_reason"] = sols[i].reason
                    summaries[vi][i][r.name] = s
                    vs.append(s["verdict"])
                verdict_table[r.name].append(V.combine(vs))
        last = len(sweep_vals) - 1
        for r in self.readings:
            vt = verdict_table[r.name]
            verdict = _sweep_verdict(vt) if sweep else vt[0]
            ratios = [summaries[last][i][r.name]["max_ratio"] for i in range(len(insts))
                      if summaries[last][i][r.name]["max_ratio"] is not None]
            bad = [i for i in range(len(insts)) if summaries[last][i][r.name]["verdict"] == V.VIOLATED]
            ev = None
            if sweep:
                ev = "; ".join(f"{sweep[0]}={val:g}: {vv}" for val, vv in zip(sweep_vals, vt))
            if bad:
                s = summaries[last][bad[0]][r.name]
                msg = (f"violated on {len(bad)}/{len(insts)} instance(s); first: {_label(insts[bad[0]])} from R="
                       f"{s['first_violation_R']} (worst R={s['argmax_R']}: measured {s['lhs_at_argmax']:.4g} vs "
                       f"bound {s['rhs_at_argmax']:.4g})")
                ev = msg if ev is None else f"{msg}; {ev}"
            findings.append(Finding(r.name, verdict, r.paper, r.description, max(ratios) if ratios else None, ev))
        # rates (last sweep value)
        for i, inst in enumerate(insts):
            d = results[last][i]
            mean = np.nanmean(d["hi"], 0)
            floor = np.nanmean(d["hi"] - d["lo"], 0)
            fit = fit_horizon_rate(horizons, mean, floor) if self.claimed_rate is not None else None
            fits.append(fit)
            rec = {"seed": inst.seed, "instance": inst.describe(), "F_star": sols[i].phi_star,
                   "F_star_lower": sols[i].phi_lower, "solver": sols[i].record(),
                   "constants": {k: {"value": c.value, "exact": c.exact, "note": c.note,
                                     **({"interval": list(c.interval)} if getattr(c, "interval", None) else {})}
                                 for k, c in consts[i].items()},
                   "replicates": S[i], "rounds": list(horizons), "x_label": "R (rounds; one run per horizon)",
                   "metric": mean, "metric_lo": np.nanmean(d["lo"], 0),
                   "metric_se": (np.nanstd(d["hi"], 0, ddof=1) / np.sqrt(S[i])) if S[i] > 1 else np.zeros(len(horizons)),
                   "bound": {r.name: d["bound"][r.name][1] for r in self.readings},
                   "readings": summaries[last][i], "fit": fit}
            if sols[i].reason:
                rec["inconclusive_reason"] = sols[i].reason
            if self.controls:
                rec["controls"] = {c: np.nanmean(a, 0) for c, a in d["controls"].items()}
            if sweep:
                rec["sweep"] = [{"value": val, "metric": np.nanmean(results[vi][i]["hi"], 0),
                                 "bound": {r.name: results[vi][i]["bound"][r.name][1] for r in self.readings},
                                 "readings": {k: {"verdict": s["verdict"], "max_ratio": s["max_ratio"]}
                                              for k, s in summaries[vi][i].items()}}
                                for vi, val in enumerate(sweep_vals)]
            records.append(rec)
            if i == 0:
                panel = f"{self.id}: {_label(inst)}" + (f" ({sweep[0]}={sweep_vals[last]:g})" if sweep else "")
                common = {"panel": panel, "x": list(horizons), "xlabel": "R", "ylabel": self.metric_label,
                          "logx": True, "logy": True}
                series.append({**common, "label": self.metric_label, "y": mean, "role": "measured"})
                for r in self.readings:
                    series.append({**common, "label": f"bound ({r.name})", "y": d["bound"][r.name][1],
                                   "role": "bound"})
                for c, a in d["controls"].items():
                    series.append({**common, "label": c, "y": np.nanmean(a, 0), "role": "reference"})
        if self.claimed_rate is not None:
            pooled = V.pooled_rate(fits)
            res.fitted_rate = pooled["slope"] if pooled else None
            res.fitted_rate_ci = pooled["ci"] if pooled else None
            res.rate_verdict = V.rate_verdict(res.fitted_rate_ci, float(self.claimed_rate))
            if self.rate_decides:
                findings.append(Finding("rate", res.rate_verdict, True,
                                        f"fitted slope of the mean gap in R vs the claimed {float(self.claimed_rate):g}",
                                        None, f"slope {res.fitted_rate} CI {res.fitted_rate_ci}"))
        res.instances = records
        res.series = series
        res.evidence = {"horizons": list(horizons), "instances": len(insts), "replicates": S,
                        "sweep": None if sweep is None else {"parameter": sweep[0], "values": sweep_vals,
                                                             "verdicts": verdict_table},
                        "one_run_per_horizon": any(R_sym in e.free_symbols for e in self.schedules.values()),
                        "statistical_z": V.POLICY.statistical_z}
        out = self.finish(res, findings, t0)
        if out.verdict == V.VIOLATED and config.save_dir and self.save_instance:
            paper = {r.name for r in self.readings if r.paper}
            for i, inst in enumerate(insts):
                if any(summaries[last][i][n]["verdict"] == V.VIOLATED for n in paper):
                    stem = f"{config.save_dir}/{self.id}-seed{inst.seed}"
                    out.saved_instances.extend(self.save_instance(inst, stem, {
                        "check": self.id, "readings": summaries[last][i], "horizons": list(horizons),
                        "sweep": None if sweep is None else {sweep[0]: sweep_vals}}))
        return out


def _label(inst) -> str:
    return f"seed {inst.seed}" if getattr(inst, "seed", None) is not None else getattr(inst, "source", "instance")
