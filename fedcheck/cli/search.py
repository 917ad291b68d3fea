"""``fedcheck search``: adversarial search for the instance with the largest measured/bound
(:func:`fedcheck.tools.search.search`)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from fedcheck.problems.instances import RandomFamily
from fedcheck.problems.sets import SET_NAMES
from fedcheck.tools.search import (METHODS, SCHEMA, SearchSpace, check_budget, families_of, format_value,
                                   instance_searchable, rerun_command, search, search_document, search_result,
                                   search_seeds, searchable)


def add_arguments(ap) -> None:
    ap.add_argument("id", metavar="ID", help="a BoundCheck id or alias (fedfw.theorem1, theorem1)")
    ap.add_argument("--budget", type=int, default=200, help="claim evaluations of the search (default 200), the "
                    "same for every method; the random-draw baseline evaluates as many")
    ap.add_argument("--method", default="cma", choices=list(METHODS),
                    help="cma: random draws, then CMA-ES (the cma package) from the best (default); perturb: random "
                         "draws, then (1+lambda) perturbations; random: random draws from the domain only")
    ap.add_argument("--restarts", type=int, default=None,
                    help="local searches started from the best random draws (default: 3 for cma, 4 for perturb)")
    ap.add_argument("--seed", type=int, default=0, help="root seed (numpy SeedSequence); same seed, same result")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds per evaluation during the search (default: min(the check's, 1000))")
    ap.add_argument("--verify-rounds", type=int, default=None,
                    help="rounds of the final re-verification (default: the check's)")
    ap.add_argument("--sets", default=None, help="comma-separated sets to search (default: l1,l2,box,simplex)")
    ap.add_argument("--param-range", action="append", default=[], metavar="NAME=LO:HI",
                    help="search parameter NAME log-uniformly in [LO, HI] (default: each positive parameter "
                         "over a factor 10 each way)")
    ap.add_argument("--fixed-params", action="store_true", help="keep the check's parameters fixed")
    ap.add_argument("--no-shrink", action="store_true", help="do not shrink a violating instance")
    ap.add_argument("--shrink-budget", type=int, default=60, help="evaluations spent shrinking (default 60)")
    ap.add_argument("--out", default="reports", metavar="DIR",
                    help="where the worst instance, search.json and the report go (default: reports/)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the results document here")
    ap.add_argument("--theorem-file", action="append", default=[], help="a Python file declaring your own checks")
    ap.add_argument("--no-report", action="store_true", help="write results.json but no HTML/PDF report")
    ap.add_argument("--no-cache", action="store_true", help="solve the final instances again")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    ap.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                    help="Dask workers on this machine for the batches of candidates (default: one per CPU when "
                         "the budget is at least 100, else 1; -j 1: serially in this process)")
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="run the batches on a running Dask cluster (tcp://host:8786 or a scheduler file)")


def _parse_ranges(items) -> dict:
    from fedcheck.cli.errors import BadInput
    out = {}
    for it in items:
        try:
            name, rng = it.split("=", 1)
            lo, hi = (float(v) for v in rng.split(":", 1))
        except ValueError:
            raise BadInput(f"--param-range {it!r}: expected NAME=LO:HI") from None
        if not (0 < lo <= hi) or not (np.isfinite(lo) and np.isfinite(hi)):
            raise BadInput(f"--param-range {it!r}: need 0 < LO <= HI")
        out[name.strip()] = (lo, hi)
    return out


def cmd_search(args, argv) -> int:
    from fedcheck.cli.errors import BadInput
    from fedcheck.catalog.registry import load_registry as _registry
    from fedcheck.catalog.registry import UnknownCheck
    from fedcheck.core.outputs import Outputs
    from fedcheck.core.results import check_writable
    from fedcheck.render import plan_reports

    reg = _registry(args.theorem_file)
    try:
        checks = reg.resolve([args.id])
    except UnknownCheck as e:
        raise BadInput(str(e)) from None
    if len(checks) != 1:
        raise BadInput(f"{args.id!r} names {len(checks)} checks ({', '.join(c.id for c in checks)}); "
                       "search one check at a time")
    check = checks[0]
    why = searchable(check)
    if why:
        raise BadInput(why)
    for name, val in (("--budget", args.budget), ("--restarts", args.restarts), ("--rounds", args.rounds),
                      ("--verify-rounds", args.verify_rounds), ("--shrink-budget", args.shrink_budget)):
        if val is not None and val < 1:
            raise BadInput(f"{name} must be >= 1")
    if args.budget < 2:
        raise BadInput("--budget must be >= 2")
    if args.jobs is not None and args.jobs < 1:
        raise BadInput("-j/--jobs must be >= 1")
    from fedcheck.catalog import parallel
    if args.scheduler is not None:
        parallel.check_scheduler(args.scheduler)
    # everything search writes, declared and checked before it computes: search.json, and the folder of this
    # check under search/checks/ (its report, worst instance, shrunk instance and trajectory)
    entry_id = f"{check.id}.search"
    outputs = Outputs(args.out, "search")
    plan_reports(outputs, [entry_id])
    outputs.check()
    if args.json:
        check_writable(args.json, "--json", directory=False)
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    with outputs:
        if not instance_searchable(check):  # its experiment builds its own cases: search its seeds and parameters
            check_budget(args.budget, args.rounds, baseline=False)
            return _search_seeds(args, check, outputs, entry_id, log)
        return _search_instances(args, argv, check, outputs, entry_id, log)


def _search_seeds(args, check, outputs, entry_id, log) -> int:
    from fedcheck.cli.errors import exit_code
    from fedcheck.core.claim import jsonable
    from fedcheck.core.results import write_json
    found = search_seeds(check, budget=args.budget, seed=args.seed, vary_params=not args.fixed_params,
                         use_cache=not args.no_cache, log=log, method=args.method)
    b = found["best"]
    doc = {"schema": SCHEMA, "check": check.id, "space": "seeds and parameters (the claim builds its own cases)",
           "settings": {"method": args.method, "budget": args.budget, "seed": args.seed},
           "best": {"ratio": b.ratio, "verdict": b.verdict,
           "reading": b.reading, "seeds": b.seeds, "params": b.params, "rerun": found["rerun"]},
           "baseline_best": found["baseline_best"], "trajectory": {"search": found["trajectory"]}}
    folder = outputs.check_dir(entry_id)
    staged = outputs.stage() / "found"
    write_json(jsonable(doc), staged / "trajectory.json")
    spath = outputs.publish({folder: staged})[0] / "trajectory.json"
    print(f"search {check.id}: its experiment builds its own cases; searched its seeds and parameters "
          f"({args.budget} evaluations)")
    print(f"  random seeds (baseline):  best max ratio {format_value(found['baseline_best'])}")
    print(f"  search ({args.method}):{' ' * max(1, 17 - len(args.method))}best max ratio {format_value(b.ratio)}  "
          f"[{b.short()}; reading {b.reading}]: "
          f"{b.verdict}")
    print(f"  rerun: {found['rerun']}")
    print(f"  trajectory: {spath}")
    return exit_code([{"verdict": b.verdict}])


def _search_instances(args, argv, check, outputs, entry_id, log) -> int:
    from fedcheck.cli.errors import BadInput, exit_code
    from fedcheck.core.results import document, provenance, write_json
    sets = None
    if args.sets:
        sets = tuple(s.strip() for s in args.sets.split(",") if s.strip())
        bad = [s for s in sets if s not in SET_NAMES]
        if bad or not sets:
            raise BadInput(f"--sets: unknown set(s) {bad}; expected some of {sorted(SET_NAMES)}")
    ranges = _parse_ranges(args.param_range)
    unknown = [k for k in ranges if k not in check.params]
    if unknown:
        raise BadInput(f"--param-range: {unknown} not parameters of {check.id} (its parameters: {sorted(check.params)})")
    if isinstance(families_of(check)[0], RandomFamily):
        space = SearchSpace.for_check(check, sets=sets, vary_params=not args.fixed_params, param_ranges=ranges)
    else:
        if sets:
            raise BadInput(f"--sets: {check.id} runs on its own problem class; its domain decides what varies")
        space = SearchSpace(params={} if args.fixed_params else {**{k: (float(v) / 10, float(v) * 10)
                                    for k, v in check.params.items() if isinstance(v, (int, float)) and v > 0}, **ranges})
    from fedcheck.core.claim import RunConfig
    exp = check.evidence.experiment
    normal = exp.rounds_for(RunConfig()) if hasattr(exp, "rounds_for") else None
    check_budget(args.budget, args.rounds or (min(int(normal), 1000) if normal else None))
    from fedcheck.catalog import parallel
    jobs = args.jobs if args.jobs is not None else (parallel.default_jobs() if args.budget >= 100 else 1)
    staged = outputs.stage() / "found"          # the check's own files, moved into search/checks/<check>/ at the end
    with parallel.session(jobs, args.scheduler):
        outcome = search(check, budget=args.budget, restarts=args.restarts, seed=args.seed, rounds=args.rounds,
                         space=space, verify_rounds=args.verify_rounds, do_shrink=not args.no_shrink,
                         shrink_budget=args.shrink_budget, out=staged, use_cache=not args.no_cache, log=log,
                         method=args.method, jobs=jobs, scheduler=args.scheduler,
                         theorem_files=args.theorem_file)
    folder = outputs.root / outputs.check_dir(entry_id)
    for key in ("worst_instance", "shrunk_instance"):       # the paths the files will have once published
        if outcome.files.get(key):
            outcome.files[key] = str(folder / Path(outcome.files[key]).relative_to(staged))
    staged.mkdir(parents=True, exist_ok=True)
    write_json(search_document(outcome, check), staged / "trajectory.json")
    entry = search_result(outcome, check)
    doc = document([entry], provenance(argv, None))
    b, bb = outcome.best, outcome.baseline_best
    if args.no_report:          # search.json and the check's own files, no pages
        staged_doc = write_json(doc, outputs.stage() / outputs.results_name)
        written = outputs.publish({outputs.results_name: staged_doc})
        outputs.publish({outputs.check_dir(entry_id): staged})
    else:
        from fedcheck.render import write_reports
        written = write_reports(doc, outputs=outputs,
                                extra={entry["id"]: {f.name: f for f in sorted(staged.iterdir())}})
    print(f"search {check.id}: {args.budget} instances searched, {len(outcome.baseline)} random draws of its family "
          f"(seed {args.seed}, {outcome.settings['search_rounds']} rounds each)")
    print(f"  random draws (baseline):  best max ratio {format_value(bb.ratio if bb else None)}")
    print(f"  adversarial search ({args.method}):{' ' * max(1, 5 - len(args.method))}best max ratio {format_value(b.ratio)}"
          + (f"  ({outcome.improvement:.3g}x the baseline)" if outcome.improvement else "")
          + f"  [{b.short()}; reading {b.reading}, round {format_value(b.argmax_round, '.0f')}]")
    print(f"  worst instance re-verified at {outcome.settings['verify_rounds']} rounds: {outcome.verified.verdict}, "
          f"max ratio {format_value(outcome.verified_ratio)}")
    print(f"  worst instance: {outcome.files['worst_instance']}")
    print(f"  rerun: {rerun_command(check.id, outcome.files['worst_instance'], b.params, check.params)}")
    if outcome.shrunk is not None:
        s = outcome.shrunk
        print(f"  shrunk violating instance: {outcome.files.get('shrunk_instance')} ({s.short()}, "
              f"{outcome.shrunk_verified.verdict if outcome.shrunk_verified else '-'} at full rounds)")
    print(f"  trajectory: {folder / 'trajectory.json'}")
    if args.json:
        print(f"results: {write_json(doc, args.json)}")
    print(f"results: {written[0]}")
    for path in written[1:]:
        if path.suffix == ".html":
            print(f"report: {path}")
    return exit_code([entry])
