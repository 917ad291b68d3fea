"""Reports a person reads: one HTML page and one PDF per check, an index page when several ran.

Everything is rendered from the results document alone (``fedcheck report RESULTS.json ...``
re-renders, and merges several files, without recomputing anything), generically: a check of any
kind renders its verdict, evidence and tables; checks with per-instance curves
(``instances[*].rounds``, ``metric``, ``bound``) also get the log-log curves, the fitted-vs-claimed
rate figure and the measured/bound ratio; optional ``series`` give one figure per ``panel`` and
optional ``tables`` are rendered as tables (see ``docs/DESIGN.md``).

* Each figure is drawn once, by matplotlib, as SVG (vector, glyphs as paths, mathtext labels).  The
  HTML page and the PDF use that same SVG; the PDF is the HTML page itself, laid out for print
  (``@page`` rules in ``templates/style.css``) by WeasyPrint.  When WeasyPrint cannot load its system
  libraries (Pango), the HTML is written and the PDF skipped with one warning line.
* Every figure is also written on its own, for a paper: ``<check>/fig-<name>.svg``, ``.pdf`` and
  ``.csv`` (the CSV holds exactly the arrays drawn: one row per point, columns panel, curve, x, y).
* HTML pages are self-contained: figures and formulas inline as SVG data URIs, CSS inline, no
  JavaScript, no network request.  ``index.html`` lists the checks with verdict badges and thumbnails.
* ``results.json`` is written first (atomically), so an interrupt while the reports render loses no
  result; the reports themselves are written only when complete: they go to a temporary directory
  inside the output directory and are moved into place at the end (files of an earlier complete
  run stay as they were on a failure).
* The report phase is a few independent pieces (:func:`draw_figures`, :func:`check_page`,
  :func:`figure_pdf_files`, :func:`index_page`) that :mod:`fedcheck.render` runs in this process or in
  renderer processes (``fedcheck verify`` starts them with its checks); the files are the same either way.
* Measured curves stop at the resolution of ``F*``: points where the metric is at most
  ``resolution_factor`` (10) times the certified accuracy of ``F*`` are not drawn, the same rule the
  rate fit uses (:mod:`fedcheck.core.verdict`).
* No curve hides another: readings of a bound get their own colour, line style and markers (thick
  solid lines under thin dashed ones), bounds that coincide say so in the legend, and identical
  curves are drawn once with one legend entry ``(×k, identical)``.
"""
from __future__ import annotations

import base64
import csv
import functools
import io
import math
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D

from fedcheck.core import verdict as V

__all__ = ["validate", "BadResults", "render_math_svg", "mathtext_ok", "drop_unresolved",
           "check_figures", "render_check_html", "render_index_html", "report_name", "card_html",
           "merge_documents", "pdf_engine", "tex_label", "figure_svg", "FigureOut", "draw_figures", "check_page",
           "figure_pdf_files", "index_page", "pdf_status", "warm_up"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
RESOLUTION_FACTOR = V.POLICY.resolution_factor
FIG_W = 7.0                     # inches: a full text width in a two-column paper
FIG_H = 3.3                     # one row of panels (the legends below them add to it)
_READING_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                    "#bcbd22"]   # grey is the measured metric
_READING_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]
_GOOD, _BAD = {V.HOLDS, V.REPRODUCED}, {V.VIOLATED, V.NOT_REPRODUCED}
_TONE_COLOUR = {"good": "#1a7f37", "bad": "#c62828", "unknown": "#9a6700"}
_MEANING = {
    V.HOLDS: "The claim holds on every instance and round checked, within fedcheck's tolerance policy.",
    V.VIOLATED: "The claim is refuted: at least one instance contradicts it (see why below).",
    V.INCONCLUSIVE: "Undecided: nothing refutes the claim, but at least one instance or round could not be decided.",
    V.REPRODUCED: "The claimed counterexample behaviour is reproduced.",
    V.NOT_REPRODUCED: "The claimed counterexample behaviour does not reproduce.",
}
_PARAGRAPH_RATE = ("A claimed rate r means metric = O(t^r): the rate is consistent with the claim when the 95% "
                   "confidence interval of the fitted log-log slope lies at or below r.")
THIN_BINS = 160                 # columns per x range when a dense curve is thinned for drawing (see _thin_mask)
COINCIDE = 0.05                 # two bounds within 5% of each other everywhere "coincide" (said in the legend)
PANGO_HINT = "apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0"
# the look of every figure (sizes in points, as printed at FIG_W inches)
_RC = {"font.size": 8.0, "axes.titlesize": 8.5, "axes.labelsize": 8.0, "legend.fontsize": 7.0,
       "xtick.labelsize": 7.0, "ytick.labelsize": 7.0, "mathtext.fontset": "dejavusans",
       "font.family": "DejaVu Sans", "svg.fonttype": "none", "svg.hashsalt": "fedcheck", "pdf.fonttype": 42, "axes.linewidth": 0.6,
       "lines.markersize": 3.5, "legend.handlelength": 2.6, "path.simplify": True}


# the document's checks and the file names live in fedcheck.documents; the write (results first, reports moved into
# place when complete) in fedcheck.render, which imports no plotting library (the main process of a pooled run)
from fedcheck.documents import (BadResults, FigureOut, figure_files, merge_documents, print_written,  # noqa: E402, F401
                                report_name, validate)


# ------------------------------------------------------------------------------------------------
# value helpers
def _float(x) -> float:
    if isinstance(x, (bool, np.bool_)):
        return float(x)
    if isinstance(x, (int, float, np.integer, np.floating)):
        return float(x)
    if isinstance(x, str):
        s = x.strip().lower()
        if s in ("inf", "+inf", "infinity", "+infinity"):
            return math.inf
        if s in ("-inf", "-infinity"):
            return -math.inf
    return math.nan


def _arr(xs) -> np.ndarray:
    if not isinstance(xs, (list, tuple)):
        return np.zeros(0)
    return np.array([_float(v) for v in xs], dtype=float)


def fmt(x, digits: int = 4) -> str:
    """A value as a person reads it: ``-`` for missing, ``inf``, 4 significant digits."""
    if x is None:
        return "-"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        v = float(x)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == int(v) and abs(v) < 1e6:
            return str(int(v))
        return f"{v:.{digits}g}"
    if isinstance(x, (list, tuple)):
        if len(x) == 2 and all(isinstance(v, (int, float)) for v in x):
            return f"[{fmt(x[0], 3)}, {fmt(x[1], 3)}]"
        return ", ".join(fmt(v, digits) for v in x)
    if isinstance(x, dict):
        return "; ".join(f"{k}: {fmt(v, digits)}" for k, v in x.items())
    return str(x)


def tone(verdict: str | None) -> str:
    return "good" if verdict in _GOOD else "bad" if verdict in _BAD else "unknown"


def drop_unresolved(metric, accuracy, factor: float = RESOLUTION_FACTOR) -> tuple[np.ndarray, int]:
    """The metric with points at or below ``factor * accuracy`` (or non-positive, or not finite)
    replaced by NaN so that curves stop where ``F*`` no longer resolves them; and how many of the
    finite points were dropped."""
    m = np.array(metric, dtype=float, copy=True)
    acc = _float(accuracy)
    thr = factor * acc if math.isfinite(acc) and acc > 0 else 0.0
    finite = np.isfinite(m)
    bad = finite & (m <= thr)
    m[bad | ~finite] = np.nan
    return m, int(bad.sum())


# ------------------------------------------------------------------------------------------------
# formulas (matplotlib mathtext)
def _math_prop(size: float) -> FontProperties:
    return FontProperties(size=size, math_fontfamily="cm")


@functools.lru_cache(maxsize=512)
def mathtext_ok(latex: str | None) -> bool:
    """Can matplotlib's mathtext typeset ``latex``?"""
    if not isinstance(latex, str) or not latex.strip():
        return False
    try:
        from matplotlib.mathtext import MathTextParser
        MathTextParser("path").parse(f"${latex}$", dpi=72, prop=_math_prop(12))
        return True
    except Exception:
        return False


def _formula_cache(latex: str, size: float, text: bool = False) -> Path | None:
    """Where a typeset formula is kept between runs (``$FEDCHECK_CACHE/formulas``; keyed by the LaTeX, the size
    and matplotlib's version).  A formula is an image, not a value a verdict rests on; an entry that is not an
    SVG is ignored and typeset again."""
    import hashlib
    try:
        from fedcheck.problems.solve import cache_dir
        root = cache_dir()
    except Exception:
        return None
    if root is None:
        return None
    kind = "|text" if text else ""
    key = hashlib.sha256(f"{matplotlib.__version__}|{size!r}{kind}|{latex}".encode("utf-8")).hexdigest()[:40]
    return root / "formulas" / f"{key}.svg"


@functools.lru_cache(maxsize=256)
def render_math_svg(latex: str | None, size: float = 15, text: bool = False) -> str | None:
    """``latex`` as a base64 SVG data URI, or ``None`` when mathtext cannot typeset it (typeset once, then
    read back from the cache: typesetting the formulas was a fifth of the report's time).

    ``text=False`` (the HTML page): glyphs as outlines, so that a browser shows the formula without the
    fonts.  ``text=True`` (the PDF): glyphs as text in matplotlib's Computer Modern fonts, which the print
    page declares with ``@font-face`` (:func:`print_font_css`): WeasyPrint lays these out in a third of the
    time it takes to paint the outlines (11 formulas of Theorem 1: 0.11 s against 0.25 s), the same to the
    eye, and the PDF embeds the fonts, subset."""
    if not isinstance(latex, str) or not latex.strip():
        return None
    path = _formula_cache(latex, size, text)
    try:
        data = path.read_bytes() if path is not None and path.is_file() else b""
    except OSError:
        data = b""
    if data.startswith(b"<?xml") and data.rstrip().endswith(b"</svg>"):
        return "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")
    uri = _typeset_svg(latex, size, text)
    if uri is not None and path is not None:
        try:
            from fedcheck.core.results import atomic_write
            atomic_write(path, lambda fh: fh.write(base64.b64decode(uri.split(",", 1)[1])))
        except OSError:
            pass
    return uri


def _typeset_svg(latex: str, size: float, text: bool = False) -> str | None:
    if not mathtext_ok(latex):
        return None
    try:
        from matplotlib.mathtext import MathTextParser
        s, prop = f"${latex}$", _math_prop(size)
        width, height, depth, *_ = MathTextParser("path").parse(s, dpi=72, prop=prop)
        fig = Figure(figsize=(width / 72, height / 72))
        FigureCanvasAgg(fig)
        fig.text(0, depth / height, s, fontproperties=prop)
        buf = io.BytesIO()
        with matplotlib.rc_context({"svg.fonttype": "none" if text else "path", "svg.hashsalt": "fedcheck"}):
            # no date (the same results give the same page) and no creator URL in the image
            fig.savefig(buf, format="svg", dpi=72, facecolor="none",
                        metadata={"Date": None, "Creator": None, "Type": None})
        data = buf.getvalue()
        if text:
            svg = _split_tspans(data.decode("utf-8"))
            if not set(_svg_fonts(svg)) <= set(_print_fonts()):
                return None             # a font the print page cannot declare: the caller keeps the outlines
            data = svg.encode("utf-8")
        return "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")
    except Exception:
        return None


