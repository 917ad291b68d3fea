"""Checks: declarations of claims, and the generic machinery that runs them.

A *check* is one claim of one paper with an id such as ``fedfw.theorem1``.  The
declarative kind, :class:`BoundCheck`, is what a theorem module writes::

    theorem1 = BoundCheck(
        id="fedfw.theorem1", aliases=("theorem1",), paper=FEDFW, reference="Theorem 1, eq. (38)",
        claim="F(xbar^t) - F* <= ... = O(t^{-1/2})",
        algorithm=engine.fedfw,
        schedules={"eta": 2/(t+1), "lam": lambda_0*sqrt(t+1)},
        bound=..., readings=[Reading("statement", {G: ...}, paper=True), ...],
        claimed_rate=-1/2, params={"lambda_0": 1.0}, family=RandomFamily(...))

The engine evaluates the very same SymPy expressions: schedules become the
``(rounds, B)`` arrays handed to the algorithm, bounds are lambdified over the
recorded rounds with the instance constants of :mod:`fedcheck.constants`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp

from fedcheck.core import verdict as V
from fedcheck.problems.constants import InstanceContext, resolve
from fedcheck.algorithms import Trace, default_recorder, evaluate_schedule, record_grid
from fedcheck.problems.instances import Instance, InstanceBatch, RandomFamily
from fedcheck.problems.solve import Solution, solve_consensus
from fedcheck.core.symbols import latex, t as t_sym

__all__ = ["Paper", "Reading", "RunConfig", "CheckResult", "Check", "BoundCheck", "SymbolicClaim", "SideCondition",
           "suboptimality"]


from fedcheck.core.claim import Paper, Reading  # noqa: E402  (one definition)


@dataclass
class RunConfig:
    seeds: Sequence[int] | None = None
    rounds: int | None = None
    instances: Sequence[Instance] | None = None
    params: dict = field(default_factory=dict)
    full: bool = False
    progress: bool = False
    use_cache: bool = True
    save_dir: str | None = None   # where refuting instances are written (None: not written)


@dataclass
class CheckResult:
    id: str
    title: str
    paper: str
    reference: str
    claim: str
    kind: str
    verdict: str
    reason: str = ""
    claimed_rate: float | None = None
    fitted_rate: float | None = None
    fitted_rate_ci: list | None = None
    rate_verdict: str | None = None
    max_ratio: float | None = None
    readings: dict = field(default_factory=dict)
    feasibility: dict = field(default_factory=dict)
    symbolic: list = field(default_factory=list)
    evidence: dict = field(default_factory=dict)
    formula: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    assumptions: list = field(default_factory=list)
    instances: list = field(default_factory=list)
    saved_instances: list = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return _jsonable(self.__dict__)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else (None if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.bool_,)):
        return bool(x)
    return x


class Check:
    """Base class of every check: an id, its paper, the claim, and ``run``."""

    id: str
    title: str
    paper: Paper
    reference: str
    claim: str
    aliases: tuple
    kind: str

    def run(self, config: RunConfig) -> CheckResult:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class SideCondition:
    """An inequality ``lhs >= rhs`` between instance constants that a proof relies on (e.g. Lemma 2's
    ``G >= sup ||grad F^||``).  Evaluated per instance and reported as evidence beside the bound;
    it does not change the check's verdict.  A constant known only by an upper bound decides the
    inequality only when it stands on the right-hand side."""

    name: str
    lhs: sp.Expr
    rhs: sp.Expr
    description: str = ""

    def evaluate(self, consts: dict, j: int) -> dict:
        def val(e):
            e = sp.sympify(e)
            return float(e.subs({sym: consts[sym.name][j].value for sym in e.free_symbols}))
        lhs_syms = {s.name for s in sp.sympify(self.lhs).free_symbols}
        rhs_syms = {s.name for s in sp.sympify(self.rhs).free_symbols}
        inexact_l = any(not consts[n][j].exact for n in lhs_syms if n in consts)
        inexact_r = any(not consts[n][j].exact for n in rhs_syms if n in consts)
        a, b = val(self.lhs), val(self.rhs)
        if not (np.isfinite(a) and np.isfinite(b)):
            v = V.INCONCLUSIVE
        elif a >= b * (1 - V.POLICY.rtol):
            v = V.INCONCLUSIVE if inexact_l else V.HOLDS
        else:
            v = V.INCONCLUSIVE if inexact_r else V.VIOLATED
        return {"name": self.name, "verdict": v, "lhs": a, "rhs": b, "description": self.description}


@dataclass
class SymbolicClaim:
    """A statement proven (or refuted) symbolically with SymPy, reported with the check."""

    name: str
    prove: Callable[[], tuple[str, str]]   # returns (verdict, evidence)

    def evaluate(self) -> dict:
        try:
            verdict, evidence = self.prove()
        except Exception as e:  # a failed proof attempt is inconclusive, not a pass
            verdict, evidence = V.INCONCLUSIVE, f"SymPy could not decide: {e}"
        return {"name": self.name, "verdict": verdict, "evidence": evidence}


def rate_claim(bound: sp.Expr, rate: sp.Expr, t: sp.Symbol = t_sym) -> SymbolicClaim:
    """The bound is Theta(t^rate) as t -> oo: lim bound * t^(-rate) is finite and positive."""
    def prove():
        lim = sp.limit(sp.simplify(bound * t ** (-rate)), t, sp.oo)
        if lim.is_finite and lim.is_positive:
            return V.HOLDS, f"lim_(t->oo) bound * t^({-rate}) = {sp.sstr(lim)} (finite, positive)"
        if lim.is_finite is False or lim == 0:
            return V.VIOLATED, f"lim_(t->oo) bound * t^({-rate}) = {sp.sstr(lim)}"
        return V.INCONCLUSIVE, f"limit {sp.sstr(lim)} undecided"
    return SymbolicClaim(f"the bound is of order t^({sp.sstr(rate)})", prove)


# ----------------------------------------------------------------------------------------------
# metrics: how a trace becomes the measured interval [lo, hi] of the quantity a bound controls
@dataclass(frozen=True)
class Metric:
    name: str
    description: str
    compute: Callable[[Trace, Sequence[Solution]], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def _subopt(trace: Trace, sols):
    F = trace.metrics["F"]
    Fs = np.array([s.F_star for s in sols])[None, :]
    Fl = np.array([s.F_lower for s in sols])[None, :]
    value = F - Fs
    floor = np.broadcast_to(Fs - Fl, F.shape)
    return value, F - Fs, F - Fl, floor


suboptimality = Metric("F(xbar^t) - F*",
                       "objective gap of the server point; F* is known to lie in [F(x_hat) - FW gap, F(x_hat)]",
                       _subopt)


def _label(inst: Instance) -> str:
    return f"seed {inst.seed}" if inst.seed is not None else inst.source


def _save_refuting(check_id: str, insts: Sequence[Instance], directory: str, limit: int = 5) -> list[str]:
    """Write refuting instances in the documented .npz format (``verify --instance`` reads them)."""
    from pathlib import Path

    from fedcheck.problems.instances import save_instance
    paths = []
    for inst in insts[:limit]:
        tag = f"seed{inst.seed}" if inst.seed is not None else inst.content_hash()[:12]
        try:
            paths.append(str(save_instance(inst, Path(directory) / f"{check_id}-{tag}.npz")))
        except ValueError:
            pass  # sets without a file format
    return paths


def _with_progress(recorder, last: int, desc: str, enabled: bool):
    """Wrap a recorder so that a progress bar advances at each recorded round (not per round)."""
    if not enabled:
        return recorder
    import sys

    from tqdm import tqdm
    bar = tqdm(total=last, desc=desc, unit="round", file=sys.stderr, leave=False, mininterval=0.5)

    def rec(k, X, xbar):
        bar.update(k - bar.n)
        if k >= last:
            bar.close()
        return recorder(k, X, xbar)
    return rec


# ----------------------------------------------------------------------------------------------
@dataclass
class BoundCheck(Check):
    """A pathwise upper bound ``metric(x^t) <= bound(t)`` along an algorithm's run.

    See the module docstring for a declaration.  ``valid_from`` is the first
    iterate index the bound covers; ``feasible=True`` asks that the server point
    stays in the set at every recorded round."""

    id: str
    paper: Paper
    reference: str
    claim: str
    algorithm: Callable[..., Trace]
    schedules: dict
    bound: sp.Expr
    claimed_rate: sp.Expr | float | None = None
    readings: Sequence[Reading] = (Reading("as stated"),)
    params: dict = field(default_factory=dict)
    family: RandomFamily = field(default_factory=RandomFamily)
    metric: Metric = suboptimality
    valid_from: int = 1
    feasible: bool = True
    title: str = ""
    aliases: tuple = ()
    assumptions: Sequence[str] = ()
    symbolic: Sequence[SymbolicClaim] = ()
    side_conditions: Sequence[SideCondition] = ()
    default_seeds: int = 8
    default_rounds: int = 5000
    quick_rounds: int | None = None     # rounds without --full (default: default_rounds)
    full_rounds: int | None = None      # rounds with --full, the long sweep (default: default_rounds)
    full_seeds: int | None = None       # seeds with --full (default: default_seeds)
    algorithm_kwargs: dict = field(default_factory=dict)
    solver: Callable[..., Solution] = solve_consensus
    kind: str = "bound"
    proof_steps: Sequence[Any] = ()   # fedcheck.audit.ProofStep: the proof's key steps (``fedcheck audit``)

    def __post_init__(self):
        self.bound = sp.sympify(self.bound)
        self.schedules = {k: sp.sympify(v) for k, v in self.schedules.items()}
        if not self.title:
            self.title = self.reference

    # -- declaration helpers --------------------------------------------------------------
    def reading_bound(self, reading: Reading) -> sp.Expr:
        return sp.sympify(self.bound).subs(reading.substitutions)

    def needed_symbols(self) -> set:
        syms = set()
        for r in self.readings:
            syms |= self.reading_bound(r).free_symbols
        for c in self.side_conditions:
            syms |= sp.sympify(c.lhs).free_symbols | sp.sympify(c.rhs).free_symbols
        for e in self.schedules.values():
            syms |= e.free_symbols
        syms.discard(t_sym)
        return syms

    # -- running --------------------------------------------------------------------------
    def rounds_for(self, config: RunConfig) -> int:
        """``--rounds`` if given; else the long sweep with ``--full`` (``full_rounds``), the quick default
        without (``quick_rounds``), each falling back to ``default_rounds``."""
        if config.rounds:
            return int(config.rounds)
        if config.full:
            return int(self.full_rounds or self.default_rounds)
        return int(self.quick_rounds or self.default_rounds)

    def _instances(self, config: RunConfig) -> list[Instance]:
        if config.instances:
            return list(config.instances)
        n_seeds = (self.full_seeds or self.default_seeds) if config.full else self.default_seeds
        seeds = list(config.seeds) if config.seeds is not None else list(range(n_seeds))
        return [self.family.draw(s) for s in seeds]

    def run(self, config: RunConfig) -> CheckResult:
        t0 = time.perf_counter()
        params = {**self.params, **config.params}
        rounds = self.rounds_for(config)
        insts = self._instances(config)
        sols = [self.solver(i, use_cache=config.use_cache) for i in insts]
        result = CheckResult(id=self.id, title=self.title, paper=self.paper.key, reference=self.reference,
                             claim=self.claim, kind=self.kind, verdict=V.INCONCLUSIVE,
                             claimed_rate=None if self.claimed_rate is None else float(self.claimed_rate),
                             params=params, assumptions=list(self.assumptions))
        result.formula = {"bound": latex(self.bound), "bound_text": sp.sstr(self.bound),
                          "schedules": {k: latex(v) for k, v in self.schedules.items()},
                          "readings": {r.name: {"latex": latex(self.reading_bound(r)),
                                                "substitutions": {sp.sstr(k): latex(v) for k, v in r.substitutions.items()},
                                                "paper": r.paper, "description": r.description}
                                       for r in self.readings},
                          "metric": self.metric.name, "metric_description": self.metric.description,
                          "valid_from": self.valid_from}
        result.symbolic = [s.evaluate() for s in self.symbolic]
        # group instances of one shape into batches (random families: one batch)
        groups: dict[tuple, list[int]] = {}
        for k, inst in enumerate(insts):
            groups.setdefault((inst.A.shape, inst.loss, inst.set.name), []).append(k)
        per_instance: list[dict] = [None] * len(insts)  # type: ignore
        reading_codes = {r.name: [] for r in self.readings}
        feas_codes, fits = [], []
        for idxs in groups.values():
            batch = InstanceBatch([insts[k] for k in idxs])
            bsols = [sols[k] for k in idxs]
            ctxs = [InstanceContext(insts[k], batch.loss.take(j), sols[k], params) for j, k in enumerate(idxs)]
            consts = {s.name: [resolve(s.name, c) for c in ctxs] for s in self.needed_symbols()}
            values = {name: np.array([v.value for v in vals]) for name, vals in consts.items()}
            tt = np.arange(1, rounds + 1)
            sched = {name: evaluate_schedule(e, tt, values, batch.B) for name, e in self.schedules.items()}
            grid = record_grid(rounds + 1)
            recorder = _with_progress(default_recorder(batch), rounds + 1, f"{self.id}", config.progress)
            trace = self.algorithm(batch, rounds=rounds, grid=grid, recorder=recorder, **sched,
                                   **self.algorithm_kwargs)
            value, lo, hi, floor = self.metric.compute(trace, bsols)
            k = trace.rounds.astype(float)
            valid = k >= self.valid_from
            scale = np.array([abs(s.F_star) for s in bsols])[None, :]
            bounds = {}
            for r in self.readings:
                bexpr = self.reading_bound(r)
                bounds[r.name] = evaluate_schedule(bexpr, k, values, batch.B)
            radius = np.broadcast_to(np.asarray(batch.set.radius, dtype=float), (batch.B,))
            for j, kidx in enumerate(idxs):
                sol = bsols[j]
                inst_rec: dict[str, Any] = {
                    "seed": insts[kidx].seed, "instance": insts[kidx].describe(),
                    "F_star": sol.F_star, "F_star_lower": sol.F_lower, "F_star_certified_accuracy": sol.gap,
                    "solver": {"name": sol.solver, "status": sol.status, "version": sol.solver_version,
                               "seconds": sol.solve_time, "cached": sol.cached,
                               "dual_residual": sol.dual_residual, "notes": sol.notes},
                    "constants": {name: {"value": vals[j].value, "exact": vals[j].exact, "note": vals[j].note}
                                  for name, vals in consts.items()},
                    "rounds": trace.rounds, "metric": value[:, j],
                    "metric_interval": {"lo": lo[:, j], "hi": hi[:, j]},
                    "consensus": trace.metrics.get("consensus", np.full(len(k), np.nan))[:, j],
                    "bound": {}, "readings": {},
                }
                reason = sol.reason
                infeas = trace.metrics.get("infeasibility")
                tol = V.POLICY.feasibility_tol * max(1.0, float(radius[j]))
                if reason is None and infeas is not None and k[0] == 1 and infeas[0, j] > tol:
                    reason = (f"assumption broken: the starting point is not in the set "
                              f"(infeasibility {infeas[0, j]:.3g}); give a feasible x0")
                for r in self.readings:
                    b = bounds[r.name][:, j]
                    codes = V.compare_upper(lo[valid, j], hi[valid, j], b[valid], scale[0, j])
                    if reason:
                        codes = np.maximum(codes, 1)
                    inexact = [n for n in (s.name for s in self.reading_bound(r).free_symbols)
                               if n in consts and not consts[n][j].exact]
                    # (a constant known only by an upper bound makes the bound larger, so a violation stands)
                    v = V.verdict_of_codes(codes)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        ratio = np.where(b[valid] > 0, value[valid, j] / b[valid], np.nan)
                    mr = float(np.nanmax(ratio)) if np.isfinite(ratio).any() else float("nan")
                    first_bad = np.nonzero(codes == 2)[0]
                    inst_rec["bound"][r.name] = b
                    inst_rec["readings"][r.name] = {
                        "verdict": v, "max_ratio": mr,
                        "argmax_round": float(k[valid][np.nanargmax(ratio)]) if np.isfinite(ratio).any() else None,
                        "first_violation_round": float(k[valid][first_bad[0]]) if first_bad.size else None,
                        "inconclusive_rounds": int((codes == 1).sum()),
                        "constants_upper_bounds_only": inexact,
                    }
                    reading_codes[r.name].append((v, mr))
                if infeas is not None:
                    bad = infeas[:, j] > tol
                    fv = V.INCONCLUSIVE if not np.all(np.isfinite(infeas[:, j])) else (V.VIOLATED if bad.any() else V.HOLDS)
                    inst_rec["feasibility"] = {"verdict": fv, "max_infeasibility": float(np.nanmax(infeas[:, j])),
                                               "tolerance": tol,
                                               "first_infeasible_round": float(k[bad][0]) if bad.any() else None}
                    feas_codes.append(fv)
                if self.side_conditions:
                    inst_rec["side_conditions"] = [c.evaluate(consts, j) for c in self.side_conditions]
                fit = V.fit_rate(k, value[:, j], floor[:, j]) if self.claimed_rate is not None else None
                inst_rec["fit"] = fit
                fits.append(fit)
                if reason:
                    inst_rec["inconclusive_reason"] = reason
                per_instance[kidx] = inst_rec
        # aggregate
        for r in self.readings:
            vs = [v for v, _ in reading_codes[r.name]]
            ratios = [m for _, m in reading_codes[r.name] if np.isfinite(m)]
            result.readings[r.name] = {"verdict": V.combine(vs), "max_ratio": max(ratios) if ratios else None,
                                       "paper": r.paper, "description": r.description,
                                       "violated_instances": int(sum(v == V.VIOLATED for v in vs)),
                                       "inconclusive_instances": int(sum(v == V.INCONCLUSIVE for v in vs))}
        paper_readings = [r for r in self.readings if r.paper] or list(self.readings)
        bound_verdict = V.combine(result.readings[r.name]["verdict"] for r in paper_readings)
        result.max_ratio = max((result.readings[r.name]["max_ratio"] or float("nan") for r in paper_readings),
                               default=None)
        if self.feasible and feas_codes:
            result.feasibility = {"verdict": V.combine(feas_codes),
                                  "infeasible_instances": int(sum(v == V.VIOLATED for v in feas_codes))}
        overall = [bound_verdict] + ([result.feasibility["verdict"]] if result.feasibility else [])
        result.verdict = V.combine(overall)
        if self.claimed_rate is not None:
            pooled = V.pooled_rate(fits)
            result.fitted_rate = pooled["slope"] if pooled else None
            result.fitted_rate_ci = pooled["ci"] if pooled else None
            result.rate_verdict = V.rate_verdict(result.fitted_rate_ci, float(self.claimed_rate))
        reasons = sorted({i.get("inconclusive_reason") for i in per_instance if i.get("inconclusive_reason")})
        if result.verdict == V.INCONCLUSIVE:
            why = reasons or [f"reading {n!r}: {d['inconclusive_instances']} instance(s) inconclusive"
                              for n, d in result.readings.items() if d["verdict"] == V.INCONCLUSIVE]
            result.reason = "; ".join(why)
        elif result.verdict == V.VIOLATED:
            parts = []
            for name in (r.name for r in paper_readings):
                bad_idx = [j for j, i in enumerate(per_instance) if i["readings"][name]["verdict"] == V.VIOLATED]
                if bad_idx:
                    j = bad_idx[0]
                    rd = per_instance[j]["readings"][name]
                    parts.append(f"bound ({name}) violated on {len(bad_idx)}/{len(insts)} instance(s); first at "
                                 f"t={rd['first_violation_round']:.0f} on {_label(insts[j])} "
                                 f"(max ratio {rd['max_ratio']:.3g})")
            bad_feas = [j for j, i in enumerate(per_instance)
                        if i.get("feasibility", {}).get("verdict") == V.VIOLATED]
            if bad_feas:
                parts.append(f"server point left the feasible set on {len(bad_feas)} instance(s), first on "
                             f"{_label(insts[bad_feas[0]])}")
            result.reason = "; ".join(parts)
            refuting = sorted({j for j, i in enumerate(per_instance)
                               if any(i["readings"][r.name]["verdict"] == V.VIOLATED for r in paper_readings)}
                              | set(bad_feas))
            if config.save_dir:
                result.saved_instances = _save_refuting(self.id, [insts[j] for j in refuting], config.save_dir)
        result.instances = per_instance
        result.evidence = {"rounds": rounds, "instances": len(insts), "batches": len(groups),
                           "record_points": int(len(record_grid(rounds + 1))),
                           "mode": "full" if config.full else "quick"}
        if self.side_conditions:
            result.evidence["side_conditions"] = {
                c.name: {"verdict": V.combine(i["side_conditions"][q]["verdict"] for i in per_instance),
                         "description": c.description,
                         "violated_instances": sum(i["side_conditions"][q]["verdict"] == V.VIOLATED
                                                   for i in per_instance)}
                for q, c in enumerate(self.side_conditions)}
        result.seconds = time.perf_counter() - t0
        return result
