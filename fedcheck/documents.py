"""Results documents as the reports read them: validation (:func:`validate`), several documents merged into one
(:func:`merge_documents`), the files of a report (:func:`report_name`, :func:`figure_files`) and a drawn figure
(:class:`FigureOut`).  No plotting, no processes: :mod:`fedcheck.report` draws and lays out pages,
:mod:`fedcheck.render` runs the report phase."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BadResults", "validate", "FigureOut", "figure_files", "report_name", "merge_documents", "print_written"]


class BadResults(ValueError):
    """The results document cannot be rendered (missing or ill-typed fields)."""


def validate(doc: Any) -> None:
    """Raise :class:`BadResults` when ``doc`` is not a results document the reports can render."""
    if not isinstance(doc, dict) or not isinstance(doc.get("checks"), list):
        raise BadResults("not a fedcheck results document: expected an object with a list 'checks'")
    if doc.get("provenance") is not None and not isinstance(doc["provenance"], dict):
        raise BadResults("'provenance' must be an object")
    for q, chk in enumerate(doc["checks"]):
        where = f"checks[{q}]"
        if not isinstance(chk, dict):
            raise BadResults(f"{where} is not an object")
        for key in ("id", "verdict"):
            if not isinstance(chk.get(key), str) or not chk[key]:
                raise BadResults(f"{where}: '{key}' must be a non-empty string")
        for key, typ in (("formula", dict), ("readings", dict), ("feasibility", dict), ("evidence", dict),
                         ("params", dict), ("instances", list), ("symbolic", list), ("assumptions", list),
                         ("series", list), ("tables", list), ("saved_instances", list),
                         ("provenance", dict)):
            if chk.get(key) is not None and not isinstance(chk[key], typ):
                raise BadResults(f"{where} ({chk['id']}): '{key}' must be a{'n object' if typ is dict else ' list'}")
        for j, inst in enumerate(chk.get("instances") or []):
            if not isinstance(inst, dict):
                raise BadResults(f"{where}.instances[{j}] is not an object")
            for key in ("rounds", "metric"):
                if inst.get(key) is not None and not isinstance(inst[key], list):
                    raise BadResults(f"{where}.instances[{j}]: '{key}' must be a list")
            if inst.get("bound") is not None and not isinstance(inst["bound"], dict):
                raise BadResults(f"{where}.instances[{j}]: 'bound' must be an object")
        for j, s in enumerate(chk.get("series") or []):
            if not isinstance(s, dict) or not isinstance(s.get("x"), list) or not isinstance(s.get("y"), list):
                raise BadResults(f"{where}.series[{j}]: expected an object with lists 'x' and 'y'")
        for j, tb in enumerate(chk.get("tables") or []):
            if not isinstance(tb, dict) or not isinstance(tb.get("columns", []), list) \
                    or not isinstance(tb.get("rows", []), list) \
                    or not all(isinstance(r, list) for r in tb.get("rows", [])):
                raise BadResults(f"{where}.tables[{j}]: expected an object with lists 'columns' and 'rows'")


@dataclass
class FigureOut:
    """A figure once drawn: what the pages and the figure's own PDF need, without matplotlib (it travels
    between renderer processes)."""
    key: str
    title: str
    caption: str
    svg: str
    size: tuple
    files: dict = field(default_factory=dict)

    @property
    def svg_uri(self) -> str:
        import base64
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode("utf-8")).decode("ascii")


def figure_files(stem: str, key: str) -> dict:
    """A figure's own files, relative to the report: ``{"svg"|"pdf"|"csv": path}``."""
    return {ext: f"{stem}/fig-{key}.{ext}" for ext in ("svg", "pdf", "csv")}


def report_name(check_id: str) -> str:
    """The file stem of a check's report (``fedfw.theorem1`` -> ``fedfw.theorem1``)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", check_id).strip("._") or "check"
    return name[:120]


def merge_documents(docs: list[dict], sources: list[str] | None = None) -> dict:
    """One results document holding the checks of several (``fedcheck report A.json B.json``).  Each check
    keeps the provenance of its own file (``provenance``) and says where it came from (``source``)."""
    for d in docs:
        validate(d)
    if len(docs) == 1:
        return docs[0]
    sources = list(sources) if sources is not None else [f"document {q + 1}" for q in range(len(docs))]
    checks = []
    for d, src in zip(docs, sources):
        prov = d.get("provenance") or {}
        for chk in d["checks"]:
            c = dict(chk)
            c.setdefault("provenance", prov)
            c.setdefault("source", str(src))
            checks.append(c)
    from datetime import datetime, timezone
    prov = {"command": None, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "sources": [{"file": str(src), "command": (d.get("provenance") or {}).get("command"),
                         "created": (d.get("provenance") or {}).get("created"), "checks": len(d["checks"])}
                        for d, src in zip(docs, sources)]}
    return {"schema": docs[0].get("schema", "fedcheck.results/1"), "provenance": prov, "checks": checks}


def print_written(paths: list[Path], out: Path) -> None:
    """One line per file a person opens (``report: ...``) and one per folder of figure files (a check's
    ``report/`` folder, :func:`fedcheck.render.write_reports`)."""
    dirs: dict[Path, int] = {}
    for p in paths:
        p = Path(p)
        if p.parent.name == "report" and p.name.startswith("fig-"):
            dirs[p.parent] = dirs.get(p.parent, 0) + 1
        else:
            print(f"report: {p}")
    for d, n in dirs.items():
        print(f"figures: {d}/ ({n} files: SVG, PDF and CSV of each figure)")
