"""The one runner: a claim and a run configuration in, a :class:`~fedcheck.core.claim.Result` out.

Every claim goes through :func:`run_claim`.  A bound test's experiment observes comparisons; each is
judged with the statistic of its reading (:meth:`fedcheck.core.evidence.Comparison.judge`, the policy
of :mod:`fedcheck.core.verdict`); judgements are gathered into findings; the claim's verdict is the
worst of its paper findings (all findings when none is a paper finding).  A verdict therefore always
comes from a run or a SymPy proof, never from the declaration.
"""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Sequence

import numpy as np

from fedcheck.core import verdict as V
from fedcheck.core.readings import Reading, check_deviations, deviations_of, size_only
from fedcheck.core.results import Result, RunConfig
from fedcheck.core.evidence import (BoundTest, Finding, Measurement, MeasureContext, Proof, attach_provenance,
                                    clopper_pearson)

# ``Claim`` (fedcheck.core.claim) is named in annotations only and never imported, not even for type checkers:
# claim.py imports this module (Claim.run calls run_claim), and the runner sits below the declaration type.

__all__ = ["run_claim", "verdict_of_findings", "outside_the_setting", "finish", "printed_formulas", "finding_source",
           "declared_findings", "result_parts_error", "observation_record", "finding_vacuity", "claim_vacuity",
           "vacuity_note"]


def outside_the_setting(findings: Sequence[Finding]) -> list[Finding]:
    """The findings of a claim whose paper statement was tested only outside the setting the paper states: no
    finding is the paper's and some name their deviation (empty otherwise).  Such a claim is undecided for the
    paper -- a paper is refuted only in its own setting -- whatever the analyses found."""
    if any(f.paper for f in findings):
        return []
    return [f for f in findings if f.deviation]


def verdict_of_findings(findings: Sequence[Finding]) -> str:
    if outside_the_setting(findings):
        return V.INCONCLUSIVE
    decisive = [f for f in findings if f.paper] or list(findings)
    return V.combine(f.verdict for f in decisive)


def _new_result(claim: Claim, config: RunConfig, params: dict) -> Result:
    res = Result(id=claim.id, title=claim.title, paper=claim.paper.key, reference=claim.reference,
                 claim=claim.statement, kind=claim.result_kind, verdict=V.INCONCLUSIVE, expected=claim.expected,
                 claimed_rate=None if claim.claimed_rate is None else float(claim.claimed_rate),
                 params=params, assumptions=list(claim.assumptions), domain=claim.domain.record())
    res.symbolic = [f.evaluate() for f in claim.symbolic]
    return res


def run_claim(claim: Claim, config: RunConfig) -> Result:
    t0 = time.perf_counter()
    if config.save_dir:     # every file a claim saves goes into its own folder (fedcheck.core.outputs.check_folder)
        import dataclasses
        import os
        from fedcheck.core.outputs import check_folder
        config = dataclasses.replace(config, save_dir=os.path.join(config.save_dir, check_folder(claim.id)))
    params = {**claim.params, **(config.params or {})}
    res = _new_result(claim, config, params)
    ev = claim.evidence
    if isinstance(ev, BoundTest):
        findings, reason = _bound_test(claim, ev, config, params, res)
    elif isinstance(ev, Measurement):
        findings, reason = _measurement(claim, ev, config, params, res)
    elif isinstance(ev, Proof):
        from fedcheck.core import progress
        evaluated = []
        with progress.task(f"{claim.id} proof", total=len(ev.facts), unit="fact", enabled=config.progress) as bar:
            for f in ev.facts:          # a SymPy simplification may take seconds: show which fact is running
                bar.set_label(f.name)
                evaluated.append(f.evaluate())
                bar.update()
        res.symbolic = res.symbolic + evaluated
        res.evidence = {"claims": evaluated}
        findings = [Finding(e["name"], e["verdict"], True, e["evidence"], evidence=e["evidence"], source=f.source)
                    for f, e in zip(ev.facts, evaluated)]
        reason = None
    else:  # pragma: no cover - Claim validates its evidence
        raise TypeError(type(ev).__name__)
    finish(res, findings, reason)
    res.seconds = time.perf_counter() - t0
    return res


def printed_formulas(ev) -> dict:
    """``{bound name: record}`` for the bounds that carry the paper's printed LaTeX (:mod:`fedcheck.core.latex`)."""
    if not isinstance(ev, BoundTest) or not any(b.latex or b.latex_reconstructed for b in ev.bounds):
        return {}
    from fedcheck.core import latex
    return {b.name: latex.check_bound(b) for b in ev.bounds if b.latex or b.latex_reconstructed}


def declared_findings(claim: Claim) -> list[dict]:
    """The findings a claim declares before it runs, with the paper's words where given: ``{"name", "paper",
    "source" (or None), "deviation" (its text), "deviations" (the Deviation data)}`` -- a bound test's (bound, reading) findings as the runner names them, a
    proof's facts, a measurement's declared ``sources`` (its other findings are made at run time)."""
    ev = claim.evidence
    out: dict[str, dict] = {}
    if isinstance(ev, BoundTest):
        bounds = ev.bounds or (SimpleNamespace(name="claim", paper=True, source=None),)   # Cases without bounds
        nb, nr = len(bounds), len(claim.readings)
        mode = ev.finding_name("b", "r", nb, nr)
        for b in bounds:
            for r in claim.readings:
                name = ev.finding_name(b.name, r.name, nb, nr)
                d = out.setdefault(name, {"name": name, "paper": True, "source": None, "deviation": "", "deviations": ()})
                d["paper"] = d["paper"] and bool(r.paper and b.paper)
                src = finding_source(r if nr == 1 or mode != "b" else None, b if nb == 1 or mode == "b" else None,
                                     "bound" if mode == "b" else "reading")
                d["source"] = d["source"] or src
                if r.deviations:
                    d["deviations"] = tuple(dict.fromkeys(d["deviations"] + r.deviations))
                    d["deviation"] = "; ".join(str(x) for x in d["deviations"])
    elif isinstance(ev, Proof):
        for f in ev.facts:
            out[f.name] = {"name": f.name, "paper": True, "source": f.source, "deviation": "", "deviations": ()}
    elif isinstance(ev, Measurement):       # declared by name or by the start of a name (run-time suffixes)
        for name, entry in ev.sources.items():
            src, dev = entry if isinstance(entry, tuple) else (entry, ())
            text, devs = deviations_of(dev)
            out[name] = {"name": name, "paper": not devs or size_only(devs), "source": src, "deviation": text,
                         "deviations": devs}
    return list(out.values())


