"""The terminal's verdict table and lines (``fedcheck verify``, ``pep``, ``search``).

Everything printed fits the terminal's width (:func:`terminal_width`: the terminal's when standard output is one,
:data:`DEFAULT_WIDTH` otherwise): the table's text columns (a check's id, a reading's name) wrap inside their
column, a check's headline and its rate go on lines of their own under it, long messages wrap with an indent, and a
command is broken with shell line continuations (`` \\``) so that it still runs as printed.  ``wide=True``
(``--wide``) prints every row on one line, however long."""
from __future__ import annotations

import re
import shutil
import sys
import textwrap

__all__ = ["summary_table", "terminal_width", "wrap_line", "command_lines", "DEFAULT_WIDTH"]

DEFAULT_WIDTH = 100          # when standard output is not a terminal (a pipe, a file, CI)
_MIN_WIDTH = 60
_INDENT = "    "


def terminal_width(stream=None) -> int:
    """The width lines are fitted to: the terminal's (``shutil.get_terminal_size``, which honours ``$COLUMNS``) when
    ``stream`` (default standard output) is a terminal, :data:`DEFAULT_WIDTH` otherwise; never below 60."""
    stream = sys.stdout if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return DEFAULT_WIDTH
    return max(_MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def _fmt(x, spec=".3g"):
    return "-" if x is None else format(x, spec)


def _split_word(word: str, width: int) -> list[str]:
    """A word longer than ``width`` (an id, a path) cut after a ``.``, ``_``, ``/`` or ``-`` where possible."""
    out = []
    while len(word) > width:
        cut = max((m.end() for m in re.finditer(r"[._/\-]", word[:width])), default=0)
        cut = cut if cut >= width // 3 else width
        out.append(word[:cut])
        word = word[cut:]
    return out + [word] if word else out


def _wrap_cell(text: str, width: int) -> list[str]:
    if len(text) <= width:
        return [text]
    lead = len(text) - len(text.lstrip(" "))
    words = []
    for w in text.split():
        words.extend(_split_word(w, max(1, width - lead - 2)))
    lines = textwrap.wrap(" ".join(words), width=width, initial_indent=" " * lead,
                          subsequent_indent=" " * (lead + 2), break_long_words=True, break_on_hyphens=False)
    return lines or [text[:width]]


def wrap_line(text: str, width: int | None = None, indent: str = _INDENT, wide: bool = False) -> str:
    """One message (a reason, a note, a warning) wrapped to ``width`` with a hanging ``indent``."""
    if wide:
        return text
    width = terminal_width() if width is None else width
    if len(text) <= width:
        return text
    return "\n".join(textwrap.wrap(text, width=width, subsequent_indent=indent, break_long_words=True,
                                   break_on_hyphens=False))


def command_lines(command: str, width: int | None = None, indent: str = _INDENT, first: str = "",
                  wide: bool = False) -> str:
    """A shell command (``first`` + ``command``), broken where it is longer than ``width`` at its arguments with `` \\``
    continuations, so that it runs as printed when pasted into a shell."""
    width = terminal_width() if width is None else width
    text = first + command
    if wide or len(text) <= width:
        return text
    # an option and its value stay together ("--instance PATH"); a line is broken only between arguments
    parts: list[str] = []
    import shlex
    try:
        tokens = [shlex.quote(t) for t in shlex.split(command)]
    except ValueError:          # not a shell command after all: left as it is
        return text
    for tok in tokens:
        if parts and parts[-1].startswith("--") and " " not in parts[-1] and not tok.startswith("-"):
            parts[-1] += " " + tok
        else:
            parts.append(tok)
    lines, cur = [], first + parts[0]
    for p in parts[1:]:
        if len(cur) + 1 + len(p) + 2 > width:
            lines.append(cur + " \\")
            cur = indent + p
        else:
            cur += " " + p
    lines.append(cur)
    return "\n".join(lines)


def _rate_line(r: dict) -> str | None:
    if r.get("claimed_rate") is None:
        return None
    ci = r.get("fitted_rate_ci")
    fitted = _fmt(r.get("fitted_rate"), ".3f") + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
    verdict = ("pre-asymptotic" if ((r.get("evidence") or {}).get("rate") or {}).get("pre_asymptotic")
               else r.get("rate_verdict") or "-")
    return f"rate {fitted} (claimed {r['claimed_rate']:.3g}): {verdict}"


def _rows(results: list[dict], wide: bool) -> list[tuple]:
    """(kind, cells) per row: kind "check", "reading" or "line" (a line of its own under a check)."""
    from fedcheck.core import verdict as V
    rows = []
    for r in results:
        head = r.get("headline") or r["verdict"]
        verdict = r["verdict"].upper() if r["verdict"] == V.VIOLATED else r["verdict"]
        feas = (r.get("feasibility") or {}).get("verdict", "-")
        time = f"{r.get('seconds', 0):.1f}s"
        rate = _rate_line(r)
        if wide:        # the layout of every earlier version: one line per check, headline and rate in columns
            ci = r.get("fitted_rate_ci")
            rate_c = "-" if r.get("claimed_rate") is None else (
                f"{_fmt(r.get('fitted_rate'), '.3f')}" + (f" [{ci[0]:.2f},{ci[1]:.2f}]" if ci else "") +
                f" ({r['claimed_rate']:.3g})")
            rv = ("pre-asymptotic" if ((r.get("evidence") or {}).get("rate") or {}).get("pre_asymptotic")
                  else r.get("rate_verdict") or "-")
            rows.append(("check", (r["id"], head.upper() if head == V.VIOLATED else head, _fmt(r.get("max_ratio")),
                                   _fmt(r.get("max_excess")), rate_c, rv, feas, time)))
        else:
            rows.append(("check", (r["id"], verdict, _fmt(r.get("max_ratio")), _fmt(r.get("max_excess")), feas, time)))
            if head != r["verdict"]:
                rows.append(("line", head))
            if rate:
                rows.append(("line", rate))
        readings = r.get("readings") or {}
        if len(readings) > 1:
            for name, d in readings.items():
                tag = "paper" if d.get("paper") else "analysis"
                ratio = "undefined" if d.get("ratio_undefined_where_violated") else _fmt(d.get("max_ratio"))
                cells = (f"  reading {name} ({tag})", d["verdict"], ratio, _fmt(d.get("max_excess")))
                rows.append(("reading", cells + ("",) * ((8 if wide else 6) - len(cells))))
    return rows


_HEADER = ("check", "verdict", "max ratio", "max excess", "feasible", "time")
_HEADER_WIDE = ("check", "verdict", "max ratio", "max excess", "rate (claimed)", "rate", "feasible", "time")


def summary_table(results: list[dict], width: int | None = None, wide: bool = False) -> str:
    """The verdict table: one row per check (id, verdict, max measured/bound, max excess, feasibility, time), its
    headline (where it says more than the verdict, e.g. ``partly holds: 3 of 6 paper findings refuted``) and its rate
    on lines of their own under it, and one row per reading of a check with several.  Fitted to ``width`` (default
    :func:`terminal_width`); ``wide``: every row on one line, headline and rate in columns."""
    rows = _rows(results, wide)
    header = _HEADER_WIDE if wide else _HEADER
    table = [r for k, r in rows if k != "line"]
    widths = [max(len(str(row[c])) for row in [header, *table]) for c in range(len(header))]
    if not wide:
        width = terminal_width() if width is None else width
        rest = sum(widths[1:]) + 2 * (len(widths) - 1)
        widths[0] = max(16, min(widths[0], width - rest))
    sep = "  "
    lines = [sep.join(str(v).ljust(w) for v, w in zip(header, widths)).rstrip(),
             sep.join("-" * w for w in widths)]
    for kind, row in rows:
        if kind == "line":
            lines.append(row if wide else wrap_line("    " + row, width, indent="      "))
            continue
        first = [str(row[0])] if wide else _wrap_cell(str(row[0]), widths[0])
        for q, part in enumerate(first):
            cells = [part] + ([str(v) for v in row[1:]] if q == 0 else [""] * (len(row) - 1))
            lines.append(sep.join(v.ljust(w) for v, w in zip(cells, widths)).rstrip())
    return "\n".join(lines)
