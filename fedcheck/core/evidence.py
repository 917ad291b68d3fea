"""Evidence: what decides a claim.  Three kinds, one vocabulary.

* :class:`BoundTest` -- a measured quantity against a bound, ``lhs (<=|>=|==) rhs``, over an axis
  (``round``: every round of one run; ``horizon``: one run per horizon ``T``; ``point``: any other
  points, e.g. the steps of a lemma) with a :class:`Statistic`: ``pathwise`` (every run), ``mean`` (the
  mean over independent runs, with ``z`` standard errors) or ``fraction`` (the fraction of failing runs,
  with a Clopper-Pearson interval, against a claimed maximum).  An *experiment* produces the
  :class:`Observations` (:mod:`fedcheck.experiments` has the generic ones; a custom one is a function).
* :class:`Measurement` -- a function that runs whatever it needs and returns named :class:`Finding` s
  (a paper's empirical or qualitative claim; a counterexample uses the words ``reproduced`` /
  ``not_reproduced``).
* :class:`Proof` -- SymPy facts (:class:`Fact`), each ``(verdict, evidence)``.

One judge (:meth:`Comparison.judge`) turns an observed comparison and a statistic into a verdict with
the tolerance policy of :mod:`fedcheck.core.verdict`; :mod:`fedcheck.core.runner` is the one loop.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy as sp

from fedcheck.core import verdict as V
from fedcheck.core.errors import BadInput
from fedcheck.core.readings import (Deviation, Reading, Source, check_reading_marks, deviations_of, provenance_record,
                                    size_only)

__all__ = ["Statistic", "PATHWISE", "MEAN", "fraction", "Bound", "Comparison", "Observed", "Observations",
           "Finding", "attach_provenance", "Fact", "BoundTest", "Measurement", "MeasureContext", "MeasureResult", "Proof",
           "compare_interval", "clopper_pearson", "reproduced_if", "order_fact", "merge_judgements", "merge_vacuity"]


# ---------------------------------------------------------------------------------------------------
# statistics
@dataclass(frozen=True)
class Statistic:
    """How runs are combined: ``pathwise``, ``mean`` (``z`` standard errors, default the policy's) or
    ``fraction`` (the fraction of failing runs must stay at most ``max_fraction``).

    ``family`` (``mean``): the number of points -- over every instance, reading, bound and point of the axis --
    whose intervals must hold together: each point's interval is Bonferroni-corrected over them
    (:func:`fedcheck.core.verdict.t_multiplier`), so a bound judged at every round is not refuted (nor confirmed)
    by the one point in hundreds whose interval misses by chance.  ``None``: the points of the comparison judged.
    The experiments set it to the whole test's count before judging (a stream judged in blocks of rounds
    included)."""

    kind: str = "pathwise"
    z: float | None = None
    max_fraction: float = 0.0
    family: int | None = None

    def __post_init__(self):
        if self.kind not in ("pathwise", "mean", "fraction"):
            raise ValueError(f"statistic must be pathwise, mean or fraction, not {self.kind!r}")
        if not 0.0 <= self.max_fraction < 1.0:
            raise ValueError("max_fraction must lie in [0, 1)")
        if self.family is not None and int(self.family) < 1:
            raise ValueError(f"family must be at least 1, not {self.family!r}")

    def of_family(self, points: int) -> "Statistic":
        """This statistic with its Bonferroni family set to ``points`` (``mean`` only; others unchanged).  A family
        the statistic already has is kept: a claim's own declaration, or a count an experiment made up front."""
        if self.kind != "mean" or self.family:
            return self
        return replace(self, family=max(1, int(points)))

    def describe(self, samples: int | None = None) -> str:
        if self.kind == "mean":
            z = V.POLICY.statistical_z if self.z is None else self.z
            return (f"mean +- a Student t interval at the level of {z:g} standard errors"
                    + (f" over {samples} runs ({samples - 1} degrees of freedom)" if samples else "")
                    + (f", Bonferroni-corrected over {self.family} points" if self.family else
                       ", Bonferroni-corrected over the points judged"))
        if self.kind == "fraction":
            return (f"fraction of failing runs <= {self.max_fraction:g} "
                    f"({100 * V.POLICY.confidence:.0f}% Clopper-Pearson interval)")
        return "every run, every point"


PATHWISE = Statistic("pathwise")
MEAN = Statistic("mean")


def fraction(max_fraction: float = 0.0) -> Statistic:
    return Statistic("fraction", max_fraction=max_fraction)


def clopper_pearson(k: int, n: int, confidence: float = V.POLICY.confidence) -> list[float]:
    """Exact binomial interval for the proportion ``k / n``."""
    from scipy import stats
    if n == 0:
        return [0.0, 1.0]
    a = 1 - confidence
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return [lo, hi]


