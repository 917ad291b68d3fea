"""Reports as a person sees them: the PDF rendered to images and text with poppler, the HTML in a
headless Chromium; rebuilt from JSON alone; written only when complete."""
import base64
import copy
import fnmatch
import json
import re
import shutil
import struct
import subprocess
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import matplotlib
import matplotlib.image as mpimg
import matplotlib.lines
import numpy as np
import pytest

import fedcheck.render as render
import fedcheck.report as report
from fedcheck.cli import main
from fedcheck.core.outputs import MANIFEST, check_folder
from fedcheck.report import pdf as report_pdf, phase as report_phase, typeset as report_typeset

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
POPPLER = all(shutil.which(t) for t in ("pdftoppm", "pdftotext", "pdfinfo"))
needs_poppler = pytest.mark.skipif(not POPPLER, reason="poppler-utils (pdftoppm, pdftotext, pdfinfo) not installed; "
                                   "install with: apt-get install -y poppler-utils")


# ------------------------------------------------------------------------------------------------
# inputs: one real (small) run, and a check of another kind with series, tables and no instances
@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """``fedcheck verify theorem1`` once, small: its JSON and the reports it wrote."""
    d = tmp_path_factory.mktemp("verify")
    out, js = d / "reports", d / "r.json"
    rc = main(["verify", "theorem1", "--rounds", "2000", "--seeds", "2", "-q", "--json", str(js), "--out", str(out)])
    doc = json.loads(js.read_text())
    assert rc == {"holds": 0, "violated": 1, "inconclusive": 3}[doc["checks"][0]["verdict"]]
    return {"dir": d, "out": out, "json": js, "doc": doc, "check": doc["checks"][0]}


def counterexample_check() -> dict:
    """A check of a kind the plots were not written for: no instances, ``series`` in two panels, a
    ``tables`` entry, a formula mathtext cannot typeset and a label with broken mathtext."""
    t = np.arange(1, 201, dtype=float)
    return {
        "id": "demo.stall", "title": "Demo, Example 2: the method stalls without the correction", "paper": "demo",
        "reference": "Example 2", "claim": "Without the correction the gap stalls at 0.1; with it, it converges.",
        "kind": "counterexample", "verdict": "reproduced", "reason": "", "claimed_rate": None, "fitted_rate": None,
        "fitted_rate_ci": None, "rate_verdict": None, "max_ratio": None, "readings": {}, "feasibility": {},
        "symbolic": [{"name": "the stall level is 1/10", "verdict": "holds", "evidence": "exact arithmetic"}],
        "evidence": {"stall_level": 0.1, "rounds": 200,
                     "methods": {"plain": {"final_gap": 0.1, "verdict": "reproduced"},
                                 "corrected": {"final_gap": 1 / 200, "verdict": "holds"}}},
        "formula": {"bound": r"\begin{cases} 1 & t < 2 \\ 0 & \text{otherwise} \end{cases}",
                    "bound_text": "Piecewise((1, t < 2), (0, True))", "schedules": {}, "readings": {}, "metric": "gap"},
        "params": {}, "assumptions": ["quadratic clients", "two clients"], "instances": [], "seconds": 0.01,
        "series": [
            {"panel": "gap: stall vs convergence", "label": "plain", "x": t.tolist(), "y": (0.1 + 1 / t).tolist(),
             "role": "measured", "xlabel": "round t", "ylabel": "gap", "logx": True, "logy": True},
            {"panel": "gap: stall vs convergence", "label": "corrected", "x": t.tolist(), "y": (1 / t).tolist(),
             "role": "baseline", "xlabel": "round t", "ylabel": "gap", "logx": True, "logy": True},
            {"panel": "gap: stall vs convergence", "label": "$t^{-1}$", "x": t.tolist(), "y": (1 / t).tolist(),
             "role": "reference", "xlabel": "round t", "ylabel": "gap", "logx": True, "logy": True},
            {"panel": "step sizes", "label": r"$\frac{broken$ step", "x": t.tolist(), "y": (2 / (t + 1)).tolist(),
             "role": "measured", "xlabel": "round t", "ylabel": "eta_t"},
        ],
        "tables": [{"title": "Final gaps by method", "columns": ["method", "final gap"],
                    "rows": [["plain", 0.1], ["corrected", 0.005]]}],
    }


def violated_variant(chk: dict) -> dict:
    """The real check with its measurements scaled up past the bound, as a refuted result reads."""
    v = copy.deepcopy(chk)
    v["id"], v["verdict"] = "fedfw.theorem1-scaled", "violated"
    v["reason"] = "bound (statement) violated on 1/1 instance(s); first at t=2 on seed 0"
    v["instances"] = v["instances"][:1]
    for inst in v["instances"]:
        inst["metric"] = [None if m is None else 1e3 * m for m in inst["metric"]]
    return v


@pytest.fixture(scope="module")
def several(run, tmp_path_factory):
    """Reports of a document with three checks (the real one, a refuted variant, a counterexample)."""
    doc = copy.deepcopy(run["doc"])
    doc["checks"] += [violated_variant(run["check"]), counterexample_check()]
    out = tmp_path_factory.mktemp("several")
    paths = render.write_reports(doc, out)
    return {"out": out, "doc": doc, "paths": paths}


# ------------------------------------------------------------------------------------------------
# helpers
def page(out, cid: str, ext: str = "html") -> Path:
    """A check's page (or PDF) under an output folder: ``checks/<check>/report.<ext>``."""
    return Path(out) / "checks" / check_folder(cid) / f"report.{ext}"


def figdir(out, cid: str) -> Path:
    return Path(out) / "checks" / check_folder(cid) / "report"


