"""``fedcheck audit``: the key steps of a theorem's proof, each checked on its own (:mod:`fedcheck.tools.audit`)."""
from __future__ import annotations

import sys
import time

from fedcheck.core import verdict as V
from fedcheck.tools.audit import audit_result, audit_steps, format_steps


def add_arguments(ap) -> None:
    ap.add_argument("ids", nargs="+", metavar="ID", help="check ids, aliases or paper names (checks that declare proof steps)")
    ap.add_argument("--json", default=None, metavar="FILE", help="write the steps and verdicts as a results JSON")
    ap.add_argument("--out", default="reports", metavar="DIR", help="where reports and witnesses go (default: reports/)")
    ap.add_argument("--no-report", action="store_true", help="write no HTML/PDF report")
    ap.add_argument("--theorem-file", action="append", default=[], help="a Python file declaring your own checks")


def cmd_audit(args, argv) -> int:
    from fedcheck.cli.errors import EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REFUTED, BadInput
    from fedcheck.catalog.registry import load_registry as _registry
    from fedcheck.catalog.registry import UnknownCheck
    from fedcheck.core.outputs import Outputs
    from fedcheck.core.results import check_writable, document, provenance, write_json
    from fedcheck.render import plan_reports

    reg = _registry(args.theorem_file)
    try:
        checks = reg.resolve(args.ids)
    except UnknownCheck as e:
        raise BadInput(str(e)) from None
    with_steps = [c for c in checks if getattr(c, "proof_steps", ())]
    if not with_steps:
        have = [cid for cid, c in reg.checks.items() if getattr(c, "proof_steps", ())]
        print(f"fedcheck: error: {', '.join(c.id for c in checks)} declare(s) no proof steps; checks with proof "
              f"steps: {', '.join(have) or 'none'}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # everything audit writes, declared and checked before a step runs: audit.json, its pages under audit/ and the
    # witnesses of each check in audit/instances/<check>/
    outputs = Outputs(args.out, "audit")
    if not args.no_report:
        plan_reports(outputs, [f"{c.id}.audit" for c in with_steps])
    for c in with_steps:                # the witnesses (also with --no-report: they are not reports)
        outputs.replaces(outputs.instances_dir(c.id), "dir")
    outputs.check()
    if args.json:
        check_writable(args.json, "--json", directory=False)
    with outputs:
        from fedcheck.core.outputs import check_folder
        staged = outputs.stage() / "witnesses"
        results, all_steps = [], []
        for chk in with_steps:
            t0 = time.perf_counter()
            steps = audit_steps(chk, staged / check_folder(chk.id))
            all_steps.append(steps)
            print(format_steps(chk, steps))
            print()
            results.append(audit_result(chk, steps, time.perf_counter() - t0))
        skipped = [c.id for c in checks if c not in with_steps]
        if skipped:
            print(f"no proof steps declared: {', '.join(skipped)}")
        doc = document(results, provenance(argv, None))
        from fedcheck.core.claim import jsonable as _jsonable
        doc["proof_audits"] = _jsonable({c.id: st for c, st in zip(with_steps, all_steps)})   # every step in full
        items = {}                      # the witnesses into audit/instances/<check>/; the results point at them
        for c in with_steps:
            src = staged / check_folder(c.id)
            if src.is_dir() and any(src.iterdir()):
                items[outputs.instances_dir(c.id)] = src
                doc = _remap(doc, str(src), str(outputs.root / outputs.instances_dir(c.id)))
        outputs.publish(items)
        if args.json:
            print(f"results: {write_json(doc, args.json)}")
        if not args.no_report:
            from fedcheck.render import write_reports
            for path in write_reports(doc, outputs=outputs):
                if path.suffix in (".json", ".html"):
                    print(f"report: {path}")
    vs = [r["verdict"] for r in results]
    if V.VIOLATED in vs:
        return EXIT_REFUTED
    if V.INCONCLUSIVE in vs:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def _remap(x, old: str, new: str):
    """``x`` with every string's ``old`` path prefix replaced by ``new`` (a staged file's final place)."""
    if isinstance(x, dict):
        return {k: _remap(v, old, new) for k, v in x.items()}
    if isinstance(x, list):
        return [_remap(v, old, new) for v in x]
    return x.replace(old, new) if isinstance(x, str) and old in x else x
