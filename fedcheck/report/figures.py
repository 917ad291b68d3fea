"""The figures of a check, drawn by matplotlib: measured curves against the bound, the fitted rate against the
claimed one, the measured/bound ratio and the check's own series; each drawn once as SVG (:func:`figure_svg`) and
recorded as data (:meth:`ReportFigure.csv_text`)."""
from __future__ import annotations

import base64
import csv
import functools
import io
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fedcheck.core import verdict as V
from fedcheck.report.common import PARAGRAPH_RATE, fmt, instance_label, to_array, to_float
from fedcheck.report.pdf import QuietLogs
from fedcheck.report.typeset import plain_label, split_tspans, tex_label

RESOLUTION_FACTOR = V.POLICY.resolution_factor
FIG_W = 7.0                     # inches: a full text width in a two-column paper
FIG_H = 3.3                     # one row of panels (the legends below them add to it)
_READING_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                    "#bcbd22"]   # grey is the measured metric
_READING_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]
THIN_BINS = 160                 # columns per x range when a dense curve is thinned for drawing (see _thin_mask)
COINCIDE = 0.05                 # two bounds within 5% of each other everywhere "coincide" (said in the legend)
# the look of every figure (sizes in points, as printed at FIG_W inches)
_RC = {"font.size": 8.0, "axes.titlesize": 8.5, "axes.labelsize": 8.0, "legend.fontsize": 7.0,
       "xtick.labelsize": 7.0, "ytick.labelsize": 7.0, "mathtext.fontset": "dejavusans",
       "font.family": "DejaVu Sans", "svg.fonttype": "none", "svg.hashsalt": "fedcheck", "pdf.fonttype": 42, "axes.linewidth": 0.6,
       "lines.markersize": 3.5, "legend.handlelength": 2.6, "path.simplify": True}


def drop_unresolved(metric, accuracy, factor: float = RESOLUTION_FACTOR) -> tuple[np.ndarray, int]:
    """The metric with points at or below ``factor * accuracy`` (or non-positive, or not finite)
    replaced by NaN so that curves stop where ``F*`` no longer resolves them; and how many of the
    finite points were dropped."""
    m = np.array(metric, dtype=float, copy=True)
    acc = to_float(accuracy)
    thr = factor * acc if math.isfinite(acc) and acc > 0 else 0.0
    finite = np.isfinite(m)
    bad = finite & (m <= thr)
    m[bad | ~finite] = np.nan
    return m, int(bad.sum())


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
        self.data.append(Drawn(panel, plain_label(curve), x, y, ln))
        return ln

    def hline(self, ax, panel: str, curve: str, y: float, **kw):
        ln = ax.axhline(y, **kw)
        self.data.append(Drawn(panel, plain_label(curve), np.array([np.nan]), np.array([float(y)]), ln))
        return ln

    def band(self, ax, panel: str, curve: str, x, lo, hi, **kw):
        x, lo, hi = _on_scale(x), _on_scale(lo), _on_scale(hi)
        if x.size > 3 * THIN_BINS:
            keep = _thin_mask(x, [lo, hi], ax.get_xscale() == "log")
            x, lo, hi = x[keep], lo[keep], hi[keep]
        art = ax.fill_between(x, lo, hi, **kw)
        self.data.append(Drawn(panel, f"{plain_label(curve)} (band low)", np.asarray(x, float), np.asarray(lo, float), art))
        self.data.append(Drawn(panel, f"{plain_label(curve)} (band high)", np.asarray(x, float), np.asarray(hi, float), art))
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


def new_figure(ncols=1, height=FIG_H, **kw) -> tuple[Figure, list]:
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
    return split_tspans(buf.getvalue().decode("utf-8"))


def matplotlib_pdf(fig: Figure) -> bytes:
    """The figure as a PDF of its own drawn by matplotlib (used when WeasyPrint is not available).  The
    layout of the SVG is kept (constrained layout ran once) so the two files show the same figure."""
    engine = fig.get_layout_engine()
    fig.set_layout_engine("none")
    _views_in_range(fig)
    try:
        buf = io.BytesIO()
        with matplotlib.rc_context(_RC), QuietLogs():
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


def _curves(chk: dict) -> list[_Curve]:
    valid_from = to_float((chk.get("formula") or {}).get("valid_from", 1))
    valid_from = valid_from if math.isfinite(valid_from) else 1.0
    out = []
    for j, inst in enumerate(chk.get("instances") or []):
        k, metric = to_array(inst.get("rounds")), to_array(inst.get("metric"))
        n = min(k.size, metric.size)
        if n == 0:
            continue
        k, metric = k[:n], metric[:n]
        m, dropped = drop_unresolved(metric, inst.get("F_star_certified_accuracy"))
        m[~(k > 0)] = np.nan
        bounds = {}
        for name, b in (inst.get("bound") or {}).items():
            b = to_array(b)
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
        out.append(_Curve(instance_label(inst, j), k, m, dropped, bounds, fit, inst.get("seed"), j))
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