def listing(out) -> list[str]:
    """What a person sees in an output folder (fedcheck's record of what it wrote aside)."""
    return sorted(p.relative_to(out).as_posix() for p in Path(out).rglob("*")
                  if p.name != MANIFEST and not p.relative_to(out).as_posix().startswith("runs"))


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(html: str):
    p = _Tags()
    p.feed(html)
    return p.tags


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def ink(png: Path) -> float:
    """Fraction of pixels that are not (nearly) white."""
    a = mpimg.imread(str(png))[..., :3]
    return float((a.min(axis=-1) < 0.9).mean())


def pdf_pages(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


def pdf_text(pdf: Path, first=None, last=None) -> str:
    cmd = ["pdftotext", "-layout"] + (["-f", str(first)] if first else []) + (["-l", str(last)] if last else [])
    return subprocess.run(cmd + [str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def assert_no_near_empty_page(pdf: Path, pages: list[Path]) -> None:
    """Every page but the last is filled at least to half its height, and every page has text: no page is
    left nearly empty by a forced break (the old PDF had three)."""
    for i, png in enumerate(pages, 1):
        a = mpimg.imread(str(png))[..., :3]
        body = a[: int(a.shape[0] * 0.94)]          # above the footer line
        rows = np.flatnonzero((body.min(axis=-1) < 0.9).any(axis=1))
        assert rows.size, f"page {i} of {pdf.name} is empty"
        fill = rows.max() / a.shape[0]
        words = len(pdf_text(pdf, i, i).split())
        if i < len(pages):
            assert fill > 0.5, f"page {i} of {pdf.name} is nearly empty (filled to {fill:.0%})"
        assert words >= 8, f"page {i} of {pdf.name} has {words} words"


def squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


def chromium(args, tmp_path):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90)


# ------------------------------------------------------------------------------------------------
def test_verify_writes_html_pdf_and_json(run):
    """``verify`` writes one HTML page and one PDF per check, in the check's own folder, plus results.json; one
    check, no index; nothing temporary is left behind."""
    figs = sorted(f"checks/fedfw.theorem1/report/fig-{k}.{e}" for k in ("bound", "rate", "ratio")
                  for e in ("svg", "pdf", "csv"))
    assert listing(run["out"]) == sorted(["checks", "checks/fedfw.theorem1", "checks/fedfw.theorem1/report",
                                          "checks/fedfw.theorem1/report.html", "checks/fedfw.theorem1/report.pdf",
                                          "results.json", *figs])
    assert json.loads((run["out"] / "results.json").read_text()) == run["doc"]
    assert page(run["out"], "fedfw.theorem1", "pdf").read_bytes()[:5] == b"%PDF-"


def test_html_is_self_contained_with_figures_and_formula(run):
    html = page(run["out"], "fedfw.theorem1").read_text()
    ts = tags(html)
    assert not [t for t, _ in ts if t in ("script", "link", "iframe", "object", "embed")]
    for _, attrs in ts:
        for key in ("src", "href"):
            v = attrs.get(key) or ""
            assert not re.match(r"^(https?:)?//", v), f"external {key}: {v[:80]}"
    imgs = [a["src"] for t, a in ts if t == "img"]
    assert all(s.startswith("data:image/") for s in imgs)
    assert not [s for s in imgs if s.startswith("data:image/png")]      # no raster image at all
    figs = [a["src"] for t, a in ts if t == "img" and a.get("alt", "").startswith("Figure ")]
    assert len(figs) == 3  # measured vs bound, fitted vs claimed rate, ratio: vector graphics
    for src in figs:
        assert src.startswith("data:image/svg+xml;base64,")
        assert b"<svg" in base64.b64decode(src.split(",", 1)[1])
    # the figure in the page is the file written on its own (drawn once)
    own = (figdir(run["out"], "fedfw.theorem1") / "fig-bound.svg").read_bytes()
    assert base64.b64decode(figs[0].split(",", 1)[1]) == own
    svgs = [s for s in imgs if s.startswith("data:image/svg+xml;base64,")]
    assert len(svgs) >= 3 + 1 + 2 + 4  # figures, the bound, two schedules, the readings' substitutions
    assert b"<svg" in base64.b64decode(svgs[0].split(",", 1)[1])
    chk = run["check"]
    alts = [a.get("alt", "") for t, a in ts if t == "img"]
    assert chk["formula"]["bound"] in alts  # the typeset bound carries its LaTeX
    assert 'class="badge big good">holds<' in html or chk["verdict"] != "holds"
    for text in (chk["verdict"], chk["reference"], "Instance constants", "certified accuracy of F*", "Y_norm",
                 "CLARABEL", "optimal", "Provenance", "package numpy", chk["formula"]["bound_text"]):
        assert text in html or text.replace("*", "&ast;") in html, text
    assert "fedcheck verify theorem1 --rounds 2000 --seeds 2" in html  # the command that reproduces the run


def test_instance_constants_table(run):
    ctx = report.check_context(run["check"], run["doc"])
    tb = ctx["constants_table"]
    assert tb["columns"][:4] == ["instance", "F*", "certified accuracy of F*", "solver status"]
    assert {"L", "D", "n", "Y_norm", "lambda_0"} <= set(tb["columns"])
    assert [r[0] for r in tb["rows"]] == ["seed 0", "seed 1"]
    assert all(r[3] == "optimal" for r in tb["rows"])
    # an inexact constant is marked as an upper bound
    chk = copy.deepcopy(run["check"])
    chk["instances"][0]["constants"]["L"]["exact"] = False
    tb = report.check_context(chk, run["doc"])["constants_table"]
    col = tb["columns"].index("L")
    assert tb["rows"][0][col].endswith("(upper bound)") and not tb["rows"][1][col].endswith("(upper bound)")


@needs_poppler
def test_pdf_as_a_reader_sees_it(run, tmp_path):
    """The PDF renders to non-blank pages: a title/verdict page with the typeset formula, one page per
    figure, table pages and provenance."""
    pdf = page(run["out"], "fedfw.theorem1", "pdf")
    n = pdf_pages(pdf)
    assert n >= 3
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(pdf), str(tmp_path / "page")], check=True)
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) == n
    assert_no_near_empty_page(pdf, pages)
    text = pdf_text(pdf)
    first = pdf_text(pdf, 1, 1)
    chk = run["check"]
    assert chk["verdict"] in first and "Theorem 1" in first and chk["id"] in first
    # the bound is typeset (mathtext, a vector image in the page: glyph outlines, no extractable text); its
    # plain-text form is printed with it
    assert squash(chk["formula"]["bound_text"]) in squash(first)
    figure_pages = [i for i in range(1, n + 1) if "Figure " in pdf_text(pdf, i, i)]
    assert 1 <= len(figure_pages) <= 3
    assert all(ink(pages[i - 1]) > 0.03 for i in figure_pages)  # plots, not just a caption
    assert "measured" in squash(text) and "round" in text  # the figures' text is text (legend, axes)
    for s in ("Measured F(xbar^t) - F* and the bound", "Fitted rate against the claimed rate",
              "Ratio measured / bound", "Instance constants", "Per-instance results", "Provenance",
              "fedcheck verify theorem1", "Symbolic claims"):
        assert s in text, s


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed; install with: apt-get install -y "
                    "chromium fonts-dejavu-core")
