"""Readings of a claim and their provenance: the paper's words, their place, and the setting they are stated in."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Source", "Reading", "provenance_record"]


@dataclass(frozen=True)
class Source:
    """Where a paper states a reading: its own words (a short ``quote``), the ``place`` (section, equation,
    table, caption) and the ``setting`` it is stated in (data, oracle, parameters, horizon).  A reading
    tested in another setting names the difference as its ``deviation`` and is an analysis, never a paper
    reading."""

    quote: str
    place: str
    setting: str

    def __post_init__(self):
        for name in ("quote", "place", "setting"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip():
                raise TypeError(f"Source.{name} must be a non-empty string, not {v!r}")

    def record(self) -> dict:
        return {"quote": self.quote, "place": self.place, "setting": self.setting}


def provenance_record(source: "Source | None", deviation: str = "") -> dict:
    """The JSON fields of a reading's provenance (empty when it has none)."""
    d = {}
    if source is not None:
        d["source"] = source.record()
    if deviation:
        d["deviation"] = deviation
    return d


@dataclass(frozen=True)
class Reading:
    """One reading of a claim: substitutions applied to its schedules and bounds before evaluation.

    ``paper=True`` marks a reading the paper states (its theorem, proof, text, table or caption); only
    those decide the claim's verdict.  ``paper=False`` marks an analysis fedcheck adds (a repair, an
    exact constant), reported beside.  ``statistic`` overrides the bound test's statistic for this reading
    (a theorem claims every run, its proof an expectation: two readings).

    ``source``: where the paper states it (:class:`Source`); ``deviation``: how the tested setting differs
    from ``source.setting`` -- such a reading is an analysis by construction (``paper=False``)."""

    name: str
    substitutions: Mapping = field(default_factory=dict)
    paper: bool = True
    description: str = ""
    statistic: Any = None
    source: Source | None = None
    deviation: str = ""

    def __post_init__(self):
        if self.source is not None and not isinstance(self.source, Source):
            raise TypeError(f"reading {self.name!r}: source must be a fedcheck Source, not {type(self.source).__name__}")
        if self.deviation and self.paper:
            raise ValueError(f"reading {self.name!r} is tested outside the paper's setting ({self.deviation}): "
                             "declare it paper=False (an analysis)")