def _formula(latex, fallback, size=15, lhs: str | None = None) -> dict:
    """A formula for the templates: an SVG image when mathtext parses it, else the plain text."""
    full = f"{lhs} = {latex}" if lhs and isinstance(latex, str) else latex
    svg = render_math_svg(full, size)
    text = fallback if isinstance(fallback, str) and fallback else (latex if isinstance(latex, str) else "")
    return {"svg": svg, "latex": full if isinstance(full, str) else "", "text": text, "lhs": lhs, "size": size}


_FONT_FAMILY = re.compile(r"font-family[:=]\s*['\"]?([^;'\"]+)")


def _svg_fonts(svg: str) -> list[str]:
    return sorted({f.strip() for f in _FONT_FAMILY.findall(svg)})


@functools.lru_cache(maxsize=1)
def _print_fonts() -> dict[str, Path]:
    """The fonts a print formula may use: matplotlib's own Computer Modern TrueType files, by family."""
    d = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    return {f.stem: f for f in sorted(d.glob("cm*.ttf"))}


def print_font_css(svgs) -> str:
    """``@font-face`` rules for the fonts the print formulas ``svgs`` (data URIs) use."""
    used: set[str] = set()
    for uri in svgs:
        if uri:
            used.update(_svg_fonts(base64.b64decode(uri.split(",", 1)[1]).decode("utf-8")))
    fonts = _print_fonts()
    return "".join(f"@font-face {{ font-family: '{name}'; src: url('{fonts[name].as_uri()}'); }}\n"
                   for name in sorted(used) if name in fonts)


def print_context(ctx: dict) -> tuple[dict, str]:
    """``ctx`` with each formula as its print image (glyphs as text, see :func:`render_math_svg`; the outline
    image where that cannot be made), and the ``@font-face`` rules those need."""
    svgs: list[str] = []

    def conv(o):
        if isinstance(o, dict):
            if {"svg", "latex", "text", "lhs", "size"} <= o.keys():
                svg = render_math_svg(o["latex"], o["size"], text=True) if o["svg"] else None
                if svg:
                    svgs.append(svg)
                return {**o, "svg": svg or o["svg"]}
            return {k: conv(v) for k, v in o.items()}
        if isinstance(o, list):
            return [conv(v) for v in o]
        if isinstance(o, tuple):
            return tuple(conv(v) for v in o)
        return o
    out = conv(ctx)
    return out, print_font_css(svgs)


# ------------------------------------------------------------------------------------------------
# labels: the ASCII of the results (F(xbar^t) - F*) typeset by mathtext ($F(\bar{x}^{t}) - F^\star$)
_GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "eta", "theta", "lambda", "mu", "nu", "rho", "sigma", "tau",
          "phi", "psi", "omega", "kappa", "xi", "zeta", "chi", "pi", "Gamma", "Delta", "Theta", "Lambda", "Sigma",
          "Phi", "Psi", "Omega"}
_FUNCS = {"max": r"\max", "min": r"\min", "log": r"\log", "exp": r"\exp", "sup": r"\sup", "dist": r"\mathrm{dist}"}
_OPS = {"-": "-", "+": "+", "=": "=", "<=": r"\leq", ">=": r"\geq", "<": "<", ">": ">", "/": "/", "~": r"\sim"}


def _alpha_ok(tok: str) -> bool:
    runs = re.findall(r"[A-Za-z]+", tok)
    if not runs:
        return False
    if all(r in _FUNCS for r in runs) and not re.search(r"[_^(]", tok):
        return False                        # "log", "max": words
    return all(len(r) == 1 or r in _GREEK or r == "hat" or re.fullmatch(r"[A-Za-z]bar", r) or r in _FUNCS for r in runs)


def _is_math(tok: str) -> bool:
    if not tok or tok in ("a", "A", "I") or not re.fullmatch(r"[A-Za-z0-9_^{}()\[\]|*+\-=/<>.']+", tok):
        return False
    return _alpha_ok(tok)


def _to_tex(expr: str) -> str:
    s = expr.replace("||", r"\|")
    s = re.sub(r"(?<![A-Za-z\\])([A-Za-z])(?:\^(?=\()|_hat(?![A-Za-z]))", r"\\hat{\1}", s)   # F^(x), w_hat
    s = re.sub(r"<=", r"\\leq ", s)
    s = re.sub(r">=", r"\\geq ", s)
    s = re.sub(r"(?<![A-Za-z\\])([A-Za-z])bar(?![A-Za-z])", r"\\overline{\1}", s)
    s = re.sub(r"(?<![A-Za-z\\])(" + "|".join(sorted(_GREEK, key=len, reverse=True)) + r")(?![A-Za-z])", r"\\\1", s)
    s = re.sub(r"(?<![A-Za-z\\])(" + "|".join(_FUNCS) + r")(?![A-Za-z])", lambda m: _FUNCS[m.group(1)] + " ", s)
    s = s.replace("^*", r"^\star")
    s = re.sub(r"(?<=[A-Za-z0-9)}])\*", r"^\\star", s)
    s = re.sub(r"\^(-?[0-9.]+|[A-Za-z])(?![{])", r"^{\1}", s)
    s = re.sub(r"_([A-Za-z0-9]{2,})", r"_{\1}", s)
    return s


@functools.lru_cache(maxsize=1024)
def tex_label(s) -> str:
    """A label as matplotlib typesets it: mathematical tokens of plain ASCII (``F(xbar^t) - F*``, ``eta=0.1``,
    ``round t``) become mathtext (``$F(\\bar{x}^{t}) - F^\\star$``); words stay text; a label that already holds
    ``$...$`` is kept where mathtext parses it.  Anything mathtext cannot parse stays as it was."""
    s = "" if s is None else str(s)
    if "$" in s:
        return _safe_label(s)
    toks = s.split(" ")
    out, i = [], 0
    while i < len(toks):
        tok = toks[i]
        core, tail = re.match(r"^(.*?)([,;:]*)$", tok).groups()
        if _is_math(core) or (re.fullmatch(r"-?[0-9.]+", core or "x") and i + 2 < len(toks) and toks[i + 1] in _OPS):
            run, j, end_tail = [core], i + 1, tail
            while j < len(toks):
                depth = sum(r.count("(") - r.count(")") for r in run[::2])
                if end_tail == "," and depth > 0 and _is_math(re.match(r"^(.*?)([,;:]*)$", toks[j]).group(1)):
                    nxt, ntail = re.match(r"^(.*?)([,;:]*)$", toks[j]).groups()
                    run += [",", nxt]          # a comma inside parentheses: f(x, y)
                    end_tail = ntail
                    j += 1
                    continue
                if end_tail or j + 1 >= len(toks) or toks[j] not in _OPS:
                    break
                nxt, ntail = re.match(r"^(.*?)([,;:]*)$", toks[j + 1]).groups()
                if not (_is_math(nxt) or re.fullmatch(r"-?[0-9.]+", nxt or "x")):
                    break
                run += [toks[j], nxt]
                end_tail = ntail
                j += 2
            if any(_is_math(r) for r in run[::2]):
                tex = " ".join(_OPS.get(r, r) if k % 2 else _to_tex(r) for k, r in enumerate(run)).replace(" , ", ", ")
                if mathtext_ok(tex):
                    out.append(f"${tex}${end_tail}")
                    i = j
                    continue
        out.append(tok.replace("$", r"\$"))
        i += 1
    return " ".join(out)


def _safe_label(s) -> str:
    """A label for matplotlib: mathtext only where it parses, literal dollars otherwise."""
    s = "" if s is None else str(s)
    if "$" in s:
        parts = s.split("$")
        if len(parts) % 2 == 1 and all(mathtext_ok(p) for p in parts[1::2]):
            return s
        return s.replace("$", r"\$")
    return s


def _plain(s) -> str:
    """A label as plain text (for the CSV and the captions)."""
    return "" if s is None else str(s)


# ------------------------------------------------------------------------------------------------
# figures: drawn once (SVG), recorded as data (CSV)
@dataclass
class Drawn:
    """One curve as drawn: the panel, the curve's name, the arrays, and the matplotlib artist."""
    panel: str
    curve: str
    x: np.ndarray
    y: np.ndarray
    artist: Any = None


@dataclass
class ReportFigure:
    key: str
    title: str
    caption: str
    figure: Figure
    data: list = field(default_factory=list)     # [Drawn]: exactly what the figure plots
    svg: str = ""                                # the SVG text, filled in when the figure is rendered
    files: dict = field(default_factory=dict)    # {"svg"|"pdf"|"csv": path relative to the report}

    @property
    def svg_uri(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode("utf-8")).decode("ascii")

    @property
    def size(self) -> tuple[float, float]:
        """Width and height in inches."""
        w, h = self.figure.get_size_inches()
        return float(w), float(h)

    def line(self, ax, panel: str, curve: str, x, y, thin: bool = True, **kw):
        x, y = _on_scale(x), _on_scale(y)
        if thin and x.size == y.size and x.size > 3 * THIN_BINS:
            keep = _thin_mask(x, [y], ax.get_xscale() == "log")
            x, y = x[keep], y[keep]
        if kw.get("markevery") is not None and not (np.isfinite(x) & np.isfinite(y)).any():
            kw = {**kw, "markevery": None}    # matplotlib's fractional markevery fails on a line without a finite point
        (ln,) = ax.plot(x, y, **kw)
        self.data.append(Drawn(panel, _plain(curve), x, y, ln))
        return ln

    def hline(self, ax, panel: str, curve: str, y: float, **kw):
        ln = ax.axhline(y, **kw)
        self.data.append(Drawn(panel, _plain(curve), np.array([np.nan]), np.array([float(y)]), ln))
        return ln

    def band(self, ax, panel: str, curve: str, x, lo, hi, **kw):
        x, lo, hi = _on_scale(x), _on_scale(lo), _on_scale(hi)
        if x.size > 3 * THIN_BINS:
            keep = _thin_mask(x, [lo, hi], ax.get_xscale() == "log")
            x, lo, hi = x[keep], lo[keep], hi[keep]
        art = ax.fill_between(x, lo, hi, **kw)
        self.data.append(Drawn(panel, f"{_plain(curve)} (band low)", np.asarray(x, float), np.asarray(lo, float), art))
        self.data.append(Drawn(panel, f"{_plain(curve)} (band high)", np.asarray(x, float), np.asarray(hi, float), art))
        return art

    def csv_text(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["panel", "curve", "x", "y"])
        for d in self.data:
            for xv, yv in zip(d.x, d.y):
                w.writerow([d.panel, d.curve, _num(xv), _num(yv)])
        return buf.getvalue()