# ---------------------------------------------------------------------------------------------------
# bounds and the judge
@dataclass(frozen=True)
class Bound:
    """``metric (relation) expr``.  ``expr`` is SymPy in the schedules' names, named constants and the axis
    symbol; generic experiments evaluate it (one source of truth).  ``expr=None``: the experiment computes
    the right-hand side itself.  ``paper=False``: an analysis (does not decide the claim).

    ``latex``: the formula as the paper prints it (its LaTeX, verbatim); ``latex_symbols``: how the paper's
    notation maps to the declared symbols (``{"\\lambda_0": lambda_0, ...}`` or SymPy substitutions);
    ``latex_note``: an explained, exact difference between the printed formula and ``expr`` (a typo of the
    paper, a reading).  The parsed formula is proved equal to ``expr`` (or the difference reported):
    :mod:`fedcheck.core.latex`, recorded in the results' ``formula["printed"]``.  A printed formula that differs
    must come with ``latex_corrected``: the corrected formula (LaTeX in the paper's notation), proved equal to
    ``expr`` -- a note alone does not pass the printed-formula check.  ``latex_definitions``: for a notation key
    whose value is a definition the paper prints (``{"C": r"..."}``, (E.2)'s step), the paper's printed LaTeX of
    it, proved equal to the map's value (a mistyped value would otherwise read "equal" with a bound mistyped
    alike).  ``latex_reconstructed``: for a bound the paper prints but whose text lost the formula (an extraction
    that dropped the display mathematics), where the declared formula was rebuilt from -- the results, the terminal
    and the reports mark it "reconstructed (the paper's text lost the formula)"; never with ``latex``.

    ``source``: where the paper states this bound (:class:`fedcheck.core.readings.Source`), for findings named by
    bound (a reading's own source comes first when a finding is named by reading).

    ``bites_from``: where the bound starts to bite -- the first point of the axis (a horizon ``T``, a round) where
    it falls below the trivial bound of its metric (a number, or a sentence when it cannot be one); reported
    beside the run's own vacuity (:meth:`Comparison.vacuity`), never used to decide."""

    name: str
    expr: Any = None
    metric: str = ""
    relation: str = "<="
    paper: bool = True
    description: str = ""
    latex: str = ""
    latex_symbols: Any = None
    latex_note: str = ""
    source: Any = None
    bites_from: Any = None
    latex_corrected: str = ""
    latex_definitions: Any = None
    latex_reconstructed: str = ""

    def __post_init__(self):
        if self.source is not None and not isinstance(self.source, Source):
            raise TypeError(f"bound {self.name!r}: source must be a fedcheck Source, not {type(self.source).__name__}")
        if self.bites_from is not None and (isinstance(self.bites_from, bool) or
                                            not isinstance(self.bites_from, (int, float, str))):
            raise TypeError(f"bound {self.name!r}: bites_from must be a number on the axis (or a sentence)")
        if not all(isinstance(x, str) for x in (self.latex, self.latex_note, self.latex_corrected,
                                                self.latex_reconstructed)):
            raise TypeError(f"bound {self.name!r}: latex, latex_note, latex_corrected and latex_reconstructed must be "
                            "strings")
        if self.latex and self.latex_reconstructed:
            raise ValueError(f"bound {self.name!r}: a formula is either printed (latex=) or reconstructed "
                             "(latex_reconstructed=), not both")
        if self.latex_definitions is not None and not (
                isinstance(self.latex_definitions, Mapping) and
                all(isinstance(k, str) and isinstance(v, str) for k, v in self.latex_definitions.items())):
            raise TypeError(f"bound {self.name!r}: latex_definitions maps notation keys to the paper's printed LaTeX")
        if self.latex_symbols is not None and not isinstance(self.latex_symbols, Mapping):
            raise TypeError(f"bound {self.name!r}: latex_symbols must be a mapping (the paper's notation -> SymPy)")
        for key, value in (self.latex_symbols or {}).items():       # refused now, not after the computation
            try:
                sp.sympify(value)
            except (sp.SympifyError, TypeError, SyntaxError, ValueError) as exc:
                raise TypeError(f"bound {self.name!r}: latex_symbols[{key!r}] = {value!r} is not a SymPy expression "
                                f"({' '.join(str(exc).split())[:120]})") from None
        if self.relation not in ("<=", ">=", "=="):
            raise ValueError(f"bound {self.name!r}: relation must be <=, >= or ==, not {self.relation!r}")
        if isinstance(self.expr, str):
            raise TypeError(f"bound {self.name!r}: the bound must be a SymPy expression, not the string {self.expr!r}")
        if self.expr is not None:
            try:
                e = sp.sympify(self.expr)
            except (sp.SympifyError, TypeError) as exc:
                raise TypeError(f"bound {self.name!r}: not a SymPy expression ({exc})") from None
            if isinstance(self.expr, str) or not isinstance(e, sp.Expr):
                raise TypeError(f"bound {self.name!r}: the bound must be a SymPy expression, "
                                f"not {type(self.expr).__name__}")
            object.__setattr__(self, "expr", e)


def compare_interval(lo, hi, b_lo, b_hi, scale=1.0, policy: V.TolerancePolicy = V.POLICY) -> np.ndarray:
    """Per point: 0 holds (``hi <= b_lo + slack``), 2 violated (``lo > b_hi + slack``), 1 otherwise (a NaN: 1)."""
    lo, hi, b_lo, b_hi = (np.asarray(a, dtype=float) for a in (lo, hi, b_lo, b_hi))
    code = np.where(hi <= b_lo + V.slack(b_lo, scale, policy), 0,
                    np.where(lo > b_hi + V.slack(b_hi, scale, policy), 2, 1))
    bad = ~(np.isfinite(lo) & np.isfinite(hi) & np.isfinite(b_lo) & np.isfinite(b_hi))
    return np.where(bad, 1, code)


def _plain(x):
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


