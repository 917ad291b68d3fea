"""Where the reports are rendered: in this process, or in a small pool of renderer processes.

:func:`write_reports` runs the report phase as independent pieces of work (see :mod:`fedcheck.report` for
what each piece draws):

* per check, its figures drawn as SVG (and written with their CSV), split over the renderers by figure;
* then, at the same time, the check's page (HTML, and the PDF WeasyPrint lays out from it) and the PDFs of its
  figures on their own;
* the index page once every check's page is done.

With ``pool=None`` each piece runs here, one after the other.  With a :class:`RenderPool` the pieces run in
worker processes started with ``spawn``, whose initializer imports matplotlib, WeasyPrint and Jinja and
renders a small figure and page once (fonts loaded, caches warm): ``fedcheck verify`` starts the pool when
its checks start, so that this start-up overlaps the checks.  Either way the files are the same (the same
functions on the same inputs; SVG ids are seeded, see ``svg.hashsalt``); PDFs may differ in their timestamps.

This module imports no plotting or PDF library: the main process of a pooled run never loads them.  An
interrupt (SIGINT, SIGTERM) or a failure stops the renderers (terminated, then joined: no process is left
behind) before the temporary directory is removed, so that no half-written report appears.

``FEDCHECK_REPORT_WORKERS=N`` sets the number of renderer processes (0: render in the calling process; default
:func:`default_workers`); ``FEDCHECK_RENDER_TRACE=1`` prints each piece, where it ran and how long it took, on
stderr (``benchmarks/reports.py`` shows it).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from concurrent.futures import FIRST_COMPLETED, Future, wait
from pathlib import Path
from typing import Any, Callable

__all__ = ["write_reports", "plan_reports", "PAGE", "print_written", "merge_documents", "RenderPool", "FigureOut", "validate", "BadResults", "report_name", "figure_files", "default_workers", "mark_cpu", "free_cores",
           "stop_all"]

from fedcheck.core.outputs import Outputs  # noqa: E402
from fedcheck.core.usercode import main_not_imported  # noqa: E402
from fedcheck.documents import (BadResults, FigureOut, figure_files, merge_documents, print_written,  # noqa: E402,F401
                                report_name, validate)

PAGE = "report"          # a check's page in its folder: report.html, report.pdf, and its figures in report/

WORKERS_ENV = "FEDCHECK_REPORT_WORKERS"     # renderer processes; 0 renders in the calling process


# ------------------------------------------------------------------------------------------------
# where the work runs
def _cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) CPU time of the whole machine so far, in jiffies (Linux ``/proc/stat``), else ``None``."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            v = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(v) < 5:
        return None
    total = sum(v)                          # user nice system idle iowait irq softirq steal
    return total - v[3] - v[4], total


_MARK: tuple | None = None


def mark_cpu() -> None:
    """Start measuring how busy the machine is (``fedcheck verify`` calls this as it starts; the renderers are
    counted when its checks start, from the cores left idle in between: see :func:`default_workers`)."""
    import time
    global _MARK
    _MARK = (_cpu_jiffies(), time.monotonic())


def free_cores() -> float | None:
    """Cores left idle since :func:`mark_cpu`, while this process ran (``None``: not measured, or less than
    0.2 s ago): the machine's idle time over the interval, from ``/proc/stat``.  Idle time is what a renderer
    can use without slowing anything; other processes' use would undercount what they want when the
    machine is full."""
    import time
    if _MARK is None or _MARK[0] is None:
        return None
    now, dt = _cpu_jiffies(), time.monotonic() - _MARK[1]
    if now is None or dt < 0.2 or now[1] <= _MARK[0][1]:
        return None
    cores = os.cpu_count() or 1
    return cores * (1.0 - (now[0] - _MARK[0][0]) / (now[1] - _MARK[0][1]))


def default_workers() -> int:
    """Renderer processes: ``$FEDCHECK_REPORT_WORKERS`` when set (0: none, render in this process).  Else, when
    the command called :func:`mark_cpu` as it started, from the cores left idle since (:func:`free_cores`,
    measured while this process was busy loading the checks): 2 with at least half a core idle, 1 with a
    quarter, else none.  Otherwise from the load average of the last minute (as ``make -l`` does): 2 when
    at least one core is idle, 1 when half a core is.  The measure of now is preferred: the load average lags
    by a minute, so a run started right after another one (a script, a benchmark) counted the finished run
    as busy.  A check's report has two pieces that run at once (its figures, and its page laid out
    meanwhile).  On a machine whose cores are all busy, renderer processes cost more than they save (their
    start-up competes with the checks, and the libraries are imported once per process): there the reports
    render in the calling process."""
    v = os.environ.get(WORKERS_ENV, "").strip()
    if v:
        try:
            return max(0, int(v))
        except ValueError:
            pass
    cores = os.cpu_count() or 1
    if cores < 2:
        return 0
    free = free_cores()
    if free is not None:
        return 2 if free >= 0.5 else 1 if free >= 0.25 else 0
    try:
        idle = cores - os.getloadavg()[0]
    except (AttributeError, OSError):
        idle = cores
    if idle < 0.5:                   # all cores busy: render in the calling process
        return 0
    # at least one core free: two renderers (at nice +10 while they start, so the checks keep priority);
    # half a core free: one renderer, which still overlaps its imports with the checks
    return 2 if idle >= 1.0 else 1


def _init_worker() -> None:
    """A renderer's start: ignore SIGINT (the main process handles it and stops the renderers), die with the
    parent (Linux), import the libraries and render a small figure and page once."""
    import signal

    from fedcheck.core.allocator import tune_allocator
    tune_allocator()        # a renderer is fedcheck's own process (the allocator's settings: see that module)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:                    # started with SIGINT blocked (see RenderPool): a Ctrl-C held since is dropped
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    except (AttributeError, OSError, ValueError):
        pass
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)      # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            os._exit(0)
    except Exception:
        pass
    try:                    # start-up at a low priority: it overlaps the checks and must not slow them down
        old = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, min(old + 10, 19))
    except (AttributeError, OSError):
        old = None
    from fedcheck import report
    report.warm_up()
    if old is not None:     # back to the caller's priority for the rendering (where the system allows it)
        try:
            os.setpriority(os.PRIO_PROCESS, 0, old)
        except OSError:
            pass


@contextlib.contextmanager
def _sigint_blocked():
    """SIGINT blocked while the renderers start, so that they start with it blocked (the mask survives exec):
    a Ctrl-C in a terminal reaches the whole process group, and a Python still importing its site packages
    would print a fatal error.  This process gets a Ctrl-C of that moment as soon as it is unblocked."""
    import signal
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, OSError, ValueError):      # not POSIX, or not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _signals_deferred():
    """SIGINT and SIGTERM held while the renderers start and acted on just after (as the handlers in place
    would): blocking SIGINT above does not stop it reaching another thread of this process, and an interrupt
    between starting a process and sending it its start-up data would leave that process failing noisily."""
    from fedcheck.core.outputs import signals_held
    return signals_held()


def _noop() -> None:
    return None


class _Here:
    """An executor that runs each piece of work at once, in this process (``pool=None``)."""

    workers = 1

    def submit(self, fn, *args) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args))
        except Exception as e:          # an interrupt (KeyboardInterrupt) propagates at once
            f.set_exception(e)
        return f


_LIVE: set = set()


class RenderPool:
    """``workers`` renderer processes (``spawn``), started now; their start-up (imports, warm-up) runs while
    the caller goes on.  ``close()`` waits for them to finish; ``abort()`` (also on leaving a ``with`` block
    by an exception) terminates them.  Not Dask: a cluster takes seconds to start; this takes none of the
    caller's time."""

    def __init__(self, workers: int | None = None):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        self.workers = max(1, workers or default_workers())
        if os.environ.get("FEDCHECK_RENDER_TRACE"):
            print(f"render: {self.workers} renderer process(es)", file=sys.stderr)
        self._ex = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_init_worker)
        _LIVE.add(self)
        try:
            with main_not_imported(), _sigint_blocked(), _signals_deferred():
                for _ in range(self.workers):   # start every process now (they start on demand otherwise)
                    self._ex.submit(_noop)
        except BaseException:
            self.abort()
            raise

    @classmethod
    def start(cls, workers: int | None = None) -> "RenderPool | None":
        """A pool, or ``None`` when :func:`default_workers` says none (render in this process)."""
        n = default_workers() if workers is None else workers
        if n <= 0 and os.environ.get("FEDCHECK_RENDER_TRACE"):
            print("render: no renderer process (in the main process)", file=sys.stderr)
        return cls(n) if n > 0 else None

    def submit(self, fn, *args) -> Future:
        return self._ex.submit(fn, *args)

    def close(self) -> None:
        """Wait for the work submitted, then stop the renderers (idle by then: terminated, which is quicker
        than letting each interpreter with matplotlib and WeasyPrint loaded wind down)."""
        _LIVE.discard(self)
        for f in list(getattr(self._ex, "_pending_work_items", {}).values()):
            f.future.result()
        self.abort()

    def abort(self) -> None:
        """Stop at once: pending work cancelled, running renderers terminated (then killed if they linger)
        and joined."""
        _LIVE.discard(self)
        procs = list((getattr(self._ex, "_processes", None) or {}).values())
        self._ex.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            try:
                p.terminate()
            except Exception:
                pass
        for p in procs:
            try:
                p.join(5)
                if p.is_alive():
                    p.kill()
                    p.join(5)
            except Exception:
                pass

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if typ is None:
            self.close()
        else:
            self.abort()


