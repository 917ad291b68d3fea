"""``fedcheck pep``: certified worst cases by performance estimation (the PEP models of the FedFW paper,
:mod:`theorems.fedfw.pep`)."""
from __future__ import annotations

import sys
from pathlib import Path

from fedcheck.core import verdict as V
from theorems.fedfw import pep as P


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


def cmd_pep(args, argv) -> int:
    from fedcheck.cli.errors import EXIT_BAD_INPUT, BadInput, exit_code
    from fedcheck.cli.tables import summary_table
    from fedcheck.core.results import document, provenance, write_json
    ok, why = P.available()
    if not ok:
        print(f"fedcheck: error: {why}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not (1 <= args.horizon <= 30):
        raise BadInput("--horizon must be between 1 and 30")
    if args.clients < 1 or args.L <= 0 or args.D <= 0 or args.zeta < 0:
        raise BadInput("need --clients >= 1, --L > 0, --D > 0, --zeta >= 0")
    s = P.PepSettings(horizon=args.horizon, clients=args.clients, L=args.L, D=args.D, zeta=args.zeta,
                    solver=args.solver.upper(), use_cache=not args.no_cache)
    log = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    results = P.run_pep(s, log)
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
        for path in write_reports(doc, Path(args.out)):
            print(f"report: {path}")
    return exit_code(results)
