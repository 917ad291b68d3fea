"""The tidy table of results: :func:`to_frame` (``Results.to_frame()``; ``fedcheck verify --table FILE.csv|.parquet``
writes the same with :func:`write_table`).

The table is derived from the result dicts alone -- it works on a results file read back from disk as well: one row
per observation (a check, finding, reading, bound, instance, run and point), with the run's id, time, fedcheck
version and git commit, the parameters as ``p_<name>`` columns, the statistic's interval and standard error, the
bound, the slack's scale and tolerances -- everything the verdict of every claim is recomputed from, with pandas
alone.  Every column is described in :data:`TABLE_DOC`, in ``docs/TABLE.md`` (with the recomputation) and in the
Parquet file itself.

Round-axis claims are judged at every round; the table (like the JSON) holds the recorded rounds (every
round up to 1000, then 50 per decade) and, per comparison, one ``every round`` row counting what was judged at every
round.  Measurements and proofs have no observations: one ``finding`` row each, with its verdict.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from fedcheck.core.errors import BadInput

__all__ = ["to_frame", "write_table", "check_table_path", "table_metadata", "TABLE_COLUMNS", "TABLE_DOC",
           "TABLE_SUFFIXES"]

TABLE_SUFFIXES = (".csv", ".parquet")


def finite_float(x) -> float | None:
    """``float(x)`` when it is a finite number, else ``None``."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