@dataclass
class Comparison:
    """``lhs (relation) rhs`` at ``P`` points from ``S`` runs (samples).

    ``lhs_lo``/``lhs_hi``: ``(S, P)``, ``(P,)`` or scalar -- the measured quantity is known to lie in
    ``[lo, hi]`` (an exact optimum is certified to an interval); ``value``: its point estimate (default:
    the end of the interval the relation tests); ``rhs_lo``/``rhs_hi``: ``(P,)`` or scalar (constants
    known to an interval); ``scale``: size of the quantities subtracted (rounding slack); ``points``:
    the axis values (rounds, horizons, ``(r, k)`` pairs), named ``point_name``.

    ``trivial``: ``(P,)`` or scalar, the trivial bound of the measured quantity on this case -- a certified upper
    value of what it can take over the claim's class (for ``<=``; for ``>=`` a certified lower value), e.g.
    ``sup ||grad F|| diam(D)`` for a Frank-Wolfe gap; ``trivial_what`` says what it is.  A bound at least as large
    at every point could not have failed: the judgement says so (``vacuity``, :meth:`vacuity`)."""

    lhs_lo: Any
    lhs_hi: Any = None
    rhs_lo: Any = 0.0
    rhs_hi: Any = None
    relation: str = "<="
    scale: Any = 1.0
    points: Sequence | None = None
    point_name: str = "point"
    value: Any = None
    trivial: Any = None
    trivial_what: str = ""

    def __post_init__(self):
        lo = np.asarray(self.lhs_lo, dtype=float)
        lo = lo.reshape(1, -1) if lo.ndim < 2 else lo
        hi = lo if self.lhs_hi is None else np.asarray(self.lhs_hi, dtype=float).reshape(lo.shape)
        P = lo.shape[1]
        self.lhs_lo, self.lhs_hi = lo, hi
        self.rhs_lo = np.broadcast_to(np.asarray(self.rhs_lo, dtype=float), (P,)).astype(float)
        self.rhs_hi = self.rhs_lo.copy() if self.rhs_hi is None else \
            np.broadcast_to(np.asarray(self.rhs_hi, dtype=float), (P,)).astype(float)
        self.scale = np.broadcast_to(np.asarray(self.scale, dtype=float), (P,)).astype(float)
        if self.value is not None:
            v = np.asarray(self.value, dtype=float)
            self.value = v.reshape(1, -1) if v.ndim < 2 else v
        if self.relation not in ("<=", ">=", "=="):
            raise ValueError(f"relation must be <=, >= or ==, got {self.relation!r}")
        if self.trivial is not None:
            self.trivial = np.broadcast_to(np.asarray(self.trivial, dtype=float), (P,)).astype(float)

    @property
    def samples(self) -> int:
        return int(self.lhs_lo.shape[0])

    def _codes(self, lo, hi) -> np.ndarray:
        rl, rh, sc = self.rhs_lo[None], self.rhs_hi[None], self.scale[None]
        if self.relation == "<=":
            return compare_interval(lo, hi, rl, rh, sc)
        if self.relation == ">=":
            return compare_interval(rl, rh, lo, hi, sc)
        return np.maximum(compare_interval(lo, hi, rl, rh, sc), compare_interval(rl, rh, lo, hi, sc))

    def measured(self, statistic: Statistic = PATHWISE):
        """``(lo, hi, value, se)``: the interval(s) the verdict uses, the point value per point and its SE."""
        lo, hi = self.lhs_lo, self.lhs_hi
        if statistic.kind != "mean":
            if self.value is not None:
                val = self.value.max(0) if self.relation != ">=" else self.value.min(0)
            else:
                val = hi.max(0) if self.relation == "<=" else lo.min(0)
            return lo, hi, val, np.zeros(lo.shape[1])
        S = lo.shape[0]
        se = (np.maximum(lo.std(0, ddof=1), hi.std(0, ddof=1)) / math.sqrt(S)) if S > 1 \
            else np.full(lo.shape[1], np.nan)
        # Student t with S - 1 degrees of freedom at the level of z standard errors (the SE is estimated from S runs),
        # Bonferroni-corrected over the family of points judged together
        z = self.multiplier(statistic)
        mlo, mhi = lo.mean(0), hi.mean(0)
        if self.value is not None:
            val = self.value.mean(0)
        else:
            val = mhi if self.relation != ">=" else mlo
        return (mlo - z * se)[None], (mhi + z * se)[None], val, se

    def family(self, statistic: Statistic) -> int:
        """The number of points whose ``mean`` intervals hold together: the statistic's ``family``, else this
        comparison's points."""
        return int(statistic.family) if statistic.family else int(self.lhs_lo.shape[1])

    def multiplier(self, statistic: Statistic) -> float:
        """The standard errors a ``mean`` interval spans: Student t with ``samples - 1`` degrees of freedom at the
        level of ``z`` standard errors, Bonferroni-corrected over :meth:`family` (0 with a single run)."""
        S = self.samples
        if S < 2:
            return 0.0
        return V.t_multiplier(V.POLICY.statistical_z if statistic.z is None else statistic.z, S, self.family(statistic))

    def failing_samples(self) -> np.ndarray:
        """Per run: does some point certainly fail (code 2)?"""
        return (self._codes(self.lhs_lo, self.lhs_hi) == 2).any(1)

    def deciding_ends(self, val=None) -> tuple[np.ndarray, np.ndarray]:
        """``(deciding, other)``: per point, the end of the bound's interval that decides the verdict -- the lower
        end for ``lhs <= rhs`` (it holds only if it holds there), the upper end for ``lhs >= rhs``; for ``==`` the
        end farther from the point value ``val`` -- and the other end."""
        lo, hi = self.rhs_lo, self.rhs_hi
        if self.relation == "<=":
            return lo, hi
        if self.relation == ">=":
            return hi, lo
        v = np.zeros_like(lo) if val is None else np.asarray(val, dtype=float)
        far_lo = np.abs(v - lo) >= np.abs(v - hi)
        return np.where(far_lo, lo, hi), np.where(far_lo, hi, lo)

    def _ratio_excess(self, val, rhs):
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.relation == "==":
                return np.abs(val - rhs) / np.maximum(np.abs(self.scale), 1.0), np.abs(val - rhs)
            if self.relation == "<=":
                return np.where(rhs != 0, val / rhs, np.nan), val - rhs
            return np.where(val != 0, rhs / val, np.nan), rhs - val

    def judge(self, statistic: Statistic = PATHWISE) -> dict:
        """The verdict of this comparison under ``statistic``, with its ratio, excess and where it fails.

        ``max_ratio`` (lhs/rhs for ``<=``, rhs/lhs for ``>=``) is reported only where the bound is not
        negligible (``|rhs| > POLICY.negligible_bound * scale``); ``max_excess`` (lhs - rhs for ``<=``)
        is always reported: a bound that fails where it vanishes shows as an excess, not a tiny ratio.

        Where the bound is known to an interval (``rhs_lo < rhs_hi``), the ratio, the excess and the right-hand
        sides reported are those at the ends that decide the verdict (:meth:`deciding_ends`); the largest ratio
        at the other ends is kept as ``max_ratio_at_other_ends``."""
        lo, hi, val, se = self.measured(statistic)
        codes = self._codes(lo, hi).max(0)
        few = statistic.kind == "mean" and self.samples < V.MIN_DRAWS
        if few:     # a mean over fewer than MIN_DRAWS runs that vary decides nothing (runs that coincide: exact)
            codes = np.where(np.nan_to_num(se, nan=np.inf) > 0, np.maximum(codes, 1), codes)
        rhs, other = self.deciding_ends(val)
        ratio, excess = self._ratio_excess(val, rhs)
        if self.relation != "==":    # a bound that (numerically) vanishes: its ratio means nothing, its excess does
            size = np.maximum(np.maximum(np.abs(self.scale), 1.0), np.abs(val))
            negligible = np.abs(rhs) <= V.POLICY.negligible_bound * size
            ratio_reported = np.where(negligible, np.nan, ratio)
        else:
            negligible = np.zeros(len(codes), dtype=bool)
            ratio_reported = ratio
        fin = np.isfinite(ratio)
        fin_r = np.isfinite(ratio_reported)
        pts = list(self.points) if self.points is not None else list(range(len(codes)))
        bad = np.nonzero(codes == 2)[0]
        # argmax/max of arrays whose non-finite entries are already -inf (no NaN left): what nanargmax/nanmax give,
        # without their NaN-replacing copy (~20 us a call; judge runs for every block of every-round values)
        worst = int(np.argmax(np.where(fin, ratio, -np.inf))) if fin.any() else None
        fe = np.isfinite(excess)
        wx = int(np.argmax(np.where(fe, excess, -np.inf))) if fe.any() else None
        pn = self.point_name
        undefined = ~fin_r if self.relation != "==" else np.zeros(len(codes), dtype=bool)
        bad_undef = np.nonzero((codes == 2) & undefined)[0]
        first = int(bad[0]) if bad.size else None
        out = {"verdict": V.verdict_of_codes(codes), "relation": self.relation,
               "max_ratio": float(ratio[worst]) if worst is not None else None,
               "max_ratio_where_bound_not_negligible":
                   float(np.max(np.where(fin_r, ratio_reported, -np.inf))) if fin_r.any() else None,
               "max_excess": float(excess[wx]) if wx is not None else None,
               "ratio_meaning": {"<=": "lhs / rhs", ">=": "rhs / lhs",
                                 "==": "|lhs - rhs| / max(1, scale)"}[self.relation],
               f"argmax_{pn}": _plain(pts[worst]) if worst is not None else None,
               "lhs_at_argmax": float(val[worst]) if worst is not None else None,
               "rhs_at_argmax": float(rhs[worst]) if worst is not None else None,
               f"first_violation_{pn}": _plain(pts[bad[0]]) if bad.size else None,
               "violations": int((codes == 2).sum()), "undecided": int((codes == 1).sum()),
               "points": int(len(codes)), "samples": self.samples, "statistic": statistic.kind,
               # where the first violation is, with its own values (the worst point above may be elsewhere)
               "lhs_at_first_violation": float(val[first]) if first is not None else None,
               "rhs_at_first_violation": float(rhs[first]) if first is not None else None,
               "ratio_defined_at_first_violation": bool(not undefined[first]) if first is not None else None,
               # the largest excess and where it is
               f"argmax_excess_{pn}": _plain(pts[wx]) if wx is not None else None,
               "lhs_at_max_excess": float(val[wx]) if wx is not None else None,
               "rhs_at_max_excess": float(rhs[wx]) if wx is not None else None,
               "ratio_defined_at_max_excess": bool(not undefined[wx]) if wx is not None else None,
               # violations where the bound (numerically) vanishes: their ratio is undefined, their excess is not
               "violations_where_ratio_undefined": int(bad_undef.size),
               # violations left out of max_ratio_where_bound_not_negligible (the headline ratio)
               "violations_where_bound_negligible": int(((codes == 2) & np.broadcast_to(negligible, codes.shape)).sum()),
               "max_excess_where_ratio_undefined": float(np.max(excess[bad_undef])) if bad_undef.size else None}
        if statistic.kind == "mean":
            out["se_max"] = float(np.nanmax(se)) if np.isfinite(se).any() else None
            out["family"] = self.family(statistic)
            out["t_multiplier"] = self.multiplier(statistic)
            if few and (codes == 1).any():
                out["why"] = (f"only {self.samples} runs: a mean over runs needs at least {V.MIN_DRAWS} to decide "
                              "(runs that coincide are exact)")
        if self.trivial is not None:
            out["vacuity"] = self.vacuity()
        if not np.array_equal(rhs, other, equal_nan=True):     # constants known to an interval: the other ends too
            r_o, _ = self._ratio_excess(val, other)
            f_o = np.isfinite(r_o)
            out["max_ratio_at_other_ends"] = float(np.max(np.where(f_o, r_o, -np.inf))) if f_o.any() else None
        return out


    def vacuity(self) -> dict | None:
        """Where the bound (at its deciding ends) could not have failed: at least the trivial bound (``<=``; at most
        it for ``>=``).  ``points``; ``vacuous_points`` (the bound is trivial there); ``unknown_points`` (no finite
        trivial bound; ``unbounded_points`` of them declared infinite); the first point where the bound bites (is
        below the trivial bound) with both values; and
        ``contradicted`` -- a measured value beyond the trivial bound: the trivial bound is not valid for this run
        (an iterate outside the set it assumes), so vacuity is unknown.  ``None`` without a trivial bound or for
        ``==``."""
        if self.trivial is None or self.relation == "==":
            return None
        rhs, _ = self.deciding_ends()
        tv = self.trivial
        known = np.isfinite(tv) & np.isfinite(rhs)
        if self.relation == "<=":
            vac = known & (rhs >= tv)
            with np.errstate(invalid="ignore"):
                contra = bool(np.any(np.isfinite(tv) & (self.lhs_lo > tv[None] + V.slack(tv, self.scale)[None])))
        else:
            vac = known & (rhs <= tv)
            with np.errstate(invalid="ignore"):
                contra = bool(np.any(np.isfinite(tv) & (self.lhs_hi < tv[None] - V.slack(tv, self.scale)[None])))
        bites = np.nonzero(known & ~vac)[0]
        pts = list(self.points) if self.points is not None else list(range(len(tv)))
        out = {"points": int(len(tv)), "vacuous_points": int(vac.sum()), "unknown_points": int((~known).sum()),
               "unbounded_points": int(np.isinf(tv).sum()),      # declared: no finite trivial bound there
               "contradicted": contra, "point_name": self.point_name, "what": self.trivial_what,
               "first_biting": _plain(pts[bites[0]]) if bites.size else None,
               "bound_at_first_biting": float(rhs[bites[0]]) if bites.size else None,
               "trivial_at_first_biting": float(tv[bites[0]]) if bites.size else None,
               "min_trivial": float(np.min(tv[np.isfinite(tv)])) if np.isfinite(tv).any() else None}
        return out


