"""Adversarial search for the worst instance of a bound test (``fedcheck search ID``).

Random instances probe the typical case; a bound can fail on the instance nobody drew.  For any claim whose
evidence is a :class:`~fedcheck.core.evidence.BoundTest` over instances (the catalog's and users' own),
:func:`search` looks for the instance that maximizes the claim's ``max_ratio`` (the largest measured / bound
over rounds or horizons, over the paper's readings), **inside the claim's declared domain**
(:class:`~fedcheck.core.claim.Domain`): a property the domain does not declare free stays at the value of the
claim's own family, and a candidate outside the domain is rejected, never run (:func:`domain_reason`).

Every method spends exactly ``budget`` claim evaluations, each through the claim's own runner and verdict
policy (:func:`evaluate_batch`, one call per batch or generation):

1. **random draws** from a :class:`SearchSpace` around the claim's family (set, number of clients, samples,
   dimension, radius, heterogeneity, noise, how far the unconstrained optimum lies outside the set, a data
   scale, the starting point, the claim's positive parameters over a factor 10 each way), restricted to the
   domain -- the whole budget for ``method="random"``;
2. a **local phase** from the best distinct draws (``restarts``):

   * ``method="cma"`` (default; a quarter of the budget drawn at random first): CMA-ES (the ``cma`` package)
     over a continuous encoding of the instance (:class:`InstanceEncoding`: the parameters, radius and data
     scale in log, the data arrays along a random embedding, shifts of the data's optimum, the start; each
     coordinate mapped into its range by cma's bounded transform), seeded from the SeedSequence (cma's
     ``seed`` option and its normal draws).  Discrete properties (set, n, m, p) are chosen by the outer loop
     (the draws and restarts).  Paper problem classes: the free numeric fields of their family and the
     parameters (:class:`FamilyEncoding`);
   * ``method="perturb"`` (half the budget drawn first): (1+lambda) evolution strategies perturbing the data
     ``A, b``, the starting point, the radius and the parameters, with a step size adapted by success;

3. the best instance is saved through its own ``save()`` and **re-verified** at the claim's normal number of
   rounds (the search runs short rounds), read back from the file, before anything is reported;
4. when the bound is violated, the violating instance is **shrunk** (delta debugging over clients,
   samples and dimensions) to a small instance that still violates it.

The same budget of instances drawn from the claim's own family gives the random-draw baseline the search is
compared with (``benchmarks/search.py`` compares the methods, and against PEPit's certified worst case).
Every random choice comes from ``numpy.random.SeedSequence(seed)``: the same seed gives the same result.
Exact solves are memoized in memory during a search (a perturbed instance is never written to the on-disk
cache).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from fedcheck.core import verdict as V
from fedcheck.core.claim import Claim, Result as CheckResult, RunConfig
from fedcheck.core.errors import BadInput, UserCodeError
from fedcheck.core.evidence import BoundTest
from fedcheck.core.usercode import call_user

Check = BoundCheck = Claim
from fedcheck.problems.instances import Instance, RandomFamily, load_instance, save_instance
from fedcheck.problems.sets import make_set

__all__ = ["SearchSpace", "Candidate", "SearchOutcome", "search", "search_seeds", "shrink", "NotSearchable",
           "evaluate_batch", "EvalConfig", "Score", "InstanceEncoding", "FamilyEncoding", "cma_maximize", "METHODS",
           "check_budget", "format_value"]

SCHEMA = "fedcheck.search/1"
METHODS = ("cma", "perturb", "random")     # the search methods (``--method``); cma is the default


class NotSearchable(TypeError):
    """The claim's evidence is not a bound test over instances."""


def families_of(claim: Claim) -> list:
    """The instance families a claim's bound test draws from (empty: not searchable)."""
    ev = claim.evidence
    if not isinstance(ev, BoundTest):
        return []
    exp = ev.experiment
    if getattr(exp, "family", None) is not None:
        return [exp.family]
    if getattr(exp, "cases", None) is not None and not callable(exp.cases):
        return [c.family for c in exp.cases if getattr(c, "family", None) is not None]
    return list(getattr(exp, "families", ()) or ())


def instance_searchable(claim: Claim) -> bool:
    """Whether ``search`` can hand the claim instances of its own family (else it searches seeds and parameters)."""
    fams = families_of(claim)
    if not fams:
        return False
    from fedcheck.experiments import takes_instance
    try:
        return takes_instance(claim, call_user(fams[0].draw, 0, role="instance family")) is None
    except UserCodeError:   # a user's family that fails: the user's error, named
        raise
    except Exception:      # noqa: BLE001 - a family that cannot draw, an instance outside the domain
        return False


def searchable(claim: Claim) -> str | None:
    """``None`` when ``search`` can work on ``claim`` (every bound test), else why not."""
    if not isinstance(claim.evidence, BoundTest):
        return (f"{claim.id} is decided by a {type(claim.evidence).__name__.lower()}, not a bound test: 'fedcheck "
                "search' maximizes measured/bound of bound tests")
    return None


# ----------------------------------------------------------------------------------------------
# claims whose experiment builds its own cases: the space they expose is their seeds and parameters
@dataclass
class SeedCandidate:
    seeds: list
    params: dict
    origin: str
    ratio: float = float("nan")
    verdict: str = V.INCONCLUSIVE
    reading: str | None = None
    reason: str | None = None
    vector: np.ndarray | None = field(default=None, repr=False, compare=False)   # CMA-ES coordinates

    @property
    def score(self) -> float:
        return self.ratio if np.isfinite(self.ratio) else -math.inf

    def short(self) -> str:
        return (f"seeds {self.seeds} " + " ".join(f"{k}={v:.3g}" for k, v in self.params.items())).strip()

    def rerun(self, claim_id: str, defaults: dict) -> str:
        changed = {k: v for k, v in self.params.items() if defaults.get(k) != v}
        return (f"fedcheck verify {claim_id}{_file_args(claim_id)} --seeds {','.join(map(str, self.seeds))}"
                f"{_param_args(changed)}")


class ParamEncoding:
    """The positive parameters of a claim (log, in their ranges) at the start's seeds, for CMA-ES."""

    def __init__(self, start: SeedCandidate, ranges: dict):
        self.start, self.ranges = start, ranges
        self.coords = _Coords()
        _param_coords(self.coords, start.params, ranges)

    @property
    def dim(self) -> int:
        return self.coords.dim

    def decode(self, x: np.ndarray, origin: str) -> SeedCandidate:
        params = _decode_params(self.coords.split(x), self.start.params, self.ranges)
        return SeedCandidate(list(self.start.seeds), params, origin, vector=np.array(x, dtype=float))


