"""Reports a person reads: one HTML page and one PDF per check, an index page when several ran.

Everything is rendered from the results document alone (``fedcheck report RESULTS.json ...``
re-renders, and merges several files, without recomputing anything), generically: a check of any
kind renders its verdict, evidence and tables; checks with per-instance curves
(``instances[*].rounds``, ``metric``, ``bound``) also get the log-log curves, the fitted-vs-claimed
rate figure and the measured/bound ratio; optional ``series`` give one figure per ``panel`` and
optional ``tables`` are rendered as tables (see ``docs/DESIGN.md``).

* Each figure is drawn once, by matplotlib, as SVG (vector, glyphs as paths, mathtext labels).  The
  HTML page and the PDF use that same SVG; the PDF is the HTML page itself, laid out for print
  (``@page`` rules in ``templates/style.css``) by WeasyPrint.  When WeasyPrint cannot load its system
  libraries (Pango), the HTML is written and the PDF skipped with one warning line.
* Every figure is also written on its own, for a paper: ``<check>/fig-<name>.svg``, ``.pdf`` and
  ``.csv`` (the CSV holds exactly the arrays drawn: one row per point, columns panel, curve, x, y).
* HTML pages are self-contained: figures and formulas inline as SVG data URIs, CSS inline, no
  JavaScript, no network request.  ``index.html`` lists the checks with verdict badges and thumbnails.
* ``results.json`` is written first (atomically), so an interrupt while the reports render loses no
  result; the reports themselves are written only when complete: they go to a temporary directory
  inside the output directory and are moved into place at the end (files of an earlier complete
  run stay as they were on a failure).
* The report phase is a few independent pieces (:func:`draw_figures`, :func:`check_page`,
  :func:`figure_pdf_files`, :func:`index_page`) that :mod:`fedcheck.render` runs in this process or in
  renderer processes (``fedcheck verify`` starts them with its checks); the files are the same either way.
* Measured curves stop at the resolution of ``F*``: points where the metric is at most
  ``resolution_factor`` (10) times the certified accuracy of ``F*`` are not drawn, the same rule the
  rate fit uses (:mod:`fedcheck.core.verdict`).
* No curve hides another: readings of a bound get their own colour, line style and markers (thick
  solid lines under thin dashed ones), bounds that coincide say so in the legend, and identical
  curves are drawn once with one legend entry ``(×k, identical)``.

One module per job, in the order they import each other (none imports the package itself):
:mod:`~fedcheck.report.common` (values as a person reads them, verdict tones), :mod:`~fedcheck.report.typeset`
(formulas and labels by mathtext), :mod:`~fedcheck.report.pdf` (WeasyPrint), :mod:`~fedcheck.report.figures`
(matplotlib), :mod:`~fedcheck.report.content` (what a check's page shows), :mod:`~fedcheck.report.html` (the
pages, jinja2), :mod:`~fedcheck.report.cards` (the notebook card) and :mod:`~fedcheck.report.phase` (the pieces
of the report phase).
"""
from fedcheck.documents import BadResults, FigureOut, figure_files, merge_documents, report_name, validate
from fedcheck.report.cards import card_html
from fedcheck.report.content import check_context
from fedcheck.report.figures import VIEW_LIMIT, check_figures, drop_unresolved, figure_svg
from fedcheck.report.html import render_check_html, render_index_html, title_html
from fedcheck.report.pdf import PdfUnavailable, figure_pdfs, pdf_engine, pdf_status, render_pdf
from fedcheck.report.phase import check_page, draw_figures, figure_pdf_files, figure_plan, index_page, warm_up
from fedcheck.report.typeset import mathtext_ok, print_context, print_font_css, render_math_svg, tex_label

__all__ = ["validate", "BadResults", "render_math_svg", "mathtext_ok", "drop_unresolved",
           "check_figures", "render_check_html", "render_index_html", "report_name", "card_html",
           "merge_documents", "pdf_engine", "tex_label", "figure_svg", "FigureOut", "draw_figures", "check_page",
           "figure_pdf_files", "index_page", "pdf_status", "warm_up", "check_context", "figure_files", "figure_plan",
           "figure_pdfs", "print_context", "print_font_css", "render_pdf", "PdfUnavailable", "title_html",
           "VIEW_LIMIT"]
