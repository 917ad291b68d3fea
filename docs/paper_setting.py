"""The catalog in the papers' own setting: ``fedcheck verify ID --full``, claim by claim, into one committed file.

    python docs/paper_setting.py run [ID ...] [--jobs N] [--timeout S]   # run (all claims by default) and merge
    python docs/paper_setting.py merge DIR [--times FILE]                 # merge per-claim results files of DIR
    python docs/paper_setting.py unrun --why "..."                        # claims without a record: not run, why
    python docs/paper_setting.py --check                                  # exit 1 when the file is inconsistent
    python docs/paper_setting.py times [--write]                         # the --full time table (benchmarks/README.md)

``docs/paper-setting.json`` holds one record per claim: the verdict and headline of its ``--full`` run, the
findings that decide it (name, paper or analysis, verdict, ratio, the deviations from the paper's setting that
remain at ``--full``), how long it took (wall seconds, worker processes, load average before and after), and the
run's provenance (command, date, git commit, Python and package versions, machine).  Whether a claim ran *in the
paper's setting* is not stated by hand: it is derived from its findings (:func:`setting_of`): every paper finding
without a deviation, or with deviations of size only (fewer images, samples, draws or seeds than the paper), is
the paper's setting; otherwise the record names the parameters that still differ (a dataset no registry ships,
a horizon out of reach) and the claim's verdict there is an analysis.  A claim that did not finish within the
time limit is recorded as such, with the limit.

The README's catalog table takes its "paper's setting" column from this file (``docs/readme.py``), and
``tests/test_paper_setting.py`` re-derives every record's classification from its stored findings and checks
the column against the file.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "docs" / "paper-setting.json"
SCHEMA = "fedcheck.paper-setting/1"


def _loadavg() -> float | None:
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return None


def remaining_deviations(findings: list[dict]) -> list[dict]:
    """The deviations from the paper's setting of ``findings``, other than of size, once each."""
    seen, out = set(), []
    for f in findings:
        for d in f.get("deviations", []):
            if d.get("of_size"):
                continue
            key = (d["parameter"], json.dumps(d.get("paper"), sort_keys=True), json.dumps(d.get("run"), sort_keys=True))
            if key not in seen:
                seen.add(key)
                out.append({k: d.get(k) for k in ("parameter", "paper", "run")})
    return out


def deciding(findings: list[dict]) -> list[dict]:
    """The findings whose setting says whether the run was the paper's: the paper findings (all findings when none
    is the paper's); when every paper finding is a placeholder that did not run (``ran`` false: its evidence says
    "not run", the paper's setting could not be run) and analyses ran in another setting, those analyses: what ran
    deviates.  A paper finding that ran in the paper's setting and is undecided keeps the paper's setting."""
    paper = [f for f in findings if f.get("paper")]
    if not paper:
        return list(findings)
    beside = [f for f in findings if not f.get("paper") and remaining_deviations([f])]
    if beside and all(f.get("verdict") == "inconclusive" and f.get("ran") is False for f in paper):
        return beside
    return paper


def setting_of(record: dict) -> str:
    """``"paper"`` when the claim's run is in the paper's setting (the :func:`deciding` findings have no deviation
    but of size), ``"deviates"`` when some deviation remains, ``"not run"`` when the run did not finish."""
    if record.get("status") != "ran":
        return "not run"
    return "deviates" if remaining_deviations(deciding(record.get("findings", []))) else "paper"


def record_of(check: dict, provenance: dict, timing: dict) -> dict:
    """The compact record of one claim's ``--full`` results (``check``: one entry of a results file)."""
    findings = []
    for name, r in (check.get("readings") or {}).items():
        findings.append({"name": name, "paper": bool(r.get("paper", True)), "verdict": r.get("verdict"),
                         "max_ratio": r.get("max_ratio"),
                         "ran": not str(r.get("evidence") or "").lower().startswith("not run"),
                         "deviations": [{k: d.get(k) for k in ("parameter", "paper", "run", "of_size")}
                                        for d in r.get("deviations", [])]})
    rec = {"id": check["id"], "status": "ran", "verdict": check["verdict"], "headline": check.get("headline", ""),
           "max_ratio": check.get("max_ratio"), "findings": findings, **timing,
           "provenance": {k: provenance.get(k) for k in ("command", "created", "git", "fedcheck", "python",
                                                         "platform", "packages", "solver")}}
    rec["setting"] = setting_of(rec)
    rec["remaining_deviations"] = remaining_deviations(deciding(findings))
    return rec


def load() -> dict:
    if FILE.exists():
        return json.loads(FILE.read_text(encoding="utf-8"))
    return {"schema": SCHEMA, "claims": {}}