def finding_source(reading: Reading | None, bound, by: str):
    """The source of a bound test's finding: the reading's when the finding is named by reading, else the bound's;
    the other one when the first has none."""
    order = (bound, reading) if by == "bound" else (reading, bound)
    for x in order:
        src = getattr(x, "source", None)
        if src is not None:
            return src
    return None


VACUOUS, BITES, UNKNOWN = "vacuous", "not vacuous", "unknown"
#: why vacuity is unknown when no judgement carries a trivial bound: nothing declared (a metric's ``trivial=``, or
#: :func:`fedcheck.experiments.no_trivial_bound` where the metric has none), or an equality
NO_TRIVIAL = "no trivial bound of the metric is known"
EQUALITY = "an equality: it can fail at any value of its quantity (vacuity concerns one-sided bounds)"
_AXIS_WORDS = {"round": "rounds", "horizon": "horizons", "point": "points"}


def mean_family(items, statistic_of) -> int:
    """The Bonferroni family of a claim's ``mean``-statistic points: every point of every observation judged with
    the mean statistic (a stream judged in blocks counts the points it judged; an experiment that set a larger
    family up front keeps it: the larger of the two)."""
    total, declared = 0, 0
    for item in items:
        st = statistic_of(item)
        if st.kind != "mean":
            continue
        declared = max(declared, int(st.family or 0))
        if item.judged is not None:
            declared = max(declared, int(item.judged.get("family") or 0))
            total += int(item.judged.get("points") or 0)
        elif item.comparison is not None:
            total += int(item.comparison.lhs_lo.shape[1])
    return max(1, total, declared)


def mean_power(lst, statistic) -> dict:
    """A ``mean``-statistic finding's ``power`` record (decided over draws): the smallest effect its runs could decide,
    of the widest of its judgements -- the Student t interval's half-width at the largest standard error
    (``samples - 1`` degrees of freedom at the level of the statistic's ``z``) and the effect a t test detects with
    ``V.POWER``; ``{}`` where no judgement varies over its runs (a deterministic quantity given twice: no draws)."""
    from scipy import stats
    z = V.POLICY.statistical_z if statistic.z is None else statistic.z
    level = float(2.0 * stats.norm.cdf(z) - 1.0)
    best = None
    for _, s, _ in lst:
        se, k = s.get("se_max"), int(s.get("samples") or 0)
        if se is None or not np.isfinite(se) or se <= 0 or k < 2:
            continue
        tries = int(s.get("family") or 1)
        half = float(s["t_multiplier"] if s.get("t_multiplier") is not None else V.t_multiplier(z, k)) * float(se)
        if best is None or half > best["half_width"]:
            best = {"draws": k, "dof": float(k - 1), "level": level, "tries": tries, "half_width": half,
                    "detectable": half, "mde": V.detectable_effect(float(se), k - 1, V.corrected_level(level, tries)),
                    "power": V.POWER, "tests": len(lst)}
    return {"power": best} if best else {}


def finding_vacuity(lst, bounds, axis: str) -> dict:
    """Whether a bound-test finding could have failed, from the vacuity records of its judgements
    (:meth:`fedcheck.core.evidence.Comparison.vacuity`): ``vacuous`` when every observation has a trivial bound
    and the bound (at its deciding ends) is at least it at every point checked; ``not vacuous`` when the bound
    bites (is below the trivial bound) somewhere; ``unknown`` when a metric has no trivial bound (none is claimed
    non-vacuous), a point has no finite one (declared infinite: ``why_unknown`` says why), or a measured value
    exceeds it (the trivial bound does not apply to that run).  ``bites_from``: where the bound's declaration says
    it starts to bite (reported, never decides)."""
    recs = [s.get("vacuity") for _, s, _ in lst]
    whats = list(dict.fromkeys(v.get("what") or "" for v in recs if v))
    out = {"status": UNKNOWN, "axis": _AXIS_WORDS.get(axis, "points"), "trivial": "; ".join(w for w in whats if w),
           "observations": len(recs), "observations_without_trivial_bound": sum(v is None for v in recs)}
    declared = {b.name: b.bites_from for b in bounds if getattr(b, "bites_from", None) is not None}
    if declared:
        out["bites_from"] = declared
    known = [(i, v) for (i, _, _), v in zip(lst, recs) if v]
    if not known:
        rels = {s.get("relation") for _, s, _ in lst}
        out["why_unknown"] = (EQUALITY if rels == {"=="} else NO_TRIVIAL)
        return out
    contra = [i for i, v in known if v.get("contradicted")]
    out.update(points=int(sum(v["points"] for _, v in known)),
               vacuous_points=int(sum(v["vacuous_points"] for _, v in known)),
               unknown_points=int(sum(v["unknown_points"] for _, v in known)))
    mins = [v["min_trivial"] for _, v in known if v.get("min_trivial") is not None]
    if mins:
        out["smallest_trivial_bound"] = min(mins)
    per_bound: dict = {}     # a finding over several bounds: those vacuous at every point of every observation
    for (i, _, _), v in zip(lst, recs):
        per_bound.setdefault(i.bound, []).append(bool(v) and not v.get("contradicted") and
                                                 v["points"] > 0 and v["vacuous_points"] == v["points"])
    if len(per_bound) > 1:
        out["vacuous_bounds"] = [b for b, ok in per_bound.items() if all(ok)]
    biting = [(i, v) for i, v in known if v.get("first_biting") is not None and not v.get("contradicted")]
    if biting:
        i, v = biting[0]
        out["status"] = BITES
        out["first_biting"] = {"case": str(i.case), v.get("point_name", "point"): v["first_biting"],
                               "bound": v["bound_at_first_biting"], "trivial": v["trivial_at_first_biting"]}
    elif contra:
        out["why_unknown"] = (f"a measured value exceeds the trivial bound on {len(contra)} observation(s) (first: "
                              f"{contra[0].case}): it does not apply to those runs")
    elif out["observations_without_trivial_bound"]:
        out["why_unknown"] = "some observations have no trivial bound of their metric"
    elif out["unknown_points"]:
        unb = sum(v.get("unbounded_points", 0) for _, v in known)
        why = "; ".join(dict.fromkeys(v.get("what") or "" for _, v in known if v.get("unbounded_points")))
        out["why_unknown"] = (why if unb == out["unknown_points"] and why
                              else "the trivial bound is not finite at some points")
    else:
        out["status"] = VACUOUS
    return out


