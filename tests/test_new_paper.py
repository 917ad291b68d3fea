"""Adding a paper is its folder and one line of the index (``theorems/__init__.py``: ``PAPERS``), nothing else: a
fifth paper, written into a temporary folder and added to the index, is in the README the generator writes
(docs/readme.py) and in every provenance test (tests/test_provenance.py, tests/test_provenance_papers.py) without
an edit of theirs -- and those tests judge it (a quote that is not the paper's words fails)."""
import importlib
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

import theorems
from fedcheck.catalog.registry import default_registry

ROOT = Path(__file__).resolve().parent.parent
KEY = "tfifth"


def _module(name: str, path: Path):
    """A fresh copy of a module of this repository (the test modules read the index when they load)."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def fifth_paper(tmp_path, monkeypatch):
    """A paper folder ``theorems/tfifth/`` (in a temporary folder on the package's path) with one claim, its text
    file, and the index with one more line."""
    text = tmp_path / "tfifth-paper.md"
    text.write_text("# A fifth paper\n\nTheorem 1. For every t >= 1 we have 1/(t+1) <= 1/t, which we prove below.\n")
    folder = tmp_path / "pkg" / KEY
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(f'"""The {KEY} paper."""\nfrom theorems.{KEY}.claims import *  # noqa\n'
                                        f"from theorems.{KEY}.claims import CLAIMS  # noqa\n")
    (folder / "claims.py").write_text(textwrap.dedent(f'''
        import sympy as sp
        from fedcheck import Claim, Fact, Paper, Proof, Source
        from fedcheck.verdicts import HOLDS, INCONCLUSIVE

        PAPER = Paper(key="{KEY}", title="A Fifth Paper on Federated Things", authors="A. Author",
                      source={str(text)!r})
        SRC = Source("For every t >= 1 we have [1/(t+1) <= 1/t]", "Theorem 1", "t >= 1")
        t = sp.Symbol("t", positive=True)

        def _le():
            ok = sp.simplify(1 / t - 1 / (t + 1)).is_positive
            return (HOLDS if ok else INCONCLUSIVE), "1/t - 1/(t+1) = 1/(t(t+1)) > 0"

        theorem1 = Claim(id="{KEY}.theorem1", paper=PAPER, reference="Theorem 1",
                         statement="1/(t+1) <= 1/t for t >= 1", title="Theorem 1: the fifth paper's bound",
                         evidence=Proof((Fact("the bound", _le, source=SRC),)), expected="holds")
        CLAIMS = (theorem1,)
        '''))
    monkeypatch.setattr(theorems, "__path__", [*theorems.__path__, str(folder.parent)])
    monkeypatch.setattr(theorems, "PAPERS", (*theorems.PAPERS, KEY))
    yield folder
    for name in [m for m in sys.modules if m == f"theorems.{KEY}" or m.startswith(f"theorems.{KEY}.")]:
        del sys.modules[name]


def test_the_index_is_the_only_list_of_papers(fifth_paper):
    reg = default_registry()
    assert list(reg.papers)[-1] == KEY and reg.papers[KEY] == [f"{KEY}.theorem1"]


def test_the_readme_generator_finds_the_new_paper(fifth_paper):
    R = _module("fedcheck_docs_readme_fifth", ROOT / "docs" / "readme.py")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    new = R.rendered(readme)
    assert new != readme                    # the README as it is would be stale: tests/test_docs.py says so
    assert "**A Fifth Paper on Federated Things** (`tfifth`, 1 claims: 1 holds)" in new
    # its paper's-setting column: no --full record yet (docs/paper-setting.json), said so
    assert f"| `{KEY}.theorem1` | holds | not run yet | Theorem 1: the fifth paper's bound |" in new
    reg = default_registry()
    assert f"runs the {len(reg.checks)} claims of the {len(reg.papers)} papers" in new
    assert f"`fedcheck verify {' '.join(reg.papers)}`" in new
    assert R.rendered(new) == new           # and once written, it is up to date


def test_the_provenance_tests_find_the_new_paper(fifth_paper):
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        prov = _module("test_provenance_fifth", ROOT / "tests" / "test_provenance.py")
        papers = _module("test_provenance_papers_fifth", ROOT / "tests" / "test_provenance_papers.py")
    finally:
        sys.path.remove(str(ROOT / "tests"))
    assert KEY in prov.REVIEWED and KEY in papers.PAPERS
    claim, = [c for c in prov._reviewed_claims() if c.paper.key == KEY]
    assert [c.id for c in papers.CLAIMS if c.paper.key == KEY] == [claim.id]
    assert papers.paper_file(claim.paper) == Path(claim.paper.source)      # the file its Paper names
    prov.test_every_declared_paper_statement_of_a_reviewed_paper_has_its_source(claim)
    papers.test_paper_readings_have_their_source(claim)
    papers.test_quotes_are_the_papers_words(claim)


def test_the_provenance_tests_judge_the_new_paper(fifth_paper):
    """Found is not waved through: a quote that is not in the paper's text fails."""
    from fedcheck.core.readings import Source
    claims = importlib.import_module(f"theorems.{KEY}.claims")
    fact, = claims.theorem1.evidence.facts
    object.__setattr__(fact, "source", Source("For every t we have nothing to prove", "Theorem 1", "t >= 1"))
    papers = _module("test_provenance_papers_fifth2", ROOT / "tests" / "test_provenance_papers.py")
    with pytest.raises(AssertionError, match="is not in tfifth-paper.md"):
        papers.test_quotes_are_the_papers_words(claims.theorem1)