def save(data: dict) -> None:
    """Atomically (a temporary file in the same folder, then a rename): never half-written."""
    data["schema"] = SCHEMA
    data["claims"] = dict(sorted(data["claims"].items()))
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=FILE.parent, prefix=".paper-setting.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, FILE)


def _machine() -> dict:
    return {"cpus": os.cpu_count(), "platform": sys.platform}


def run(ids: list[str], jobs: int, timeout: float) -> int:
    from fedcheck.catalog.registry import default_registry
    reg = default_registry()
    ids = ids or list(reg.checks)
    unknown = [i for i in ids if i not in reg.checks]
    if unknown:
        print(f"paper_setting: unknown claim id {unknown[0]!r} (see 'fedcheck list')", file=sys.stderr)
        return 2
    data = load()
    data["machine"] = _machine()
    for cid in ids:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.json"
            cmd = [sys.executable, "-m", "fedcheck", "verify", cid, "--full", "--no-report", "-q", "-j", str(jobs),
                   "--json", str(out)]
            l0, t0 = _loadavg(), time.perf_counter()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                rc = None
            timing = {"seconds": round(time.perf_counter() - t0, 1), "jobs": jobs, "load_before": l0,
                      "load_after": _loadavg()}
            if rc is None or not out.exists():
                why = f"did not finish within {timeout:.0f} s" if rc is None else f"exit {rc}"
                data["claims"][cid] = {"id": cid, "status": "not run", "why": why, **timing,
                                       "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            else:
                res = json.loads(out.read_text(encoding="utf-8"))
                data["claims"][cid] = record_of(res["checks"][0], res["provenance"], timing)
        save(data)
        r = data["claims"][cid]
        print(f"{cid}: {r.get('verdict', r['status'])} [{r.get('setting', '')}] {r['seconds']} s", flush=True)
    return 0


def merge(folder: Path, times: Path | None) -> int:
    """Merge the results files ``folder/<id>.json`` of a loop that ran ``verify <id> --full`` claim by claim
    (``times``: lines ``<id> rc=<rc> seconds=<s> load_start=<l> load_end=<l> ...`` as the loop wrote them)."""
    timing = {}
    if times is not None:
        for line in times.read_text().splitlines():
            parts = line.split()
            kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            timing[parts[0]] = kv
    data = load()
    data["machine"] = _machine()
    for cid, kv in timing.items():
        path = folder / f"{cid}.json"
        t = {"seconds": round(float(kv.get("seconds", "nan")), 2), "jobs": int(kv.get("jobs", 1)),
             "load_before": float(kv["load_start"]) if "load_start" in kv else None,
             "load_after": float(kv["load_end"]) if "load_end" in kv else None}
        if kv.get("rc") != "124" and path.exists():   # verify's exit codes 0/1/3 (holds/violated/undecided) all ran
            res = json.loads(path.read_text(encoding="utf-8"))
            data["claims"][cid] = record_of(res["checks"][0], res["provenance"], t)
        else:
            why = (f"did not finish within {kv.get('limit', '1500')} s" if kv.get("rc") == "124"
                   else f"exit {kv.get('rc')}")
            data["claims"][cid] = {"id": cid, "status": "not run", "why": why, **t, "date": kv.get("at")}
    save(data)
    print(f"{FILE.relative_to(ROOT)}: {len(data['claims'])} claims")
    return 0


def mark_unrun(ids, why: str) -> int:
    """Record the claims of ``ids`` that have no record as not run, with ``why`` (e.g. the time ran out)."""
    data = load()
    added = 0
    for cid in ids:
        if cid not in data["claims"]:
            data["claims"][cid] = {"id": cid, "status": "not run", "why": why, "seconds": None, "jobs": None,
                                   "load_before": None, "load_after": None,
                                   "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            added += 1
    save(data)
    return added


def column(cid: str, data: dict | None = None) -> str:
    """The README's cell for a claim: its ``--full`` verdict, marked when deviations remain or it did not run."""
    data = data if data is not None else load()
    r = data.get("claims", {}).get(cid)
    if r is None:
        return "not run yet"
    if r["status"] != "ran":
        return f"not run ({r['why']})"
    word = {"violated": "refuted", "not_reproduced": "refuted"}.get(r["verdict"], r["verdict"])
    if r["setting"] == "paper":
        return word
    params = sorted({d["parameter"] for d in r["remaining_deviations"]})
    return f"{word} (analysis: {', '.join(params)} differ)" if params else word


def check() -> int:
    """Re-derive each record's setting from its stored findings; exit 1 naming the first inconsistency."""
    data = load()
    bad = []
    for cid, r in data.get("claims", {}).items():
        if r.get("status") == "ran":
            if setting_of(r) != r.get("setting"):
                bad.append(f"{cid}: recorded setting {r.get('setting')!r}, its findings give {setting_of(r)!r}")
            if remaining_deviations(deciding(r["findings"])) != r.get("remaining_deviations"):
                bad.append(f"{cid}: remaining deviations differ from its findings'")
    for b in bad:
        print(b, file=sys.stderr)
    return 1 if bad else 0


TIMES_FILE = ROOT / "benchmarks" / "README.md"
TIMES_START, TIMES_END = "<!-- paper-setting-times:start -->", "<!-- paper-setting-times:end -->"


def _sizes(r: dict) -> str:
    """The deviations of size of a record's findings (``parameter paper -> run``), once each, or "the paper's"."""
    seen = []
    for f in r.get("findings", []):
        for d in f.get("deviations", []):
            if d.get("of_size"):
                cell = f"{d['parameter']} {d.get('paper')} -> {d.get('run')}"
                if cell not in seen:
                    seen.append(cell)
    return "; ".join(seen) if seen else "the paper's"


def times_table(data: dict | None = None) -> str:
    """The ``--full`` time table of the committed file: per claim its verdict, setting, seconds, worker processes and
    load average (before -> after), and the sizes that are smaller than the paper's; then the totals.  Generated,
    never edited by hand (``tests/test_paper_setting.py`` compares it with ``benchmarks/README.md``)."""
    data = data if data is not None else load()
    rows = ["| claim | `--full` verdict | setting | seconds | workers | load before -> after | smaller than the paper's |",
            "|---|---|---|---:|---:|---|---|"]
    ran, unrun = [], []
    for cid, r in data.get("claims", {}).items():
        if r.get("status") != "ran":
            unrun.append((cid, r))
            continue
        ran.append(r)
        lavg = (f"{r['load_before']:.2f} -> {r['load_after']:.2f}"
                if r.get("load_before") is not None and r.get("load_after") is not None else "-")
        secs = f"{r['seconds']:.1f}" if r["seconds"] >= 0.95 else f"{r['seconds']:.2f}"
        rows.append(f"| `{cid}` | {r['verdict']} | {r['setting']} | {secs} | {r['jobs']} | {lavg} | "
                    f"{_sizes(r)} |")
    for cid, r in unrun:
        secs = f"{r['seconds']:.1f}" if r.get("seconds") is not None else "-"
        rows.append(f"| `{cid}` | not run: {r['why']} | - | {secs} | {r.get('jobs') or '-'} | - | - |")
    total = sum(r["seconds"] for r in ran)
    longest = max(ran, key=lambda r: r["seconds"], default=None)
    timed_out = [r for _, r in unrun if r.get("seconds")]
    lines = ["\n".join(rows), "",
             f"{len(ran)} of {len(data.get('claims', {}))} claims ran in the paper's setting or as close as `--full` "
             f"reaches: {total:,.0f} s in all, one worker each"
             + (f"; the longest `{longest['id']}` ({longest['seconds']:,.0f} s)" if longest else "")
             + (f"; {len(timed_out)} stopped at their time limit ({sum(r['seconds'] for r in timed_out):,.0f} s)"
                if timed_out else "")
             + f"; {len(unrun) - len(timed_out)} not run."]
    return "\n".join(lines) + "\n"


def write_times() -> int:
    """Replace the table between the markers of ``benchmarks/README.md`` (atomically)."""
    text = TIMES_FILE.read_text(encoding="utf-8")
    a, b = text.index(TIMES_START) + len(TIMES_START), text.index(TIMES_END)
    new = text[:a] + "\n" + times_table() + text[b:]
    fd, tmp = tempfile.mkstemp(dir=TIMES_FILE.parent, prefix=".README.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(new)
    os.chmod(tmp, 0o644)
    os.replace(tmp, TIMES_FILE)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="re-derive every record's setting from its findings")
    sub = ap.add_subparsers(dest="cmd")
    r = sub.add_parser("run", help="run claims with --full and merge their records")
    r.add_argument("ids", nargs="*")
    r.add_argument("--jobs", "-j", type=int, default=2)
    r.add_argument("--timeout", type=float, default=7200.0)
    u = sub.add_parser("unrun", help="record every claim without a record as not run, saying why")
    u.add_argument("--why", required=True)
    m = sub.add_parser("merge", help="merge per-claim results files of a folder")
    m.add_argument("folder", type=Path)
    m.add_argument("--times", type=Path)
    t = sub.add_parser("times", help="print the --full time table (--write: into benchmarks/README.md)")
    t.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if a.check:
        return check()
    if a.cmd == "run":
        return run(a.ids, a.jobs, a.timeout)
    if a.cmd == "unrun":
        from fedcheck.catalog.registry import default_registry
        print(f"{mark_unrun(list(default_registry().checks), a.why)} claims recorded as not run")
        return 0
    if a.cmd == "merge":
        return merge(a.folder, a.times)
    if a.cmd == "times":
        if a.write:
            return write_times()
        print(times_table(), end="")
        return 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