def claim_vacuity(findings: Sequence[Finding]) -> dict:
    """The claim's vacuity from its deciding findings' (paper findings, or all when none is): ``vacuous`` (all),
    ``partly vacuous`` (some), ``not vacuous`` (every one bites somewhere) or ``unknown``; empty when no finding
    is a bound test's."""
    decisive = [f for f in findings if f.paper] or list(findings)
    if not any(isinstance(f.extra.get("vacuity"), dict) for f in decisive):
        return {}
    st = {f.name: f.extra["vacuity"]["status"] if isinstance(f.extra.get("vacuity"), dict) else UNKNOWN
          for f in decisive}      # a deciding finding of another kind (a rate, a fact): unknown
    recs = {f.name: f.extra["vacuity"] for f in decisive if isinstance(f.extra.get("vacuity"), dict)}
    vac = [k for k, v in st.items() if v == VACUOUS]
    if len(vac) == len(st):
        status = VACUOUS
    elif vac:
        status = "partly vacuous"
    elif all(v == BITES for v in st.values()):
        status = BITES
    else:
        status = UNKNOWN
    whats = list(dict.fromkeys(r["trivial"] for r in recs.values() if r.get("trivial")))
    axes = list(dict.fromkeys(r["axis"] for r in recs.values()))
    out = {"status": status, "findings": st, "vacuous_findings": vac, "trivial": "; ".join(whats),
           "axis": axes[0] if len(axes) == 1 else "points"}
    vb = list(dict.fromkeys(b for k, r in recs.items() if st[k] != VACUOUS for b in r.get("vacuous_bounds") or ()))
    if vb:      # a finding that bites through one of its bounds while another could not have failed
        out["vacuous_bounds"] = vb
    if status == UNKNOWN:       # each unknown finding's reason, once
        out["why_unknown"] = "; ".join(dict.fromkeys(
            (recs[k].get("why_unknown") or NO_TRIVIAL) if k in recs else "a deciding finding is not a bound test"
            for k, v in st.items() if v == UNKNOWN))
    return out


def vacuity_note(vac: dict, verdict: str) -> str:
    """What a headline adds for a holding claim whose bound could not have failed (empty otherwise)."""
    if verdict != V.HOLDS:
        return ""
    if vac.get("status") not in (VACUOUS, "partly vacuous"):
        vb = vac.get("vacuous_bounds")
        if not vb:
            return ""
        return (f" (vacuous at these {vac['axis']} for bound{'s' if len(vb) > 1 else ''} {', '.join(vb)}: "
                f"above the largest value {'their quantities' if len(vb) > 1 else 'its quantity'} can take everywhere)")
    what = vac.get("trivial") or "the largest value the metric can take"
    if vac["status"] == VACUOUS:
        if ";" in what:     # several measured quantities, each with its own trivial bound (each in the JSON)
            return f" (vacuous at these {vac['axis']}: each bound exceeds the largest value its quantity can take everywhere)"
        return f" (vacuous at these {vac['axis']}: the bound exceeds {what} everywhere)"
    names = ", ".join(vac["vacuous_findings"])
    return (f" (vacuous at these {vac['axis']} for {len(vac['vacuous_findings'])} of {len(vac['findings'])} "
            f"findings: {names})")