def merge_vacuity(a: dict | None, b: dict | None) -> dict | None:
    """Two vacuity records of consecutive stretches of one comparison as one (counts added, the first bite kept)."""
    if a is None or b is None:
        return a if b is None else b
    out = dict(a)
    for k in ("points", "vacuous_points", "unknown_points", "unbounded_points"):
        out[k] = a.get(k, 0) + b.get(k, 0)
    out["contradicted"] = bool(a.get("contradicted") or b.get("contradicted"))
    if a.get("first_biting") is None and b.get("first_biting") is not None:
        for k in ("first_biting", "bound_at_first_biting", "trivial_at_first_biting"):
            out[k] = b.get(k)
    mins = [x for x in (a.get("min_trivial"), b.get("min_trivial")) if x is not None]
    out["min_trivial"] = min(mins) if mins else None
    return out


def merge_judgements(a: dict | None, b: dict) -> dict:
    """Two judgements of consecutive stretches of one comparison (blocks of rounds) as one: the worst verdict,
    the largest ratio and excess (with where they occur), the first violation, the counts added up."""
    if a is None:
        return dict(b)
    out = dict(a)
    out["verdict"] = V.combine([a["verdict"], b["verdict"]])
    if b.get("max_ratio") is not None and (a.get("max_ratio") is None or b["max_ratio"] > a["max_ratio"]):
        for k in b:     # the largest ratio's point only: the largest excess's point moves with its own values
            if (k.startswith("argmax_") and not k.startswith("argmax_excess_")) or k in ("max_ratio", "lhs_at_argmax",
                                                                                        "rhs_at_argmax"):
                out[k] = b[k]
    if b.get("max_excess") is not None and (a.get("max_excess") is None or b["max_excess"] > a["max_excess"]):
        for k in b:
            if k.startswith("argmax_excess_") or k in ("lhs_at_max_excess", "rhs_at_max_excess",
                                                       "ratio_defined_at_max_excess"):
                out[k] = b[k]
    for k in ("max_ratio_where_bound_not_negligible", "max_excess", "se_max", "max_excess_where_ratio_undefined",
              "max_ratio_at_other_ends"):
        if k == "max_ratio_at_other_ends" and k not in a and k not in b:
            continue
        vals = [x for x in (a.get(k), b.get(k)) if x is not None]
        out[k] = max(vals) if vals else None
    if not any(a.get(k) is not None for k in a if k.startswith("first_violation_")):
        for k in b:
            if k.startswith("first_violation_") or k in ("lhs_at_first_violation", "rhs_at_first_violation",
                                                          "ratio_defined_at_first_violation"):
                out[k] = b[k]
    for k in ("violations", "undecided", "points", "violations_where_ratio_undefined",
              "violations_where_bound_negligible"):
        out[k] = a.get(k, 0) + b.get(k, 0)
    if "vacuity" in a or "vacuity" in b:
        out["vacuity"] = merge_vacuity(a.get("vacuity"), b.get("vacuity")) if "vacuity" in a and "vacuity" in b \
            else None      # a stretch without a trivial bound: unknown
    return out