def search_seeds(check: Claim, budget: int = 40, seed: int = 0, vary_params: bool = True, use_cache: bool = True,
                 log: Callable[[str], None] | None = None, method: str = "cma") -> dict:
    """Search a claim whose experiment builds its own cases (no instance family): random seeds of its own cases
    at the declared parameters (the baseline: half the budget for ``perturb``, a quarter for ``cma``, all of it
    for ``random``), then the best seed's positive parameters, by up to a factor 10 inside their domain:
    log-normal perturbations (``perturb``) or CMA-ES (``cma``).  Same seed, same result."""
    from fedcheck.experiments import param_domain
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    log = log or (lambda s: None)
    check_budget(budget, None, baseline=False)
    ss = np.random.SeedSequence(int(seed))
    rng = np.random.default_rng(ss)
    ranges = {}
    if vary_params:
        for k, v in check.params.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and float(v) > 0 and k not in grid_params(check):
                ranges[k] = (float(v) / 10.0, float(v) * 10.0)

    def evaluate(c: SeedCandidate) -> SeedCandidate:
        c.params = integral_params(check, c.params)
        try:
            for name, val in c.params.items():
                if name in ranges:
                    check.domain.check_param(name, val, param_domain(check, name))
        except Exception as e:  # noqa: BLE001 - outside the domain: rejected, never run
            c.reason = f"rejected (never run): {e}"
            return c
        try:
            res = check.run(RunConfig(seeds=c.seeds, params=dict(c.params), use_cache=use_cache))
            _score_single(res).apply(c)
        except UserCodeError:   # the user's code fails: their error (exit 2), not a bad draw
            raise
        except Exception as e:  # noqa: BLE001 - one bad draw must not end the search
            c.reason = f"evaluation failed: {type(e).__name__}: {e}"
        return c
    n_base = {"cma": max(1, budget // 4), "perturb": max(1, budget // 2), "random": budget}[method]
    traj, best = [], None

    def record(cs, phase: str = "") -> None:
        nonlocal best
        for c in cs:
            if best is None or c.score > best.score:
                best = c
            traj.append({"evaluation": len(traj) + 1, "ratio": c.ratio, "best": best.ratio, "verdict": c.verdict,
                         "origin": c.origin, "instance": c.short()})
    for k in range(budget):
        if method == "cma" and k >= n_base and ranges and best is not None:
            break
        if k < n_base or best is None or not ranges:
            c = SeedCandidate([int(rng.integers(0, 2**31 - 1))], dict(check.params), f"random seed #{k + 1}")
        else:
            params = dict(best.params)
            for name, (lo, hi) in ranges.items():
                val = float(np.clip(params[name] * math.exp(rng.normal()), lo, hi))
                try:
                    check.domain.check_param(name, val, param_domain(check, name))
                except Exception:      # noqa: BLE001 - outside the domain: keep the value
                    continue
                params[name] = val
            c = SeedCandidate(list(best.seeds), params, f"perturbed #{k + 1}")
        record([evaluate(c)])
    if len(traj) < budget:      # cma: the rest of the budget on the best seed's parameters
        enc = ParamEncoding(best if np.isfinite(best.ratio) else SeedCandidate(list(best.seeds), dict(check.params),
                                                                                 best.origin), ranges)
        cma_maximize(enc, lambda cs: [evaluate(c) for c in cs], budget - len(traj), ss.spawn(1)[0], record, "cma")
    base = [t["ratio"] for t in traj[:n_base] if np.isfinite(t["ratio"])]
    log(f"search {check.id}: {budget} evaluations over its own seeds and parameters; best ratio "
        f"{format_value(best.ratio)} ({best.short()}), seeds alone {format_value(max(base) if base else None)}")
    return {"best": best, "trajectory": traj, "baseline_best": max(base) if base else None,
            "rerun": best.rerun(check.id, check.params), "space": {"seeds": "random", "params": ranges},
            "method": method}


def _domain_range(domain, key, default):
    if key in domain.fixed:
        v = domain.fixed[key]
        return tuple(v) if isinstance(v, tuple) else (v, v)
    if key in domain.free:
        if domain.free[key] is None:
            return tuple(default)
        lo, hi = domain.free[key]      # the default search window, clipped to the domain
        lo2 = default[0] if lo is None else max(lo, default[0])
        hi2 = default[1] if hi is None else min(hi, default[1])
        return (lo2, hi2) if lo2 <= hi2 else ((lo, lo) if lo is not None else (hi, hi))
    return None


# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchSpace:
    """Where the search draws configurations (ranges are inclusive; ``log``: log-uniform)."""

    loss: str = "least_squares"
    sets: tuple = ("l1", "l2", "box", "simplex")
    n: tuple = (1, 12)
    m: tuple = (1, 24)
    p: tuple = (1, 24)
    radius: tuple = (0.1, 10.0)          # log
    heterogeneity: tuple = (0.0, 3.0)
    noise: tuple = (0.0, 1.0)
    outside: tuple = (0.25, 4.0)         # log; < 1 puts the unconstrained optimum inside the set
    scale: tuple = (0.1, 10.0)           # log; multiplies A (and b for least squares)
    params: dict = field(default_factory=dict)   # name -> (lo, hi), log-uniform
    random_start: float = 0.5            # probability of a random starting point in the set

    @classmethod
    def for_check(cls, check: Claim, sets: Sequence[str] | None = None, vary_params: bool = True,
                  param_ranges: dict | None = None) -> "SearchSpace":
        """The space around the claim's family, restricted to its domain: a property the domain does not
        declare free keeps the family's value; ``sets`` must lie in the domain."""
        fam = families_of(check)[0]
        dom = check.domain
        base = RandomFamily()   # a family of another type: its fields where it has them, else the defaults
        get = lambda name: getattr(fam, name, getattr(base, name))  # noqa: E731
        params = {}
        grid = grid_params(check)
        bad = sorted(set(param_ranges or {}) & grid)
        if bad:
            from fedcheck.core.errors import DomainError
            raise DomainError(f"--param-range {bad[0]}: {check.id} runs {bad[0]} over its own param_grid; "
                              "searching it would change nothing")
        if vary_params:
            for k, v in check.params.items():
                if k in grid:       # the claim's grid sets it: not a coordinate of the search
                    continue
                if isinstance(v, (int, float)) and not isinstance(v, bool) and float(v) > 0:
                    params[k] = (float(v) / 10.0, float(v) * 10.0)
                    if k in dom.params and isinstance(dom.params[k], tuple):
                        lo, hi = dom.params[k]
                        params[k] = (max(params[k][0], lo if lo else params[k][0]), min(params[k][1], hi or params[k][1]))
        for k, rng in (param_ranges or {}).items():
            params[k] = (float(rng[0]), float(rng[1]))

        def rng_of(key, wide):
            r = _domain_range(dom, key, wide)
            v = get(key)
            return r if r is not None else (v, v)
        set_dom = dom.fixed.get("set", dom.free.get("set"))
        allowed = (tuple(set_dom) if isinstance(set_dom, tuple) else (set_dom,)) if set_dom else (get("set"),)
        if "set" in dom.free and dom.free["set"] is None:
            allowed = cls.sets
        if sets:
            bad = [x for x in sets if x not in allowed]
            if bad:
                from fedcheck.core.errors import DomainError
                raise DomainError(f"--sets {','.join(bad)}: outside the domain of {check.id} (sets: {', '.join(allowed)})")
            allowed = tuple(sets)
        r = float(get("radius"))
        n_ = int(get("n")); m_ = int(get("m")); p_ = int(get("p"))
        return cls(loss=get("loss"), sets=tuple(allowed),
                   n=tuple(int(v) for v in rng_of("n", (1, max(2, min(2 * n_, 16))))),
                   m=tuple(int(v) for v in rng_of("m", (1, max(2, min(2 * m_, 32))))),
                   p=tuple(int(v) for v in rng_of("p", (1, max(2, min(2 * p_, 24))))),
                   radius=tuple(float(v) for v in rng_of("radius", (r / 10.0, r * 10.0))),
                   heterogeneity=tuple(float(v) for v in rng_of("heterogeneity", cls.heterogeneity)),
                   noise=tuple(float(v) for v in rng_of("noise", cls.noise)),
                   outside=tuple(float(v) for v in rng_of("outside", cls.outside)),
                   scale=tuple(float(v) for v in _domain_range(dom, "scale", cls.scale) or (1.0, 1.0)),
                   params=params, random_start=cls.random_start if "x0" in dom.free else 0.0)

    def record(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}


@dataclass
class Candidate:
    """One evaluated (or to-be-evaluated) point of the search: an instance and the check's params."""

    instance: Instance
    params: dict
    origin: str
    config: dict = field(default_factory=dict)
    ratio: float = float("nan")          # max measured/bound over rounds and the paper's readings
    verdict: str = V.INCONCLUSIVE
    reading: str | None = None           # the reading attaining the ratio
    argmax_round: float | None = None
    reason: str | None = None
    family: object = field(default=None, repr=False, compare=False)     # the family drawn from (generic problems)
    vector: np.ndarray | None = field(default=None, repr=False, compare=False)   # CMA-ES coordinates
    direction: np.ndarray | None = field(default=None, repr=False, compare=False)  # toward the start's extreme point

    @property
    def score(self) -> float:
        return self.ratio if np.isfinite(self.ratio) else -math.inf

    def describe(self) -> dict:
        i = self.instance
        props = i.properties() if hasattr(i, "properties") else {}
        h = i.content_hash()[:16] if hasattr(i, "content_hash") else None
        return {**props, "params": dict(self.params), "origin": self.origin, "drawn_from": self.config, "hash": h}

    def short(self) -> str:
        i = self.instance
        ps = " ".join(f"{k}={v:.3g}" for k, v in self.params.items())
        if isinstance(i, Instance):
            return f"n={i.n} m={i.m} p={i.p} {i.set.name} r={float(i.set.radius):.3g} {ps}".strip()
        props = i.properties() if hasattr(i, "properties") else {}
        return (" ".join(f"{k}={v}" for k, v in props.items()) + f" seed={getattr(i, 'seed', None)} {ps}").strip()


@dataclass
class SearchOutcome:
    check_id: str
    best: Candidate
    baseline_best: Candidate | None
    trajectory: list
    baseline: list
    verified: CheckResult | None = None
    verified_ratio: float | None = None
    shrunk: Candidate | None = None
    shrunk_verified: CheckResult | None = None
    shrink_log: list = field(default_factory=list)
    files: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def improvement(self) -> float | None:
        if self.baseline_best is None or not (self.baseline_best.score > 0):
            return None
        return self.best.score / self.baseline_best.score


# ----------------------------------------------------------------------------------------------
# evaluation
class _MemoSolver:
    """Exact solves memoized by instance content (the solve does not depend on x0 or the params)."""

    def __init__(self, base: Callable):
        self.base, self.memo = base, {}

    def __call__(self, inst: Instance, use_cache: bool = True):
        key = inst.content_hash()
        if key not in self.memo:
            self.memo[key] = self.base(inst, use_cache=use_cache)
        return self.memo[key]


def _paper_readings(check: Claim) -> list[str]:
    names = [r.name for r in check.readings if r.paper]
    return names or [r.name for r in check.readings]


def _quick(check: Claim) -> Claim:
    """The claim without its SymPy facts and side conditions (evaluated once, not per instance), solving
    through an in-memory memo."""
    ev = check.evidence
    exp = ev.experiment
    changes = {}
    base = exp._solver() if hasattr(exp, "_solver") else getattr(exp, "solver", None)
    if base is not None:
        changes["solver"] = _MemoSolver(base)
    if hasattr(exp, "side_conditions"):
        changes["side_conditions"] = ()
    return dataclasses.replace(check, symbolic=(), evidence=dataclasses.replace(ev, experiment=dataclasses.replace(exp, **changes)))


def _batchable(check: Claim, cands: Sequence[Candidate]) -> bool:
    from fedcheck.experiments import Rounds
    ev = check.evidence
    return (isinstance(ev.experiment, Rounds) and len(ev.bounds) == 1 and len(ev.experiment.param_grid) == 1
            and all(isinstance(c.instance, Instance) for c in cands))


@dataclass(frozen=True)
class Score:
    """What one evaluation says about one candidate (the runner's judgement, summarized): returned by
    :func:`evaluate_batch`'s tasks, so that they can run in other processes."""

    ratio: float
    verdict: str
    reading: str | None = None
    argmax_round: float | None = None
    reason: str | None = None

    def apply(self, c) -> None:
        c.ratio, c.verdict, c.reading, c.reason = self.ratio, self.verdict, self.reading, self.reason
        if hasattr(c, "argmax_round"):
            c.argmax_round = self.argmax_round


@dataclass(frozen=True)
class EvalConfig:
    """How :func:`evaluate_batch` runs a claim on candidates: rounds per run (``None``: the claim's own, e.g. a
    horizon sweep) and whether the exact solves may use the on-disk cache."""

    rounds: int | None = None
    use_cache: bool = False
    # Dask: with jobs > 1 or a scheduler, each chunk is a task; ``ref`` is how a worker finds the
    # claim (fedcheck.catalog.parallel's reference: by id for the catalog and users' files, else by value) and
    # ``quick`` whether the worker evaluates ``_quick(claim)`` (as the search does here).
    jobs: int = 1
    scheduler: str | None = None
    ref: tuple | None = None
    quick: bool = False

    @property
    def distributed(self) -> bool:
        return self.ref is not None and (self.jobs > 1 or self.scheduler is not None)


def _score_result(check: Claim, res: CheckResult, n: int) -> list[Score]:
    names = _paper_readings(check)
    out = []
    for rec in res.instances[:n]:
        best, where, arg = -math.inf, None, None
        vs = []
        for name in names:
            rd = rec["readings"][name]
            vs.append(rd["verdict"])
            mr = rd.get("max_ratio")
            if mr is not None and np.isfinite(mr) and mr > best:
                best, where, arg = float(mr), name, rd.get("argmax_round")
        feas = (rec.get("feasibility") or {}).get("verdict")
        if check.evidence.feasible and feas:
            vs.append(feas)
        out.append(Score(best if np.isfinite(best) else float("nan"), V.combine(vs), where, arg,
                         rec.get("inconclusive_reason")))
    return out


def _score_single(res: CheckResult) -> Score:
    paper = [(n, r) for n, r in res.readings.items() if r.get("paper")] or list(res.readings.items())
    ratios = [(r["max_ratio"], n) for n, r in paper if r.get("max_ratio") is not None and np.isfinite(r["max_ratio"])]
    ratio, reading = (max(ratios) if ratios else (float("nan"), None))
    return Score(ratio, res.verdict, reading, None, res.reason if res.verdict == V.INCONCLUSIVE else None)


def _config(check: Claim, insts, rounds, params, use_cache) -> RunConfig:
    from fedcheck.experiments import Rounds
    r = rounds if isinstance(check.evidence.experiment, Rounds) else None   # horizons: the claim's own
    return RunConfig(instances=list(insts), rounds=r, params=dict(params), use_cache=use_cache)


def domain_reason(check: Claim, c: Candidate, param_ranges: dict | None = None) -> str | None:
    """``None`` when the candidate lies in the claim's declared domain (its instance and its parameters), else
    why not.  A candidate outside is never run: it can be no refutation."""
    from fedcheck.core.errors import DomainError
    from fedcheck.experiments import param_domain, takes_instance
    try:
        why = takes_instance(check, c.instance)
        for k, v in c.params.items():
            rng = param_ranges[k] if param_ranges is not None and k in param_ranges else param_domain(check, k)
            check.domain.check_param(k, v, rng)
    except DomainError as e:
        return str(e)
    return why


def _evaluate_chunk(check: Claim, chunk: Sequence[Candidate], config: EvalConfig) -> list[Score]:
    """One run of the claim on candidates sharing their parameters (a batch when the experiment allows it):
    a task of :func:`evaluate_batch`, module-level and pure (its scores are returned, nothing is mutated)."""
    try:
        res = check.run(_config(check, [c.instance for c in chunk], config.rounds, dict(chunk[0].params),
                                config.use_cache))
        if len(chunk) == 1 and not _batchable(check, chunk):
            return [_score_single(res)]
        return _score_result(check, res, len(chunk))
    except UserCodeError:   # the user's code fails: their error (exit 2), not a bad instance
        raise
    except Exception as e:  # one bad instance must not end the search: evaluate one by one
        if len(chunk) == 1:
            return [Score(float("nan"), V.INCONCLUSIVE, reason=f"evaluation failed: {type(e).__name__}: {e}")]
        return [s for c in chunk for s in _evaluate_chunk(check, [c], config)]


_REMOTE_CLAIMS: dict = {}


def _evaluate_chunk_remote(ref: tuple, chunk: Sequence[Candidate], config: EvalConfig) -> list[Score]:
    """:func:`_evaluate_chunk` on a Dask worker: the claim found from its reference (once per worker), made
    quick there when the search runs the quick claim.  The scores are the same as in this process: a chunk's
    run depends only on the claim and the candidates."""
    from fedcheck.catalog import parallel
    key = (repr(ref[:2]) if ref[0] == "id" else id(ref[1]), config.quick)
    claim = _REMOTE_CLAIMS.get(key) if ref[0] == "id" else None
    if claim is None:
        claim = parallel._resolve(ref)
        if config.quick:
            claim = _quick(claim)
        if ref[0] == "id":
            _REMOTE_CLAIMS[key] = claim
    return _evaluate_chunk(claim, chunk, dataclasses.replace(config, jobs=1, scheduler=None, ref=None))


def grid_params(check: Claim) -> set:
    """The parameters a claim's ``Rounds(param_grid=...)`` sets itself: searching or passing them changes nothing."""
    exp = getattr(check.evidence, "experiment", None)
    return {k for g in (getattr(exp, "param_grid", None) or ()) for k in g}


def integral_params(check: Claim, params: dict) -> dict:
    """``params`` with the claim's integer parameters (range ``"int ..."``, or an integer symbol such as
    ``fedcheck.symbols.E``) rounded to the nearest integer: what a search draws and reports."""
    from fedcheck.experiments import param_domain
    out = dict(params)
    for k, v in params.items():
        rng = param_domain(check, k)
        if isinstance(rng, str) and rng.strip().startswith("int") and isinstance(v, (float, np.floating)) \
                and np.isfinite(v):
            out[k] = float(round(float(v)))
    return out


def evaluate_batch(check: Claim, cands: Sequence[Candidate], config: EvalConfig) -> list[float]:
    """Evaluate candidates (one generation of a search) through the claim's own runner and verdict policy; fill
    each candidate's ``ratio``/``verdict``/``reading`` and return the ratios (max measured/bound over the
    paper's readings; NaN: not decided).  A candidate outside the claim's domain is rejected, never run.
    Candidates sharing parameters run as one batch when the experiment allows it; the chunks are independent
    tasks (the one place to spread over processes)."""
    from fedcheck.experiments import param_domain
    for c in cands:
        c.params = integral_params(check, c.params)
    ranges = {k: param_domain(check, k) for c in cands for k in c.params}
    run: list[Candidate] = []
    for c in cands:
        why = domain_reason(check, c, ranges)
        if why:
            Score(float("nan"), V.INCONCLUSIVE, reason=f"rejected (never run): {why}").apply(c)
        else:
            run.append(c)
    groups: dict[tuple, list[Candidate]] = {}
    for c in run:
        groups.setdefault(tuple(sorted(c.params.items())), []).append(c)
    chunks = [ch for cs in groups.values() for ch in ([cs] if _batchable(check, cs) else [[c] for c in cs])]
    if config.distributed and chunks:
        from fedcheck.catalog import parallel
        task = functools.partial(_evaluate_chunk_remote, config.ref, config=config)
        results = parallel.map_tasks(task, chunks, jobs=config.jobs, scheduler=config.scheduler)
    else:
        task = functools.partial(_evaluate_chunk, check, config=config)
        results = [task(chunk) for chunk in chunks]
    for chunk, scores in zip(chunks, results):
        for c, s in zip(chunk, scores):
            s.apply(c)
    return [c.ratio for c in cands]


def evaluate(check: Claim, cands: Sequence[Candidate], rounds: int | None, use_cache: bool = False) -> None:
    """Fill ``ratio``/``verdict`` of each candidate (:func:`evaluate_batch` at ``rounds``)."""
    evaluate_batch(check, cands, EvalConfig(rounds, use_cache))


# ----------------------------------------------------------------------------------------------
# drawing and perturbing instances
def _loguniform(rng, lo, hi) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _random_extreme_point(S, rng) -> np.ndarray:
    return np.asarray(S.lmo(rng.standard_normal(S.dim)), dtype=float)


def _in_set(S, x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if not bool(np.all(S.contains(x, 1e-12))):
        x = np.asarray(S.project(x), dtype=float)
    return x


def build_candidate(space: SearchSpace, cfg: dict, params: dict, origin: str, alpha: float | None = None,
                    direction: np.ndarray | None = None, data: Callable | None = None,
                    vector: np.ndarray | None = None) -> Candidate:
    """The candidate of one configuration of the space (``cfg``: set, n, m, p, radius, heterogeneity, noise,
    outside, scale, family_seed): the family's draw at that seed, its data scaled; ``data(A, b) -> (A, b)`` moves
    the data further; with ``alpha`` the start is mixed toward the extreme point of the set in ``direction``."""
    fam = RandomFamily(loss=space.loss, set=cfg["set"], n=cfg["n"], m=cfg["m"], p=cfg["p"], radius=cfg["radius"],
                       heterogeneity=cfg["heterogeneity"], noise=cfg["noise"], outside=cfg["outside"])
    inst = fam.draw(int(cfg["family_seed"]))
    scale = cfg["scale"]
    A = inst.A * scale
    b = inst.b if space.loss == "logistic" else inst.b * scale
    if data is not None:
        A, b = data(A, b)
    x0 = None
    start = "default"
    if alpha is not None:
        base = Instance(A=A, b=b, loss=inst.loss, set=inst.set).start()
        x0 = _in_set(inst.set, (1 - alpha) * base + alpha * np.asarray(inst.set.lmo(direction), dtype=float))
        start = f"random (mix {alpha:.2f} toward an extreme point)"
    config = {k_: cfg[k_] for k_ in ("set", "n", "m", "p", "radius", "heterogeneity", "noise", "outside", "scale",
                                      "family_seed")}
    config["start"] = start
    new = Instance(A=np.ascontiguousarray(A), b=np.ascontiguousarray(b), loss=inst.loss, set=inst.set, seed=None,
                   source=f"search:{origin}", x0=x0,
                   params={k_: (round(v, 6) if isinstance(v, float) else v) for k_, v in config.items()})
    c = Candidate(new, params, origin, config, vector=vector, direction=direction)
    if alpha is not None:
        c.config["alpha"] = alpha
    return c


def draw_candidate(space: SearchSpace, rng: np.random.Generator, k: int) -> Candidate:
    """A random configuration of the space (each range uniform, log-uniform where the space says so)."""
    cfg = {"set": str(rng.choice(space.sets)),
           "n": int(rng.integers(space.n[0], space.n[1] + 1)),
           "m": int(rng.integers(space.m[0], space.m[1] + 1)),
           "p": int(rng.integers(space.p[0], space.p[1] + 1)),
           "radius": _loguniform(rng, *space.radius),
           "heterogeneity": float(rng.uniform(*space.heterogeneity)),
           "noise": float(rng.uniform(*space.noise)),
           "outside": _loguniform(rng, *space.outside),
           "scale": _loguniform(rng, *space.scale)}
    cfg["family_seed"] = int(rng.integers(0, 2**31 - 1))
    alpha = direction = None
    if rng.uniform() < space.random_start:
        alpha = float(rng.uniform())
        direction = rng.standard_normal(cfg["p"])
    params = {k_: _loguniform(rng, *r) for k_, r in space.params.items()}
    return build_candidate(space, cfg, params, f"random #{k}", alpha, direction)


def family_ranges(check: Claim, fam) -> dict:
    """The numeric fields of a (dataclass) family that the claim's domain declares free, with their ranges
    (an open end stays at the family's own value): ``{name: (lo, hi, is_int)}``."""
    out = {}
    if dataclasses.is_dataclass(fam):
        for f in dataclasses.fields(fam):
            rng_ = check.domain.free.get(f.name)
            v = getattr(fam, f.name)
            if rng_ is None or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            lo, hi = rng_
            out[f.name] = (v if lo is None else lo, v if hi is None else hi, isinstance(v, int))
    return out


def draw_generic(check: Claim, rng: np.random.Generator, k: int, space: SearchSpace) -> Candidate:
    """A candidate from one of the claim's own families, with the numeric fields the domain declares free
    drawn in their ranges (everything else as declared), at a random seed."""
    fams = families_of(check)
    base = fams[int(rng.integers(len(fams)))]
    changes = {}
    for name, (lo, hi, is_int) in family_ranges(check, base).items():
        changes[name] = int(rng.integers(int(lo), int(hi) + 1)) if is_int else float(rng.uniform(lo, hi))
    fam = dataclasses.replace(base, **changes) if changes else base
    seed = int(rng.integers(0, 2**31 - 1))
    inst = call_user(fam.draw, seed, role="instance family")
    params = {k_: _loguniform(rng, *r) for k_, r in space.params.items()}
    return Candidate(inst, params, f"random #{k}", {"family": getattr(fam, "label", type(fam).__name__),
                                                   "family_seed": seed, **changes}, family=base)


def _describe(inst) -> dict:
    props = inst.properties() if hasattr(inst, "properties") else {}
    return props


def _rms(x) -> float:
    v = float(np.sqrt(np.mean(np.square(x)))) if np.size(x) else 0.0
    return v if v > 0 else 1.0


def mutate(c: Candidate, sigma: float, rng: np.random.Generator, space: SearchSpace, origin: str,
           what: str = "all") -> Candidate:
    """A perturbed copy: data (``what`` in all/data), radius and starting point (all), params (all/params)."""
    inst = c.instance
    A, b, S, x0 = inst.A, inst.b, inst.set, inst.x0
    params = dict(c.params)
    if what in ("all", "data"):
        A = A + sigma * _rms(A) * rng.standard_normal(A.shape)
        if inst.loss == "logistic":
            flip = rng.uniform(size=b.shape) < min(0.5, sigma / 4)
            b = np.where(flip, -b, b)
        else:
            b = b + sigma * _rms(b) * rng.standard_normal(b.shape)
    if what == "all":
        r_old = float(S.radius)
        r = float(np.clip(r_old * math.exp(0.5 * sigma * rng.standard_normal()), *space.radius))
        S = make_set(S.name, r, inst.p)
        start = inst.start() * (r / r_old)   # the sets scale with their radius
        if space.random_start > 0 and rng.uniform() < 0.5:
            alpha = min(1.0, sigma * abs(rng.standard_normal()))
            start = (1 - alpha) * start + alpha * _random_extreme_point(S, rng)
        x0 = _in_set(S, start)
    if what in ("all", "params"):
        for k, (lo, hi) in space.params.items():
            if k in params:
                params[k] = float(np.clip(params[k] * math.exp(sigma * rng.standard_normal()), lo, hi))
    new = Instance(A=A, b=b, loss=inst.loss, set=S, seed=None, source=f"search:{origin}", x0=x0,
                   params=dict(inst.params), weights=getattr(inst, "weights", None))
    return Candidate(new, params, origin, dict(c.config))


def restrict(c: Candidate, axis: str, keep: Sequence[int], origin: str) -> Candidate:
    """The candidate with only the kept clients / samples / coordinates."""
    inst = c.instance
    keep = np.asarray(sorted(keep), dtype=int)
    A, b, S, x0, w = inst.A, inst.b, inst.set, inst.x0, getattr(inst, "weights", None)
    if axis == "clients":
        A, b = A[keep], b[keep]
        w = None if w is None else w[keep] / w[keep].sum()      # the kept clients' p_k, renormalized
    elif axis == "samples":
        A, b = A[:, keep], b[:, keep]
    elif axis == "dims":
        A = A[:, :, keep]
        S = make_set(S.name, float(S.radius), len(keep))
        x0 = None if x0 is None else _in_set(S, x0[keep])
    else:
        raise ValueError(axis)
    new = Instance(A=np.ascontiguousarray(A), b=np.ascontiguousarray(b), loss=inst.loss, set=S, seed=None,
                   source=f"search:{origin}", x0=x0, params=dict(inst.params), weights=w)
    return Candidate(new, dict(c.params), origin, dict(c.config))


# ----------------------------------------------------------------------------------------------
# CMA-ES (the `cma` package) over a continuous encoding of the candidates around a starting point
class _Coords:
    """Named blocks of CMA-ES coordinates with their bounds, in units where the initial step is 1."""

    def __init__(self):
        self.blocks: list[tuple[str, int, float, float, float]] = []   # name, size, lo, hi (real units), unit

    def add(self, name: str, size: int, lo: float, hi: float, unit: float) -> None:
        if size > 0 and hi > lo:
            self.blocks.append((name, int(size), min(lo, 0.0), max(hi, 0.0), float(unit)))

    @property
    def dim(self) -> int:
        return sum(b[1] for b in self.blocks)

    def bounds(self) -> list:
        lo = [b[2] / b[4] for b in self.blocks for _ in range(b[1])]
        hi = [b[3] / b[4] for b in self.blocks for _ in range(b[1])]
        return [lo, hi]

    def split(self, x: np.ndarray) -> dict:
        """Real values of each block (clipped into its bounds: nothing leaves the declared ranges)."""
        out, k = {}, 0
        for name, size, lo, hi, unit in self.blocks:
            out[name] = np.clip(np.asarray(x[k:k + size], dtype=float) * unit, lo, hi)
            k += size
        return out

    def record(self) -> list:
        return [{"block": b[0], "size": b[1], "range": [b[2], b[3]], "unit": b[4]} for b in self.blocks]


def _embedding(size: int, k_max: int, rng: np.random.Generator) -> tuple[np.ndarray | None, int]:
    """A block of ``size`` numbers moved by ``k`` coordinates: all of them (``None``: the identity) when
    ``size <= k_max``, else a random ``k_max``-dimensional subspace scaled so that unit coordinates move each
    number by about one unit (a random embedding: each restart draws its own)."""
    if size <= k_max:
        return None, size
    return rng.standard_normal((size, k_max)) / math.sqrt(k_max), k_max


def _embed(E: np.ndarray | None, z: np.ndarray, shape) -> np.ndarray:
    return (z if E is None else E @ z).reshape(shape)


def _param_coords(coords: _Coords, params: dict, ranges: dict) -> None:
    for k, (lo, hi) in ranges.items():
        if k in params and hi > lo and float(params[k]) > 0:
            coords.add(f"param:{k}", 1, math.log(lo / params[k]), math.log(hi / params[k]), 0.5)


def _decode_params(vals: dict, params: dict, ranges: dict) -> dict:
    out = dict(params)
    for k, (lo, hi) in ranges.items():
        if f"param:{k}" in vals:
            out[k] = float(np.clip(params[k] * math.exp(float(vals[f"param:{k}"][0])), lo, hi))
    return out


class InstanceEncoding:
    """A continuous encoding of an :class:`Instance` around a starting candidate, for CMA-ES, inside the search
    space (hence the claim's domain).  Every coordinate moves the instance smoothly (common random numbers: a
    family redraw would change all of its data at once, and CMA-ES could learn nothing); each is mapped into its
    range by cma's bounded transform and clipped again on decoding:

    * the positive parameters, the radius of the set and the data scale (log, in their ranges);
    * the data: ``A`` along ``2 data_dims`` random directions and ``b`` along ``data_dims`` (labels of a
      logistic loss flip by sign), in units of their RMS; for least squares a shift of the data's own optimum,
      common to the clients (``b_i += A_i delta``, "outside") and per client (``b_i += A_i delta_i``,
      "heterogeneity"), ``data_dims`` directions each, in units of the radius;
    * the clients' start (only when the domain declares ``x0`` free): ``data_dims`` directions, projected onto
      the set.

    The directions are a random embedding of the data arrays, drawn once per restart (identity when a block
    has no more numbers than directions).  Discrete properties (set, n, m, p) stay those of the start: the
    search's outer loop (random draws, then restarts from the best) chooses them."""

    def __init__(self, start: Candidate, space: SearchSpace, ss: np.random.SeedSequence, data_dims: int = 4):
        inst = start.instance
        rng = np.random.default_rng(ss)
        self.start, self.space = start, space
        self.r0 = float(inst.set.radius)
        self.s0 = float(start.config.get("scale", 1.0))
        self.least_squares = inst.loss != "logistic"
        c = self.coords = _Coords()
        _param_coords(c, start.params, space.params)
        c.add("radius", 1, math.log(space.radius[0] / self.r0), math.log(space.radius[1] / self.r0), 0.5)
        c.add("scale", 1, math.log(space.scale[0] / self.s0), math.log(space.scale[1] / self.s0), 0.5)
        k = max(0, int(data_dims))
        self.E = {}

        def block(name, size, dims, lo, hi, unit):
            if dims > 0:
                self.E[name], d = _embedding(size, dims, rng)
                c.add(name, d, lo, hi, unit)
        block("A", inst.A.size, 2 * k, -3.0, 3.0, 0.3)
        block("b", inst.b.size, k, -3.0, 3.0, 0.3)
        if self.least_squares:
            block("shift", inst.p, k, -3.0, 3.0, 0.3)
            if inst.n > 1:
                block("client_shift", inst.n * inst.p, k, -3.0, 3.0, 0.3)
        if space.random_start > 0:
            block("x0", inst.p, k, -2.0, 2.0, 0.3)
        self.rmsA, self.rmsb = _rms(inst.A), _rms(inst.b)

    @property
    def dim(self) -> int:
        return self.coords.dim

    def decode(self, x: np.ndarray, origin: str) -> Candidate:
        v = self.coords.split(x)
        inst = self.start.instance
        n, p = inst.n, inst.p
        params = _decode_params(v, self.start.params, self.space.params)
        r = self.r0 * math.exp(float(v["radius"][0])) if "radius" in v else self.r0
        r = float(np.clip(r, *self.space.radius))
        s = math.exp(float(v["scale"][0])) if "scale" in v else 1.0
        A = inst.A + self.rmsA * _embed(self.E["A"], v["A"], inst.A.shape) if "A" in v else inst.A
        if self.least_squares:
            b = inst.b + self.rmsb * _embed(self.E["b"], v["b"], inst.b.shape) if "b" in v else inst.b
            W = np.zeros((n, p))
            if "shift" in v:
                W = W + r * _embed(self.E["shift"], v["shift"], (p,))
            if "client_shift" in v:
                W = W + r * _embed(self.E["client_shift"], v["client_shift"], (n, p))
            if "shift" in v or "client_shift" in v:
                b = b + np.einsum("nmp,np->nm", A, W)
            b = b * s
        else:
            b = np.where(inst.b + _embed(self.E["b"], v["b"], inst.b.shape) >= 0, 1.0, -1.0) if "b" in v else inst.b
        A = A * s
        S = inst.set if r == self.r0 else make_set(inst.set.name, r, p)
        x0 = inst.x0
        if "x0" in v or (x0 is not None and r != self.r0):
            base = inst.start() * (r / self.r0)           # the sets scale with their radius
            x0 = _in_set(S, base + (r * _embed(self.E["x0"], v["x0"], (p,)) if "x0" in v else 0.0))
        new = Instance(A=np.ascontiguousarray(A), b=np.ascontiguousarray(b), loss=inst.loss, set=S, seed=None,
                       source=f"search:{origin}", x0=x0, params=dict(inst.params), weights=getattr(inst, "weights", None))
        cfg = dict(self.start.config)
        cfg.update({"radius": r, "scale": self.s0 * s})
        return Candidate(new, params, origin, cfg, vector=np.array(x, dtype=float))


class FamilyEncoding:
    """A continuous encoding of a candidate of the claim's own (generic) family: the numeric fields its domain
    declares free (integers rounded) and the positive parameters (log), at the start's family seed."""

    def __init__(self, check: Claim, start: Candidate, space: SearchSpace):
        self.check, self.start, self.space = check, start, space
        self.base = start.family if start.family is not None else families_of(check)[0]
        self.ranges = family_ranges(check, self.base)
        self.values = {k: start.config.get(k, getattr(self.base, k)) for k in self.ranges}
        c = self.coords = _Coords()
        _param_coords(c, start.params, space.params)
        for k, (lo, hi, is_int) in self.ranges.items():
            if not hi > lo:
                continue
            v0 = float(self.values[k])
            pad = 0.499 if is_int else 0.0
            c.add(f"field:{k}", 1, lo - pad - v0, hi + pad - v0, max((hi - lo) / 6.0, 0.5 if is_int else 1e-12))

    @property
    def dim(self) -> int:
        return self.coords.dim

    def decode(self, x: np.ndarray, origin: str) -> Candidate:
        v = self.coords.split(x)
        params = _decode_params(v, self.start.params, self.space.params)
        changes = {}
        for k, (lo, hi, is_int) in self.ranges.items():
            val = float(self.values[k]) + (float(v[f"field:{k}"][0]) if f"field:{k}" in v else 0.0)
            changes[k] = int(np.clip(round(val), lo, hi)) if is_int else float(np.clip(val, lo, hi))
        fam = dataclasses.replace(self.base, **changes) if changes else self.base
        seed = int(self.start.config["family_seed"])
        cfg = {**self.start.config, **changes}
        return Candidate(fam.draw(seed), params, origin, cfg, family=self.base, vector=np.array(x, dtype=float))


def _cma_seed(ss: np.random.SeedSequence) -> int:
    """cma's ``seed`` option from a SeedSequence (cma takes 0 for 'the clock': never 0)."""
    return int(ss.generate_state(1, dtype=np.uint32)[0]) % (2**31 - 2) + 1


def cma_maximize(encoding, evaluate_fn: Callable[[list], list], budget: int, ss: np.random.SeedSequence,
                 record: Callable[[list, str], None], phase: str, popsize: int | None = None) -> dict:
    """Maximize the candidates' ratio with CMA-ES (``cma``) over ``encoding``'s coordinates, from its start
    (coordinates 0) with step 1, inside its bounds (cma's ``BoundTransform``), for exactly ``budget``
    evaluations: each generation is decoded and evaluated through ``evaluate_fn`` (one call per generation).
    A non-finite ratio (inconclusive, rejected) ranks last.  When cma stops early it restarts from the best
    point with a fresh step.  Seeded from ``ss``: cma's ``seed`` option and its normal draws (``randn``) come
    from it, so the run does not depend on numpy's global state.  Returns what it did."""
    import cma
    import warnings
    dim = encoding.dim
    lo, hi = encoding.coords.bounds()
    lam = popsize or int(4 + 3 * math.log(max(dim, 1)))
    lam = max(2, min(lam, max(4, budget // 10)))    # small budgets: more generations of fewer candidates
    used, gens, runs, best_x, best_score = 0, 0, 0, np.zeros(dim), -math.inf
    while used < budget:
        ss_run, ss = ss.spawn(2)
        gen_rng = np.random.default_rng(ss_run)
        opts = {"seed": _cma_seed(ss_run), "randn": lambda lam_, n_, g=gen_rng: g.standard_normal((lam_, n_)),
                "bounds": [lo, hi], "popsize": lam, "verbose": -9, "verb_log": 0, "verb_disp": 0,
                "CMA_diagonal": dim > 40}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            es = cma.CMAEvolutionStrategy(best_x.tolist(), 1.0, opts)
        runs += 1
        while used < budget:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                X = es.ask()
            gens += 1
            k = min(len(X), budget - used)
            cands = [encoding.decode(np.asarray(x, dtype=float), f"{phase} gen {gens}") for x in X[:k]]
            evaluate_fn(cands)
            record(cands, phase)
            used += k
            for c in cands:
                if c.score > best_score:
                    best_score, best_x = c.score, np.asarray(c.vector, dtype=float)
            if k < len(X):
                break
            worst = min((c.score for c in cands if np.isfinite(c.score)), default=0.0)
            f = [-c.score if np.isfinite(c.score) else -worst + 1.0 + abs(worst) for c in cands]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                es.tell(X, f)
                if es.stop():
                    break
    return {"dim": dim, "popsize": lam, "generations": gens, "cma_runs": runs, "evaluations": used,
            "coordinates": encoding.coords.record()}


# ----------------------------------------------------------------------------------------------
def shrink(check: BoundCheck, cand: Candidate, rounds: int, budget: int = 60,
           log: Callable[[str], None] | None = None) -> tuple[Candidate, list]:
    """Delta debugging: remove chunks of clients, samples and coordinates while the bound stays violated.

    Returns the smallest violating candidate found within ``budget`` evaluations and the steps taken."""
    steps, used = [], 0
    axes = (("clients", lambda c: c.instance.n), ("samples", lambda c: c.instance.m),
            ("dims", lambda c: c.instance.p))
    progress = True
    while progress and used < budget:
        progress = False
        for axis, size_of in axes:
            size = size_of(cand)
            chunk = max(1, size // 2)
            while size > 1 and chunk >= 1 and used < budget:
                removed_any = False
                start = 0
                while start < size and size > 1 and used < budget:
                    drop = set(range(start, min(size, start + chunk)))
                    keep = [i for i in range(size) if i not in drop]
                    if not keep:
                        start += chunk
                        continue
                    trial = restrict(cand, axis, keep, f"shrink {axis}")
                    evaluate(check, [trial], rounds)
                    used += 1
                    if trial.verdict == V.VIOLATED:
                        steps.append({"axis": axis, "removed": len(drop), "n": trial.instance.n,
                                      "m": trial.instance.m, "p": trial.instance.p, "ratio": trial.ratio})
                        if log:
                            log(f"  shrink: {axis} -{len(drop)} -> {trial.short()} still violated "
                                f"(ratio {trial.ratio:.4g})")
                        cand, size, removed_any, progress = trial, len(keep), True, True
                    else:
                        start += chunk
                if not removed_any:
                    if chunk == 1:
                        break
                    chunk //= 2
                else:
                    chunk = max(1, min(chunk, size // 2))
    return cand, steps


# ----------------------------------------------------------------------------------------------
RANDOM_FRACTION = {"cma": 0.25, "perturb": 0.5, "random": 1.0}    # the budget's share of random draws, by method


def search(check: Check, budget: int = 200, restarts: int | None = None, seed: int = 0, rounds: int | None = None,
           space: SearchSpace | None = None, random_fraction: float | None = None, offspring: int = 4,
           verify_rounds: int | None = None, do_shrink: bool = True, shrink_budget: int = 60,
           baseline: bool = True, out: str | Path | None = None, use_cache: bool = True,
           log: Callable[[str], None] | None = None, method: str = "cma", data_dims: int = 4,
           popsize: int | None = None, jobs: int = 1, scheduler: str | None = None,
           theorem_files: Sequence[str] = ()) -> SearchOutcome:
    """Search the instance space for the largest measured/bound of ``check`` (see the module doc).

    ``method``: ``"cma"`` (default: a screening of random draws, then CMA-ES from the best ``restarts``
    structures), ``"perturb"`` (random draws, then (1+lambda) perturbations), ``"random"`` (random draws from
    the domain only).  ``budget`` is the number of claim evaluations, the same for every method;
    ``random_fraction``: the share of random draws (default 0.25 for cma, 0.5 for perturb).  ``jobs`` /
    ``scheduler``: each batch of candidates (a random screen, a CMA-ES generation, the baseline) runs as Dask
    tasks (:func:`fedcheck.catalog.parallel.map_tasks`); the random draws stay in this process, so the result is
    the same, bit for bit, as a serial search."""
    why = searchable(check)
    if why:
        raise NotSearchable(why)
    if not instance_searchable(check):
        raise NotSearchable(f"{check.id}'s experiment builds its own cases: search its seeds and parameters with "
                            "search_seeds (what 'fedcheck search' does for it)")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if budget < 2:
        raise ValueError("budget must be >= 2 (instances evaluated)")
    t_start = time.perf_counter()
    log = log or (lambda s: None)
    space = space or SearchSpace.for_check(check)
    restarts = int(restarts if restarts is not None else (3 if method == "cma" else 4))
    if random_fraction is None:
        random_fraction = RANDOM_FRACTION[method]
    if method == "random":
        random_fraction = 1.0
    exp = check.evidence.experiment
    normal = exp.rounds_for(RunConfig()) if hasattr(exp, "rounds_for") else None
    rounds = int(rounds or min(int(normal), 1000)) if normal else rounds
    verify_rounds = int(verify_rounds or normal) if normal else verify_rounds
    check_budget(budget, rounds, baseline)
    family = families_of(check)[0]
    structured = isinstance(family, RandomFamily)    # Instance problems: rich perturbations and shrinking
    quick = _quick(check)
    ss_space, ss_local, ss_base, ss_cma = np.random.SeedSequence(int(seed)).spawn(4)
    rng, lrng = np.random.default_rng(ss_space), np.random.default_rng(ss_local)
    ref = None
    if jobs > 1 or scheduler is not None:
        from fedcheck.catalog import parallel
        ref = parallel._references([check], theorem_files)[0]
    eval_config = EvalConfig(rounds, False, jobs=jobs, scheduler=scheduler, ref=ref, quick=True)
    trajectory: list[dict] = []
    best: Candidate | None = None
    local_log: list[dict] = []

    def record(cs: Sequence[Candidate], phase: str):
        nonlocal best
        for c in cs:
            if best is None or c.score > best.score:
                best = c
            trajectory.append({"evaluation": len(trajectory) + 1, "phase": phase, "ratio": c.ratio,
                               "best": best.ratio, "verdict": c.verdict, "origin": c.origin,
                               "instance": c.short()})

    def draw(g, k):
        return draw_candidate(space, g, k) if structured else draw_generic(check, g, k, space)

    # -- 1. random draws from the domain (the whole budget for "random")
    n_random = max(1, min(budget, int(round(budget * random_fraction))))
    restarts = max(1, min(restarts, n_random))
    if method == "cma":
        n_random = max(1, min(budget - 1, n_random))
        # each restart needs generations to learn from: at least ~40 evaluations apiece
        restarts = max(1, min(restarts, n_random, (budget - n_random) // 40))
    log(f"search {check.id} ({method}): budget {budget} ({n_random} random"
        + (f", {budget - n_random} local in {restarts} restart(s)" if budget > n_random else "")
        + f"), {rounds} rounds per evaluation, seed {seed}")
    # drawn and evaluated in batches of 8 (streamed: memory does not grow with the budget); kept: the best
    # `restarts` distinct configurations, in the order a stable sort of all of them by score would give
    top: dict[str, tuple] = {}          # content hash -> (-score, draw index, candidate)
    first = None
    for k in range(0, n_random, 8):
        chunk = [draw(rng, j + 1) for j in range(k, min(k + 8, n_random))]
        evaluate_batch(quick, chunk, eval_config)
        record(chunk, "random")
        first = first or chunk[0]
        for j, c in enumerate(chunk):
            if not np.isfinite(c.ratio):
                continue
            key, rank = c.instance.content_hash(), (-c.score, k + j)
            if key not in top or rank < top[key][:2]:
                top[key] = (*rank, c)
        if len(top) > restarts:
            top = dict(sorted(top.items(), key=lambda kv: kv[1][:2])[:restarts])
    log(f"  random draws: best ratio {best.ratio:.4g} ({best.short()})")
    # -- 2. local phase from the best distinct configurations
    starts = [v[2] for v in sorted(top.values(), key=lambda v: v[:2])][:restarts]
    if not starts and budget > n_random:     # nothing decided yet: start from the first draw anyway
        starts = [first]
    left = budget - n_random
    if method == "cma":
        for q, start in enumerate(starts):
            share = left // (len(starts) - q)
            left -= share
            ss_q = ss_cma.spawn(1)[0]
            enc = (InstanceEncoding(start, space, ss_q.spawn(1)[0], data_dims)
                   if structured and isinstance(start.instance, Instance) else FamilyEncoding(check, start, space))
            phase = f"cma restart {q + 1}"
            if enc.dim == 0:        # nothing continuous to move: the rest of this share are random draws
                more = [draw(lrng, len(trajectory) + k + 1) for k in range(share)]
                evaluate_batch(quick, more, eval_config)
                record(more, "random (no continuous coordinates)")
                local_log.append({"restart": q + 1, "start": start.short(), "dim": 0, "evaluations": share})
                continue
            info = cma_maximize(enc, lambda cs: evaluate_batch(quick, cs, eval_config), share, ss_q, record, phase,
                                popsize)
            local_log.append({"restart": q + 1, "start": start.short(), **info})
            log(f"  {phase}: {info['generations']} generations of {info['popsize']} in {info['dim']} coordinates; "
                f"best so far {best.ratio:.4g} ({best.short()})")
    elif method == "perturb":
        for q, parent in enumerate(starts):
            share = left // (len(starts) - q)
            left -= share
            sigma, used, gen = 0.3, 0, 0
            while used < share:
                gen += 1
                lam = min(offspring, share - used)
                what = "params" if (space.params and gen % 3 == 0) else "all"
                kids = [mutate(parent, sigma, lrng, space, f"restart {q + 1} gen {gen}", what)
                        if isinstance(parent.instance, Instance) else draw_generic(check, lrng, len(trajectory) + 1, space)
                        for _ in range(lam)]
                evaluate_batch(quick, kids, eval_config)
                record(kids, "local")
                used += lam
                top = max(kids, key=lambda c: c.score)
                if top.score > parent.score:
                    parent, sigma = top, min(2.0, sigma * 1.5)
                else:
                    sigma = max(1e-3, sigma * 0.6)
            local_log.append({"restart": q + 1, "evaluations": share, "ratio": parent.ratio})
            log(f"  restart {q + 1}: ratio {parent.ratio:.4g} ({parent.short()})")
    assert best is not None
    # -- baseline: the same number of draws from the check's own family, default params
    baseline_traj: list[dict] = []
    baseline_best = None
    if baseline:
        brng = np.random.default_rng(ss_base)
        seeds = brng.integers(0, 2**31 - 1, size=budget)
        for k in range(0, budget, 16):      # drawn and evaluated in batches of 16 (streamed)
            bcands = [Candidate(call_user(family.draw, int(s), role="instance family"), dict(check.params),
                                f"family seed {int(s)}") for s in seeds[k:k + 16]]
            evaluate_batch(quick, bcands, eval_config)
            for c in bcands:
                if baseline_best is None or c.score > baseline_best.score:
                    baseline_best = c
                baseline_traj.append({"evaluation": len(baseline_traj) + 1, "ratio": c.ratio,
                                      "best": baseline_best.ratio, "seed": c.instance.seed})
        log(f"  baseline ({budget} draws of the check's family): best ratio {baseline_best.ratio:.4g}")
    outcome = SearchOutcome(check.id, best, baseline_best, trajectory, baseline_traj,
                            settings={"method": method, "budget": budget, "restarts": restarts, "seed": int(seed),
                                      "search_rounds": rounds, "verify_rounds": verify_rounds,
                                      "random_evaluations": n_random, "local_evaluations": budget - n_random,
                                      "offspring": offspring if method == "perturb" else None,
                                      "data_dims": data_dims if method == "cma" else None,
                                      "local": local_log, "space": space.record()})
    # -- 3. save and re-verify the worst instance (through the file, as a user would)
    out = Path(out) if out is not None else None
    worst_inst = best.instance
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        paths = best.instance.save(str(out / "worst"))
        outcome.files["worst_instance"] = str(paths[0]) if paths else None
        if isinstance(best.instance, Instance) and paths:
            worst_inst = load_instance(paths[0])       # re-verified through the file, as a user would
    res = check.run(RunConfig(instances=[worst_inst], rounds=verify_rounds, params=dict(best.params),
                              use_cache=use_cache, save_dir=None))
    outcome.verified = res
    outcome.verified_ratio = res.max_ratio
    log(f"  worst instance re-verified at {verify_rounds} rounds: {res.verdict}, max ratio {format_value(res.max_ratio)}")
    # -- 4. shrink a violating instance
    if do_shrink and res.verdict == V.VIOLATED and isinstance(best.instance, Instance):
        # shrink at the search's rounds when the violation already shows there, else at the verification's
        small, steps = shrink(quick, best, rounds if best.verdict == V.VIOLATED else verify_rounds, shrink_budget, log)
        outcome.shrink_log = steps
        if steps:
            inst = small.instance
            if out is not None:
                path = save_instance(small.instance, out / "worst-shrunk.npz")
                outcome.files["shrunk_instance"] = str(path)
                inst = load_instance(path)
            outcome.shrunk = small
            outcome.shrunk_verified = check.run(RunConfig(instances=[inst], rounds=verify_rounds,
                                                          params=dict(small.params), use_cache=use_cache))
            log(f"  shrunk to {small.short()}: {outcome.shrunk_verified.verdict} at {verify_rounds} rounds")
    outcome.seconds = time.perf_counter() - t_start
    return outcome


# ----------------------------------------------------------------------------------------------
# what a budget costs, before anything is drawn
EVALUATION_BYTES = 2000     # kept per evaluation: its search and baseline trajectory records and their JSON
                            # (1.4 kB measured with tracemalloc over 20,000 evaluations, with a margin)
ROUND_SECONDS = 1e-6        # a floor on one round of one instance (the smallest instances take >= 10 us)
MAX_SECONDS = 7 * 86400.0   # a search estimated, from that floor, to take more than a week is refused


def check_budget(budget: int, rounds: int | None, baseline: bool = True) -> None:
    """Refuse (:class:`BadInput`, one line) a budget whose records would not fit in memory, or whose evaluations
    would take longer than :data:`MAX_SECONDS` even at :data:`ROUND_SECONDS` a round -- before anything runs (the
    candidates themselves are drawn and evaluated in small batches: their memory does not grow with the budget)."""
    from fedcheck.catalog.inputs import available_memory
    evaluations = int(budget) * (2 if baseline else 1)
    need = float(budget) * EVALUATION_BYTES
    avail = available_memory()
    if avail and need > 0.5 * avail:
        raise BadInput(f"--budget {budget}: the search would keep about {need / 2**30:.3g} GiB of records (about "
                       f"{avail / 2**30:.3g} GiB of memory available); use a smaller budget")
    secs = evaluations * max(int(rounds or 1), 1) * ROUND_SECONDS
    if secs > MAX_SECONDS:
        raise BadInput(f"--budget {budget}: {evaluations} evaluations of {rounds or 1} rounds would take at least "
                       f"{secs / 86400:.3g} days; use a smaller budget or fewer --rounds")


def _stem(check_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in check_id)


def format_value(x, spec=".4g") -> str:
    """A ratio or round as the search's logs and ``fedcheck search`` print it (``-`` for none or not finite)."""
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


# ----------------------------------------------------------------------------------------------
# outputs: the search JSON and a results entry for the reports
def _param_args(params: dict) -> str:
    # exact: reproduces the run; an integer value (an integer parameter: E, K, ...) is printed as one
    return "".join(f" --param {k}={_exact(v)}" for k, v in params.items())


def _exact(v) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() and abs(f) < 2 ** 53 else repr(f)


def _file_args(check_id: str) -> str:
    """`` --theorem-file PATH`` when ``check_id`` is declared in a user's theorem file loaded in this process (a
    rerun command must load it again), else nothing."""
    import shlex
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if not name.startswith("fedcheck_user_") or not f:
            continue
        with contextlib.suppress(Exception):
            if any(isinstance(v, Claim) and v.id == check_id for v in vars(mod).values()):
                return f" --theorem-file {shlex.quote(os.path.abspath(f))}"
    return ""


def rerun_command(check_id: str, path: str | None, params: dict, default_params: dict) -> str | None:
    if not path:
        return None
    changed = {k: v for k, v in params.items() if default_params.get(k) != v}
    return f"fedcheck verify {check_id}{_file_args(check_id)} --instance {path}{_param_args(changed)}"


def search_document(outcome: SearchOutcome, check: BoundCheck) -> dict:
    """The trajectory JSON (``schema fedcheck.search/1``)."""
    from fedcheck.core.claim import jsonable as _jsonable
    b = outcome.best
    doc = {
        "schema": SCHEMA, "check": outcome.check_id, "settings": outcome.settings,
        "best": {"ratio_search_rounds": b.ratio, "verdict_search_rounds": b.verdict, "reading": b.reading,
                 "argmax_round": b.argmax_round, "instance": b.describe(),
                 "ratio_verified": outcome.verified_ratio,
                 "verdict_verified": outcome.verified.verdict if outcome.verified else None,
                 "file": outcome.files.get("worst_instance"),
                 "rerun": rerun_command(check.id, outcome.files.get("worst_instance"), b.params, check.params)},
        "baseline_best": None if outcome.baseline_best is None else {
            "ratio": outcome.baseline_best.ratio, "seed": outcome.baseline_best.instance.seed,
            "family": getattr(families_of(check)[0], "key", str(families_of(check)[0]))},
        "improvement": outcome.improvement,
        "trajectory": {"search": outcome.trajectory, "baseline": outcome.baseline},
        "shrink": None if outcome.shrunk is None else {
            "steps": outcome.shrink_log, "instance": outcome.shrunk.describe(),
            "file": outcome.files.get("shrunk_instance"),
            "verdict_verified": outcome.shrunk_verified.verdict if outcome.shrunk_verified else None,
            "rerun": rerun_command(check.id, outcome.files.get("shrunk_instance"), outcome.shrunk.params,
                                   check.params)},
        "seconds": outcome.seconds,
    }
    return _jsonable(doc)


def search_result(outcome: SearchOutcome, check: BoundCheck) -> dict:
    """A results entry (``CheckResult.to_dict()`` of the worst instance's re-verification) with the
    search in its ``series``, ``tables`` and ``evidence``: what ``fedcheck report`` renders."""
    res = outcome.verified.to_dict()
    b, bb = outcome.best, outcome.baseline_best
    res["id"] = f"{check.id}.search"
    res["title"] = f"{check.title} -- adversarial search (worst of {outcome.settings['budget']} searched instances)"
    srch = [t["best"] for t in outcome.trajectory]
    series = [{"panel": "adversarial search: best measured / bound so far",
               "label": f"search ({_METHOD_LABEL.get(outcome.settings.get('method'), 'random + local')})",
               "x": [t["evaluation"] for t in outcome.trajectory], "y": srch, "role": "measured",
               "xlabel": "instances evaluated", "ylabel": "best max ratio", "logx": False, "logy": True}]
    if outcome.baseline:
        series.append({"panel": "adversarial search: best measured / bound so far",
                       "label": "random draws of the check's family", "x": [t["evaluation"] for t in outcome.baseline],
                       "y": [t["best"] for t in outcome.baseline], "role": "baseline",
                       "xlabel": "instances evaluated", "ylabel": "best max ratio", "logx": False, "logy": True})
    series.append({"panel": "adversarial search: best measured / bound so far", "label": "ratio 1 (the bound)",
                   "x": [1, outcome.settings["budget"]], "y": [1.0, 1.0], "role": "reference",
                   "xlabel": "instances evaluated", "ylabel": "best max ratio", "logx": False, "logy": True})
    res["series"] = list(res.get("series") or []) + series
    rows = [["random draws of the check's family (baseline)", len(outcome.baseline),
             bb.ratio if bb else None, f"family seed {bb.instance.seed}" if bb else "-"],
            [f"adversarial search ({outcome.settings.get('method', 'perturb')})", len(outcome.trajectory), b.ratio,
             b.short()],
            [f"worst instance re-verified at {outcome.settings['verify_rounds']} rounds", 1, outcome.verified_ratio,
             outcome.verified.verdict]]
    if outcome.shrunk is not None:
        rows.append(["smallest violating instance (shrunk)", len(outcome.shrink_log), outcome.shrunk.ratio,
                     outcome.shrunk.short() + (f" ({outcome.shrunk_verified.verdict} at full rounds)"
                                               if outcome.shrunk_verified else "")])
    res["tables"] = list(res.get("tables") or []) + [
        {"title": "Adversarial search vs random draws (max measured / bound, the paper's readings)",
         "columns": ["what", "instances", "max ratio", "instance"], "rows": [[_cell(v) for v in r] for r in rows]}]
    ev = dict(res.get("evidence") or {})
    ev["search"] = {"method": outcome.settings.get("method"), "budget": outcome.settings["budget"],
                    "seed": outcome.settings["seed"],
                    "restarts": outcome.settings["restarts"], "search_rounds": outcome.settings["search_rounds"],
                    "best_ratio_search_rounds": b.ratio, "best_ratio_verified": outcome.verified_ratio,
                    "baseline_best_ratio": bb.ratio if bb else None, "improvement_over_random": outcome.improvement,
                    "worst_instance": outcome.files.get("worst_instance"),
                    "rerun": rerun_command(check.id, outcome.files.get("worst_instance"), b.params, check.params),
                    "shrunk_instance": outcome.files.get("shrunk_instance")}
    res["evidence"] = ev
    if outcome.files.get("worst_instance"):
        res["saved_instances"] = [outcome.files["worst_instance"]] + (
            [outcome.files["shrunk_instance"]] if outcome.files.get("shrunk_instance") else [])
    from fedcheck.core.claim import jsonable as _jsonable
    return _jsonable(res)


_METHOD_LABEL = {"cma": "random draws + CMA-ES", "perturb": "random + local perturbations",
                 "random": "random draws from the domain"}


def _cell(v):
    if isinstance(v, float):
        return v if np.isfinite(v) else None
    return v


# ----------------------------------------------------------------------------------------------
# command line