def finish(res: Result, findings: Sequence[Finding], reason: str | None = None) -> Result:
    """Readings and verdict from the findings; a default reason names the deciding findings."""
    used = res.evidence.get("used") if isinstance(res.evidence, dict) else None
    check_deviations(res.id, findings, {**(res.params or {}), **(used or {})})
    res.readings = {f.name: f.as_reading() for f in findings}
    verdict = verdict_of_findings(findings)
    if res.feasibility.get("decides"):
        verdict = V.combine([verdict, res.feasibility["verdict"]])
    res.verdict = verdict
    outside = outside_the_setting(findings)
    if outside:
        devs = "; ".join(dict.fromkeys(f.deviation for f in outside))
        res.reason = ("the paper's statement is not tested in the setting it states (tested only as analyses: "
                      f"{devs}); analyses: " + "; ".join(f"{f.name}: {f.verdict}" for f in findings)
                      + (f"; {reason}" if reason else ""))
    elif reason is not None:
        res.reason = reason
    elif res.verdict not in (V.HOLDS, V.REPRODUCED):
        bad = [f for f in findings if f.paper and f.verdict == res.verdict] or \
              [f for f in findings if f.verdict == res.verdict]
        parts = [f"{f.name}: {f.verdict}" + (f" ({f.evidence})" if isinstance(f.evidence, str) else "") for f in bad]
        if res.feasibility.get("decides") and res.feasibility["verdict"] == res.verdict:
            parts.append(f"feasibility: {res.feasibility['verdict']} ({res.feasibility.get('evidence', '')})")
        res.reason = "; ".join(parts)
        side = [f for f in findings if not f.paper and f.verdict in (V.VIOLATED, V.NOT_REPRODUCED)]
        if side and res.verdict == V.INCONCLUSIVE:     # an undecided paper claim: say what the analyses beside it found
            res.reason += "; analyses refuted: " + "; ".join(f"{f.name}: {f.verdict}" for f in side)
    else:   # the paper's claims stand; say so when an analysis beside them is refuted
        side = [f for f in findings if not f.paper and f.verdict in (V.VIOLATED, V.NOT_REPRODUCED)]
        if side and not res.reason:
            said = lambda f: f"{f.name}: {f.verdict}" + (f" ({f.evidence})" if isinstance(f.evidence, str) else "")  # noqa: E731
            words = [f for f in side if f.plausible]
            others = [f for f in side if not f.plausible]
            res.reason = "; ".join(x for x in (
                ("the paper's reading stands; the sentence fails under another plausible reading of its words: "
                 + "; ".join(said(f) for f in words)) if words else "",
                ("paper claims stand; analyses refuted: " if not words else "analyses refuted: ")
                + "; ".join(said(f) for f in others) if others else "") if x)
    powers = [(f.name, f.extra["power"]) for f in findings if f.verdict in _GOOD and isinstance(f.extra.get("power"), dict)
              and np.isfinite(f.extra["power"].get("detectable", np.inf))]
    if powers:          # findings decided over draws: the smallest effect their samples could decide
        res.reason = "; ".join(x for x in (res.reason, "the smallest effects the samples could decide: " + "; ".join(
            f"{n}: {_g(p['detectable'])} ({_g(p['mde'])} at {100 * p['power']:.0f} % power; {p['draws']} draws, "
            + (f"{_g(p['dof'])} degrees of freedom)" if p.get("dof") is not None else f"{p.get('test')} interval)")
            for n, p in powers)) if x)
    small = "; ".join(dict.fromkeys(str(d) for f in findings if f.paper for d in f.deviations))
    if small:           # paper findings decided at a smaller size than the paper's: the reason says which
        res.reason = "; ".join(x for x in (res.reason, f"decided at a smaller size than the paper's ({small})") if x)
    res.headline = headline(res.verdict, findings, res.kind)
    res.vacuity = claim_vacuity(findings)
    res.headline += vacuity_note(res.vacuity, res.verdict)
    if isinstance(res.formula, dict) and res.formula.get("printed"):     # bounds the paper's text lost, rebuilt
        from fedcheck.core.latex import reconstruction_note
        res.headline += reconstruction_note(res.formula["printed"])
    measured = res.evidence.get("measured") if isinstance(res.evidence, dict) else None
    if measured:
        res.headline += f" (uses measured {', '.join(m['label'] for m in measured.values())})"
    decisive = [f for f in findings if f.paper] or list(findings)
    ratios = [f.max_ratio for f in decisive if f.max_ratio is not None and np.isfinite(f.max_ratio)]
    if ratios and res.max_ratio is None:
        res.max_ratio = max(ratios)
    excess = [f.extra.get("max_excess") for f in decisive if f.extra.get("max_excess") is not None]
    if excess and res.max_excess is None:
        res.max_excess = max(excess)
    return res


_GOOD = (V.HOLDS, V.REPRODUCED)
_VERDICTS = (V.HOLDS, V.VIOLATED, V.INCONCLUSIVE, V.REPRODUCED, V.NOT_REPRODUCED)
_BAD = (V.VIOLATED, V.NOT_REPRODUCED)


def headline(verdict: str, findings: Sequence[Finding], kind: str) -> str:
    """The verdict as shown first: when the paper's own findings disagree, it says so with the count
    (``partly reproduced: 1 of 4 paper findings refuted``), so that a headline never hides a finding the
    paper states.  Findings that are readings or cases of one defect (one ``Reading.defect`` key) count once
    (``partly holds: 1 defect, found under 3 readings/cases``); a refuted finding of a proof step
    (``Reading.step``) says whether the theorem's conclusion survives it; a sentence that fails under another
    plausible reading of its words (``Reading.plausible``, an analysis) says so beside the policy's verdict
    (``partly holds: fails under the plausible reading ...``)."""
    paper = [f for f in findings if f.paper]
    if outside_the_setting(findings):
        refuted = sum(f.verdict in _BAD for f in findings)
        text = f"inconclusive: not tested in the paper's setting (analyses: {refuted} of {len(findings)} refuted)"
        words = [f for f in findings if f.plausible and not f.paper and f.verdict in _BAD and not f.deviation]
        if words:       # the paper's own words, read another plausible way, fail whatever the setting's size
            n = len({f.reading.name for f in words})
            text += f"; fails under the plausible reading{'s' if n > 1 else ''} " + _plausible_names(words, findings)
        return text
    bad = [f for f in paper if f.verdict in _BAD]
    good = [f for f in paper if f.verdict in _GOOD]
    word = "partly holds" if kind in ("bound", "expectation") else "partly reproduced"
    text = verdict
    if bad and good:
        defects = list(dict.fromkeys(f.defect for f in bad))
        if len(defects) < len(bad):     # one defect found under several readings or cases counts once
            text = (f"{word}: {_count(len(defects), 'defect')}, found under {len(bad)} readings/cases "
                    f"({len(bad)} of {len(paper)} paper findings refuted)")
        else:
            text = f"{word}: {len(bad)} of {len(paper)} paper findings refuted"
    elif verdict in _GOOD:
        undecided = [f for f in paper if f.verdict == V.INCONCLUSIVE]
        if undecided:      # (cannot happen: combine would make it inconclusive) kept for clarity
            text = f"{verdict}, {len(undecided)} undecided"
    steps = list(dict.fromkeys((f.reading.step, f.reading.conclusion) for f in bad if f.reading is not None
                               and f.reading.step))
    if steps:           # a refuted proof step: whether the theorem's conclusion survives it
        text += "; " + "; ".join(f"refutes proof step {s}; the theorem's conclusion: {c}" for s, c in steps)
    words = [f for f in findings if f.plausible and not f.paper and f.verdict in _BAD]
    if words and verdict not in _BAD:   # the policy's verdict stands; the sentence fails under another reading
        names = _plausible_names(words, findings)
        lead = {V.HOLDS: "partly holds: ", V.REPRODUCED: "partly reproduced: "}.get(verdict, f"{verdict}; ")
        plural = len({f.reading.name for f in words}) > 1
        text = f"{lead}fails under the plausible reading{'s' if plural else ''} {names}" + \
            ("" if verdict in _GOOD or text == verdict else f" ({text})")
    return text


