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

__all__ = ["summary_table", "verdict_lines", "printed_formula_warnings", "terminal_width", "wrap_line", "command_lines",
           "DEFAULT_WIDTH"]

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
    why = (r.get("evidence") or {}).get("rate_reason") if verdict == "inconclusive" else None
    return f"rate {fitted} (claimed {r['claimed_rate']:.3g}): {verdict}" + (f" ({why})" if why else "")


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
        widths[0] = max(10, min(widths[0], width - rest))
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


def printed_formula_warnings(r: dict) -> list[str]:
    """One warning line per bound whose declared formula is not proved equal to the LaTeX the claim says the
    paper prints (``Bound(latex=...)``) and whose difference is not closed by a corrected formula proved equal
    to it (the record's ``check``: a ``latex_note`` alone does not close it): a warning, never a change of the claim's
    verdict."""
    out = []
    for name, rec in ((r.get("formula") or {}).get("printed") or {}).items():
        if not isinstance(rec, dict) or rec.get("verdict") == "equal" or rec.get("reconstructed"):
            continue      # a reconstruction is marked in the headline, not checked
        if rec.get("check") == "pass" or ("check" not in rec and rec.get("note")):   # older files: a note explains
            continue
        how = "differs from" if rec.get("verdict") == "differs" else "is not proved equal to"
        out.append(f"warning: {r['id']}: bound {name!r}: the declared formula {how} the printed LaTeX "
                   f"({rec.get('evidence', '')}); the claim's verdict is unchanged")
    return out


def _here(command: str) -> str:
    """A command with the absolute paths under the current folder made relative (shorter; it runs from here, where
    it is printed -- the results and the reports keep the absolute paths, which run from anywhere)."""
    import os
    import shlex
    try:
        tokens = shlex.split(command)
        cwd = os.getcwd()
    except (ValueError, OSError):
        return command
    out = [os.path.relpath(t, cwd) if os.path.isabs(t) and t.startswith(cwd + os.sep) else t for t in tokens]
    return " ".join(shlex.quote(t) for t in out)


def verdict_lines(results: list[dict], width: int | None = None, wide: bool = False) -> str:
    """What ``fedcheck verify`` prints about its results: the verdict table, then per check the reason of a verdict
    other than holds, the printed-formula warnings and each saved refuting instance with the command that reruns the
    claim on it -- all fitted to ``width`` (default :func:`terminal_width`) unless ``wide``."""
    from fedcheck.core import verdict as V
    width = terminal_width() if width is None else width
    lines = [summary_table(results, width=width, wide=wide)]
    for r in results:
        if r["verdict"] != V.HOLDS and r.get("reason"):
            lines.append(wrap_line(f"{r['id']}: {r['verdict']}: {r['reason']}", width, wide=wide))
        for line in printed_formula_warnings(r):
            lines.append(wrap_line(line, width, wide=wide))
        reruns = {e["instance"]: _here(e["command"]) for e in r.get("rerun") or [] if isinstance(e, dict)}
        for path in r.get("saved_instances") or []:
            if path in reruns:          # the command names the file
                lines.append(f"{r['id']}: refuting instance saved; rerun the claim on it with:")
                lines.append(command_lines(reruns[path], width, first="  ", indent="      ", wide=wide))
            else:
                lines.append(wrap_line(f"{r['id']}: refuting instance saved to {path}", width, wide=wide))
    return "\n".join(lines)
