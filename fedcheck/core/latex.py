"""The paper's printed formula against the declared bound: parse the LaTeX, prove the two equal.

A :class:`~fedcheck.core.evidence.Bound` may carry ``latex`` (the formula as the paper prints it, verbatim),
``latex_symbols`` (the paper's notation mapped to the declared symbols) and ``latex_note`` (an explained, exact
difference: a typo of the paper, a reading).  :func:`check_bound` parses the printed formula with SymPy's LaTeX
parser (the ANTLR backend: ``antlr4-python3-runtime`` 4.11, a runtime dependency; the Lark backend of SymPy 1.14
cannot read ``D^{2}L`` or ``\\left(`` after a letter), substitutes the notation, and decides:

* ``equal``: SymPy simplifies printed - declared to 0 **and** a randomized numeric check at 50 digits agrees;
* ``differs``: the two differ at a point (the numeric witness is recorded, with the simplified difference);
* ``undecided``: the parse failed, a symbol of the printed formula is not mapped, or SymPy could not prove a
  difference that is numerically zero -- never reported as equal.

The notation map: each key is a LaTeX snippet that occurs verbatim in ``latex`` (``r"\\|\\mathbf{Y}^*\\|"``,
``r"\\lambda_0"``, ``"C"``), replaced by a placeholder symbol before parsing and then by its value (a SymPy
expression in the declared symbols: a name, or a whole definition such as the paper's ``C``).  A key that is a
SymPy symbol instead substitutes into the *declared* expression (a reading: ``{c_n: sqrt(n)}`` selects the
printed form of a bound declared with a switch).  Symbols of the printed formula that no key names are matched
to the declared symbols by name (``t``, ``n``, ``L``, ``D``).  Two conventions of printed bounds, stated once:
a letter before a parenthesis is a product (``\\lambda_0(L + n\\lambda_0)``; bounds define no functions),
``\\left``/``\\right`` only size their delimiters, and an unbraced script takes one token as in TeX (``^2 7`` is a
square times 7: the parser alone would read 27).
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any, Mapping

import sympy as sp

__all__ = ["parse", "check_bound", "check_formula", "EQUAL", "DIFFERS", "UNDECIDED", "PASS", "FAIL",
           "printed_formula_check", "unchecked_definitions", "bounds_without_latex", "RECONSTRUCTED", "LOST",
           "reconstruction_note"]

EQUAL, DIFFERS, UNDECIDED = "equal", "differs", "undecided"
RECONSTRUCTED = "reconstructed"      # a bound whose printed formula the paper's text lost: rebuilt, nothing to check
LOST = "reconstructed (the paper's text lost the formula)"
PASS, FAIL = "pass", "fail"      # the printed-formula check of a bound (check_bound's "check")
PARSER = "sympy.parsing.latex.parse_latex (ANTLR backend)"
_POINTS = 24            # random points of the numeric check
_DIGITS = 50            # working precision of the numeric check
_memo: dict = {}        # key -> record (one process; a check is deterministic)

_SIZING = [(r"\left(", "("), (r"\right)", ")"), (r"\left[", "("), (r"\right]", ")"), (r"\left\{", "("),
           (r"\right\}", ")"), (r"\left\lbrace", "("), (r"\right\rbrace", ")"), (r"\bigl(", "("), (r"\bigr)", ")"),
           (r"\Bigl(", "("), (r"\Bigr)", ")"), (r"\big(", "("), (r"\big)", ")"), (r"\Big(", "("), (r"\Big)", ")")]
_SPACES = re.compile(r"\\(?:quad|qquad|,|;|!|:|displaystyle|textstyle)(?![A-Za-z])")


def _placeholder(k: int) -> str:
    """``fcsyma``, ``fcsymb``, ...: letters only (the parser's ``\\mathit{}`` takes no digits)."""
    letters = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        letters = chr(97 + r) + letters
    return "fcsym" + letters


_SCRIPT = re.compile(r"([\^_])\s*([A-Za-z0-9])")


def _normalize(latex: str) -> str:
    s = latex
    for a, b in _SIZING:
        s = s.replace(a, b)
    s = _SPACES.sub(" ", s)
    # an unbraced script takes one token, as in TeX ("^2 7^{2/3}" is x^2 * 7^(2/3)); the parser would read "2 7" as 27
    s = _SCRIPT.sub(lambda m: f"{m.group(1)}{{{m.group(2)}}}", s)
    return s.strip().rstrip(",.;").strip()


_COMMAND = re.compile(r"(\\[A-Za-z]+|\\.)")


def _substitute_notation(latex: str, keys: list, strict: bool = True) -> tuple[str, dict]:
    """Replace each notation key by a placeholder symbol, longest first and in one pass: a key with a backslash
    (``\\lambda_0``, ``\\|\\mathbf{Y}^*\\|``) wherever it occurs; a plain key (``t``, ``C``, ``p``) only outside
    command names, so that ``t`` never touches ``\\frac`` or ``\\sqrt``."""
    marks, holders = {}, {}
    s = latex
    for k, key in enumerate(sorted(keys, key=len, reverse=True)):
        mark = chr(0xE000 + k)            # a private-use character: no key can match inside it
        marks[mark] = _placeholder(k)
        holders[_placeholder(k)] = key
        if "\\" in key:
            if key not in s:
                if not strict:
                    continue
                raise ValueError(f"the notation {key!r} does not occur in the printed formula")
            s = s.replace(key, mark)
        else:
            parts = _COMMAND.split(s)      # odd items are command names: left alone
            hit = False
            for i in range(0, len(parts), 2):
                if key in parts[i]:
                    hit = True
                    parts[i] = parts[i].replace(key, mark)
            if not hit:
                if not strict:
                    continue
                raise ValueError(f"the notation {key!r} does not occur in the printed formula")
            s = "".join(parts)
    for mark, ph in marks.items():
        s = s.replace(mark, r" \mathit{" + ph + "} ")
    return s, holders


def _products(e):
    """``f(x)`` of an undefined ``f`` -> ``f * x`` (a product), ``max``/``min`` -> ``Max``/``Min``."""
    from sympy.core.function import AppliedUndef

    def fix(a):
        name = type(a).__name__
        args = [_products(x) for x in a.args]
        if name in ("max", "Max"):
            return sp.Max(*args)
        if name in ("min", "Min"):
            return sp.Min(*args)
        if len(args) == 1:
            return sp.Symbol(name) * args[0]
        raise ValueError(f"the printed formula applies an undefined function {name} to {len(args)} arguments")
    apps = sorted(e.atoms(AppliedUndef), key=lambda a: -sp.count_ops(a))
    for a in apps:
        if a in e.atoms(AppliedUndef):
            e = e.xreplace({a: fix(a)})
    return e


def parse(latex: str, notation: Mapping | None = None, strict: bool = True) -> tuple[sp.Expr, dict]:
    """The printed formula as SymPy, with the notation substituted: ``(expr, placeholders)``; raises
    ``ValueError`` (with the parser's message) when the LaTeX cannot be parsed.  ``strict=False``: a notation
    key the formula does not contain is skipped (a corrected formula, a definition: they use part of the map)."""
    from sympy.parsing.latex import parse_latex
    s, holders = _substitute_notation(latex, [k for k in (notation or {}) if isinstance(k, str)], strict)
    s = _normalize(s)
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = parse_latex(s, strict=True)     # strict: never a silently truncated parse
    except ImportError as exc:   # pragma: no cover - a declared dependency
        raise ValueError(f"the LaTeX parser is not available ({exc}): pip install 'antlr4-python3-runtime==4.11.*'")
    except Exception as exc:
        raise ValueError(f"the LaTeX parser cannot read it: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    if isinstance(e, (sp.Rel, sp.logic.boolalg.Boolean)) and not isinstance(e, sp.Expr):
        raise ValueError(f"the printed formula parses as a relation ({e}), not an expression: give its right-hand side")
    # the parser builds unevaluated nodes (9**(3**-1)): evaluate them, so that numbers are exact SymPy numbers
    e = _products(sp.sympify(e)).doit()
    return e, holders


def _value_map(notation: Mapping | None, holders: dict) -> dict:
    out = {}
    for ph, key in holders.items():
        out[sp.Symbol(ph)] = sp.sympify(notation[key])
    return out


def _points(symbols, seed: int, n: int):
    """Random positive values (log-uniform in [1/4, 16]) as exact rationals: every declared symbol of a bound is a
    positive quantity (a constant, a count, a round)."""
    rng = random.Random(seed)
    for _ in range(n):
        yield {s: sp.Rational(round(2 ** rng.uniform(-2, 4), 6)).limit_denominator(10 ** 6) for s in symbols}


def _evaluator(e, free):
    """``e`` as an mpmath function of ``free`` (50-digit arithmetic; a SymPy substitution per point is 20x slower)."""
    from fedcheck.core.schedules import lambdify
    return lambdify(free, e, modules=["mpmath"])


def check_formula(printed: sp.Expr, declared: sp.Expr, seed: int = 0) -> dict:
    """Decide ``printed == declared`` (both SymPy, in the same symbols): ``{"verdict", "evidence", "difference"}``."""
    import mpmath
    free = sorted(printed.free_symbols | declared.free_symbols, key=lambda s: s.name)
    diff = printed - declared
    # the randomized cross-check (exact rational points, evaluated with 50 digits)
    worst, witness = 0.0, None
    fp, fd = _evaluator(printed, free), _evaluator(declared, free)
    with mpmath.workdps(_DIGITS):
        for pt in _points(free, seed, _POINTS):
            args = [mpmath.mpf(v.p) / v.q for v in pt.values()]
            try:
                a, b = mpmath.mpmathify(fp(*args)), mpmath.mpmathify(fd(*args))
            except (ValueError, ZeroDivisionError, TypeError, OverflowError):
                continue
            if not (mpmath.isfinite(a) and mpmath.isfinite(b)):
                continue
            rel = float(abs(a - b) / max(1, abs(b)))
            if rel > worst:
                worst, witness = rel, (pt, a, b)
    numerically_equal = worst <= 10.0 ** (-(_DIGITS - 15))
    if not numerically_equal and worst <= 1e-12:      # a rounding artifact is not a witness of a difference
        return {"verdict": UNDECIDED, "difference": sp.sstr(diff),
                "evidence": f"relative difference {worst:.3g} at some point: above {_DIGITS}-digit rounding, below what "
                            "a genuine difference of formulas shows; not decided"}
    try:
        simplified = sp.simplify(diff)
        proved = simplified == 0 or sp.simplify(sp.radsimp(sp.expand(diff))) == 0
    except Exception as exc:      # a simplification that fails proves nothing
        simplified, proved = None, False
        why = f"{type(exc).__name__}: {exc}"
    else:
        why = ""
    if not numerically_equal:
        pt, a, b = witness
        where = ", ".join(f"{s} = {v}" for s, v in pt.items())
        diff_text = sp.sstr(simplified) if simplified is not None else sp.sstr(diff)
        return {"verdict": DIFFERS, "difference": diff_text,
                "evidence": f"at {where}: printed = {mpmath.nstr(a, 12)}, declared = {mpmath.nstr(b, 12)} "
                            f"(relative difference {worst:.3g}, {_DIGITS}-digit evaluation)"}
    if proved:
        return {"verdict": EQUAL, "difference": "0",
                "evidence": f"SymPy simplifies printed - declared to 0; equal to {_DIGITS} digits at {_POINTS} random "
                            "points"}
    return {"verdict": UNDECIDED, "difference": sp.sstr(simplified) if simplified is not None else sp.sstr(diff),
            "evidence": f"equal to {_DIGITS} digits at {_POINTS} random points, but SymPy could not simplify the "
                        f"difference to 0{' (' + why + ')' if why else ''}: not proved"}


def _key(bound) -> str:
    sym = sorted((str(k), sp.srepr(sp.sympify(v))) for k, v in (bound.latex_symbols or {}).items())
    raw = json.dumps({"latex": bound.latex, "symbols": sym, "expr": sp.srepr(bound.expr), "sympy": sp.__version__,
                      "corrected": getattr(bound, "latex_corrected", ""),
                      "definitions": sorted((getattr(bound, "latex_definitions", None) or {}).items())},
                     sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()


def check_bound(bound) -> dict | None:
    """The record of a bound's printed formula (``None`` when it declares none): the printed LaTeX, the notation,
    the parsed and the declared formula (SymPy text and LaTeX), the verdict (``equal``/``differs``/``undecided``),
    its evidence, the exact difference and the note that explains it.  A bound whose formula the paper's text lost
    (``latex_reconstructed``) gets ``{"reconstructed": True, "verdict": "reconstructed", ...}``: marked, not checked."""
    if not getattr(bound, "latex", ""):
        why = getattr(bound, "latex_reconstructed", "")
        if not why:
            return None
        declared = sp.sympify(bound.expr) if bound.expr is not None else None
        return {"latex": "", "reconstructed": True, "verdict": RECONSTRUCTED, "evidence": f"{LOST}: {why}",
                "declared": sp.sstr(declared) if declared is not None else None,
                "declared_latex": sp.latex(declared) if declared is not None else None, "note": why}
    key = _key(bound)
    if key in _memo:
        return dict(_memo[key])
    notation = dict(bound.latex_symbols or {})
    rec: dict[str, Any] = {"latex": bound.latex, "parser": PARSER,
                           "symbols": {str(k): sp.sstr(v) for k, v in notation.items()},
                           "note": bound.latex_note or ""}
    declared = sp.sympify(bound.expr)
    reading = {k: v for k, v in notation.items() if isinstance(k, sp.Basic)}
    if reading:
        declared = declared.subs(reading)
    rec["declared"] = sp.sstr(declared)
    rec["declared_latex"] = sp.latex(declared)
    try:
        parsed, holders = parse(bound.latex, _own_notation(bound, notation))
    except ValueError as exc:
        rec.update({"verdict": UNDECIDED, "evidence": str(exc), "parsed": None, "difference": None})
        rec["check"], rec["check_evidence"] = printed_formula_check(rec)
        _memo[key] = rec
        return dict(rec)
    rec.update(_printed_against(parsed, holders, notation, declared))
    rec["parsed"] = rec.pop("_parsed")
    rec["parsed_latex"] = rec.pop("_parsed_latex")
    corrected = getattr(bound, "latex_corrected", "")
    if corrected:       # the corrected formula of a printed one that differs: proved equal to the tested bound
        rec["corrected"] = _other_formula(corrected, notation, declared)
    defs = dict(getattr(bound, "latex_definitions", None) or {})
    if defs:            # the notation map's values against the paper's own printed definitions
        rec["definitions"] = {}
        for k, text in defs.items():
            if k not in notation:
                rec["definitions"][k] = {"latex": text, "verdict": UNDECIDED,
                                         "evidence": f"{k!r} is not a key of latex_symbols"}
                continue
            rest = {kk: v for kk, v in notation.items() if kk != k}
            rec["definitions"][k] = _other_formula(text, rest, sp.sympify(notation[k]))
    rec["unchecked_definitions"] = unchecked_definitions(bound)
    rec["check"], rec["check_evidence"] = printed_formula_check(rec)
    _memo[key] = rec
    return dict(rec)


def _own_notation(bound, notation: Mapping) -> dict:
    """The notation keys the printed formula itself must contain: a key it does not contain is an error of the
    declaration (refused by the strict parse), unless a printed definition or the corrected formula uses it (a
    definition may be written in notation of its own: (57)'s ``\\mathcal{E}`` under (62)'s ``dist``)."""
    others = list((getattr(bound, "latex_definitions", None) or {}).values()) + [getattr(bound, "latex_corrected", "")]
    rest, absent = bound.latex, set()
    for k in sorted((k for k in notation if isinstance(k, str)), key=len, reverse=True):    # longest first, as parsed
        if k not in rest and any(k in o for o in others):
            absent.add(k)
        rest = rest.replace(k, " ")
    return {k: v for k, v in notation.items() if k not in absent}


def _printed_against(parsed, holders, notation, declared) -> dict:
    """A parsed formula (placeholders of the notation in it) against ``declared``: its verdict record."""
    printed = parsed.subs(_value_map(notation, holders))
    by_name = {s.name: s for s in declared.free_symbols}
    rename = {s: by_name[s.name] for s in printed.free_symbols if s.name in by_name and s != by_name[s.name]}
    printed = printed.xreplace(rename)
    out = {"_parsed": sp.sstr(printed), "_parsed_latex": sp.latex(printed)}
    unmapped = sorted(s.name for s in printed.free_symbols - declared.free_symbols)
    if unmapped:
        out.update({"verdict": UNDECIDED, "difference": None,
                    "evidence": f"symbols of the printed formula without a declared counterpart: {', '.join(unmapped)} "
                                "(name them in latex_symbols)"})
    else:
        out.update(check_formula(printed, declared))
    return out


def _other_formula(text: str, notation: Mapping, target) -> dict:
    """A second formula in the paper's notation (a corrected bound, a printed definition) against ``target``."""
    rec: dict[str, Any] = {"latex": text}
    try:
        parsed, holders = parse(text, notation, strict=False)
    except ValueError as exc:
        rec.update({"verdict": UNDECIDED, "evidence": str(exc), "parsed": None, "difference": None})
        return rec
    out = _printed_against(parsed, holders, notation, sp.sympify(target))
    rec["parsed"] = out.pop("_parsed")
    out.pop("_parsed_latex")
    rec.update(out)
    return rec


def unchecked_definitions(bound) -> list[str]:
    """The notation keys of ``bound`` whose value is a definition (not a bare symbol or number: the paper's
    ``C``, a step (E.2), a shifted index ``t -> t - 1``) with no printed definition to check it against
    (``latex_definitions``): trusted as declared."""
    defs = getattr(bound, "latex_definitions", None) or {}
    out = []
    for k, v in (getattr(bound, "latex_symbols", None) or {}).items():
        if not isinstance(k, str) or k in defs:
            continue
        e = sp.sympify(v)
        if not isinstance(e, (sp.Symbol, sp.Number)):
            out.append(k)
    return out


def printed_formula_check(rec: Mapping) -> tuple[str, str]:
    """``(pass|fail, why)`` of a bound's printed-formula record: it passes when the printed formula is proved
    equal to the tested bound, or differs and carries a corrected formula proved equal to it (a ``latex_note``
    alone never excuses a difference), and every printed definition of the notation map is proved equal to its
    value.  Undecided is a failure (never read as equal)."""
    why = []
    v = rec.get("verdict")
    if v == UNDECIDED:
        why.append(f"the printed formula is undecided ({rec.get('evidence')})")
    elif v == DIFFERS:
        c = rec.get("corrected")
        if not c:
            why.append("the printed formula differs from the tested bound and no corrected formula is given "
                       "(latex_corrected; a note alone does not excuse a difference)")
        elif c.get("verdict") != EQUAL:
            why.append(f"the corrected formula is not proved equal to the tested bound: {c.get('verdict')} "
                       f"({c.get('evidence')})")
    for k, d in (rec.get("definitions") or {}).items():
        if d.get("verdict") != EQUAL:
            why.append(f"the notation map's {k!r} is not the paper's printed definition: {d.get('verdict')} "
                       f"({d.get('evidence')})")
    if why:
        return FAIL, "; ".join(why)
    if v == DIFFERS:
        return PASS, "differs as printed; the corrected formula is proved equal to the tested bound"
    return PASS, "the printed formula is proved equal to the tested bound"


def bounds_without_latex(claims) -> list[tuple[str, str]]:
    """``(claim id, bound name)`` of every paper bound (``paper=True``) of a bound test declared without the
    paper's printed formula (``latex=``)."""
    from fedcheck.core.evidence import BoundTest
    out = []
    for c in claims:
        ev = getattr(c, "evidence", None)
        if isinstance(ev, BoundTest):
            out += [(c.id, b.name) for b in ev.bounds if b.paper and not b.latex]
    return out


def reconstruction_note(printed: Mapping | None) -> str:
    """What a headline adds for a claim whose bounds are reconstructions (``" [reconstructed (the paper's text lost
    the formula): objective, ...]"``); empty when none is."""
    names = [name for name, rec in (printed or {}).items() if isinstance(rec, Mapping) and rec.get("reconstructed")]
    return f" [{LOST}: {', '.join(names)}]" if names else ""
