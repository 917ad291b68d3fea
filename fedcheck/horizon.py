"""Bounds on runs of a fixed horizon: :class:`HorizonBoundCheck`.

Many theorems fix the number of rounds ``T`` first and choose the step size, a threshold or
another parameter as a function of ``T`` ("set eta = D/(G sqrt(T ...)), then the output
satisfies ..."); the claim is about the run of that horizon, not about every round of one long
run (that is :class:`fedcheck.check.BoundCheck`).  A horizon check declares

* ``schedules``: SymPy expressions in the horizon symbol ``T`` and named constants (of
  :mod:`fedcheck.constants`, the check's ``params`` or a case's ``settings``), evaluated per run
  and handed to the ``runner`` by name;
* ``bounds``: :class:`Bound` objects, each "``metric <= bound``", the bound a SymPy expression
  that may use the schedules' names, the constants and ``T``; a metric is measured either once
  per run (shape ``(B,)``) or at every round (``(R, B)``, a per-round inequality);
* ``readings``: substitutions applied to schedules *and* bounds, so that each reading of a
  partly lost statement is its own set of runs;
* ``cases``: families and settings, each with its seeds and horizons (quick and full).

The ``runner(instances, solutions, schedule, T, settings, run_seeds)`` runs one batch (one row
per ``(reading, instance, run seed)``) and returns ``{metric: array | {"value", "lo", "hi",
"scale"}}``; ``lo``/``hi`` carry the uncertainty of an exact optimum.  Verdicts follow
:mod:`fedcheck.verdict` (``compare_upper``, ``combine``); a rate against ``T`` is fitted for the
``rate_metric`` with ``fit_rate`` and judged with ``rate_verdict``.

Example::

    HorizonBoundCheck(id="paper.thm", paper=P, reference="Theorem 1", claim="...",
        runner=run_fedsgm, schedules={"eta": D_0 / (G_lip * sp.sqrt(T))},
        bounds=[Bound("gap", "f_gap", D_0 * G_lip / sp.sqrt(T))],
        cases=[Case("F1", family, settings={"E": 1}, horizons=(100, 1000))])
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp

from fedcheck.core import verdict as V
from fedcheck.check import Check, CheckResult, Paper, Reading, RunConfig, SymbolicClaim
from fedcheck.problems.constants import InstanceContext, Value, resolve
from fedcheck.algorithms.core import evaluate_schedule
from fedcheck.core.symbols import T as T_sym

__all__ = ["Bound", "Case", "HorizonBoundCheck", "Rows", "measured"]


@dataclass(frozen=True)
class Bound:
    """``metric <= bound``; ``bound`` is SymPy in the schedule names, constants and ``T``."""

    name: str
    metric: str
    bound: Any
    description: str = ""


@dataclass(frozen=True)
class Case:
    """A family with the settings handed to the runner (also usable as constant values)."""

    name: str
    family: Any
    settings: dict = field(default_factory=dict)
    seeds: int = 4
    full_seeds: int | None = None
    horizons: tuple = (100,)
    full_horizons: tuple | None = None
    run_seeds: int = 1
    full_run_seeds: int | None = None

    def pick(self, config: RunConfig) -> tuple[list[int], list[int], int]:
        seeds = list(config.seeds) if config.seeds is not None else \
            list(range(self.full_seeds if (config.full and self.full_seeds) else self.seeds))
        hs = [int(config.rounds)] if config.rounds else \
            list(self.full_horizons if (config.full and self.full_horizons) else self.horizons)
        rs = self.full_run_seeds if (config.full and self.full_run_seeds) else self.run_seeds
        return seeds, hs, int(rs)


def measured(x, scale=None) -> dict:
    """Normalise a runner's measurement to ``{"value", "lo", "hi", "scale"}`` float arrays."""
    if isinstance(x, dict):
        v = np.asarray(x["value"], dtype=float)
        lo = np.asarray(x.get("lo", v), dtype=float)
        hi = np.asarray(x.get("hi", v), dtype=float)
        sc = x.get("scale", scale)
    else:
        v = lo = hi = np.asarray(x, dtype=float)
        sc = scale
    return {"value": v, "lo": lo, "hi": hi, "scale": np.ones(v.shape[-1]) if sc is None else np.asarray(sc, float)}


