"""Provenance of every paper's readings, for every paper of the index (``theorems/__init__.py``: ``PAPERS``): every
reading the paper states carries its Source, every quote is the paper's own words (its prose found in the file of
the paper's text, which its ``Paper(source=...)`` names), and a reading tested outside the stated setting is an
analysis with its deviation named.  A new paper is checked from the line that adds it to the index.

A quote's mathematics is written in brackets ``[...]`` (the paper files keep formulas as extracted LaTeX, or lost
them: FedSGM) and elisions as ``...``; every other fragment must occur in the paper's text, compared on letters and
digits only (the files interleave prose with extraction artefacts)."""
import functools
import html
import re
from pathlib import Path

import pytest

from fedcheck.core.evidence import BoundTest, Measurement, Proof
from fedcheck.core.readings import Source
from fedcheck.catalog.registry import default_registry

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "papers"
REGISTRY = default_registry()
PAPERS = tuple(REGISTRY.papers)          # every paper of the index (theorems/__init__.py: PAPERS)
CLAIMS = [c for c in REGISTRY.checks.values() if c.paper.key in PAPERS]


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def paper_file(paper) -> Path:
    """The file of a paper's text, as its ``Paper(source=...)`` declares it: a path beside the repository
    (``shared/papers/<file>``), else the file of that name in ../shared/papers."""
    assert paper.source, f"{paper.key}: Paper(source=...) does not name the file of the paper's text"
    path = REPO.parent / paper.source
    return path if path.exists() else SHARED / Path(paper.source).name


@functools.lru_cache(maxsize=None)
def _paper_text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".xml":
        raw = html.unescape(re.sub(r"<[^>]+>", " ", raw))
    return _norm(raw)


def paper_text(paper) -> str:
    path = paper_file(paper)
    if not path.exists():
        pytest.skip(f"the paper file {path.name} is not available here")
    return _paper_text(path)


def _prose(quote: str) -> list[str]:
    """The quote without its bracketed mathematics (nested brackets allowed), split at the elisions."""
    out, depth = [], 0
    for ch in quote:
        if ch == "[":
            depth += 1
            out.append("...")
        elif ch == "]":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return [f for f in "".join(out).split("...") if _norm(f)]


def _sources(claim):
    """(what, paper, Source | None, deviation) for every declared reading, fact, proof step and provenance entry."""
    ev = claim.evidence
    out = [(f"reading {r.name!r}", r.paper, r.source, r.deviation)
           for r in (claim.readings if isinstance(ev, BoundTest) else ())]     # only a bound test judges readings
    if isinstance(ev, Proof):
        out += [(f"fact {f.name!r}", True, f.source, "") for f in ev.facts]
    if isinstance(ev, (Measurement, BoundTest)):
        for key, entry in (ev.sources or {}).items():
            src, dev = entry if isinstance(entry, tuple) else (entry, "")
            out.append((f"finding {key!r}", not dev, src, dev))
    out += [(f"proof step {s.name!r}", s.paper, s.source, s.deviation) for s in (claim.proof_steps or ())]
    return out


# what a paper's review has not reached yet, by paper (each test says so as an expected failure, not a pass)
OPEN: dict[str, str] = {}


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_paper_readings_have_their_source(claim):
    entries = _sources(claim)
    bad = [what for what, paper, src, dev in entries if dev and paper]
    assert not bad, f"{claim.id}: tested outside the stated setting but labelled paper: {bad}"
    missing = [what for what, paper, src, _ in entries if paper and src is None]
    # a measurement's findings are named by the run: its provenance map must say where
    unmapped = isinstance(claim.evidence, Measurement) and not claim.evidence.sources
    if claim.paper.key in OPEN and (missing or unmapped):
        pytest.xfail(f"{claim.paper.key}: {OPEN[claim.paper.key]}")
    assert not missing, f"{claim.id}: paper readings without a Source: {missing}"
    assert not unmapped, f"{claim.id}: a measurement of the paper declares no provenance"


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_quotes_are_the_papers_words(claim):
    text = paper_text(claim.paper)
    for what, _, src, _ in _sources(claim):
        if src is None:
            continue
        assert isinstance(src, Source)
        for frag in _prose(src.quote):
            assert _norm(frag) in text, f"{claim.id} {what}: {frag.strip()!r} is not in {paper_file(claim.paper).name}"


def test_prose_fragments():
    assert _prose("a [x [y]] b ... c") == ["a ", " b ", " c"]
    assert _prose("[only math]") == []


def test_attach_provenance_marks_deviations_as_analyses():
    """The mechanism the measurements of these papers declare their provenance with (fedcheck.core.evidence)."""
    from fedcheck.core.evidence import Finding, attach_provenance
    from fedcheck.core.readings import Deviation
    src = Source("q", "p", "s")
    other = Deviation("data", paper="the paper's", run="another data set")
    out = attach_provenance([Finding("a: one", "reproduced", True), Finding("a: one more", "holds", True),
                             Finding("b", "violated", True), Finding("c", "holds", False)],
                            {"a:": src, "a: one more": (src, other), "b": src})
    assert [(f.paper, f.source is src, f.deviation) for f in out] == [
        (True, True, ""), (False, True, str(other)), (True, True, ""), (False, False, "")]
    assert out[1].as_reading()["deviation"] == str(other) and out[0].as_reading()["source"]["quote"] == "q"


def test_fact_and_proof_step_carry_their_source():
    from fedcheck.core.claim import Claim, Paper, RunConfig
    from fedcheck.core.evidence import Fact
    from fedcheck.core.steps import ProofStep, StepOutcome, PROVEN
    src = Source("q", "p", "s")
    claim = Claim(id="t.fact_source", title="t", paper=Paper(key="t", title="t", authors="a", venue="v", source="x"),
                  reference="r", statement="s", evidence=Proof((Fact("f", lambda: ("holds", "ok"), source=src),)),
                  expected="holds")
    res = claim.run(RunConfig())
    assert res.readings["f"]["source"] == src.record()
    rec = ProofStep("s", "s", "symbolic", lambda: StepOutcome(PROVEN, "ok"), source=src).evaluate()
    assert rec["source"] == src.record()
    with pytest.raises(ValueError):
        ProofStep("s", "s", "symbolic", lambda: StepOutcome(PROVEN, "ok"), source=src, deviation="elsewhere")
