"""What a check's page shows, shared by the HTML and the PDF: :func:`check_context` gathers and formats it (facts,
formulas, readings, evidence, the check's tables, per-instance results, provenance)."""
from __future__ import annotations

from typing import Any

from fedcheck.core import verdict as V
from fedcheck.report.common import PARAGRAPH_RATE, fmt, instance_label, tone
from fedcheck.report.typeset import template_formula

_MEANING = {
    V.HOLDS: "The claim holds on every instance and round checked, within fedcheck's tolerance policy.",
    V.VIOLATED: "The claim is refuted: at least one instance contradicts it (see why below).",
    V.INCONCLUSIVE: "Undecided: nothing refutes the claim, but at least one instance or round could not be decided.",
    V.REPRODUCED: "The claimed counterexample behaviour is reproduced.",
    V.NOT_REPRODUCED: "The claimed counterexample behaviour does not reproduce.",
}


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
    ctx["bound"] = template_formula(bound, formula.get("bound_text"), 22) if (bound or formula.get("bound_text")) else None
    ctx["schedules"] = [(name, _schedule_formula(name, tex, chk.get("params") or {}))
                        for name, tex in (formula.get("schedules") or {}).items()]
    readings = []
    for name, d in (formula.get("readings") or {}).items():
        d = d or {}
        subs = [template_formula(v, f"{k} = {v}", 17, lhs=_latex_name(k)) for k, v in (d.get("substitutions") or {}).items()]
        readings.append({"name": name, "paper": bool(d.get("paper", True)), "description": d.get("description", ""),
                         "subs": subs, "full": template_formula(d.get("latex"), d.get("latex"), 18)})
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
                        _verdict_cell(chk.get("rate_verdict"))]], PARAGRAPH_RATE)
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
        if rec.get("reconstructed"):       # the paper's text lost the formula: the tested one is a reconstruction
            out.append({"bound": name, "verdict": "reconstructed (the paper's text lost the formula)", "tone": "unknown",
                        "paper": None, "tested": template_formula(rec.get("declared_latex"), rec.get("declared"), 17),
                        "evidence": "", "note": rec.get("note") or "", "difference": "", "reconstructed": True})
            continue
        out.append({"bound": name, "verdict": rec.get("verdict") or "-", "tone": {"equal": "good", "differs": "bad"}.get(
                        rec.get("verdict"), "unknown"),
                    "paper": template_formula(rec.get("latex"), rec.get("latex"), 17),
                    "tested": template_formula(rec.get("declared_latex"), rec.get("declared"), 17),
                    "evidence": rec.get("evidence") or "", "note": rec.get("note") or "",
                    "difference": rec.get("difference") if rec.get("verdict") != "equal" else "", "reconstructed": False})
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
            return template_formula(value, f"{name} = {value} (the parameter {p})", 18, lhs=_latex_name(name))
    return template_formula(tex, f"{name} = {tex}", 18, lhs=_sched_lhs(name))


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
        row: list[Any] = [instance_label(inst, j)]
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
        row = [instance_label(inst, j), fmt(inst.get("F_star"), 8), fmt(inst.get("F_star_certified_accuracy"), 2),
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
        srows.append([n, notes[0] + (f" [{instance_label(instances[0], 0)}; the note differs between instances]"
                                     if len(notes) > 1 else ""),
                      f"{exact} of {len(recs)}"])
    sym_table = _table("What the constants are", ["constant", "meaning", "exact on"], srows) if srows else None
    return inst_table, const_table, sym_table