OFF_SCALE = 1e150


def _on_scale(v) -> np.ndarray:
    """``v`` as floats to draw, with magnitudes beyond ``1e150`` or below ``1e-150`` (but 0) as NaN: matplotlib
    pads an axis' limits and ticks beyond its data (overflowing to inf past ~1e308, or to 0 on a log axis), and a
    diverging run's values can come that close to the float range.  They stay in the results and the tables."""
    v = np.array(v, dtype=float)
    with np.errstate(invalid="ignore"):
        a = np.abs(v)
        v[(a > OFF_SCALE) | ((a < 1.0 / OFF_SCALE) & (a > 0))] = np.nan
    return v


def _thin_mask(x: np.ndarray, ys: list, log: bool, bins: int | None = None) -> np.ndarray:
    """Which points to draw of a dense curve: the x range (log-spaced when ``log``) is cut into ``bins``
    columns, narrower than a printed point, and each column keeps its first, last, lowest and highest point
    (of every ``y`` in ``ys``), and where a gap (NaN) starts.  The drawn curve is the same to the eye (its
    envelope is kept exactly), with a fraction of the points to lay out in the SVG and the PDF."""
    bins = bins or THIN_BINS
    n = x.size
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.log(x) if log else x.astype(float)
    ok = np.isfinite(p)
    keep = np.zeros(n, dtype=bool)
    keep[[0, n - 1]] = True
    if not ok.any():
        return np.ones(n, dtype=bool)
    lo, hi = float(p[ok].min()), float(p[ok].max())
    b = np.full(n, -1, dtype=np.int64)
    b[ok] = np.clip(((p[ok] - lo) / max(hi - lo, 1e-300) * bins).astype(np.int64), 0, bins - 1)
    for y in ys:
        fin = ok & np.isfinite(y)
        gap = ~fin
        keep |= gap & np.r_[True, ~gap[:-1]]          # the first point of every gap
        keep |= fin & np.r_[True, gap[:-1]]           # and the first point after it
        idx = np.flatnonzero(fin)
        if idx.size == 0:
            continue
        for order in (np.argsort(b[idx], kind="stable"), np.lexsort((y[idx], b[idx]))):
            sb = b[idx][order]
            starts = np.r_[0, np.flatnonzero(np.diff(sb)) + 1]
            ends = np.r_[starts[1:] - 1, sb.size - 1]
            keep[idx[order[starts]]] = True
            keep[idx[order[ends]]] = True
    keep[~ok] = True
    return keep


def _num(v) -> str:
    """A float for the CSV: shortest exact repr; empty where nothing is drawn (NaN)."""
    v = float(v)
    return "" if math.isnan(v) else repr(v)


def _new_figure(ncols=1, height=FIG_H, **kw) -> tuple[Figure, list]:
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(FIG_W, height), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, ncols, squeeze=False, **kw)[0]
    return fig, list(axes)


class _SharedTextToPath:
    """One :class:`matplotlib.textpath.TextToPath` for every renderer of :func:`figure_svg`.  matplotlib gives each
    renderer its own (``RendererBase.__init__``), and with it a new mathtext parser whose parse cache starts empty;
    a figure saved as SVG makes several renderers (constrained layout asks for one, the drawing has its own), so
    every mathtext label was parsed again for each of them: 35 parses (24 % of drawing theorem1's three figures)
    for 7 distinct labels.  Shared, a label is parsed once per process and size.  The cache's keys are the label,
    the size and the font properties, so what is drawn is unchanged (the SVG is byte-identical: tested)."""

    def __init__(self):
        self.shared = None

    def __enter__(self):
        import matplotlib.text as mtext
        from matplotlib.textpath import TextToPath
        if self.shared is None:
            self.shared = TextToPath()
        self.saved = mtext.TextToPath
        mtext.TextToPath = lambda: self.shared        # what RendererBase.__init__ calls (matplotlib.text.TextToPath)
        return self

    def __exit__(self, *exc):
        import matplotlib.text as mtext
        mtext.TextToPath = self.saved


_TEXT2PATH = _SharedTextToPath()


VIEW_LIMIT = 1e300      # a linear axis never shows beyond +-VIEW_LIMIT (its ticks would overflow to inf)


def _views_in_range(fig: Figure) -> None:
    """Clip each linear axis's view to ``[-VIEW_LIMIT, VIEW_LIMIT]``: matplotlib's tick locator puts ticks beyond
    the view, and a view reaching near the largest float (a slope's confidence interval of 1e308) makes those
    ticks overflow to inf, on which the tick formatter raises.  What lies outside is clipped from the drawing;
    the figure's CSV keeps every value."""
    for ax in fig.axes:
        for name in ("x", "y"):
            if getattr(ax, f"get_{name}scale")() != "linear":
                continue
            lim = np.array(getattr(ax, f"get_{name}lim")(), dtype=float)
            if not np.all(np.abs(lim) <= VIEW_LIMIT):
                a, b = np.clip(np.nan_to_num(lim, nan=0.0), -VIEW_LIMIT, VIEW_LIMIT).tolist()
                getattr(ax, f"set_{name}lim")((a, b) if a != b else (a - 1.0, a + 1.0))


def figure_svg(fig: Figure) -> str:
    """The figure as SVG text (deterministic: no date, fixed ids).  Text stays text (``svg.fonttype: none``,
    DejaVu Sans, mathtext in DejaVu Sans too): searchable and selectable in the HTML and the PDF, editable in a
    vector editor, and several times faster for WeasyPrint to lay out than glyph outlines."""
    _views_in_range(fig)
    buf = io.BytesIO()
    with matplotlib.rc_context(_RC), _TEXT2PATH:
        fig.savefig(buf, format="svg", facecolor="white", metadata={"Date": None, "Creator": None})
    return _split_tspans(buf.getvalue().decode("utf-8"))


def _split_tspans(svg: str) -> str:
    """Mathtext as one ``<text>`` per glyph: matplotlib writes a formula as ``<tspan>``s with absolute
    positions out of reading order, which browsers place right and WeasyPrint does not."""
    def one(m):
        spans = re.findall(r'<tspan x="([^"]+)" y="([^"]+)" style="([^"]*)">(.*?)</tspan>', m.group(1), re.S)
        if not spans:
            return m.group(0)
        return "".join(f'<text x="{x}" y="{y}" style="{st}">{c}</text>' for x, y, st, c in spans)
    return re.sub(r"<text>\s*((?:<tspan[^>]*>.*?</tspan>\s*)+)</text>", one, svg, flags=re.S)


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
    with _QuietLogs(), _FixedFontDates():
        doc = engine.HTML(string=html).render()
        return [doc.copy([page]).write_pdf() for page in doc.pages]


def _figure_pdf(fig: Figure) -> bytes:
    """The figure as a PDF of its own drawn by matplotlib (used when WeasyPrint is not available).  The
    layout of the SVG is kept (constrained layout ran once) so the two files show the same figure."""
    engine = fig.get_layout_engine()
    fig.set_layout_engine("none")
    _views_in_range(fig)
    try:
        buf = io.BytesIO()
        with matplotlib.rc_context(_RC), _QuietLogs():
            fig.savefig(buf, format="pdf", facecolor="white",
                        metadata={"Creator": "fedcheck", "Producer": None, "CreationDate": None})
        return buf.getvalue()
    finally:
        fig.set_layout_engine(engine)


def _legend_below(ax, handles=None, ncol=2, title=None):
    """A legend under the axes: it never covers a curve."""
    kw = dict(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=ncol, frameon=False, title=title,
              title_fontsize=7, borderaxespad=0.0, columnspacing=1.2)
    with matplotlib.rc_context(_RC):
        return ax.legend(handles=handles, **kw) if handles is not None else ax.legend(**kw)


@dataclass
class _Curve:
    label: str
    k: np.ndarray
    metric: np.ndarray       # NaN where not resolved
    dropped: int
    bounds: dict             # reading -> array (NaN before valid_from and where not positive)
    fit: dict | None
    seed: Any
    index: int               # position in the check's instances


def _instance_label(inst: dict, j: int) -> str:
    if inst.get("seed") is not None:
        return f"seed {inst['seed']}"
    src = (inst.get("instance") or {}).get("source") if isinstance(inst.get("instance"), dict) else None
    return src or f"instance {j + 1}"


def _curves(chk: dict) -> list[_Curve]:
    valid_from = _float((chk.get("formula") or {}).get("valid_from", 1))
    valid_from = valid_from if math.isfinite(valid_from) else 1.0
    out = []
    for j, inst in enumerate(chk.get("instances") or []):
        k, metric = _arr(inst.get("rounds")), _arr(inst.get("metric"))
        n = min(k.size, metric.size)
        if n == 0:
            continue
        k, metric = k[:n], metric[:n]
        m, dropped = drop_unresolved(metric, inst.get("F_star_certified_accuracy"))
        m[~(k > 0)] = np.nan
        bounds = {}
        for name, b in (inst.get("bound") or {}).items():
            b = _arr(b)
            if b.size < n:
                b = np.concatenate([b, np.full(n - b.size, np.nan)])
            b = b[:n].copy()
            b[(k < valid_from) | ~(b > 0) | ~np.isfinite(b)] = np.nan
            bounds[name] = b
        fit = inst.get("fit") if isinstance(inst.get("fit"), dict) else None
        shown = np.isfinite(k) & (k > 0) & ((np.isfinite(m) & (m > 0))
                                            | np.any([np.isfinite(b) for b in bounds.values()] or [False], axis=0))
        if not shown.any():         # nothing this instance measured can be drawn on log-log axes (a claim judged
            continue                # on other quantities, or every point unresolved): no curve
        out.append(_Curve(_instance_label(inst, j), k, m, dropped, bounds, fit, inst.get("seed"), j))
    return out


def _reading_info(chk: dict, curves: list[_Curve]) -> list[tuple[str, bool]]:
    names = list((chk.get("readings") or {}).keys())
    for c in curves:
        names += [n for n in c.bounds if n not in names]
    out = []
    for name in names:
        d = (chk.get("readings") or {}).get(name) or ((chk.get("formula") or {}).get("readings") or {}).get(name) or {}
        out.append((name, bool(d.get("paper", True))))
    return out


def _reading_label(name: str, paper: bool, several: bool) -> str:
    if not several and name in ("as stated", "statement"):
        return "bound"
    return f"bound '{name}' ({'paper' if paper else 'analysis'})"


def _reading_styles(readings) -> dict:
    """Colour, line style, marker and drawing order per reading: the paper's readings thick and solid
    underneath, analyses thin and dashed on top, each with its own markers at its own offsets, so that a
    bound lying on another one stays visible."""
    out = {}
    n = max(len(readings), 1)
    for q, (name, paper) in enumerate(readings):
        out[name] = dict(color=_READING_COLOURS[q % len(_READING_COLOURS)], ls="-" if paper else (0, (5, 2.5)),
                         lw=2.0 if paper else 1.1, zorder=2.0 if paper else 2.5,
                         marker=_READING_MARKERS[q % len(_READING_MARKERS)], ms=3.6 if paper else 3.0,
                         mfc="white" if paper else "none", mew=0.9,
                         markevery=(0.03 + 0.09 * q / n, 0.09))
    return out


