"""Generic experiments: how a bound test's observations are made.

An experiment has ``observe(claim, test, config, params) -> Observations`` (:mod:`fedcheck.core.evidence`).

* :class:`Rounds` -- one run per instance (and per independent random stream, ``replicates``) over
  ``rounds`` rounds; the measured quantity and the bound are compared at every recorded round.
  Schedules and bounds are the claim's SymPy expressions in ``t`` and named constants, evaluated per
  instance (:mod:`fedcheck.problems.constants`).  With ``replicates > 1`` and the ``mean`` statistic this
  is a bound in expectation; with ``pathwise`` every run must satisfy it.
* :class:`Horizons` -- one run per horizon ``T`` (schedules may depend on ``T``): ``runner(instances,
  solutions, schedules, T, settings, run_seeds) -> {metric: array}``.
* :class:`Cases` -- a function ``cases(config, params) -> [Case]`` that builds the comparisons itself
  (a lemma's inequality between two measured quantities, a variance step, the fraction of failing runs).

A user's method is an algorithm ``algo(batch, *, rounds, grid, recorder, **schedules) -> Trace``
(:mod:`fedcheck.algorithms`); ``fedcheck.algorithms.protocol.as_algorithm`` turns a round function into one.
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp

from fedcheck.core import verdict as V
from fedcheck.core.streams import replicate_seeds  # noqa: F401  (re-exported: one definition)
from fedcheck.core.evidence import Comparison, Observations, Observed
from fedcheck.core.errors import BadInput, BadValue, Terminated, UserCodeError
from fedcheck.core.schedules import evaluate_schedule, record_grid
from fedcheck.core.symbols import T as T_sym, latex, t as t_sym
from fedcheck.core.usercode import call_user, contract_error, guard, is_own, short_path

__all__ = ["Rounds", "Horizons", "HorizonCase", "algorithm_runner", "Cases", "Case", "Metric", "objective_gap", "recorded", "SideCondition",
           "Trivial", "fw_gap_trivial", "no_trivial_bound",
           "replicate_seeds", "geometric_horizons", "with_progress", "measured", "takes_instance", "param_domain",
           "check_declaration", "declared"]


# ---------------------------------------------------------------------------------------------------
# metrics: recorded arrays -> (value, lo, hi) of the quantity a bound controls
@dataclass(frozen=True)
class Trivial:
    """The trivial bound of a metric: a certified upper value of what it can take over the claim's class (the
    largest Frank-Wolfe gap on the set, the largest objective gap), so that a bound at least as large could not
    have failed (:meth:`fedcheck.core.evidence.Comparison.vacuity`).

    ``value``: a SymPy expression in named constants, each resolved for the instance as the bounds' constants are
    (:func:`fedcheck.problems.constants.resolve`; a constant known to an interval resolves to its upper end, so the
    expression must grow with each constant), or a function ``ctx -> float`` of the instance's
    :class:`~fedcheck.problems.constants.InstanceContext` (``None``: unknown); ``what``: what it is, as the
    headline says it (``"sup ||grad F|| diam(D) (sqrt(n) G D)"``).  A constant that does not resolve, or a value
    that is NaN, leaves vacuity unknown.  The expression may contain the axis: ``t`` (the iterate index of a
    :class:`Rounds` experiment) or ``T`` (the horizon of a :class:`Horizons` one), for a metric whose largest value
    moves along it (a penalty ``lambda_t``); it is evaluated at each point.  ``+oo`` (:func:`no_trivial_bound`)
    declares that the metric has no finite trivial bound over the claim's class, ``what`` saying why: vacuity stays
    unknown, with that reason."""

    value: Any
    what: str = ""

    def __post_init__(self):
        if not callable(self.value) or isinstance(self.value, sp.Basic):
            object.__setattr__(self, "value", sp.sympify(self.value))

    @property
    def text(self) -> str:
        return self.what or f"the trivial bound {sp.sstr(self.value)}"

    @property
    def axes(self) -> frozenset:
        """The axis symbols (``t``, ``T``) the expression contains: evaluated at each point."""
        return self.names & frozenset(_AXES)

    @property
    def names(self) -> frozenset:
        """The names of the expression's symbols (empty for a function)."""
        if not isinstance(self.value, sp.Basic):
            return frozenset()
        return frozenset(s.name for s in self.value.free_symbols)

    def evaluate(self, ctx, at: dict | None = None):
        """The certified upper value for ``ctx`` (``None``: unknown here; ``inf``: declared unbounded); ``at``:
        ``{name: value or points}`` for the symbols known where it is evaluated -- the axis (``t``, ``T``), a
        schedule of a :class:`Horizons` run (``eta``) -- before the instance's constants; an array over the points
        when one is."""
        if isinstance(self.value, sp.Basic):
            from fedcheck.problems.constants import resolve
            at = at or {}
            vals, arrays = {}, {}
            for sym in self.value.free_symbols:
                if sym.name in at:
                    v = np.asarray(at[sym.name], dtype=float)
                    (vals if v.ndim == 0 else arrays)[sym] = float(v) if v.ndim == 0 else v
                    continue
                if sym.name in _AXES:
                    return None             # the axis is not known here
                try:
                    vals[sym] = resolve(sym.name, ctx).value
                except (KeyError, ValueError, TypeError, AttributeError):
                    return None
            e = self.value.subs(vals)
            try:
                if arrays:
                    syms = sorted(arrays, key=lambda s: s.name)
                    pts = [arrays[s_] for s_ in syms]
                    v = np.asarray(sp.lambdify(syms, e, "numpy")(*pts), dtype=float)
                    return np.broadcast_to(v, np.broadcast(*pts).shape).astype(float)
                v = float(e)
            except (TypeError, ValueError):
                return None
        else:
            v = call_user(self.value, ctx, role="trivial bound") if not is_own(self.value) else self.value(ctx)
        if v is None:
            return None
        v = float(v)
        return v if np.isfinite(v) or v == np.inf else None


_AXES = ("t", "T")


def no_trivial_bound(why: str) -> Trivial:
    """The declaration that a metric has no finite trivial bound over the claim's class -- its supremum there is
    ``+oo`` (an objective gap over an unbounded domain ``R^d``), ``why`` saying so (``"the domain R^d is
    unbounded"``): vacuity is reported ``unknown`` with ``"no finite trivial bound: <why>"``, never ``not vacuous``
    (the run's iterates may still stay where the bound cannot fail)."""
    return Trivial(sp.oo, f"no finite trivial bound: {why}")


def as_trivial(x) -> "Trivial | None":
    """A :class:`Trivial` from what a declaration gives (a Trivial, a SymPy expression, a number; ``None``)."""
    return x if x is None or isinstance(x, Trivial) else Trivial(x)


def _first_resolved(ctx, *names):
    from fedcheck.problems.constants import resolve
    out = []
    for nm in names:
        try:
            out.append(float(resolve(nm, ctx).value))
        except Exception:  # noqa: BLE001 - a constant this instance does not have: no trivial bound from it
            return None
    return out if all(np.isfinite(v) for v in out) else None


def _objective_gap_trivial(key: str) -> Callable:
    """``sup over D of F - F*`` certified from the instance's constants, the smaller of: ``||grad F(x*)|| D +
    L D^2 / 2`` (``L``-smooth clients: ``F(x) - F(x*) <= <grad F(x*), x - x*> + L ||x - x*||^2 / 2``; for the
    average ``F^(X) = (1/n) sum_i f_i(x_i)`` of points ``x_i`` in ``D`` the gradient term is ``(1/n) sum_i
    ||grad f_i(x*)|| <= sqrt(n) (1/n)(sum_i ||grad f_i(x*)||^2)^(1/2)``) and ``G_max D`` (``G_max``-Lipschitz
    clients).  Both need the iterate in ``D`` (a run whose measured gap exceeds the value leaves vacuity unknown)."""
    def value(ctx):
        cands = []
        sm = _first_resolved(ctx, "D", "L", "grad_F_star" if key == "F" else "grad_hat_star", "n")
        if sm is not None:
            D, L, g, n = sm
            cands.append((g if key == "F" else np.sqrt(n) * g) * D + L * D ** 2 / 2)
        lip = _first_resolved(ctx, "D", "G_max")
        if lip is not None:
            cands.append(lip[0] * lip[1])
        cands = [c for c in cands if np.isfinite(c)]
        return min(cands) if cands else None
    return value


def fw_gap_trivial(G=None) -> Trivial:
    """The trivial bound of a Frank-Wolfe gap ``max_{s in D} <grad F(x), x - s>`` of ``F = (1/n) sum_i f_i`` at
    ``x`` in ``D``: ``||grad F(x)|| diam(D) <= sqrt(n) G D``, where ``G`` bounds ``sup_{X in D^n} ||grad
    F^(X)||_F = (1/n)(sum_i sup ||grad f_i||^2)^(1/2)`` (``||grad F(x)|| <= (1/n) sum_i ||grad f_i(x)|| <= sqrt(n)
    G``): ``G_sup`` (convex families, default) or ``G_nc`` (networks and other non-convex families)."""
    from fedcheck.core.symbols import D, G_sup, n
    G = G_sup if G is None else G
    return Trivial(sp.sqrt(n) * G * D, "the largest Frank-Wolfe gap on D")


@dataclass(frozen=True)
class Metric:
    """``compute(metrics, solutions) -> (value, lo, hi)``, arrays ``(K, runs)``; ``label`` names it; ``trivial``:
    its trivial bound (:class:`Trivial`, or a SymPy expression in named constants), the largest value it can take
    over the claim's class -- a ``<=`` bound at least as large everywhere is reported vacuous; ``None``: vacuity
    unknown."""

    label: str
    compute: Callable
    description: str = ""
    trivial: Any = None

    def __post_init__(self):
        object.__setattr__(self, "trivial", as_trivial(self.trivial))

    def __call__(self, M, sols):
        return call_user(self.compute, M, sols, role="metric")