def test_html_in_headless_chromium(run, several, tmp_path):
    html = page(run["out"], "fedfw.theorem1")
    r = chromium(["--dump-dom", html.as_uri()], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    assert re.search(r'<span class="badge big \w+">' + run["check"]["verdict"] + "</span>", dom)
    assert dom.count("<img") >= 10 and "data:image/png" not in dom and dom.count('alt="Figure ') == 3
    assert "Figure 3. Ratio measured / bound over rounds." in dom
    shot = tmp_path / "shot.png"
    r = chromium(["--hide-scrollbars", "--window-size=1200,3000", f"--screenshot={shot}", html.as_uri()], tmp_path)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    assert png_size(shot.read_bytes()) == (1200, 3000)
    assert ink(shot) > 0.03  # text, formula and figures drawn, not an empty page
    # the index of several checks shows each verdict and links each report
    r = chromium(["--dump-dom", (several["out"] / "index.html").as_uri()], tmp_path)
    assert r.returncode == 0
    for c in several["doc"]["checks"]:      # the headline: the verdict, or the count of disagreeing paper findings
        assert f">{c.get('headline') or c['verdict']}</span>" in r.stdout, c["id"]
    assert 'href="checks/demo.stall/report.html"' in r.stdout and 'href="checks/demo.stall/report.pdf"' in r.stdout
    assert r.stdout.count('<article class="card') == 3 and r.stdout.count("data:image/svg+xml") == 3  # thumbnails
    shot = tmp_path / "index.png"
    r = chromium(["--hide-scrollbars", "--window-size=1200,1400", f"--screenshot={shot}",
                  (several["out"] / "index.html").as_uri()], tmp_path)
    assert r.returncode == 0 and shot.exists() and ink(shot) > 0.03


def test_several_checks_index_and_generic_rendering(several):
    out = several["out"]
    names = sorted(p.name for p in out.iterdir() if p.name != MANIFEST)
    assert names == ["checks", "index.html", "results.json"]
    assert sorted(p.name for p in (out / "checks").iterdir()) == ["demo.stall", "fedfw.theorem1",
                                                                 "fedfw.theorem1-scaled"]
    for cid in ("demo.stall", "fedfw.theorem1", "fedfw.theorem1-scaled"):
        assert sorted(p.name for p in (out / "checks" / cid).iterdir()) == ["report", "report.html", "report.pdf"]
    assert several["paths"][0].name == "results.json" and several["paths"][-1].name == "index.html"
    index = (out / "index.html").read_text()
    for chk in several["doc"]["checks"]:
        assert f'href="checks/{check_folder(chk["id"])}/report.html"' in index and chk["verdict"] in index
    # the counterexample: no instances, one figure per panel, its table, the formula shown as text
    html = page(out, "demo.stall").read_text()
    assert 'href="../../index.html"' in html and 'href="../../results.json"' in html
    assert len(re.findall(r'<img src="data:image/svg\+xml;base64,[^"]*" alt="Figure ', html)) == 2  # two panels
    assert "<img" in index and index.count('class="badge ') == 3 and index.count("data:image/svg+xml") == 3
    assert "gap: stall vs convergence" in html and "step sizes" in html
    assert "Final gaps by method" in html and "corrected" in html
    assert "Piecewise((1, t &lt; 2), (0, True))" in html  # mathtext cannot parse \begin{cases}: plain text
    assert "reproduced" in html and "final gap" in html  # evidence table from a map of records


@needs_poppler
def test_pdf_of_other_kinds_and_of_a_refuted_check(several):
    text = pdf_text(page(several["out"], "demo.stall", "pdf"))
    assert "reproduced" in text and "Final gaps by method" in text and "gap: stall vs convergence" in text
    assert "Piecewise((1, t < 2), (0, True))" in text and "could not be typeset" in text
    text = pdf_text(page(several["out"], "fedfw.theorem1-scaled", "pdf"), 1, 1)
    assert "violated" in text and "bound (statement) violated on 1/1" in text


def test_curves_stop_at_the_certified_accuracy(run):
    m, dropped = report.drop_unresolved([1.0, 1e-3, 5e-9, 2e-8, -1e-10, float("nan"), 1e-8], 1e-9)
    assert dropped == 3 and np.isnan(m[[2, 4, 5, 6]]).all() and list(m[[0, 1, 3]]) == [1.0, 1e-3, 2e-8]
    # in the figure: a measured curve reaching F*'s accuracy is cut there
    chk = copy.deepcopy(run["check"])
    inst = chk["instances"][0]
    metric = np.array([np.nan if v is None else v for v in inst["metric"]], dtype=float)
    acc = inst["F_star_certified_accuracy"] = float(np.nanmedian(metric)) / 10  # cuts about half the points
    fig = report.check_figures(chk)[0]
    lines = [ln for ln in fig.figure.axes[0].lines if ln.get_color() == "0.15"]
    assert len(lines) == len(chk["instances"])
    x0, y0 = (np.asarray(v, dtype=float) for v in lines[0].get_data())
    assert np.nanmin(y0) > 10 * acc
    rounds = np.asarray(inst["rounds"], dtype=float)
    cut = set(rounds[metric <= 10 * acc])
    assert cut and all(np.isnan(y) for x, y in zip(x0, y0) if x in cut)
    assert (metric <= 10 * acc).any()  # (the test does cut something)
    assert "point(s) not drawn" in fig.caption


def test_math_rendering_and_fallback():
    assert report.render_math_svg(r"\frac{\lambda_{0}}{\sqrt{t}}").startswith("data:image/svg+xml;base64,")
    assert report.render_math_svg(r"\begin{cases} 1 \end{cases}") is None
    assert report.render_math_svg(None) is None
    assert report.mathtext_ok(r"2 D^{2} n") and not report.mathtext_ok(r"\frac{")


def test_print_formulas_are_text_in_matplotlibs_fonts_declared_for_the_pdf():
    """The PDF's formulas: glyphs as text in Computer Modern (declared with @font-face from matplotlib's own
    files), the HTML's: outlines (a browser has no such fonts for an image).  Same size either way."""
    tex = r"2 D^{2} n \left(\frac{L}{n t} + \frac{\lambda_0}{\sqrt{t}}\right)"
    outline, text = (base64.b64decode(report.render_math_svg(tex, 18, text=t).split(",", 1)[1]).decode()
                     for t in (False, True))
    assert "<text" not in outline and "<text" in text
    assert report_pdf._svg_box(outline) == report_pdf._svg_box(text)
    fonts = report_typeset._svg_fonts(text)
    assert fonts and all(f.startswith("cm") for f in fonts)
    css = report.print_font_css([report.render_math_svg(tex, 18, text=True)])
    assert css.count("@font-face") == len(fonts)
    for f in fonts:
        path = re.search(rf"font-family: '{f}'; src: url\('file://([^']+)'\)", css).group(1)
        assert Path(path).is_file()
    ctx, css2 = report.print_context({"bound": report_typeset.template_formula(tex, "plain", 18), "other": [1, "x"]})
    assert ctx["bound"]["svg"] == report.render_math_svg(tex, 18, text=True) and css2 == css
    assert ctx["other"] == [1, "x"]


@needs_poppler
def test_pdf_embeds_the_formula_fonts(run):
    fonts = subprocess.run(["pdffonts", str(page(run["out"], "fedfw.theorem1", "pdf"))], capture_output=True,
                           text=True).stdout
    assert "cmmi10" in fonts and "cmr10" in fonts
    assert "DejaVu" in fonts


def test_page_laid_out_while_its_figures_are_drawn_is_the_same_page(run, tmp_path, monkeypatch):
    """check_page(figures=None) lays the print page out with placeholders while the figures are drawn, then
    paints the drawn figures in: the same PDF, byte for byte, and the same HTML as the page made after the
    figures; when a drawn figure's size differs from its placeholder's it renders from scratch (same files)."""
    chk, prov = run["check"], run["doc"]["provenance"]
    figs = [fo for _, fo in sorted(report.draw_figures(chk, str(tmp_path / "s"), 0, 1, False), key=lambda t: t[0])]
    for fo in figs:
        fo.files = report.figure_files("s", fo.key)
    links = {"pdf": "s.pdf", "index": None, "results": "results.json"}
    made = {}
    for name, arg in (("after", figs), ("meanwhile", None)):
        entry = report.check_page(chk, prov, arg, links, str(tmp_path), "s", True)
        made[name] = ((tmp_path / "s.pdf").read_bytes(), (tmp_path / "s.html").read_text(), entry)
    assert made["after"] == made["meanwhile"]
    assert made["after"][2]["figure_keys"] == [fo.key for fo in figs] == ["bound", "rate", "ratio"]
    assert [fo.key for fo in report.figure_plan(chk)] == [fo.key for fo in figs]
    calls = []
    real = report_pdf.pdf_laid_out_first
    monkeypatch.setattr(report_phase, "_placeholder", lambda fo, tag: f'<svg xmlns="http://www.w3.org/2000/svg" '
                        f'width="1pt" height="1pt" viewBox="0 0 1 1"><desc>{tag}</desc></svg>')
    monkeypatch.setattr(report_phase, "pdf_laid_out_first", lambda *a: calls.append(real(*a)) or calls[-1])
    report.check_page(chk, prov, None, links, str(tmp_path), "s", True)
    assert calls == [False]
    assert ((tmp_path / "s.pdf").read_bytes(), (tmp_path / "s.html").read_text()) == made["after"][:2]


def test_page_waits_for_figures_drawn_elsewhere(run, tmp_path):
    """The page piece waits for each figure's SVG file, written whole (os.replace) by the drawing piece."""
    import threading
    import time as _time
    chk, prov = run["check"], run["doc"]["provenance"]
    links = {"pdf": "s.pdf", "index": None, "results": "results.json"}
    started = threading.Event()

    def draw_late():
        started.wait(10)
        _time.sleep(0.3)
        report.draw_figures(chk, str(tmp_path / "s"), 0, 1, False)
    t = threading.Thread(target=draw_late)
    t.start()
    started.set()
    entry = report.check_page(chk, prov, None, links, str(tmp_path), "s", True)
    t.join()
    assert entry["figure_keys"] == ["bound", "rate", "ratio"]
    assert not list((tmp_path / "s").glob(".*.part"))
    html = (tmp_path / "s.html").read_text()
    for key in entry["figure_keys"]:
        svg = (tmp_path / "s" / f"fig-{key}.svg").read_text()
        assert base64.b64encode(svg.encode()).decode() in html
    assert (tmp_path / "s.pdf").read_bytes().startswith(b"%PDF")


def test_results_file_of_the_reports_is_verify_json_s(run, tmp_path):
    """The reports' results.json is written as ``verify --json`` writes its file (one writer of results)."""
    from fedcheck.core.results import dumps
    render.write_reports(run["doc"], tmp_path / "o")
    assert (tmp_path / "o" / "results.json").read_text() == dumps(run["doc"]) == run["json"].read_text()


def test_renderer_count_follows_the_cores_idle_now(monkeypatch):
    """default_workers counts the cores left idle since the command started (not the load average of the last
    minute, which still counts a run that just ended); without that measure, the load average."""
    import fedcheck.render as render
    monkeypatch.delenv(render.WORKERS_ENV, raising=False)
    monkeypatch.setattr(render.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(render.os, "getloadavg", lambda: (1.9, 1.0, 1.0))
    monkeypatch.setattr(render, "_MARK", None)
    assert render.free_cores() is None and render.default_workers() == 0      # no mark: load average 1.9
    clock = {"t": 100.0}
    monkeypatch.setattr("time.monotonic", lambda: clock["t"])
    jiffies = {"v": (1000, 4000)}
    monkeypatch.setattr(render, "_cpu_jiffies", lambda: jiffies["v"])
    render.mark_cpu()
    clock["t"] = 101.0                               # 1 s later: 200 jiffies of 2 cores elapsed
    for busy, free, n in ((100, 1.0, 2), (150, 0.5, 2), (170, 0.3, 1), (195, 0.05, 0)):
        jiffies["v"] = (1000 + busy, 4000 + 200)
        assert render.free_cores() == pytest.approx(free) and render.default_workers() == n, busy
    clock["t"] = 100.1                               # too short to measure: the load average again
    assert render.free_cores() is None and render.default_workers() == 0
    monkeypatch.setenv(render.WORKERS_ENV, "2")
    assert render.default_workers() == 2


def test_report_rebuilds_from_json_without_recomputing(run, tmp_path, monkeypatch, capsys):
    import fedcheck.core.runner
    import fedcheck.problems.solve

    def boom(*a, **k):
        raise AssertionError("fedcheck report must not recompute")
    monkeypatch.setattr(fedcheck.core.runner, "run_claim", boom)
    monkeypatch.setattr(fedcheck.problems.solve, "solve_consensus", boom)
    out = tmp_path / "again"
    assert main(["report", str(run["json"]), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir() if p.name != MANIFEST) == ["checks", "report.json"]
    assert f"report: {page(out, 'fedfw.theorem1', 'pdf')}" in printed
    # the same page as the one verify wrote (figures and formulas included), but for its link to the results
    # file, which is report's own (report.json): verify's results.json is never written by another command
    again = page(out, "fedfw.theorem1").read_text()
    assert 'href="../../report.json"' in again
    assert again.replace("report.json", "results.json") == page(run["out"], "fedfw.theorem1").read_text()


@pytest.mark.parametrize("content,message", [
    (None, "No such file"),
    ("{not json", "Expecting"),
    (json.dumps({"schema": "other", "checks": []}), "not a fedcheck results file"),
    (json.dumps({"schema": "fedcheck.results/1", "checks": [{"title": "no id"}]}), "'id'"),
    (json.dumps({"schema": "fedcheck.results/1", "checks": [{"id": "x", "verdict": "holds", "instances": {}}]}),
     "checks[0].instances: {} is not of type 'array'"),
])
def test_report_bad_results_file_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    out = tmp_path / "out"
    assert main(["report", str(path), "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())


def test_failed_render_leaves_no_file(tmp_path, monkeypatch):
    """A renderer failing half-way (after writing part of a PDF) leaves no report file, no temporary
    directory, and the files of an earlier complete run untouched."""
    monkeypatch.setenv("FEDCHECK_REPORT_WORKERS", "0")     # the patched renderer runs in this process
    doc = {"schema": "fedcheck.results/1", "provenance": {}, "checks": [counterexample_check()]}
    js = tmp_path / "r.json"
    js.write_text(json.dumps(doc))
    out = tmp_path / "reports"
    out.mkdir()
    (out / "old.html").write_text("an earlier complete report")

    def half_then_fail(html, path, *a, **k):
        Path(path).write_bytes(b"%PDF-1.4 half written")
        raise RuntimeError("renderer failed")
    monkeypatch.setattr(report_phase, "render_pdf", half_then_fail)
    with pytest.raises(RuntimeError, match="renderer failed"):
        render.write_reports(doc, out)
    # the results were written first (complete); no report file, no temporary directory
    assert listing(out) == ["old.html", "results.json"]
    assert json.loads((out / "results.json").read_text()) == doc
    assert (out / "old.html").read_text() == "an earlier complete report"
    # through the CLI: an internal error (exit 4), still no report written (report's results: report.json)
    assert main(["report", str(js), "--out", str(out)]) == 4
    assert listing(out) == ["old.html", "report.json", "results.json"]


def test_interrupt_on_a_later_check_leaves_no_file(run, tmp_path, monkeypatch):
    """Interrupted while rendering the second check: the first check's finished files do not appear."""
    monkeypatch.setenv("FEDCHECK_REPORT_WORKERS", "0")     # the patched renderer runs in this process
    doc = copy.deepcopy(run["doc"])
    doc["checks"].insert(0, counterexample_check())
    real = report.check_figures

    def interrupt_on_second(chk):
        if chk["id"] == "fedfw.theorem1":
            raise KeyboardInterrupt
        return real(chk)
    monkeypatch.setattr(report_phase, "check_figures", interrupt_on_second)
    js = tmp_path / "r.json"
    js.write_text(json.dumps(doc))
    out = tmp_path / "reports"
    assert main(["report", str(js), "--out", str(out)]) == 130
    assert listing(out) == ["report.json"]                          # the results survive; no report file
    assert json.loads((out / "report.json").read_text()) == doc


def test_empty_document_and_odd_values(tmp_path):
    """No check at all gives an index saying so; non-finite values and missing fields still render."""
    doc = {"schema": "fedcheck.results/1", "provenance": {}, "checks": []}
    paths = render.write_reports(doc, tmp_path / "empty")
    assert [p.name for p in paths] == ["results.json", "index.html"]
    assert "No check in this results file" in paths[1].read_text()
    odd = {"id": "odd/check id", "verdict": "inconclusive", "max_ratio": "inf", "claimed_rate": -1.0,
           "fitted_rate": None, "instances": [{"seed": None, "rounds": [1, 2, 3], "metric": [None, "inf", 0.5],
                                               "bound": {"as stated": [1.0, None, "inf"]}, "fit": None}]}
    paths = render.write_reports({"schema": "fedcheck.results/1", "checks": [odd]}, tmp_path / "odd")
    folder = check_folder("odd/check id")
    assert folder.startswith("odd_check_id~")                   # readable, and never another id's folder
    assert sorted(p.relative_to(tmp_path / "odd").as_posix() for p in paths if p.suffix != ".svg"
                  and p.parent.name != "report") == sorted(["results.json", f"checks/{folder}/report.html",
                                                            f"checks/{folder}/report.pdf"])
    assert "inconclusive" in page(tmp_path / "odd", "odd/check id").read_text()


def test_templates_ship_with_the_package():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = conf["tool"]["setuptools"]["package-data"]["fedcheck"]
    templates = [p.relative_to(ROOT / "fedcheck").as_posix() for p in (ROOT / "fedcheck" / "templates").iterdir()]
    assert {"check.html.j2", "index.html.j2"} <= {Path(t).name for t in templates}
    for t in templates:
        assert any(fnmatch.fnmatch(t, pat) for pat in patterns), t


# ------------------------------------------------------------------------------------------------
# figures a paper can use, one drawing per figure
def read_csv(path: Path) -> dict:
    import csv
    out: dict = {}
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["panel", "curve", "x", "y"]
    for panel, curve, x, y in rows[1:]:
        xs, ys = out.setdefault((panel, curve), ([], []))
        xs.append(float(x) if x else np.nan)
        ys.append(float(y) if y else np.nan)
    return {k: (np.array(a), np.array(b)) for k, (a, b) in out.items()}


def test_each_figure_on_its_own_svg_pdf_and_the_csv_of_what_it_plots(run):
    figs = report.check_figures(run["check"])
    assert [f.key for f in figs] == ["bound", "rate", "ratio"]
    fdir = figdir(run["out"], "fedfw.theorem1")
    for rf in figs:
        svg = (fdir / f"fig-{rf.key}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        assert (fdir / f"fig-{rf.key}.pdf").read_bytes()[:5] == b"%PDF-"
        table = read_csv(fdir / f"fig-{rf.key}.csv")
        # every line drawn is in the CSV, with exactly the arrays drawn
        drawn = {(d.panel, d.curve): d for d in rf.data}
        assert set(table) == set(drawn)
        for key, d in drawn.items():
            x, y = table[key]
            np.testing.assert_array_equal(x, d.x)
            np.testing.assert_array_equal(y, d.y)
            if isinstance(d.artist, matplotlib.lines.Line2D) and d.x.size > 1:
                ax, ay = (np.asarray(v, dtype=float) for v in d.artist.get_data())
                np.testing.assert_array_equal(ax, d.x)
                np.testing.assert_array_equal(ay, d.y)
        recorded = {id(d.artist) for d in rf.data}
        for ax in rf.figure.axes:
            for ln in ax.lines:
                assert id(ln) in recorded, f"{rf.key}: a line drawn but not in the CSV ({ln.get_label()})"
    if POPPLER:
        assert pdf_pages(fdir / "fig-bound.pdf") == 1
        assert "round" in pdf_text(fdir / "fig-bound.pdf")


def test_typeset_labels():
    assert report.tex_label("F(xbar^t) - F*") == r"$F(\overline{x}^{t}) - F^\star$"
    assert report.tex_label("naive averaging, eta=0.1, K=1") == r"naive averaging, $\eta=0.1$, $K=1$"
    assert report.tex_label("round t") == "round $t$"
    assert report.tex_label("x* = 1") == r"$x^\star = 1$"
    for words in ("measured / bound", "log-log slope", "instance (seed)", "what is a bound"):
        assert report.tex_label(words) == words
    assert report.tex_label(r"$\frac{broken$ step") == r"\$\frac{broken\$ step"   # broken mathtext: literal
    for s in ("F(xbar^t) - F*", "max(f(wbar) - f*, g(wbar)) / eps", "dist(X^t, C)", "F^(X^t) - F^*"):
        assert report.mathtext_ok(report.tex_label(s).split("$")[1])


def test_figures_hide_no_curve_and_have_a_legend_on_every_panel(run):
    figs = report.check_figures(run["check"])
    bound = figs[0]
    ax = bound.figure.axes[0]
    assert ax.get_ylabel() == r"$F(\overline{x}^{t}) - F^\star$"          # mathtext, not ASCII
    for rf in figs:
        for a in rf.figure.axes:
            assert a.get_legend() is not None, f"{rf.key}: a panel without a legend"
    # statement (paper) and sup (analysis) lie within a few percent of each other: both visible, told apart
    lines: dict = {}
    for d in bound.data:            # the first instance's lines (they carry the markers)
        if d.panel == ax.get_title():
            lines.setdefault(d.curve.split(",")[0], d.artist)
    st, sup = lines["bound 'statement'"], lines["bound 'sup'"]
    assert st.get_linestyle() != sup.get_linestyle() and st.get_marker() != sup.get_marker()
    assert st.get_linewidth() > sup.get_linewidth() and sup.get_zorder() > st.get_zorder()  # thin dashed on top
    assert st.get_color() != sup.get_color()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("'sup'" in t and "≈ 'statement'" in t for t in labels), labels
    assert "coincide" in bound.caption or "within" in bound.caption


def test_identical_curves_are_drawn_once():
    """``naive_averaging``'s six identical baselines: one line, one legend entry '(×6, identical)'."""
    t = np.arange(1, 101, dtype=float)
    series = [{"panel": "gap", "label": f"naive averaging, eta={eta}, K={K}", "x": t.tolist(),
               "y": [0.5] * 100, "role": "baseline", "xlabel": "round t", "ylabel": "F(xbar^t) - F*",
               "logx": True, "logy": True} for eta in ("0.1", "1.0", "2/(t+1)") for K in (1, 10)]
    series.append({"panel": "gap", "label": "FedFW", "x": t.tolist(), "y": (1 / t).tolist(), "role": "measured",
                   "logx": True, "logy": True})
    chk = {"id": "demo.naive", "verdict": "reproduced", "series": series}
    (rf,) = report.check_figures(chk)
    ax = rf.figure.axes[0]
    assert len(ax.lines) == 2
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 2 and any("naive averaging (×6, identical)" in lab for lab in labels), labels
    assert "6 identical curves" in rf.caption and "eta=2/(t+1), K=10" in rf.caption
    assert sorted(d.curve for d in rf.data) == ["FedFW", "naive averaging (×6, identical) (baseline)"]


def test_card_html_is_a_self_contained_fragment(run):
    html = report.card_html(run["check"])
    assert html.startswith('<div class="fedcheck-card"') and html.endswith("</div>")
    assert ">holds</span>" in html or run["check"]["verdict"] != "holds"
    assert run["check"]["title"].split(":")[0] in html
    assert "<svg" in html and "<?xml" not in html and "<script" not in html and "http://" not in html.split("<svg")[0]
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert ids and all(i.startswith("fc") for i in ids)                    # ids made unique to the card
    refs = re.findall(r'(?:href="#|url\(#)([^")]+)', html)
    assert set(refs) <= set(ids)
    # a result without figures still has its card
    bare = report.card_html({"id": "x.y", "verdict": "violated", "reason": "bound violated at t=3"})
    assert "violated" in bare and "bound violated at t=3" in bare and "<svg" not in bare


def test_progress_is_reported_per_report(several, tmp_path):
    calls = []
    render.write_reports(several["doc"], tmp_path / "p", progress=lambda *a: calls.append(a))
    assert [c[:2] for c in calls] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert calls[-1][2] == "index.html" and calls[0][2] == "fedfw.theorem1"


def test_report_merges_several_results_files(run, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FEDCHECK_PROGRESS", "1")        # the bar is drawn on a terminal only, else when forced
    other = {"schema": "fedcheck.results/1", "provenance": {"command": "fedcheck verify demo", "created": "2026-01-01"},
             "checks": [counterexample_check()]}
    b = tmp_path / "B.json"
    b.write_text(json.dumps(other))
    out = tmp_path / "merged"
    assert main(["report", str(run["json"]), str(b), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "reports" in err                                   # the progress bar
    index = (out / "index.html").read_text()
    assert 'href="checks/fedfw.theorem1/report.html"' in index and 'href="checks/demo.stall/report.html"' in index
    assert str(run["json"]) in index and str(b) in index      # where each check came from
    merged = json.loads((out / "report.json").read_text())
    assert [c["id"] for c in merged["checks"]] == ["fedfw.theorem1", "demo.stall"]
    assert merged["checks"][1]["provenance"]["command"] == "fedcheck verify demo"
    html = page(out, "demo.stall").read_text()
    assert "fedcheck verify demo" in html and str(b) in html  # each check keeps its own provenance
    # a bad file among them: exit 2 naming it, before anything is written
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out2 = tmp_path / "never"
    assert main(["report", str(run["json"]), str(bad), "--out", str(out2), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err
    assert not out2.exists()


def test_without_pango_the_html_is_written_and_the_pdf_skipped_with_one_warning(tmp_path, monkeypatch, capsys):
    def no_pango():
        raise OSError("cannot load library 'libpango-1.0-0': libpango-1.0-0: cannot open shared object file: "
                      "No such file or directory")
    monkeypatch.setattr(report_pdf, "_import_weasyprint", no_pango)
    doc = {"schema": "fedcheck.results/1", "provenance": {}, "checks": [counterexample_check()]}
    paths = render.write_reports(doc, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "libpango-1.0-0" in err[0]
    assert "apt-get install libpango-1.0-0 libpangoft2-1.0-0" in err[0]
    names = sorted(p.relative_to(tmp_path).as_posix() for p in paths)
    assert "checks/demo.stall/report.html" in names and "checks/demo.stall/report.pdf" not in names
    assert "checks/demo.stall/report/fig-series-1.pdf" in names     # each figure's PDF: matplotlib's
    assert 'href="report.pdf"' not in page(tmp_path, "demo.stall").read_text()


def test_verify_writes_the_results_before_the_reports(tmp_path, monkeypatch):
    """Interrupted while the reports render, ``verify`` has already written the results."""
    monkeypatch.setenv("FEDCHECK_REPORT_WORKERS", "0")     # the patched renderer runs in this process

    def interrupt(chk):
        raise KeyboardInterrupt
    monkeypatch.setattr(report_phase, "check_figures", interrupt)
    out = tmp_path / "out"
    rc = main(["verify", "theorem1", "--rounds", "200", "--seeds", "1", "-q", "-j", "1", "--out", str(out)])
    assert rc == 130
    doc = json.loads((out / "results.json").read_text())
    assert [c["id"] for c in doc["checks"]] == ["fedfw.theorem1"]
    assert not list(out.rglob("*.html")) and not list(out.rglob("*.pdf"))


# ------------------------------------------------------------------------------------------------
# renderer processes (fedcheck.render.RenderPool): the same files; stopped cleanly on an interrupt
def test_pool_renders_the_same_files_as_this_process(several, tmp_path):
    """Rendered by two renderer processes (each check's page laid out while its figures are drawn) or in this
    process (the ``several`` fixture), the reports are the same files, byte for byte."""
    from fedcheck.render import RenderPool, write_reports
    calls = []
    with RenderPool(2) as pool:
        paths = write_reports(several["doc"], tmp_path, progress=lambda *a: calls.append(a), pool=pool)
    rel = sorted(p.relative_to(tmp_path).as_posix() for p in paths)
    assert rel == sorted(p.relative_to(several["out"]).as_posix() for p in several["paths"])
    assert sum(r.endswith(".svg") for r in rel) >= 5 and sum(r.endswith(".pdf") for r in rel) >= 8
    for r in rel:
        a, b = several["out"] / r, tmp_path / r
        assert a.read_bytes() == b.read_bytes(), r       # the PDFs too (a page laid out while its figures
                                                          # were drawn is painted with them: the same bytes)
    # progress: one call per finished report (in the order they finish), the index last
    assert [c[:2] for c in calls] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert sorted(c[2] for c in calls[:3]) == sorted(report.report_name(c["id"]) for c in several["doc"]["checks"])
    assert calls[-1][2] == "index.html"


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _wait_for(cond, proc, seconds=120.0):
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        if cond():
            return True
        time.sleep(0.01)
    return False


def _gone(pids, seconds=10.0) -> bool:
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def _sigint_default():
    """In the child before exec: SIGINT back to its default, so Python installs its KeyboardInterrupt handler even
    when the test runner was started with SIGINT ignored (a background job of a non-interactive shell)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("how", ["SIGINT to the process group", "SIGTERM"])
def test_interrupted_while_renderers_work_no_report_file_and_no_process_left(several, tmp_path, how):
    """``fedcheck report`` stopped while its renderer processes draw: exit 130/143 with the one line, the
    results file and nothing else, and no renderer process left running."""
    import os
    import signal
    import sys
    js = tmp_path / "r.json"
    js.write_text(json.dumps(several["doc"]))
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "fedcheck", "report", str(js), "--out", str(out), "-q"],
                            cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "FEDCHECK_REPORT_WORKERS": "2", "TMPDIR": str(tmp)},
                            preexec_fn=_sigint_default)
    try:
        # the first figure files appear in the staging folder: the renderers are drawing
        assert _wait_for(lambda: any(tmp.glob("fedcheck-report-*/pages-*/checks/*/report/fig-*")),
                         proc), proc.communicate()
        kids = _children(proc.pid)
        assert len(kids) >= 2                  # the two renderers (and multiprocessing's resource tracker)
        if how == "SIGTERM":
            os.kill(proc.pid, signal.SIGTERM)
        else:                                  # Ctrl-C in a terminal: the whole foreground process group
            os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (143 if how == "SIGTERM" else 130), err
    assert err.decode().strip().splitlines()[-1].startswith(
        "fedcheck: terminated" if how == "SIGTERM" else "fedcheck: interrupted"), err
    assert b"Traceback" not in err
    assert listing(out) == ["report.json"]                          # no report file
    assert not list(tmp.glob("fedcheck-*"))                         # no staging folder left
    assert _gone(kids), [k for k in kids if _alive(k)]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_verify_starts_renderers_with_the_checks_and_stops_them_on_ctrl_c(tmp_path):
    """``verify`` starts its renderers as the checks start; a Ctrl-C (SIGINT to the process group) while they
    are still starting leaves no file, no process, and no message but the one line."""
    import os
    import signal
    import sys
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "fedcheck", "verify", "theorem1", "--rounds", "20000", "--seeds",
                             "4", "-q", "-j", "1", "--no-cache", "--out", str(out)],
                            cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "FEDCHECK_REPORT_WORKERS": "2"}, preexec_fn=_sigint_default)
    try:
        assert _wait_for(lambda: len(_children(proc.pid)) >= 2, proc), proc.communicate()
        kids = _children(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)     # the renderers are starting (Python importing its site packages)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.decode().strip().splitlines() == ["fedcheck: interrupted; no partial report was written"], err
    assert not out.exists() or not list(out.iterdir())
    assert _gone(kids), [k for k in kids if _alive(k)]


def test_a_pooled_run_imports_no_renderer_in_the_main_process(tmp_path):
    """The main process of ``fedcheck report`` with renderer processes imports neither matplotlib nor
    WeasyPrint (they load in the renderers, while the main process goes on)."""
    import os
    import sys
    js = tmp_path / "r.json"
    js.write_text(json.dumps({"schema": "fedcheck.results/1", "provenance": {}, "checks": [counterexample_check()]}))
    code = ("import sys; from fedcheck.cli import main; rc = main(['report', sys.argv[1], '--out', sys.argv[2], '-q']); "
            "print(rc, sorted(m for m in ('matplotlib', 'weasyprint', 'fedcheck.report') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code, str(js), str(tmp_path / "out")], cwd=ROOT, capture_output=True,
                       text=True, env={**os.environ, "FEDCHECK_REPORT_WORKERS": "2"}, timeout=300)
    assert r.stdout.strip().splitlines()[-1] == "0 []", r.stderr
    assert page(tmp_path / "out", "demo.stall", "pdf").is_file() and page(tmp_path / "out", "demo.stall").is_file()


def test_figure_labels_typeset_mathtexts_own_greek_names():
    """A label's Greek names are mathtext's (nu, pi, Theta typeset; 'eps', which mathtext has no command for, is a
    word): the title's name -> letter map once replaced this set and left nu, xi, pi, chi, Theta, Psi, Omega plain."""
    from fedcheck.report.typeset import tex_label
    assert tex_label("nu_t <= pi") == r"$\nu_t \leq \pi$"
    assert tex_label("Theta_k") == r"$\Theta_k$"
    assert "\\eps" not in tex_label("eps")