def _coincident(curves: list[_Curve], readings) -> dict:
    """``{reading: (other reading, largest relative gap)}`` for readings that stay within ``COINCIDE``
    of an earlier reading wherever both are drawn."""
    out = {}
    names = [n for n, _ in readings]
    for q, b in enumerate(names):
        for a in names[:q]:
            gaps = []
            for c in curves:
                if a in c.bounds and b in c.bounds:
                    x, y = c.bounds[a], c.bounds[b]
                    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
                    if ok.any():
                        gaps.append(float(np.max(np.abs(y[ok] / x[ok] - 1.0))))
            if gaps and max(gaps) <= COINCIDE:
                out[b] = (a, max(gaps))
                break
    return out


_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


@functools.lru_cache(maxsize=None)
def _log_tick_class():
    from matplotlib.ticker import LogFormatterSciNotation

    class LogTicks(LogFormatterSciNotation):
        """Matplotlib's log tick labels (10^k, a x 10^k) written with Unicode superscripts instead of mathtext:
        the same labels, without a mathtext parse per tick (the largest cost of drawing a log-log figure)."""

        def __call__(self, x, pos=None):
            s = super().__call__(x, pos)
            m = re.fullmatch(r"\$\\mathdefault\{(?:([0-9.]+)\\times\s*)?10\^\{(-?\d+)\}\}\$", s)
            if m:
                return (f"{m.group(1)}×" if m.group(1) else "") + "10" + m.group(2).replace("−", "-").translate(_SUP)
            m = re.fullmatch(r"\$\\mathdefault\{([0-9.\-−]+)\}\$", s)
            return m.group(1) if m else s
    return LogTicks


