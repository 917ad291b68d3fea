"""``fedcheck pep``: certified worst cases by performance estimation, of the PEP models the catalog's papers declare
(``PEP_MODELS`` in a paper's folder, found by :func:`fedcheck.catalog.registry.pep_models`: FedFW's
:mod:`theorems.fedfw.pep`).  A paper adding PEP models declares them there; this command needs no edit."""
from __future__ import annotations

import math
import sys


def add_arguments(ap) -> None:
    ap.add_argument("--horizon", type=int, default=6, help="largest number of rounds T (default 6; the SDP grows "
                    "as T^2: keep T <= 10)")
    ap.add_argument("--clients", type=int, default=2, help="clients of naive averaging (default 2)")
    ap.add_argument("--L", type=float, default=1.0, help="smoothness constant (default 1)")
    ap.add_argument("--D", type=float, default=2.0, help="diameter of the set (default 2, as in instance (21))")
    ap.add_argument("--zeta", type=float, default=2.0, help="bound on ||grad f_i(x*)|| (default 2, as in (21))")
    ap.add_argument("--solver", default="clarabel", choices=["clarabel", "scs"], help="SDP solver through cvxpy")
    ap.add_argument("--json", default=None, metavar="FILE", help="write the results JSON here")
    ap.add_argument("--out", default="reports", metavar="DIR")
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--no-cache", action="store_true", help="solve again even if a cached PEP value exists")
    ap.add_argument("--quiet", "-q", action="store_true")


def _positive(name: str, value: float, zero_ok: bool = False) -> None:
    """A model constant of the SDP: finite, > 0 (or 0 where allowed) and within [MIN_VALUE, MAX_VALUE]."""
    from fedcheck.cli.errors import BadInput
    if zero_ok and value == 0:
        return
    if not (math.isfinite(value) and MIN_VALUE <= value <= MAX_VALUE):
        raise BadInput(f"{name} {value!r}: expected {'0 or ' if zero_ok else ''}a finite number between "
                       f"{MIN_VALUE:g} and {MAX_VALUE:g} (the worst case scales as L D^2; the SDP is solved in double "
                       "precision)")


MIN_VALUE, MAX_VALUE = 1e-6, 1e6    # L, D, zeta: beyond these the SDP's data (L D^2, squared) over- or underflows


def cmd_pep(args, argv) -> int:
    from fedcheck.catalog.registry import pep_models
    from fedcheck.cli.errors import EXIT_BAD_INPUT, BadInput, exit_code
    from fedcheck.cli.tables import summary_table
    from fedcheck.core import verdict as V
    from fedcheck.core.outputs import Outputs
    from fedcheck.core.results import check_writable, document, provenance, write_json
    models = pep_models()
    if not models:
        raise BadInput("no paper of the catalog declares PEP models (PEP_MODELS in its folder)")
    for P in models:
        ok, why = P.available()
        if not ok:
            print(f"fedcheck: error: {why}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if not (1 <= args.horizon <= 30):
        raise BadInput("--horizon must be between 1 and 30")
    if args.clients < 1 or args.clients > 64:
        raise BadInput("--clients must be between 1 and 64")
    _positive("--L", args.L)
    _positive("--D", args.D)
    _positive("--zeta", args.zeta, zero_ok=True)
    outputs = Outputs(args.out, "pep")
    if not args.no_report:              # pep.json and its pages under pep/, checked before any SDP is solved
        from fedcheck.render import plan_reports
        plan_reports(outputs, [c.id for P in models for c in P.pep_checks()])   # the results run_pep gives
        outputs.check()
    if args.json:
        check_writable(args.json, "--json", directory=False)
    log = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    results = [r for P in models
               for r in P.run_pep(P.PepSettings(horizon=args.horizon, clients=args.clients, L=args.L, D=args.D,
                                                zeta=args.zeta, solver=args.solver.upper(),
                                                use_cache=not args.no_cache), log)]
    print(summary_table(results))
    for r in results:
        for tb in r.get("tables") or []:
            print(f"\n{tb['title']}")
            print("  ".join(tb["columns"]))
            for row in tb["rows"]:
                print("  ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row))
        if r["verdict"] not in (V.HOLDS, V.REPRODUCED) and r.get("reason"):
            print(f"{r['id']}: {r['verdict']}: {r['reason']}")
    doc = document(results, provenance(argv, None))
    if args.json:
        print(f"results: {write_json(doc, args.json)}")
    if not args.no_report:
        from fedcheck.render import write_reports
        with outputs:
            for path in write_reports(doc, outputs=outputs):
                if path.suffix in (".json", ".html"):
                    print(f"report: {path}")
    return exit_code(results)
