"""Provenance of a paper reading: the paper's words, their place, and the setting they are stated in."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Source", "provenance_record"]


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
