"""Symbolic checks: claims proven (or refuted) with SymPy, with no run.

    condition29 = SymbolicCheck(id="fedfw.condition29", paper=FEDFW, reference="(29)",
                                claim="(1 - eta_t)(lambda_t - lambda_{t-1}) - eta_t lambda_t <= 0 for t >= 1",
                                claims=[SymbolicClaim("(29)", prove_29)])

Each :class:`~fedcheck.check.SymbolicClaim` returns ``(verdict, evidence)``; the check's verdict is
the worst of them (a proof SymPy cannot finish is ``inconclusive``, never a pass).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from fedcheck.check import RunConfig, SymbolicClaim
from fedcheck.checkbase import Finding, GenericCheck

__all__ = ["SymbolicCheck"]


@dataclass(kw_only=True)
class SymbolicCheck(GenericCheck):
    claims: Sequence[SymbolicClaim]
    kind: str = "symbolic"

    def run(self, config: RunConfig):
        res, params, t0 = self.new_result(config)
        evaluated = [c.evaluate() for c in self.claims]
        res.symbolic = res.symbolic + evaluated
        findings = [Finding(e["name"], e["verdict"], True, e["evidence"], evidence=e["evidence"]) for e in evaluated]
        res.evidence = {"claims": evaluated}
        return self.finish(res, findings, t0)
