"""Proof audits: the key steps of a theorem's proof, each checked on its own (``fedcheck audit ID``).

A bound can hold on every instance while its proof is wrong in a step.  A check may declare its proof's
key steps next to its bound::

    theorem1.proof_steps = (
        ProofStep("(30) => (31)", "sum_i L_i eta_i^2 prod_j (1 - eta_j) <= ...", "symbolic", prove_31,
                  reference="(30)-(31)"),
        ProofStep("(30) => (31) on a grid", "...", "grid", grid_31),
        ProofStep("Lemma 2 (statement)", "...", "witness", lemma2_statement),
    )

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
:func:`check_on_grid`, :func:`from_symbolic_claim`, :func:`instance_inequality`).  ``paper=False`` marks a step that is an analysis (a repair), reported beside
the paper's own steps; only the paper's steps decide the audit's verdict.

Exit codes of ``fedcheck audit``: 1 if a step of the paper is refuted, 3 if one is inconclusive, else 0.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp

from fedcheck.core import verdict as V

__all__ = ["ProofStep", "StepOutcome", "PROVEN", "VERIFIED", "REFUTED", "INCONCLUSIVE", "METHODS",
           "audit_line", "prove_identity", "prove_nonnegative", "prove_le", "prove_equal", "all_of", "check_on_grid",
           "from_symbolic_claim", "instance_inequality",
           "audit_steps", "audit_verdict", "audit_result", "attach_audit", "steps_table", "add_arguments",
           "cmd_audit"]

PROVEN, VERIFIED, REFUTED, INCONCLUSIVE = "proven", "verified on grid", "refuted", "inconclusive"
METHODS = ("symbolic", "grid", "witness")
_WITNESS_DIR: list = [None]   # where instance witnesses are written during an audit (set by audit_steps)
_AS_VERDICT = {PROVEN: V.HOLDS, VERIFIED: V.HOLDS, REFUTED: V.VIOLATED, INCONCLUSIVE: V.INCONCLUSIVE}


@dataclass
class StepOutcome:
    verdict: str
    evidence: str
    grid: str | None = None          # the grid a numerical verification covered, stated
    witness: Any = None              # what makes the step false (a point, an instance)
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in _AS_VERDICT:
            raise ValueError(f"unknown step verdict {self.verdict!r}; expected one of {list(_AS_VERDICT)}")


@dataclass(frozen=True)
class ProofStep:
    """One key step of a proof: its name, its statement, and how it is established (see the module doc)."""

    name: str
    statement: str
    method: str
    establish: Callable[[], StepOutcome]
    reference: str = ""
    paper: bool = True

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"{self.name}: method must be one of {METHODS}, got {self.method!r}")

    def evaluate(self) -> dict:
        t0 = time.perf_counter()
        try:
            out = self.establish()
            if not isinstance(out, StepOutcome):
                raise TypeError(f"establish() returned {type(out).__name__}, not a StepOutcome")
        except Exception as e:  # a failed attempt decides nothing
            out = StepOutcome(INCONCLUSIVE, f"could not be established: {type(e).__name__}: {e}")
        rec = {"name": self.name, "statement": self.statement, "reference": self.reference, "method": self.method,
               "paper": self.paper, "verdict": out.verdict, "evidence": out.evidence,
               "seconds": round(time.perf_counter() - t0, 3)}
        if out.grid is not None:
            rec["grid"] = out.grid
        if out.witness is not None:
            rec["witness"] = out.witness
        if out.details:
            rec["details"] = out.details
        return rec


# ----------------------------------------------------------------------------------------------
# helpers that establish steps
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
            save_dir = save_dir or _WITNESS_DIR[0]
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


# ----------------------------------------------------------------------------------------------
# running an audit and reporting it
def audit_steps(check, save_dir: str | Path | None = None) -> list[dict]:
    """Evaluate the check's ``proof_steps``; instance witnesses are written to ``save_dir`` when given."""
    _WITNESS_DIR[0] = save_dir
    try:
        return [s.evaluate() for s in (getattr(check, "proof_steps", ()) or ())]
    finally:
        _WITNESS_DIR[0] = None


def audit_verdict(steps: Sequence[dict]) -> str:
    """``violated`` if a step of the paper is refuted, ``inconclusive`` if one is undecided, else ``holds``."""
    decisive = [s for s in steps if s.get("paper", True)] or list(steps)
    return V.combine(_AS_VERDICT[s["verdict"]] for s in decisive) if decisive else V.INCONCLUSIVE