def _log_ticks(axis):
    """Log ticks: labelled decades, minor ticks at 2 and 5 only (each tick is an artist: the eight minor ticks
    per decade were most of the time matplotlib took to draw a log-log figure)."""
    from matplotlib.ticker import LogLocator
    cls = _log_tick_class()
    axis.set_major_formatter(cls())
    axis.set_minor_locator(LogLocator(base=10.0, subs=(2.0, 5.0)))
    axis.set_minor_formatter(cls(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def _style_log(ax, xlabel="t (the iterate after t - 1 rounds)", ylabel=""):
    ax.set_xscale("log")
    ax.set_yscale("log")
    _log_ticks(ax.xaxis)
    _log_ticks(ax.yaxis)
    ax.set_xlabel(tex_label(xlabel))
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.35, lw=0.5)


def _worst_instance(chk: dict, readings) -> int | None:
    paper = [n for n, p in readings if p] or [n for n, _ in readings]
    best, arg = -math.inf, None
    for j, inst in enumerate(chk.get("instances") or []):
        rd = (inst.get("readings") or {})
        vals = [_float((rd.get(n) or {}).get("max_ratio")) for n in paper]
        vals = [v for v in vals if math.isfinite(v)]
        if vals and max(vals) > best:
            best, arg = max(vals), j
    return arg


def _bound_figure(chk: dict, curves: list[_Curve], readings) -> ReportFigure:
    metric_name = (chk.get("formula") or {}).get("metric") or "measured metric"
    ylab = tex_label(metric_name)
    several = len(readings) > 1
    styles = _reading_styles(readings)
    same = _coincident(curves, readings)
    worst = _worst_instance(chk, readings) if len(curves) > 1 else None
    ncols = 2 if worst is not None else 1
    fig, axes = _new_figure(ncols=ncols, height=FIG_H + (0.25 * math.ceil((len(readings) + 1) / 2) if ncols == 2
                                                           else 0.15 * math.ceil((len(readings) + 1) / 3)))
    rf = ReportFigure("bound", f"Measured {metric_name} and the bound", "", fig)
    alpha = 0.95 if len(curves) == 1 else max(0.3, 0.95 / math.sqrt(len(curves)))

    handles = [Line2D([], [], color="0.15", lw=1.2, label=f"measured {ylab}")]
    for name, paper in readings:
        st = styles[name]
        lab = tex_label(_reading_label(name, paper, several))
        if name in same:
            other, gap = same[name]
            lab += f" ≈ '{other}' (within {max(gap * 100, 0.1):.2g}%)"
        handles.append(Line2D([], [], color=st["color"], lw=st["lw"], ls=st["ls"], marker=st["marker"],
                              ms=st["ms"], mfc=st["mfc"], mew=st["mew"], label=lab))

    def draw(ax, panel, cs, a):
        _style_log(ax, ylabel=ylab)
        for q, c in enumerate(cs):
            for name, paper in readings:
                if name in c.bounds:
                    st = dict(styles[name])
                    if q:        # markers on the first instance's bounds only: enough to tell the readings apart
                        st["marker"] = None
                    rf.line(ax, panel, f"bound '{name}', {c.label}", c.k, c.bounds[name], alpha=a, **st)
            rf.line(ax, panel, f"measured, {c.label}", c.k, c.metric, color="0.15", lw=1.0, alpha=a, zorder=3)
        _legend_below(ax, handles=handles, ncol=1 if ncols == 2 else 2)

    title0 = f"all {len(curves)} instance(s)" if len(curves) > 1 else curves[0].label
    axes[0].set_title(title0)
    draw(axes[0], title0, curves, alpha)
    if worst is not None:
        inst = (chk.get("instances") or [])[worst]
        label = _instance_label(inst, worst)
        sel = [c for c in curves if c.index == worst][:1]
        paper = [n for n, p in readings if p] or [n for n, _ in readings]
        rd = inst.get("readings") or {}
        top = max(((_float((rd.get(n) or {}).get("max_ratio")), n) for n in paper),
                  key=lambda x: x[0] if math.isfinite(x[0]) else -math.inf)
        title1 = f"{label}: the largest measured / bound ({fmt(top[0], 3)})"
        axes[1].set_title(title1)
        draw(axes[1], title1, sel, 0.95)
        for n in paper:    # where the paper's bound is first violated on that instance
            t_bad = _float((rd.get(n) or {}).get("first_violation_round"))
            if math.isfinite(t_bad) and sel:
                c = sel[0]
                q = int(np.argmin(np.abs(c.k - t_bad)))
                y = _arr(inst.get("metric"))[q] if q < len(inst.get("metric") or []) else math.nan
                if math.isfinite(y) and y > 0:
                    rf.line(axes[1], title1, "first violation", [c.k[q]], [y], marker="o", ms=9, mfc="none",
                            mec="#c62828", mew=1.6, ls="none", zorder=5)
                    what = f" of '{n}'" if several else ""
                    axes[1].annotate(f"first violation{what}: t = {fmt(c.k[q])}", (c.k[q], y), xytext=(14, -26),
                                     textcoords="offset points", color="#c62828", fontsize=7,
                                     bbox=dict(fc="white", ec="#c62828", lw=0.6, alpha=0.9, boxstyle="round,pad=0.25"),
                                     arrowprops=dict(arrowstyle="-", color="#c62828", lw=0.8))
                break
    dropped = sum(c.dropped for c in curves)
    vf = (chk.get("formula") or {}).get("valid_from")
    floor_note = (f"Measured curves stop where the metric is within {fmt(RESOLUTION_FACTOR)}x the certified accuracy "
                  "of F*" + (f" ({dropped} point(s) not drawn)." if dropped else " (no point was that small)."))
    if not readings:
        rf.key, rf.title = "measured", f"Measured {metric_name}"
        rf.caption = f"Log-log: the measured {metric_name}, one line per instance. " + floor_note
        return rf
    coinc = "".join(f" The bound '{b}' lies within {max(g * 100, 0.1):.2g}% of '{a}' at every round: the two are "
                    f"drawn with different styles and markers so that both stay visible." for b, (a, g) in same.items())
    rf.caption = (f"Log-log: the measured {metric_name} (dark lines, one per instance) against the claimed bound "
                  + ("(one colour, line style and marker per reading of the bound; thick solid: readings the paper "
                     "writes, thin dashed: analyses). " if several else "(coloured). ")
                  + "The claim holds where the measured curve stays below the bound."
                  + coinc + " "
                  + (f"The bound is drawn from t = {fmt(vf)}, where it starts to apply. " if vf not in (None, 1) else "")
                  + floor_note)
    return rf


def _ratio_figure(chk: dict, curves: list[_Curve], readings) -> ReportFigure | None:
    several = len(readings) > 1
    styles = _reading_styles(readings)
    same = _coincident(curves, readings)
    fig, (ax,) = _new_figure(height=FIG_H + 0.15 * math.ceil((len(readings) + 1) / 2))
    rf = ReportFigure("ratio", "Ratio measured / bound over rounds", "", fig)
    panel = "measured / bound"
    same_grid = all(c.k.shape == curves[0].k.shape and np.array_equal(c.k, curves[0].k) for c in curves)
    envelope = same_grid and len(curves) > 1
    ymax, ymin, handles = 1.0, math.inf, []
    _style_log(ax, ylabel="measured / bound")
    for name, paper in readings:
        ratios = []
        for c in curves:
            if name in c.bounds:
                with np.errstate(divide="ignore", invalid="ignore"):
                    r = c.metric / c.bounds[name]
                ratios.append((c, _on_scale(np.where(np.isfinite(r) & (r > 0), r, np.nan))))
        ratios = [(c, r) for c, r in ratios if np.isfinite(r).any()]
        if not ratios:
            continue
        st = styles[name]
        allr = np.concatenate([r[np.isfinite(r)] for _, r in ratios])
        ymax, ymin = max(ymax, float(allr.max())), min(ymin, float(allr.min()))
        if envelope:
            M = np.vstack([r for _, r in ratios])
            some = np.isfinite(M).any(axis=0)
            lo = np.full(M.shape[1], np.nan)
            hi = np.full(M.shape[1], np.nan)
            lo[some], hi[some] = np.nanmin(M[:, some], axis=0), np.nanmax(M[:, some], axis=0)
            k = curves[0].k
            rf.band(ax, panel, f"'{name}' over the instances", k, lo, hi, color=st["color"], alpha=0.12, lw=0)
            rf.line(ax, panel, f"'{name}' largest over the instances", k, hi, **st)
        else:
            for q, (c, r) in enumerate(ratios):
                rf.line(ax, panel, f"'{name}', {c.label}", c.k, r, **(st if q == 0 else {**st, "marker": None}))
        what = f"reading '{name}' ({'paper' if paper else 'analysis'})" if several else "measured / bound"
        if name in same:
            what += f" ≈ '{same[name][0]}'"
        handles.append(Line2D([], [], color=st["color"], lw=st["lw"], ls=st["ls"], marker=st["marker"], ms=st["ms"],
                              mfc=st["mfc"], mew=st["mew"], label=tex_label(what)))
    if not handles:
        return None
    top = max(ymax * 3, 2.0)
    ax.axhspan(1.0, top, color="#c62828", alpha=0.07, lw=0)
    rf.hline(ax, panel, "ratio 1", 1.0, color="#c62828", lw=1.2, zorder=1.5)
    handles.append(Line2D([], [], color="#c62828", lw=1.2, label="ratio 1: the bound is reached (shaded above: violated)"))
    ax.set_ylim(max(min(ymin / 2, 0.5), 1e-12), top)
    _legend_below(ax, handles=handles, ncol=2,
                  title="line: largest over the instances, band: smallest to largest" if envelope else None)
    rf.caption = ("Measured value divided by the bound at each recorded round"
                  + (f", over the {len(curves)} instances (line: the largest ratio at each round, band: from the "
                     "smallest to the largest)" if envelope else "")
                  + (", one colour, line style and marker per reading of the bound" if several else "")
                  + ". Below the red line (ratio 1) the bound holds; the highest point is how close the bound comes "
                  "to being violated. Points where the measured value is not resolved (within 10x the certified "
                  "accuracy of F*) are not drawn.")
    return rf


def _rate_figure(chk: dict, curves: list[_Curve]) -> ReportFigure | None:
    claimed = _float(chk.get("claimed_rate"))
    if not math.isfinite(claimed):
        return None
    fits = [(c, c.fit) for c in curves if c.fit and math.isfinite(_float(c.fit.get("slope")))]
    fig, axes = _new_figure(ncols=2 if fits else 1, height=FIG_H + 0.35,
                            gridspec_kw={"width_ratios": [3, 2]} if fits else None)
    rf = ReportFigure("rate", "Fitted rate against the claimed rate", "", fig)
    ax = axes[0]
    p0 = "the fit uses the last decade of rounds" if fits else \
        "no usable fit: too few resolved points in the last decade of rounds"
    ax.set_title(p0)
    alpha = 0.9 if len(curves) == 1 else max(0.3, 0.9 / math.sqrt(len(curves)))
    metric_name = (chk.get("formula") or {}).get("metric") or "measured metric"
    _style_log(ax, ylabel=tex_label(metric_name))
    for c in curves:
        rf.line(ax, p0, f"measured, {c.label}", c.k, c.metric, color="0.55", lw=0.9, alpha=alpha)
    handles = [Line2D([], [], color="0.55", lw=1.2, label=f"measured {tex_label(metric_name)}")]
    fitted = _float(chk.get("fitted_rate"))
    if fits:
        for c, f in fits:
            kr = _arr(f.get("k_range"))
            if kr.size == 2 and np.all(np.isfinite(kr) & (kr > 0)):
                kk = np.geomspace(kr[0], kr[1], 20)
                with np.errstate(all="ignore"):       # a fit far outside float range draws nothing, not an error
                    yy = np.exp(_float(f.get("intercept"))) * kk ** _float(f["slope"])
                rf.line(ax, p0, f"fitted line, {c.label}", kk, yy, color="C3", lw=1.0, alpha=0.6)
        k0 = min(_float((f.get("k_range") or [math.nan])[0]) for _, f in fits)
        k1 = max(_float((f.get("k_range") or [math.nan, math.nan])[-1]) for _, f in fits)
        b0 = float(np.mean([_float(f.get("intercept")) for _, f in fits]))
        slope = fitted if math.isfinite(fitted) else float(np.mean([_float(f["slope"]) for _, f in fits]))
        if math.isfinite(k0) and math.isfinite(k1) and k0 > 0 and k1 > 0 and math.isfinite(b0):
            kk = np.geomspace(k0, k1, 30)
            with np.errstate(all="ignore"):
                y0 = np.exp(b0) * np.float64(k0) ** slope
                pooled, ref = np.exp(b0) * kk ** slope, y0 * (kk / k0) ** claimed
            rf.line(ax, p0, "pooled fitted line", kk, pooled, color="C3", lw=2.4, zorder=3)
            rf.line(ax, p0, "claimed rate", kk, ref, color="black", lw=1.8, ls="--", zorder=4)
            handles += [Line2D([], [], color="C3", lw=2.4, label=f"fitted slope {fmt(slope, 3)} (thin: per instance)"),
                        Line2D([], [], color="black", lw=1.8, ls="--",
                               label=f"claimed rate $t^{{{fmt(claimed, 3)}}}$ (same starting point)")]
    _legend_below(ax, handles=handles, ncol=1)
    if fits:
        bx = axes[1]
        p1 = f"rate verdict: {chk.get('rate_verdict') or '-'}"
        bx.set_title(p1)
        xs = np.arange(len(fits), dtype=float)
        s = np.array([_float(f["slope"]) for _, f in fits])
        ci = np.array([_arr(f.get("ci")) if _arr(f.get("ci")).size == 2 else np.array([v, v])
                       for (_, f), v in zip(fits, s)])
        bx.vlines(xs, ci[:, 0], ci[:, 1], color="C3", lw=1.0)
        rf.data += [Drawn(p1, "95% CI low", xs, ci[:, 0]), Drawn(p1, "95% CI high", xs, ci[:, 1])]
        rf.line(bx, p1, "fitted slope per instance", xs, s, color="C3", marker="o", ms=4, ls="none", zorder=3,
                label="fitted slope per instance (95% CI)")
        rf.hline(bx, p1, "claimed rate", claimed, color="black", ls="--", lw=1.4, label=f"claimed {fmt(claimed, 3)}")
        pci = _arr(chk.get("fitted_rate_ci"))
        if pci.size == 2 and np.all(np.isfinite(pci)):
            bx.axhspan(pci[0], pci[1], color="C3", alpha=0.15, lw=0, label="pooled 95% CI")
            rf.data += [Drawn(p1, "pooled 95% CI low", np.array([np.nan]), pci[:1]),
                        Drawn(p1, "pooled 95% CI high", np.array([np.nan]), pci[1:])]
        if math.isfinite(fitted):
            rf.hline(bx, p1, "pooled slope", fitted, color="C3", lw=1.4, label=f"pooled slope {fmt(fitted, 3)}")
        bx.set_xticks(xs)
        bx.set_xticklabels([str(c.seed) if c.seed is not None else str(q + 1) for q, (c, _) in enumerate(fits)],
                           fontsize=6 if len(fits) > 12 else 7)
        bx.set_xlabel("instance (seed)")
        bx.set_ylabel("log-log slope")
        bx.grid(True, alpha=0.3, lw=0.5)
        _legend_below(bx, ncol=1)
    rf.caption = ("Left: the measured curves with the least-squares lines of log(metric) against log(t) over the last "
                  "decade of rounds (thin: per instance, thick: pooled), and a reference line of the claimed slope "
                  "started at the same point. Right: each instance's fitted slope with its 95% confidence interval "
                  "against the claimed slope. " + _PARAGRAPH_RATE)
    return rf


_ROLE_STYLE = {"measured": dict(ls="-", lw=1.5, zorder=3), "bound": dict(ls="--", lw=1.5, zorder=3.5),
               "reference": dict(ls=":", lw=1.4, zorder=2.5), "baseline": dict(ls="-.", lw=1.3, zorder=2)}
_ROLE_ORDER = {"baseline": 0, "reference": 1, "measured": 2, "bound": 3}


def _common_prefix(labels: list[str]) -> str:
    """The words the labels share, cut at a separator: ``naive averaging, eta=0.1, K=1`` and
    ``naive averaging, eta=1.0, K=1`` give ``naive averaging``."""
    p = os.path.commonprefix(labels)
    if all(lab == p for lab in labels):
        return p
    cut = max(p.rfind(", "), p.rfind(" ("), p.rfind("; "), p.rfind(": "))
    return p[:cut].strip() if cut > 0 else ""


def _series_figures(chk: dict) -> list[ReportFigure]:
    panels: dict[str, list[dict]] = {}
    for s in chk.get("series") or []:
        panels.setdefault(str(s.get("panel") or "series"), []).append(s)
    out = []
    for q, (panel, series) in enumerate(panels.items()):
        logx = any(bool(s.get("logx")) for s in series)
        logy = any(bool(s.get("logy")) for s in series)
        # the curves to draw: identical ones (same role, same points) once
        groups: list[dict] = []
        for i, s in enumerate(series):
            x, y = _arr(s.get("x")), _arr(s.get("y"))
            n = min(x.size, y.size)
            x, y = x[:n], y[:n].copy()
            ok = np.isfinite(x) & np.isfinite(y)
            if logx:
                ok &= x > 0
            if logy:
                ok &= y > 0
            if not ok.any():
                continue
            x, y = np.where(ok, x, np.nan), np.where(ok, y, np.nan)
            role = s.get("role") or "measured"
            label = _plain(s.get("label") or f"series {i + 1}")
            for g in groups:
                if g["role"] == role and np.array_equal(g["x"], x, equal_nan=True) \
                        and np.array_equal(g["y"], y, equal_nan=True):
                    g["labels"].append(label)
                    break
            else:
                groups.append({"i": i, "role": role, "x": x, "y": y, "labels": [label]})
        fig, (ax,) = _new_figure(height=FIG_H + 0.15 * math.ceil(max(len(groups), 1) / 2))
        rf = ReportFigure(f"series-{q + 1}", panel, "", fig)
        notes = []
        if logx:
            ax.set_xscale("log")
            _log_ticks(ax.xaxis)
        if logy:
            ax.set_yscale("log")
            _log_ticks(ax.yaxis)
        for gi, g in sorted(enumerate(groups), key=lambda t: (_ROLE_ORDER.get(t[1]["role"], 2), t[0])):
            role, labels = g["role"], g["labels"]
            name = labels[0]
            if len(labels) > 1:
                name = f"{_common_prefix(labels) or labels[0]} (×{len(labels)}, identical)"
                notes.append(f"'{name}' is {len(labels)} identical curves, drawn once: " + "; ".join(labels) + ".")
            style = dict(_ROLE_STYLE.get(role, _ROLE_STYLE["measured"]))
            colour = "0.4" if role == "reference" else f"C{gi % 10}"
            marker = _READING_MARKERS[gi % len(_READING_MARKERS)] if len(groups) > 1 else None
            lab = tex_label(name)
            rf.line(ax, panel, name if role == "measured" else f"{name} ({role})", g["x"], g["y"], color=colour,
                    marker=marker, markevery=(0.02 + 0.08 * gi / max(len(groups), 1), 0.08), ms=3.2, mfc="none",
                    mew=0.8, label=f"{lab} ({role})" if role != "measured" else lab, **style)
        ax.set_xlabel(tex_label(series[0].get("xlabel") or "x"))
        ax.set_ylabel(tex_label(series[0].get("ylabel") or "y"))
        ax.grid(True, alpha=0.3, lw=0.5)
        if groups:
            _legend_below(ax, ncol=2)
        else:
            ax.text(0.5, 0.5, "no finite point to draw", ha="center", va="center", transform=ax.transAxes)
            ax.legend(handles=[Line2D([], [], color="none", label="no curve")], loc="upper right", frameon=False)
        ax.set_title(tex_label(panel))
        roles = sorted({s.get("role") or "measured" for s in series})
        rf.caption = (f"Panel '{panel}': {len(series)} curve(s) from the check's series ("
                      + ", ".join(roles) + "). Solid: measured, dashed: bound, dotted: reference, dash-dot: baseline; "
                      "each curve has its own markers. " + " ".join(notes))
        out.append(rf)
    return out


def check_figures(chk: dict, slots=None) -> list[ReportFigure]:
    """Every figure of one check, generically from its result dict (not yet rendered: see :func:`figure_svg`).
    ``slots``: build only the figures of these slots (0 bound, 1 rate, 2 ratio, 3 the series figures) -- a
    renderer drawing part of a check's figures builds no other."""
    figs: list[ReportFigure | None] = []
    want = (lambda k: True) if slots is None else (lambda k: k in slots)
    with matplotlib.rc_context(_RC):
        curves = _curves(chk) if any(want(k) for k in (0, 1, 2)) else []
        if curves:
            readings = _reading_info(chk, curves)
            figs.append(_bound_figure(chk, curves, readings) if want(0) else None)
            figs.append(_rate_figure(chk, curves) if want(1) else None)
            figs.append(_ratio_figure(chk, curves, readings) if readings and want(2) else None)
        if want(3):
            figs += _series_figures(chk)
    return [f for f in figs if f is not None]


# ------------------------------------------------------------------------------------------------
# the content of a check's report, shared by the HTML and the PDF
def _table(title, columns, rows, note="") -> dict:
    return {"title": title, "columns": [str(c) for c in columns],
            "rows": [[c if isinstance(c, dict) else fmt(c) for c in r] for r in rows], "note": note}


def _verdict_cell(v) -> dict:
    return {"text": fmt(v), "tone": tone(v) if isinstance(v, str) else "unknown", "verdict": True}


def _cell_text(c) -> str:
    return c["text"] if isinstance(c, dict) else str(c)


_MAX_LIST = 24          # values of a long list shown in a cell (the JSON keeps them all)
_MAX_ROWS = 60          # rows of an evidence table (the JSON keeps them all)


def _simple(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _cell(v) -> str:
    """A value as a table cell: numbers to 4 significant digits, long lists cut (the JSON has them all)."""
    if isinstance(v, list) and all(_simple(x) for x in v):
        if len(v) > _MAX_LIST:
            return fmt(v[:_MAX_LIST]) + f", ... ({len(v)} values)"
        return fmt(v) if len(v) != 2 else "[" + ", ".join(fmt(x) for x in v) + "]"
    if isinstance(v, list) and all(isinstance(x, list) and all(_simple(y) for y in x) for x in v):
        rows = "; ".join("[" + ", ".join(fmt(y) for y in x[:_MAX_LIST]) + "]" for x in v[:8])
        return rows + (f"; ... ({len(v)} rows)" if len(v) > 8 else "")
    if isinstance(v, dict) and all(_simple(x) for x in v.values()):
        return "; ".join(f"{_human(k)}: {fmt(x)}" for k, x in v.items())
    if isinstance(v, (dict, list)):
        return f"({len(v)} entries; in the results JSON)"
    return fmt(v)


def _flat(val) -> bool:
    """A value a table cell shows in full (a scalar, a list of scalars, a short matrix, a dict of scalars)."""
    return _simple(val) or (isinstance(val, list) and all(_simple(x) for x in val)) or \
        (isinstance(val, dict) and all(_simple(x) for x in val.values()) and len(val) <= 6)


def _rows_table(title: str, records: list[tuple[str, dict]] | list[dict], named: bool) -> dict:
    cols: list = []
    for rec in (r for _, r in records) if named else records:
        cols += [c for c in rec if c not in cols]
    rows = []
    for item in records[:_MAX_ROWS]:
        name, rec = item if named else (None, item)
        cells = [_verdict_cell(rec.get(c)) if c == "verdict" else _cell(rec.get(c)) for c in cols]
        rows.append(([name] if named else []) + cells)
    note = f"{len(records) - _MAX_ROWS} more rows in the results JSON" if len(records) > _MAX_ROWS else ""
    return _table(title, (["name"] if named else []) + [_human(c) for c in cols], rows, note)


def _evidence_blocks(ev: dict) -> tuple[list[tuple[str, str]], list[dict]]:
    """Free-form evidence as a person reads it: scalars as a list, everything else as tables (maps and lists of
    records, nested maps flattened a level at a time), numbers to 4 significant digits -- the raw values stay in the
    results JSON; nothing is dumped as JSON."""
    scalars, tables = [], []

    def walk(title: str, val, depth: int) -> None:
        if isinstance(val, dict) and val and all(isinstance(v, dict) for v in val.values()) \
                and all(_flat(x) for v in val.values() for x in v.values()):
            tables.append(_rows_table(title, list(val.items()), named=True))
        elif isinstance(val, list) and val and all(isinstance(v, dict) for v in val) \
                and all(_flat(x) for v in val for x in v.values()):
            tables.append(_rows_table(title, val, named=False))
        elif isinstance(val, dict):
            flat = [(k, v) for k, v in val.items() if _flat(v)]
            if flat:
                tables.append(_table(title, ["name", "value"],
                                     [[_human(k), _verdict_cell(v) if k == "verdict" else _cell(v)] for k, v in flat]))
            for k, v in val.items():
                if not _flat(v):
                    if depth < 3:
                        walk(f"{title}: {_human(k)}", v, depth + 1)
                    else:
                        tables.append(_table(f"{title}: {_human(k)}", ["value"], [[_cell(v)]]))
        else:
            tables.append(_table(title, ["value"], [[_cell(val)]]))

    for key, val in (ev or {}).items():
        if _simple(val) or (isinstance(val, list) and len(val) <= 4 and all(_simple(x) for x in val)):
            scalars.append((_human(key), _cell(val)))
        elif isinstance(val, list) and all(_simple(x) for x in val):
            scalars.append((_human(key), _cell(val)))
        else:
            walk(_title(key), val, 1)
    return scalars, tables


def _human(key) -> str:
    return str(key).replace("_", " ")


def _title(key) -> str:
    h = _human(key)
    return h[:1].upper() + h[1:]


def _unique(seq):
    return list(dict.fromkeys(seq))


def check_context(chk: dict, doc: dict) -> dict:
    """Everything the templates (and the PDF) show for one check, formatted."""
    prov = chk["provenance"] if isinstance(chk.get("provenance"), dict) else (doc.get("provenance") or {})
    formula = chk.get("formula") or {}
    instances = [i for i in (chk.get("instances") or []) if isinstance(i, dict)]
    verdict = chk["verdict"]
    ctx: dict[str, Any] = {
        "id": chk["id"], "title": chk.get("title") or chk["id"], "paper": chk.get("paper") or "",
        "reference": chk.get("reference") or "", "claim": chk.get("claim") or "", "kind": chk.get("kind") or "",
        "verdict": chk.get("headline") or verdict, "tone": tone(verdict),
        "meaning": _MEANING.get(verdict, "") + (f" (verdict: {verdict})" if chk.get("headline") not in (None, "", verdict) else ""),
        "reason": chk.get("reason") or "", "assumptions": [str(a) for a in chk.get("assumptions") or []],
        "params": [(k, fmt(v)) for k, v in (chk.get("params") or {}).items()],
    }
    # --- summary facts
    facts = []
    if chk.get("max_ratio") is not None:
        facts.append(("largest measured / bound (paper's readings)", fmt(chk.get("max_ratio"))))
    if chk.get("claimed_rate") is not None:
        facts.append(("rate: fitted (95% CI) vs claimed",
                      f"{fmt(chk.get('fitted_rate'), 3)} {fmt(chk.get('fitted_rate_ci')) if chk.get('fitted_rate_ci') else ''}"
                      f" vs {fmt(chk.get('claimed_rate'), 3)}: {chk.get('rate_verdict') or '-'}"))
    feas = chk.get("feasibility") or {}
    if feas:
        facts.append(("feasibility (server point stays in the set)",
                      f"{feas.get('verdict', '-')}" + (f", {feas['infeasible_instances']} infeasible instance(s)"
                                                       if feas.get("infeasible_instances") else "")))
    ev = chk.get("evidence") or {}
    if instances:
        facts.append(("instances", str(len(instances))))
    if chk.get("seconds") is not None:
        facts.append(("time", f"{fmt(chk.get('seconds'), 3)} s"))
    ctx["facts"] = facts
    # --- formulas
    bound = formula.get("bound")
    ctx["metric"] = formula.get("metric") or ""
    ctx["metric_description"] = formula.get("metric_description") or ""
    ctx["valid_from"] = fmt(formula.get("valid_from")) if formula.get("valid_from") not in (None, 1) else ""
    ctx["bound"] = _formula(bound, formula.get("bound_text"), 22) if (bound or formula.get("bound_text")) else None
    ctx["schedules"] = [(name, _schedule_formula(name, tex, chk.get("params") or {}))
                        for name, tex in (formula.get("schedules") or {}).items()]
    readings = []
    for name, d in (formula.get("readings") or {}).items():
        d = d or {}
        subs = [_formula(v, f"{k} = {v}", 17, lhs=_latex_name(k)) for k, v in (d.get("substitutions") or {}).items()]
        readings.append({"name": name, "paper": bool(d.get("paper", True)), "description": d.get("description", ""),
                         "subs": subs, "full": _formula(d.get("latex"), d.get("latex"), 18)})
    if len(readings) == 1 and not readings[0]["subs"] and not readings[0]["description"]:
        readings = []   # a single reading "as stated": nothing to add to the bound above
    ctx["formula_readings"] = readings
    ctx["printed_formulas"] = printed_formulas(formula.get("printed") or {})
    # --- verdict evidence
    rtab = []
    for name, d in (chk.get("readings") or {}).items():
        d = d or {}
        rtab.append([name, "the paper" if d.get("paper", True) else "analysis", d.get("description", ""),
                     _verdict_cell(d.get("verdict")), ratio_text(d), source_text(d),
                     fmt(d.get("violated_instances")), fmt(d.get("inconclusive_instances"))])
    ctx["readings_table"] = _table("Readings of the bound", ["reading", "from", "meaning", "verdict",
                                                             "max measured / bound", "where the paper says it",
                                                             "violated on", "inconclusive on"], rtab,
                                   "Only readings from the paper can refute it, and only in the setting the paper "
                                   "states; analyses (a repair, another setting) are reported beside them.") \
        if rtab else None
    ctx["symbolic_table"] = _table("Symbolic claims (SymPy)", ["claim", "verdict", "evidence"],
                                   [[s.get("name", ""), _verdict_cell(s.get("verdict")), s.get("evidence", "")]
                                    for s in chk.get("symbolic") or [] if isinstance(s, dict)]) \
        if chk.get("symbolic") else None
    rate = None
    if chk.get("claimed_rate") is not None:
        rate = _table("Rate", ["claimed rate", "fitted rate", "95% CI", "verdict"],
                      [[chk.get("claimed_rate"), chk.get("fitted_rate"), chk.get("fitted_rate_ci"),
                        _verdict_cell(chk.get("rate_verdict"))]], _PARAGRAPH_RATE)
    ctx["rate_table"] = rate
    ctx["feasibility_table"] = _table("Feasibility", ["name", "value"],
                                      [[_human(k), _verdict_cell(v) if k == "verdict" else fmt(v)] for k, v in feas.items()]) \
        if feas else None
    ctx["evidence_scalars"], ctx["evidence_tables"] = _evidence_blocks(ev)
    ctx["saved_instances"] = [str(p) for p in chk.get("saved_instances") or []]
    # --- the check's own tables
    ctx["tables"] = [_table(str(t.get("title") or f"table {q + 1}"), t.get("columns") or [],
                            [list(r) for r in t.get("rows") or []])
                     for q, t in enumerate(chk.get("tables") or [])]
    # --- per-instance results, constants, solver
    ctx["instance_table"], ctx["constants_table"], ctx["symbols_table"] = _instance_tables(chk, instances)
    ctx["families"] = _unique(str((i.get("instance") or {}).get("source")) for i in instances
                              if isinstance(i.get("instance"), dict) and (i.get("instance") or {}).get("source"))
    # --- provenance
    seeds = prov.get("seeds")
    if seeds is None and instances:
        seeds = [i.get("seed") for i in instances]
    statuses = {}
    for i in instances:
        s = (i.get("solver") or {}).get("status") if isinstance(i.get("solver"), dict) else None
        if s is not None:
            statuses[s] = statuses.get(s, 0) + 1
    solver_versions = _unique(str((i.get("solver") or {}).get("version")) for i in instances
                              if isinstance(i.get("solver"), dict) and (i.get("solver") or {}).get("version"))
    prows = [("results file", str(chk["source"]))] if chk.get("source") else []
    prows += [("command (reproduces this run)", prov.get("command") or "-"),
             ("created", prov.get("created") or "-"),
             ("fedcheck", fmt(prov.get("fedcheck"))), ("git commit", fmt(prov.get("git"))),
             ("python", fmt(prov.get("python"))), ("platform", fmt(prov.get("platform"))),
             ("solver", fmt(prov.get("solver")))]
    if statuses:
        prows.append(("solver status", ", ".join(f"{k} ({v} instance{'s' if v != 1 else ''})" for k, v in statuses.items())))
    if solver_versions:
        prows.append(("solver versions", ", ".join(solver_versions)))
    prows.append(("seeds", fmt(seeds) if seeds is not None else "-"))
    if ctx["params"]:
        prows.append(("parameters", ", ".join(f"{k} = {v}" for k, v in ctx["params"])))
    if ev.get("rounds") is not None:
        prows.append(("rounds", fmt(ev.get("rounds"))))
    for name, ver in (prov.get("packages") or {}).items():
        prows.append((f"package {name}", fmt(ver)))
    ctx["provenance"] = prows
    ctx["command"] = check_command(chk, prov)
    reruns = {e.get("instance"): e.get("command") for e in chk.get("rerun") or [] if isinstance(e, dict)}
    ctx["saved_instances"] = [{"path": p, "command": reruns.get(p) or ""} for p in ctx["saved_instances"]]
    return ctx


def check_command(chk: dict, prov: dict) -> str:
    """The command that reruns this one check as the run did (its theorem files, seeds, rounds, parameters,
    instances, mode: the run's ``provenance.run``); ``""`` for a document that does not say how it was run."""
    from fedcheck.core.results import verify_command
    run = prov.get("run") if isinstance(prov.get("run"), dict) else None
    if run is None and not prov.get("command"):
        return ""
    if run is None:
        cmd = str(prov.get("command"))
        if not cmd.startswith("fedcheck verify ") or " --" in cmd or " -j" in cmd:
            return ""           # an older document with options: only the whole run's command is known
        run = {}
    return verify_command(chk["id"], run, check_params=chk.get("params"))


def ratio_text(d: dict) -> str:
    """A reading's largest measured / bound, said honestly: where every violation is at a point where the bound
    vanishes, the ratio is undefined there and the excess is what shows the violation."""
    if d.get("ratio_undefined_where_violated"):
        ex = d.get("max_excess_where_ratio_undefined")
        return ("undefined where violated (the bound vanishes there" +
                (f"; excess {fmt(ex)})" if ex is not None else ")") +
                (f"; elsewhere {fmt(d.get('max_ratio'))}" if d.get("max_ratio") is not None else ""))
    return fmt(d.get("max_ratio"))


def source_text(d: dict) -> str:
    """The paper's words for a reading, their place and setting (and how the tested setting differs)."""
    src = d.get("source") if isinstance(d.get("source"), dict) else None
    parts = []
    if src:
        parts.append(f"\u201c{src.get('quote', '')}\u201d ({src.get('place', '')}; setting: {src.get('setting', '')})")
    if d.get("deviation"):
        parts.append(f"tested outside it: {d['deviation']}")
    return " ".join(parts) if parts else ("-" if not d.get("paper", True) else "(no source given)")


def printed_formulas(printed: dict) -> list[dict]:
    """The paper's printed formula beside the one tested, with SymPy's verdict on their equality."""
    out = []
    for name, rec in (printed or {}).items():
        if not isinstance(rec, dict):
            continue
        out.append({"bound": name, "verdict": rec.get("verdict") or "-", "tone": {"equal": "good", "differs": "bad"}.get(
                        rec.get("verdict"), "unknown"),
                    "paper": _formula(rec.get("latex"), rec.get("latex"), 17),
                    "tested": _formula(rec.get("declared_latex"), rec.get("declared"), 17),
                    "evidence": rec.get("evidence") or "", "note": rec.get("note") or "",
                    "difference": rec.get("difference") if rec.get("verdict") != "equal" else ""})
    return out


def _latex_name(name: str) -> str:
    """A SymPy symbol name as mathtext (``lambda_0`` -> ``\\lambda_{0}``)."""
    greek = {"alpha", "beta", "gamma", "delta", "epsilon", "eta", "theta", "lambda", "mu", "nu", "rho", "sigma",
             "tau", "phi", "psi", "omega", "kappa", "xi", "zeta"}
    base, _, sub = name.partition("_")
    base = "\\" + base if base in greek else base
    return f"{base}_{{{sub.replace('_', ' ')}}}" if sub else base


def _schedule_formula(name: str, tex, params: dict) -> dict:
    """A schedule as ``name_t = its expression``; a schedule that is one of the claim's parameters (``eta_g`` set to
    the parameter ``eta_g``) as ``eta_g = its value``, never ``eta_g = eta_g``."""
    bare = str(tex or "").replace(" ", "")
    for p, v in params.items():
        if bare in (p, _latex_name(p).replace(" ", ""), _latex_name(p).replace(" ", "").replace("{", "").replace("}", "")):
            value = fmt(v, 6)
            return _formula(value, f"{name} = {value} (the parameter {p})", 18, lhs=_latex_name(name))
    return _formula(tex, f"{name} = {tex}", 18, lhs=_sched_lhs(name))


def _sched_lhs(name: str) -> str:
    short = {"lam": "lambda"}.get(name, name)
    return f"{_latex_name(short)}_{{t}}" if "_" not in short else _latex_name(short)


def _instance_tables(chk: dict, instances: list[dict]):
    if not instances:
        return None, None, None
    reading_names = _unique(n for i in instances for n in (i.get("readings") or {}))
    has_feas = any(isinstance(i.get("feasibility"), dict) for i in instances)
    has_fit = any(isinstance(i.get("fit"), dict) for i in instances)
    cols = ["instance"] + [f"{n}: verdict, max ratio" for n in reading_names]
    cols += (["feasible"] if has_feas else []) + (["fitted slope"] if has_fit else []) + ["note"]
    rows = []
    for j, inst in enumerate(instances):
        row: list[Any] = [_instance_label(inst, j)]
        for n in reading_names:
            d = (inst.get("readings") or {}).get(n) or {}
            if d.get("violations") and d.get("violations_where_ratio_undefined") == d.get("violations"):
                # every violation is where the bound vanishes: its size is the excess, the ratio is undefined there
                txt = (f"{fmt(d.get('verdict'))}, ratio undefined where violated (bound vanishes; excess "
                       f"{fmt(d.get('max_excess_where_ratio_undefined'))})")
            else:
                txt = f"{fmt(d.get('verdict'))}, {fmt(d.get('max_ratio_where_bound_not_negligible', d.get('max_ratio')))}"
            if d.get("first_violation_round") is not None:
                txt += f" (first at t={fmt(d['first_violation_round'])})"
            row.append({"text": txt, "tone": tone(d.get("verdict")), "verdict": True})
        if has_feas:
            f = inst.get("feasibility") or {}
            row.append({"text": fmt(f.get("verdict")), "tone": tone(f.get("verdict")), "verdict": True})
        if has_fit:
            f = inst.get("fit") or {}
            row.append(fmt(f.get("slope"), 3) if f else "too few points")
        notes = [str(inst["inconclusive_reason"])] if inst.get("inconclusive_reason") else []
        for sc in inst.get("side_conditions") or []:
            if isinstance(sc, dict) and sc.get("verdict") not in (V.HOLDS, None):
                notes.append(f"{sc.get('name')}: {sc.get('verdict')}")
        row.append("; ".join(notes) or "-")
        rows.append(row)
    inst_table = _table("Per-instance results", cols, rows,
                        "max ratio: largest measured / bound over the recorded rounds where the bound applies.")
    const_names = _unique(n for i in instances for n in (i.get("constants") or {}))
    ccols = ["instance", "F*", "certified accuracy of F*", "solver status"] + const_names
    crows, any_inexact = [], False
    for j, inst in enumerate(instances):
        row = [_instance_label(inst, j), fmt(inst.get("F_star"), 8), fmt(inst.get("F_star_certified_accuracy"), 2),
               (inst.get("solver") or {}).get("status", "-") if isinstance(inst.get("solver"), dict) else "-"]
        for n in const_names:
            c = (inst.get("constants") or {}).get(n)
            if not isinstance(c, dict):
                row.append(fmt(c))
                continue
            exact = c.get("exact", True)
            any_inexact |= not exact
            row.append(fmt(c.get("value")) + ("" if exact else " (upper bound)"))
        crows.append(row)
    note = ("Every constant is exact on every instance." if not any_inexact else
            "'(upper bound)': the constant is not exact (its exact flag is false); the value is a certified upper "
            "bound. All other values are exact.")
    const_table = _table("Instance constants", ccols, crows, note) if crows else None
    srows = []
    for n in const_names:
        recs = [(i.get("constants") or {}).get(n) for i in instances]
        recs = [r for r in recs if isinstance(r, dict)]
        notes = _unique(str(r.get("note") or "") for r in recs)
        exact = sum(bool(r.get("exact", True)) for r in recs)
        srows.append([n, notes[0] + (f" [{_instance_label(instances[0], 0)}; the note differs between instances]"
                                     if len(notes) > 1 else ""),
                      f"{exact} of {len(recs)}"])
    sym_table = _table("What the constants are", ["constant", "meaning", "exact on"], srows) if srows else None
    return inst_table, const_table, sym_table


# ------------------------------------------------------------------------------------------------
# HTML
@functools.lru_cache(maxsize=1)
def _env():
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["title_html"] = title_html
    return env


_GREEK = {"alpha": "\u03b1", "beta": "\u03b2", "gamma": "\u03b3", "Gamma": "\u0393", "delta": "\u03b4",
          "Delta": "\u0394", "eps": "\u03b5", "epsilon": "\u03b5", "zeta": "\u03b6", "eta": "\u03b7",
          "theta": "\u03b8", "kappa": "\u03ba", "lambda": "\u03bb", "Lambda": "\u039b", "mu": "\u03bc",
          "rho": "\u03c1", "sigma": "\u03c3", "Sigma": "\u03a3", "tau": "\u03c4", "phi": "\u03c6",
          "Phi": "\u03a6", "psi": "\u03c8", "omega": "\u03c9"}
_GREEK_RE = re.compile(r"(?<![A-Za-z])(" + "|".join(sorted(_GREEK, key=len, reverse=True)) + r")(?![A-Za-z])")
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
    s = _GREEK_RE.sub(lambda m: _GREEK[m.group(1)], s)
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
    return _env().get_template("check.html.j2").render(c=ctx, figures=figures, links=links, print_fonts=fonts)


def render_index_html(doc: dict, entries: list[dict]) -> str:
    prov = doc.get("provenance") or {}
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
    sources = prov.get("sources") if isinstance(prov.get("sources"), list) else []
    return _env().get_template("index.html.j2").render(
        entries=entries, prov=prov, counts=counts, command=prov.get("command") or "",
        created=prov.get("created") or "", sources=sources, merged=bool(sources),
        results_link=doc.get("results_link") or "results.json")


# ------------------------------------------------------------------------------------------------
# PDF: the HTML page through WeasyPrint
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


class _QuietLogs:
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


class _FixedFontDates:
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
    with _QuietLogs(), _FixedFontDates():
        wp.HTML(string=html, base_url=str(Path(path).parent)).write_pdf(str(path))


# ------------------------------------------------------------------------------------------------
# the notebook card
def _inline_svg(svg: str, prefix: str) -> str:
    """An SVG document as an element to put inside an HTML page: no XML prolog, ids made unique with
    ``prefix``, scaled to the width of its container."""
    s = re.sub(r"^\s*<\?xml[^>]*\?>\s*", "", svg)
    s = re.sub(r"<!DOCTYPE[^>]*>\s*", "", s)
    s = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', s)
    s = re.sub(r'(xlink:href|href)="#([^"]+)"', lambda m: f'{m.group(1)}="#{prefix}-{m.group(2)}"', s)
    s = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", s)
    s = re.sub(r'<svg([^>]*?)\swidth="[^"]*"([^>]*?)\sheight="[^"]*"', r'<svg\1\2 style="max-width:100%;height:auto"',
               s, count=1)
    return s


def card_html(check: dict, figure: bool = True) -> str:
    """A self-contained HTML fragment for one result dict (Jupyter's ``_repr_html_``): the verdict badge, the
    title, the headline, the reason, the readings (paper or analysis), the rate, the feasibility
    (:func:`card_facts_html`) and the check's main figure as inline SVG.  No script, no external resource."""
    import hashlib
    import html as _h
    colour = _TONE_COLOUR[tone(check.get("verdict"))]
    fig_html = ""
    try:
        figs = check_figures(check) if figure else []
    except Exception:           # a result no figure can be drawn for still has its card
        figs = []
    try:
        if figs:
            svg = figure_svg(figs[0].figure)
            prefix = "fc" + hashlib.sha1((str(check.get("id")) + svg).encode("utf-8")).hexdigest()[:10]
            fig_html = (f'<figure style="margin:8px 0 0 0">{_inline_svg(svg, prefix)}'
                        f'<figcaption style="font-size:0.85em;color:#57606a">{_h.escape(figs[0].title)}'
                        f'</figcaption></figure>')
    finally:
        for rf in figs:
            rf.figure.clear()
    title = title_html(check.get("title") or check.get("id") or "")
    ref = " &middot; ".join(_h.escape(str(x)) for x in (check.get("paper"), check.get("reference")) if x)
    return (f'<div class="fedcheck-card" style="border:1px solid #d0d7de;border-left:6px solid {colour};'
            f'border-radius:6px;padding:8px 14px;margin:8px 0;font-family:sans-serif;max-width:820px">'
            f'<div><span class="fedcheck-badge" style="display:inline-block;background:{colour};color:#fff;'
            f'font-weight:bold;border-radius:5px;padding:1px 9px;margin-right:8px">'
            f'{_h.escape(str(check.get("verdict") or ""))}</span>'
            f'<b>{title}</b> <code style="color:#57606a">{_h.escape(str(check.get("id") or ""))}</code></div>'
            + (f'<div style="color:#57606a;font-size:0.9em">{ref}</div>' if ref else "")
            + card_facts_html(check) + fig_html + "</div>")


def card_facts_html(check: dict) -> str:
    """The card's body: the headline (where it says more than the verdict), why, the readings or findings (paper or
    analysis, verdict, largest measured / bound), the rate (fitted with its interval against the claimed one) and
    the feasibility of the iterates."""
    import html as _h
    esc = lambda x: _h.escape(str(x))        # noqa: E731
    p = 'style="margin:4px 0"'
    out = []
    verdict, head = check.get("verdict") or "", check.get("headline") or ""
    if head and head != verdict:
        out.append(f'<p class="fedcheck-headline" {p}><b>{esc(head)}</b></p>')
    if check.get("reason"):
        out.append(f'<p {p}><b>Why:</b> {esc(check["reason"])}</p>')
    rows = []
    for name, d in (check.get("readings") or {}).items():
        d = d if isinstance(d, dict) else {}
        v = d.get("verdict") or ""
        rows.append(f'<tr><td>{esc(name)}</td><td>{"paper" if d.get("paper", True) else "analysis"}</td>'
                    f'<td style="color:{_TONE_COLOUR[tone(v)]};font-weight:bold">{esc(v)}</td>'
                    f'<td>{esc(ratio_text(d))}</td></tr>')
    if rows:
        cell = 'style="text-align:left;padding:1px 8px"'
        out.append(f'<table class="fedcheck-readings" style="border-collapse:collapse;font-size:0.9em;margin:4px 0">'
                   f'<tr><th {cell}>reading / finding</th><th {cell}>from</th><th {cell}>verdict</th>'
                   f'<th {cell}>max measured / bound</th></tr>{"".join(rows)}</table>')
    facts = []
    if check.get("max_ratio") is not None:
        facts.append(f"largest measured / bound (paper's readings): {esc(fmt(check.get('max_ratio')))}")
    if check.get("claimed_rate") is not None:
        ci = check.get("fitted_rate_ci")
        pre = ((check.get("evidence") or {}).get("rate") or {}).get("pre_asymptotic")
        facts.append(f"rate: fitted {esc(fmt(check.get('fitted_rate'), 3))}"
                     + (f" (95% CI {esc(fmt(ci))})" if ci else "")
                     + f" vs claimed {esc(fmt(check.get('claimed_rate'), 3))}: "
                     + esc("pre-asymptotic" if pre else check.get("rate_verdict") or "-"))
    feas = check.get("feasibility") or {}
    if feas.get("verdict"):
        facts.append(f"feasibility of the iterates: {esc(feas['verdict'])}"
                     + (f" ({esc(feas['infeasible_instances'])} infeasible instance(s))"
                        if feas.get("infeasible_instances") else "")
                     + ("" if feas.get("decides", True) else " (reported, does not decide)"))
    if facts:
        out.append(f'<p class="fedcheck-facts" style="margin:4px 0;color:#57606a">{"<br>".join(facts)}</p>')
    return "".join(out)


# ------------------------------------------------------------------------------------------------
# the pieces of the report phase (fedcheck.render.write_reports runs them here or in renderer processes)
def pdf_status() -> str | None:
    """``None`` when PDFs can be made here, else the one warning line saying why not."""
    try:
        pdf_engine()
        return None
    except PdfUnavailable as e:
        return str(e)


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
                (d / f"{base}.pdf").write_bytes(_figure_pdf(rf.figure))
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


_SVG_BOX = re.compile(r'<svg\b[^>]*?\swidth="([^"]*)"[^>]*?\sheight="([^"]*)"[^>]*?\sviewBox="([^"]*)"')


def _svg_box(svg: str) -> tuple | None:
    m = _SVG_BOX.search(svg)
    return m.groups() if m else None


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


def _pdf_laid_out_first(html: str, holders: dict[str, tuple[str, str]], real: Callable[[], dict[str, str]],
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
    with _QuietLogs():
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
    with _QuietLogs(), _FixedFontDates():
        document.write_pdf(str(path))
    return True


def check_page(chk: dict, provenance, figures: list | None, links: dict, tmp: str, stem: str, pdf: bool) -> dict:
    """The check's page ``tmp/<stem>.html`` and, when ``pdf``, the same page laid out for print
    ``tmp/<stem>.pdf``; returns the check's entry of the index.

    ``figures=None``: the figures are being drawn at the same time by :func:`draw_figures` (``parts=1``, into
    ``tmp/<stem>``) in another renderer.  This piece then lays the print page out with placeholders of the
    figures' sizes while they are drawn, and waits for them only to paint (see :func:`_pdf_laid_out_first`).
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
            done = _pdf_laid_out_first(render_check_html(ctx, plan, links, for_print=True), holders, real, out,
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
    fig, (ax,) = _new_figure()
    ax.plot([1, 2], [1, 2])
    ax.set_title(r"warm $t^{-1/2}$")
    _style_log(ax)          # the x label of nearly every figure: its mathtext parsed here (the parse cache is shared)
    svg = figure_svg(fig)
    _env().get_template("check.html.j2")
    try:
        wp = pdf_engine()
    except PdfUnavailable:
        return
    fo = FigureOut("warm", "warm", "", svg, (1.0, 1.0))
    css = (TEMPLATES / "style.css").read_text(encoding="utf-8")
    html = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{css}</style></head><body><h1>warm</h1>"
            f"<p>warm <code>up</code></p><table><tr><td>1</td></tr></table><img src='{fo.svg_uri}'></body></html>")
    with _QuietLogs(), _FixedFontDates():
        wp.HTML(string=html).write_pdf()
