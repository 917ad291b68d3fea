"""Every quote of the FedFW review is the paper's own words: each Source of theorems/fedfw/sources.py, and
every source carried by a FedFW declaration, occurs verbatim in the paper's text (which sits beside the repository,
as in CI)."""
import re
from pathlib import Path

import pytest

from fedcheck.catalog.registry import default_registry
from fedcheck.core.readings import Source
from fedcheck.core.runner import declared_findings
from theorems.fedfw import sources as S
from theorems.fedfw.claims import FEDFW

PAPER = Path(__file__).resolve().parent.parent.parent / FEDFW.source


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


@pytest.fixture(scope="module")
def text():
    if not PAPER.is_file():
        pytest.skip(f"the paper's text is not beside the repository ({PAPER})")
    return _norm(PAPER.read_text(encoding="utf-8"))


def _sources():
    out = {name: v for name, v in vars(S).items() if isinstance(v, Source)}
    for c in default_registry().checks.values():
        if c.paper.key == "fedfw":
            for d in declared_findings(c):
                if d["source"] is not None:
                    out[f"{c.id}: {d['name']}"] = d["source"]
    return sorted(out.items())


@pytest.mark.parametrize("name,source", _sources(), ids=[n for n, _ in _sources()])
def test_quote_is_verbatim(name, source, text):
    assert _norm(source.quote) in text, f"{name}: not in the paper: {source.quote!r}"
