"""The pieces of the report phase, which :func:`fedcheck.render.write_reports` runs in this process or in renderer
processes: :func:`draw_figures`, :func:`check_page`, :func:`figure_pdf_files`, :func:`index_page`, and
:func:`warm_up` for a renderer starting."""
from __future__ import annotations

import os
from pathlib import Path

from fedcheck.documents import FigureOut, figure_files
from fedcheck.report.content import check_context
from fedcheck.report.figures import check_figures, figure_svg, matplotlib_pdf, new_figure, style_log
from fedcheck.report.html import TEMPLATES, render_check_html, render_index_html, template_env
from fedcheck.report.pdf import (FixedFontDates, PdfUnavailable, QuietLogs, figure_pdfs, pdf_engine,
                                 pdf_laid_out_first, render_pdf)


# ------------------------------------------------------------------------------------------------
# the pieces of the report phase (fedcheck.render.write_reports runs them here or in renderer processes)
_SLOT = {"bound": 0, "rate": 1, "ratio": 2}


def draw_figures(chk: dict, fdir: str, part: int = 0, parts: int = 1, fallback_pdf: bool = False) -> list:
    """Draw the figures of slots ``part, part + parts, ...`` (see :func:`check_figures`) of ``chk`` as SVG and
    write ``fig-<name>.svg`` and ``.csv`` (and ``.pdf`` by matplotlib when ``fallback_pdf``: no WeasyPrint)
    into ``fdir``; return ``[(place, FigureOut)]``, ``place`` sorting the figures of all parts in order."""
    slots = {k for k in range(4) if k % parts == part}
    figures = check_figures(chk) if parts == 1 else check_figures(chk, slots)
    out = []
    try:
        for rf in figures:
            rf.svg = figure_svg(rf.figure)
            d = Path(fdir)
            d.mkdir(parents=True, exist_ok=True)
            base = f"fig-{rf.key}"
            (d / f"{base}.csv").write_text(rf.csv_text(), encoding="utf-8")
            part_file = d / f".{base}.svg.part"             # whole or absent: a page may be waiting for it
            part_file.write_text(rf.svg, encoding="utf-8")
            os.replace(part_file, d / f"{base}.svg")
            if fallback_pdf:
                (d / f"{base}.pdf").write_bytes(matplotlib_pdf(rf.figure))
            out.append(((_SLOT.get(rf.key, 3), len(out)), FigureOut(rf.key, rf.title, rf.caption, rf.svg, rf.size)))
    finally:
        for rf in figures:
            rf.figure.clear()
    return out


def figure_pdf_files(figures: list, fdir: str) -> None:
    """Each drawn figure's own PDF (WeasyPrint, from its SVG) as ``fdir/fig-<name>.pdf``."""
    for rf, pdf in zip(figures, figure_pdfs(figures, pdf_engine())):
        (Path(fdir) / f"fig-{rf.key}.pdf").write_bytes(pdf)


def figure_plan(chk: dict) -> list:
    """The figures :func:`draw_figures` will draw for ``chk`` (``parts=1``), in the page's order, without
    drawing them: key, title, caption and size, ``svg`` empty."""
    figures = check_figures(chk)
    try:
        order = sorted(range(len(figures)), key=lambda i: (_SLOT.get(figures[i].key, 3), i))
        return [FigureOut(figures[i].key, figures[i].title, figures[i].caption, "", figures[i].size) for i in order]
    finally:
        for rf in figures:
            rf.figure.clear()


def _svg_float(x: float) -> str:
    return f"{x:f}".rstrip("0").rstrip(".")           # as matplotlib's SVG writer formats the size


def _placeholder(fo, tag: str) -> str:
    """An empty SVG with the size matplotlib writes for ``fo``'s figure (so the page lays out the same)."""
    w, h = _svg_float(fo.size[0] * 72), _svg_float(fo.size[1] * 72)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}pt" height="{h}pt" viewBox="0 0 {w} {h}">'
            f'<desc>{tag}</desc></svg>')


