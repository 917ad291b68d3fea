"""Proof steps: the key steps of a theorem's proof, declared with its claim, each checked on its own
(``fedcheck audit ID`` runs them: :mod:`fedcheck.tools.audit`).

A bound can hold on every instance while its proof is wrong in a step.  A claim declares its proof's key steps
in its declaration, ``Claim(..., proof_steps=(step, ...))`` (a claim is frozen: ``dataclasses.replace(claim,
proof_steps=...)`` gives a copy with other steps).  A step names what it shows, says how, and establishes it
when evaluated (public names: :mod:`fedcheck.steps`)::

    >>> import sympy as sp
    >>> from fedcheck.steps import ProofStep, prove_le
    >>> t = sp.Symbol("t", positive=True)
    >>> step = ProofStep("(30) => (31)", "1/(t+1) <= 1/t for t > 0", "symbolic",
    ...                  lambda: prove_le(1 / (t + 1), 1 / t), reference="(30)-(31)")
    >>> step.evaluate()["verdict"]
    'proven'

``ProofStep.method`` says how the step is established: ``symbolic`` (a SymPy proof), ``grid`` (a
numerical verification on a grid that the evidence states) or ``witness`` (a search for an instance
that makes the step false, over stated candidates).  ``establish()`` returns a :class:`StepOutcome`
whose verdict is one of

* ``proven``           -- SymPy proved the statement;
* ``verified on grid`` -- every point of the stated grid satisfies it (within the tolerance policy);
* ``refuted``          -- a witness makes it false (given in the evidence);
* ``inconclusive``     -- none of the above could be decided.

A verdict comes from a computation, never from a literal: use the helpers below
(:func:`prove_identity`, :func:`prove_equal`, :func:`prove_nonnegative`, :func:`prove_le`, :func:`all_of`,
:func:`check_on_grid`, :func:`from_symbolic_claim`, :func:`instance_inequality`).  ``paper=False`` marks a step
that is an analysis (a repair), reported beside the paper's own steps; only the paper's steps decide the audit's
verdict.

Exit codes of ``fedcheck audit`` (:mod:`fedcheck.cli.audit`): 1 if a step of the paper is refuted, 3 if one is
inconclusive, else 0.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import sympy as sp

from fedcheck.core import verdict as V
from fedcheck.core.readings import provenance_record

__all__ = ["ProofStep", "StepOutcome", "PROVEN", "VERIFIED", "REFUTED", "INCONCLUSIVE", "METHODS", "AS_VERDICT",
           "prove_identity", "prove_nonnegative", "prove_le", "prove_equal", "all_of", "check_on_grid",
           "from_symbolic_claim", "witness_dir", "current_witness_dir"]

PROVEN, VERIFIED, REFUTED, INCONCLUSIVE = "proven", "verified on grid", "refuted", "inconclusive"
METHODS = ("symbolic", "grid", "witness")
_WITNESS_DIR: list = [None]   # where instance witnesses are written during an audit (set by witness_dir)
# the verdict each step outcome counts as (a proof audit combines them: fedcheck.tools.audit)
AS_VERDICT = {PROVEN: V.HOLDS, VERIFIED: V.HOLDS, REFUTED: V.VIOLATED, INCONCLUSIVE: V.INCONCLUSIVE}


@contextlib.contextmanager
def witness_dir(path: str | Path | None):
    """Within the block, instance witnesses of steps are written to ``path`` (``None``: not written)."""
    old, _WITNESS_DIR[0] = _WITNESS_DIR[0], path
    try:
        yield
    finally:
        _WITNESS_DIR[0] = old


def current_witness_dir() -> str | Path | None:
    return _WITNESS_DIR[0]


@dataclass
class StepOutcome:
    verdict: str
    evidence: str
    grid: str | None = None          # the grid a numerical verification covered, stated
    witness: Any = None              # what makes the step false (a point, an instance)
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in AS_VERDICT:
            raise ValueError(f"unknown step verdict {self.verdict!r}; expected one of {list(AS_VERDICT)}")


@dataclass(frozen=True)
class ProofStep:
    """One key step of a proof: its name, its statement, and how it is established (see the module doc)."""

    name: str
    statement: str
    method: str
    establish: Callable[[], StepOutcome]
    reference: str = ""
    paper: bool = True
    source: Any = None          # fedcheck.core.readings.Source: the paper's words, place and setting
    deviation: str = ""         # how the step is tested outside that setting (then paper=False)
    conclusion: str = ""        # whether the theorem's conclusion survives a refutation of this step (and how)

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"{self.name}: method must be one of {METHODS}, got {self.method!r}")
        if self.deviation and self.paper:
            raise ValueError(f"{self.name}: a step tested outside the paper's setting ({self.deviation}) is an "
                             "analysis (paper=False)")

    def evaluate(self) -> dict:
        t0 = time.perf_counter()
        from fedcheck.core.usercode import call_user, contract_error, is_own
        if not is_own(self.establish):      # a user's step: what it raises, or returns wrongly, is the user's error
            out = call_user(self.establish, role="proof step")
            if not isinstance(out, StepOutcome):
                raise contract_error(self.establish, "proof step", f"returned {type(out).__name__}, not a StepOutcome")
            return self._record(out, t0)
        try:
            out = self.establish()
            if not isinstance(out, StepOutcome):
                raise TypeError(f"establish() returned {type(out).__name__}, not a StepOutcome")
        except Exception as e:  # a failed attempt decides nothing
            out = StepOutcome(INCONCLUSIVE, f"could not be established: {type(e).__name__}: {e}")
        return self._record(out, t0)

    def _record(self, out: StepOutcome, t0: float) -> dict:
        rec = {"name": self.name, "statement": self.statement, "reference": self.reference, "method": self.method,
               "paper": self.paper, "verdict": out.verdict, "evidence": out.evidence,
               "seconds": round(time.perf_counter() - t0, 3)}
        rec.update(provenance_record(self.source, self.deviation))
        if self.conclusion:
            rec["conclusion"] = self.conclusion
        if out.grid is not None:
            rec["grid"] = out.grid
        if out.witness is not None:
            rec["witness"] = out.witness
        if out.details:
            rec["details"] = out.details
        return rec


def _sample_point(symbols, rng) -> dict:
    vals = {}
    for s in symbols:
        if s.is_integer:
            v = int(rng.integers(1, 50))
        else:
            v = float(np.exp(rng.uniform(-3, 3)))
        if s.is_nonnegative is not True and s.is_positive is not True and rng.uniform() < 0.5:
            v = -v
        vals[s] = v
    return vals


def prove_identity(lhs, rhs, what: str = "", samples: int = 64, seed: int = 0) -> StepOutcome:
    """``lhs == rhs`` for all values of the (assumption-carrying) symbols: ``proven`` when SymPy simplifies the
    difference to 0; ``refuted`` when a sampled point gives a clear difference (the witness)."""
    lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
    diff = sp.simplify(lhs - rhs)
    if diff == 0:
        return StepOutcome(PROVEN, f"{what + ': ' if what else ''}SymPy simplifies lhs - rhs to 0 "
                                   f"(lhs = {sp.sstr(lhs)}, rhs = {sp.sstr(rhs)})")
    rng = np.random.default_rng(seed)
    free = sorted(diff.free_symbols, key=lambda s: s.name)
    for _ in range(samples):
        pt = _sample_point(free, rng)
        try:
            d, l = complex(diff.subs(pt).evalf()), complex(lhs.subs(pt).evalf())
        except (TypeError, ValueError):
            continue
        if d.imag == 0 and abs(d.real) > 1e-9 * max(1.0, abs(l)):
            return StepOutcome(REFUTED, f"{what + ': ' if what else ''}lhs - rhs = {d.real:.6g} at "
                                        f"{ {s.name: v for s, v in pt.items()} }",
                               witness={s.name: v for s, v in pt.items()})
    return StepOutcome(INCONCLUSIVE, f"{what + ': ' if what else ''}SymPy could not simplify lhs - rhs = "
                                     f"{sp.sstr(diff)} to 0, and no sampled point separates them")


def prove_nonnegative(expr, what: str = "", samples: int = 64, seed: int = 0,
                      transform: Callable[[sp.Expr], sp.Expr] | None = None) -> StepOutcome:
    """``expr >= 0`` for all values allowed by the symbols' assumptions: ``proven`` when SymPy's assumption
    system decides it (after ``simplify``/``factor``, or ``transform``), ``refuted`` when a sampled point
    gives a negative value."""
    expr = sp.sympify(expr)
    forms = [expr, sp.simplify(expr), sp.factor(sp.together(expr))]
    if transform is not None:
        forms.insert(0, transform(expr))
    for f in forms:
        if f.is_nonnegative is True:
            return StepOutcome(PROVEN, f"{what + ': ' if what else ''}SymPy decides {sp.sstr(f)} >= 0 "
                                       "from the symbols' assumptions")
    rng = np.random.default_rng(seed)
    free = sorted(expr.free_symbols, key=lambda s: s.name)
    for _ in range(samples):
        pt = _sample_point(free, rng)
        try:
            v = complex(expr.subs(pt).evalf())
        except (TypeError, ValueError):
            continue
        if v.imag == 0 and v.real < -1e-12:
            return StepOutcome(REFUTED, f"{what + ': ' if what else ''}the expression is {v.real:.6g} < 0 at "
                                        f"{ {s.name: w for s, w in pt.items()} }",
                               witness={s.name: w for s, w in pt.items()})
    return StepOutcome(INCONCLUSIVE, f"{what + ': ' if what else ''}SymPy could not decide {sp.sstr(forms[1])} >= 0; "
                                     "no sampled point makes it negative")


def check_on_grid(lhs: Callable[..., np.ndarray], rhs: Callable[..., np.ndarray], grid: dict,
                  what: str = "", relation: str = "<=", scale: Callable[..., np.ndarray] | None = None) -> StepOutcome:
    """``lhs(**point) <= rhs(**point)`` (or ``>=``) on the Cartesian product of ``grid`` (name -> values).

    ``lhs``/``rhs`` receive broadcastable arrays (one axis per grid name, in order).  The tolerance policy of
    :mod:`fedcheck.verdict` decides each point: ``verified on grid`` when every point holds, ``refuted`` (the
    worst point as witness) when one is violated beyond the rounding slack, ``inconclusive`` on NaN."""
    names = list(grid)
    axes = [np.asarray(grid[k], dtype=float) for k in names]
    mesh = np.meshgrid(*axes, indexing="ij", sparse=True)
    kw = dict(zip(names, mesh))
    with np.errstate(all="ignore"):
        a = np.asarray(lhs(**kw), dtype=float)
        b = np.asarray(rhs(**kw), dtype=float)
        sc = 1.0 if scale is None else np.asarray(scale(**kw), dtype=float)
    shape = np.broadcast_shapes(a.shape, b.shape, np.shape(sc), tuple(len(x) for x in axes))
    a, b, sc = (np.broadcast_to(x, shape) for x in (a, b, sc))
    lo, hi = (a, b) if relation == "<=" else (b, a)
    codes = V.compare_upper(lo, lo, hi, sc)
    size = int(np.prod(shape))
    desc = ", ".join(f"{k} in {_grid_text(v)}" for k, v in zip(names, axes))
    with np.errstate(all="ignore"):
        ratio = np.where(hi != 0, lo / hi, np.nan)
    worst = np.unravel_index(np.nanargmax(np.where(np.isfinite(ratio), ratio, -np.inf)), shape) \
        if np.isfinite(ratio).any() else None
    details = {"points": size, "max_ratio": float(ratio[worst]) if worst is not None else None,
               "ratio_meaning": "lhs / rhs" if relation == "<=" else "rhs / lhs"}
    if worst is not None:
        details["argmax"] = {k: float(axes[i][worst[i]]) for i, k in enumerate(names)}
    pre = f"{what + ': ' if what else ''}"
    if (codes == 2).any():
        bad = np.unravel_index(np.argmax(np.where(codes == 2, ratio, -np.inf)), shape)
        pt = {k: float(axes[i][bad[i]]) for i, k in enumerate(names)}
        return StepOutcome(REFUTED, f"{pre}violated at {int((codes == 2).sum())}/{size} grid points; worst at {pt}: "
                                    f"lhs {float(a[bad]):.6g} {relation} rhs {float(b[bad]):.6g} fails",
                           grid=desc, witness=pt, details=details)
    if (codes == 1).any():
        return StepOutcome(INCONCLUSIVE, f"{pre}{int((codes == 1).sum())}/{size} grid points undecided (NaN or "
                                         "within rounding)", grid=desc, details=details)
    mr = details["max_ratio"]
    return StepOutcome(VERIFIED, f"{pre}holds at all {size} grid points" +
                       (f"; largest {details['ratio_meaning']} = {mr:.6g} at {details['argmax']}" if mr is not None else ""),
                       grid=desc, details=details)


def _grid_text(v: np.ndarray) -> str:
    v = np.asarray(v)
    if v.size <= 6:
        return "{" + ", ".join(f"{x:g}" for x in v) + "}"
    step = np.diff(v)
    if np.allclose(step, step[0]):
        return f"{v[0]:g}..{v[-1]:g} step {step[0]:g} ({v.size} values)"
    return f"{v.size} values in [{v.min():g}, {v.max():g}]"


def from_symbolic_claim(claim) -> StepOutcome:
    """Reuse a :class:`~fedcheck.core.evidence.Fact` (holds -> proven, violated -> refuted)."""
    rec = claim.evaluate()
    verdict = {V.HOLDS: PROVEN, V.VIOLATED: REFUTED}.get(rec["verdict"], INCONCLUSIVE)
    return StepOutcome(verdict, f"SymPy ({claim.name}): {rec['evidence']}")


def prove_le(small, big, what: str = "") -> StepOutcome:
    """``small <= big``: directly (``big - small >= 0``), or, when both are nonnegative, by squares
    (``big^2 - small^2 >= 0``, which is how inequalities between square roots are proven)."""
    small, big = sp.sympify(small), sp.sympify(big)
    direct = prove_nonnegative(big - small, what)
    if direct.verdict != INCONCLUSIVE:
        return direct
    if small.is_nonnegative is True and big.is_nonnegative is True:
        sq = prove_nonnegative(sp.expand(big**2 - small**2), what)
        if sq.verdict == PROVEN:
            return StepOutcome(PROVEN, f"{what + ': ' if what else ''}both sides are >= 0 and SymPy decides "
                                       f"big^2 - small^2 = {sp.sstr(sp.simplify(big**2 - small**2))} >= 0")
    return direct


def prove_equal(lhs, rhs, what: str = "") -> StepOutcome:
    """``lhs == rhs``: by simplification, or, when both are nonnegative, by comparing squares."""
    out = prove_identity(lhs, rhs, what)
    if out.verdict != INCONCLUSIVE:
        return out
    lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
    if lhs.is_nonnegative is True and rhs.is_nonnegative is True and sp.simplify(sp.expand(lhs**2 - rhs**2)) == 0:
        return StepOutcome(PROVEN, f"{what + ': ' if what else ''}both sides are >= 0 and SymPy simplifies the "
                                   "difference of their squares to 0")
    return out


def all_of(*parts: tuple[str, StepOutcome], method: str = "symbolic") -> StepOutcome:
    """Combine sub-results: ``refuted`` if one is, ``inconclusive`` if one is, else the weakest of the rest."""
    verdicts = [o.verdict for _, o in parts]
    text = "; ".join(f"({k}) {lbl}: {o.verdict} -- {o.evidence}" for k, (lbl, o) in enumerate(parts, 1))
    for w in (REFUTED, INCONCLUSIVE, VERIFIED):
        if w in verdicts:
            bad = next(o for _, o in parts if o.verdict == w)
            return StepOutcome(w, text, grid=bad.grid, witness=bad.witness)
    return StepOutcome(PROVEN, text)
