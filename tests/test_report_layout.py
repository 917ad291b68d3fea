"""Reports a person reads: figures first, then the evidence as tables with 4 significant digits (the JSON
keeps every value), no heading left apart from its content, titles in one notation, a user claim's own words as its
title and a schedule that is a parameter shown with its value; the rate's two intervals named for what they are."""
import json
import re
from pathlib import Path

import pytest

from fedcheck.catalog.registry import default_registry
from fedcheck.cli.main import main
from fedcheck.core.outputs import check_folder
from fedcheck.core.verdict import pooled_rate
from fedcheck.report import title_html

ROOT = Path(__file__).resolve().parents[1]
FEDPROX = ROOT / "examples" / "fedprox_claims.py"
REG = default_registry()
HEADING = re.compile(r"<(h[1-4])\b[^>]*>.*?</\1>", re.S)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("layout") / "out"
    main(["verify", "fedfw.theorem1", "fedfw.lemma2", "--rounds", "300", "--out", str(out)])
    main(["verify", "--theorem-file", str(FEDPROX), "mine", "--rounds", "300", "--out", str(out / "mine")])
    found = {cid: (out / "checks" / check_folder(cid) / "report.html").read_text()
             for cid in ("fedfw.theorem1", "fedfw.lemma2")}
    for cid in ("mine.fedprox_gd_rate", "mine.fedprox_no_drift"):
        found[cid] = (out / "mine" / "checks" / check_folder(cid) / "report.html").read_text()
    found["results"] = json.loads((out / "results.json").read_text())
    found["css"] = (ROOT / "fedcheck" / "templates" / "style.css").read_text()
    return found


def _body(page: str) -> str:
    return re.sub(r"<style.*?</style>", "", page, flags=re.S)


@pytest.mark.parametrize("cid", ["fedfw.theorem1", "fedfw.lemma2", "mine.fedprox_no_drift"])
def test_figures_come_before_the_evidence_details_and_no_raw_dump(pages, cid):
    page = _body(pages[cid])
    assert "<pre>" not in page                       # no JSON dump of the evidence
    if cid == "fedfw.theorem1":                      # it has both: figures and evidence details
        assert 'id="details"' in page and "<figure" in page
    if 'id="details"' in page and "<figure" in page:
        assert page.index("<figure") < page.index('id="details"')
    details = page[page.index('id="details"'):] if 'id="details"' in page else ""
    details = details[:details.find('id="instances"')] if 'id="instances"' in details else details
    numbers = re.findall(r"\d+\.\d+", re.sub(r"<[^>]+>", " ", details))
    long_numbers = [x for x in numbers if len(x.replace(".", "").lstrip("0")) > 4]
    assert not long_numbers, long_numbers[:5]        # 4 significant digits in the tables


@pytest.mark.parametrize("cid", ["fedfw.theorem1", "fedfw.lemma2", "mine.fedprox_gd_rate", "mine.fedprox_no_drift"])
def test_no_heading_stands_apart_from_its_content(pages, cid):
    page = _body(pages[cid])
    heads = list(HEADING.finditer(page))
    for a, b in zip(heads, heads[1:]):      # a heading is followed by content or by a heading below it
        between = re.sub(r"<[^>]+>|\s", "", page[a.end():b.start()])
        assert between or int(b.group(1)[1]) > int(a.group(1)[1]), \
            f"{a.group(0)[:60]!r} has no content before {b.group(0)[:60]!r}"
    assert "h1, h2, h3 { break-after: avoid; }" in pages["css"]    # and is never the last line of a printed page
    # the command under "Reproduce this check with:" is kept with its lead-in on one page (print CSS)
    assert re.search(r'<div class="keep"><p>Reproduce this check with:</p><div class="command">', page)
    assert ".keep" in pages["css"] and "break-inside: avoid" in pages["css"]


def test_every_catalog_title_is_in_one_notation():
    for c in REG.checks.values():
        html = str(title_html(c.title))
        assert not re.search(r"[\^{}]|_\{", html), (c.id, html)
        assert "<=" not in html and "&lt;=" not in html, (c.id, html)
    assert str(title_html("O(t^{-1/2})")) == "O(t<sup>\u22121/2</sup>)"


def test_a_user_claims_page_has_its_own_words_as_title_and_its_parameter_values(pages):
    page = pages["mine.fedprox_gd_rate"]
    h1 = re.search(r"<h1>(.*?)</h1>", page, re.S).group(1)
    assert "FedProx, one local step" in h1 and h1.strip() != "conjecture 1"
    text = re.sub(r"<[^>]+>", " ", page)
    assert not re.search(r"\bmu\s*=\s*mu\b", text)                 # never "mu = mu"
    assert re.search(r"mu\s*=\s*0\.1", text), "the schedule that is a parameter shows its value"


def test_results_json_stores_curves_at_the_recorded_grid_only(pages):
    for chk in pages["results"]["checks"]:
        for inst in chk.get("instances") or []:
            rounds = inst.get("rounds")
            if not isinstance(rounds, list):
                continue
            assert len(rounds) <= 1100                   # every round to 1000, then 50 per decade
            for name, curve in (inst.get("bound") or {}).items():
                assert len(curve) == len(rounds), (chk["id"], name)


def test_the_rate_intervals_are_named_for_what_they_are():
    # instances agree, each fit uncertain: the within-run half-widths decide, HAC wider than OLS
    agree = [{"slope": -1.0 + d, "ci": [-1.1 + d, -0.9 + d], "ci_hac": [-1.3 + d, -0.7 + d]} for d in (0.0, 1e-3, -1e-3)]
    p = pooled_rate(agree)
    assert p["ci_hac"] != p["ci_ols"]
    assert p["ci_hac"][1] - p["ci_hac"][0] > p["ci_ols"][1] - p["ci_ols"][0]
    # instances disagree far more than one fit is uncertain: both are the between-instance interval
    spread = [{"slope": s, "ci": [s - 1e-4, s + 1e-4], "ci_hac": [s - 2e-4, s + 2e-4]} for s in (-2.0, -1.0, 0.0)]
    q = pooled_rate(spread)
    assert q["ci_hac"] == q["ci_ols"] == q["ci_between_instances"]


def test_figures_drawn_with_one_shared_text_to_path_are_the_same_svg(pages, monkeypatch):
    """fedcheck.report.figures._TEXT2PATH shares one mathtext parser (and its cache) among the renderers of every figure: a speed-up
    only, the SVG must be byte-identical to drawing each figure with matplotlib's own per-renderer parser, and
    matplotlib's TextToPath is given back after each figure."""
    import matplotlib.text as mtext
    from fedcheck import report as R
    from fedcheck.report import figures
    chk = next(c for c in pages["results"]["checks"] if c["id"] == "fedfw.theorem1")
    before = mtext.TextToPath
    shared = [R.figure_svg(rf.figure) for rf in R.check_figures(chk)]
    assert mtext.TextToPath is before
    assert figures._TEXT2PATH.shared is not None

    class Own:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None
    monkeypatch.setattr(figures, "_TEXT2PATH", Own())
    own = [R.figure_svg(rf.figure) for rf in R.check_figures(chk)]
    assert len(shared) == len(own) >= 2
    assert shared == own