# ---------------------------------------------------------------------------------------------------
# observations: what an experiment hands the runner
@dataclass
class Observed:
    """One comparison of one (bound, reading) on one case (an instance, a draw, a configuration).

    ``instance``: the problem it ran on (saved when it refutes the claim, via ``save(stem) -> paths``);
    ``reason``: why this case cannot decide (an inaccurate solve, a broken assumption)."""

    reading: str
    bound: str
    case: str
    comparison: Comparison
    instance: Any = None
    reason: str | None = None
    save: Callable[[str], list] | None = None
    key: Any = None            # groups observations of one case (saving, per-case records)
    statistic: Statistic | None = None    # overrides the reading's statistic (a deterministic case among random ones)
    judged: dict | None = None            # a judgement made already (every round, streamed): no comparison kept
    failing: Any = None                   # with ``judged``: per run, did some point certainly fail
    curves: dict | None = None            # {"instance", "grid", "scale"}: where the result's instances keep the
    #                                       recorded values of this comparison (the tidy table reads them there)

    def judge(self, statistic: Statistic) -> dict:
        return dict(self.judged) if self.judged is not None else self.comparison.judge(statistic)

    def failing_samples(self) -> np.ndarray:
        return np.asarray(self.failing, dtype=bool) if self.judged is not None else self.comparison.failing_samples()


