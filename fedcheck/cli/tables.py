"""The terminal's verdict table (``fedcheck verify``, ``pep``, ``search``)."""
from __future__ import annotations

__all__ = ["summary_table"]


def _fmt(x, spec=".3g"):
    return "-" if x is None else format(x, spec)


def summary_table(results: list[dict]) -> str:
    from fedcheck.core import verdict as V
    rows = [("check", "verdict", "max ratio", "max excess", "rate (claimed)", "rate", "feasible", "time")]
    for r in results:
        rate = "-"
        if r.get("claimed_rate") is not None:
            ci = r.get("fitted_rate_ci")
            rate = f"{_fmt(r.get('fitted_rate'), '.3f')}" + (f" [{ci[0]:.2f},{ci[1]:.2f}]" if ci else "") + \
                   f" ({r['claimed_rate']:.3g})"
        head = r.get("headline") or r["verdict"]
        rows.append((r["id"], head.upper() if head == V.VIOLATED else head,
                     _fmt(r.get("max_ratio")), _fmt(r.get("max_excess")), rate,
                     ("pre-asymptotic" if ((r.get("evidence") or {}).get("rate") or {}).get("pre_asymptotic")
                      else r.get("rate_verdict") or "-"),
                     (r.get("feasibility") or {}).get("verdict", "-"), f"{r.get('seconds', 0):.1f}s"))
        for name, d in (r.get("readings") or {}).items():
            if len(r["readings"]) > 1:
                tag = "paper" if d.get("paper") else "analysis"
                ratio = "undefined" if d.get("ratio_undefined_where_violated") else _fmt(d.get("max_ratio"))
                rows.append((f"  reading {name} ({tag})", d["verdict"], ratio,
                             _fmt(d.get("max_excess")), "", "", "", ""))
    widths = [max(len(str(row[c])) for row in rows) for c in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
