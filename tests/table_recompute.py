"""Every verdict of a fedcheck tidy table recomputed from the table alone, with pandas, numpy and scipy -- nothing of
fedcheck is imported here (tests/test_table.py checks that).  This is the procedure docs/TABLE.md describes."""
import numpy as np
import pandas as pd
from scipy import stats

RANK = {"holds": 0, "reproduced": 0, "inconclusive": 1, "not_reproduced": 2, "violated": 2}
CODE = ("holds", "inconclusive", "violated")


def slack(b, scale, rtol, atol):
    return rtol * np.abs(b) + atol * np.maximum(1.0, np.abs(scale))


def below(lo, hi, b_lo, b_hi, scale, rtol, atol):
    """0 holds (hi <= b_lo + slack), 2 violated (lo > b_hi + slack), 1 otherwise or not finite."""
    code = np.where(hi <= b_lo + slack(b_lo, scale, rtol, atol), 0,
                    np.where(lo > b_hi + slack(b_hi, scale, rtol, atol), 2, 1))
    finite = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(b_lo) & np.isfinite(b_hi)
    return np.where(finite, code, 1)


def point_codes(df: pd.DataFrame) -> np.ndarray:
    """The slack rule at every point row (the same rule as fedcheck/core/verdict.py, its tolerances from the rows)."""
    f = {c: df[c].to_numpy(dtype=float, na_value=np.nan) for c in
         ("stat_lo", "stat_hi", "bound_lo", "bound_value", "scale", "rtol", "atol")}
    le = below(f["stat_lo"], f["stat_hi"], f["bound_lo"], f["bound_value"], f["scale"], f["rtol"], f["atol"])
    ge = below(f["bound_lo"], f["bound_value"], f["stat_lo"], f["stat_hi"], f["scale"], f["rtol"], f["atol"])
    rel = df["relation"].to_numpy(dtype=object)
    return np.where(rel == ">=", ge, np.where(rel == "==", np.maximum(le, ge), le))


def every_round_codes(ev: pd.DataFrame) -> np.ndarray:
    """An "every round" row's code: violated if it judged a violation, else inconclusive if it judged an undecided
    point or nothing, else holds."""
    count = {c: ev[c].fillna(0).to_numpy() for c in ("violations_judged", "undecided_judged", "points_judged")}
    return np.where(count["violations_judged"] > 0, 2,
                    np.where((count["undecided_judged"] > 0) | (count["points_judged"] == 0), 1, 0))


def clopper_pearson(k, n, confidence):
    a = 1 - confidence
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


def combine(verdicts):
    """The worst verdict, the first of equally bad ones (fedcheck's combine)."""
    verdicts = list(verdicts)
    return max(verdicts, key=lambda v: RANK[v]) if verdicts else "inconclusive"


def recompute(df: pd.DataFrame) -> dict:
    """``{check: (verdict, {finding: verdict})}`` recomputed from the rows."""
    df = df.copy()
    pts = df["row"] == "point"
    df["code"] = np.nan
    df.loc[pts, "code"] = point_codes(df[pts])
    every = df["row"] == "every round"
    df.loc[every, "code"] = every_round_codes(df[every])
    out = {}
    for check, rows in df.groupby("check", sort=False):
        findings = []           # (index, name, verdict, kind, deviation)
        for name, fr in rows[rows["finding_kind"] != "feasibility"].groupby("finding", sort=False):
            first = fr.iloc[0]
            obs = fr[fr["row"].isin(["point", "every round"])]
            if len(obs) == 0:       # a measured, proved or self-judged finding: its own verdict (its finding row)
                own = fr[fr["row"] == "finding"]
                verdict = (own if len(own) else fr)["case_verdict"].iloc[0]
            else:
                keys = ["sweep_index", "reading", "bound", "instance"]
                case = obs.groupby(keys, sort=False, dropna=False).agg(
                    code=("code", "max"), reason=("case_reason", lambda s: s.notna().any()))
                codes = np.where(case["reason"], np.maximum(case["code"], 1), case["code"]).astype(int)
                verdict = combine(CODE[c] for c in codes)
                if obs["sweep_index"].notna().any():     # the sweep rule: the worst case at each value, then
                    per_value = case.assign(c=codes).groupby(level="sweep_index")["c"].max().sort_index()
                    vs = [CODE[int(c)] for c in per_value]   # holds at the last value; violated at every value
                    verdict = ("violated" if all(v == "violated" for v in vs)
                               else "holds" if vs[-1] == "holds" else "inconclusive")
                if pd.notna(first["statistic"]) and first["statistic"] == "fraction":
                    per_run = obs.copy()
                    per_run["fails"] = (per_run["code"] == 2) & (per_run["row"] == "point") | \
                        per_run["run_failed"].fillna(False).astype(bool)
                    runs = per_run.groupby(["instance", "idx_rep"], dropna=False)["fails"].any()
                    k, n = int(runs.sum()), int(runs.size)
                    lo, hi = clopper_pearson(k, n, float(first["confidence"]))
                    q = float(first["max_fraction"])
                    undecided = (codes == 1).any()
                    if lo > q:
                        verdict = "violated"
                    elif hi <= q or (q == 0 and k == 0):
                        verdict = "inconclusive" if undecided else "holds"
                    else:
                        verdict = "inconclusive"
            findings.append((int(first["finding_index"]) if pd.notna(first["finding_index"]) else 10 ** 9, name,
                             verdict, first["finding_kind"], first["deviation"] if pd.notna(first["deviation"]) else ""))
        findings.sort()
        paper = [f for f in findings if f[3] == "paper"]
        if not paper and any(f[4] for f in findings):
            verdict = "inconclusive"            # tested only outside the paper's setting
        else:
            verdict = combine(f[2] for f in (paper or findings))
        feas = rows[rows["finding_kind"] == "feasibility"]
        if len(feas) and bool(feas["feasibility_decides"].iloc[0]):
            m, tol = feas["measured"].to_numpy(float), feas["bound_value"].to_numpy(float)
            fv = [CODE[1] if not np.isfinite(a) else CODE[2] if a > b else CODE[0] for a, b in zip(m, tol)]
            verdict = combine([verdict, combine(fv)])
        out[check] = (verdict, {f[1]: f[2] for f in findings})
    return out


def case_mismatches(df: pd.DataFrame) -> list:
    """Cases whose recomputed verdict is not the ``case_verdict`` fedcheck gave (empty: all agree)."""
    df = df[df["row"].isin(["point", "every round"])].copy()
    pts = df["row"] == "point"
    df["code"] = np.nan
    df.loc[pts, "code"] = point_codes(df[pts])
    df.loc[~pts, "code"] = every_round_codes(df[~pts])
    out = []
    keys = ["check", "finding", "sweep_index", "reading", "bound", "instance"]
    for key, g in df.groupby(keys, sort=False, dropna=False):
        code = int(g["code"].max())
        if g["case_reason"].notna().any():
            code = max(code, 1)
        given = g["case_verdict"].iloc[0]
        if CODE[code] != given:
            out.append(f"{key}: recomputed {CODE[code]}, fedcheck {given}")
    return out