def style_log(ax, xlabel="t (the iterate after t - 1 rounds)", ylabel=""):
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
        vals = [to_float((rd.get(n) or {}).get("max_ratio")) for n in paper]
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
    fig, axes = new_figure(ncols=ncols, height=FIG_H + (0.25 * math.ceil((len(readings) + 1) / 2) if ncols == 2
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
        style_log(ax, ylabel=ylab)
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
        label = instance_label(inst, worst)
        sel = [c for c in curves if c.index == worst][:1]
        paper = [n for n, p in readings if p] or [n for n, _ in readings]
        rd = inst.get("readings") or {}
        top = max(((to_float((rd.get(n) or {}).get("max_ratio")), n) for n in paper),
                  key=lambda x: x[0] if math.isfinite(x[0]) else -math.inf)
        title1 = f"{label}: the largest measured / bound ({fmt(top[0], 3)})"
        axes[1].set_title(title1)
        draw(axes[1], title1, sel, 0.95)
        for n in paper:    # where the paper's bound is first violated on that instance
            t_bad = to_float((rd.get(n) or {}).get("first_violation_round"))
            if math.isfinite(t_bad) and sel:
                c = sel[0]
                q = int(np.argmin(np.abs(c.k - t_bad)))
                y = to_array(inst.get("metric"))[q] if q < len(inst.get("metric") or []) else math.nan
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
    fig, (ax,) = new_figure(height=FIG_H + 0.15 * math.ceil((len(readings) + 1) / 2))
    rf = ReportFigure("ratio", "Ratio measured / bound over rounds", "", fig)
    panel = "measured / bound"
    same_grid = all(c.k.shape == curves[0].k.shape and np.array_equal(c.k, curves[0].k) for c in curves)
    envelope = same_grid and len(curves) > 1
    ymax, ymin, handles = 1.0, math.inf, []
    style_log(ax, ylabel="measured / bound")
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
    claimed = to_float(chk.get("claimed_rate"))
    if not math.isfinite(claimed):
        return None
    fits = [(c, c.fit) for c in curves if c.fit and math.isfinite(to_float(c.fit.get("slope")))]
    fig, axes = new_figure(ncols=2 if fits else 1, height=FIG_H + 0.35,
                           gridspec_kw={"width_ratios": [3, 2]} if fits else None)
    rf = ReportFigure("rate", "Fitted rate against the claimed rate", "", fig)
    ax = axes[0]
    p0 = "the fit uses the last decade of rounds" if fits else \
        "no usable fit: too few resolved points in the last decade of rounds"
    ax.set_title(p0)
    alpha = 0.9 if len(curves) == 1 else max(0.3, 0.9 / math.sqrt(len(curves)))
    metric_name = (chk.get("formula") or {}).get("metric") or "measured metric"
    style_log(ax, ylabel=tex_label(metric_name))
    for c in curves:
        rf.line(ax, p0, f"measured, {c.label}", c.k, c.metric, color="0.55", lw=0.9, alpha=alpha)
    handles = [Line2D([], [], color="0.55", lw=1.2, label=f"measured {tex_label(metric_name)}")]
    fitted = to_float(chk.get("fitted_rate"))
    if fits:
        for c, f in fits:
            kr = to_array(f.get("k_range"))
            if kr.size == 2 and np.all(np.isfinite(kr) & (kr > 0)):
                kk = np.geomspace(kr[0], kr[1], 20)
                with np.errstate(all="ignore"):       # a fit far outside float range draws nothing, not an error
                    yy = np.exp(to_float(f.get("intercept"))) * kk ** to_float(f["slope"])
                rf.line(ax, p0, f"fitted line, {c.label}", kk, yy, color="C3", lw=1.0, alpha=0.6)
        k0 = min(to_float((f.get("k_range") or [math.nan])[0]) for _, f in fits)
        k1 = max(to_float((f.get("k_range") or [math.nan, math.nan])[-1]) for _, f in fits)
        b0 = float(np.mean([to_float(f.get("intercept")) for _, f in fits]))
        slope = fitted if math.isfinite(fitted) else float(np.mean([to_float(f["slope"]) for _, f in fits]))
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
        s = np.array([to_float(f["slope"]) for _, f in fits])
        ci = np.array([to_array(f.get("ci")) if to_array(f.get("ci")).size == 2 else np.array([v, v])
                       for (_, f), v in zip(fits, s)])
        bx.vlines(xs, ci[:, 0], ci[:, 1], color="C3", lw=1.0)
        rf.data += [Drawn(p1, "95% CI low", xs, ci[:, 0]), Drawn(p1, "95% CI high", xs, ci[:, 1])]
        rf.line(bx, p1, "fitted slope per instance", xs, s, color="C3", marker="o", ms=4, ls="none", zorder=3,
                label="fitted slope per instance (95% CI)")
        rf.hline(bx, p1, "claimed rate", claimed, color="black", ls="--", lw=1.4, label=f"claimed {fmt(claimed, 3)}")
        pci = to_array(chk.get("fitted_rate_ci"))
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
                  "against the claimed slope. " + PARAGRAPH_RATE)
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
            x, y = to_array(s.get("x")), to_array(s.get("y"))
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
            label = plain_label(s.get("label") or f"series {i + 1}")
            for g in groups:
                if g["role"] == role and np.array_equal(g["x"], x, equal_nan=True) \
                        and np.array_equal(g["y"], y, equal_nan=True):
                    g["labels"].append(label)
                    break
            else:
                groups.append({"i": i, "role": role, "x": x, "y": y, "labels": [label]})
        fig, (ax,) = new_figure(height=FIG_H + 0.15 * math.ceil(max(len(groups), 1) / 2))
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
