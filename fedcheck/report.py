"""Reports a person reads: one HTML page and one PDF per check, an index page when several ran.

Everything is rendered from the results document alone (``fedcheck report RESULTS.json``
re-renders without recomputing anything), generically: a check of any kind renders its
verdict, evidence and tables; checks with per-instance curves (``instances[*].rounds``,
``metric``, ``bound``) also get the log-log curves, the fitted-vs-claimed rate figure and the
measured/bound ratio; optional ``series`` give one figure per ``panel`` and optional ``tables``
are rendered as tables (see ``docs/DESIGN.md``).

* HTML pages are self-contained: figures are inline base64 PNG, formulas inline base64 SVG
  (matplotlib mathtext), CSS inline, no JavaScript, no network request.  Templates are in
  ``fedcheck/templates/``.
* The PDF (matplotlib ``PdfPages``, A4 landscape) has the same content: title/verdict pages
  with the formulas and text, then one page per figure, then table pages.
* A report is written only when complete: everything goes to a temporary directory inside the
  output directory and is moved into place at the end; a failure or an interrupt leaves no
  half-written file behind (files of an earlier complete run stay as they were).
* Measured curves stop at the resolution of ``F*``: points where the metric is at most
  ``resolution_factor`` (10) times the certified accuracy of ``F*`` are not drawn, the same
  rule the rate fit uses (:mod:`fedcheck.verdict`).
"""
from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
import logging
import math
import os
import re
import shutil
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from fedcheck.core import verdict as V