@dataclass
class Observations:
    """Everything an experiment measured.  ``records``: per-instance records for the report and the JSON
    (free-form; see ``docs/DESIGN.md``); ``fits``: per-instance rate fits (``fedcheck.core.rates``);
    ``feasibility``: per-instance verdict dicts; ``findings``: extra findings (analyses beside the bound)."""

    items: list = field(default_factory=list)
    records: list = field(default_factory=list)
    evidence: dict = field(default_factory=dict)
    series: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    fits: list = field(default_factory=list)
    feasibility: list = field(default_factory=list)
    formula: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)
    side_conditions: dict = field(default_factory=dict)
    reasons: list = field(default_factory=list)
    saved_instances: list = field(default_factory=list)
    #: observations an experiment judged itself (its findings come from a rule of its own, e.g. a sweep): ``(finding,
    #: Observed, judgement, statistic, extra)``, kept for the tidy table as the runner keeps its own (``extra``: more
    #: fields of the record, e.g. ``{"sweep": {...}}``)
    judged: list = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------
# findings and SymPy facts
@dataclass
class Finding:
    """One named sub-verdict.  ``paper=True``: a claim the paper makes (only those decide)."""

    name: str
    verdict: str
    paper: bool = True
    description: str = ""
    max_ratio: float | None = None
    evidence: Any = None
    extra: dict = field(default_factory=dict)
    source: Any = None          # fedcheck.core.readings.Source: where the paper states it
    deviation: Any = ""         # how the tested setting differs: Deviation(s) (their text after construction)
    deviations: tuple = ()      # the Deviation data of ``deviation`` (its text is kept in ``deviation``)
    reading: Any = None         # fedcheck Reading: the reading of the paper's words it tests (plausible, defect, step)

    def __post_init__(self):
        if self.reading is not None:
            if not isinstance(self.reading, Reading):
                raise TypeError(f"finding {self.name!r}: reading must be a fedcheck Reading, not "
                                f"{type(self.reading).__name__}")
            self.source = self.source if self.source is not None else self.reading.source
            check_reading_marks(f"finding {self.name!r}", self.reading.plausible, self.deviation or
                                self.deviations, self.reading.step, self.reading.conclusion)
        if self.source is not None and not isinstance(self.source, Source):
            raise TypeError(f"finding {self.name!r}: source must be a fedcheck Source, not {type(self.source).__name__}")
        _, devs = deviations_of(self.deviation, tuple(self.deviations))
        self.deviations = tuple(dict.fromkeys(tuple(self.deviations) + devs))
        self.deviation = "; ".join(str(d) for d in self.deviations)
        if self.deviation and self.paper and not size_only(self.deviations):   # size only: still the paper's
            raise ValueError(f"finding {self.name!r} is tested outside the paper's setting ({self.deviation}): "
                             "it is an analysis (paper=False)")

    def as_reading(self) -> dict:
        d = {"verdict": self.verdict, "max_ratio": self.max_ratio, "paper": self.paper,
             "description": self.description}
        if self.evidence is not None:
            d["evidence"] = self.evidence
        d.update(provenance_record(self.source, self.deviation, self.deviations))
        r = self.reading
        if r is not None and (r.plausible or r.defect or r.step):
            d["reading"] = {"name": r.name, "plausible": r.plausible,
                            **{k: getattr(r, k) for k in ("defect", "step", "conclusion") if getattr(r, k)}}
        d.update(self.extra)
        return d

    @property
    def plausible(self) -> bool:
        """Another plausible reading of the paper's words (an analysis the headline names when it fails)."""
        return bool(self.reading is not None and self.reading.plausible)

    @property
    def defect(self) -> str:
        """The defect this finding is a reading or case of (findings with one key count once); its name if none."""
        return (self.reading.defect if self.reading is not None else "") or self.name


