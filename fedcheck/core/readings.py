"""Readings of a claim and their provenance: the paper's words, their place, and the setting they are stated in."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from fedcheck.core.errors import BadInput

__all__ = ["Source", "Reading", "Deviation", "provenance_record", "deviations_of", "size_only", "SIZE_PARAMETERS",
           "check_deviations", "PROSE_DEVIATION_PAPERS", "check_reading_marks"]

#: The papers whose claims still declare deviations as sentences (the older form: no parameter, no values, nothing
#: to check): admitted until their claims declare :class:`Deviation` data.  Any other claim's sentence is BadInput.
PROSE_DEVIATION_PAPERS = frozenset({"feddualavg", "fedsgm", "fedmls"})

#: The parameters whose deviation is one of size only: the same data, model, method and parameters as the paper,
#: less of it (fewer images or samples, rounds, data draws or seeds).
SIZE_PARAMETERS = frozenset({"images", "samples", "samples per client", "images per client", "data draws",
                             "seeds"})


@dataclass(frozen=True)
class Deviation:
    """How a run differs from the setting the paper states, as data: the ``parameter`` that differs, the
    ``paper``'s value and the ``run``'s (``Deviation("images", paper=60000, run=5000)``).  A deviation whose
    two values are equal is no deviation: :class:`~fedcheck.core.errors.BadInput`.  The runner compares
    ``run`` with the value the run records for ``parameter`` (a measurement's ``MeasureResult.used``, else the
    claim's parameters): a mismatch, or no recorded value, is :class:`BadInput` too.

    A deviation in :data:`SIZE_PARAMETERS` with a smaller run value is :attr:`of_size`: a finding whose every
    deviation is of size stays the paper's (it decides the claim; see docs/DESIGN.md, Provenance)."""

    parameter: str
    paper: Any
    run: Any

    def __post_init__(self):
        if not isinstance(self.parameter, str) or not self.parameter.strip():
            raise BadInput(f"Deviation: the parameter must be a non-empty name, not {self.parameter!r}")
        if self.paper is None or self.run is None:
            raise BadInput(f"deviation of {self.parameter!r}: give both the paper's value and the run's")
        if self.paper == self.run:
            raise BadInput(f"deviation of {self.parameter!r} declares the paper's value {self.paper!r} as the run's: "
                           "not a deviation")

    @property
    def of_size(self) -> bool:
        num = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (self.paper, self.run))
        return self.parameter in SIZE_PARAMETERS and num and self.run < self.paper

    def __str__(self) -> str:
        return f"{self.parameter}: {self.run} instead of the paper's {self.paper}"

    def record(self) -> dict:
        return {"parameter": self.parameter, "paper": self.paper, "run": self.run, "of_size": self.of_size}


def deviations_of(deviation) -> tuple[str, tuple[Deviation, ...]]:
    """``(text, deviations)`` of a declared deviation: a :class:`Deviation`, a sequence of them, or a sentence
    (the older free-text form, kept for the papers not converted yet; it carries no data)."""
    if isinstance(deviation, Deviation):
        deviation = (deviation,)
    if isinstance(deviation, (tuple, list)):
        if not all(isinstance(d, Deviation) for d in deviation):
            raise BadInput(f"a deviation is a fedcheck Deviation (or several), not {deviation!r}")
        devs = tuple(deviation)
        return "; ".join(str(d) for d in devs), devs
    if deviation is None:
        return "", ()
    if not isinstance(deviation, str):
        raise BadInput(f"a deviation is a fedcheck Deviation, not {deviation!r}")
    return deviation, ()


def size_only(deviations: tuple) -> bool:
    """Every deviation is of size (:attr:`Deviation.of_size`), and there is one."""
    return bool(deviations) and all(d.of_size for d in deviations)


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


def provenance_record(source: "Source | None", deviation: str = "", deviations: tuple = ()) -> dict:
    """The JSON fields of a reading's provenance (empty when it has none): ``deviation`` its text, ``deviations``
    the data of each (parameter, paper's and run's values)."""
    d = {}
    if source is not None:
        d["source"] = source.record()
    if deviation:
        d["deviation"] = deviation
    if deviations:
        d["deviations"] = [x.record() for x in deviations]
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
    deviation: Any = ""         # Deviation(s) (data), or a sentence (the older form); its text after construction
    deviations: tuple = ()      # the Deviation data of ``deviation``
    plausible: bool = False     # another plausible reading of the paper's own words (not a repair, not a setting)
    defect: str = ""            # findings with one defect key are one defect in the counts (readings/cases of it)
    step: str = ""              # the proof step this reading tests ("(C.25)"), when it is not the theorem itself
    conclusion: str = ""        # with ``step``: whether the theorem's conclusion survives a refutation of the step

    def __post_init__(self):
        if self.source is not None and not isinstance(self.source, Source):
            raise TypeError(f"reading {self.name!r}: source must be a fedcheck Source, not {type(self.source).__name__}")
        check_reading_marks(f"reading {self.name!r}", self.plausible, self.deviation, self.step, self.conclusion)
        text, devs = deviations_of(self.deviation)
        object.__setattr__(self, "deviations", tuple(dict.fromkeys(tuple(self.deviations) + devs)))
        object.__setattr__(self, "deviation", text or "; ".join(str(d) for d in self.deviations))
        if self.deviation and self.paper and not size_only(self.deviations):
            raise ValueError(f"reading {self.name!r} is tested outside the paper's setting ({self.deviation}): "
                             "declare it paper=False (an analysis)")


def check_reading_marks(owner: str, plausible: bool, deviation, step: str, conclusion: str) -> None:
    """A plausible reading of the paper's words is a reading, not a setting: it declares no deviation; a reading
    of a proof step says what its refutation means for the theorem's conclusion."""
    if plausible and deviation:
        raise ValueError(f"{owner} is another reading of the paper's words (plausible=True): it declares no deviation "
                         f"({deviation}); a reading is not a setting")
    if step and not (isinstance(conclusion, str) and conclusion.strip()):
        raise ValueError(f"{owner} tests the proof step {step}: say whether the theorem's conclusion survives its "
                         "refutation (conclusion=...)")


def check_deviations(claim_id: str, paper_key: str, findings, used: Mapping) -> None:
    """Every declared deviation against what the run used (``used``: parameter -> value, the measurement's
    ``MeasureResult.used`` over the claim's parameters): :class:`BadInput` (exit 2, one line naming it) when a
    deviation's run value is not the value the run recorded, when the run recorded none, or when a claim outside
    :data:`PROSE_DEVIATION_PAPERS` declares a deviation as a sentence.  (A deviation equal to the paper's value
    is refused when it is made: :class:`Deviation`.)"""
    for f in findings:
        if f.deviation and not f.deviations and paper_key not in PROSE_DEVIATION_PAPERS:
            raise BadInput(f"{claim_id}: finding {f.name!r} declares its deviation as a sentence ({f.deviation[:60]!r}): "
                           "declare Deviation(parameter, paper=..., run=...)")
        for d in f.deviations:
            if d.parameter not in used:
                raise BadInput(f"{claim_id}: finding {f.name!r} declares the deviation {d}, but the run records no value "
                               f"of {d.parameter!r} (MeasureResult.used)")
            if used[d.parameter] != d.run:
                raise BadInput(f"{claim_id}: finding {f.name!r} declares the deviation {d}, but the run used "
                               f"{d.parameter} = {used[d.parameter]!r}")
