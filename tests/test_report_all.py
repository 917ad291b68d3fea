"""Every claim of the catalog has its reports: the results of a quick run of the whole catalog (the session's
runs, shared with tests/test_catalog.py) rendered by ``fedcheck report`` -- HTML and PDF pages, figures, index
-- with exit 0.  ``fedcheck verify fedsgm`` once ended with exit 4 here (a figure of ``fedsgm.per_round``)."""
import json

import pytest

from fedcheck import report
from fedcheck.cli import main
from fedcheck.catalog.registry import default_registry
from fedcheck.core.outputs import check_folder
from fedcheck.core.results import document, provenance

CLAIMS = list(default_registry().checks.values())


@pytest.mark.xdist_group("catalog")        # the session's runs of the catalog (tests/conftest.py::catalog_run)
def test_fedcheck_report_renders_every_claim_of_the_catalog(catalog_run, tmp_path):
    checks = [catalog_run(c).to_dict() for c in CLAIMS]
    js = tmp_path / "catalog.json"
    js.write_text(json.dumps(document(checks, provenance(["verify", "fedfw", "feddualavg", "fedsgm", "fedmls"]))),
                  encoding="utf-8")
    out = tmp_path / "reports"
    assert main(["report", str(js), "--out", str(out), "-q"]) == 0
    pdf = report.pdf_status() is None
    for c in CLAIMS:
        page = out / "checks" / check_folder(c.id)
        html = (page / "report.html").read_text(encoding="utf-8")
        assert c.id in html
        if pdf:
            assert (page / "report.pdf").read_bytes()[:5] == b"%PDF-", c.id
    index = (out / "index.html").read_text(encoding="utf-8")
    assert all(f"checks/{check_folder(c.id)}/report.html" in index for c in CLAIMS)