#: every column of the tidy table, in order, with what it holds (written into the Parquet file's own metadata;
#: ``docs/TABLE.md`` says the same, and ``tests/test_table.py`` checks that they agree).  ``p_<name>`` columns (one
#: per parameter of the checks in the table) follow these.
TABLE_DOC: dict[str, str] = {
    "run_id": "the run (one fedcheck verify / fedcheck.verify call): a random hex id, the same on every row of the run",
    "time": "when the run's results were made (UTC)",
    "fedcheck_version": "the fedcheck release that made them",
    "git_commit": "the git commit of fedcheck's source, where known",
    "check": "the claim's id (fedfw.theorem1)",
    "paper": "the key of the paper the claim is from (fedfw) -- not whether a finding is the paper's (finding_kind)",
    "kind": "the claim's kind: bound, expectation, counterexample, measurement, symbolic",
    "check_verdict": "the claim's verdict as fedcheck gave it (recomputable from the rows: docs/TABLE.md)",
    "expected": "the verdict the claim's declaration expects (compared by verify --expect; never decides)",
    "finding_index": "the position of the finding among the claim's findings (the order verdicts are combined in)",
    "finding": "the finding the row belongs to: a reading, a bound, 'bound | reading', or a measured or proved "
               "finding; 'feasibility' for the iterates' feasibility",
    "finding_kind": "paper (the paper states it: only these decide), analysis (beside them), or feasibility",
    "finding_verdict": "the finding's verdict",
    "deviation": "how the tested setting differs from the one the paper states (empty: the paper's setting)",
    "statistic": "how runs are combined: pathwise (every run, every point), mean (mean +- a Student t interval at "
                 "the level of 3 standard errors), "
                 "fraction (Clopper-Pearson interval of the failing fraction); empty for findings with no rows of "
                 "observations",
    "z": "for a mean: the number of standard errors added to the interval (the Student t quantile with runs - 1 "
         "degrees of freedom at the two-sided level of 3 standard errors, 0.9973)",
    "max_fraction": "for a fraction: the largest fraction of failing runs allowed",
    "sweep_parameter": "for a finding judged over a sweep (a theorem 'for all small enough' a parameter, swept towards "
                       "its limit): the swept parameter; empty otherwise",
    "sweep_value": "the swept parameter's value of the row",
    "sweep_index": "the value's position in the sweep (0 first); the finding holds if it holds at the last value, is "
                   "violated if violated at every value, else inconclusive",
    "sweep_values": "how many values the sweep has",
    "reading": "the reading of the bound (its constants read one way: statement, proof-end, ...)",
    "bound": "the bound's name",
    "relation": "<=, >= or ==: measured (relation) bound",
    "instance": "the case: an instance (seed 3), a configuration, with its parameter setting",
    "seed": "the instance's seed, where it has one",
    "idx_rep": "the run's index among the independent runs (replicates) of one instance, for a per-run row; empty "
               "for a row of a mean over runs",
    "n_replicates": "the number of independent runs of the instance behind the row",
    "axis": "round (every round of one run), horizon (one run per horizon T), point (any other points), finding "
            "(a finding measured or proved without rows of observations), feasibility",
    "t": "where on the axis: for round, the iterate index t of the bound's t (x^t: t = 1 the start, t = T + 1 after "
         "T rounds); for horizon, T; for point, the point when it is a number",
    "point": "the point when it is not a number (an (r, k) pair)",
    "row": "point: one observation at one point; every round: what a comparison judged at every round (also between "
           "the recorded rounds) counted; finding: a finding with no observations (its verdict taken as it is); "
           "recorded: a recorded value of a check whose experiment judges its findings itself (shown, not "
           "recomputed); feasibility: an instance's feasibility",
    "measured": "the measured quantity (for a mean: the mean over the runs)",
    "measured_lo": "the lower end of its certified interval (an exact optimum is known to an interval)",
    "measured_hi": "the upper end of its certified interval",
    "se": "for a mean: its standard error over the runs (max of those of the two ends)",
    "stat_lo": "the lower end of the interval the verdict compares: measured_lo, or measured_lo - z se for a mean",
    "stat_hi": "the upper end of the interval the verdict compares: measured_hi, or measured_hi + z se for a mean",
    "bound_lo": "the bound's value there, lower end (a constant known to an interval)",
    "bound_value": "the bound's value there (upper end)",
    "scale": "the size of the quantities subtracted, in the slack: slack(b) = rtol |b| + atol max(1, |scale|)",
    "rtol": "the tolerance policy's relative slack (fedcheck/core/verdict.py)",
    "atol": "the tolerance policy's absolute slack",
    "confidence": "the policy's confidence level (Clopper-Pearson intervals of a fraction)",
    "ratio": "measured/bound for <=, bound/measured for >=, |measured - bound| for ==, at the bound's deciding end "
             "(bound_lo for <=, bound_value for >= and ==); empty where the bound is negligible",
    "trivial": "the trivial bound of the measured quantity there: the largest value it can take over the claim's "
               "class (the smallest for >=), certified; inf where the metric declares that none is finite (an "
               "unbounded domain: vacuity unknown); empty where the metric declares none",
    "vacuous": "whether the bound could not have failed there: bound_lo >= trivial for <= (bound_value <= trivial "
               "for >=); empty where the trivial bound is unknown",
    "point_verdict": "this point's verdict by the slack rule: holds if stat_hi <= bound_lo + slack(bound_lo), "
                     "violated if stat_lo > bound_value + slack(bound_value), else inconclusive (>=: the roles "
                     "swapped; ==: both; a value that is not finite: inconclusive)",
    "points_judged": "every round rows: the points the comparison judged (recorded or not)",
    "violations_judged": "every round rows: how many of them were violated",
    "undecided_judged": "every round rows: how many were undecided",
    "run_failed": "every round rows of a run: whether the run certainly failed at some point",
    "case_reason": "why this case cannot decide (an inaccurate solve, a broken assumption): its verdict is then at "
                   "best inconclusive",
    "case_verdict": "the verdict of this case (instance) for this reading and bound",
    "feasibility_decides": "whether the feasibility of the iterates decides the claim's verdict (else reported beside)",
}
TABLE_COLUMNS = tuple(TABLE_DOC)
_FLOATS = ("z", "max_fraction", "sweep_value", "t", "measured", "measured_lo", "measured_hi", "se", "stat_lo", "stat_hi", "bound_lo",
           "bound_value", "scale", "rtol", "atol", "confidence", "ratio", "trivial")