def declared(claim, what: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` evaluating what ``claim`` declares (a bound, a schedule, a constant): when a user
    declared the claim, a failure is the declaration's -- one line naming the claim, what failed and where the claim
    is declared (exit 2); in fedcheck's own catalog it is fedcheck's bug, raised as it is."""
    try:
        return fn(*args, **kwargs)
    except (KeyboardInterrupt, Terminated, BadInput):
        raise
    except Exception as e:  # noqa: BLE001
        if not getattr(claim, "is_users", False):
            raise
        file, _, line = getattr(claim, "declared_in", "").rpartition(":")
        where = f" ({short_path(file)}:{line})" if file else ""
        msg = " ".join(str(e).split())[:400]
        raise UserCodeError(f"error in your {what} of {claim.id}{where}: {type(e).__name__}: {msg}",
                            what, claim.id, where.strip(" ()")) from None


def objective_gap(key: str = "F", label: str | None = None) -> Metric:
    """``key - F*`` with ``F*`` in its certified interval ``[F_lower, F_star]``."""
    def compute(M, sols):
        F = M[key]
        Fs = np.array([s.F_star for s in sols])[None, :]
        Fl = np.array([s.F_lower for s in sols])[None, :]
        return F - Fs, F - Fs, F - Fl
    return Metric(label or f"{key} - F*", compute,
                  "objective gap of the server point; F* is known to lie in [F(x_hat) - FW gap, F(x_hat)]",
                  Trivial(_objective_gap_trivial(key), "the largest objective gap on D"))


def recorded(key: str, power: float = 1.0, label: str | None = None, trivial=None) -> Metric:
    """A recorded quantity (exact: no solver involved), optionally raised to ``power``; ``trivial``: its trivial
    bound (:class:`Trivial`), e.g. :func:`fw_gap_trivial` for a recorded Frank-Wolfe gap."""
    def compute(M, sols):
        v = np.asarray(M[key], dtype=float) ** power
        return v, v, v
    return Metric(label or (key if power == 1 else f"{key}^{power:g}"), compute, trivial=trivial)


suboptimality = objective_gap("F", "F(xbar^t) - F*")


@dataclass(frozen=True)
class SideCondition:
    """An inequality ``lhs >= rhs`` between instance constants that a proof relies on (Lemma 2's
    ``G >= sup ||grad F^||``).  Reported per instance beside the bound; it does not decide the claim.  A
    constant known only by an upper bound decides the inequality only on the right-hand side."""

    name: str
    lhs: Any
    rhs: Any
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




def _takes_seeds(algorithm) -> bool:
    """Whether a batched algorithm takes ``seeds=`` (one stream seed per row): every :func:`federated` method does."""
    import inspect
    try:
        params = inspect.signature(algorithm).parameters
    except (TypeError, ValueError):
        return False
    return "seeds" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def geometric_horizons(lo: int, hi: int, points: int) -> tuple:
    """``points`` integers spaced geometrically from ``lo`` to ``hi`` (distinct, sorted)."""
    return tuple(sorted({int(round(x)) for x in np.geomspace(lo, hi, points)}))


def with_progress(recorder, last: int, desc: str, enabled: bool):
    """Wrap a recorder so that the progress display (:mod:`fedcheck.core.progress`) advances at each recorded
    round; its ETA ignores the first interval (the JIT compile of the round kernel)."""
    from fedcheck.core import progress
    if not progress.enabled(enabled):
        return recorder
    bar = progress.Task(desc, total=last, unit="round", show=True)

    def rec(k, X, xbar):
        bar.advance_to(k)
        if k >= last:
            bar.close()
        return recorder(k, X, xbar)
    rec.scalars_of = recorder       # the engine computes every round's metrics from the wrapped recorder
    return rec


def _label(inst) -> str:
    seed = getattr(inst, "seed", None)
    return f"seed {seed}" if seed is not None else str(getattr(inst, "source", "instance"))


def _saver(inst):
    save = getattr(inst, "save", None)
    if save is None:
        return None

    def go(stem):
        try:
            return [str(p) for p in (save(stem) or [])]
        except ValueError:     # a set without a file format
            return []
    return go


def _needed(exprs, readings, exclude=()) -> set:
    syms = set()
    for e in exprs:
        for r in readings:
            syms |= sp.sympify(e).subs(dict(r.substitutions)).free_symbols
    return {s for s in syms if s.name not in exclude}


def _readings_formula(readings, bound_expr=None) -> dict:
    out = {}
    for r in readings:
        d = {"substitutions": {sp.sstr(k): latex(v) for k, v in dict(r.substitutions).items()},
             "paper": r.paper, "description": r.description}
        if bound_expr is not None:
            d["latex"] = latex(sp.sympify(bound_expr).subs(dict(r.substitutions)))
        out[r.name] = d
    return out


def streams_every_round(algorithm) -> bool:
    """Whether an algorithm can stream every round's metrics (``stream=`` in its signature)."""
    import inspect
    try:
        return "stream" in inspect.signature(algorithm).parameters
    except (TypeError, ValueError):
        return False


class _EveryRound:
    """The every-round check: receives blocks of every iterate's metrics from the engine (``stream``), judges
    each block against every bound and reading at once, and keeps only the merged judgement per
    (instance, reading, bound) -- memory does not grow with the number of rounds.  Bounds whose metric the
    stream does not carry are left to the recorded grid (``covered`` says which are judged here)."""

    def __init__(self, exp, claim, test, vals, I, R, run_sols, sols):
        self.exp, self.claim, self.test, self.vals, self.I, self.R = exp, claim, test, vals, I, R
        self.run_sols, self.sols = run_sols, sols
        self.acc: dict = {}
        self.fail: dict = {}
        self.covered: set = {b.name for b in test.bounds}
        self.infeasibility = None          # (max per run, first infeasible round per run at each tolerance)
        self._inf_blocks: list = []
        self.trivial: dict = {}            # bound name -> (per-instance trivial bounds, what)
        self.family: int | None = None     # the mean statistic's Bonferroni family (the whole test's points)

    def __call__(self, k, values):
        from fedcheck.core.evidence import merge_judgements
        k = np.asarray(k, dtype=float)
        if "infeasibility" in values:
            self._inf_blocks.append((k, np.asarray(values["infeasibility"], dtype=float)))
            self.infeasibility = True
        sel = k >= self.exp.valid_from
        if not sel.any():
            return
        kk = k[sel]
        M = {name: np.asarray(v)[sel] for name, v in values.items()}
        for bnd in self.test.bounds:
            if bnd.name not in self.covered:
                continue
            try:
                value, lo, hi = (np.asarray(a, dtype=float) for a in self.exp.metric_of(bnd.name)(M, self.run_sols))
            except (KeyError, UserCodeError) as e:  # the stream does not carry this metric: judged on the recorded grid
                if isinstance(e, UserCodeError) and not e.args[0].split(": ", 1)[-1].startswith("KeyError"):
                    raise
                self.covered.discard(bnd.name)
                continue
            for r in self.claim.readings:
                b = declared(self.claim, f"bound {bnd.name!r}", evaluate_schedule, bnd.expr.subs(dict(r.substitutions)),
                             kk, self.vals, self.I)
                st = self.test.statistic_of(r).of_family(self.family)
                for j in range(self.I):
                    cols = slice(j * self.R, (j + 1) * self.R)
                    tv, what = self.trivial.get(bnd.name, (None, ""))
                    cmp = Comparison(lhs_lo=lo[:, cols].T, lhs_hi=hi[:, cols].T, rhs_lo=b[:, j], relation=bnd.relation,
                                     scale=max(1.0, abs(self.sols[j].F_star)), points=kk, point_name="round",
                                     value=value[:, cols].T, trivial=_nan_none(tv[j], {"t": kk}) if tv else None,
                                     trivial_what=what)
                    key = (j, r.name, bnd.name)
                    self.acc[key] = merge_judgements(self.acc.get(key), cmp.judge(st))
                    f = cmp.failing_samples()
                    self.fail[key] = f if key not in self.fail else (self.fail[key] | f)

    def result(self, j, reading, bound):
        key = (j, reading, bound)
        return self.acc.get(key) or {"verdict": V.INCONCLUSIVE, "max_ratio": None, "max_excess": None,
                                     "points": 0, "violations": 0, "undecided": 0}, \
            self.fail.get(key, np.zeros(self.R, dtype=bool))

    def feasibility(self, cols, tol):
        """Max infeasibility, first infeasible round and finiteness over every round, for the runs ``cols``."""
        mx, first, finite = -np.inf, None, True
        for k, inf in self._inf_blocks:
            a = inf[:, cols]
            finite &= bool(np.all(np.isfinite(a)))
            mx = max(mx, float(np.nanmax(a)) if np.isfinite(a).any() else mx)
            bad = (a > tol).any(1)
            if first is None and bad.any():
                first = float(k[bad][0])
        return mx, first, finite


def _nan_none(v, at: dict | None = None):
    """A trivial bound known (a number, or its values at the points ``at``, ``{axis: points}``, when it moves along
    the axis) or not (``None``) as a Comparison takes it: unknown is NaN."""
    if callable(v):
        v = v(at or {})
    return np.nan if v is None else v


def trivial_bounds(claim, metrics: dict, bounds, ctxs, known: frozenset = frozenset()) -> dict:
    """``{bound name: ([value per context], what)}`` for the ``<=`` bounds whose metric has a trivial bound
    (``metrics``: bound name -> :class:`Metric`, or -> :class:`Trivial` directly); a trivial bound in the axis
    (``t``, ``T``) or in a name of ``known`` (a schedule) is a function of ``{name: value or points}``
    (:func:`_nan_none` evaluates it)."""
    out = {}
    for bnd in bounds:
        m = metrics.get(bnd.name)
        tr = m if isinstance(m, Trivial) else getattr(m, "trivial", None)
        if tr is None or bnd.relation != "<=":
            continue
        what = f"trivial bound of bound {bnd.name!r}"
        if tr.axes or tr.names & known:
            vals = [(lambda at, c=c, tr=tr, what=what: declared(claim, what, tr.evaluate, c, at)) for c in ctxs]
        else:
            vals = [declared(claim, what, tr.evaluate, c) for c in ctxs]
        out[bnd.name] = (vals, tr.text)
    return out


# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rounds:
    """Runs over rounds (see the module doc).

    ``family``: ``draw(seed) -> instance`` (``None``: the claim runs only on given instances, ``--instance``);
    ``algorithm``: the batched method; ``schedules``: SymPy in ``t``;
    ``metrics``: ``{bound name: Metric}`` (default: every bound measures ``F(xbar^t) - F*``);
    ``replicates``: independent runs per instance, each with its own stream seed (:func:`replicate_seeds`), passed
    to the algorithm as ``seeds=`` when it takes them (every ``federated`` method does) or by
    ``run_kwargs(values, seeds) -> kwargs``; ``param_grid``: the whole test repeated per parameter setting;
    ``valid_from``: the first iterate index a bound covers; ``solver``: the exact solve (default
    :func:`fedcheck.problems.solve.solve_consensus`).

    **Schedules per local step.**  ``local_steps=E`` (an int, or a SymPy expression in parameters and constants
    such as ``fedcheck.symbols.E``) and ``per_local_step=("eta",)``: the schedule ``eta`` (still one SymPy
    expression in ``t``) is evaluated with ``t`` counting local steps, ``t = (r - 1) E + s`` at local step
    ``s = 1 .. E`` of round ``r`` (Li et al.'s ``eta_t``), and reaches the algorithm as a ``(rounds, B, E)`` array: a
    round function (:func:`fedcheck.algorithms.federated`) gets its ``(B, E)`` row, which
    :func:`fedcheck.algorithms.pieces.local_steps` takes (column ``s - 1`` at local step ``s``);
    :func:`fedcheck.algorithms.run_fedavg` takes the whole array as ``eta=``.  Bounds keep ``t`` as the
    iterate index (``t = 1`` the start, ``t = r + 1`` after round ``r``).

    **Quantities measured during the run.**  ``measured={"G2": "G^2"}``: the bound's symbol ``G2`` is not a
    constant known a priori but read from the run: a federated round function records it with
    ``ctx.record("G2", values)`` (``(B,)`` per call; an algorithm of one's own returns
    ``trace.final["recorded:G2"]``, ``(B, rounds)``), and its value for an instance is the largest over the
    rounds of the mean over the instance's runs (the replicates) of each round's largest recorded value -- for
    ``||grad F_k(w)||^2`` at every local iterate, Li et al.'s ``G^2 = max_t E||grad F_k(w_t^k)||^2`` along this
    trajectory (with replicates an estimate, not a bound).  The results say so: ``evidence["measured"]``, each
    finding's ``measured``, the instance's constant (``"measured": true``) and the headline
    ``(uses measured G^2)``."""

    family: Any = None
    algorithm: Callable = None
    schedules: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    solver: Callable | None = None
    seeds: int = 8
    full_seeds: int | None = None
    rounds: int = 5000
    full_rounds: int | None = None
    replicates: int = 1
    full_replicates: int | None = None
    valid_from: int = 1
    algorithm_kwargs: dict = field(default_factory=dict)
    run_kwargs: Callable | None = None
    recorder: Callable | None = None        # recorder(batch, schedules) -> Recorder
    param_grid: tuple = ({},)
    dense_until: int = 1000
    per_decade: int = 50
    side_conditions: tuple = ()
    local_steps: Any = None                 # E: an int or a SymPy expression in parameters and constants
    per_local_step: tuple = ()              # names of schedules evaluated at every local step (t = (r-1) E + s)
    measured: dict = field(default_factory=dict)    # {symbol name: label}: quantities recorded during the run
    axis = "round"

    def __post_init__(self):
        object.__setattr__(self, "schedules", {k: sp.sympify(v) for k, v in self.schedules.items()})
        object.__setattr__(self, "side_conditions", tuple(self.side_conditions))
        object.__setattr__(self, "param_grid", tuple(self.param_grid))
        object.__setattr__(self, "per_local_step", tuple(self.per_local_step))
        object.__setattr__(self, "measured", dict(self.measured))
        if self.local_steps is not None and not isinstance(self.local_steps, (int, np.integer)):
            object.__setattr__(self, "local_steps", sp.sympify(self.local_steps))

    def validate(self, claim, test) -> None:
        if not callable(self.algorithm):
            raise TypeError(f"{claim.id}: Rounds(algorithm=...) must be callable")
        for name in ("seeds", "rounds", "replicates", "valid_from", "dense_until", "per_decade", "full_seeds",
                     "full_rounds", "full_replicates"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
                raise BadValue(f"{claim.id}: Rounds({name}=...) must be an integer >= 1, not {v!r}")
        if not all(isinstance(g, dict) for g in self.param_grid) or not self.param_grid:
            raise TypeError(f"{claim.id}: Rounds(param_grid=...) must be a tuple of dicts {{name: value}}")
        bad = [k for k, m in self.metrics.items() if not callable(m)]
        if bad:
            raise TypeError(f"{claim.id}: Rounds(metrics=...) of {bad} must be Metric(label, compute)")
        if self.family is not None and not callable(getattr(self.family, "draw", None)):
            raise TypeError(f"{claim.id}: Rounds(family=...) must have draw(seed) (or be None: given instances only)")
        missing = [b.name for b in test.bounds if b.expr is None]
        if missing:
            raise TypeError(f"{claim.id}: Rounds evaluates SymPy bounds; bound(s) {missing} have no expression")
        unknown = [k for k in self.per_local_step if k not in self.schedules]
        if unknown:
            raise BadValue(f"{claim.id}: Rounds(per_local_step=...) names {unknown}, which are not schedules "
                           f"(schedules: {', '.join(self.schedules) or 'none'})")
        if bool(self.per_local_step) != (self.local_steps is not None):
            raise BadValue(f"{claim.id}: Rounds(per_local_step=...) and Rounds(local_steps=E) go together: a schedule "
                           "per local step needs the number E of local steps per round")
        k = self.local_steps
        if isinstance(k, (int, np.integer)) and (isinstance(k, bool) or k < 1):
            raise BadValue(f"{claim.id}: Rounds(local_steps=...) must be an integer >= 1, not {self.local_steps!r}")
        bad = [k for k, v in self.measured.items() if not (isinstance(k, str) and k and isinstance(v, str))]
        if bad:
            raise BadValue(f"{claim.id}: Rounds(measured=...) maps a symbol's name to its label ({{'G2': 'G^2'}}), "
                           f"not {bad[0]!r}")
        clash = sorted(set(self.measured) & (set(claim.params) | set(self.schedules)))
        if clash:
            raise BadValue(f"{claim.id}: Rounds(measured=...) names {clash}, which are also parameters or schedules")

    # -- helpers ----------------------------------------------------------------------------------
    def metric_of(self, bound_name: str) -> Metric:
        m = self.metrics.get(bound_name) or suboptimality
        if not isinstance(m, Metric):       # a plain function (M, sols) -> (value, lo, hi): called behind the guard too
            m = Metric(getattr(m, "__name__", bound_name), m)
        return m

    def rounds_for(self, config) -> int:
        return config.horizon(self.rounds, self.full_rounds)

    def replicates_for(self, config) -> int:
        """Runs per instance in this mode."""
        return int(config.size(self.replicates, self.full_replicates))   # a sample size: not --seeds

    def instances(self, config) -> list:
        if config.instances:
            return list(config.instances)
        if self.family is None:
            from fedcheck.core.errors import BadInput
            raise BadInput("this claim declares no instance family: it runs only on given instances (--instance FILE)")
        out = [call_user(self.family.draw, s, role="instance family")
               for s in config.seed_list(self.seeds, self.full_seeds)]
        if not is_own(self.family.draw):
            from fedcheck.problems.instances import Instance
            bad = next((x for x in out if not isinstance(x, Instance)), None)
            if bad is not None:
                raise contract_error(self.family.draw, "instance family", f"drew {type(bad).__name__}; a family of "
                                     "a Rounds experiment draws fedcheck.problems.Instance objects")
        return out

    def _solver(self):
        if self.solver is not None:
            return guard(self.solver, "solver")
        from fedcheck.problems.solve import solve_consensus
        return solve_consensus

    def memory_estimate(self, claim, config) -> float:
        """Bytes a run needs at least: every schedule is a ``(rounds, runs)`` array."""
        n = len(config.instances) if config.instances else config.seed_count(self.seeds, self.full_seeds)
        R = self.replicates_for(config)
        E = int(self.local_steps) if isinstance(self.local_steps, (int, np.integer)) else 1
        return 8.0 * self.rounds_for(config) * n * R * (len(self.schedules) + 2 + (E - 1) * len(self.per_local_step))

    # -- the run ----------------------------------------------------------------------------------
    def observe(self, claim, test, config, params) -> Observations:
        from fedcheck.algorithms import default_recorder
        from fedcheck.problems.constants import InstanceContext, resolve
        from fedcheck.problems.instances import InstanceBatch

        rounds = self.rounds_for(config)
        R = self.replicates_for(config)
        insts = self.instances(config)
        solve = self._solver()
        from fedcheck.problems.solve import solve_all
        sols = solve_all(solve, insts, config.use_cache, config.progress, f"{claim.id} solving")
        readings = claim.readings
        bounds = test.bounds
        exprs = [b.expr for b in bounds] + list(self.schedules.values())
        exprs += [c.lhs for c in self.side_conditions] + [c.rhs for c in self.side_conditions]
        if isinstance(self.local_steps, sp.Basic):
            exprs.append(self.local_steps)
        syms = _needed(exprs, readings, exclude={t_sym.name} | set(self.measured))
        obs = Observations()
        b0 = bounds[0]
        obs.formula = {
            "bound": latex(b0.expr), "bound_text": sp.sstr(b0.expr),
            "bounds": {b.name: {"bound": latex(b.expr), "bound_text": sp.sstr(b.expr),
                                "metric": self.metric_of(b.name).label, "paper": b.paper,
                                "description": b.description} for b in bounds},
            "schedules": {k: latex(v) for k, v in self.schedules.items()},
            **({"per_local_step": {"schedules": list(self.per_local_step), "local_steps": str(self.local_steps),
                                   "t": "local steps: t = (r - 1) E + s at local step s of round r"}}
               if self.per_local_step else {}),
            **({"measured": {k: f"{v}: recorded during the run, not a priori" for k, v in self.measured.items()}}
               if self.measured else {}),
            "readings": _readings_formula(readings, b0.expr),
            "metric": self.metric_of(b0.name).label if R == 1 else f"E[{self.metric_of(b0.name).label}]",
            "metric_description": self.metric_of(b0.name).description,
            "valid_from": self.valid_from,
            "statistic": test.statistic.describe(R),
        }
        grid = record_grid(rounds + 1, dense_until=self.dense_until, per_decade=self.per_decade)
        # the mean statistic's Bonferroni family: every point any (parameter, instance, bound, reading) is judged at
        # -- every round when streamed (judged in blocks, so counted up front), else the recorded grid
        per = rounds + 1 if streams_every_round(self.algorithm) and not self.measured else len(grid)
        family = max(1, len(list(self.param_grid)) * int(config.whole_instances or len(insts)) * len(bounds) * per
                     * sum(test.statistic_of(r).kind == "mean" for r in readings))
        groups: dict[tuple, list[int]] = {}
        for k, inst in enumerate(insts):
            groups.setdefault((inst.A.shape, inst.loss, inst.set.name), []).append(k)
        records: list = [None] * len(insts)
        side: dict = {}
        measured_values: dict = {}
        if self.measured:
            from fedcheck.problems.constants import Value
        for gparams in self.param_grid:
            P = {**params, **gparams}
            gtag = ", ".join(f"{k}={v:g}" for k, v in gparams.items())
            for idxs in groups.values():
                I = len(idxs)
                runs = [insts[k] for k in idxs for _ in range(R)]
                batch = InstanceBatch(runs)
                run_sols = [sols[k] for k in idxs for _ in range(R)]
                ctxs = [InstanceContext(insts[k], batch.loss.take(j * R), sols[k], P) for j, k in enumerate(idxs)]
                consts = {s.name: [declared(claim, f"constant {s.name!r}", resolve, s.name, c) for c in ctxs]
                          for s in syms}
                vals = {n: np.array([v.value for v in vs]) for n, vs in consts.items()}
                vals_rep = {n: np.repeat(v, R) for n, v in vals.items()}
                tt = np.arange(1, rounds + 1)
                E = self._local_steps(claim, vals_rep, batch.B)
                sched = {name: declared(claim, f"schedule {name!r}", evaluate_schedule, e, tt, vals_rep, batch.B)
                         if name not in self.per_local_step else
                         np.ascontiguousarray(declared(claim, f"schedule {name!r}", evaluate_schedule, e,
                                                       np.arange(1, rounds * E + 1), vals_rep, batch.B)
                                              .reshape(rounds, E, batch.B).transpose(0, 2, 1))
                         for name, e in self.schedules.items()}
                kwargs = dict(self.algorithm_kwargs)
                if self.run_kwargs is not None or (R > 1 and _takes_seeds(self.algorithm)):
                    seeds_rep = replicate_seeds([insts[k].seed if insts[k].seed is not None
                                                 else int(insts[k].content_hash()[:8], 16) for k in idxs], R)
                    kwargs.update(call_user(self.run_kwargs, vals_rep, seeds_rep, role="run_kwargs")
                                  if self.run_kwargs is not None else {"seeds": seeds_rep})
                rec = _checked_recorder(call_user(self.recorder, batch, sched, role="recorder"), batch.B) \
                    if self.recorder else default_recorder(batch)
                rec = with_progress(rec, rounds + 1, f"{claim.id}{' ' + gtag if gtag else ''}", config.progress)
                triv = trivial_bounds(claim, {b.name: self.metric_of(b.name) for b in bounds}, bounds, ctxs)
                every = None
                if streams_every_round(self.algorithm) and not self.measured:     # measured: known after the run
                    every = _EveryRound(self, claim, test, vals, I, R, run_sols, [sols[k] for k in idxs])
                    every.trivial, every.family = triv, family
                    kwargs["stream"] = every
                trace = call_user(self.algorithm, batch, rounds=rounds, grid=grid, recorder=rec, **sched, **kwargs,
                                  role="algorithm")
                _check_trace(self.algorithm, trace, len(grid), batch.B)
                if self.measured:    # the run's own quantities: per instance, max over rounds of the replicates' mean
                    got = self._measured_values(trace, rounds, batch.B, I, R)
                    for name, v in got.items():
                        vals[name] = v
                        consts[name] = [Value(float(x), False, f"{self.measured[name]}: measured along this run "
                                              "(max over the rounds of the mean over its runs), not a priori")
                                        for x in v]
                    measured_values.update({name: measured_values.get(name, []) + list(map(float, v))
                                            for name, v in got.items()})
                streamed = set(every.covered) if every is not None else set()
                kk = trace.rounds.astype(float)
                valid = kk >= self.valid_from
                infeas = trace.metrics.get("infeasibility")
                radius = np.broadcast_to(np.asarray(batch.set.radius, dtype=float), (batch.B,))
                broke = _nonfinite(trace, [self.metric_of(b.name) for b in bounds], run_sols, self.valid_from)
                for j, kidx in enumerate(idxs):
                    inst, sol = insts[kidx], sols[kidx]
                    reason = sol.reason
                    cols = slice(j * R, (j + 1) * R)
                    if reason is None and broke is not None and np.any(broke[cols] > 0):
                        k = broke[cols][broke[cols] > 0]
                        reason = (f"the method's iterates are not finite (NaN or inf) from round {int(k.min())} on "
                                  f"({len(k)} of {R} run(s) of {_label(inst)}): a run that breaks down decides nothing")
                    tol = V.POLICY.feasibility_tol * max(1.0, float(radius[j * R]))
                    if reason is None and infeas is not None and kk[0] == 1 and np.any(infeas[0, cols] > tol):
                        reason = (f"assumption broken: the starting point is not in the set "
                                  f"(infeasibility {float(np.max(infeas[0, cols])):.3g}); give a feasible x0")
                    if reason:
                        obs.reasons.append(reason)
                    rec_j = records[kidx]
                    if rec_j is None:
                        rec_j = records[kidx] = {
                            "seed": inst.seed, "instance": inst.describe(),
                            "F_star": sol.F_star, "F_star_lower": sol.F_lower, "F_star_certified_accuracy": sol.gap,
                            "solver": sol.record(),
                            "constants": {n: {"value": vs[j].value, "exact": vs[j].exact, "note": vs[j].note,
                                              **({"measured": True} if n in self.measured else {})}
                                          for n, vs in consts.items()},
                            "rounds": kk, "replicates": R, "bound": {}, "readings": {}, "grid": []}
                        if "consensus" in trace.metrics and R == 1:
                            rec_j["consensus"] = trace.metrics["consensus"][:, j]
                        if reason:
                            rec_j["inconclusive_reason"] = reason
                        if self.side_conditions:
                            rec_j["side_conditions"] = [c.evaluate(consts, j) for c in self.side_conditions]
                            for c, e in zip(self.side_conditions, rec_j["side_conditions"]):
                                side.setdefault(c.name, {"verdicts": [], "description": c.description})
                                side[c.name]["verdicts"].append(e["verdict"])
                        if every is not None and every.infeasibility is not None:      # every round
                            mx, first, finite = every.feasibility(cols, tol)
                            fv = V.INCONCLUSIVE if not finite else (V.VIOLATED if first is not None else V.HOLDS)
                            rec_j["feasibility"] = {"verdict": fv, "max_infeasibility": mx, "tolerance": tol,
                                                    "first_infeasible_round": first, "rounds_checked": "every"}
                            obs.feasibility.append(fv)
                        elif infeas is not None:
                            bad = (infeas[:, cols] > tol).any(1)
                            fv = (V.INCONCLUSIVE if not np.all(np.isfinite(infeas[:, cols]))
                                  else (V.VIOLATED if bad.any() else V.HOLDS))
                            rec_j["feasibility"] = {"verdict": fv, "max_infeasibility": float(np.nanmax(infeas[:, cols])),
                                                    "tolerance": tol, "rounds_checked": "recorded",
                                                    "first_infeasible_round": float(kk[bad][0]) if bad.any() else None}
                            obs.feasibility.append(fv)
                    entry = {"params": gparams, "parts": {}}
                    rec_j["grid"].append(entry)
                    case = _label(inst) + (f" ({gtag})" if gtag else "")
                    for bi, bnd in enumerate(bounds):
                        value, lo, hi = (np.asarray(a, dtype=float) for a in declared(
                            claim, f"measured quantity of bound {bnd.name!r}", self.metric_of(bnd.name), trace.metrics,
                            run_sols))
                        v_j, lo_j, hi_j = value[:, cols], lo[:, cols], hi[:, cols]
                        part = entry["parts"].setdefault(bnd.name, {"metric": v_j.mean(1),
                                                                    "metric_interval": {"lo": lo_j.mean(1), "hi": hi_j.mean(1)},
                                                                    "bound": {}, "readings": {}})
                        if R > 1:
                            part["metric_se"] = np.maximum(lo_j.std(1, ddof=1), hi_j.std(1, ddof=1)) / np.sqrt(R)
                        for r in readings:
                            b = declared(claim, f"bound {bnd.name!r}", evaluate_schedule,
                                         bnd.expr.subs(dict(r.substitutions)), kk, vals, I)[:, j]
                            tv, what = triv.get(bnd.name, (None, ""))
                            cmp = Comparison(lhs_lo=lo_j[valid].T, lhs_hi=hi_j[valid].T, rhs_lo=b[valid],
                                             relation=bnd.relation, scale=max(1.0, abs(sol.F_star)), points=kk[valid],
                                             point_name="round", value=v_j[valid].T,
                                             trivial=_nan_none(tv[j], {"t": kk[valid]}) if tv else None,
                                             trivial_what=what)
                            curves = {"instance": kidx, "grid": len(rec_j["grid"]) - 1,
                                      "scale": max(1.0, abs(sol.F_star))}
                            st_r = test.statistic_of(r)
                            st_f = st_r.of_family(family) if st_r.kind == "mean" else None
                            if bnd.name in streamed:     # judged at every round from the stream
                                judged, failing = every.result(j, r.name, bnd.name)
                                item = Observed(r.name, bnd.name, case, None, instance=inst, reason=reason,
                                                save=_saver(inst), key=kidx, judged=judged, failing=failing,
                                                curves=curves, statistic=st_f)
                            else:                        # judged at the recorded rounds only
                                item = Observed(r.name, bnd.name, case, cmp, instance=inst, reason=reason,
                                                save=_saver(inst), key=kidx, curves=curves, statistic=st_f)
                            obs.items.append(item)
                            part["bound"][r.name] = b
                            part["readings"][r.name] = cmp.judge(st_f or st_r)
                        if bi == 0 and (test.rate is not None or claim.claimed_rate is not None):
                            if R == 1:
                                floor = hi_j[:, 0] - v_j[:, 0]
                                fit = V.fit_rate(kk, v_j[:, 0], floor)
                            else:
                                se = np.maximum(lo_j.std(1, ddof=1), hi_j.std(1, ddof=1)) / np.sqrt(R)
                                floor = np.maximum(hi_j.mean(1) - lo_j.mean(1), V.POLICY.statistical_z * se)
                                fit = V.fit_rate(kk, v_j.mean(1), floor)
                            entry["fit"] = fit
                            rec_j.setdefault("fit", fit)
                            obs.fits.append(fit)
        for rec_j in records:       # the standard fields: first grid point, first bound
            if rec_j is not None and rec_j["grid"]:
                first = rec_j["grid"][0]["parts"][bounds[0].name]
                rec_j.update(metric=first["metric"], metric_interval=first["metric_interval"], bound=first["bound"],
                             readings=first["readings"])
                if len(self.param_grid) == 1 and len(bounds) == 1:
                    del rec_j["grid"]
        obs.records = [r for r in records if r is not None]
        obs.side_conditions = {n: {"verdict": V.combine(d["verdicts"]), "description": d["description"],
                                   "violated_instances": sum(v == V.VIOLATED for v in d["verdicts"])}
                               for n, d in side.items()}
        obs.evidence = {"rounds": rounds, "instances": len(insts), "replicates_per_instance": R,
                        "batches": len(groups), "record_points": int(len(grid)),
                        "rounds_checked": "every round" if streams_every_round(self.algorithm) and not self.measured
                        else f"the {len(grid)} recorded rounds (a measured quantity is known only after the run)"
                        if self.measured else
                        f"the {len(grid)} recorded rounds (the algorithm does not stream every round)",
                        "mode": "full" if config.full else "quick"}
        if len(self.param_grid) > 1:
            obs.evidence["param_grid"] = list(self.param_grid)
        if self.measured:
            obs.evidence["measured"] = {
                name: {"label": label, "a_priori": False, "values": measured_values.get(name, []),
                       "description": f"{label} is measured during the run, not known a priori: per instance the "
                                      "largest over the rounds of the mean over its runs of each round's largest "
                                      "recorded value"}
                for name, label in self.measured.items()}
        return obs

    def _local_steps(self, claim, values, B: int) -> int:
        """``E`` for this batch (1 without schedules per local step): one integer >= 1 for every run."""
        if not self.per_local_step:
            return 1
        if isinstance(self.local_steps, (int, np.integer)):
            return int(self.local_steps)
        from fedcheck.core.schedules import evaluate_expr
        v = np.broadcast_to(declared(claim, "local steps", evaluate_expr, self.local_steps, values), (B,))
        if not (np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(v >= 1) and np.all(v == v[0])):
            raise BadInput(f"{claim.id}: Rounds(local_steps={self.local_steps}) is {sorted(set(map(float, v)))[:4]}: "
                           "it must be one integer >= 1 for every run of a batch")
        return int(v[0])

    def _measured_values(self, trace, rounds: int, B: int, I: int, R: int) -> dict:
        """``{name: (I,)}``: per instance, the largest over the rounds of the mean over its ``R`` runs of what the
        algorithm recorded (``trace.final["recorded:<name>"]``, ``(B, rounds)``: runs first, as every final value)."""
        got = getattr(trace, "final", None) or {}
        out = {}
        for name in self.measured:
            if f"recorded:{name}" not in got:
                raise contract_error(self.algorithm, "algorithm", f"recorded no {name!r}; Rounds(measured=...) reads "
                                     f"it from the run: record it in the round function with ctx.record({name!r}, "
                                     "values)")
            a = np.asarray(got[f"recorded:{name}"], dtype=float)
            if a.ndim != 2 or a.shape[0] != B:
                raise contract_error(self.algorithm, "algorithm", f"recorded {name!r} of shape {a.shape}, not "
                                     f"({B}, rounds)")
            per_round = a.T.reshape(a.shape[1], I, R).mean(2)
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)     # a round that recorded nothing
                out[name] = np.nanmax(per_round, axis=0) if a.shape[1] else np.full(I, np.nan)
        return out


def _checked_recorder(rec, B: int):
    """A user's recorder, guarded, whose every output is checked: a mapping of per-run values (leading axis ``B``)."""
    if not callable(rec):
        raise BadInput(f"Rounds(recorder=...) must return a recorder function (k, X, x) -> dict, not "
                       f"{type(rec).__name__}")
    call = guard(rec, "recorder")

    def checked(k, X, x):
        out = call(k, X, x)
        if not isinstance(out, dict) or not all(np.ndim(v) >= 1 and np.shape(v)[0] == B for v in out.values()):
            raise contract_error(rec, "recorder", f"returned {type(out).__name__} {str(out)[:60]!r}; a recorder returns "
                                 f"a dict of per-run values (each of leading size B = {B})")
        return out
    checked.__dict__.update(getattr(rec, "__dict__", {}))
    return checked


def _check_trace(algorithm, trace, K: int, B: int) -> None:
    """A user's batched algorithm returns a :class:`Trace` of its ``(len(grid), B)`` recorded metrics."""
    if is_own(algorithm):
        return
    ok = hasattr(trace, "rounds") and isinstance(getattr(trace, "metrics", None), dict) and \
        isinstance(getattr(trace, "final", {}), dict) and np.ndim(trace.rounds) == 1 and \
        all(np.ndim(v) >= 2 and np.shape(v)[:2] == (np.size(trace.rounds), B) for v in trace.metrics.values())
    if not ok:
        raise contract_error(algorithm, "algorithm", f"returned {type(trace).__name__}; a batched algorithm returns a "
                             f"fedcheck Trace whose metrics are (recorded rounds, B = {B}) arrays")


def _nonfinite(trace, metrics, sols, valid_from: int = 1) -> np.ndarray | None:
    """Per run, the first round from which its iterates (``trace.final["nonfinite_round"]``, noted by the round-function
    contract) or its measured quantity on the recorded rounds the bounds cover are not finite; 0 where they stay
    finite."""
    out = None
    nf = (trace.final or {}).get("nonfinite_round")
    if nf is not None:
        out = np.asarray(nf, dtype=float).copy()
    kk = np.asarray(trace.rounds, dtype=float)
    for m in metrics:
        try:
            value = np.asarray(m(trace.metrics, sols)[0], dtype=float)
        except (KeyError, UserCodeError):
            continue
        if value.ndim != 2 or value.shape[0] != kk.size:
            continue
        bad = ~np.isfinite(value) & (kk >= valid_from)[:, None]
        if bad.any():
            first = np.where(bad.any(0), np.maximum(kk[np.argmax(bad, axis=0)] - 1, 1), 0.0)
            out = first if out is None else np.where(out > 0, out, first)
    return out


# ---------------------------------------------------------------------------------------------------
# declarations checked when they are loaded (before anything runs)
import weakref  # noqa: E402

_DECLARATIONS_CHECKED: "weakref.WeakSet" = weakref.WeakSet()


def _instance_constants(family) -> set | None:
    """The constants the instances ``family`` draws supply themselves (their class's ``CONSTANT_NAMES``); ``set()``
    for a class without its own constants; ``None`` when it cannot be told (a class with ``constant()`` but no list
    of names, or no family: then any name may be one)."""
    import inspect
    import typing
    if family is None:
        return None
    try:
        cls = typing.get_type_hints(type(family).draw).get("return")
    except Exception:  # noqa: BLE001 - no usable annotation: draw one instance and look at it
        cls = None
    if not inspect.isclass(cls):
        cls = type(call_user(family.draw, 0, role="instance family"))
    names = getattr(cls, "CONSTANT_NAMES", None)
    if names is not None:
        return set(names)
    return None if callable(getattr(cls, "constant", None)) else set()


def check_declaration(claim) -> None:
    """Refuse (:class:`~fedcheck.core.errors.BadInput`, one line naming the claim and the symbol) a bound or schedule
    of a :class:`Rounds` or :class:`Horizons` claim with a free symbol that is neither one of the claim's parameters,
    a known constant (:func:`fedcheck.problems.constants.known_constants`, the instance class's own ``CONSTANT_NAMES``)
    nor the axis variable (``t`` for rounds, ``T`` for horizons: a horizon's schedule may depend on ``T`` only), and
    one that cannot be evaluated at all.  Called when a user's claim is loaded (``--theorem-file``) and before a
    ``Claim`` object given to the API runs."""
    from fedcheck.core.evidence import BoundTest
    from fedcheck.problems.constants import known_constants
    if claim in _DECLARATIONS_CHECKED:
        return
    ev = claim.evidence
    exp = getattr(ev, "experiment", None) if isinstance(ev, BoundTest) else None
    if not isinstance(exp, (Rounds, Horizons)):
        return
    _check_symbols(claim, ev, exp, known_constants)
    _check_sizes(claim, exp)
    _DECLARATIONS_CHECKED.add(claim)


def _check_sizes(claim, exp) -> None:
    """The declared rounds, horizons and seeds against the memory estimate the ``--rounds`` option gets."""
    from fedcheck.core.claim import RunConfig
    from fedcheck.core.memory import refuse_if_too_big
    sizes = (f"rounds={exp.rounds}, seeds={exp.seeds}" if isinstance(exp, Rounds) else
             "; ".join(f"{c.name!r}: horizons up to {max(c.horizons)}, seeds={c.seeds}" for c in exp.cases))
    refuse_if_too_big(exp.memory_estimate(claim, RunConfig()), f"{claim.id} ({sizes})",
                      "declare fewer rounds, horizons or seeds")


def _check_symbols(claim, ev, exp, known_constants) -> None:
    rounds = isinstance(exp, Rounds)
    axis, other = (t_sym, T_sym) if rounds else (T_sym, t_sym)
    params = set(claim.params) | set(claim.domain.params)
    if rounds:
        params |= {k for g in exp.param_grid for k in g}
        family = exp.family
    else:
        params |= {k for c in exp.cases for k in c.settings}
        fams = {id(c.family): c.family for c in exp.cases}
        family = next(iter(fams.values())) if len(fams) == 1 else None
    own = None if (not rounds and exp.context is not None) else _instance_constants(family)
    constants = None if own is None else set(known_constants()) | own
    measures = getattr(exp, "runner", None) and getattr(exp.runner, "measures", None)
    if not rounds and measures:
        for b in ev.bounds:
            if b.metric not in measures:
                raise BadInput(f"{claim.id}: bound {b.name!r} measures {b.metric!r}, which its runner does not give "
                               f"(it measures {', '.join(map(repr, measures))}: Bound(..., metric={measures[0]!r}))")
    exprs = [(f"bound {b.name!r}", b.expr) for b in ev.bounds if b.expr is not None]
    exprs += [(f"schedule {k!r}", e) for k, e in exp.schedules.items()]
    if rounds and isinstance(getattr(exp, "local_steps", None), sp.Basic):
        exprs.append(("Rounds(local_steps=...)", exp.local_steps))
    measured = set(getattr(exp, "measured", {}) or {})
    schedule_names = set(exp.schedules) if not rounds else set()
    for what, expr in exprs:
        for r in claim.readings:
            e = sp.sympify(expr).subs(dict(r.substitutions))
            reading = f" (reading {r.name!r})" if len(claim.readings) > 1 else ""
            for sym in sorted(e.free_symbols, key=lambda z: z.name):
                name = sym.name
                if name in params or (what.startswith("bound") and name in schedule_names) or \
                        (what.startswith("bound") and name in measured):
                    continue
                if name == axis.name:
                    if sym != axis:
                        raise BadInput(f"{claim.id}: {what}{reading} uses a symbol {name!r} with other assumptions than "
                                       f"the {'round' if rounds else 'horizon'} variable fedcheck.symbols.{name}; "
                                       f"import it from fedcheck.symbols")
                    continue
                if name == other.name and not rounds:
                    raise BadInput(f"{claim.id}: {what}{reading} depends on the round t; over horizons a schedule or "
                                   "bound may depend on the horizon T only (and on parameters and constants)")
                if constants is None or name in constants:
                    continue
                hint = (" (the horizon T is the variable of a Horizons experiment; this claim runs over rounds t)"
                        if name == "T" else "")
                raise BadInput(f"{claim.id}: {what}{reading} uses the symbol {name!r}, which is neither a parameter "
                               f"of the claim (params: {', '.join(sorted(params)) or 'none'}), a known constant nor the "
                               f"{'round t' if rounds else 'horizon T'}{hint}; declare it in params=, or "
                               f"register_constant({name!r}, ...)")
            values = {z.name: np.ones(2) for z in e.free_symbols if z != axis}
            if what.startswith("Rounds(local_steps"):
                continue
            try:
                evaluate_schedule(e, np.array([1.0, 2.0]), values, 2, t_symbol=axis)
            except Exception as exc:  # noqa: BLE001 - a declaration that cannot be evaluated at all
                raise BadInput(f"{claim.id}: {what}{reading} cannot be evaluated: {type(exc).__name__}: "
                               f"{' '.join(str(exc).split())[:200]}") from None


# ---------------------------------------------------------------------------------------------------
def takes_instance(claim, inst) -> str | None:
    """``None`` when ``claim`` can run on the given problem instance, else why not (``verify --instance``)."""
    from fedcheck.core.evidence import BoundTest, Measurement
    ev = claim.evidence
    if isinstance(ev, BoundTest):
        exp = ev.experiment
        accepts = getattr(exp, "accepts", None)
        if isinstance(exp, Rounds):
            ok = type(inst).__name__ == "Instance" if accepts is None else bool(call_user(accepts, inst, role="accepts"))
        elif isinstance(exp, Horizons):
            ok = True if accepts is None else bool(call_user(accepts, inst, role="accepts"))
        elif accepts is None:
            return f"{claim.id} builds its own cases and does not run on given instances"
        else:
            ok = bool(call_user(accepts, inst, role="accepts"))
    elif isinstance(ev, Measurement) and ev.accepts is not None:
        ok = bool(call_user(ev.accepts, inst, role="accepts"))
    else:
        return f"{claim.id} does not run on instances (its evidence is a {type(ev).__name__.lower()})"
    if not ok:
        return f"{claim.id} runs on its own problem class; this instance is not of it"
    props = getattr(inst, "properties", None)
    if props is not None:
        if props().get("weights") == "p_k" and "weights" not in claim.domain.fixed:
            return (f"{claim.id} is stated for F = (1/n) sum_k f_k and its method averages uniformly; this instance "
                    "has client weights p_k (a claim about sum_k p_k f_k says Domain(fixed={'weights': 'p_k'}))")
        claim.domain.check_instance(props())
    claim.domain.check_premises(inst)
    return None


def param_domain(claim, name: str) -> tuple:
    """The range of parameter ``name``: the claim's declared domain, else the SymPy assumption of the symbol of
    that name in its schedules and bounds (positive: ``> 0``, nonnegative: ``>= 0``), else any finite number."""
    if name in claim.domain.params:
        return claim.domain.params[name]
    exprs = []
    ev = claim.evidence
    exp = getattr(ev, "experiment", None)
    exprs += list(getattr(exp, "schedules", {}).values())
    exprs += [b.expr for b in getattr(ev, "bounds", ()) if b.expr is not None]
    for e in exprs:
        for s_ in sp.sympify(e).free_symbols:
            if s_.name == name:
                if s_.is_integer:
                    return "int > 0" if s_.is_positive else "int >= 0" if s_.is_nonnegative else "int"
                if s_.is_positive:
                    return ">0"
                if s_.is_nonnegative:
                    return ">=0"
    return None


# ---------------------------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class HorizonCase:
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

    def declared_horizons(self, config) -> list[int]:
        return [int(h) for h in config.size(self.horizons, self.full_horizons)]     # as declared (before --rounds)

    def pick(self, config) -> tuple[list[int], list[int], int]:
        """Seeds, horizons and run seeds in this mode.  ``--rounds R`` (``config.rounds``) keeps the declared horizons
        ``T <= R`` -- as it keeps the rounds ``t <= R`` of a claim over rounds: a violation at a declared horizon
        below ``R`` is never dropped -- and runs the single horizon ``T = R`` only when no declared horizon is
        ``<= R``; :func:`horizons_note` says which (in the terminal and in the claim's evidence)."""
        seeds = config.seed_list(self.seeds, self.full_seeds)
        hs = config.horizons(self.horizons, self.full_horizons)
        rs = config.size(self.run_seeds, self.full_run_seeds)       # runs per seeded instance (a sample size)
        return seeds, hs, int(rs)


@dataclass(frozen=True)
class Horizons:
    """One run per horizon ``T`` (see the module doc).

    ``runner(instances, solutions, schedules, T, settings, run_seeds) -> {metric: array (rows,) or (R, rows)
    | {"value", "lo", "hi", "scale"}}`` runs one batch, one row per ``(reading, instance, run seed)``; or
    ``algorithm=``, a batched method, for the runner :func:`algorithm_runner` makes of it;
    ``cases``: :class:`HorizonCase` s; ``solver(instance, use_cache=)`` (default
    :func:`fedcheck.problems.solve.solve_consensus`); ``context(instance, solution,
    params)`` builds what :func:`fedcheck.problems.constants.resolve` reads; ``rate_metric``: the bound
    whose measured quantity is fitted against ``T``; ``accepts(instance)``: which given instances the
    runner can run; ``trivial``: ``{metric: Trivial or SymPy expression}``, the trivial bounds of the measured
    quantities (vacuity; a runner made by :func:`algorithm_runner` brings its metric's)."""

    runner: Callable | None = None
    cases: tuple = ()
    solver: Callable | None = None
    schedules: dict = field(default_factory=dict)
    rate_metric: str | None = None
    accepts: Callable | None = None
    context: Callable | None = None
    algorithm: Callable | None = None
    trivial: dict = field(default_factory=dict)
    axis = "horizon"

    def __post_init__(self):
        object.__setattr__(self, "schedules", {k: sp.sympify(v) for k, v in self.schedules.items()})
        object.__setattr__(self, "cases", tuple(self.cases))
        object.__setattr__(self, "trivial", {k: as_trivial(v) for k, v in dict(self.trivial).items()})
        if self.runner is None and self.algorithm is not None:
            object.__setattr__(self, "runner", algorithm_runner(self.algorithm))
        if self.solver is None:
            from fedcheck.problems.solve import solve_consensus
            object.__setattr__(self, "solver", solve_consensus)

    def validate(self, claim, test) -> None:
        if not callable(self.runner):
            raise TypeError(f"{claim.id}: Horizons needs runner=... or algorithm=...")
        if not self.cases:
            raise TypeError(f"{claim.id}: Horizons needs at least one HorizonCase")
        for c in self.cases:
            if not isinstance(c, HorizonCase):
                raise TypeError(f"{claim.id}: Horizons(cases=...) must be HorizonCase(...)s, not {type(c).__name__}")
            for name in ("horizons", "full_horizons"):
                hs = getattr(c, name)
                if hs is not None and (not hs or not all(isinstance(h, (int, np.integer)) and not isinstance(h, bool)
                                                         and h >= 1 for h in hs)):
                    raise BadValue(f"{claim.id}: HorizonCase {c.name!r}: {name} must be integers >= 1, not {hs!r}")
            for name in ("seeds", "full_seeds", "run_seeds", "full_run_seeds"):
                v = getattr(c, name)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
                    raise BadValue(f"{claim.id}: HorizonCase {c.name!r}: {name} must be an integer >= 1, not {v!r}")
            if not callable(getattr(c.family, "draw", None)):
                raise TypeError(f"{claim.id}: HorizonCase {c.name!r}: its family must have draw(seed)")
        missing = [b.name for b in test.bounds if b.expr is None]
        if missing:
            raise TypeError(f"{claim.id}: Horizons evaluates SymPy bounds; bound(s) {missing} have no expression")

    def memory_estimate(self, claim, config) -> float:
        """Bytes the largest case needs at least: every schedule is a ``(T, rows)`` array at its largest horizon."""
        need = 0.0
        for c in self.cases:
            rows = (len(config.instances) if config.instances else config.seed_count(c.seeds, c.full_seeds)) * (
                config.size(c.run_seeds, c.full_run_seeds))
            need = max(need, 8.0 * max(config.horizons(c.horizons, c.full_horizons)) * rows * (len(self.schedules) + 2))
        return need

    def _ctx(self, inst, sol, params):
        if self.context is not None:
            return call_user(self.context, inst, sol, params, role="context")
        from fedcheck.problems.constants import InstanceContext
        make = getattr(inst, "make_loss", None)
        return InstanceContext(inst, make() if make else None, sol, params)

    def observe(self, claim, test, config, params) -> Observations:
        from fedcheck.problems.constants import Value, resolve
        readings = claim.readings
        bounds = test.bounds
        obs = Observations()
        rate_b = self.rate_metric or bounds[0].name
        obs.formula = {
            "bound": sp.latex(sp.Matrix([b.expr for b in bounds]).T) if len(bounds) > 1 else latex(bounds[0].expr),
            "bound_text": "; ".join(f"{b.metric} <= {sp.sstr(b.expr)}" for b in bounds),
            "bounds": {b.name: {"metric": b.metric, "latex": latex(b.expr), "description": b.description}
                       for b in bounds},
            "schedules": {k: latex(v) for k, v in self.schedules.items()},
            "readings": {r.name: {"substitutions": {sp.sstr(k): latex(v) for k, v in dict(r.substitutions).items()},
                                  "schedules": {k: latex(v.subs(dict(r.substitutions))) for k, v in self.schedules.items()},
                                  "paper": r.paper, "description": r.description} for r in readings},
            "metric": next((f"{b.metric}: {b.description}" if b.description else b.metric)
                           for b in bounds if b.name == rate_b) if any(b.name == rate_b for b in bounds)
            else ", ".join(dict.fromkeys(b.metric for b in bounds)),
        }
        if config.instances and self.accepts is not None and \
                not all(call_user(self.accepts, i, role="accepts") for i in config.instances):
            obs.reasons.append(f"{claim.id} runs on its own problem class; the given instance(s) are not of it")
            return obs
        needed = ({s.name for s in _needed(list(self.schedules.values()), readings)}
                  | ({s.name for s in _needed([b.expr for b in bounds], readings)} - set(self.schedules)))
        needed -= {T_sym.name}
        pending: list = []      # the cases' record builders, run once the claim's mean family is known
        for case in self.cases:
            seeds, horizons, run_seeds = case.pick(config)
            insts = list(config.instances) if config.instances else \
                [call_user(case.family.draw, s, role="instance family") for s in seeds]
            from fedcheck.problems.solve import solve_all
            sols = solve_all(guard(self.solver, "solver"), insts, config.use_cache, config.progress,
                             f"{claim.id} solving")
            P = {**params, **case.settings, **(config.params or {})}
            consts, ctxs = [], []
            for inst, sol in zip(insts, sols):
                ctx = self._ctx(inst, sol, P)
                ctxs.append(ctx)
                c = {}
                for name in sorted(needed):
                    try:
                        c[name] = resolve(name, ctx)
                    except (KeyError, TypeError, ValueError):
                        c[name] = Value(float("nan"), False, "unavailable")
                consts.append(c)
            reasons = [s.reason for s in sols]
            obs.reasons.extend(r for r in reasons if r)
            known = {**dict(getattr(self.runner, "trivial", None) or {}), **self.trivial}
            triv = trivial_bounds(claim, {b.name: as_trivial(known.get(b.metric)) for b in bounds}, bounds, ctxs,
                                  frozenset(self.schedules))
            series: dict = {}     # (inst, reading, bound) -> {T: (value, bound)}
            evid: dict = {}       # (inst, reading) -> {T: the runner's per-run evidence}
            for T in horizons:
                combos = list(itertools.product(range(len(readings)), range(len(insts)), range(run_seeds)))
                r_idx = np.array([c[0] for c in combos])
                i_idx = np.array([c[1] for c in combos])
                s_idx = np.array([c[2] for c in combos])
                B = len(combos)
                values = {name: np.array([consts[i][name].value for i in i_idx]) for name in (consts[0] if consts else {})}
                for name, expr in self.schedules.items():
                    out = np.empty(B)
                    for r, reading in enumerate(readings):
                        sel = r_idx == r
                        out[sel] = declared(claim, f"schedule {name!r}", _eval_T, expr.subs(dict(reading.substitutions)),
                                            {k: v[sel] for k, v in values.items()}, T, int(sel.sum()))
                    values[name] = out
                sched = {name: values[name] for name in self.schedules}
                meas = call_user(self.runner, [insts[i] for i in i_idx], [sols[i] for i in i_idx], sched, T,
                                 dict(case.settings), s_idx, role="runner")
                missing = [b.metric for b in bounds if not isinstance(meas, dict) or b.metric not in meas]
                if missing:
                    gives = sorted(meas) if isinstance(meas, dict) else []
                    what = (f"returned {type(meas).__name__} without the measured quantities {missing} of the bounds "
                            f"(a dict {{metric: values}}; it gave {gives})")
                    if is_own(self.runner):     # fedcheck's runner: the bounds name a quantity it does not measure
                        raise BadInput(f"{claim.id}: the bounds measure {missing}, which the runner does not give "
                                       f"(it gives {gives}: Bound(..., metric=...))")
                    raise contract_error(self.runner, "runner", what)
                for b in bounds if not is_own(self.runner) else ():
                    try:
                        rows = np.shape(measured(meas[b.metric])["value"])
                    except (TypeError, ValueError, KeyError) as e:
                        rows = (f"{type(e).__name__}: {e}",)
                    if not rows or rows[-1] != B:
                        raise contract_error(self.runner, "runner", f"returned {b.metric!r} of shape {rows}; a runner "
                                             f"returns one value per row (last axis {B})")
                extra = meas.get("_evidence") or {}
                for j in range(B):
                    if s_idx[j] == 0 and extra:
                        evid.setdefault((int(i_idx[j]), readings[r_idx[j]].name), {})[T] = {
                            k: (float(v[j]) if np.ndim(v) == 1 else None) for k, v in extra.items()}
                for bnd in bounds:
                    bvals = np.empty(B)
                    for r, reading in enumerate(readings):
                        sel = r_idx == r
                        bvals[sel] = declared(claim, f"bound {bnd.name!r}", _eval_T, bnd.expr.subs(dict(reading.substitutions)),
                                             {k: v[sel] for k, v in values.items()}, T, int(sel.sum()))
                    m = measured(meas[bnd.metric])
                    for r, reading in enumerate(readings):
                        for i, inst in enumerate(insts):
                            rows = np.nonzero((r_idx == r) & (i_idx == i))[0]
                            lo, hi, val = m["lo"][..., rows], m["hi"][..., rows], m["value"][..., rows]
                            per_round = val.ndim == 2
                            # (rows,) -> one point per run; (K, rows) -> K points per run (a per-round inequality)
                            L = lo.T if per_round else lo[:, None]
                            H = hi.T if per_round else hi[:, None]
                            Vv = val.T if per_round else val[:, None]
                            sc = np.broadcast_to(m["scale"], m["value"].shape)[..., rows]
                            scale = float(np.max(sc)) if sc.size else 1.0
                            pts = list(range(L.shape[1])) if per_round else [T]
                            tv, what = triv.get(bnd.name, (None, ""))
                            cmp = Comparison(lhs_lo=L, lhs_hi=H, rhs_lo=bvals[rows[0]], relation=bnd.relation,
                                             scale=scale, points=pts, point_name="round" if per_round else "T",
                                             value=Vv, trivial=_nan_none(tv[i], {"T": T, **{
                                                 k: values[k][rows[0]] for k in self.schedules}}) if tv else None,
                                             trivial_what=what)
                            label = f"{case.name}, {_label(inst)}" + ("" if per_round else f", T={T}")
                            obs.items.append(Observed(reading.name, bnd.name, label, cmp, instance=inst,
                                                      reason=reasons[i], save=_saver(inst), key=(case.name, i)))
                            if not per_round:
                                series.setdefault((i, reading.name, bnd.name), {})[T] = (
                                    float(val[0]), float(bvals[rows[0]]), cmp, test.statistic_of(reading))
            def build(fam, case=case, insts=insts, sols=sols, consts=consts, reasons=reasons, horizons=horizons,
                      series=series, evid=evid):
                """The case's records, judged with the claim's Bonferroni family (known once every case ran)."""
                series = {key: {T: (v, b, cmp.judge(st.of_family(fam)))
                                for T, (v, b, cmp, st) in d.items()} for key, d in series.items()}
                for i, (inst, sol) in enumerate(zip(insts, sols)):
                    rec = {"case": case.name, "seed": getattr(inst, "seed", None),
                           "instance": inst.describe() if hasattr(inst, "describe") else str(inst),
                           "F_star": getattr(sol, "F_star", None), "F_star_lower": getattr(sol, "F_lower", None),
                           "solver": sol.record() if hasattr(sol, "record") else {},
                           "constants": {k: {"value": v.value, "exact": v.exact, "note": v.note} for k, v in consts[i].items()},
                           "rounds": [float(T) for T in horizons], "x_label": "T (horizon)",
                           "settings": {k: (v if isinstance(v, (int, float, str, bool)) else str(v))
                                        for k, v in case.settings.items()},
                           "bound": {}, "readings": {}, "horizons": {}}
                    if reasons[i]:
                        rec["inconclusive_reason"] = reasons[i]
                    for reading in readings:
                        data = series.get((i, reading.name, rate_b), {})
                        vals = np.array([data.get(T, (np.nan,))[0] for T in horizons], dtype=float)
                        rec["bound"][reading.name] = [data.get(T, (None, None))[1] for T in horizons]
                        rec["horizons"][reading.name] = {str(T): {**{b.name: series.get((i, reading.name, b.name), {}).get(T, (None, None, None))[2]
                                                                     for b in bounds},
                                                                  **({"evidence": evid[(i, reading.name)][T]}
                                                                     if T in evid.get((i, reading.name), {}) else {})}
                                                         for T in horizons}
                        all_codes = [series.get((i, reading.name, b.name), {}).get(T, (None, None, {"verdict": V.INCONCLUSIVE}))[2]["verdict"]
                                     for b in bounds for T in horizons]
                        ratios = [d[2]["max_ratio"] for b in bounds for d in series.get((i, reading.name, b.name), {}).values()
                                  if d[2]["max_ratio"] is not None and np.isfinite(d[2]["max_ratio"])]
                        rec["readings"][reading.name] = {"verdict": V.combine(all_codes) if all_codes else V.INCONCLUSIVE,
                                                         "max_ratio": max(ratios) if ratios else None}
                        if reading is readings[0]:
                            rec["metric"] = vals
                        if self.rate_metric and len(horizons) >= 2:
                            fit = V.fit_rate(np.array(horizons, float), vals, 0.0)
                            rec.setdefault("fits", {})[reading.name] = fit
                            paper_first = next((r for r in readings if r.paper), readings[0])
                            if reading is paper_first:
                                rec["fit"] = fit
                                obs.fits.append(fit)
                    obs.records.append(rec)
            pending.append(build)
        from fedcheck.core.runner import mean_family
        fam = mean_family(obs.items, lambda item: item.statistic or test.statistic_of(
            next((r for r in readings if r.name == item.reading), None)))
        for build in pending:
            build(fam)
        obs.evidence = {"cases": [{"name": c.name, "family": getattr(c.family, "label", str(c.family)),
                                   "settings": {k: (v if isinstance(v, (int, float, str, bool)) else str(v))
                                                for k, v in c.settings.items()},
                                   "horizons": list(c.pick(config)[1]), "seeds": len(c.pick(config)[0]),
                                   "run_seeds": c.pick(config)[2],
                                   "declared_horizons": c.declared_horizons(config)} for c in self.cases]}
        if config.rounds:
            obs.evidence["rounds_option"] = horizons_note(claim, config)
        return obs


def horizons_note(claim, config) -> str | None:
    """What ``--rounds`` does to a claim over horizons (shown in the terminal and kept in its evidence)."""
    exp = getattr(claim.evidence, "experiment", None)
    if not isinstance(exp, Horizons) or not config.rounds:
        return None
    allh = sorted({h for c in exp.cases for h in c.declared_horizons(config)})
    run = sorted({h for c in exp.cases for h in c.pick(config)[1]})
    declared = ", ".join(map(str, allh))
    if set(run) <= set(allh):
        return (f"--rounds {config.rounds}: {claim.id} is stated over horizons; only its declared horizons T <= "
                f"{config.rounds} are run (T = {', '.join(map(str, run))} of {declared})")
    return (f"--rounds {config.rounds}: {claim.id} is stated over horizons (T = {declared}); none is <= "
            f"{config.rounds}, so it runs at T = {', '.join(map(str, run))} only, a horizon it does not declare")


def algorithm_runner(algorithm: Callable, metric: "Metric | None" = None, name: str = "gap",
                     **algorithm_kwargs) -> Callable:
    """A :class:`Horizons` runner from a batched algorithm: each row runs ``T`` rounds with its schedule values
    (constant over the run, as a horizon-dependent step is), and ``metric`` (default ``F - F*``) of the server
    point after ``T`` rounds is measured as ``name``.  Stochastic algorithms get one stream seed per row
    (``SeedSequence`` of the instance seed and the row's run seed)."""
    from fedcheck.problems.instances import InstanceBatch
    metric = metric or suboptimality

    def runner(insts, sols, schedules, T, settings, run_seeds):
        batch = InstanceBatch(insts)
        sched = {k: np.broadcast_to(np.asarray(v, dtype=float)[None, :], (T, batch.B)).copy()
                 for k, v in schedules.items()}
        seeds = np.array([int(np.random.SeedSequence([int(i.seed or 0), int(r), int(T)]).generate_state(1)[0])
                          for i, r in zip(insts, run_seeds)], dtype=np.int64)
        kw = {**algorithm_kwargs, **{k: v for k, v in settings.items() if k not in sched}}
        trace = call_user(algorithm, batch, rounds=T, grid=np.array([T + 1]), seeds=seeds, **sched, **kw,
                          role="algorithm")
        value, lo, hi = metric(trace.metrics, sols)
        return {name: {"value": value[-1], "lo": lo[-1], "hi": hi[-1],
                       "scale": np.array([max(1.0, abs(s.F_star)) for s in sols])}}
    runner.measures = (name,)      # what it measures (a bound's metric must be one of them: checked at load)
    runner.trivial = {name: metric.trivial} if getattr(metric, "trivial", None) is not None else {}
    return runner


def _eval_T(expr, values: dict, T: int, B: int) -> np.ndarray:
    return evaluate_schedule(sp.sympify(expr), np.array([float(T)]), values, B, t_symbol=T_sym)[0]


# ---------------------------------------------------------------------------------------------------
@dataclass
class Case:
    """One instance (or draw) of a :class:`Cases` experiment: a :class:`~fedcheck.core.evidence.Comparison`
    per reading name (or per ``(bound, reading)`` pair)."""

    label: str
    inequalities: dict
    instance: Any = field(default_factory=dict)
    evidence: dict = field(default_factory=dict)
    series: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    save: Callable[[str], list] | None = None     # save(path_stem) -> paths written
    reason: str | None = None                     # why the case cannot decide (an inaccurate solve)
    problem: Any = None                           # the instance it ran on (``verify --instance``, ``search``)
    used: dict = field(default_factory=dict)      # the values the case ran at (MeasureResult.used): deviations are checked


@dataclass(frozen=True)
class Cases:
    """Comparisons built by a function: ``cases(config, params) -> list[Case]``."""

    cases: Callable
    formula: dict = field(default_factory=dict)
    accepts: Callable | None = None      # which given problems the cases function runs on (None: its own only)
    families: tuple = ()                 # the families it draws from (``search``), when it takes instances
    axis = "point"

    def observe(self, claim, test, config, params) -> Observations:
        obs = Observations()
        obs.formula = dict(self.formula)
        obs.formula.setdefault("readings", {r.name: {"paper": r.paper, "description": r.description}
                                            for r in claim.readings})
        cases = call_user(self.cases, config, params, role="case builder")
        try:
            cases = list(cases)
        except TypeError:
            raise contract_error(self.cases, "case builder", f"returned {type(cases).__name__}, not a list of Case") \
                from None
        if any(not isinstance(c, Case) for c in cases):
            bad = next(c for c in cases if not isinstance(c, Case))
            raise contract_error(self.cases, "case builder", f"returned {type(bad).__name__} among its cases; each "
                                 "must be a fedcheck Case")
        if not is_own(self.cases):
            from fedcheck.core.runner import result_parts_error
            for c in cases:
                why = result_parts_error(c, f"a Case {c.label!r}")
                if not isinstance(c.inequalities, dict) or \
                        not all(isinstance(v, Comparison) for v in c.inequalities.values()):
                    why = f"returned a Case {c.label!r} whose inequalities are not a dict of fedcheck Comparisons"
                if why:
                    raise contract_error(self.cases, "case builder", why)
        bound_name = test.bounds[0].name if test.bounds else "claim"
        later: list = []        # the cases' summaries, judged once the claim's mean family is known
        for case in cases:
            summ = {}
            for key, cmp in case.inequalities.items():
                bound, reading = (key if isinstance(key, tuple) else (bound_name, key))
                obs.items.append(Observed(reading, bound, case.label, cmp, instance=case.problem, reason=case.reason,
                                          save=case.save, key=case.label))
                later.append((summ, reading if not isinstance(key, tuple) else f"{bound} | {reading}", cmp,
                              test.statistic_of(next((r for r in claim.readings if r.name == reading), None))))
            rec = {"label": case.label, "instance": case.instance, "readings": summ, "evidence": case.evidence}
            if case.reason:
                rec["inconclusive_reason"] = case.reason
            obs.records.append(rec)
            obs.series.extend(case.series)
            obs.tables.extend(case.tables)
        from fedcheck.core.runner import mean_family
        fam = mean_family(obs.items, lambda item: item.statistic or test.statistic_of(
            next((r for r in claim.readings if r.name == item.reading), None)))
        for summ, name, cmp, st in later:
            summ[name] = cmp.judge(st.of_family(fam))
        if not cases:
            obs.reasons.append("no case")
        elif all(c.reason for c in cases):
            obs.reasons.extend(sorted({c.reason for c in cases}))
        obs.evidence = {"cases": len(cases)}
        used = {k: v for c in cases for k, v in c.used.items()}
        if used:                # what the cases ran at: declared deviations and stated settings are checked against it
            obs.evidence["used"] = used
        return obs


# ---------------------------------------------------------------------------------------------------
# a proof step between instance constants (fedcheck.core.steps)
from fedcheck.core.steps import INCONCLUSIVE, REFUTED, VERIFIED, StepOutcome, current_witness_dir  # noqa: E402


def instance_inequality(lhs, rhs, instances: Callable[[], Sequence[tuple[str, Any]]], what: str = "",
                        params: dict | None = None, save_dir: str | Path | None = None,
                        stem: str = "witness") -> StepOutcome:
    """``lhs <= rhs`` between instance constants (:mod:`fedcheck.constants`, from exact solves) on each instance of
    ``instances()`` (``(label, Instance)`` pairs), decided by the tolerance policy of :mod:`fedcheck.verdict`:
    ``refuted`` with the first violating instance as witness (written to ``save_dir``, or to the audit's witness
    directory, when given), ``verified on grid`` (the grid: the instances) when all hold, ``inconclusive`` when a
    constant known only by an upper bound stands on the side that would decide, or a solve is not accurate."""
    from fedcheck.problems.constants import InstanceContext, resolve
    from fedcheck.problems.instances import save_instance
    from fedcheck.problems.solve import solve_consensus
    lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
    names = sorted({s.name for s in lhs.free_symbols | rhs.free_symbols})
    pre = f"{what + ': ' if what else ''}"
    rows, undecided = [], []
    insts = list(instances())
    for label, inst in insts:
        sol = solve_consensus(inst)
        if sol.reason:
            undecided.append(f"{label}: {sol.reason}")
            continue
        ctx = InstanceContext(inst, inst.make_loss(), sol, dict(params or {}))
        consts = {nm: resolve(nm, ctx) for nm in names}
        vals = {sym: consts[sym.name].value for sym in lhs.free_symbols | rhs.free_symbols}
        a, b = float(lhs.subs(vals)), float(rhs.subs(vals))
        code = int(V.compare_upper(a, a, b, max(abs(a), abs(b))))
        inexact_l = any(not consts[s.name].exact for s in lhs.free_symbols)
        inexact_r = any(not consts[s.name].exact for s in rhs.free_symbols)
        if code == 2 and inexact_l:
            code = 1   # lhs known only by an upper bound: a violation is not certain
        if code == 0 and inexact_r:
            code = 1   # rhs known only by an upper bound: holding is not certain
        verdict = {0: V.HOLDS, 1: V.INCONCLUSIVE, 2: V.VIOLATED}[code]
        row = {"instance": label, "lhs": a, "rhs": b, "verdict": verdict, "n": inst.n, "m": inst.m, "p": inst.p,
               "set": inst.set.name, "radius": float(inst.set.radius)}
        rows.append(row)
        if verdict == V.VIOLATED:
            witness = dict(row)
            if inst.A.size <= 64:
                witness["A"], witness["b"] = inst.A.tolist(), inst.b.tolist()
            witness["constants"] = {nm: consts[nm].value for nm in names}
            save_dir = save_dir or current_witness_dir()
            if save_dir:
                try:
                    witness["file"] = str(save_instance(inst, Path(save_dir) / f"{stem}.npz"))
                except (ValueError, OSError):
                    pass
            return StepOutcome(REFUTED, f"{pre}false on {label}: lhs {a:.6g} > rhs {b:.6g} (n={inst.n}, m={inst.m}, "
                                        f"p={inst.p}, {inst.set.name} radius {float(inst.set.radius):g})",
                               grid=f"{len(rows)} instance(s) tried, the last one is the witness", witness=witness,
                               details={"instances": rows})
        if verdict == V.INCONCLUSIVE:
            undecided.append(f"{label}: within rounding, or a constant known only by an upper bound")
    grid = f"{len(insts)} instance(s): " + "; ".join(lbl for lbl, _ in insts)
    if undecided:
        return StepOutcome(INCONCLUSIVE, pre + "undecided on " + "; ".join(undecided), grid=grid,
                           details={"instances": rows})
    worst = max(rows, key=lambda r: r["lhs"] / r["rhs"] if r["rhs"] > 0 else -np.inf) if rows else None
    return StepOutcome(VERIFIED, f"{pre}holds on all {len(rows)} instance(s)"
                       + (f"; largest lhs/rhs = {worst['lhs'] / worst['rhs']:.4g} on {worst['instance']}"
                          if worst and worst["rhs"] > 0 else ""), grid=grid, details={"instances": rows})