def stop_all() -> None:
    """Terminate every pool still running (a command left by an interrupt or an error before its reports)."""
    for pool in list(_LIVE):
        pool.abort()


# ------------------------------------------------------------------------------------------------
def plan_reports(outputs: Outputs, check_ids: list[str]) -> Outputs:
    """Declare what :func:`write_reports` will write for these checks (before anything is computed, so that
    :meth:`Outputs.check` refuses a folder fedcheck does not own at once): the command's results file, the index
    (several checks, or none) and each check's folder ``checks/<check>/`` (page, PDF, figures)."""
    outputs.replaces(outputs.results_name)
    if len(check_ids) != 1:
        outputs.replaces(outputs.page_path("index.html"))
    for d in outputs.check_dirs(check_ids):
        outputs.replaces(d, "dir")
    return outputs


def _rel(target: str, start: str) -> str:
    return os.path.relpath(target or ".", start or ".").replace(os.sep, "/")


def write_reports(doc: dict, out: Path | None = None, progress: Callable[[int, int, str], Any] | None = None,
                  pool: RenderPool | None = None, outputs: Outputs | None = None,
                  extra: dict[str, dict[str, Path]] | None = None) -> list[Path]:
    """Write the reports of ``doc`` under ``out`` (or into ``outputs``, the output folder of a subcommand,
    :mod:`fedcheck.core.outputs`) and return the paths written:

    * the command's results file (``results.json`` for verify) first, so that the results survive an interrupt
      while the reports render;
    * per check, in its own folder ``checks/<check>/``: ``report.html``, ``report.pdf`` (the same page laid out for
      print; skipped with one warning line when WeasyPrint cannot load Pango), and ``report/fig-<name>.svg``, ``.pdf``
      and ``.csv`` for each figure (and the files of ``extra[check id]``: ``{name: staged path}``);
    * ``index.html`` (thumbnails and verdict badges) when there are several checks or none.

    ``progress(done, total, label)``, when given, is called as each report is finished.  Everything is rendered into
    a staging folder and moved into place once complete, never over a file fedcheck did not write (checked before
    rendering when no ``outputs`` is given; a command that passes ``outputs`` checks it before computing).
    ``pool``: where the pieces run (``None``: here).  On any exception the pool is stopped (see
    :meth:`RenderPool.abort`) before the staging folder is removed; on success it stays usable."""
    validate(doc)
    from fedcheck.core.results import dumps
    try:
        results_text = dumps(doc)       # as ``verify --json`` writes it
    except ValueError as e:
        raise BadResults(f"results document is not valid JSON: {e}") from None
    checks = doc["checks"]
    own = outputs is None
    o = Outputs(out, "verify") if own else outputs
    plan_reports(o, [chk["id"] for chk in checks])
    if own:
        o.check()
    try:
        return _write_reports(doc, results_text, o, progress, pool, extra or {})
    finally:
        if own:
            o.discard()