@dataclass
class Rows:
    """The rows of one batch: ``(reading, instance, run seed)`` triples with their values."""

    readings: list
    inst_idx: np.ndarray
    run_seeds: np.ndarray
    values: dict          # name -> (B,) constants and schedule values

    @property
    def B(self):
        return len(self.inst_idx)


def _num(x) -> float:
    return float("nan") if x is None else float(x)


def _eval(expr, values: dict, T: int, B: int) -> np.ndarray:
    expr = sp.sympify(expr)
    return evaluate_schedule(expr, np.array([float(T)]), values, B, t_symbol=T_sym)[0]


@dataclass
class HorizonBoundCheck(Check):
    """Bounds on runs whose parameters depend on the horizon ``T`` (see the module doc)."""

    id: str
    paper: Paper
    reference: str
    claim: str
    runner: Callable[..., dict]
    schedules: dict
    bounds: Sequence[Bound]
    cases: Sequence[Case]
    solver: Callable[..., Any]
    readings: Sequence[Reading] = (Reading("as stated"),)
    params: dict = field(default_factory=dict)
    title: str = ""
    aliases: tuple = ()
    assumptions: Sequence[str] = ()
    symbolic: Sequence[SymbolicClaim] = ()
    rate_metric: str | None = None          # the Bound name whose metric is fitted against T
    claimed_rate: float | None = None
    accepts: Callable[[Any], bool] | None = None
    save_instance: Callable[[Any, str], Any] | None = None
    kind: str = "bound"

    def __post_init__(self):
        self.schedules = {k: sp.sympify(v) for k, v in self.schedules.items()}
        if not self.title:
            self.title = self.reference

    # -- declaration helpers ----------------------------------------------------------------
    def reading_expr(self, expr, reading: Reading):
        return sp.sympify(expr).subs(reading.substitutions)

    def _needed(self) -> set[str]:
        names = set()
        for r in self.readings:
            for e in list(self.schedules.values()) + [b.bound for b in self.bounds]:
                names |= {s.name for s in self.reading_expr(e, r).free_symbols}
        return names - {T_sym.name} - set(self.schedules)

    def formula(self) -> dict:
        return {
            "bound": sp.latex(sp.Matrix([sp.sympify(b.bound) for b in self.bounds]).T) if len(self.bounds) > 1
            else sp.latex(sp.sympify(self.bounds[0].bound)),
            "bound_text": "; ".join(f"{b.metric} <= {sp.sstr(b.bound)}" for b in self.bounds),
            "bounds": {b.name: {"metric": b.metric, "latex": sp.latex(sp.sympify(b.bound)),
                                "description": b.description} for b in self.bounds},
            "schedules": {k: sp.latex(v) for k, v in self.schedules.items()},
            "readings": {r.name: {"substitutions": {sp.sstr(k): sp.latex(v) for k, v in r.substitutions.items()},
                                  "schedules": {k: sp.latex(self.reading_expr(v, r)) for k, v in self.schedules.items()},
                                  "paper": r.paper, "description": r.description} for r in self.readings},
            "metric": ", ".join(dict.fromkeys(b.metric for b in self.bounds)),
        } | ({"metric": next(f"{b.metric}: {b.description}" if b.description else b.metric
                                for b in self.bounds if b.name == self.rate_metric)}
             if self.rate_metric and any(b.name == self.rate_metric for b in self.bounds) else {})

    # -- running ----------------------------------------------------------------------------
    def _instances(self, case: Case, seeds, config: RunConfig):
        if config.instances:
            return list(config.instances)
        return [case.family.draw(s) for s in seeds]

    def _context(self, inst, sol, params):
        return InstanceContext(inst, None, sol, params)

    def prepare(self, case: Case, config: RunConfig):
        """Instances, solutions and constant values of one case."""
        seeds, horizons, run_seeds = case.pick(config)
        insts = self._instances(case, seeds, config)
        sols = [self.solver(i, use_cache=config.use_cache) for i in insts]
        params = {**self.params, **case.settings, **config.params}
        consts = []
        for inst, sol in zip(insts, sols):
            ctx = self._context(inst, sol, params)
            c = {}
            for name in sorted(self._needed()):
                try:
                    c[name] = resolve(name, ctx)
                except (KeyError, TypeError, ValueError):
                    c[name] = Value(float("nan"), False, "unavailable")
            consts.append(c)
        return insts, sols, consts, horizons, run_seeds, params

    def build_rows(self, insts, consts, run_seeds: int, T: int) -> Rows:
        combos = list(itertools.product(range(len(self.readings)), range(len(insts)), range(run_seeds)))
        r_idx = np.array([c[0] for c in combos])
        i_idx = np.array([c[1] for c in combos])
        s_idx = np.array([c[2] for c in combos])
        B = len(combos)
        values = {name: np.array([consts[i][name].value for i in i_idx]) for name in (consts[0] if consts else {})}
        for name, expr in self.schedules.items():
            out = np.empty(B)
            for r, reading in enumerate(self.readings):
                sel = r_idx == r
                vals = {k: v[sel] for k, v in values.items()}
                out[sel] = _eval(self.reading_expr(expr, reading), vals, T, int(sel.sum()))
            values[name] = out
        return Rows([self.readings[r] for r in r_idx], i_idx, s_idx, values)

    def bound_values(self, bound: Bound, rows: Rows, T: int) -> np.ndarray:
        out = np.empty(rows.B)
        for reading in self.readings:
            sel = np.array([r is reading for r in rows.readings])
            if sel.any():
                vals = {k: v[sel] for k, v in rows.values.items()}
                out[sel] = _eval(self.reading_expr(bound.bound, reading), vals, T, int(sel.sum()))
        return out

    def execute(self, case: Case, insts, sols, rows: Rows, T: int) -> dict:
        sched = {name: rows.values[name] for name in self.schedules}
        raw = self.runner([insts[i] for i in rows.inst_idx], [sols[i] for i in rows.inst_idx], sched, T,
                          dict(case.settings), rows.run_seeds)
        return raw

    def compare(self, bound: Bound, meas: dict, b: np.ndarray):
        """Codes (0 holds, 1 inconclusive, 2 violated) per row (worst over rounds) and ratio per row."""
        m = measured(meas[bound.metric])
        lo, hi, val = m["lo"], m["hi"], m["value"]
        bb = np.broadcast_to(b, val.shape)
        sc = np.broadcast_to(m["scale"], val.shape)
        codes = V.compare_upper(lo, hi, bb, sc)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(bb > 0, val / bb, np.nan)
        if val.ndim == 2:
            codes_row = codes.max(0)
            ratio_row = np.where(np.isfinite(ratio).any(0), np.nanmax(np.where(np.isfinite(ratio), ratio, -np.inf), 0),
                                 np.nan)
            first = np.where((codes == 2).any(0), np.argmax(codes == 2, 0), -1)
        else:
            codes_row, ratio_row, first = codes, ratio, np.full(val.shape, -1)
        return codes_row, ratio_row, first, val

    def run(self, config: RunConfig) -> CheckResult:
        t0 = time.perf_counter()
        result = CheckResult(id=self.id, title=self.title, paper=self.paper.key, reference=self.reference,
                             claim=self.claim, kind=self.kind, verdict=V.INCONCLUSIVE,
                             claimed_rate=self.claimed_rate, params=dict(self.params),
                             assumptions=list(self.assumptions))
        result.formula = self.formula()
        result.symbolic = [s.evaluate() for s in self.symbolic]
        if config.instances and self.accepts is not None and not all(self.accepts(i) for i in config.instances):
            result.reason = (f"{self.id} runs on its own problem class; the given instance(s) are not of it "
                             "(run without --instance)")
            result.seconds = time.perf_counter() - t0
            return result
        per_reading = {r.name: {"codes": [], "ratios": [], "violated": 0, "inconclusive": 0, "rows": 0}
                       for r in self.readings}
        per_bound = {b.name: {r.name: {"codes": [], "ratios": []} for r in self.readings} for b in self.bounds}
        records, fits_by_reading, refuting, notes = [], {r.name: [] for r in self.readings}, [], []
        first_violation = None
        for case in self.cases:
            insts, sols, consts, horizons, run_seeds, params = self.prepare(case, config)
            reasons = [s.reason for s in sols]
            # per (instance): per reading: per horizon: data
            table = {}
            for T in horizons:
                rows = self.build_rows(insts, consts, run_seeds, T)
                meas = self.execute(case, insts, sols, rows, T)
                row_codes = np.zeros(rows.B, dtype=int)
                row_ratio = np.full(rows.B, -np.inf)
                for bnd in self.bounds:
                    b = self.bound_values(bnd, rows, T)
                    codes, ratio, first, val = self.compare(bnd, meas, b)
                    for j in range(rows.B):
                        if reasons[rows.inst_idx[j]]:
                            codes[j] = max(codes[j], 1)
                    row_codes = np.maximum(row_codes, codes)
                    for j in range(rows.B):
                        rn = rows.readings[j].name
                        per_bound[bnd.name][rn]["codes"].append(int(codes[j]))
                        per_bound[bnd.name][rn]["ratios"].append(float(ratio[j]))
                        key = (rows.inst_idx[j], rn)
                        ent = table.setdefault(key, {}).setdefault(T, {})
                        if rows.run_seeds[j] == 0:
                            ent[bnd.name] = {"value": float(val[j]) if val.ndim == 1 else None,
                                             "bound": float(b[j]), "ratio": float(ratio[j]), "code": int(codes[j]),
                                             "first_violation_round": int(first[j]) if first[j] >= 0 else None}
                        else:
                            ent.setdefault("_worst_" + bnd.name, 0)
                            ent["_worst_" + bnd.name] = max(ent["_worst_" + bnd.name], int(codes[j]))
                        if codes[j] == 2 and first_violation is None:
                            first_violation = (case.name, T, insts[rows.inst_idx[j]], rn, bnd.name, float(ratio[j]))
                    finite = np.isfinite(ratio)
                    row_ratio = np.where(finite, np.maximum(row_ratio, np.where(finite, ratio, -np.inf)), row_ratio)
                for j in range(rows.B):
                    rn = rows.readings[j].name
                    pr = per_reading[rn]
                    pr["codes"].append(int(row_codes[j]))
                    pr["rows"] += 1
                    pr["violated"] += int(row_codes[j] == 2)
                    pr["inconclusive"] += int(row_codes[j] == 1)
                    if np.isfinite(row_ratio[j]):
                        pr["ratios"].append(float(row_ratio[j]))
                    if row_codes[j] == 2 and rows.readings[j].paper:
                        refuting.append(insts[rows.inst_idx[j]])
                extra = meas.get("_evidence")
                if extra:
                    for j in range(rows.B):
                        if rows.run_seeds[j] == 0:
                            table[(rows.inst_idx[j], rows.readings[j].name)][T]["evidence"] = \
                                {k: (float(v[j]) if np.ndim(v) == 1 else None) for k, v in extra.items()}
            # per-instance records
            for i, (inst, sol) in enumerate(zip(insts, sols)):
                rec = {"case": case.name, "seed": getattr(inst, "seed", None),
                       "instance": inst.describe() if hasattr(inst, "describe") else str(inst),
                       "F_star": getattr(sol, "F_star", None), "F_star_lower": getattr(sol, "F_lower", None),
                       "solver": sol.record() if hasattr(sol, "record") else {},
                       "constants": {k: {"value": v.value, "exact": v.exact, "note": v.note}
                                     for k, v in consts[i].items()},
                       "rounds": [float(T) for T in horizons], "x_label": "T (horizon)",
                       "settings": {k: (v if isinstance(v, (int, float, str, bool)) else str(v))
                                    for k, v in case.settings.items()},
                       "bound": {}, "readings": {}, "horizons": {}}
                if reasons[i]:
                    rec["inconclusive_reason"] = reasons[i]
                rate_bound = self.rate_metric or self.bounds[0].name
                for reading in self.readings:
                    data = table.get((i, reading.name), {})
                    codes = [d[b.name]["code"] for d in data.values() for b in self.bounds if b.name in d]
                    codes += [d[k] for d in data.values() for k in d if k.startswith("_worst_")]
                    ratios = [d[b.name]["ratio"] for d in data.values() for b in self.bounds
                              if b.name in d and np.isfinite(d[b.name]["ratio"])]
                    rec["readings"][reading.name] = {"verdict": V.verdict_of_codes(codes),
                                                     "max_ratio": max(ratios) if ratios else None}
                    rec["bound"][reading.name] = [data.get(T, {}).get(rate_bound, {}).get("bound") for T in horizons]
                    rec["horizons"][reading.name] = {str(T): data.get(T, {}) for T in horizons}
                    vals = np.array([_num(data.get(T, {}).get(rate_bound, {}).get("value")) for T in horizons])
                    if reading is self.readings[0]:
                        rec["metric"] = vals
                    if self.rate_metric and len(horizons) >= 2:
                        fit = V.fit_rate(np.array(horizons, float), vals, 0.0)
                        rec.setdefault("fits", {})[reading.name] = fit
                        fits_by_reading[reading.name].append(fit)
                        if reading is self.readings[0]:
                            rec["fit"] = fit
                records.append(rec)
        # aggregate
        for r in self.readings:
            pr = per_reading[r.name]
            entry = {"verdict": V.verdict_of_codes(pr["codes"]), "max_ratio": max(pr["ratios"]) if pr["ratios"] else None,
                     "paper": r.paper, "description": r.description, "runs": pr["rows"],
                     "violated_runs": pr["violated"], "inconclusive_runs": pr["inconclusive"],
                     "bounds": {b.name: {"verdict": V.verdict_of_codes(per_bound[b.name][r.name]["codes"]),
                                         "max_ratio": (max([x for x in per_bound[b.name][r.name]["ratios"]
                                                            if np.isfinite(x)], default=None))}
                                for b in self.bounds}}
            if self.rate_metric:
                pooled = V.pooled_rate(fits_by_reading[r.name])
                entry["fitted_rate"] = pooled["slope"] if pooled else None
                entry["fitted_rate_ci"] = pooled["ci"] if pooled else None
            result.readings[r.name] = entry
        paper_r = [r for r in self.readings if r.paper] or list(self.readings)
        result.verdict = V.combine(result.readings[r.name]["verdict"] for r in paper_r)
        mrs = [result.readings[r.name]["max_ratio"] for r in paper_r if result.readings[r.name]["max_ratio"] is not None]
        result.max_ratio = max(mrs) if mrs else None
        if self.rate_metric and self.claimed_rate is not None:
            first = result.readings[paper_r[0].name]
            result.fitted_rate, result.fitted_rate_ci = first.get("fitted_rate"), first.get("fitted_rate_ci")
            result.rate_verdict = V.rate_verdict(result.fitted_rate_ci, float(self.claimed_rate))
        if result.verdict == V.VIOLATED and first_violation:
            cname, T, inst, rn, bname, ratio = first_violation
            bad = sum(result.readings[r.name]["violated_runs"] for r in paper_r)
            result.reason = (f"{bad} run(s) violate a bound; first: bound {bname!r} (reading {rn!r}) in case "
                             f"{cname!r} at T={T} on seed {getattr(inst, 'seed', None)}"
                             + (f" (ratio {ratio:.3g})" if ratio is not None and np.isfinite(ratio) else ""))
            if config.save_dir and self.save_instance:
                from pathlib import Path
                seen, paths = set(), []
                for inst in refuting:
                    key = id(inst)
                    if key in seen or len(paths) >= 5:
                        continue
                    seen.add(key)
                    p = Path(config.save_dir) / f"{self.id}-seed{getattr(inst, 'seed', 'x')}.npz"
                    paths.append(str(self.save_instance(inst, p)))
                result.saved_instances = paths
        elif result.verdict == V.INCONCLUSIVE:
            why = sorted({rec["inconclusive_reason"] for rec in records if rec.get("inconclusive_reason")})
            why += [f"reading {r.name!r}: {result.readings[r.name]['inconclusive_runs']} run(s) undecided"
                    for r in paper_r if result.readings[r.name]["inconclusive_runs"]]
            result.reason = "; ".join(why) or "nothing was decided"
        result.instances = records
        result.evidence = {"cases": [{"name": c.name, "family": getattr(c.family, "label", str(c.family)),
                                      "settings": {k: (v if isinstance(v, (int, float, str, bool)) else str(v))
                                                   for k, v in c.settings.items()},
                                      "horizons": list(c.pick(config)[1]), "seeds": len(c.pick(config)[0]),
                                      "run_seeds": c.pick(config)[2]} for c in self.cases],
                           "notes": notes}
        result.seconds = time.perf_counter() - t0
        return result
