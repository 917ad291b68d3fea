"""Expectation bound checks (:class:`ExpectationBoundCheck`): ``E[metric(t)] <= bound(t)`` for a randomized algorithm, estimated over seeds.

A stochastic claim (stochastic gradients, random client participation) bounds an *expectation*.  The
check runs every instance with ``replicates`` independent random streams (all of them in one
vectorized batch, instance-major), and at every recorded round compares the sample mean with the bound:

* ``holds``     if ``mean(hi) + z SE <= bound + slack``,
* ``violated``  if ``mean(lo) - z SE >  bound + slack``,
* ``inconclusive`` otherwise,

with ``z = POLICY.statistical_z`` (3 standard errors), ``[lo, hi]`` the interval of each run's metric
(``F*`` is only known within its certified accuracy) and ``slack`` the floating-point slack of the
policy.  Over rounds and instances: violated if any, else inconclusive if any, else holds.  (Testing
every recorded round at 3 standard errors is conservative only when the bound is not tight; the
evidence records how many rounds each verdict rests on.)

A declaration::

    theorem3 = ExpectationBoundCheck(
        id="fedfw.theorem3", paper=FEDFW, reference="Theorem 3, (68)", claim="E F(xbar^t) - F* <= ...",
        algorithm=fedfw_sto, schedules={"eta": 9/(t+8), "lam": lambda_0*sqrt(t+8), "rho": 4/(t+7)**(2/3)},
        parts=[Part("(68)", objective_gap(), bound_68)], readings=READINGS_G,
        run_kwargs=lambda v, seeds: {"sigma": v["sigma"], "seeds": seeds},
        family=RandomFamily(...), params={"lambda_0": 1.0, "sigma": 1.0}, claimed_rate=-1/3)

``parts`` are several (metric, bound) pairs checked on the same runs (e.g. a lemma's two
inequalities); ``param_grid`` repeats the whole check for several parameter values (e.g. the
participation probability).  Random streams: run ``r`` of an instance with seed ``s`` uses
``replicate_seeds([s], R)[r]`` (SeedSequence based), so a seed always gives the same result.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp

from fedcheck.core import verdict as V
from fedcheck.check import Reading, RunConfig, _with_progress
from fedcheck.checkbase import Finding, GenericCheck, instance_label, save_refuting
from fedcheck.inequality import Comparison
from fedcheck.problems.constants import InstanceContext, resolve
from fedcheck.algorithms import default_recorder, evaluate_schedule, record_grid
from fedcheck.algorithms.fedfw_variants import replicate_seeds
from fedcheck.problems.instances import InstanceBatch, RandomFamily
from fedcheck.problems.solve import solve_consensus
from fedcheck.core.symbols import t as t_sym

__all__ = ["Part", "ExpectationBoundCheck", "objective_gap", "recorded"]


@dataclass
class Part:
    """One inequality ``E[metric] <= bound``.  ``metric(metrics, sols)`` maps the recorded arrays
    ``(K, runs)`` and the per-run solutions to ``(value, lo, hi)`` of shape ``(K, runs)``."""

    name: str
    metric: Callable[[dict, Sequence], tuple]
    bound: sp.Expr
    paper: bool = True
    description: str = ""
    metric_name: str = ""


def objective_gap(key: str = "F", label: str | None = None):
    """``key - F*`` (e.g. ``F(xbar^t) - F*``), with ``F*`` in its certified interval."""
    def metric(M, sols):
        F = M[key]
        Fs = np.array([s.F_star for s in sols])[None, :]
        Fl = np.array([s.F_lower for s in sols])[None, :]
        return F - Fs, F - Fs, F - Fl
    metric.label = label or f"{key} - F*"
    return metric


def recorded(key: str, power: float = 1.0, label: str | None = None):
    """A recorded quantity (exact: no solver involved), optionally raised to ``power``."""
    def metric(M, sols):
        v = np.asarray(M[key], dtype=float) ** power
        return v, v, v
    metric.label = label or (key if power == 1 else f"{key}^{power:g}")
    return metric


@dataclass(kw_only=True)
class ExpectationBoundCheck(GenericCheck):
    algorithm: Callable
    schedules: dict
    parts: Sequence[Part]
    readings: Sequence[Reading] = (Reading("as stated"),)
    family: Any = field(default_factory=RandomFamily)
    run_kwargs: Callable[[dict, np.ndarray], dict] | None = None
    recorder: Callable | None = None            # recorder(batch, schedules) -> Recorder
    param_grid: Sequence[dict] = ({},)
    default_seeds: int = 4
    replicates: int = 32
    full_replicates: int = 128
    default_rounds: int = 1000
    full_rounds: int | None = None
    valid_from: int = 1
    solver: Callable = solve_consensus
    dense_until: int = 100
    per_decade: int = 40
    kind: str = "expectation"

    def __post_init__(self):
        super().__post_init__()
        self.schedules = {k: sp.sympify(v) for k, v in self.schedules.items()}
        self.parts = [Part(p.name, p.metric, sp.sympify(p.bound), p.paper, p.description,
                           p.metric_name or getattr(p.metric, "label", "")) for p in self.parts]

    def _symbols(self) -> set:
        syms = set()
        for p in self.parts:
            for r in self.readings:
                syms |= sp.sympify(p.bound).subs(r.substitutions).free_symbols
        for e in self.schedules.values():
            syms |= e.free_symbols
        syms.discard(t_sym)
        return syms

    def run(self, config: RunConfig):
        res, params, t0 = self.new_result(config)
        rounds = int(config.rounds or ((self.full_rounds or self.default_rounds) if config.full else self.default_rounds))
        R = self.full_replicates if config.full else self.replicates
        if config.instances:
            insts = list(config.instances)
        else:
            seeds = list(config.seeds) if config.seeds is not None else list(range(self.default_seeds))
            insts = [self.family.draw(s) for s in seeds]
        sols = [self.solver(i, use_cache=config.use_cache) for i in insts]
        res.formula = {
            "parts": {p.name: {"bound": sp.latex(p.bound), "bound_text": sp.sstr(p.bound), "metric": p.metric_name,
                               "paper": p.paper, "description": p.description} for p in self.parts},
            "bound": sp.latex(self.parts[0].bound), "bound_text": sp.sstr(self.parts[0].bound),
            "schedules": {k: sp.latex(v) for k, v in self.schedules.items()},
            "readings": {r.name: {"substitutions": {sp.sstr(k): sp.latex(v) for k, v in r.substitutions.items()},
                                  "paper": r.paper, "description": r.description} for r in self.readings},
            "metric": f"E[{self.parts[0].metric_name}]", "valid_from": self.valid_from,
            "statistic": f"mean +- {V.POLICY.statistical_z:g} standard errors over {R} seeds per instance",
        }
        grid = record_grid(rounds + 1, dense_until=self.dense_until, per_decade=self.per_decade)
        syms = self._symbols()
        codes: dict[tuple, list] = {}
        ratios: dict[tuple, list] = {}
        refuting: set[int] = set()
        per_instance: list[dict] = [None] * len(insts)  # type: ignore
        fits = []
        groups: dict[tuple, list[int]] = {}
        for k, inst in enumerate(insts):
            groups.setdefault((inst.A.shape, inst.loss, inst.set.name), []).append(k)
        for gi, gparams in enumerate(self.param_grid):
            P = {**params, **gparams}
            gtag = ", ".join(f"{k}={v:g}" for k, v in gparams.items())
            for idxs in groups.values():
                I = len(idxs)
                runs = [insts[k] for k in idxs for _ in range(R)]
                batch = InstanceBatch(runs)
                run_sols = [sols[k] for k in idxs for _ in range(R)]
                ctxs = [InstanceContext(insts[k], batch.loss.take(j * R), sols[k], P) for j, k in enumerate(idxs)]
                consts = {s.name: [resolve(s.name, c) for c in ctxs] for s in syms}
                vals = {n: np.array([v.value for v in vs]) for n, vs in consts.items()}
                vals_rep = {n: np.repeat(v, R) for n, v in vals.items()}
                tt = np.arange(1, rounds + 1)
                sched = {name: evaluate_schedule(e, tt, vals_rep, batch.B) for name, e in self.schedules.items()}
                seeds_rep = replicate_seeds([insts[k].seed if insts[k].seed is not None
                                             else int(insts[k].content_hash()[:8], 16) for k in idxs], R)
                kwargs = self.run_kwargs(vals_rep, seeds_rep) if self.run_kwargs else {}
                rec = self.recorder(batch, sched) if self.recorder else default_recorder(batch)
                rec = _with_progress(rec, rounds + 1, f"{self.id}{' ' + gtag if gtag else ''}", config.progress)
                trace = self.algorithm(batch, rounds=rounds, grid=grid, recorder=rec, **sched, **kwargs)
                kk = trace.rounds.astype(float)
                valid = kk >= self.valid_from
                for pi, part in enumerate(self.parts):
                    value, lo, hi = part.metric(trace.metrics, run_sols)
                    K = value.shape[0]
                    value, lo, hi = (np.asarray(a, dtype=float).reshape(K, I, R) for a in (value, lo, hi))
                    mean = value.mean(-1)
                    for r in self.readings:
                        b = evaluate_schedule(part.bound.subs(r.substitutions), kk, vals, I)
                        for j, kidx in enumerate(idxs):
                            cmp = Comparison(lhs_lo=lo[valid, j].T, lhs_hi=hi[valid, j].T, rhs_lo=b[valid, j],
                                             relation="<=", expectation=True,
                                             scale=max(1.0, abs(sols[kidx].F_star)), points=kk[valid],
                                             point_name="round")
                            summ = cmp.summary()
                            if sols[kidx].reason:
                                summ["verdict"] = V.combine([summ["verdict"], V.INCONCLUSIVE])
                            key = (part.name, r.name)
                            codes.setdefault(key, []).append(summ["verdict"])
                            ratios.setdefault(key, []).append(summ["max_ratio"] if summ["max_ratio"] is not None
                                                              else np.nan)
                            if part.paper and r.paper and summ["verdict"] == V.VIOLATED:
                                refuting.add(kidx)
                            rec_j = per_instance[kidx]
                            if rec_j is None:
                                rec_j = per_instance[kidx] = {
                                    "seed": insts[kidx].seed, "instance": insts[kidx].describe(),
                                    "F_star": sols[kidx].F_star, "F_star_lower": sols[kidx].F_lower,
                                    "F_star_certified_accuracy": sols[kidx].gap,
                                    "solver": {"name": sols[kidx].solver, "status": sols[kidx].status,
                                               "cached": sols[kidx].cached,
                                               "dual_residual": sols[kidx].dual_residual},
                                    "constants": {n: {"value": vs[j].value, "exact": vs[j].exact, "note": vs[j].note}
                                                  for n, vs in consts.items()},
                                    "replicates": R, "rounds": kk, "grid": []}
                            entry = next((e for e in rec_j["grid"] if e["params"] == gparams), None)
                            if entry is None:
                                entry = {"params": gparams, "parts": {}}
                                rec_j["grid"].append(entry)
                            est_lo, est_hi, _, se = Comparison(lhs_lo=lo[:, j].T, lhs_hi=hi[:, j].T, rhs_lo=0.0,
                                                               expectation=True).estimate()
                            pe = entry["parts"].setdefault(part.name, {
                                "metric": mean[:, j], "metric_se": se,
                                "metric_interval": {"lo": est_lo[0], "hi": est_hi[0]}, "bound": {}, "readings": {}})
                            pe["bound"][r.name] = b[:, j]
                            pe["readings"][r.name] = summ
                            if pi == 0 and r is self.readings[0] and self.claimed_rate is not None:
                                floor = np.maximum(hi.mean(-1)[:, j] - lo.mean(-1)[:, j], V.POLICY.statistical_z * se)
                                fit = V.fit_rate(kk, mean[:, j], floor)
                                entry["fit"] = fit
                                fits.append(fit)
        for k, inst_rec in enumerate(per_instance):
            if inst_rec is not None and inst_rec["grid"]:   # the standard fields: first grid point, first part
                first = inst_rec["grid"][0]["parts"][self.parts[0].name]
                inst_rec.update(metric=first["metric"], metric_interval=first["metric_interval"], bound=first["bound"],
                                readings=first["readings"], fit=inst_rec["grid"][0].get("fit"))
        findings = []
        for part in self.parts:
            for r in self.readings:
                key = (part.name, r.name)
                cs = codes.get(key, [])
                vs = list(cs)
                rs = [x for x in ratios.get(key, []) if np.isfinite(x)]
                name = r.name if len(self.parts) == 1 else (part.name if len(self.readings) == 1 else f"{part.name} | {r.name}")
                desc = "; ".join(d for d in (part.description, r.description) if d)
                findings.append(Finding(name, V.combine(vs), part.paper and r.paper, desc, max(rs) if rs else None,
                                        evidence=f"{sum(v == V.VIOLATED for v in vs)}/{len(vs)} runs of (instance, "
                                                 f"grid point) violated, {sum(v == V.INCONCLUSIVE for v in vs)} inconclusive"))
        if self.claimed_rate is not None:
            pooled = V.pooled_rate(fits)
            res.fitted_rate = pooled["slope"] if pooled else None
            res.fitted_rate_ci = pooled["ci"] if pooled else None
            res.rate_verdict = V.rate_verdict(res.fitted_rate_ci, float(self.claimed_rate))
        res.instances = per_instance
        res.evidence = {"rounds": rounds, "instances": len(insts), "replicates_per_instance": R,
                        "param_grid": list(self.param_grid), "record_points": int(len(grid)),
                        "statistical_z": V.POLICY.statistical_z}
        if any(f.paper and f.verdict == V.VIOLATED for f in findings):
            res.saved_instances = save_refuting(self.id, [insts[k] for k in sorted(refuting)], config.save_dir)
        out = self.finish(res, findings, t0)
        if out.verdict == V.VIOLATED and refuting:
            out.reason += f"; first refuting instance: {instance_label(insts[min(refuting)])}"
        return out
