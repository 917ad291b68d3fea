"""Reports (HTML and PDF).  Minimal writer: the results JSON next to the reports."""
from __future__ import annotations

import json
from pathlib import Path

from .results import atomic_write_text


def write_reports(doc: dict, out: Path) -> list[Path]:
    out = Path(out)
    return [atomic_write_text(out / "results.json", json.dumps(doc, indent=1, allow_nan=False))]
