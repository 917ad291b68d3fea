"""The HTML pages: a check's page and the index, from the jinja2 templates (``fedcheck/templates``), and a claim's
title typeset in HTML (:func:`title_html`)."""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from fedcheck.report.common import GREEK
from fedcheck.report.figures import ReportFigure, figure_svg
from fedcheck.report.typeset import print_context

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


# ------------------------------------------------------------------------------------------------
# HTML
@functools.lru_cache(maxsize=1)
def template_env():
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["title_html"] = title_html
    return env


_GREEK_RE = re.compile(r"(?<![A-Za-z])(" + "|".join(sorted(GREEK, key=len, reverse=True)) + r")(?![A-Za-z])")
_SCRIPT_TOKEN = re.compile(r"-?[0-9]+(?:/[0-9]+)?|[A-Za-z0-9]+|\*")


def _braced(s: str, i: int) -> int:
    """The index just after the brace closing the one at ``s[i]`` (``len(s)`` when unbalanced)."""
    depth = 0
    for j in range(i, len(s)):
        depth += {"{": 1, "}": -1}.get(s[j], 0)
        if depth == 0:
            return j + 1
    return len(s)


def _scripts(s: str) -> str:
    """``^{..}`` / ``^x`` as superscripts and ``_{..}`` / ``_x`` as subscripts (``s`` is escaped HTML)."""
    out, i = [], 0
    while i < len(s):
        ch = s[i]
        if ch in "^_" and i + 1 < len(s):
            tag = "sup" if ch == "^" else "sub"
            if s[i + 1] == "{":
                end = _braced(s, i + 1)
                inner = _scripts(s[i + 2:end - 1])
                out.append(f"<{tag}>{chr(0x2212) + inner[1:] if inner.startswith('-') else inner}</{tag}>")
                i = end
                continue
            m = _SCRIPT_TOKEN.match(s, i + 1)
            if m and i > 0:
                tok = m.group(0)
                out.append(f"<{tag}>{chr(0x2212) + tok[1:] if tok.startswith('-') else tok}</{tag}>")
                i = m.end()
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def title_html(title) -> "Any":
    """A claim's title typeset in one notation (HTML): the plain-text mathematics titles are written in --
    ``t^{-1/2}``, ``X^{t+1}``, ``lambda_0``, ``E||.||_*^2``, ``<=``, ``sqrt``, ``xbar`` -- as superscripts,
    subscripts, Greek letters and symbols, so that no title shows TeX braces beside plain text."""
    import html as _h

    from markupsafe import Markup
    s = _h.escape(str(title or ""), quote=False)
    s = re.sub(r"\b([a-zA-Z])bar\b", "\\1\u0304", s)
    s = s.replace("&lt;=", "\u2264").replace("&gt;=", "\u2265").replace("-&gt;", "\u2192").replace("||", "\u2016")
    s = re.sub(r"\bsqrt\b", "\u221a", s)
    s = re.sub(r"\b([A-Za-z])\^(?=[(_])", "\\1\u0302", s)        # F^(X): F-hat, as the papers' hats are written
    s = _scripts(s)
    s = _GREEK_RE.sub(lambda m: GREEK[m.group(1)], s)
    s = re.sub(r"(?<=[\s(\[])-(?=[\s\d])|(?<=\s)-(?=\s)", "\u2212", s)
    return Markup(s)


def _render_svgs(figures: list[ReportFigure]) -> None:
    for rf in figures:
        if not rf.svg:
            rf.svg = figure_svg(rf.figure)


def render_check_html(ctx: dict, figures: list[ReportFigure], links: dict, for_print: bool = False) -> str:
    """The check's page; the PDF is this same page laid out for print (``@media print``), rendered with
    ``for_print``: the same template, the formulas' glyphs as text (see :func:`print_context`)."""
    _render_svgs(figures)
    links = {"pdf": None, "index": None, "results": "results.json", "figures": None, **links}
    fonts = ""
    if for_print:
        ctx, fonts = print_context(ctx)
    return template_env().get_template("check.html.j2").render(c=ctx, figures=figures, links=links, print_fonts=fonts)


def render_index_html(doc: dict, entries: list[dict]) -> str:
    prov = doc.get("provenance") or {}
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
    sources = prov.get("sources") if isinstance(prov.get("sources"), list) else []
    return template_env().get_template("index.html.j2").render(
        entries=entries, prov=prov, counts=counts, command=prov.get("command") or "",
        created=prov.get("created") or "", sources=sources, merged=bool(sources),
        results_link=doc.get("results_link") or "results.json")
