"""PDF by WeasyPrint: a check's page laid out for print (:func:`render_pdf`), each figure as a PDF of its own
(:func:`figure_pdfs`), a page laid out while its figures are drawn (:func:`pdf_laid_out_first`), and whether PDFs
can be made here at all (:func:`pdf_engine`, :func:`pdf_status`)."""
from __future__ import annotations

import base64
import os
import re
import threading
from pathlib import Path
from typing import Callable

PANGO_HINT = "apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0"


class PdfUnavailable(RuntimeError):
    """WeasyPrint (or the system libraries it loads, Pango) is not usable on this machine."""


def _import_weasyprint():
    import weasyprint
    return weasyprint


def pdf_engine():
    """The ``weasyprint`` module, or :class:`PdfUnavailable` with one line saying what is missing and how to
    install it."""
    try:
        return _import_weasyprint()
    except ModuleNotFoundError as e:
        raise PdfUnavailable(f"PDF reports skipped: the Python package {e.name or 'weasyprint'} is not installed "
                             "(pip install weasyprint)") from None
    except (OSError, ImportError) as e:
        m = re.search(r"cannot load library '([^']+)'", str(e))
        what = f"the system library {m.group(1)}" if m else \
            f"its system libraries ({(str(e).strip().splitlines() or [type(e).__name__])[0][:120]})"
        raise PdfUnavailable(f"PDF reports skipped: WeasyPrint cannot load {what} (Pango); install it with: "
                             f"{PANGO_HINT}") from None


class QuietLogs:
    """WeasyPrint notes CSS it ignores (screen-only rules) and fontTools the fonts' timestamps while
    subsetting: no news to a reader of the report."""

    NAMES = ("weasyprint", "weasyprint.progress", "fontTools", "fontTools.subset", "fontTools.ttLib")

    def __enter__(self):
        import logging
        self.old = [(logging.getLogger(n), logging.getLogger(n).level) for n in self.NAMES]
        for lg, _ in self.old:
            lg.setLevel(logging.ERROR)

    def __exit__(self, *exc):
        for lg, lvl in self.old:
            lg.setLevel(lvl)


class FixedFontDates:
    """WeasyPrint embeds each font as a subset.  Without the HarfBuzz-Subset library (``libharfbuzz-subset0``,
    not installed with Pango) it subsets with fontTools, which stamps the subset's ``head.modified`` with the
    current second: the same page rendered a second later was another file, so the PDFs of one run differed
    between a serial and a pooled report phase.  fontTools takes the time from ``SOURCE_DATE_EPOCH`` (the
    reproducible-builds convention) when it is set; while a PDF is written it is set to a fixed date unless the
    user set it.  Counted, so that overlapping renders in threads of one process restore it once."""

    EPOCH = "946684800"          # 2000-01-01T00:00:00Z
    _depth = 0
    _lock = threading.Lock()

    def __enter__(self):
        with self._lock:
            cls = type(self)
            if cls._depth == 0:
                cls._set = "SOURCE_DATE_EPOCH" not in os.environ
                if cls._set:
                    os.environ["SOURCE_DATE_EPOCH"] = self.EPOCH
            cls._depth += 1

    def __exit__(self, *exc):
        with self._lock:
            cls = type(self)
            cls._depth -= 1
            if cls._depth == 0 and cls._set:
                os.environ.pop("SOURCE_DATE_EPOCH", None)


def render_pdf(html: str, path: Path, engine=None) -> None:
    """Lay out ``html`` (a check's page) for print and write it to ``path``."""
    wp = engine or pdf_engine()
    with QuietLogs(), FixedFontDates():
        wp.HTML(string=html, base_url=str(Path(path).parent)).write_pdf(str(path))


def figure_pdfs(figures: list, engine) -> list[bytes]:
    """Each figure as a PDF of its own, made by WeasyPrint from the figure's SVG (the figure is drawn once):
    one document with a page of the figure's size per figure, each page then written as its own file
    (TrueType fonts, subset)."""
    css, body = [], []
    for q, rf in enumerate(figures):
        w, h = rf.size
        css.append(f"@page fig{q} {{ size: {w:.4f}in {h:.4f}in; margin: 0 }} "
                   f".fig{q} {{ page: fig{q}; break-before: page; }}")
        body.append(f'<div class="fig{q}"><img style="display:block;width:{w:.4f}in;height:{h:.4f}in" '
                    f'src="{rf.svg_uri}"></div>')
    html = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>fedcheck figure</title><style>body {{ margin: 0 }} "
            f"{' '.join(css)}</style></head><body>{''.join(body)}</body></html>")
    with QuietLogs(), FixedFontDates():
        doc = engine.HTML(string=html).render()
        return [doc.copy([page]).write_pdf() for page in doc.pages]


def pdf_status() -> str | None:
    """``None`` when PDFs can be made here, else the one warning line saying why not."""
    try:
        pdf_engine()
        return None
    except PdfUnavailable as e:
        return str(e)


_SVG_BOX = re.compile(r'<svg\b[^>]*?\swidth="([^"]*)"[^>]*?\sheight="([^"]*)"[^>]*?\sviewBox="([^"]*)"')


def _svg_box(svg: str) -> tuple | None:
    m = _SVG_BOX.search(svg)
    return m.groups() if m else None


def pdf_laid_out_first(html: str, holders: dict[str, tuple[str, str]], real: Callable[[], dict[str, str]],
                       path: Path, wp) -> bool:
    """Lay out the print page ``html``, whose figures are the placeholders ``holders`` (``{data URI: (key,
    placeholder SVG)}``), then -- once ``real()`` gives the drawn SVGs -- paint it with the drawn figures in
    their places, and write it to ``path``.  Layout (styles, line breaking, tables, pages) needs only each
    figure's size, so it runs while another renderer draws.  The PDF is the one :func:`render_pdf` makes from
    the page with the drawn figures (tested).  ``False`` (nothing written) when that cannot be guaranteed: a
    drawn figure whose size differs from its placeholder's, or a WeasyPrint whose images are not as expected;
    the caller then renders the page from scratch."""
    from xml.etree import ElementTree
    cache: dict = {}
    with QuietLogs():
        document = wp.HTML(string=html, base_url=str(Path(path).parent)).render(cache=cache)
    svgs = real()
    try:
        from weasyprint.images import SVGImage
        from weasyprint.svg import SVG
        swaps = []
        for uri, (key, holder) in holders.items():
            img = cache.get(uri)
            old = getattr(img, "_svg", None)
            if not isinstance(img, SVGImage) or old is None or _svg_box(svgs[key]) != _svg_box(holder):
                return False
            real_uri = "data:image/svg+xml;base64," + base64.b64encode(svgs[key].encode("utf-8")).decode("ascii")
            swaps.append((img, SVG(ElementTree.fromstring(svgs[key].encode("utf-8")), real_uri,
                                   old.font_config, old.url_fetcher)))
    except Exception:
        return False
    for img, svg in swaps:
        img._svg = svg
    with QuietLogs(), FixedFontDates():
        document.write_pdf(str(path))
    return True