def _plausible_names(words, findings) -> str:
    """The failing plausible readings, each with the findings it failed for when it was tried on several cases."""
    names = []
    for rname in dict.fromkeys(f.reading.name for f in words):     # a reading tried on several cases: name them
        failed = [f.name for f in words if f.reading.name == rname]
        shared = sum(g.reading is not None and g.reading.name == rname for g in findings) > 1
        names.append(rname + (f" (for: {', '.join(failed)})" if shared else ""))
    return "; ".join(names)


def _count(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


# ---------------------------------------------------------------------------------------------------
def _measurement(claim, ev: Measurement, config, params, res: Result):
    from fedcheck.core.evidence import MeasureResult
    from fedcheck.core.usercode import call_user, contract_error, is_own
    m = call_user(ev.measure, MeasureContext(config, params, claim), role="measurement")
    if not is_own(ev.measure):          # the contract of a user's measurement, checked before its result is read
        if not isinstance(m, MeasureResult):
            raise contract_error(ev.measure, "measurement", f"returned {type(m).__name__}, not a fedcheck MeasureResult")
        try:
            bad = [f for f in m.findings if not isinstance(f, Finding) or f.verdict not in _VERDICTS]
        except TypeError:
            bad = [m.findings]
        if bad:
            raise contract_error(ev.measure, "measurement", f"returned findings {str(bad[0])[:80]!r}: each must be a "
                                 f"fedcheck Finding with a verdict among {_VERDICTS}")
        why = result_parts_error(m)
        if why:
            raise contract_error(ev.measure, "measurement", why)
    res.evidence = dict(m.evidence)
    res.series, res.tables = list(m.series), list(m.tables)
    res.instances = list(m.instances)
    res.saved_instances = list(m.saved_instances)
    res.fitted_rate, res.fitted_rate_ci, res.rate_verdict = m.fitted_rate, m.fitted_rate_ci, m.rate_verdict
    res.feasibility = dict(m.feasibility)
    if m.formula:
        res.formula = m.formula
    if getattr(m, "used", None):            # what the run used: declared deviations are checked against it (finish)
        res.evidence["used"] = dict(m.used)
    return attach_provenance(m.findings, ev.sources), m.reason


def result_parts_error(m, what: str = "a MeasureResult") -> str | None:
    """Why the parts a user's code returned (``series``, ``tables``, ``instances``, ``evidence``, ... attributes of
    ``m``) cannot go into a results document (``None``: they can)."""
    import json

    from fedcheck.core.results import jsonable
    from fedcheck.core.schema import CHECK_SCHEMA, schema_errors
    parts = {k: getattr(m, k) for k in ("series", "tables", "instances", "evidence", "saved_instances", "feasibility")
             if hasattr(m, k)}
    try:
        doc = jsonable({"id": "x", "verdict": V.HOLDS, **{k: (list(v) if k in ("series", "tables", "instances",
                                                                                  "saved_instances") else v)
                                                           for k, v in parts.items()}})
        json.dumps(doc, allow_nan=False)
    except (TypeError, ValueError) as e:
        return f"returned values that cannot be written as JSON ({type(e).__name__}: {e})"
    why = schema_errors(doc, CHECK_SCHEMA)
    return f"returned {what} whose {why}" if why else None


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(s))[:80]


def _g(v) -> str:
    return format(v, ".4g") if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def _at(name: str, v) -> str:
    """A point on an axis as reports say it: ``t = 17`` on the round axis (the bound's t: the iterate x^t, after
    t - 1 rounds), ``T = 71`` on the horizon axis, ``point 0`` otherwise."""
    if name == "round":
        return f"t = {_g(v)}"
    if name in ("T", "R", "K"):
        return f"{name} = {_g(v)}"
    return f"{name} {_g(v)}"


def _where(s: dict, prefix: str = "first_violation_") -> str:
    pts = [_at(k[len(prefix):], v) for k, v in s.items() if k.startswith(prefix) and v is not None]
    return f" at {pts[0]}" if pts else ""


def _rate_reason(pooled: dict | None, ev) -> str:
    """Why a claimed rate is undecided (what the summary prints beside ``inconclusive``)."""
    if pooled is None:
        mean = getattr(getattr(ev, "statistic", None), "kind", "") == "mean"
        return (f"no slope to fit: fewer than {V.POLICY.fit_min_points} points of the last {V.POLICY.fit_decades:g} "
                f"decade(s) lie above {V.POLICY.resolution_factor:g} x the measurement's floor"
                + (" (for a mean: z x its standard error over the runs)" if mean else "")
                + "; run more rounds or more seeds")
    if pooled.get("pre_asymptotic"):
        return (f"pre-asymptotic: the slopes of the last two decades differ by more than {V.POLICY.rate_drift:g}; "
                "run more rounds")
    ci = pooled.get("ci_hac")
    return f"the slope's interval {ci} is not finite or straddles the claimed exponent's slack"


