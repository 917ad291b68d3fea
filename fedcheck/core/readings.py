"""Readings of a claim and their provenance: the paper's words, their place, and the setting they are stated in."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from fedcheck.core.errors import BadInput

__all__ = ["Source", "Reading", "Deviation", "provenance_record", "deviations_of", "size_only", "SIZE_PARAMETERS",
           "check_deviations", "used_by", "check_reading_marks"]

#: The parameters whose deviation is one of size only: the same data, model, method, parameters and horizon as the
#: paper, less of it (fewer images or samples, data draws or seeds).  Rounds are not among them: the paper states
#: what holds at its horizon, and a shorter one is another setting.
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


def deviations_of(deviation, data: tuple = ()) -> tuple[str, tuple[Deviation, ...]]:
    """``(text, deviations)`` of a declared deviation: a :class:`Deviation`, a sequence of them, or a sentence
    (the older free-text form: it carries no data, and the runner refuses it, :func:`check_deviations`)."""
    if isinstance(deviation, Deviation):
        deviation = (deviation,)
    if isinstance(deviation, (tuple, list)):
        if not all(isinstance(d, Deviation) for d in deviation):
            raise BadInput(f"a deviation is a fedcheck Deviation (or several), not {deviation!r}")
        devs = tuple(deviation)
        return "; ".join(str(d) for d in devs), devs
    if deviation is None or deviation == "" or (data and deviation == "; ".join(str(d) for d in data)):
        return "", ()           # nothing, or the text of the data given beside it
    if isinstance(deviation, str):
        raise BadInput(f"a deviation declared as a sentence ({deviation[:60]!r}) names no parameter and no values: "
                       "declare Deviation(parameter, paper=..., run=...)")
    raise BadInput(f"a deviation is a fedcheck Deviation, not {deviation!r}")


def size_only(deviations: tuple) -> bool:
    """Every deviation is of size (:attr:`Deviation.of_size`), and there is one."""
    return bool(deviations) and all(d.of_size for d in deviations)


@dataclass(frozen=True)
class Source:
    """Where a paper states a reading: its own words (a short ``quote``), the ``place`` (section, equation,
    table, caption) and the ``setting`` it is stated in (data, oracle, parameters, horizon).  A reading
    tested in another setting names the difference as its ``deviation`` and is an analysis, never a paper
    reading.

    ``stated``: the paper's values of the parameters the setting states, as data (``{"clients": 10, "rounds": 100,
    "data": "MNIST"}``; ``setting`` stays the human text).  The runner holds every finding with this source to them
    (:func:`check_deviations`): the value the run used is the paper's, or a :class:`Deviation` of that parameter
    declares both values."""

    quote: str
    place: str
    setting: str
    stated: Mapping = field(default_factory=dict, hash=False)

    def __post_init__(self):
        for name in ("quote", "place", "setting"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip():
                raise TypeError(f"Source.{name} must be a non-empty string, not {v!r}")
        if not isinstance(self.stated, Mapping) or not all(isinstance(k, str) and k.strip() for k in self.stated) \
                or any(v is None for v in self.stated.values()):
            raise BadInput(f"Source.stated maps parameter names to the paper's values, not {self.stated!r}")
        object.__setattr__(self, "stated", dict(self.stated))

    def record(self) -> dict:
        d = {"quote": self.quote, "place": self.place, "setting": self.setting}
        if self.stated:
            d["stated"] = dict(self.stated)
        return d


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
    deviation: Any = ""         # Deviation(s) (data); its text after construction
    deviations: tuple = ()      # the Deviation data of ``deviation``
    plausible: bool = False     # another plausible reading of the paper's own words (not a repair, not a setting)
    defect: str = ""            # findings with one defect key are one defect in the counts (readings/cases of it)
    step: str = ""              # the proof step this reading tests ("(C.25)"), when it is not the theorem itself
    conclusion: str = ""        # with ``step``: whether the theorem's conclusion survives a refutation of the step

    def __post_init__(self):
        if self.source is not None and not isinstance(self.source, Source):
            raise TypeError(f"reading {self.name!r}: source must be a fedcheck Source, not {type(self.source).__name__}")
        check_reading_marks(f"reading {self.name!r}", self.plausible, self.deviation, self.step, self.conclusion)
        _, devs = deviations_of(self.deviation, tuple(self.deviations))
        object.__setattr__(self, "deviations", tuple(dict.fromkeys(tuple(self.deviations) + devs)))
        object.__setattr__(self, "deviation", "; ".join(str(d) for d in self.deviations))
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


def used_by(name: str, used: Mapping) -> dict | None:
    """The values the run used for the finding ``name``: ``used`` (parameter -> value) with, over it, the values
    recorded for that finding alone -- an entry whose value is a mapping and whose key is the finding's name or its
    start (the longest such key), as ``sources`` are keyed (``{"rounds": 200, "FedMiD is denser": {"eta_s": 1}}``).
    ``None`` when the longest such key maps to ``None``: nothing ran for that finding (a paper finding left
    undecided because its setting could not be run)."""
    out = {k: v for k, v in used.items() if v is not None and not isinstance(v, Mapping)}
    keys = sorted((k for k, v in used.items() if (v is None or isinstance(v, Mapping))
                   and (name == k or name.startswith(k))), key=len)
    if keys and used[keys[-1]] is None:
        return None
    for k in keys:
        out.update(used[k] or {})
    return out


def check_deviations(claim_id: str, findings, used: Mapping) -> None:
    """A finding's setting against what the run used (``used``: parameter -> value, the measurement's
    ``MeasureResult.used`` over the claim's parameters; per finding: :func:`used_by`).  :class:`BadInput` (exit 2,
    one line naming the claim, the finding, the parameter and both values) when

    * a declared deviation is a sentence (no parameter, no values: nothing to check);
    * a declared deviation's run value is not the value the run recorded, or the run recorded none;
    * a declared deviation's paper value is not the value its source states (``Source.stated``);
    * a parameter the source states was run at another value with no deviation declaring it, or the run recorded
      no value of it (an undeclared difference);
    * a finding for which the run records that nothing ran (``used_by`` is ``None``) is not inconclusive.

    (A deviation equal to the paper's value is refused when it is made: :class:`Deviation`.)"""
    for f in findings:
        if f.deviation and not f.deviations:
            raise BadInput(f"{claim_id}: finding {f.name!r} declares its deviation as a sentence ({f.deviation[:60]!r}): "
                           "declare Deviation(parameter, paper=..., run=...)")
        vals = used_by(f.name, used)
        if vals is None:            # nothing ran for it: it decides nothing, and declares no deviation of a run
            if f.verdict != "inconclusive" or f.deviations:
                raise BadInput(f"{claim_id}: finding {f.name!r} records that nothing ran for it (used: None), but it is "
                               f"{f.verdict}" + (f" and declares {f.deviation}" if f.deviations else ""))
            continue
        stated = dict(getattr(f.source, "stated", None) or {})
        declared = {}
        for d in f.deviations:
            declared[d.parameter] = d
            if d.parameter not in vals:
                raise BadInput(f"{claim_id}: finding {f.name!r} declares the deviation {d}, but the run records no value "
                               f"of {d.parameter!r} (MeasureResult.used)")
            if vals[d.parameter] != d.run:
                raise BadInput(f"{claim_id}: finding {f.name!r} declares the deviation {d}, but the run used "
                               f"{d.parameter} = {vals[d.parameter]!r}")
            if d.parameter in stated and stated[d.parameter] != d.paper:
                raise BadInput(f"{claim_id}: finding {f.name!r} declares the deviation {d}, but its source states "
                               f"{d.parameter} = {stated[d.parameter]!r}")
        for p, paper in stated.items():
            if p in declared:
                continue
            if p not in vals:
                raise BadInput(f"{claim_id}: finding {f.name!r}: its source states {p} = {paper!r}, but the run records "
                               f"no value of {p!r} (MeasureResult.used)")
            if vals[p] != paper:
                raise BadInput(f"{claim_id}: finding {f.name!r} ran {p} = {vals[p]!r} where the paper states {paper!r}, "
                               f"and no Deviation({p!r}, paper={paper!r}, run={vals[p]!r}) declares it")