def check_sources(sources: Mapping | None, owner: str) -> dict:
    """``sources`` as declared on a :class:`Measurement` or :class:`BoundTest`: finding name (or its start) ->
    :class:`~fedcheck.core.readings.Source`, or ``(Source, deviation)`` for a finding tested in another setting
    (``deviation``: :class:`~fedcheck.core.readings.Deviation` data, one or a tuple).  A key names findings: the
    empty key, which would match every finding of the claim, is refused (BadInput), and so is a sentence."""
    out = dict(sources or {})
    for name, entry in out.items():
        if not isinstance(name, str) or not name.strip():
            raise BadInput(f"{owner}(sources=...): the key {name!r} matches every finding; name the findings each "
                           "source is declared for")
        src, dev = entry if isinstance(entry, tuple) and len(entry) == 2 else (entry, ())
        if not isinstance(src, Source):
            raise TypeError(f"{owner}(sources=...): {name!r} must map to a fedcheck Source or (Source, deviation), "
                            f"not {entry!r}")
        deviations_of(dev)
    return out


def attach_provenance(findings: Sequence[Finding], provenance: Mapping | None) -> list[Finding]:
    """The findings of a measurement with their provenance, declared beside the claim (``sources=``): a finding's
    name (or the start of it) maps to a :class:`~fedcheck.core.readings.Source` (a paper finding stated there) or
    to ``(Source, deviation)`` (tested in another setting: an analysis, ``paper=False``).  The longest matching key
    wins; a finding that set its own ``source`` keeps it; findings no key matches are returned as they are."""
    if not provenance:
        return list(findings)
    keys = sorted(provenance, key=len, reverse=True)
    out = []
    for f in findings:
        key = next((k for k in keys if f.name == k or f.name.startswith(k)), None)
        if key is None or f.source is not None:
            out.append(f)
            continue
        entry = provenance[key]
        source, deviation = entry if isinstance(entry, tuple) else (entry, ())
        _, devs = deviations_of(deviation)
        out.append(replace(f, source=source, deviation=devs, paper=f.paper and (not devs or size_only(devs))))
    return out


def reproduced_if(condition) -> str:
    """``reproduced`` when the run shows the failure, ``not_reproduced`` when it shows the opposite,
    ``inconclusive`` when undecidable (``None``).  A boolean is for a condition decided exactly (a computation,
    no interval): ``False`` must mean the run shows the opposite.  A condition decided from intervals passes their
    verdicts instead (``holds`` shown, ``violated`` the opposite shown, ``inconclusive`` straddling; one or a
    sequence: :func:`fedcheck.core.verdict.counterexample_of`): an undecided interval is never a refutation."""
    if isinstance(condition, (str, tuple, list)):
        return V.counterexample_of(*((condition,) if isinstance(condition, str) else condition))
    if condition is None:
        return V.INCONCLUSIVE
    return V.REPRODUCED if condition else V.NOT_REPRODUCED


_VERDICTS = (V.HOLDS, V.VIOLATED, V.INCONCLUSIVE, V.REPRODUCED, V.NOT_REPRODUCED)


@dataclass(frozen=True)
class Fact:
    """A statement proven (or refuted) with SymPy: ``prove() -> (verdict, evidence)``.  ``source``: where the
    paper states it (a :class:`~fedcheck.core.readings.Source`; a fact of a Proof is a paper finding)."""

    name: str
    prove: Callable[[], tuple]
    source: Any = None          # fedcheck.core.readings.Source: where the paper states it (a Proof's finding)

    def __post_init__(self):
        if self.source is not None and not isinstance(self.source, Source):
            raise TypeError(f"fact {self.name!r}: source must be a fedcheck Source, not {type(self.source).__name__}")

    def evaluate(self) -> dict:
        from fedcheck.core.usercode import call_user, contract_error, is_own
        if not is_own(self.prove):          # a user's fact: what it raises, or returns wrongly, is the user's error
            out = call_user(self.prove, role="proof fact")
            if not (isinstance(out, tuple) and len(out) == 2 and out[0] in _VERDICTS):
                raise contract_error(self.prove, "proof fact", f"returned {type(out).__name__} {str(out)[:80]!r}; "
                                     f"prove() returns (verdict, evidence) with a verdict among {_VERDICTS}")
            return {"name": self.name, "verdict": out[0], "evidence": out[1]}
        try:
            verdict, evidence = self.prove()
        except Exception as e:  # a failed proof attempt is inconclusive, never a pass
            verdict, evidence = V.INCONCLUSIVE, f"SymPy could not decide: {type(e).__name__}: {e}"
        return {"name": self.name, "verdict": verdict, "evidence": evidence}


def order_fact(bound, rate, var=None, name: str | None = None) -> Fact:
    """A fact: ``bound`` is Theta(var^rate) as ``var -> oo`` (``lim bound * var^(-rate)`` finite and positive)."""
    if var is None:
        from fedcheck.core.symbols import t as var

    def prove():
        lim = sp.limit(sp.simplify(bound * var ** (-rate)), var, sp.oo)
        if lim.is_finite and lim.is_positive:
            return V.HOLDS, f"lim_({var}->oo) bound * {var}^({-rate}) = {sp.sstr(lim)} (finite, positive)"
        if lim.is_finite is False or lim == 0:
            return V.VIOLATED, f"lim_({var}->oo) bound * {var}^({-rate}) = {sp.sstr(lim)}"
        return V.INCONCLUSIVE, f"limit {sp.sstr(lim)} undecided"
    return Fact(name or f"the bound is of order {var}^({sp.sstr(rate)})", prove)


