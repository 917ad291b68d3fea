"""Measurement checks: a paper's qualitative or empirical claim, measured by a run.

A declaration gives a ``measure(ctx)`` function that runs whatever is needed and returns a
:class:`Measurement`: named :class:`~fedcheck.checkbase.Finding` s (each with a verdict computed
from the run -- e.g. "every l1 message is 1-sparse" holds when the count says so), evidence,
optional ``series`` (curves for the report), ``tables`` and refuting instances written to disk.
The check's verdict is the worst of its ``paper`` findings; findings marked ``paper=False`` are
analyses reported beside them (what the paper does not claim but a reader wants to know).

    comm = MeasurementCheck(id="fedfw.communication", paper=FEDFW, reference="Section 3.2",
                            claim="messages are extreme points: 1-sparse (l1), rank one (nuclear)",
                            measure=measure_messages)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from fedcheck.check import RunConfig
from fedcheck.checkbase import Finding, GenericCheck

__all__ = ["Measurement", "MeasureContext", "MeasurementCheck"]


@dataclass
class Measurement:
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


@dataclass
class MeasureContext:
    """What ``measure`` receives: the run configuration, merged params and the check (for its id)."""

    config: RunConfig
    params: dict
    check: Any

    @property
    def full(self) -> bool:
        return bool(self.config.full)

    @property
    def save_dir(self) -> str | None:
        return self.config.save_dir


@dataclass(kw_only=True)
class MeasurementCheck(GenericCheck):
    measure: Callable[[MeasureContext], Measurement]
    kind: str = "measurement"

    def run(self, config: RunConfig):
        res, params, t0 = self.new_result(config)
        m = self.measure(MeasureContext(config, params, self))
        res.evidence = dict(m.evidence)
        if m.series:
            res.series = m.series          # optional field of the result dict (DESIGN.md)
        if m.tables:
            res.tables = m.tables
        res.instances = list(m.instances)
        res.saved_instances = list(m.saved_instances)
        res.fitted_rate, res.fitted_rate_ci, res.rate_verdict = m.fitted_rate, m.fitted_rate_ci, m.rate_verdict
        res.feasibility = dict(m.feasibility)
        if m.formula:
            res.formula = m.formula
        return self.finish(res, m.findings, t0, m.reason)
