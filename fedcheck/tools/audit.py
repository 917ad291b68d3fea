"""Proof audits: the key steps of a claim's proof, each checked on its own (``fedcheck audit ID``).

What a proof step is, how a claim declares its steps (with an example), the verdicts a step gets and the exit
codes of ``fedcheck audit``: :mod:`fedcheck.core.steps`, whose vocabulary this module re-exports.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from fedcheck.core import verdict as V
from fedcheck.core.steps import AS_VERDICT
from fedcheck.core.steps import (INCONCLUSIVE, METHODS, PROVEN, REFUTED, VERIFIED, ProofStep,  # noqa: F401  (the
                                 StepOutcome, all_of, check_on_grid, from_symbolic_claim,      # vocabulary of proof
                                 prove_equal, prove_identity, prove_le, prove_nonnegative,     # steps, re-exported)
                                 witness_dir)
from fedcheck.experiments import instance_inequality  # noqa: F401  (re-exported)

__all__ = ["ProofStep", "StepOutcome", "PROVEN", "VERIFIED", "REFUTED", "INCONCLUSIVE", "METHODS",
           "audit_line", "prove_identity", "prove_nonnegative", "prove_le", "prove_equal", "all_of", "check_on_grid",
           "from_symbolic_claim", "instance_inequality",
           "audit_steps", "audit_verdict", "audit_result", "attach_audit", "steps_table", "format_steps"]


def audit_steps(check, save_dir: str | Path | None = None) -> list[dict]:
    """Evaluate the check's ``proof_steps``; instance witnesses are written to ``save_dir`` when given."""
    with witness_dir(save_dir):
        return [s.evaluate() for s in (getattr(check, "proof_steps", ()) or ())]


def audit_verdict(steps: Sequence[dict]) -> str:
    """``violated`` if a step of the paper is refuted, ``inconclusive`` if one is undecided, else ``holds``."""
    decisive = [s for s in steps if s.get("paper", True)] or list(steps)
    return V.combine(AS_VERDICT[s["verdict"]] for s in decisive) if decisive else V.INCONCLUSIVE


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
    return [{"name": f"proof step {s['name']} ({s['method']})", "verdict": AS_VERDICT[s["verdict"]],
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
    for s in steps:         # a refuted step: whether the theorem's conclusion survives it
        if s["verdict"] == REFUTED and s.get("conclusion"):
            lines.append(f"  {s['name']} refuted; the theorem's conclusion: {s['conclusion']}")
    return "\n".join(lines)