def _violation_text(bad: list, n_cases: int) -> str:
    """The first violation and the worst point, each with its own values; where the bound vanishes the ratio is
    undefined and only the excess is given."""
    def values(s, lhs_key, rhs_key, defined_key):
        lhs, rhs = s.get(lhs_key), s.get(rhs_key)
        if lhs is None or rhs is None:
            return ""
        ex = lhs - rhs if s.get("relation") != ">=" else rhs - lhs
        out = f": lhs {lhs:.4g} vs rhs {rhs:.4g}, excess {ex:.4g}"
        if s.get(defined_key) is False:
            return out + " (the bound vanishes there: ratio undefined)"
        if s.get("relation") in ("<=", ">=") and rhs != 0 and lhs != 0:
            return out + f", ratio {(lhs / rhs if s['relation'] == '<=' else rhs / lhs):.4g}"
        return out
    i, s = bad[0]
    first_at = f"{i.case}{_where(s)}"
    # the worst point over the violated cases: the largest excess (defined also where the ratio is not)
    wi, ws = max(bad, key=lambda p: -np.inf if p[1].get("max_excess") is None else p[1]["max_excess"])
    worst_at = f"{wi.case}{_where(ws, 'argmax_excess_')}"
    if worst_at == first_at:
        text = f"first and worst violation: {first_at}" + values(s, "lhs_at_first_violation", "rhs_at_first_violation",
                                                                 "ratio_defined_at_first_violation")
    else:
        text = (f"first violation: {first_at}" + values(s, "lhs_at_first_violation", "rhs_at_first_violation",
                                                        "ratio_defined_at_first_violation") +
                f"; worst (largest excess): {worst_at}" + values(ws, "lhs_at_max_excess", "rhs_at_max_excess",
                                                                 "ratio_defined_at_max_excess"))
    key = "max_ratio_where_bound_not_negligible"
    ri, rs = max(bad, key=lambda p: -np.inf if p[1].get(key) is None else p[1][key])
    ratio_at = f"{ri.case}{_where(rs, 'argmax_')}"
    if rs.get(key) is not None and rs[key] > 1 and rs.get("max_ratio") == rs[key] and ratio_at not in (worst_at, first_at):
        text += f"; largest ratio: {ratio_at}: lhs {rs['lhs_at_argmax']:.4g} vs rhs {rs['rhs_at_argmax']:.4g}, ratio {rs[key]:.4g}"
    return f"violated on {len(bad)}/{n_cases} case(s); {text}"


def observation_record(finding: str, item, judgement: dict, st) -> dict:
    """What the verdict of one observation (a bound and reading on one case) was decided from, for the tidy table
    (:func:`fedcheck.api.to_frame`), which recomputes every verdict from it with the policy's slack rule.

    A comparison kept by the experiment gives its values: per point the axis value, the bound's interval
    (``bound_lo``/``bound_hi``), the ``scale`` of the slack and, per run (``lo``/``hi``/``value``, runs x points) or
    for a mean (``mean_lo``/``mean_hi``/``value``/``se`` over ``samples`` runs), the measured interval.  A comparison
    judged at every round from a stream keeps only its counts (``judged``: points, violations, undecided) and, per
    run, whether it failed; its recorded points are in the result's instance curves (``curves``: instance, grid
    entry)."""
    rec = {"finding": finding, "reading": item.reading, "bound": item.bound, "case": str(item.case),
           "statistic": st.kind, "verdict": judgement.get("verdict")}
    if st.kind == "mean":       # the multiplier of the standard error judged: Student t with samples - 1 dof
        S = judgement.get("samples") or (item.comparison.samples if item.comparison is not None else None)
        z = float(V.POLICY.statistical_z if st.z is None else st.z)
        rec["z"] = judgement["t_multiplier"] if judgement.get("t_multiplier") is not None else \
            (V.t_multiplier(z, int(S)) if S and int(S) > 1 else z)
        if judgement.get("family"):
            rec["family"] = int(judgement["family"])
    if st.kind == "fraction":
        rec["max_fraction"] = float(st.max_fraction)
    if item.reason:
        rec["reason"] = str(item.reason)
    if item.curves is not None:
        rec["curves"] = dict(item.curves)
    seed = getattr(item.instance, "seed", None)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        rec["seed"] = int(seed)
    if judgement.get("vacuity"):
        rec["vacuity"] = {k: judgement["vacuity"].get(k) for k in ("points", "vacuous_points", "unknown_points",
                                                                    "contradicted", "first_biting")}
    if item.judged is not None or item.comparison is None or item.curves is not None:
        # judged from a stream, or recorded in the instance's curves (not written twice): the counts
        rec["judged"] = {k: judgement.get(k) for k in ("points", "violations", "undecided", "samples", "relation")}
        if st.kind != "mean":
            rec["failing"] = [bool(x) for x in np.atleast_1d(item.failing_samples())]
        return rec
    c = item.comparison
    pts = list(c.points) if c.points is not None else list(range(c.lhs_lo.shape[1]))
    same = lambda a, b: a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))   # noqa: E731
    rec.update({"relation": c.relation, "point_name": c.point_name, "samples": c.samples,
                "points": [p if isinstance(p, (int, float, str)) else str(p) for p in
                           (x.item() if hasattr(x, "item") else x for x in pts)],
                # written once where they coincide: bound_hi = bound_lo, hi = lo, a constant scale, value = hi
                "bound_lo": c.rhs_lo, "scale": float(c.scale[0]) if c.scale.size and np.all(c.scale == c.scale[0])
                else c.scale})
    if not same(c.rhs_hi, c.rhs_lo):
        rec["bound_hi"] = c.rhs_hi
    if c.trivial is not None:       # the trivial bound of the metric per point (vacuity)
        rec["trivial"] = c.trivial
    if st.kind == "mean":       # the interval judged is (mean_lo - z se, mean_hi + z se)
        _, _, val, se = c.measured(st)
        lo, hi = c.lhs_lo.mean(0), c.lhs_hi.mean(0)
        rec.update({"mean_lo": lo, "se": se})
        if not same(hi, lo):
            rec["mean_hi"] = hi
        if not same(val, hi if c.relation != ">=" else lo):
            rec["value"] = val
    else:
        rec["lo"] = c.lhs_lo
        if not same(c.lhs_hi, c.lhs_lo):
            rec["hi"] = c.lhs_hi
        if c.value is not None and not same(c.value, c.lhs_hi if c.relation != ">=" else c.lhs_lo):
            rec["value"] = c.value
    return rec


