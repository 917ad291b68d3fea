"""Every claim of the catalog against the verdict declared beside it (the PEPit pattern).

A claim's ``expected`` verdict is part of its declaration; it never decides anything.  This one test runs
every claim at its default (quick) configuration and compares.  A difference is either a bug or a finding to
explain in the declaration's comments and the issue notes -- never a reason to edit ``expected`` silently.
"""
import pytest

from fedcheck.catalog.registry import default_registry
from fedcheck.core.claim import Claim

REG = default_registry()
CLAIMS = list(REG.checks.values())


def test_the_catalog_is_complete():
    assert len(CLAIMS) >= 56
    assert all(isinstance(c, Claim) and c.expected is not None for c in CLAIMS), \
        [c.id for c in CLAIMS if c.expected is None]
    for key, ids in REG.papers.items():
        assert ids, key


@pytest.mark.xdist_group("catalog")        # one worker runs the catalog once (tests/conftest.py::catalog_run)
@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_verdict_as_declared(claim, catalog_run):
    res = catalog_run(claim)            # run once per session, shared with tests/test_docs.py, test_report_all.py
    assert res.verdict == claim.expected, f"{claim.id}: {res.verdict} (expected {claim.expected}): {res.reason}"
    if res.verdict in ("violated", "not_reproduced"):
        assert res.reason, f"{claim.id}: a refutation must say why"
    # provenance: every paper finding a run produces -- measurement findings are made at run time --
    # carries the paper's words, their place and the setting they are stated in
    from test_provenance import REVIEWED, bare_paper_findings
    if claim.paper.key in REVIEWED:
        bare = bare_paper_findings(res.readings)
        assert not bare, f"{claim.id}: paper findings without quote, place and setting: {bare}"