def _short(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def steps_table(steps: Sequence[dict]) -> dict:
    return {"title": "Proof audit: key steps of the proof",
            "columns": ["step", "reference", "from", "method", "verdict", "statement", "evidence"],
            "rows": [[s["name"], s.get("reference", ""), "the paper" if s.get("paper", True) else "analysis",
                      s["method"], s["verdict"], s["statement"],
                      _short(s["evidence"], 320) + (f" [grid: {_short(s['grid'], 160)}]" if s.get("grid") else "")]
                     for s in steps]}


def _symbolic_entries(steps: Sequence[dict]) -> list[dict]:
    return [{"name": f"proof step {s['name']} ({s['method']})", "verdict": _AS_VERDICT[s["verdict"]],
             "evidence": f"{s['verdict']}: {s['evidence']}"} for s in steps]


def attach_audit(result: dict, check, steps: Sequence[dict] | None = None) -> dict:
    """Add a check's proof audit to its result dict (``symbolic``, ``tables``, ``evidence['proof_audit_verdict']``);
    the bound's verdict is left as it is (a wrong step does not refute a bound that holds)."""
    steps = audit_steps(check) if steps is None else list(steps)
    if not steps:
        return result
    result["symbolic"] = list(result.get("symbolic") or []) + _symbolic_entries(steps)
    result["tables"] = list(result.get("tables") or []) + [steps_table(steps)]
    ev = dict(result.get("evidence") or {})
    ev["proof_audit_witnesses"] = {s["name"]: _witness_summary(s["witness"]) for s in steps
                                   if s["verdict"] == REFUTED and s.get("witness") is not None}
    ev["proof_audit_verdict"] = audit_verdict(steps)
    result["evidence"] = ev
    from fedcheck.core.claim import jsonable as _jsonable
    result.update(_jsonable({k: result[k] for k in ("symbolic", "tables", "evidence")}))
    return result


def audit_result(check, steps: Sequence[dict], seconds: float = 0.0) -> dict:
    """A results entry (kind ``symbolic``) for the audit of ``check``, in the fields the report renders."""
    from fedcheck.core.claim import jsonable as _jsonable
    verdict = audit_verdict(steps)
    refuted = [s["name"] for s in steps if s["verdict"] == REFUTED and s.get("paper", True)]
    undecided = [s["name"] for s in steps if s["verdict"] == INCONCLUSIVE and s.get("paper", True)]
    reason = ""
    if refuted:
        reason = "refuted step(s): " + "; ".join(refuted)
    elif undecided:
        reason = "undecided step(s): " + "; ".join(undecided)
    counts = {w: sum(s["verdict"] == w for s in steps) for w in (PROVEN, VERIFIED, REFUTED, INCONCLUSIVE)}
    res = {"id": f"{check.id}.audit", "title": f"{getattr(check, 'title', '') or check.id} -- proof audit",
           "paper": check.paper.key, "reference": check.reference, "claim": check.claim, "kind": "symbolic",
           "verdict": verdict, "reason": reason, "claimed_rate": None, "fitted_rate": None, "fitted_rate_ci": None,
           "rate_verdict": None, "max_ratio": None,
           "readings": {}, "feasibility": {}, "symbolic": _symbolic_entries(steps), "formula": {},
           "params": dict(getattr(check, "params", {}) or {}), "assumptions": list(getattr(check, "assumptions", ()) or ()),
           "instances": [], "saved_instances": [s["witness"]["file"] for s in steps
                                                if isinstance(s.get("witness"), dict) and s["witness"].get("file")],
           "evidence": {"steps": len(steps), **{f"steps {k}": v for k, v in counts.items()},
                        "witnesses": {s["name"]: _witness_summary(s["witness"]) for s in steps
                                      if s["verdict"] == REFUTED and s.get("witness") is not None}},
           "tables": [steps_table(steps)], "seconds": seconds}
    return _jsonable(res)


def audit_line(check, result: dict) -> str:
    """One line for ``verify --with-audit``: how many steps are established, which are refuted or undecided."""
    ev = result.get("evidence") or {}
    if "proof_audit_verdict" not in ev:
        return f"{check.id}: no proof steps declared"
    steps = [e for e in result.get("symbolic") or [] if str(e.get("name", "")).startswith("proof step ")]
    names = {w: [e["name"][len("proof step "):] for e in steps if e["verdict"] == w]
             for w in (V.VIOLATED, V.INCONCLUSIVE)}
    ok = len(steps) - len(names[V.VIOLATED]) - len(names[V.INCONCLUSIVE])
    parts = [f"{check.id}: proof audit: {ok}/{len(steps)} steps established"]
    if names[V.VIOLATED]:
        parts.append("refuted: " + "; ".join(names[V.VIOLATED]))
    if names[V.INCONCLUSIVE]:
        parts.append("undecided: " + "; ".join(names[V.INCONCLUSIVE]))
    return " -- ".join(parts) + " (see 'fedcheck audit')"


def _witness_summary(w) -> dict:
    if not isinstance(w, dict):
        return {"witness": str(w)}
    keep = ("instance", "lhs", "rhs", "n", "m", "p", "set", "radius", "file")
    out = {k: w[k] for k in keep if k in w}
    return out or {k: v for k, v in w.items() if not isinstance(v, (list, dict))}


def format_steps(check, steps: Sequence[dict], width: int = 70) -> str:
    rows = [("step", "reference", "method", "verdict", "evidence")]
    for s in steps:
        rows.append((s["name"] + ("" if s.get("paper", True) else " (analysis)"), s.get("reference", ""), s["method"],
                     s["verdict"].upper() if s["verdict"] == REFUTED else s["verdict"], _short(s["evidence"], width)))
    widths = [max(len(str(r[c])) for r in rows) for c in range(len(rows[0]))]
    lines = [f"audit {check.id}: {check.reference}"]
    for i, r in enumerate(rows):
        lines.append("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# command line
def add_arguments(ap) -> None:
    ap.add_argument("ids", nargs="+", metavar="ID", help="check ids, aliases or paper names (checks that declare proof steps)")
    ap.add_argument("--json", default=None, metavar="FILE", help="write the steps and verdicts as a results JSON")
    ap.add_argument("--out", default="reports", metavar="DIR", help="where reports and witnesses go (default: reports/)")
    ap.add_argument("--no-report", action="store_true", help="write no HTML/PDF report")
    ap.add_argument("--theorem-file", action="append", default=[], help="a Python file declaring your own checks")


def cmd_audit(args, argv) -> int:
    from fedcheck.cli.errors import EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REFUTED, BadInput
    from fedcheck.core.registry import load_registry as _registry
    from fedcheck.core.registry import UnknownCheck
    from fedcheck.core.results import document, provenance, write_json

    reg = _registry(args.theorem_file)
    try:
        checks = reg.resolve(args.ids)
    except UnknownCheck as e:
        raise BadInput(str(e)) from None
    with_steps = [c for c in checks if getattr(c, "proof_steps", ())]
    if not with_steps:
        have = [cid for cid, c in reg.checks.items() if getattr(c, "proof_steps", ())]
        print(f"fedcheck: error: {', '.join(c.id for c in checks)} declare(s) no proof steps; checks with proof "
              f"steps: {', '.join(have) or 'none'}", file=sys.stderr)
        return EXIT_BAD_INPUT
    results, all_steps = [], []
    for chk in with_steps:
        t0 = time.perf_counter()
        steps = audit_steps(chk, Path(args.out) / "instances")
        all_steps.append(steps)
        print(format_steps(chk, steps))
        print()
        results.append(audit_result(chk, steps, time.perf_counter() - t0))
    skipped = [c.id for c in checks if c not in with_steps]
    if skipped:
        print(f"no proof steps declared: {', '.join(skipped)}")
    doc = document(results, provenance(argv, None))
    from fedcheck.core.claim import jsonable as _jsonable
    doc["proof_audits"] = _jsonable({c.id: st for c, st in zip(with_steps, all_steps)})   # every step in full
    if args.json:
        print(f"results: {write_json(doc, args.json)}")
    if not args.no_report:
        from fedcheck.report import write_reports
        for path in write_reports(doc, Path(args.out)):
            print(f"report: {path}")
    vs = [r["verdict"] for r in results]
    if V.VIOLATED in vs:
        return EXIT_REFUTED
    if V.INCONCLUSIVE in vs:
        return EXIT_INCONCLUSIVE
    return EXIT_OK
