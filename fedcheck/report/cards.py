"""The notebook card of a result (Jupyter's ``_repr_html_``): a self-contained HTML fragment with the verdict, the
findings and the check's main figure."""
from __future__ import annotations

import re

from fedcheck.report.common import fmt, tone
from fedcheck.report.content import ratio_text
from fedcheck.report.figures import check_figures, figure_svg
from fedcheck.report.html import title_html

_TONE_COLOUR = {"good": "#1a7f37", "bad": "#c62828", "unknown": "#9a6700"}


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
