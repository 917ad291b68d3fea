"""Formulas and labels typeset by matplotlib's mathtext: a formula as an SVG image (outlines for the page, text in
Computer Modern for print, cached between runs), a label of plain ASCII as mathtext (:func:`tex_label`)."""
from __future__ import annotations

import base64
import functools
import io
import re
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties



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
            svg = split_tspans(data.decode("utf-8"))
            if not set(_svg_fonts(svg)) <= set(_print_fonts()):
                return None             # a font the print page cannot declare: the caller keeps the outlines
            data = svg.encode("utf-8")
        return "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")
    except Exception:
        return None


def template_formula(latex, fallback, size=15, lhs: str | None = None) -> dict:
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


def split_tspans(svg: str) -> str:
    """Mathtext as one ``<text>`` per glyph: matplotlib writes a formula as ``<tspan>``s with absolute
    positions out of reading order, which browsers place right and WeasyPrint does not."""
    def one(m):
        spans = re.findall(r'<tspan x="([^"]+)" y="([^"]+)" style="([^"]*)">(.*?)</tspan>', m.group(1), re.S)
        if not spans:
            return m.group(0)
        return "".join(f'<text x="{x}" y="{y}" style="{st}">{c}</text>' for x, y, st, c in spans)
    return re.sub(r"<text>\s*((?:<tspan[^>]*>.*?</tspan>\s*)+)</text>", one, svg, flags=re.S)


# ------------------------------------------------------------------------------------------------
# labels: the ASCII of the results (F(xbar^t) - F*) typeset by mathtext ($F(\bar{x}^{t}) - F^\star$)
# The Greek letters a figure's label typesets as mathtext (``\\alpha`` ...): mathtext's own names -- not the title's
# name -> letter map of report.common, which has ``eps`` (no mathtext command) and lacks nu, xi, pi, chi, Theta, Psi, Omega.
LABEL_GREEK = frozenset({"alpha", "beta", "gamma", "delta", "epsilon", "eta", "theta", "lambda", "mu", "nu", "rho",
                         "sigma", "tau", "phi", "psi", "omega", "kappa", "xi", "zeta", "chi", "pi", "Gamma", "Delta",
                         "Theta", "Lambda", "Sigma", "Phi", "Psi", "Omega"})
_FUNCS = {"max": r"\max", "min": r"\min", "log": r"\log", "exp": r"\exp", "sup": r"\sup", "dist": r"\mathrm{dist}"}
_OPS = {"-": "-", "+": "+", "=": "=", "<=": r"\leq", ">=": r"\geq", "<": "<", ">": ">", "/": "/", "~": r"\sim"}


def _alpha_ok(tok: str) -> bool:
    runs = re.findall(r"[A-Za-z]+", tok)
    if not runs:
        return False
    if all(r in _FUNCS for r in runs) and not re.search(r"[_^(]", tok):
        return False                        # "log", "max": words
    return all(len(r) == 1 or r in LABEL_GREEK or r == "hat" or re.fullmatch(r"[A-Za-z]bar", r) or r in _FUNCS for r in runs)


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
    s = re.sub(r"(?<![A-Za-z\\])(" + "|".join(sorted(LABEL_GREEK, key=len, reverse=True)) + r")(?![A-Za-z])", r"\\\1", s)
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


def plain_label(s) -> str:
    """A label as plain text (for the CSV and the captions)."""
    return "" if s is None else str(s)