# ---------------------------------------------------------------------------------------------------
# the three kinds of evidence
def _experiment_validate(experiment, claim, test) -> None:
    v = getattr(experiment, "validate", None)
    if v is not None:
        v(claim, test)


@dataclass(frozen=True)
class BoundTest:
    """A bound test (see the module doc).

    ``experiment``: an object with ``observe(claim, test, config, params) -> Observations`` (the generic
    :class:`fedcheck.experiments.Rounds` and :class:`fedcheck.experiments.Horizons`, or
    :class:`fedcheck.experiments.Cases` around a function); ``bounds``: the :class:`Bound` s;
    ``statistic``: the default :class:`Statistic` (a reading may override it); ``findings``: how
    findings are named -- ``"reading"`` (one per reading, worst over bounds), ``"bound"`` (one per
    bound, worst over readings) or ``"bound|reading"`` (one per pair); ``"auto"``: by reading when
    there is one bound, by bound when there is one reading, else by reading; ``rate``: the claimed
    log-log slope of the measured quantity along the axis (an O(.) claim: reported, never refuted by
    a finite run); ``feasible``: the server point must stay in the set (a finding of its own)."""

    experiment: Any
    bounds: tuple = ()
    statistic: Statistic = PATHWISE
    axis: str = ""
    findings: str = "auto"
    rate: float | None = None
    feasible: bool = False
    kind: str = "bound"
    sources: Mapping = field(default_factory=dict)   # the experiment's extra findings (a rate...): as Measurement

    def __post_init__(self):
        object.__setattr__(self, "bounds", tuple(self.bounds))
        object.__setattr__(self, "sources", check_sources(self.sources, "BoundTest"))
        if self.findings not in ("auto", "reading", "bound", "bound|reading"):
            raise ValueError(f"findings must be auto, reading, bound or bound|reading, not {self.findings!r}")
        if not self.axis:
            object.__setattr__(self, "axis", getattr(self.experiment, "axis", "point"))
        if self.axis not in ("round", "horizon", "point"):
            raise ValueError(f"axis must be round, horizon or point, not {self.axis!r}")

    def validate(self, claim) -> None:
        if not hasattr(self.experiment, "observe"):
            raise TypeError(f"{claim.id}: a BoundTest's experiment needs observe(claim, test, config, params)")
        names = [b.name for b in self.bounds]
        if len(set(names)) != len(names):
            raise ValueError(f"{claim.id}: two bounds share a name")
        _experiment_validate(self.experiment, claim, self)

    def statistic_of(self, reading) -> Statistic:
        return getattr(reading, "statistic", None) or self.statistic

    def finding_name(self, bound: str, reading: str, nb: int, nr: int) -> str:
        mode = self.findings
        if mode == "auto":
            mode = "reading" if nb == 1 or nr > 1 else "bound"
        return {"reading": reading, "bound": bound, "bound|reading": f"{bound} | {reading}"}[mode]


@dataclass
class MeasureContext:
    """What a measurement function receives: the run configuration, the merged params and the claim."""

    config: Any
    params: dict
    claim: Any

    @property
    def check(self):       # older name
        return self.claim

    @property
    def full(self) -> bool:
        return bool(self.config.full)

    @property
    def save_dir(self) -> str | None:
        return self.config.save_dir


@dataclass
class MeasureResult:
    """What a measurement function returns: findings and what to show beside them."""

    findings: Sequence[Finding]
    evidence: dict = field(default_factory=dict)
    series: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    instances: list = field(default_factory=list)
    saved_instances: list = field(default_factory=list)
    fitted_rate: float | None = None
    fitted_rate_ci: list | None = None
    rate_verdict: str | None = None
    feasibility: dict = field(default_factory=dict)
    formula: dict = field(default_factory=dict)
    reason: str | None = None
    used: dict = field(default_factory=dict)    # the values the run used ({"images": 5000}): declared deviations are checked against them


@dataclass(frozen=True)
class Measurement:
    """``measure(ctx) -> MeasureResult``.  ``counterexample=True``: the findings use ``reproduced`` /
    ``not_reproduced`` (the kind shown is ``counterexample``).  ``accepts(instance) -> bool``: the measurement
    reads ``ctx.config.instances`` and runs on such problems (``None``: it builds its own).  ``sources``: the
    paper's words for its findings, by finding name (a finding of that name without a source of its own gets it;
    ``fedcheck list --long`` shows them; a finding whose name is made at run time sets ``source=`` itself)."""

    measure: Callable[[MeasureContext], MeasureResult]
    counterexample: bool = False
    accepts: Callable | None = None     # which given problems (``verify --instance``) the measurement runs on
    sources: Mapping = field(default_factory=dict)   # finding name (or its start) -> Source | (Source, deviation)

    def __post_init__(self):
        object.__setattr__(self, "sources", check_sources(self.sources, "Measurement"))

    @property
    def kind(self) -> str:
        return "counterexample" if self.counterexample else "measurement"

    def validate(self, claim) -> None:
        if not callable(self.measure):
            raise TypeError(f"{claim.id}: Measurement(measure=...) needs a function")


@dataclass(frozen=True)
class Proof:
    """SymPy facts; the claim's verdict is the worst of them (a proof SymPy cannot finish is inconclusive)."""

    facts: tuple
    kind: str = "symbolic"

    def __post_init__(self):
        object.__setattr__(self, "facts", tuple(self.facts))

    def validate(self, claim) -> None:
        if not self.facts or not all(isinstance(f, Fact) for f in self.facts):
            raise TypeError(f"{claim.id}: Proof(facts=...) needs one or more Fact(name, prove)")