def _wait_for_svgs(fdir: Path, keys: list[str], timeout: float = 900.0) -> dict[str, str]:
    """The SVG of each figure in ``keys`` once :func:`draw_figures` (in another renderer) has written it.
    A failed drawing ends the whole report phase, which stops this renderer; the timeout is a last resort."""
    import time
    got: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while True:
        for k in keys:
            if k not in got and (fdir / f"fig-{k}.svg").is_file():
                got[k] = (fdir / f"fig-{k}.svg").read_text(encoding="utf-8")
        if len(got) == len(keys):
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"figures of {fdir.name} not drawn within {timeout:.0f} s")
        time.sleep(0.004)


def check_page(chk: dict, provenance, figures: list | None, links: dict, tmp: str, stem: str, pdf: bool) -> dict:
    """The check's page ``tmp/<stem>.html`` and, when ``pdf``, the same page laid out for print
    ``tmp/<stem>.pdf``; returns the check's entry of the index.

    ``figures=None``: the figures are being drawn at the same time by :func:`draw_figures` (``parts=1``, into
    ``tmp/<stem>``) in another renderer.  This piece then lays the print page out with placeholders of the
    figures' sizes while they are drawn, and waits for them only to paint (see :func:`pdf_laid_out_first`).
    The entry's ``figure_keys`` says which figures the page shows."""
    ctx = check_context(chk, {"provenance": provenance})
    out = Path(tmp) / f"{stem}.pdf"
    if figures is None:
        plan = figure_plan(chk)
        for fo in plan:
            fo.files = figure_files(stem, fo.key)
        keys = [fo.key for fo in plan]
        drawn: dict[str, str] = {}

        def real() -> dict[str, str]:
            if not drawn:
                drawn.update(_wait_for_svgs(Path(tmp) / stem, keys))
            return drawn
        done = False
        if pdf:
            holders = {}
            for fo in plan:
                fo.svg = _placeholder(fo, f"fedcheck figure {stem}/{fo.key} being drawn")
                holders[fo.svg_uri] = (fo.key, fo.svg)
            done = pdf_laid_out_first(render_check_html(ctx, plan, links, for_print=True), holders, real, out,
                                      pdf_engine())
        for fo in plan:
            fo.svg = real()[fo.key]
        figures = plan
        if pdf and not done:
            render_pdf(render_check_html(ctx, figures, links, for_print=True), out, pdf_engine())
    elif pdf:
        render_pdf(render_check_html(ctx, figures, links, for_print=True), out, pdf_engine())
    html = render_check_html(ctx, figures, links)
    (Path(tmp) / f"{stem}.html").write_text(html, encoding="utf-8")
    return {"id": chk["id"], "title": ctx["title"], "paper": ctx["paper"], "reference": ctx["reference"],
            "verdict": ctx["verdict"], "tone": ctx["tone"], "reason": ctx["reason"], "facts": ctx["facts"],
            "html": f"{stem}.html", "figure_keys": [f.key for f in figures]}


def index_page(doc: dict, entries: list[dict], tmp: str) -> None:
    (Path(tmp) / "index.html").write_text(render_index_html(doc, entries), encoding="utf-8")


def warm_up() -> None:
    """Load what the first report would otherwise pay for (a renderer process does this as it starts, while
    the checks run): the libraries, the fonts of matplotlib and of Pango, mathtext, the templates."""
    fig, (ax,) = new_figure()
    ax.plot([1, 2], [1, 2])
    ax.set_title(r"warm $t^{-1/2}$")
    style_log(ax)          # the x label of nearly every figure: its mathtext parsed here (the parse cache is shared)
    svg = figure_svg(fig)
    template_env().get_template("check.html.j2")
    try:
        wp = pdf_engine()
    except PdfUnavailable:
        return
    fo = FigureOut("warm", "warm", "", svg, (1.0, 1.0))
    css = (TEMPLATES / "style.css").read_text(encoding="utf-8")
    html = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{css}</style></head><body><h1>warm</h1>"
            f"<p>warm <code>up</code></p><table><tr><td>1</td></tr></table><img src='{fo.svg_uri}'></body></html>")
    with QuietLogs(), FixedFontDates():
        wp.HTML(string=html).write_pdf()