__all__ = ["write_reports", "validate", "BadResults", "render_math_svg", "mathtext_ok", "drop_unresolved",
           "check_figures", "render_check_html", "render_check_pdf", "render_index_html", "report_name"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
RESOLUTION_FACTOR = V.POLICY.resolution_factor
PAGE = (11.69, 8.27)            # A4 landscape, inches
FIG_SIZE = (11.0, 4.6)          # figures as shown in the HTML page, inches
FIG_DPI = 100
_READING_COLOURS = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9"]   # C7 (grey) is the measured metric
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


class BadResults(ValueError):
    """The results document cannot be rendered (missing or ill-typed fields)."""


# ------------------------------------------------------------------------------------------------
# input checking and value helpers
def validate(doc: Any) -> None:
    """Raise :class:`BadResults` when ``doc`` is not a results document the reports can render."""
    if not isinstance(doc, dict) or not isinstance(doc.get("checks"), list):
        raise BadResults("not a fedcheck results document: expected an object with a list 'checks'")
    if doc.get("provenance") is not None and not isinstance(doc["provenance"], dict):
        raise BadResults("'provenance' must be an object")
    for q, chk in enumerate(doc["checks"]):
        where = f"checks[{q}]"
        if not isinstance(chk, dict):
            raise BadResults(f"{where} is not an object")
        for key in ("id", "verdict"):
            if not isinstance(chk.get(key), str) or not chk[key]:
                raise BadResults(f"{where}: '{key}' must be a non-empty string")
        for key, typ in (("formula", dict), ("readings", dict), ("feasibility", dict), ("evidence", dict),
                         ("params", dict), ("instances", list), ("symbolic", list), ("assumptions", list),
                         ("series", list), ("tables", list), ("saved_instances", list)):
            if chk.get(key) is not None and not isinstance(chk[key], typ):
                raise BadResults(f"{where} ({chk['id']}): '{key}' must be a{'n object' if typ is dict else ' list'}")
        for j, inst in enumerate(chk.get("instances") or []):
            if not isinstance(inst, dict):
                raise BadResults(f"{where}.instances[{j}] is not an object")
            for key in ("rounds", "metric"):
                if inst.get(key) is not None and not isinstance(inst[key], list):
                    raise BadResults(f"{where}.instances[{j}]: '{key}' must be a list")
            if inst.get("bound") is not None and not isinstance(inst["bound"], dict):
                raise BadResults(f"{where}.instances[{j}]: 'bound' must be an object")
        for j, s in enumerate(chk.get("series") or []):
            if not isinstance(s, dict) or not isinstance(s.get("x"), list) or not isinstance(s.get("y"), list):
                raise BadResults(f"{where}.series[{j}]: expected an object with lists 'x' and 'y'")
        for j, tb in enumerate(chk.get("tables") or []):
            if not isinstance(tb, dict) or not isinstance(tb.get("columns", []), list) \
                    or not isinstance(tb.get("rows", []), list) \
                    or not all(isinstance(r, list) for r in tb.get("rows", [])):
                raise BadResults(f"{where}.tables[{j}]: expected an object with lists 'columns' and 'rows'")


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


def report_name(check_id: str) -> str:
    """The file stem of a check's report (``fedfw.theorem1`` -> ``fedfw.theorem1``)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", check_id).strip("._") or "check"
    return name[:120]


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


@functools.lru_cache(maxsize=256)
def render_math_svg(latex: str | None, size: float = 15) -> str | None:
    """``latex`` as a base64 SVG data URI, or ``None`` when mathtext cannot typeset it."""
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
        with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "fedcheck"}):
            # no date (the same results give the same page) and no creator URL in the image
            fig.savefig(buf, format="svg", dpi=72, facecolor="none",
                        metadata={"Date": None, "Creator": None, "Type": None})
        return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    except Exception:
        return None


def _formula(latex, fallback, size=15, lhs: str | None = None) -> dict:
    """A formula for the templates: an SVG image when mathtext parses it, else the plain text."""
    full = f"{lhs} = {latex}" if lhs and isinstance(latex, str) else latex
    svg = render_math_svg(full, size)
    text = fallback if isinstance(fallback, str) and fallback else (latex if isinstance(latex, str) else "")
    return {"svg": svg, "latex": full if isinstance(full, str) else "", "text": text, "lhs": lhs}


# ------------------------------------------------------------------------------------------------
# figures
@dataclass
class ReportFigure:
    key: str
    title: str
    caption: str
    figure: Figure
    png: str = ""     # base64 PNG, filled in when the figure is rendered for the HTML page


def _new_figure(size=FIG_SIZE, ncols=1, **kw) -> tuple[Figure, list]:
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False, **kw)[0]
    return fig, list(axes)


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=FIG_DPI, facecolor="white")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _safe_label(s) -> str:
    """A label for matplotlib: mathtext only where it parses, literal dollars otherwise."""
    s = "" if s is None else str(s)
    if "$" in s:
        parts = s.split("$")
        if len(parts) % 2 == 1 and all(mathtext_ok(p) for p in parts[1::2]):
            return s
        return s.replace("$", r"\$")
    return s


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
    return f"bound, reading '{name}' ({'the paper' if paper else 'analysis'})"


def _style_log(ax, xlabel="round t", ylabel=""):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)


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
    several = len(readings) > 1
    colours = {name: _READING_COLOURS[q % len(_READING_COLOURS)] for q, (name, _) in enumerate(readings)}
    worst = _worst_instance(chk, readings) if len(curves) > 1 else None
    ncols = 2 if worst is not None else 1
    fig, axes = _new_figure(ncols=ncols)
    alpha = 0.9 if len(curves) == 1 else max(0.25, 0.9 / math.sqrt(len(curves)))

    def draw(ax, cs, a):
        for c in cs:
            ax.plot(c.k, c.metric, color="0.15", lw=1.0, alpha=a)
            for name, paper in readings:
                if name in c.bounds:
                    ax.plot(c.k, c.bounds[name], color=colours[name], lw=1.0, alpha=a, ls="-" if paper else "--")
        _style_log(ax, ylabel=_safe_label(metric_name))

    draw(axes[0], curves, alpha)
    axes[0].set_title(f"all {len(curves)} instance(s)" if len(curves) > 1 else curves[0].label)
    if worst is not None:
        inst = (chk.get("instances") or [])[worst]
        label = _instance_label(inst, worst)
        sel = [c for c in curves if c.index == worst][:1]
        draw(axes[1], sel, 0.95)
        paper = [n for n, p in readings if p] or [n for n, _ in readings]
        rd = inst.get("readings") or {}
        top = max(((_float((rd.get(n) or {}).get("max_ratio")), n) for n in paper),
                  key=lambda x: x[0] if math.isfinite(x[0]) else -math.inf)
        axes[1].set_title(f"{label}: the largest measured / bound ({fmt(top[0], 3)})")
        # where the paper's bound is first violated on that instance
        for n in paper:
            t_bad = _float((rd.get(n) or {}).get("first_violation_round"))
            if math.isfinite(t_bad) and sel:
                c = sel[0]
                q = int(np.argmin(np.abs(c.k - t_bad)))
                y = _arr(inst.get("metric"))[q] if q < len(inst.get("metric") or []) else math.nan
                if math.isfinite(y) and y > 0:
                    axes[1].plot([c.k[q]], [y], marker="o", ms=11, mfc="none", mec="#c62828", mew=2, ls="none",
                                 label=None)
                    what = f" of reading '{n}'" if several else ""
                    axes[1].annotate(f"first violation{what}: t = {fmt(c.k[q])}", (c.k[q], y), xytext=(16, -30),
                                     textcoords="offset points", color="#c62828", fontsize=8.5,
                                     bbox=dict(fc="white", ec="#c62828", lw=0.6, alpha=0.9, boxstyle="round,pad=0.25"),
                                     arrowprops=dict(arrowstyle="-", color="#c62828", lw=0.8))
                break
    handles = [Line2D([], [], color="0.15", lw=1.4, label=f"measured {metric_name}")]
    for name, paper in readings:
        handles.append(Line2D([], [], color=colours[name], lw=1.4, ls="-" if paper else "--",
                                               label=_safe_label(_reading_label(name, paper, several))))
    axes[-1].legend(handles=handles, fontsize=8, loc="best", framealpha=0.9)
    dropped = sum(c.dropped for c in curves)
    vf = (chk.get("formula") or {}).get("valid_from")
    floor_note = (f"Measured curves stop where the metric is within {fmt(RESOLUTION_FACTOR)}x the certified accuracy "
                  "of F*" + (f" ({dropped} point(s) not drawn)." if dropped else " (no point was that small)."))
    if not readings:
        caption = f"Log-log: the measured {metric_name}, one line per instance. " + floor_note
        return ReportFigure("measured", f"Measured {metric_name}", caption, fig)
    caption = (f"Log-log: the measured {metric_name} (dark lines, one per instance) against the claimed bound "
               + ("(one colour per reading of the bound; solid: readings the paper writes, dashed: analyses). "
                  if several else "(coloured). ")
               + "The claim holds where the measured curve stays below the bound. "
               + (f"The bound is drawn from t = {fmt(vf)}, where it starts to apply. " if vf not in (None, 1) else "")
               + floor_note)
    return ReportFigure("bound", f"Measured {metric_name} and the bound", caption, fig)


def _ratio_figure(chk: dict, curves: list[_Curve], readings) -> ReportFigure | None:
    several = len(readings) > 1
    colours = {name: _READING_COLOURS[q % len(_READING_COLOURS)] for q, (name, _) in enumerate(readings)}
    fig, (ax,) = _new_figure()
    same_grid = all(c.k.shape == curves[0].k.shape and np.array_equal(c.k, curves[0].k) for c in curves)
    envelope = same_grid and len(curves) > 1
    ymax, ymin, handles = 1.0, math.inf, []
    for name, paper in readings:
        ratios = []
        for c in curves:
            if name in c.bounds:
                with np.errstate(divide="ignore", invalid="ignore"):
                    r = c.metric / c.bounds[name]
                ratios.append((c, np.where(np.isfinite(r) & (r > 0), r, np.nan)))
        ratios = [(c, r) for c, r in ratios if np.isfinite(r).any()]
        if not ratios:
            continue
        col, ls = colours[name], "-" if paper else "--"
        allr = np.concatenate([r[np.isfinite(r)] for _, r in ratios])
        ymax, ymin = max(ymax, float(allr.max())), min(ymin, float(allr.min()))
        if envelope:
            M = np.vstack([r for _, r in ratios])
            some = np.isfinite(M).any(axis=0)
            lo = np.full(M.shape[1], np.nan)
            hi = np.full(M.shape[1], np.nan)
            lo[some], hi[some] = np.nanmin(M[:, some], axis=0), np.nanmax(M[:, some], axis=0)
            k = curves[0].k
            ax.fill_between(k, lo, hi, color=col, alpha=0.13, lw=0)
            ax.plot(k, hi, color=col, lw=1.5, ls=ls)
        else:
            for c, r in ratios:
                ax.plot(c.k, r, color=col, lw=1.2, ls=ls)
        what = f"reading '{name}' ({'the paper' if paper else 'analysis'})" if several else "measured / bound"
        handles.append(Line2D([], [], color=col, lw=1.5, ls=ls, label=_safe_label(what)))
    if not handles:
        return None
    _style_log(ax, ylabel="measured / bound")
    top = max(ymax * 3, 2.0)
    ax.axhspan(1.0, top, color="#c62828", alpha=0.07, lw=0)
    ax.axhline(1.0, color="#c62828", lw=1.3)
    handles.append(Line2D([], [], color="#c62828", lw=1.3,
                                           label="ratio 1: the bound is reached (shaded above: violated)"))
    ax.set_ylim(max(min(ymin / 2, 0.5), 1e-12), top)
    ax.legend(handles=handles, fontsize=8, loc="lower right", framealpha=0.9, title_fontsize=8,
              title="line: largest over the instances, band: smallest to largest" if envelope else None)
    caption = ("Measured value divided by the bound at each recorded round"
               + (f", over the {len(curves)} instances (line: the largest ratio at each round, band: from the smallest "
                  "to the largest)" if envelope else "")
               + (", one colour per reading of the bound" if several else "")
               + ". Below the red line (ratio 1) the bound holds; the highest point is how close the bound comes to "
               "being violated. Points where the measured value is not resolved (within 10x the certified accuracy "
               "of F*) are not drawn.")
    return ReportFigure("ratio", "Ratio measured / bound over rounds", caption, fig)


def _rate_figure(chk: dict, curves: list[_Curve]) -> ReportFigure | None:
    claimed = _float(chk.get("claimed_rate"))
    if not math.isfinite(claimed):
        return None
    fits = [(c, c.fit) for c in curves if c.fit and math.isfinite(_float(c.fit.get("slope")))]
    fig, axes = _new_figure(ncols=2 if fits else 1, gridspec_kw={"width_ratios": [3, 2]} if fits else None)
    ax = axes[0]
    alpha = 0.9 if len(curves) == 1 else max(0.25, 0.9 / math.sqrt(len(curves)))
    for c in curves:
        ax.plot(c.k, c.metric, color="0.55", lw=0.9, alpha=alpha)
    metric_name = (chk.get("formula") or {}).get("metric") or "measured metric"
    _style_log(ax, ylabel=_safe_label(metric_name))
    handles = [Line2D([], [], color="0.55", lw=1.2, label=f"measured {metric_name}")]
    fitted = _float(chk.get("fitted_rate"))
    if fits:
        for c, f in fits:
            kr = _arr(f.get("k_range"))
            if kr.size == 2 and np.all(kr > 0):
                kk = np.geomspace(kr[0], kr[1], 20)
                ax.plot(kk, np.exp(_float(f.get("intercept"))) * kk ** _float(f["slope"]), color="C3", lw=1.0,
                        alpha=0.6)
        k0 = min(_float((f.get("k_range") or [math.nan])[0]) for _, f in fits)
        k1 = max(_float((f.get("k_range") or [math.nan, math.nan])[-1]) for _, f in fits)
        b0 = float(np.mean([_float(f.get("intercept")) for _, f in fits]))
        slope = fitted if math.isfinite(fitted) else float(np.mean([_float(f["slope"]) for _, f in fits]))
        if math.isfinite(k0) and math.isfinite(k1) and k0 > 0 and math.isfinite(b0):
            kk = np.geomspace(k0, k1, 30)
            y0 = math.exp(b0) * k0 ** slope
            ax.plot(kk, math.exp(b0) * kk ** slope, color="C3", lw=2.6)
            ax.plot(kk, y0 * (kk / k0) ** claimed, color="black", lw=2.2, ls="--")
            handles += [Line2D([], [], color="C3", lw=2.4,
                                                label=f"fitted slope {fmt(slope, 3)} (thin: per instance)"),
                        Line2D([], [], color="black", lw=2.2, ls="--",
                                                label=f"claimed rate t^{fmt(claimed, 3)} (same starting point)")]
        ax.set_title("the fit uses the last decade of rounds")
    else:
        ax.set_title("no usable fit: too few resolved points in the last decade of rounds")
    ax.legend(handles=handles, fontsize=8, loc="lower left", framealpha=0.9)
    if fits:
        bx = axes[1]
        xs = np.arange(len(fits))
        s = np.array([_float(f["slope"]) for _, f in fits])
        ci = np.array([_arr(f.get("ci")) if _arr(f.get("ci")).size == 2 else np.array([v, v])
                       for (_, f), v in zip(fits, s)])
        bx.errorbar(xs, s, yerr=[s - ci[:, 0], ci[:, 1] - s], fmt="o", color="C3", ms=4, capsize=2,
                    label="fitted slope per instance (95% CI)")
        bx.axhline(claimed, color="black", ls="--", lw=1.6, label=f"claimed {fmt(claimed, 3)}")
        pci = _arr(chk.get("fitted_rate_ci"))
        if pci.size == 2 and np.all(np.isfinite(pci)):
            bx.axhspan(pci[0], pci[1], color="C3", alpha=0.15, lw=0, label="pooled 95% CI")
        if math.isfinite(fitted):
            bx.axhline(fitted, color="C3", lw=1.6, label=f"pooled slope {fmt(fitted, 3)}")
        bx.set_xticks(xs)
        bx.set_xticklabels([str(c.seed) if c.seed is not None else str(q + 1) for q, (c, _) in enumerate(fits)],
                           fontsize=7 if len(fits) > 12 else 8)
        bx.set_xlabel("instance (seed)")
        bx.set_ylabel("log-log slope")
        bx.grid(True, alpha=0.3)
        bx.set_title(f"rate verdict: {chk.get('rate_verdict') or '-'}")
        bx.legend(fontsize=7.5, loc="best", framealpha=0.9)
    caption = ("Left: the measured curves with the least-squares lines of log(metric) against log(t) over the last "
               "decade of rounds (thin: per instance, thick: pooled), and a reference line of the claimed slope "
               "started at the same point. Right: each instance's fitted slope with its 95% confidence interval "
               "against the claimed slope. " + _PARAGRAPH_RATE)
    return ReportFigure("rate", "Fitted rate against the claimed rate", caption, fig)


_ROLE_STYLE = {"measured": dict(ls="-", lw=1.6), "bound": dict(ls="--", lw=1.6),
               "reference": dict(ls=":", lw=1.4), "baseline": dict(ls="-.", lw=1.4)}


def _series_figures(chk: dict) -> list[ReportFigure]:
    panels: dict[str, list[dict]] = {}
    for s in chk.get("series") or []:
        panels.setdefault(str(s.get("panel") or "series"), []).append(s)
    out = []
    for q, (panel, series) in enumerate(panels.items()):
        fig, (ax,) = _new_figure()
        logx = any(bool(s.get("logx")) for s in series)
        logy = any(bool(s.get("logy")) for s in series)
        drawn = 0
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
            role = s.get("role") or "measured"
            style = dict(_ROLE_STYLE.get(role, _ROLE_STYLE["measured"]))
            colour = "0.4" if role == "reference" else f"C{i % 10}"
            lab = _safe_label(s.get("label") or f"series {i + 1}")
            ax.plot(np.where(ok, x, np.nan), np.where(ok, y, np.nan), color=colour,
                    label=f"{lab} ({role})" if role != "measured" else lab, **style)
            drawn += 1
        if logx:
            ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(_safe_label(series[0].get("xlabel") or "x"))
        ax.set_ylabel(_safe_label(series[0].get("ylabel") or "y"))
        ax.grid(True, alpha=0.3)
        if drawn:
            ax.legend(fontsize=8, loc="best", framealpha=0.9)
        else:
            ax.text(0.5, 0.5, "no finite point to draw", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(panel)
        roles = sorted({s.get("role") or "measured" for s in series})
        caption = (f"Panel '{panel}': {len(series)} curve(s) from the check's series ("
                   + ", ".join(roles) + "). Solid: measured, dashed: bound, dotted: reference, dash-dot: baseline.")
        out.append(ReportFigure(f"series-{q}", panel, caption, fig))
    return out


def check_figures(chk: dict) -> list[ReportFigure]:
    """Every figure of one check, generically from its result dict."""
    figs: list[ReportFigure] = []
    curves = _curves(chk)
    if curves:
        readings = _reading_info(chk, curves)
        figs.append(_bound_figure(chk, curves, readings))
        figs.append(_rate_figure(chk, curves))
        figs.append(_ratio_figure(chk, curves, readings) if readings else None)
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


def _is_record_map(d) -> bool:
    return isinstance(d, dict) and d and all(isinstance(v, dict) for v in d.values()) \
        and all(not isinstance(x, (dict, list)) or _short_list(x) for v in d.values() for x in v.values())


def _short_list(x) -> bool:
    return isinstance(x, list) and len(x) <= 4 and all(not isinstance(v, (dict, list)) for v in x)


def _evidence_blocks(ev: dict) -> tuple[list[tuple[str, str]], list[dict], list[tuple[str, str]]]:
    """Free-form evidence: scalars as a list, maps of records and lists of records as tables, the rest as JSON."""
    scalars, tables, other = [], [], []
    for key, val in (ev or {}).items():
        if val is None or isinstance(val, (str, int, float, bool)) or _short_list(val):
            scalars.append((_human(key), fmt(val)))
        elif _is_record_map(val):
            cols = []
            for rec in val.values():
                cols += [c for c in rec if c not in cols]
            rows = [[name] + [_verdict_cell(rec.get(c)) if c == "verdict" else fmt(rec.get(c)) for c in cols]
                    for name, rec in val.items()]
            tables.append(_table(_title(key), ["name"] + [_human(c) for c in cols], rows))
        elif isinstance(val, list) and val and all(isinstance(v, dict) for v in val):
            cols = []
            for rec in val:
                cols += [c for c in rec if c not in cols]
            rows = [[_verdict_cell(rec.get(c)) if c == "verdict" else fmt(rec.get(c)) for c in cols] for rec in val]
            tables.append(_table(_title(key), [_human(c) for c in cols], rows))
        elif isinstance(val, dict) and all(not isinstance(v, (dict, list)) or _short_list(v) for v in val.values()):
            tables.append(_table(_title(key), ["name", "value"], [[_human(k), fmt(v)] for k, v in val.items()]))
        else:
            other.append((str(key), json.dumps(val, indent=1, default=str)[:20000]))
    return scalars, tables, other


def _human(key) -> str:
    return str(key).replace("_", " ")


def _title(key) -> str:
    h = _human(key)
    return h[:1].upper() + h[1:]


def _unique(seq):
    return list(dict.fromkeys(seq))


def check_context(chk: dict, doc: dict) -> dict:
    """Everything the templates (and the PDF) show for one check, formatted."""
    prov = doc.get("provenance") or {}
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
    ctx["schedules"] = [(name, _formula(tex, tex, 18, lhs=_sched_lhs(name)))
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
    # --- verdict evidence
    rtab = []
    for name, d in (chk.get("readings") or {}).items():
        d = d or {}
        rtab.append([name, "the paper" if d.get("paper", True) else "analysis", d.get("description", ""),
                     _verdict_cell(d.get("verdict")), fmt(d.get("max_ratio")), fmt(d.get("violated_instances")),
                     fmt(d.get("inconclusive_instances"))])
    ctx["readings_table"] = _table("Readings of the bound", ["reading", "from", "meaning", "verdict",
                                                             "max measured / bound", "violated on",
                                                             "inconclusive on"], rtab,
                                   "Only readings from the paper can refute it; analyses are reported beside them.") \
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
    scalars, etables, other = _evidence_blocks(ev)
    ctx["evidence_scalars"], ctx["evidence_tables"], ctx["evidence_other"] = scalars, etables, other
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
    prows = [("command (reproduces this run)", prov.get("command") or "-"),
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
    ctx["command"] = prov.get("command") or ""
    return ctx


def _latex_name(name: str) -> str:
    """A SymPy symbol name as mathtext (``lambda_0`` -> ``\\lambda_{0}``)."""
    greek = {"alpha", "beta", "gamma", "delta", "epsilon", "eta", "theta", "lambda", "mu", "nu", "rho", "sigma",
             "tau", "phi", "psi", "omega", "kappa", "xi", "zeta"}
    base, _, sub = name.partition("_")
    base = "\\" + base if base in greek else base
    return f"{base}_{{{sub.replace('_', ' ')}}}" if sub else base


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
            txt = f"{fmt(d.get('verdict'))}, {fmt(d.get('max_ratio'))}"
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
def _env():
    import jinja2
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_check_html(ctx: dict, figures: list[ReportFigure], links: dict) -> str:
    return _env().get_template("check.html.j2").render(c=ctx, figures=figures, links=links)


def render_index_html(doc: dict, entries: list[dict]) -> str:
    prov = doc.get("provenance") or {}
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
    return _env().get_template("index.html.j2").render(entries=entries, prov=prov, counts=counts,
                                                       command=prov.get("command") or "", created=prov.get("created") or "")


# ------------------------------------------------------------------------------------------------
# PDF
class _Pages:
    """Numbered A4-landscape pages written into one ``PdfPages``."""

    def __init__(self, pdf, footer: str):
        self.pdf, self.footer, self.number = pdf, footer, 0

    def new(self) -> Figure:
        fig = Figure(figsize=PAGE)
        FigureCanvasAgg(fig)
        return fig

    def save(self, fig: Figure) -> None:
        self.number += 1
        fig.text(0.5, 0.018, f"{self.footer}  -  page {self.number}", ha="center", va="bottom", fontsize=7,
                 color="0.4", parse_math=False)
        self.pdf.savefig(fig)


class _Flow:
    """Text, formulas and tables flowing down A4-landscape pages (units: points)."""

    W, H, M, BOTTOM = PAGE[0] * 72, PAGE[1] * 72, 40.0, 44.0

    def __init__(self, pages: _Pages):
        self.pages, self.fig, self.y = pages, None, 0.0

    # page handling
    def _ensure(self):
        if self.fig is None:
            self.fig = self.pages.new()
            self.y = self.H - self.M

    def space(self, h: float):
        self._ensure()
        if self.y - h < self.BOTTOM and self.y < self.H - self.M - 1:
            self.page_break()
            self._ensure()

    def page_break(self):
        if self.fig is not None:
            self.pages.save(self.fig)
            self.fig = None

    def gap(self, h: float):
        self._ensure()
        self.y -= h

    def _put(self, x, y, s, **kw):
        return self.fig.text(x / self.W, y / self.H, s, va="top", parse_math=False, **kw)

    # content
    def text(self, s: str, size=9.5, weight="normal", colour="black", indent=0.0, mono=False, after=3.0):
        width = self.W - 2 * self.M - indent
        per = max(20, int(width / (size * (0.6 if mono else 0.6 if weight == "bold" else 0.53))))
        family = "DejaVu Sans Mono" if mono else "DejaVu Sans"
        lines = []
        for par in str(s).split("\n"):
            lines += textwrap.wrap(par, per, break_long_words=True, break_on_hyphens=False) or [""]
        for line in lines:
            self.space(size * 1.32)
            self._put(self.M + indent, self.y, line, fontsize=size, fontweight=weight, color=colour, family=family)
            self.y -= size * 1.32
        self.y -= after

    def heading(self, s: str, size=13.0):
        self.space(size * 1.4 + 40)
        self.y -= 6
        self.text(s, size=size, weight="bold", after=4)

    def badge(self, verdict: str, meaning: str):
        self.space(40)
        self._put(self.M, self.y - 2, f" {verdict} ", fontsize=20, fontweight="bold", color="white",
                  bbox=dict(boxstyle="round,pad=0.35", fc=_TONE_COLOUR[tone(verdict)], ec="none"))
        self._put(self.M + 24 + 14 * len(verdict), self.y - 8, meaning, fontsize=10, color="0.15")
        self.y -= 40

    def math(self, latex: str | None, fallback: str | None, size=16.0, indent=0.0, prefix: str = ""):
        avail = self.W - 2 * self.M - indent
        if mathtext_ok(latex):
            self._ensure()
            for attempt in range(2):
                t = self.fig.text((self.M + indent) / self.W, self.y / self.H, f"${latex}$", va="top", fontsize=size,
                                  math_fontfamily="cm")
                r = self.fig.canvas.get_renderer()
                bb = t.get_window_extent(r)
                w, h = bb.width * 72 / self.fig.dpi, bb.height * 72 / self.fig.dpi
                if w > avail:
                    t.set_fontsize(max(5.0, size * avail / w * 0.98))
                    bb = t.get_window_extent(r)
                    h = bb.height * 72 / self.fig.dpi
                if self.y - h < self.BOTTOM and attempt == 0 and self.y < self.H - self.M - 1:
                    t.remove()
                    self.page_break()
                    self._ensure()
                    continue
                self.y -= h + 8
                return True
        if fallback:
            self.text(("(the LaTeX could not be typeset; as plain text) " if latex else "") + fallback,
                      size=8.5, mono=True, indent=indent)
        return False

    def table(self, tb: dict | None, size=7.5, max_col=60, heading=11.0):
        if not tb or not tb["columns"]:
            return
        cols = tb["columns"]
        rows = [[_cell_text(c) for c in r] + [""] * (len(cols) - len(r)) for r in tb["rows"]]
        avail = self.W - 2 * self.M
        for size_try in (size, 6.5, 5.5):
            cw = size_try * 0.6
            widths = [min(max_col, max([len(str(c)) for c in [cols[q]] + [r[q] for r in rows]] + [1]))
                      for q in range(len(cols))]
            total = sum(widths) + 2 * (len(cols) - 1)
            if total * cw <= avail:
                break
            # shrink the widest columns until it fits
            while total * cw > avail and max(widths) > 8:
                q = int(np.argmax(widths))
                widths[q] -= 1
                total -= 1
            if total * cw <= avail:
                break
        size, cw = size_try, size_try * 0.6
        xs = [self.M]
        for w in widths[:-1]:
            xs.append(xs[-1] + (w + 2) * cw)
        line_h = size * 1.3

        def wrapped(row):
            return [textwrap.wrap(str(c), w, break_long_words=True) or [""] for c, w in zip(row, widths)]

        def header():
            cells = wrapped(cols)
            n = max(len(c) for c in cells)
            for x, c in zip(xs, cells):
                for q, line in enumerate(c):
                    self._put(x, self.y - q * line_h, line, fontsize=size, fontweight="bold",
                              family="DejaVu Sans Mono")
            self.y -= n * line_h + 2
            self.fig.add_artist(Line2D(
                [self.M / self.W, (self.M + total * cw) / self.W], [self.y / self.H] * 2, color="0.5", lw=0.6))
            self.y -= 3

        self.heading(tb["title"], size=heading)
        self.space(3 * line_h + 6)
        header()
        for q, row in enumerate(rows):
            cells = wrapped(row)
            n = max(len(c) for c in cells)
            if self.y - n * line_h < self.BOTTOM:
                self.page_break()
                self._ensure()
                self.text(f"{tb['title']} (continued)", size=9, weight="bold")
                header()
            if q % 2 == 1:
                self.fig.add_artist(Rectangle(
                    ((self.M - 2) / self.W, (self.y - n * line_h + 1) / self.H), (total * cw + 4) / self.W,
                    (n * line_h) / self.H, color="0.94", lw=0, zorder=-1))
            for x, c in zip(xs, cells):
                for i, line in enumerate(c):
                    self._put(x, self.y - i * line_h, line, fontsize=size, family="DejaVu Sans Mono")
            self.y -= n * line_h
        self.y -= 4
        if tb.get("note"):
            self.text(tb["note"], size=7.5, colour="0.3")


def _figure_page(pages: _Pages, rf: ReportFigure, number: int):
    fig = rf.figure
    fig.set_size_inches(*PAGE)
    engine = fig.get_layout_engine()
    caption = textwrap.fill(rf.caption, 175)
    ncap = caption.count("\n") + 1
    bottom = 0.05 + 0.022 * ncap
    if engine is not None and hasattr(engine, "set"):
        engine.set(rect=(0.03, bottom, 0.94, 0.93 - bottom))
    fig.text(0.04, 0.965, f"Figure {number}. {rf.title}", fontsize=13, fontweight="bold", va="top", parse_math=False)
    fig.text(0.04, bottom - 0.012, caption, fontsize=8.5, va="top", color="0.2", parse_math=False)
    pages.save(fig)


@contextlib.contextmanager
def _quiet_fonttools():
    """fontTools warns about the font files' timestamps while embedding them; that is no news to a reader."""
    log = logging.getLogger("fontTools")
    old = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(old)


def render_check_pdf(path: Path, ctx: dict, figures: list[ReportFigure]) -> None:
    from matplotlib.backends.backend_pdf import PdfPages
    meta = {"Title": f"fedcheck: {ctx['id']}: {ctx['verdict']}", "Subject": ctx["title"], "Creator": "fedcheck"}
    with matplotlib.rc_context({"pdf.fonttype": 42, "font.family": "DejaVu Sans"}), _quiet_fonttools(), \
            PdfPages(str(path), metadata=meta) as pdf:
        pages = _Pages(pdf, f"fedcheck report  {ctx['id']}")
        flow = _Flow(pages)
        flow.text(" - ".join(x for x in (ctx["paper"], ctx["reference"]) if x) or "fedcheck", size=10, colour="0.35")
        flow.text(ctx["title"], size=16, weight="bold", after=2)
        flow.text(f"check {ctx['id']}" + (f"  (kind: {ctx['kind']})" if ctx["kind"] else ""), size=9, colour="0.35",
                  after=10)
        flow.badge(ctx["verdict"], ctx["meaning"])
        if ctx["reason"]:
            flow.text(f"Why: {ctx['reason']}", size=10)
        for k, v in ctx["facts"]:
            flow.text(f"{k}: {v}", size=9.5, after=1)
        flow.heading("The claim")
        if ctx["claim"]:
            flow.text(ctx["claim"], size=10)
        if ctx["bound"]:
            flow.text(f"The bound{' on ' + ctx['metric'] if ctx['metric'] else ''}"
                      + (f", for t >= {ctx['valid_from']}" if ctx["valid_from"] else "") + ":", size=9.5,
                      colour="0.25")
            if flow.math(ctx["bound"]["latex"], ctx["bound"]["text"], size=18, indent=12):
                flow.text(f"plain text: {ctx['bound']['text']}", size=7, mono=True, colour="0.45", indent=12,
                          after=8)
        if ctx["schedules"]:
            flow.text("Schedules:", size=9.5, colour="0.25")
            for name, f in ctx["schedules"]:
                flow.math(f["latex"], f"{name} = {f['text']}", size=13, indent=12)
        if ctx["metric_description"]:
            flow.text(f"{ctx['metric']}: {ctx['metric_description']}", size=8.5, colour="0.3")
        if ctx["formula_readings"]:
            flow.heading("Readings of the bound", size=11)
            for rd in ctx["formula_readings"]:
                flow.text(f"{rd['name']} ({'the paper' if rd['paper'] else 'analysis'}): {rd['description']}",
                          size=9.5, weight="bold", after=1)
                for f in rd["subs"]:
                    flow.math(f["latex"], f["text"], size=12, indent=18)
        if ctx["assumptions"]:
            flow.heading("Assumptions", size=11)
            for a in ctx["assumptions"]:
                flow.text(f"- {a}", size=9.5, indent=6, after=1)
        flow.page_break()
        # evidence
        flow.heading("Evidence for the verdict")
        for tb in (ctx["readings_table"], ctx["feasibility_table"], ctx["rate_table"], ctx["symbolic_table"]):
            flow.table(tb)
        if ctx["evidence_scalars"]:
            flow.heading("Evidence details", size=11)
            for k, v in ctx["evidence_scalars"]:
                flow.text(f"{k}: {v}", size=9, after=1)
        for tb in ctx["evidence_tables"]:
            flow.table(tb)
        for k, v in ctx["evidence_other"]:
            flow.heading(k, size=11)
            flow.text(v, size=7, mono=True)
        if ctx["saved_instances"]:
            flow.heading("Refuting instances saved", size=11)
            for p in ctx["saved_instances"]:
                flow.text(f"{p}   (rerun: fedcheck verify {ctx['id']} --instance {p})", size=8.5, mono=True)
        flow.page_break()
        for q, rf in enumerate(figures, 1):
            _figure_page(pages, rf, q)
        for tb in ctx["tables"]:
            flow.table(tb)
        for tb in (ctx["instance_table"], ctx["constants_table"], ctx["symbols_table"]):
            flow.table(tb)
        if ctx["families"]:
            flow.text("Instances drawn from: " + "; ".join(ctx["families"]), size=8, colour="0.3")
        flow.page_break()
        flow.table(_table("Provenance", ["item", "value"], [list(r) for r in ctx["provenance"]]), max_col=120,
                   size=8, heading=13)
        flow.page_break()


# ------------------------------------------------------------------------------------------------
def write_reports(doc: dict, out: Path) -> list[Path]:
    """Write the reports of ``doc`` under ``out``: ``<check>.html`` and ``<check>.pdf`` per check,
    ``index.html`` when there are several checks, and ``results.json``.  Returns the paths written.

    All files are rendered into a temporary directory inside ``out`` and moved into place only once
    every one of them is complete."""
    validate(doc)
    try:
        results_text = json.dumps(doc, indent=1, allow_nan=False)
    except ValueError as e:
        raise BadResults(f"results document is not valid JSON: {e}") from None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".fedcheck-report-", dir=out))
    try:
        names: list[str] = []
        checks = doc["checks"]
        stems, entries = [], []
        for chk in checks:
            stem = report_name(chk["id"])
            while stem in stems:
                stem += "_"
            stems.append(stem)
        several = len(checks) > 1
        for chk, stem in zip(checks, stems):
            ctx = check_context(chk, doc)
            figures = check_figures(chk)
            try:
                for rf in figures:
                    rf.png = _png(rf.figure)
                links = {"pdf": f"{stem}.pdf", "index": "index.html" if several else None,
                         "results": "results.json"}
                (tmp / f"{stem}.html").write_text(render_check_html(ctx, figures, links), encoding="utf-8")
                render_check_pdf(tmp / f"{stem}.pdf", ctx, figures)
            finally:
                for rf in figures:
                    rf.figure.clear()
            names += [f"{stem}.html", f"{stem}.pdf"]
            entries.append({"id": chk["id"], "title": ctx["title"], "paper": ctx["paper"],
                            "reference": ctx["reference"], "verdict": ctx["verdict"], "tone": ctx["tone"],
                            "reason": ctx["reason"], "facts": ctx["facts"], "html": f"{stem}.html",
                            "pdf": f"{stem}.pdf"})
        if several or not checks:
            (tmp / "index.html").write_text(render_index_html(doc, entries), encoding="utf-8")
            names.append("index.html")
        (tmp / "results.json").write_text(results_text, encoding="utf-8")
        names.append("results.json")
        written = []
        for name in names:
            os.replace(tmp / name, out / name)
            written.append(out / name)
        return written
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