_INTS = ("finding_index", "seed", "idx_rep", "n_replicates", "points_judged", "violations_judged", "undecided_judged",
         "sweep_index", "sweep_values")
_BOOLS = ("run_failed", "feasibility_decides", "vacuous")


def _finding_of(chk: dict, bound: str, reading: str) -> str:
    rd = chk.get("readings") or {}
    for name in (f"{bound} | {reading}", reading, bound):
        if name in rd:
            return name
    return reading


def _first_bound(chk: dict) -> str:
    b = (chk.get("formula") or {}).get("bounds")
    if isinstance(b, dict) and b:
        return next(iter(b))
    for d in (chk.get("readings") or {}).values():
        if isinstance(d, dict) and isinstance(d.get("bounds"), dict) and d["bounds"]:
            return next(iter(d["bounds"]))
    return ""


def _instance_label(rec: dict, j: int) -> str:
    if rec.get("label"):
        return str(rec["label"])
    base = f"seed {rec['seed']}" if rec.get("seed") is not None else None
    if base is None:
        inst = rec.get("instance")
        base = (inst.get("source") if isinstance(inst, dict) else None) or f"instance {j + 1}"
    return f"{rec['case']}, {base}" if rec.get("case") else base


def _ratio(m, b, relation):
    """measured/bound (``<=``), bound/measured (``>=``), |measured - bound| (``==``); NaN where the bound is
    negligible (the judge's rule: its ratio means nothing there, its excess does)."""
    import numpy as np

    from fedcheck.core.verdict import POLICY
    m, b = np.asarray(m, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if relation == ">=":
            r = np.where(m != 0, b / m, np.nan)
        elif relation == "==":
            return np.abs(m - b)
        else:
            r = np.where(b != 0, m / b, np.nan)
        negligible = np.abs(b) <= POLICY.negligible_bound * np.maximum(1.0, np.abs(m))
    return np.where(negligible, np.nan, r)


def _point(x) -> float:
    v = finite_float(x)
    return float("nan") if v is None else v


def _arr(x, n=None):
    """A list of numbers (``None``: NaN, ``"inf"``) as a float array; ``None`` if it is not one (or not ``n`` long)."""
    import numpy as np
    if x is None:
        return None
    try:
        a = np.array([np.nan if v is None else float(v) for v in np.ravel(np.asarray(x, dtype=object))], dtype=float)
    except (TypeError, ValueError):
        return None
    return a if n is None or a.size == n else None


def _codes(lo, hi, b_lo, b_hi, scale, relation):
    """Per point, the verdict code of the slack rule (:func:`fedcheck.core.evidence.compare_interval`)."""
    from fedcheck.core.evidence import compare_interval
    if relation == ">=":
        return compare_interval(b_lo, b_hi, lo, hi, scale)
    if relation == "==":
        import numpy as np
        return np.maximum(compare_interval(lo, hi, b_lo, b_hi, scale), compare_interval(b_lo, b_hi, lo, hi, scale))
    return compare_interval(lo, hi, b_lo, b_hi, scale)


_VERDICT_OF_CODE = ("holds", "inconclusive", "violated")


def _param_columns(params) -> dict:
    out = {}
    for k, v in (params or {}).items():
        if isinstance(v, bool):
            out[f"p_{k}"] = float(v)
        elif isinstance(v, (int, float)) or (isinstance(v, str) and finite_float(v) is not None):
            out[f"p_{k}"] = _point(v)
        elif v is not None:
            out[f"p_{k}"] = str(v)
    return out


def _check_rows(chk: dict, prov: dict) -> list:
    """The rows of one result dict, as pandas frames (module doc)."""
    import pandas as pd
    from fedcheck.core.verdict import POLICY

    rd = chk.get("readings") or {}
    order = {name: q for q, name in enumerate(rd)}
    feas = chk.get("feasibility") or {}
    run = {"run_id": prov.get("run_id"), "time": prov.get("created"), "fedcheck_version": prov.get("fedcheck"),
           "git_commit": prov.get("git"), "check": chk.get("id"), "paper": chk.get("paper"), "kind": chk.get("kind"),
           "check_verdict": chk.get("verdict"), "expected": chk.get("expected"), "rtol": POLICY.rtol,
           "atol": POLICY.atol, "confidence": POLICY.confidence, "feasibility_decides": bool(feas.get("decides"))}
    run.update(_param_columns(chk.get("params")))
    out: list = []

    def finding_cols(name):
        f = rd.get(name) or {}
        return {"finding": name, "finding_index": order.get(name), "finding_verdict": f.get("verdict"),
                "finding_kind": "paper" if f.get("paper", True) else "analysis", "deviation": f.get("deviation") or ""}

    def frame(cols: dict, n: int, arrays: dict):
        return pd.DataFrame({**{c: [v] * n for c, v in cols.items()}, **arrays})

    instances = [r for r in (chk.get("instances") or []) if isinstance(r, dict)]
    valid_from = finite_float((chk.get("formula") or {}).get("valid_from"))
    observed = set()
    for ob in chk.get("observations") or []:
        if not isinstance(ob, dict):
            continue
        observed.add(ob.get("finding"))
        st = ob.get("statistic") or "pathwise"
        cols = {**run, **finding_cols(ob.get("finding")), "statistic": st, "z": ob.get("z"),
                "max_fraction": ob.get("max_fraction"), "reading": ob.get("reading"), "bound": ob.get("bound"),
                "instance": ob.get("case"), "seed": ob.get("seed"), "case_reason": ob.get("reason"),
                "case_verdict": ob.get("verdict")}
        sw = ob.get("sweep")
        if isinstance(sw, dict):
            cols.update({"sweep_parameter": sw.get("parameter"), "sweep_value": sw.get("value"),
                         "sweep_index": sw.get("index"), "sweep_values": sw.get("values")})
        judged = ob.get("judged")
        curves = ob.get("curves")
        if curves is not None:                        # the recorded points: the instance's curves
            rows = _curve_rows(instances, curves, ob, cols, valid_from, frame)
            if rows is not None:
                out.extend(rows)
        elif judged is None:                          # the comparison's own values
            out.extend(_comparison_rows(ob, cols, frame))
        if judged is not None:                        # what was judged at every point, recorded or not
            rel = judged.get("relation") or "<="
            summary = {**cols, "relation": rel, "axis": "round", "row": "every round",
                       "points_judged": judged.get("points"), "violations_judged": judged.get("violations"),
                       "undecided_judged": judged.get("undecided"), "n_replicates": judged.get("samples")}
            failing = ob.get("failing")
            if failing and len(failing) > 1:          # per run: did it fail (a fraction counts the runs)
                out.append(frame(summary, len(failing), {"idx_rep": list(range(len(failing))),
                                                         "run_failed": [bool(x) for x in failing]}))
            else:
                out.append(frame(summary, 1, {"idx_rep": [0 if failing else None],
                                              "run_failed": [bool(failing[0]) if failing else None]}))
    for name, f in rd.items():                      # findings with no observations: measured, proved, or added
        if name in observed or not isinstance(f, dict):
            continue
        out.append(frame({**run, **finding_cols(name), "axis": "finding", "row": "finding",
                          "case_verdict": f.get("verdict")}, 1, {}))
    if feas:
        for j, rec in enumerate(instances):
            fr = rec.get("feasibility")
            if not isinstance(fr, dict):
                continue
            m, tol = _point(fr.get("max_infeasibility")), _point(fr.get("tolerance"))
            out.append(frame({**run, "finding": "feasibility", "finding_kind": "feasibility",
                              "finding_verdict": feas.get("verdict"), "deviation": "", "axis": "feasibility",
                              "row": "feasibility", "instance": _instance_label(rec, j),
                              "seed": rec.get("seed") if isinstance(rec.get("seed"), int) else None,
                              "relation": "<=", "measured": m, "bound_lo": tol, "bound_value": tol,
                              "stat_lo": m, "stat_hi": m, "case_verdict": fr.get("verdict")}, 1, {}))
    if not chk.get("observations") and instances:   # a results file written before observations were kept
        out.extend(_legacy_frames(chk, run, finding_cols))
    return out


def _point_frame(cols, frame, pts, lo, hi, val, se, z, b_lo, b_hi, scale, rel, idx_rep, n_rep, trivial=None):
    import numpy as np
    n = len(pts)
    decide = b_lo if rel == "<=" else b_hi          # the end of the bound's interval that decides the verdict
    if trivial is None:
        trivial = np.full(n, np.nan)
    with np.errstate(invalid="ignore"):
        vac = decide >= trivial if rel == "<=" else (decide <= trivial if rel == ">=" else np.zeros(n, bool))
    vacuous = [None if not np.isfinite(tv) or rel == "==" else bool(v) for tv, v in zip(trivial, vac)]
    num = np.array([_point(p) if not isinstance(p, (list, tuple)) else np.nan for p in pts], dtype=float)
    label = [None if not isinstance(p, (list, tuple)) and finite_float(p) is not None else str(p) for p in pts]
    if se is not None:
        with np.errstate(invalid="ignore"):
            s_lo, s_hi = lo - z * se, hi + z * se
    else:
        s_lo, s_hi = lo, hi
    codes = _codes(s_lo, s_hi, b_lo, b_hi, scale, rel)
    return frame({**cols, "relation": rel, "row": "point"}, n, {
        "t": num, "point": label, "measured": val, "measured_lo": lo, "measured_hi": hi,
        "se": se if se is not None else np.full(n, np.nan), "stat_lo": s_lo, "stat_hi": s_hi, "bound_lo": b_lo,
        "bound_value": b_hi, "scale": scale, "ratio": _ratio(val, decide, rel), "trivial": trivial,
        "vacuous": vacuous,
        "point_verdict": [_VERDICT_OF_CODE[int(c)] for c in codes], "idx_rep": [idx_rep] * n,
        "n_replicates": [n_rep] * n})


def _comparison_rows(ob: dict, cols: dict, frame) -> list:
    """Rows of a comparison whose values the observation keeps: per run and point, or per point for a mean."""
    import numpy as np
    pts = list(ob.get("points") or [])
    P = len(pts)
    rel = ob.get("relation") or "<="
    b_lo = _arr(ob.get("bound_lo"), P)
    b_hi = _arr(ob.get("bound_hi"), P) if ob.get("bound_hi") is not None else b_lo
    sc = ob.get("scale", 1.0)
    scale = np.full(P, _point(sc)) if not isinstance(sc, list) else _arr(sc, P)
    if b_lo is None or b_hi is None or scale is None:
        return []
    trivial = _arr(ob.get("trivial"), P) if ob.get("trivial") is not None else None
    axis = {"round": "round", "T": "horizon", "R": "horizon"}.get(ob.get("point_name"), "point")
    cols = {**cols, "axis": axis}
    S = int(ob.get("samples") or 1)
    if ob.get("statistic") == "mean":     # (written once where they coincide: runner.observation_record)
        lo = _arr(ob.get("mean_lo"), P)
        hi = _arr(ob.get("mean_hi"), P) if ob.get("mean_hi") is not None else lo
        se = _arr(ob.get("se"), P)
        if lo is None or hi is None or se is None:
            return []
        val = _arr(ob.get("value"), P) if ob.get("value") is not None else (hi if rel != ">=" else lo)
        return [_point_frame(cols, frame, pts, lo, hi, val, se, float(ob.get("z")), b_lo, b_hi, scale, rel, None, S,
                             trivial)]
    lo = _arr(ob.get("lo"))
    hi = _arr(ob.get("hi")) if ob.get("hi") is not None else lo
    if lo is None or hi is None or lo.size != S * P or hi.size != S * P:
        return []
    lo, hi = lo.reshape(S, P), hi.reshape(S, P)
    val = _arr(ob.get("value"))
    val = val.reshape(-1, P) if val is not None and val.size in (P, S * P) and P else (hi if rel != ">=" else lo)
    out = []
    for q in range(S):
        v = val[q] if val.shape[0] == S else val[0]
        out.append(_point_frame(cols, frame, pts, lo[q], hi[q], v, None, None, b_lo, b_hi, scale, rel, q, S, trivial))
    return out


def _curve_rows(instances: list, curves: dict, ob: dict, cols: dict, valid_from, frame):
    """Rows at the recorded rounds of a round-axis comparison, from the instance's curves."""
    import numpy as np
    j, g = curves.get("instance"), curves.get("grid", 0)
    if not isinstance(j, int) or not 0 <= j < len(instances):
        return None
    rec = instances[j]
    k = _arr(rec.get("rounds"))
    if k is None:
        return None
    grid = rec.get("grid") or [{"params": {}, "parts": {ob.get("bound"): {
        "metric": rec.get("metric"), "metric_interval": rec.get("metric_interval") or {},
        "metric_se": rec.get("metric_se"), "bound": rec.get("bound") or {}, "readings": rec.get("readings") or {}}}}]
    if not isinstance(g, int) or not 0 <= g < len(grid):
        return None
    entry = grid[g]
    part = (entry.get("parts") or {}).get(ob.get("bound"))
    if part is None and len(entry.get("parts") or {}) == 1:
        part = next(iter(entry["parts"].values()))
    if not isinstance(part, dict):
        return None
    n = k.size
    val, b = _arr(part.get("metric"), n), _arr((part.get("bound") or {}).get(ob.get("reading")), n)
    iv = part.get("metric_interval") or {}
    lo, hi = _arr(iv.get("lo"), n), _arr(iv.get("hi"), n)
    if val is None or b is None or lo is None or hi is None:
        return None
    R = int(rec.get("replicates") or 1)
    st = ob.get("statistic") or "pathwise"
    se = _arr(part.get("metric_se"), n) if st == "mean" and R > 1 else None
    if R > 1 and st != "mean":          # per-run values are not recorded (means only): the counts decide
        return []
    if st == "mean" and R > 1 and se is None:
        return []
    keep = k >= valid_from if valid_from is not None else np.ones(n, bool)
    rel = ((part.get("readings") or {}).get(ob.get("reading")) or {}).get("relation") \
        or (ob.get("judged") or {}).get("relation") or "<="
    scale = np.full(int(keep.sum()), float(curves.get("scale", 1.0)))
    cols = {**cols, "axis": "round", "seed": rec.get("seed") if isinstance(rec.get("seed"), int) else cols.get("seed"),
            **_param_columns(entry.get("params"))}
    z = float(ob.get("z")) if st == "mean" and ob.get("z") is not None else None
    return [_point_frame(cols, frame, list(k[keep]), lo[keep], hi[keep], val[keep],
                         se[keep] if se is not None else None, z, b[keep], b[keep], scale, rel,
                         None if st == "mean" and R > 1 else 0, R)]


def _legacy_frames(chk: dict, run: dict, finding_cols) -> list:
    """Rows of a results file written before fedcheck kept its observations: the recorded curves, horizons and cases
    as they are (without the values a verdict is recomputed from)."""
    import numpy as np
    import pandas as pd
    out = []
    first_bound = _first_bound(chk)
    valid_from = finite_float((chk.get("formula") or {}).get("valid_from"))
    for j, rec in enumerate(chk.get("instances") or []):
        if not isinstance(rec, dict):
            continue
        label = _instance_label(rec, j)
        seed = rec.get("seed") if isinstance(rec.get("seed"), int) else None

        def base(bound, reading, axis, params=None):
            return {**run, **finding_cols(_finding_of(chk, bound, reading)), "reading": reading, "bound": bound,
                    "instance": label, "seed": seed, "axis": axis, "row": "recorded", **_param_columns(params)}
        if isinstance(rec.get("horizons"), dict):
            for reading, per_T in rec["horizons"].items():
                for T, per_bound in (per_T or {}).items():
                    for bound, s in (per_bound or {}).items():
                        if bound == "evidence" or not isinstance(s, dict) or "lhs_at_argmax" not in s:
                            continue
                        m, b = _point(s.get("lhs_at_argmax")), _point(s.get("rhs_at_argmax"))
                        out.append(pd.DataFrame([{**base(bound, reading, "horizon", rec.get("settings")),
                                                  "t": _point(T), "measured": m, "bound_value": b,
                                                  "relation": s.get("relation", "<="),
                                                  "ratio": float(_ratio(m, b, s.get("relation"))),
                                                  "case_verdict": s.get("verdict")}]))
        elif isinstance(rec.get("rounds"), list) and (isinstance(rec.get("bound"), dict) or rec.get("grid")):
            k = _arr(rec["rounds"])
            if k is None:
                continue
            grid = rec.get("grid") or [{"params": {}, "parts": {first_bound: {
                "metric": rec.get("metric"), "metric_interval": rec.get("metric_interval") or {},
                "bound": rec.get("bound") or {}, "readings": rec.get("readings") or {}}}}]
            keep = k >= valid_from if valid_from is not None else np.ones(k.size, bool)
            for entry in grid:
                for bound, part in (entry.get("parts") or {}).items():
                    m = _arr(part.get("metric"), k.size)
                    if m is None:
                        continue
                    iv = part.get("metric_interval") or {}
                    lo = _arr(iv.get("lo"), k.size)
                    hi = _arr(iv.get("hi"), k.size)
                    lo = lo if lo is not None else np.full(k.size, np.nan)
                    hi = hi if hi is not None else np.full(k.size, np.nan)
                    for reading, b in (part.get("bound") or {}).items():
                        b = _arr(b, k.size)
                        if b is None:
                            continue
                        s = (part.get("readings") or {}).get(reading) or {}
                        rel = s.get("relation", "<=")
                        cols = {**base(bound, reading, "round", entry.get("params")), "relation": rel,
                                "case_verdict": s.get("verdict")}
                        n = int(keep.sum())
                        out.append(pd.DataFrame({**{c: [v] * n for c, v in cols.items()}, "t": k[keep],
                                                 "measured": m[keep], "measured_lo": lo[keep], "measured_hi": hi[keep],
                                                 "bound_value": b[keep], "ratio": _ratio(m[keep], b[keep], rel)}))
        elif isinstance(rec.get("readings"), dict) and "label" in rec:
            for key, s in rec["readings"].items():
                if not isinstance(s, dict) or "lhs_at_argmax" not in s:
                    continue
                if " | " in key and key not in (chk.get("formula") or {}).get("readings", {}):
                    bound, reading = key.split(" | ", 1)
                else:
                    bound, reading = first_bound or "claim", key
                where = next((v for kk, v in s.items() if kk.startswith("argmax_")), None)
                m, b = _point(s.get("lhs_at_argmax")), _point(s.get("rhs_at_argmax"))
                out.append(pd.DataFrame([{**base(bound, reading, "point"), "t": _point(where), "measured": m,
                                          "bound_value": b, "relation": s.get("relation", "<="),
                                          "ratio": float(_ratio(m, b, s.get("relation"))),
                                          "case_verdict": s.get("verdict")}]))
    return out


def to_frame(checks, provenance: dict | None = None) -> "Any":
    """The tidy table of result dicts (or :class:`Results`): one row per observation (module doc; every column in
    :data:`TABLE_DOC` and ``docs/TABLE.md``), then one ``p_<name>`` column per parameter.  ``provenance``: the
    run's (``Results.provenance``; its run id, time, version and commit go on every row)."""
    import pandas as pd
    if hasattr(checks, "provenance") and provenance is None:
        provenance = checks.provenance
    dicts = [c.to_dict() if hasattr(c, "to_dict") else c for c in checks]
    prov = provenance if isinstance(provenance, dict) else {}
    frames = [f for chk in dicts for f in _check_rows(chk, prov)]
    frames = [f for f in frames if len(f)]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({c: [] for c in TABLE_COLUMNS})
    params = sorted(c for c in df.columns if c.startswith("p_") and c not in TABLE_DOC)
    df = df.reindex(columns=list(TABLE_COLUMNS) + params)
    for c in _FLOATS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    for c in _INTS:
        df[c] = pd.array([None if v is None or (isinstance(v, float) and v != v) else int(v) for v in df[c]],
                         dtype="Int64")
    for c in _BOOLS:
        df[c] = pd.array([None if v is None or (isinstance(v, float) and v != v) else bool(v) for v in df[c]],
                         dtype="boolean")
    df["time"] = pd.to_datetime(df["time"], utc=True, errors="coerce")
    for c in df.columns:
        if c not in _FLOATS and c not in _INTS and c not in _BOOLS and c != "time":
            if c.startswith("p_") and pd.api.types.is_numeric_dtype(df[c]):
                df[c] = df[c].astype(float)
            else:
                df[c] = df[c].astype("string")
    return df


def table_metadata(df=None, provenance: dict | None = None) -> dict:
    """What the Parquet file says about itself (its schema's ``fedcheck`` key, JSON): the columns and what each holds,
    the tolerance policy, how a verdict is recomputed (``docs/TABLE.md``) and the run's provenance."""
    from dataclasses import asdict

    from fedcheck.core.verdict import POLICY
    cols = dict(TABLE_DOC)
    for c in (df.columns if df is not None else []):
        if c.startswith("p_") and c not in cols:
            cols[c] = f"the parameter {c[2:]} of the check (or of the grid entry the row belongs to)"
    return {"schema": "fedcheck.table/1", "columns": cols, "policy": asdict(POLICY),
            "recompute": "docs/TABLE.md: point_verdict by the slack rule; a case is the worst of its points (and of "
                         "its every-round counts, and at best inconclusive with a case_reason); a finding is the "
                         "worst of its cases (fraction: the Clopper-Pearson rule over runs); a check is the worst "
                         "of its paper findings in finding_index order (all findings when none is the paper's; "
                         "inconclusive when none is and some has a deviation), then with its feasibility when "
                         "feasibility_decides",
            "provenance": provenance or {}}


def check_table_path(path) -> None:
    """Refuse, before any computation, a table path of an unknown kind or that cannot be written."""
    from fedcheck.core.results import check_writable
    suffix = Path(path).suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise BadInput(f"--table {path}: expected a .csv or .parquet file, not {suffix or 'no suffix'!r}")
    check_writable(path, "--table", directory=False)


def write_table(df, path, provenance: dict | None = None) -> Path:
    """Write a tidy table as CSV or Parquet, atomically (nothing half-written).  A Parquet file carries its own
    documentation: every column's description in its field's metadata (``description``) and, in the schema's
    ``fedcheck`` key, the columns, the tolerance policy, how verdicts are recomputed and the run's provenance
    (:func:`table_metadata`).  Either file is read by pandas or polars with nothing of fedcheck."""
    import io
    from fedcheck.core.results import atomic_write
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        meta = table_metadata(df, provenance)
        table = pa.Table.from_pandas(df, preserve_index=False)
        fields = [f.with_metadata({"description": meta["columns"].get(f.name, "")}) for f in table.schema]
        schema = pa.schema(fields, metadata={**(table.schema.metadata or {}),
                                             b"fedcheck": json.dumps(meta, default=str).encode("utf-8")})
        buf = io.BytesIO()
        pq.write_table(table.cast(schema), buf)
        data = buf.getvalue()
    elif suffix == ".csv":
        data = df.to_csv(index=False).encode("utf-8")
    else:
        raise BadInput(f"--table {path}: expected a .csv or .parquet file, not {suffix or 'no suffix'!r}")
    return atomic_write(path, lambda fh: fh.write(data))