def _bound_test(claim: Claim, ev: BoundTest, config: RunConfig, params: dict, res: Result):
    obs = ev.experiment.observe(claim, ev, config, params)
    res.formula = dict(obs.formula)
    printed = printed_formulas(ev)
    if printed:
        res.formula["printed"] = printed
    res.instances = list(obs.records)
    res.series, res.tables = list(obs.series), list(obs.tables)
    res.evidence = dict(obs.evidence)
    readings = {r.name: r for r in claim.readings}
    bounds = {b.name: b for b in ev.bounds}
    r_order = [r.name for r in claim.readings] + sorted({i.reading for i in obs.items} - set(readings))
    b_order = [b.name for b in ev.bounds] + sorted({i.bound for i in obs.items} - set(bounds))
    nb, nr = len(b_order), len(r_order)
    # judge every observation
    groups: dict[str, list] = {}
    family = mean_family(obs.items, lambda item: item.statistic or ev.statistic_of(
        readings.get(item.reading) or Reading(item.reading)))
    for item in obs.items:
        reading = readings.get(item.reading) or Reading(item.reading)
        st = item.statistic or ev.statistic_of(reading)
        st = st.of_family(family)       # mean: Bonferroni over every mean-statistic point of the claim
        s = item.judge(st)
        if item.reason:
            s["verdict"] = V.combine([s["verdict"], V.INCONCLUSIVE])
        name = ev.finding_name(item.bound, item.reading, nb, nr)
        groups.setdefault(name, []).append((item, s, st))
    order = []
    for b in b_order:
        for r in r_order:
            n = ev.finding_name(b, r, nb, nr)
            if n not in order:
                order.append(n)
    findings, refuting = [], []
    res.observations = [observation_record(name, i, s, st) for name, lst in groups.items() for i, s, st in lst]
    res.observations += [{**observation_record(name, i, s, st), **dict(extra or {})}
                         for name, i, s, st, extra in obs.judged]
    for name in [n for n in order if n in groups] + [n for n in groups if n not in order]:
        lst = groups[name]
        paper = all((readings.get(i.reading) or Reading(i.reading)).paper and
                    (bounds[i.bound].paper if i.bound in bounds else True) for i, _, _ in lst)
        st = lst[0][2]
        vs = [s["verdict"] for _, s, _ in lst]
        verdict = V.combine(vs)
        key = "max_ratio_where_bound_not_negligible"
        raw = [s["max_ratio"] for _, s, _ in lst if s["max_ratio"] is not None and np.isfinite(s["max_ratio"])]
        ratios = [s.get(key, s["max_ratio"]) for _, s, _ in lst
                  if s.get(key, s["max_ratio"]) is not None and np.isfinite(s.get(key, s["max_ratio"]))]
        excess = [s["max_excess"] for _, s, _ in lst if s["max_excess"] is not None and np.isfinite(s["max_excess"])]
        cases = sorted({str(i.case) for i, _, _ in lst})
        bad = [(i, s) for i, s, _ in lst if s["verdict"] == V.VIOLATED]
        other = [s["max_ratio_at_other_ends"] for _, s, _ in lst if s.get("max_ratio_at_other_ends") is not None]
        extra = {"cases": len(cases), "observations": len(lst),
                 "max_ratio_including_negligible_bounds": max(raw) if raw else None,
                 "violated_observations": len(bad),
                 "inconclusive_observations": sum(v == V.INCONCLUSIVE for v in vs),
                 "max_excess": max(excess) if excess else None,
                 "statistic": st.describe(), "points_checked": int(sum(s["points"] for _, s, _ in lst)),
                 "bounds": {}}
        if other:       # constants known to intervals: max_ratio is at the deciding ends, this at the other ends
            extra["max_ratio_at_other_ends"] = max(other)
        if obs.evidence.get("measured"):      # a bound reading quantities of the run: measured, not a priori
            extra["measured"] = {k: v["label"] for k, v in obs.evidence["measured"].items()}
        extra["vacuity"] = finding_vacuity(lst, [bounds[b] for b in dict.fromkeys(i.bound for i, _, _ in lst)
                                                 if b in bounds], ev.axis)
        if st.kind == "mean":       # decided over draws: the smallest effect its runs could decide
            extra.update(mean_power(lst, st))
        for i, s, _ in lst:
            e = extra["bounds"].setdefault(i.bound, {"verdicts": [], "ratios": []})
            e["verdicts"].append(s["verdict"])
            if s["max_ratio"] is not None and np.isfinite(s["max_ratio"]):
                e["ratios"].append(s["max_ratio"])
        extra["bounds"] = {b: {"verdict": V.combine(e["verdicts"]), "max_ratio": max(e["ratios"]) if e["ratios"] else None}
                           for b, e in extra["bounds"].items()}
        for b, e in extra["bounds"].items():     # a formula the paper's text lost: the finding says it is rebuilt
            if b in bounds and bounds[b].latex_reconstructed:
                e["reconstructed"] = True
        evidence = None
        if st.kind != "mean":
            failing: dict = {}     # per case: a run fails when any of its bounds fails
            for i, _, _ in lst:
                f_i = i.failing_samples()
                prev = failing.get(i.case)
                failing[i.case] = f_i if prev is None or prev.shape != f_i.shape else (prev | f_i)
            k = sum(int(f.sum()) for f in failing.values())
            n = sum(int(f.size) for f in failing.values())
            ci = clopper_pearson(k, n)
            extra.update({"failed_runs": k, "runs": n, "failure_fraction": k / n if n else None,
                          "failure_fraction_ci": ci})
            if st.kind == "fraction" and n:
                undecided = any(v == V.INCONCLUSIVE for v in vs)
                if ci[0] > st.max_fraction:
                    verdict = V.VIOLATED
                elif ci[1] <= st.max_fraction or (st.max_fraction == 0 and k == 0):
                    verdict = V.INCONCLUSIVE if undecided else V.HOLDS
                elif k == 0 and not undecided:
                    verdict = V.INCONCLUSIVE
                else:
                    verdict = V.INCONCLUSIVE
                evidence = (f"{k}/{n} runs fail (fraction {k / n:.3g}, {100 * V.POLICY.confidence:.0f}% CI "
                            f"[{ci[0]:.3g}, {ci[1]:.3g}]) against at most {st.max_fraction:g}")
                extra["power"] = V.fraction_power(n, st.max_fraction)     # what this many runs could decide
        if bad:
            undefined = sum(s.get("violations_where_ratio_undefined", 0) for _, s in bad)
            extra["violations_where_ratio_undefined"] = int(undefined)
            extra["ratio_undefined_where_violated"] = bool(undefined) and \
                undefined == sum(s.get("violations", 0) for _, s in bad)
            ex_u = [s["max_excess_where_ratio_undefined"] for _, s in bad
                    if s.get("max_excess_where_ratio_undefined") is not None]
            extra["max_excess_where_ratio_undefined"] = max(ex_u) if ex_u else None
        dropped = int(sum(s.get("violations_where_bound_negligible", 0) for _, s, _ in lst))
        if dropped:
            extra["violations_where_bound_negligible"] = dropped
        if bad and evidence is None:
            i, s = bad[0]
            evidence = _violation_text(bad, len(lst))
            if dropped:
                evidence += (f"; {dropped} violated point(s) where the bound is below {V.POLICY.negligible_bound:g} x "
                             "max(1, scale, |measured|) are left out of the ratio (their excess is not)")
            extra["first_violation"] = {"case": str(i.case), **{k: v for k, v in s.items() if k.startswith("first_violation_")},
                                        "lhs": s.get("lhs_at_first_violation"), "rhs": s.get("rhs_at_first_violation"),
                                        "ratio_defined": s.get("ratio_defined_at_first_violation")}
        desc = "; ".join(dict.fromkeys(d for d in (
            *(bounds[b].description for b in dict.fromkeys(i.bound for i, _, _ in lst) if b in bounds and nb > 1
              and ev.finding_name(b, "", nb, nr) != ""),
            *((readings[r].description for r in dict.fromkeys(i.reading for i, _, _ in lst) if r in readings))) if d))
        used = [readings[r] for r in dict.fromkeys(i.reading for i, _, _ in lst) if r in readings]
        used_b = [bounds[b] for b in dict.fromkeys(i.bound for i, _, _ in lst) if b in bounds]
        mode = ev.finding_name("b", "r", nb, nr)
        source = finding_source(used[0] if len(used) == 1 else None, used_b[0] if len(used_b) == 1 else None,
                                "bound" if mode == "b" else "reading")
        f = Finding(name, verdict, paper, desc, max(ratios) if ratios else None, evidence, extra,
                    source=source, deviation=tuple(d for r in used for d in r.deviations),
                    reading=used[0] if len(used) == 1 else None)
        findings.append(f)
        if paper and verdict == V.VIOLATED:
            refuting.extend(i for i, s, _ in lst if s["verdict"] == V.VIOLATED or
                            (st.kind != "mean" and i.failing_samples().any()))
    findings.extend(attach_provenance(obs.findings, ev.sources))
    # feasibility of the iterates
    if obs.feasibility:
        fv = V.combine(obs.feasibility)
        res.feasibility = {"verdict": fv, "infeasible_instances": int(sum(v == V.VIOLATED for v in obs.feasibility)),
                           "decides": bool(ev.feasible)}
    # the rate (an O(.) claim: reported beside, never decides)
    claimed = ev.rate if ev.rate is not None else claim.claimed_rate
    if claimed is not None:
        res.claimed_rate = float(claimed)
        pooled = V.pooled_rate(obs.fits)
        res.fitted_rate = pooled["slope"] if pooled else None
        res.fitted_rate_ci = pooled["ci_hac"] if pooled else None
        res.rate_verdict = V.rate_claim_verdict(pooled, float(claimed))
        if res.rate_verdict == V.INCONCLUSIVE:
            res.evidence["rate_reason"] = _rate_reason(pooled, ev)
        if pooled:
            res.evidence["rate"] = {"claimed": float(claimed), "slope": pooled["slope"], "ci_hac": pooled["ci_hac"],
                                    "ci_ols": pooled["ci_ols"], "ci_between_instances": pooled["ci_between_instances"],
                                    "within_run_half_width_hac": pooled["within_run_half_width_hac"],
                                    "within_run_half_width_ols": pooled["within_run_half_width_ols"],
                                    "ci_method": "mean slope over instances +- the larger of the between-instance "
                                                 "t-interval and the mean within-run half-width / sqrt(instances) "
                                                 "(Newey-West HAC for ci_hac, the verdict's; OLS for ci_ols)",
                                    "decades": pooled["decades"],
                                    "pre_asymptotic": pooled["pre_asymptotic"], "instances": pooled["instances"],
                                    "note": "an O(.) rate is reported, never refuted by a finite run"}
    if obs.side_conditions:
        res.evidence["side_conditions"] = obs.side_conditions
    # save refuting instances (once per case)
    saved = list(obs.saved_instances)
    if config.save_dir:
        done = set()
        for item in refuting:
            key = item.key if item.key is not None else item.case
            if key in done or item.save is None or len(done) >= 10:
                continue
            done.add(key)
            saved.extend(item.save(f"{config.save_dir}/{_slug(item.case)}"))
    res.saved_instances = saved
    reason = None
    verdict = verdict_of_findings(findings)
    if verdict == V.INCONCLUSIVE:
        why = list(dict.fromkeys(list(obs.reasons) + [i.reason for i in obs.items if i.reason]))
        if not obs.items and not obs.findings:
            why.append("nothing was observed")
        if why:
            reason = "; ".join(why)
    return findings, reason
