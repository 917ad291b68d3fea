"""The ``fedcheck`` command line: parsing and the commands ``list``, ``verify``, ``report``, ``cache`` (``search``,
``audit`` and ``pep`` are in :mod:`fedcheck.cli.search`, :mod:`.audit`, :mod:`.pep`, over the library functions of
:mod:`fedcheck.tools`).  Exit codes: :mod:`fedcheck.cli.errors`."""
from __future__ import annotations

import argparse
import signal
import sys
import traceback
from pathlib import Path

from fedcheck.cli.tables import (printed_formula_warnings, summary_table, verdict_lines,  # noqa: F401  (re-exported)
                                 wrap_line)
from fedcheck.catalog.inputs import parse_seeds  # noqa: F401  (re-exported)
from fedcheck.core.allocator import tune_allocator
from fedcheck.cli.errors import (EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK,
                                 EXIT_REFUTED, EXIT_SCHEDULER, EXIT_TERMINATED, BadInput, SchedulerLost, Terminated,
                                 exit_code)

# Start-up: `fedcheck --help` and `fedcheck list` import neither numpy, SymPy, SciPy nor the catalog; every
# heavy import is inside the command that needs it (benchmarks/startup.py, tests/test_startup.py).

__all__ = ["main", "parse_seeds", "summary_table", "exit_code", "build_parser", "EXIT_OK", "EXIT_REFUTED",
           "EXIT_BAD_INPUT", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "BadInput"]


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, fill=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._fill = fill       # adds this (sub)command's arguments on first use: its module is heavy

    def _filled(self):
        if self._fill is not None:
            fill, self._fill = self._fill, None
            fill(self)
        return self

    def parse_known_args(self, args=None, namespace=None):
        return super(_Parser, self._filled()).parse_known_args(args, namespace)

    def format_help(self):
        return super(_Parser, self._filled()).format_help()

    def format_usage(self):
        return super(_Parser, self._filled()).format_usage()

    def error(self, message):  # argparse exits 2 already; keep the message format
        self.print_usage(sys.stderr)
        print(f"fedcheck: error: {message}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fedcheck", description="Check convergence theorems of federated optimization papers.")
    from fedcheck import __version__
    p.add_argument("--version", action="version", version=f"fedcheck {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ls = sub.add_parser("list", help="list every check: id, alias, claim")
    ls.add_argument("--theorem-file", action="append", default=[], help="also list the checks of this Python file")
    ls.add_argument("--long", action="store_true",
                    help="also each declared reading or finding: paper or analysis, the paper's words, place and setting")
    v = sub.add_parser("verify", help="run checks and give verdicts with evidence; ID is a namespaced id "
                       "(fedfw.theorem1), an alias (theorem1) or a paper (fedfw: all its checks)")
    v.add_argument("ids", nargs="+", metavar="ID", help="check ids (fedfw.theorem1), aliases (theorem1) or paper names (fedfw)")
    v.add_argument("--seeds", default=None, help="a count (8), a list (3,5,9) or a range (10-19)")
    v.add_argument("--rounds", type=int, default=None, metavar="T",
                   help="number of rounds T (default: the check's); a claim over horizons keeps its horizons <= T")
    v.add_argument("--instance", action="append", default=[], metavar="FILE",
                   help="run on this .npz instance instead of the random family (repeatable)")
    v.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a parameter of the bound, e.g. lambda_0=0.5")
    v.add_argument("--json", default=None, metavar="FILE", help="write the results as JSON")
    v.add_argument("--table", default=None, metavar="FILE", help="write the tidy table of observations as "
                   "FILE.csv or FILE.parquet: one row per check, finding, instance, run and point, with what every "
                   "verdict is recomputed from (columns: docs/TABLE.md)")
    v.add_argument("--out", default="reports", metavar="DIR", help="where reports go (default: reports/)")
    v.add_argument("--no-report", action="store_true", help="write no HTML/PDF report")
    v.add_argument("--theorem-file", action="append", default=[], metavar="FILE",
                   help="a Python file declaring your own checks (repeatable)")
    v.add_argument("--full", action="store_true", help="run the long sweeps")
    v.add_argument("--no-cache", action="store_true", help="solve again even if a cached optimum exists")
    v.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="run checks and seeds as Dask tasks on N local worker processes (results identical to "
                   "-j 1, which runs in this process; 0: one per CPU; default: one per CPU when the run is long "
                   "enough to gain from it)")
    v.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the tasks on an existing Dask cluster (tcp://host:8786, or a scheduler file .json)")
    v.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    v.add_argument("--wide", action="store_true", help="print every row and message on one line, however long "
                   "(default: fit the terminal's width, 100 columns when not a terminal)")
    v.add_argument("--expect", action="store_true", help="compare each verdict with the one the claim declares "
                   "(expected=...) and exit 0 when all match, 1 when any differs (each difference on one line): CI "
                   "tells a regression from the catalog's known findings")
    v.add_argument("--with-audit", action="store_true", help="also check the declared proof steps (fedcheck audit) "
                   "and put them in the results and reports")
    rp = sub.add_parser("report", help="render HTML and PDF reports from results JSON files, without recomputing "
                        "(several files: one index over all their checks)")
    rp.add_argument("results", nargs="+", metavar="RESULTS.json", help="results JSON written by 'fedcheck verify --json' (one or more)")
    rp.add_argument("--out", default="reports", metavar="DIR")
    rp.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    # the tools' modules import numpy/SymPy: their arguments are added when the subcommand is used
    sub.add_parser("search", help="search the instance space for the worst measured/bound of a bound "
                   "(adversarial, vs random draws)", fill=_tool_arguments("search"))
    sub.add_parser("audit", help="check the key steps of a theorem's proof (symbolic, grid, witness)",
                   fill=_tool_arguments("audit"))
    sub.add_parser("pep", help="certified worst cases by performance estimation (PEPit, a dependency) of Frank-Wolfe "
                   "and naive averaging", fill=_tool_arguments("pep"))
    ca = sub.add_parser("cache", help="where the on-disk cache is ($FEDCHECK_CACHE, default ~/.cache/fedcheck; off "
                        "disables it) and its entries by kind and size (info: solutions, PEP values, typeset "
                        "formulas, the catalog's listing), or remove fedcheck's own files from it (clear)")
    csub = ca.add_subparsers(dest="cache_command", metavar="{info,clear}", required=True, parser_class=_Parser)
    csub.add_parser("info", help="location, number of entries by kind, total size")
    csub.add_parser("clear", help="remove every entry fedcheck wrote there and print what was removed "
                    "(nothing cached is needed: it is recomputed)")
    return p


def _tool_arguments(name: str):
    def fill(ap):
        import importlib
        importlib.import_module(f"fedcheck.cli.{name}").add_arguments(ap)
    return fill


def _registry(files, names=None):
    """The catalog and users' files; with ``names``, only the paper modules those names need are imported."""
    from fedcheck.catalog.registry import load_registry
    return load_registry(files, names)


def cmd_list(args) -> int:
    from fedcheck.catalog import registry
    if args.theorem_file:           # a user's files are always read live (and checked against the catalog)
        listing = registry.build_listing(_registry(args.theorem_file))
    else:                           # the catalog from its manifest, rebuilt whenever a source changed
        listing = registry.catalog_listing()
    rows = [(r["id"], r["paper"], ", ".join(r["aliases"]), r["title"]) for r in listing]
    w0 = max(len(r[0]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    print(f"{'id'.ljust(w0)}  {'alias'.ljust(w2)}  claim")
    for (cid, paper, al, claim), r in zip(rows, listing):
        print(f"{cid.ljust(w0)}  {al.ljust(w2)}  {claim}")
        if getattr(args, "long", False):
            if r.get("reference"):
                print(f"    reference: {r['reference']}")
            for st in r.get("statements") or []:
                tag = "paper" if st.get("paper") else "analysis"
                print(f"    {st['name']} ({tag})")
                src = st.get("source")
                if src:
                    print(f"      quote:   \u201c{src['quote']}\u201d")
                    print(f"      place:   {src['place']}")
                    print(f"      setting: {src['setting']}")
                elif st.get("paper"):
                    print("      (no source declared)")
                if st.get("deviation"):
                    print(f"      tested outside it: {st['deviation']}")
    return EXIT_OK


def cmd_verify(args, argv) -> int:
    if not args.no_report:          # how busy the machine is, measured until the renderers start
        from fedcheck.render import mark_cpu
        mark_cpu()
    from fedcheck import api
    pool = None
    if not args.no_report:          # renderers start now (importing api measured the idle cores): their start-up
        from fedcheck.render import RenderPool      # overlaps loading the claims as well as running them
        pool = RenderPool.start()
    outputs = None
    try:
        plan = api.prepare(*args.ids, seeds=args.seeds, rounds=args.rounds, params=args.param,
                           instances=args.instance, full=args.full, jobs=args.jobs, theorem_file=args.theorem_file,
                           scheduler=args.scheduler, expect=args.expect, ids_only=True)
        outputs = api.check_outputs(plan, out=None if args.no_report else args.out, json=args.json,
                                    table=getattr(args, "table", None))
        for line in plan.notes():      # what an option narrows, said before the run
            print(wrap_line(f"note: {line}", wide=args.wide))
        return _verify(args, argv, plan, outputs, pool)
    finally:
        if pool is not None or outputs is not None:
            from fedcheck.render import stop_all
            stop_all()          # renderers of a run stopped by an interrupt, an error or bad input: none is left
        if outputs is not None:
            outputs.discard()


def _verify(args, argv, plan, outputs, pool=None) -> int:
    """Run the plan, print and write its results; refuting instances are written into the staging folder of
    ``outputs`` and moved into ``--out`` only once the whole run is done (an interrupted run leaves no file)."""
    from fedcheck import api
    from fedcheck.core import progress      # one display for checks, solves, rounds, proofs and reports
    staging = outputs.stage() if outputs is not None else None
    checks = plan.claims
    bar = progress.Task("checks", total=len(checks), unit="check", leave=True,
                        show=progress.enabled(not args.quiet and len(checks) > 1))
    # reports: the renderer processes (started by cmd_verify) import matplotlib/WeasyPrint while the checks run

    def place(results):         # the run's refuting instances, from the staging folder to --out
        if staging is not None:
            _publish_instances(results, checks, staging / "instances", outputs)
    res = api.run(plan, progress=not args.quiet, use_cache=not args.no_cache,
                  save_dir=staging / "instances" if staging is not None else None, on_done=lambda c: bar.update(),
                  audit=args.with_audit, place_instances=place, argv=argv)
    bar.close()
    results, doc = res.dicts, res.document()
    if args.with_audit:
        from fedcheck.tools.audit import audit_line
        for chk, r in zip(checks, results):
            print(audit_line(chk, r))
    print(verdict_lines(results, wide=args.wide))
    if args.json:
        from fedcheck.core.results import write_json
        rel = outputs.own_path(args.json, "--json") if outputs is not None else None
        path = outputs.write_own(rel, lambda p: write_json(doc, p)) if rel else write_json(doc, args.json)
        print(f"results: {path}")
    if outputs is not None:     # results.json is written first, then the reports with a progress bar
        from fedcheck.render import print_written, write_reports
        with progress.task("reports", total=len(doc["checks"]), unit="report", enabled=not args.quiet) as rbar:
            written = write_reports(doc, progress=progress.callback(rbar), pool=pool, outputs=outputs)
        if pool is not None:
            pool.close()
        print_written(written, Path(args.out))
        from fedcheck.api import keep_run      # each run keeps its own copy: out/runs/<UTC time>-<ids>.json
        print(f"run: {keep_run(doc, written=written[0], outputs=outputs)}")
    if getattr(args, "table", None):
        from fedcheck.api import to_frame, write_table
        frame = to_frame(results, doc["provenance"])
        rel = outputs.own_path(args.table, "--table") if outputs is not None else None
        if rel:                 # inside --out: one of the folder's files, recorded
            path = outputs.write_own(rel, lambda p: write_table(frame, p, doc["provenance"]))
        else:
            path = write_table(frame, args.table, doc["provenance"])
        print(f"table: {path}")
    if args.expect:             # CI: as declared (0) or not (1), whatever the verdicts are
        from fedcheck.api import expectation_report
        differ, text = expectation_report(results)
        print(text)
        return EXIT_REFUTED if differ else EXIT_OK
    return exit_code(results)


def _publish_instances(results: list[dict], checks, staged: Path, outputs) -> dict:
    """Move each check's staged refuting instances (``staged/<check>/``) into ``--out/instances/<check>/`` and
    point the results at their final paths."""
    from fedcheck.core.outputs import check_folder
    items, moved = {}, {}
    for c in checks:
        src = staged / check_folder(c.id)
        if src.is_dir() and any(src.iterdir()):
            rel = outputs.instances_dir(c.id)
            items[rel] = src
            for f in src.rglob("*"):
                moved[str(f)] = str(outputs.root / rel / f.relative_to(src))
    outputs.publish(items)
    for r in results:
        r["saved_instances"] = [moved.get(p, p) for p in r.get("saved_instances") or []]
    return moved


def cmd_report(args) -> int:
    from fedcheck.core.outputs import Outputs
    from fedcheck.core.results import read_results
    from fedcheck.render import RenderPool, merge_documents, plan_reports, print_written, write_reports
    docs = [read_results(f) for f in args.results]      # every file is checked before anything is written
    doc = merge_documents(docs, args.results)
    outputs = plan_reports(Outputs(args.out, "report"), [c["id"] for c in doc["checks"]])
    outputs.check()
    from contextlib import nullcontext
    from fedcheck.core import progress
    with outputs:
        pool = RenderPool.start()           # renderer processes (closed on leaving, terminated on an error)
        with pool if pool is not None else nullcontext(), \
                progress.task("reports", total=len(doc["checks"]), unit="report", enabled=not args.quiet) as rbar:
            written = write_reports(doc, progress=progress.callback(rbar), pool=pool, outputs=outputs)
    print_written(written, Path(args.out))
    return EXIT_OK


def cmd_cache(args) -> int:
    """``cache info``: where the cache is, its entries by kind and their size; ``cache clear``: remove them."""
    from fedcheck.core import cache
    if args.cache_command == "info":
        print(cache.describe(cache.info()))
        return EXIT_OK
    before = cache.info()
    if before.exists and not before.owned:      # a folder fedcheck did not create: nothing of it is removed
        cache.clear()                           # raises BadInput (exit 2, one line)
    if before.location is None or not before.exists or not before.entries:
        print(cache.describe(before) + ("" if before.location is None else "\n  nothing to remove"))
        return EXIT_OK
    print(cache.describe(cache.clear(), "removed"))
    return EXIT_OK


_Terminated = Terminated       # SIGTERM in the main thread (fedcheck.core.errors.Terminated: a BaseException)


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    tune_allocator()        # the CLI's process and the local workers forked from it keep freed memory for reuse
    parser = build_parser()
    try:
        old_term = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:          # not the main thread
        old_term = None
    try:
        args = parser.parse_args(argv)
        if args.command == "list":
            return cmd_list(args)
        if args.command == "cache":
            return cmd_cache(args)
        if args.command == "verify":
            return cmd_verify(args, argv)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "search":
            from fedcheck.cli.search import cmd_search
            return cmd_search(args, argv)
        if args.command == "audit":
            from fedcheck.cli.audit import cmd_audit
            return cmd_audit(args, argv)
        if args.command == "pep":
            from fedcheck.cli.pep import cmd_pep
            return cmd_pep(args, argv)
    except BadInput as e:
        print(f"fedcheck: error: {' '.join(str(e).split())}", file=sys.stderr)    # always one line
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("fedcheck: interrupted; no partial report was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _Terminated:
        print("fedcheck: terminated; no partial report was written", file=sys.stderr)
        return EXIT_TERMINATED
    except SchedulerLost as e:
        print(f"fedcheck: error: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_SCHEDULER
    except BrokenPipeError:     # `fedcheck list | head`: the reader is gone, which is not an error
        try:
            sys.stdout = open("/dev/null", "w")
        except OSError:
            pass
        return EXIT_OK
    except SystemExit as e:     # argparse's --help / usage errors (a user's sys.exit is caught by its guard)
        return e.code if isinstance(e.code, int) else (EXIT_OK if e.code is None else EXIT_BAD_INPUT)
    except Exception:
        traceback.print_exc()
        print("fedcheck: internal error (exit 4); please report it with the command above", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