def _write_reports(doc, results_text, o: Outputs, progress, pool, extra) -> list[Path]:
    from fedcheck.core.results import atomic_write_text
    stage = o.stage()
    staged_results = atomic_write_text(stage / o.results_name, results_text)
    written = o.publish({o.results_name: staged_results})
    ex = pool if pool is not None else _Here()
    tasks = _Tasks
    checks = doc["checks"]
    several = len(checks) > 1
    total = len(checks) + (1 if several or not checks else 0)
    tmp = Path(tempfile.mkdtemp(prefix="pages-", dir=stage))
    try:
        warning = ex.submit(tasks.pdf_status).result()
        if warning:
            print(f"fedcheck: warning: {warning}", file=sys.stderr)
        pdf = not warning
        dirs = o.check_dirs([chk["id"] for chk in checks])           # checks/<check>, relative to --out
        for d in dirs:
            (tmp / d).mkdir(parents=True, exist_ok=True)
        index_rel = o.page_path("index.html")
        prov = doc.get("provenance")
        # Two renderers or more: a check's figures are drawn in one piece while its page is laid out in
        # another (placeholders of the figures' sizes; painted once they are drawn: report.check_page with
        # figures=None).  The drawing is submitted first, so it never waits behind a page waiting for it.
        # One renderer, or none: the figures are drawn (split over the renderers), then the page.
        overlap = pool is not None and ex.workers >= 2
        parts = 1 if overlap else max(1, ex.workers)
        pending: dict[Future, tuple[int, str]] = {}
        drawn: dict[int, list] = {q: [] for q in range(len(checks))}
        todo: dict[int, set] = {}               # pieces still out, per check
        figures: dict[int, list] = {}
        entries: dict[int, dict] = {}
        links_of = lambda q: {"pdf": f"{PAGE}.pdf" if pdf else None,                  # noqa: E731
                              "index": _rel(index_rel, dirs[q]) if several else None,
                              "results": _rel(o.results_name, dirs[q])}

        def submit(q: int, kind: str, fn, *args) -> None:
            pending[ex.submit(fn, *args)] = (q, kind)
            todo.setdefault(q, set()).add(kind)

        def draw(q: int) -> None:       # a check's figures (and, overlapping, its page); the next check's once
            if q < len(checks):         # these are drawn (the renderers finish one report before the next)
                for p in range(parts):
                    submit(q, f"draw{p}", tasks.draw_figures, checks[q], str(tmp / dirs[q] / PAGE), p, parts, not pdf)
                if overlap:
                    submit(q, "page", tasks.check_page, checks[q], prov, None, links_of(q), str(tmp / dirs[q]), PAGE,
                           pdf)
        draw(0)
        done_count = 0
        while pending:
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for f in sorted(done, key=lambda f: pending[f]):
                q, kind = pending.pop(f)
                res = f.result()
                todo[q].discard(kind)
                if kind.startswith("draw"):
                    drawn[q] += res
                    if any(k.startswith("draw") for k in todo[q]):
                        continue
                    figs = [rf for _, rf in sorted(drawn.pop(q), key=lambda t: t[0])]
                    for rf in figs:
                        rf.files = figure_files(PAGE, rf.key)
                    figures[q] = figs
                    if not overlap:
                        submit(q, "page", tasks.check_page, checks[q], prov, figs, links_of(q), str(tmp / dirs[q]),
                               PAGE, pdf)
                    if figs and pdf:
                        submit(q, "figpdf", tasks.figure_pdf_files, figs, str(tmp / dirs[q] / PAGE))
                    draw(q + 1)
                elif kind == "page":
                    entries[q] = res
                if todo[q] or q not in figures or q not in entries:
                    continue
                figs = figures[q]
                if entries[q].pop("figure_keys", None) != [rf.key for rf in figs]:   # the page planned other
                    submit(q, "page", tasks.check_page, checks[q], prov, figs, links_of(q), str(tmp / dirs[q]),
                           PAGE, pdf)
                    del entries[q]                                                  # figures: made again
                    continue
                here = _rel(dirs[q], o.pages)
                entries[q].update(html=f"{here}/{PAGE}.html", pdf=f"{here}/{PAGE}.pdf" if pdf else None,
                                  source=str(checks[q].get("source") or ""),
                                  thumb=figs[0].svg_uri if figs else None,
                                  thumb_title=figs[0].title if figs else "")
                done_count += 1
                if progress is not None:
                    progress(done_count, total, checks[q]["id"])
        for q, chk in enumerate(checks):            # a command's own files of a check (search: its worst instance)
            for name, src in (extra.get(chk["id"]) or {}).items():
                shutil.move(str(src), str(tmp / dirs[q] / name))
        items = {d: tmp / d for d in dirs}
        if several or not checks:
            (tmp / o.pages).mkdir(parents=True, exist_ok=True)
            ex.submit(tasks.index_page, {"provenance": prov, "results_link": _rel(o.results_name, o.pages)},
                      [entries[q] for q in range(len(checks))], str(tmp / o.pages)).result()
            items[index_rel] = tmp / index_rel
            if progress is not None:
                progress(total, total, "index.html")
        for dest in o.publish(items):
            written += sorted(p for p in dest.rglob("*") if p.is_file()) if dest.is_dir() else [dest]
        return written
    except BaseException:
        if pool is not None:
            pool.abort()            # no renderer writes into tmp once it is removed
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _call(name: str, *args):
    """Run :mod:`fedcheck.report`'s ``name`` (imported where this runs: a renderer, or here without a pool)."""
    from fedcheck import report
    if os.environ.get("FEDCHECK_RENDER_TRACE"):
        import time
        t = time.perf_counter()
        try:
            return getattr(report, name)(*args)
        finally:
            what = {"draw_figures": lambda: f"{args[0]['id']} part {args[2] + 1}/{args[3]}",
                    "check_page": lambda: f"{args[0]['id']} HTML + PDF",
                    "figure_pdf_files": lambda: f"{len(args[0])} figures"}.get(name, lambda: "")()
            print(f"render: {name} {what} (pid {os.getpid()}) {time.perf_counter() - t:.2f} s, end "
                  f"{time.time() % 100:.2f}", file=sys.stderr)
    return getattr(report, name)(*args)


class _Tasks:
    """The pieces of work, as functions that pickle by reference without importing :mod:`fedcheck.report`
    in the main process."""

    @staticmethod
    def pdf_status():
        return _call("pdf_status")

    @staticmethod
    def draw_figures(*args):
        return _call("draw_figures", *args)

    @staticmethod
    def check_page(*args):
        return _call("check_page", *args)

    @staticmethod
    def figure_pdf_files(*args):
        return _call("figure_pdf_files", *args)

    @staticmethod
    def index_page(*args):
        return _call("index_page", *args)
