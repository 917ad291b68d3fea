"""Counterexample checks: a paper's claim that something *fails* on an instance it gives.

The verdict words are ``reproduced`` (the run shows the failure the paper describes),
``not_reproduced`` (the run contradicts it; exit code 1, as for a violated bound) and
``inconclusive``.  A declaration is a :class:`~fedcheck.measurement.MeasurementCheck` whose findings
use those words; ``measure`` builds the instance, runs the algorithm that should fail and (usually)
a method that should not, and returns the evidence with a ``series`` of the stall beside the
convergent method.

    naive = CounterexampleCheck(id="fedfw.naive_averaging", paper=FEDFW, reference="Appendix A, (20)-(22)",
                                claim="naive FW averaging stalls at xbar = 0 on (21)",
                                measure=reproduce_naive_stall)
"""
from __future__ import annotations

from dataclasses import dataclass

from fedcheck.core import verdict as V
from fedcheck.measurement import MeasurementCheck

__all__ = ["CounterexampleCheck", "reproduced_if"]


def reproduced_if(condition: bool | None) -> str:
    """``reproduced`` when the run shows the failure, ``not_reproduced`` when it shows the opposite,
    ``inconclusive`` when undecidable (``None``)."""
    if condition is None:
        return V.INCONCLUSIVE
    return V.REPRODUCED if condition else V.NOT_REPRODUCED


@dataclass(kw_only=True)
class CounterexampleCheck(MeasurementCheck):
    kind: str = "counterexample"
