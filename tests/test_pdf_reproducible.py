"""The same page makes the same PDF whatever second it is written.

WeasyPrint embeds each font as a subset; without the HarfBuzz-Subset library it subsets with fontTools, which
stamps the subset's ``head.modified`` with the current time (a fresh install on a machine without
``libharfbuzz-subset0``: the serial and the pooled report phases wrote PDFs a byte apart).  fedcheck pins the
time fontTools reads (``SOURCE_DATE_EPOCH``) while it writes a PDF.  These tests force the fontTools path and
move the clock an hour between two renders."""
import os
import time as _time
import types

import pytest

import fedcheck.report as report
from fedcheck.report import pdf as report_pdf

PAGE = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title></head><body><h1>Theorem 1</h1>"
        "<p>F(x<sup>t</sup>) - F* &le; 2 L D&sup2; / (t + 1) holds on 16 instances.</p></body></html>")


@pytest.fixture
def fonttools_subsetting(monkeypatch):
    """WeasyPrint's fontTools path (as without libharfbuzz-subset0) and a clock this test moves."""
    try:
        report.pdf_engine()
    except report.PdfUnavailable as e:
        pytest.skip(str(e))
    import fontTools.misc.timeTools as tt
    import weasyprint.pdf.fonts as wfonts
    monkeypatch.setattr(wfonts, "harfbuzz_subset", None)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    now = [_time.time()]
    clock = types.SimpleNamespace(**{k: getattr(_time, k) for k in dir(_time) if not k.startswith("_")})
    clock.time = lambda: now[0]
    monkeypatch.setattr(tt, "time", clock)
    return now


def _pdf(tmp_path, name):
    p = tmp_path / name
    report.render_pdf(PAGE, p)
    return p.read_bytes()


def test_a_page_written_an_hour_later_is_the_same_file(fonttools_subsetting, tmp_path):
    a = _pdf(tmp_path, "a.pdf")
    fonttools_subsetting[0] += 3600
    assert _pdf(tmp_path, "b.pdf") == a
    assert "SOURCE_DATE_EPOCH" not in os.environ          # restored after the write


def test_without_the_pinned_date_the_clock_leaks_into_the_pdf(fonttools_subsetting, tmp_path, monkeypatch):
    """The cause, shown: with the pin removed, the fontTools path writes the clock into the fonts."""
    import contextlib
    monkeypatch.setattr(report_pdf, "FixedFontDates", contextlib.nullcontext)
    a = _pdf(tmp_path, "a.pdf")
    fonttools_subsetting[0] += 3600
    assert _pdf(tmp_path, "b.pdf") != a


def test_a_users_source_date_epoch_is_kept(fonttools_subsetting, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1234567890")
    a = _pdf(tmp_path, "a.pdf")
    assert os.environ["SOURCE_DATE_EPOCH"] == "1234567890"
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert _pdf(tmp_path, "b.pdf") != a                   # the user's date, not fedcheck's, is in the fonts
