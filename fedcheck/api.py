"""fedcheck from Python and Jupyter.

    >>> import fedcheck
    >>> res = fedcheck.verify("theorem1", seeds=4, rounds=2000)      # ids, aliases, papers, Claims, files
    >>> res                                                            # one line per check
    >>> res["theorem1"].verdict, res.verdicts
    >>> df = res.to_frame()          # tidy: one row per (check, reading, bound, instance, round) observation
    >>> res.report("reports/")      # HTML + PDF, as ``fedcheck verify`` writes them
    >>> res.to_json("theorem1.json")

:func:`verify` is :func:`prepare` (resolve the names, parse and check every input: a :class:`Plan`, nothing run)
then :func:`run` (run the plan: :class:`Results`, with hooks for progress and for where saved instances go).  The
command line and the pytest plugin are front ends on these two and on :func:`parse_seeds`, :func:`parse_params`,
:func:`check_outputs` and :func:`theorem_file_of`: they parse their arguments and print, nothing else.

In a notebook a result renders as its verdict card with its main figure.  Bad input raises
:class:`fedcheck.BadInput` with the one-line message the command line prints (and exits 2 with).

The tidy table (:func:`to_frame`; ``fedcheck verify --table FILE.csv|.parquet`` writes the same) is
:mod:`fedcheck.table`'s: one row per observation, everything a verdict is recomputed from (``docs/TABLE.md``).
"""
from __future__ import annotations

import dataclasses
import html as _html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedcheck.core.claim import Result as _CoreResult
from fedcheck.core.errors import BadInput

__all__ = ["verify", "prepare", "run", "Plan", "check_outputs", "parse_seeds", "parse_params", "load_instances",
           "theorem_file_of", "Results", "Result", "resolve", "to_frame", "write_table", "check_table_path", "table_metadata",
           "keep_run", "attach_reruns", "expectation_errors", "expectation_differences", "expectation_report", "TABLE_COLUMNS", "TABLE_DOC",
           "TABLE_SUFFIXES"]

_FIGURES_INLINE = 6       # checks of a Results whose main figure is drawn inline


# ------------------------------------------------------------------------------------------------
# what to run
def _is_file(x) -> bool:
    return isinstance(x, os.PathLike) or (isinstance(x, str) and x.endswith(".py"))


def _flatten(items) -> list:
    out = []
    for x in items:
        if isinstance(x, (list, tuple, set)) and not isinstance(x, str):
            out.extend(_flatten(x))
        else:
            out.append(x)
    return out


def resolve(*names, theorem_file=None, ids_only: bool = False) -> tuple[list, list[str]]:
    """The claims named by ids, aliases, paper names, :class:`~fedcheck.Claim` objects and users' files
    (``.py`` paths: all the claims they declare), and the theorem files involved.

    Only the paper modules of the catalog that the names need are imported.  ``ids_only``: every string is an id,
    alias or paper name (as on the command line, where theorem files come through ``--theorem-file`` only)."""
    from fedcheck.core.claim import Claim
    names = _flatten(names)
    if theorem_file is None:
        tf = []
    elif isinstance(theorem_file, (str, os.PathLike)):
        tf = [theorem_file]
    elif isinstance(theorem_file, (list, tuple)):
        tf = _flatten(theorem_file)
    else:
        tf = [theorem_file]
    bad = [f for f in tf if not isinstance(f, (str, os.PathLike))]
    if bad:
        raise BadInput(f"theorem_file={bad[0]!r}: expected the path of a Python file (or a list of them)")

    def is_file(x) -> bool:
        return not ids_only and _is_file(x)
    files = [str(f) for f in tf]
    files += [str(x) for x in names if is_file(x) and str(x) not in files]
    wanted = [x for x in names if isinstance(x, str) and not is_file(x)]
    reg = None
    if files or wanted:         # Claim objects alone need no registry
        from fedcheck.catalog.registry import load_registry
        reg = load_registry(files, wanted)
    from_file = {f: [cid for cid, origin in reg.origin.items() if origin == f] for f in files}
    claims: list = []

    def add(cs):
        for c in cs:
            if c not in claims:
                claims.append(c)
    for x in names:
        if isinstance(x, Claim):
            add([x])
        elif is_file(x):
            add(reg.checks[i] for i in from_file[str(x)])
        elif isinstance(x, str):
            add(reg.resolve([x]))
        else:
            raise BadInput(f"{x!r}: expected a check id, alias or paper name, a fedcheck Claim or a .py theorem file")
    if not names:
        for f in files:
            add(reg.checks[i] for i in from_file[f])
    if not claims:
        raise BadInput("nothing to verify: name a check id, alias, paper, Claim or theorem file")
    return claims, files


def theorem_file_of(claim, theorem_files=()) -> str | None:
    """The one of ``theorem_files`` that declares ``claim``, as an absolute path (what a reproducing command passes
    as ``--theorem-file``); ``None`` when none does (or they no longer load).  A claim of a module the user imported
    is found by :func:`fedcheck.testing.claim_file`."""
    files = [str(f) for f in theorem_files or ()]
    if not files:
        return None
    from fedcheck.catalog.registry import load_registry
    try:
        origin = load_registry(files).origin.get(claim.id)
    except Exception:      # noqa: BLE001 - a file that no longer loads: the caller looks elsewhere
        return None
    return os.path.abspath(origin) if origin in files else None


_SEEDS_EXPECTED = "expected a count (8), a list (3,5,9) or a range (10-19) of non-negative integers"


def parse_seeds(seeds) -> list[int] | None:
    """Seeds as :func:`verify` and the command line take them: ``None`` (each claim's own), a count (``8``: seeds
    0..7), a string as ``--seeds`` takes it (``"3,5,9"``, ``"10-19"``, ``"0-3,7"``) or a list of non-negative
    integers; repeated seeds are dropped, the order is kept.  Anything else raises :class:`BadInput` with the
    ``--seeds`` message."""
    from fedcheck.catalog.inputs import parse_seeds as parse_text
    import numpy as np
    if seeds is None:
        return None
    if isinstance(seeds, bool):
        raise BadInput(f"--seeds {seeds!r}: {_SEEDS_EXPECTED}")
    if isinstance(seeds, (int, np.integer)):
        return parse_text(str(int(seeds)))
    if isinstance(seeds, str):
        return parse_text(seeds)
    try:
        lst = list(seeds)
    except TypeError:
        lst = None
    if not lst or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0 for s in lst):
        raise BadInput(f"--seeds {seeds!r}: {_SEEDS_EXPECTED}")
    return list(dict.fromkeys(int(s) for s in lst))


def parse_params(params) -> dict:
    """Parameters of the bounds as ``{name: float}``, from ``None``, a dict ``{name: number}`` or ``NAME=VALUE``
    strings (one, or a list, as ``--param`` takes them).  Anything else raises :class:`BadInput` (one line)."""
    from fedcheck.catalog.inputs import parse_params as parse_items
    import numbers
    if params is None:
        return {}
    if isinstance(params, str):
        params = [params]
    if isinstance(params, dict):
        for k, v in params.items():
            if not isinstance(k, str) or not k:
                raise BadInput(f"params: {k!r} is not a parameter name (a string)")
            if isinstance(v, bool) or not isinstance(v, (numbers.Real, str)):
                raise BadInput(f"params: {k}={v!r} is not a number")
        return parse_items([f"{k}={v if isinstance(v, str) else repr(float(v))}" for k, v in params.items()])
    if not isinstance(params, (list, tuple)) or not all(isinstance(x, str) for x in params):
        raise BadInput(f"params={params!r:.80}: expected a dict {{name: number}} or NAME=VALUE strings")
    return parse_items(list(params))


def load_instances(instances) -> list[tuple[str, Any]]:
    """``(source, problem)`` pairs from instance files (``.npz``, loaded; their path is the source) and problem
    objects in memory (kept; source ``<TypeName>`` unless they have a ``source``): one, a list, or ``None``.  A file
    that does not load, or anything else, raises :class:`BadInput` (one line)."""
    from fedcheck.problems.instances import InstanceError
    from fedcheck.problems.io import load_problem
    if instances is None:
        return []
    if isinstance(instances, (str, os.PathLike)) or not isinstance(instances, (list, tuple)):
        instances = [instances]
    out = []
    for x in instances:
        if isinstance(x, (str, os.PathLike)):
            try:
                out.append((str(x), load_problem(x)))
            except InstanceError as e:
                raise BadInput(str(e)) from None
        elif callable(getattr(x, "properties", None)) and callable(getattr(x, "describe", None)):
            out.append((getattr(x, "source", None) or f"<{type(x).__name__}>", x))     # a problem object in memory
        else:
            raise BadInput(f"instances: {x!r:.60} is neither an instance file (.npz) nor a problem object")
    return out


def _argv(claims, files, seeds, rounds, params, paths, full) -> list[str]:
    """The ``fedcheck`` command line equivalent to a call (for the provenance and reproduce hints)."""
    argv = ["verify", *[c.id for c in claims]]
    for f in files:
        argv += ["--theorem-file", f]
    if seeds is not None:
        argv += ["--seeds", ",".join(map(str, seeds))]
    if rounds is not None:
        argv += ["--rounds", str(rounds)]
    for k, v in params.items():
        argv += ["--param", f"{k}={v:g}"]
    for p in paths:
        argv += ["--instance", p]
    if full:
        argv.append("--full")
    return argv


@dataclasses.dataclass(frozen=True)
class Plan:
    """A verify request resolved and checked by :func:`prepare` (nothing has run yet): the claims, the theorem files
    they come from, and the run's seeds, rounds, parameters, instances (``(source, problem)`` pairs), mode, number
    of processes (``None``: chosen by the run's expected length) and Dask scheduler.  :func:`run` runs it."""

    claims: list
    theorem_files: list
    seeds: list | None = None
    rounds: int | None = None
    params: dict = dataclasses.field(default_factory=dict)
    instances: list = dataclasses.field(default_factory=list)
    full: bool = False
    jobs: int | None = 1
    scheduler: str | None = None

    @property
    def instance_paths(self) -> list[str]:
        """The instance files of the run (problem objects given in memory have no path)."""
        return [p for p, _ in self.instances if not p.startswith("<")]

    def config(self, *, progress: bool = False, use_cache: bool = True, save_dir=None):
        """The :class:`fedcheck.RunConfig` every claim of the plan runs with."""
        from fedcheck.core.claim import RunConfig
        return RunConfig(seeds=self.seeds, rounds=self.rounds, instances=[i for _, i in self.instances] or None,
                         params=self.params, full=self.full, progress=progress, use_cache=use_cache,
                         save_dir=str(save_dir) if save_dir is not None else None)

    def run_options(self) -> dict:
        """The options that decide the verdicts, as recorded in the provenance
        (:func:`fedcheck.core.results.run_options`)."""
        from fedcheck.core.results import run_options
        return run_options(theorem_files=self.theorem_files, seeds=self.seeds, rounds=self.rounds,
                           params=self.params, instances=self.instance_paths, full=self.full)

    def argv(self) -> list[str]:
        """The ``fedcheck`` command line equivalent to the plan."""
        return _argv(self.claims, self.theorem_files, self.seeds, self.rounds, self.params, self.instance_paths,
                     self.full)

    def provenance(self, argv: list[str] | None = None) -> dict:
        """The provenance of the plan's results; ``argv``: the command line to record (default: :meth:`argv`)."""
        from fedcheck.core.results import provenance
        return provenance(self.argv() if argv is None else argv, self.seeds, self.run_options())

    def notes(self) -> list[str]:
        """One line per claim whose statement an option narrows (``--rounds`` on a claim over horizons), to show
        before the run (:func:`fedcheck.catalog.inputs.option_notes`)."""
        from fedcheck.catalog.inputs import option_notes
        return option_notes(self.claims, self.rounds, self.full)


def prepare(*claims, seeds=None, rounds: int | None = None, params=None, instances=None, full: bool = False,
            jobs: int | None = 1, theorem_file=None, scheduler: str | None = None, expect: bool = False,
            ids_only: bool = False) -> Plan:
    """Resolve and check a verify request without running anything: the :class:`Plan` that :func:`run` runs.

    The arguments are those of :func:`verify` (the command line's options, parsed or not); ``expect``: every claim
    must declare its expected verdict (``--expect``); ``ids_only``: see :func:`resolve`.  Every refusal raises
    :class:`BadInput` with the command line's one-line message, in the command line's order: names, seeds, rounds,
    instances, parameters (their names and ranges, instances against each claim's domain, rounds against the
    memory), jobs, scheduler, expected verdicts."""
    from fedcheck.catalog.inputs import validate_inputs
    if not isinstance(full, bool):
        raise BadInput(f"full={full!r}: expected True or False")
    if jobs is None or (isinstance(jobs, int) and not isinstance(jobs, bool)):
        from fedcheck.catalog.parallel import prestart          # speed only: the local workers' imports start
        prestart([x for x in _flatten(claims) if isinstance(x, str)], jobs, scheduler, full)    # beside ours
    claim_list, files = resolve(*claims, theorem_file=theorem_file, ids_only=ids_only)
    seed_list = parse_seeds(seeds)
    import numpy as np
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1):
        raise BadInput("--rounds must be >= 1")
    rounds = None if rounds is None else int(rounds)
    loaded = load_instances(instances)
    pars = parse_params(params)
    validate_inputs(claim_list, pars, loaded, rounds, seed_list)
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0):
        raise BadInput("--jobs must be >= 0")
    if scheduler is not None:
        from fedcheck.catalog.parallel import check_scheduler
        if not isinstance(scheduler, str):
            raise BadInput(f"scheduler={scheduler!r:.60}: expected a Dask scheduler address or scheduler file")
        check_scheduler(scheduler)
    if expect:
        missing = expectation_errors(claim_list)
        if missing:
            raise BadInput(missing)
    return Plan(claims=claim_list, theorem_files=files, seeds=seed_list, rounds=rounds, params=pars,
                instances=loaded, full=full, jobs=jobs, scheduler=scheduler)


def check_outputs(plan: Plan, *, out=None, json=None, table=None):
    """Check, before anything runs, every place ``fedcheck verify`` writes: the reports under the folder ``out``
    (each file declared and checked; returned as an :class:`fedcheck.core.outputs.Outputs`, ``None`` without
    ``out``), the results file ``json`` and the tidy table ``table``.  One that cannot be written raises
    :class:`BadInput` (one line)."""
    from fedcheck.core.results import check_writable
    outputs = None
    if out is not None:
        from fedcheck.core.outputs import Outputs
        from fedcheck.render import plan_reports
        outputs = plan_reports(Outputs(out, "verify"), [c.id for c in plan.claims])
        for c in plan.claims:
            outputs.replaces(outputs.instances_dir(c.id), "dir")
        for path, what in ((json, "--json"), (table, "--table")):
            if path:            # inside --out: one of the folder's files (recorded, never a file of the user's)
                outputs.own_path(path, what)
        outputs.adds_to("runs").check()
    if json:
        check_writable(json, "--json", directory=False)
    if table:
        check_table_path(table)
    return outputs


def run(plan: Plan, *, progress: bool = False, use_cache: bool = True, save_dir=None, on_done=None,
        audit: bool = False, place_instances=None, argv: list[str] | None = None) -> "Results":
    """Run a :class:`Plan` and return its :class:`Results` (in the order of its claims), each with the commands
    rerunning its saved refuting instances (:func:`attach_reruns`).

    ``save_dir``: where refuting instances are saved; ``on_done(claim)``: called as each claim finishes (a
    progress display); ``audit``: also check the declared proof steps (``--with-audit``,
    :func:`fedcheck.tools.audit.attach_audit`); ``place_instances(dicts)``: called with the result dicts before the
    rerun commands are made (the command line moves the saved instances to their final folder there and points the
    results at them); ``argv``: the command line the provenance records (default: :meth:`Plan.argv`)."""
    from fedcheck.catalog.parallel import auto_jobs, default_jobs, run_checks
    config = plan.config(progress=progress, use_cache=use_cache, save_dir=save_dir)
    jobs = auto_jobs(plan.claims, config) if plan.jobs is None else (plan.jobs or default_jobs())
    done = run_checks(plan.claims, config, jobs, plan.theorem_files, on_done=on_done, scheduler=plan.scheduler)
    dicts = [r.to_dict() for r in done]
    if audit:
        from fedcheck.tools.audit import attach_audit
        for claim, d in zip(plan.claims, dicts):
            attach_audit(d, claim)
    if place_instances is not None:
        place_instances(dicts)
    attach_reruns(dicts, plan.claims, plan.run_options())
    return Results([Result.from_dict(d) for d in dicts], plan.provenance(argv), plan.claims)


def verify(*claims, seeds=None, rounds: int | None = None, params=None, instances=None, full: bool = False,
           jobs: int | None = 1, theorem_file=None, progress: bool = False, use_cache: bool = True,
           save_dir: str | os.PathLike | None = None, scheduler: str | None = None, audit: bool = False) -> "Results":
    """Run claims and return their :class:`Results` (the Python face of ``fedcheck verify``).

    ``claims``: ids (``"fedfw.theorem1"``), aliases (``"theorem1"``), paper names (``"fedfw"``), Claim
    objects, or paths of your own theorem files (``"my_claims.py"``: all their claims); ``theorem_file``:
    files whose claims the names may refer to (all of them when no name is given).  ``seeds``: a count,
    a list or a string as on the command line (``"0-3,7"``); ``rounds``: T; ``params``: ``{"lambda_0": 0.5}``
    (or ``["lambda_0=0.5"]``); ``instances``: problem files (``.npz``) or problem objects to run on instead
    of the random family; ``full``: the long sweeps; ``jobs``: processes (0: one per CPU; ``None``: one per CPU
    when the run is long enough to gain from it; results identical to 1); ``scheduler``: a Dask cluster to run on;
    ``save_dir``: where refuting instances are saved (default: nowhere); ``audit``: also check the declared proof
    steps.

    Everything is checked before anything runs (:func:`prepare`, then :func:`run`): bad input raises
    :class:`fedcheck.BadInput` with the command line's one-line message."""
    from fedcheck.core.results import check_writable
    for name, flag in (("full", full), ("progress", progress), ("use_cache", use_cache), ("audit", audit)):
        if not isinstance(flag, bool):
            raise BadInput(f"{name}={flag!r}: expected True or False")
    if save_dir is not None:
        if isinstance(save_dir, bool) or not isinstance(save_dir, (str, os.PathLike)):
            raise BadInput(f"save_dir={save_dir!r}: expected a folder path")
        check_writable(save_dir, "save_dir", directory=True)
    plan = prepare(*claims, seeds=seeds, rounds=rounds, params=params, instances=instances, full=full, jobs=jobs,
                   theorem_file=theorem_file, scheduler=scheduler)
    return run(plan, progress=progress, use_cache=use_cache, save_dir=save_dir, audit=audit)


def attach_reruns(results: list[dict], claims, run: dict) -> None:
    """Give each result dict the command rerunning each of its saved refuting instances (``"rerun"``: a list of
    ``{"instance", "command"}``) -- only for the instances the claim runs on (its domain included).  The terminal and
    the report print these commands as they are: runnable as printed (:func:`fedcheck.core.results.verify_command`)."""
    from fedcheck.core.errors import BadInput
    from fedcheck.core.results import verify_command
    from fedcheck.experiments import takes_instance
    from fedcheck.problems.instances import InstanceError
    from fedcheck.problems.io import load_problem
    by_id = {c.id: c for c in claims}
    for r in results:
        claim = by_id.get(r.get("id"))
        out = []
        for path in r.get("saved_instances") or []:
            if claim is None or not str(path).endswith(".npz"):
                continue
            try:
                if takes_instance(claim, load_problem(path)):
                    continue
            except (InstanceError, OSError, BadInput):
                continue
            out.append({"instance": str(path),
                        "command": verify_command(claim.id, run, instance=str(path), check_params=r.get("params"))})
        if out:
            r["rerun"] = out


def expectation_errors(claims) -> str | None:
    """Why claims cannot be checked against their expected verdicts (``--expect``): the ones that declare none."""
    missing = [c.id for c in claims if getattr(c, "expected", None) is None]
    if not missing:
        return None
    return (f"--expect: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} declare(s) no expected verdict "
            "(Claim(..., expected=\"holds\"))")


def expectation_differences(results) -> list[str]:
    """One line per result whose verdict is not the one its claim declares (``expected``)."""
    out = []
    for r in results:
        d = r.to_dict() if hasattr(r, "to_dict") else r
        if d.get("verdict") != d.get("expected"):
            head = d.get("headline") if d.get("headline") not in (None, "", d.get("verdict")) else ""
            out.append(f"{d.get('id')}: {d.get('verdict')}, expected {d.get('expected')}"
                       + (f" ({head})" if head else ""))
    return out


def expectation_report(results) -> tuple[bool, str]:
    """``(any difference, the lines verify --expect prints)``."""
    diff = expectation_differences(results)
    n = len(results)
    if not diff:
        return False, f"expect: all {n} verdict{'s' if n != 1 else ''} as declared"
    return True, "\n".join([f"expect: {len(diff)} of {n} verdicts differ from the declared ones:",
                            *(f"  {line}" for line in diff)])


def _path_arg(what: str, path) -> None:
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise BadInput(f"{what}({path!r:.60}): expected a file path")


# ------------------------------------------------------------------------------------------------
# results
def _short(x) -> str:
    v = finite_float(x)
    return "-" if v is None else f"{v:.3g}"


class Result(_CoreResult):
    """One check's result (a :class:`fedcheck.Result` built from its result dict) with a short ``repr``,
    a notebook card (``_repr_html_``), ``to_frame()``, ``report(dir)`` and ``to_json(path)``."""

    @classmethod
    def from_dict(cls, d: dict) -> "Result":
        obj = cls.__new__(cls)
        for f in dataclasses.fields(_CoreResult):
            if f.name in d:
                v = d[f.name]
            elif f.default is not dataclasses.MISSING:
                v = f.default
            else:
                v = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
            object.__setattr__(obj, f.name, v)
        object.__setattr__(obj, "_doc", d)
        return obj

    def to_dict(self) -> dict:
        return self._doc

    @property
    def headline_or_verdict(self) -> str:
        return self.headline or self.verdict

    def __repr__(self) -> str:
        head = self.headline_or_verdict
        n = len(self.instances or [])
        more = f", {n} instance{'s' if n != 1 else ''}" if n else ""
        nr = len(self.readings or {})
        more += f", {nr} finding{'s' if nr != 1 else ''}" if nr else ""
        line = f"<Result {self.id}: {head}; max measured/bound {_short(self.max_ratio)}{more}>"
        return line if len(line) <= 200 else line[:196] + "...>"

    def _repr_html_(self) -> str:
        return _card(self._doc, figure=True)

    def to_frame(self):
        return to_frame([self._doc])

    def report(self, out) -> list[Path]:
        return Results([self]).report(out)

    def to_json(self, path) -> Path:
        return Results([self]).to_json(path)


class Results(Sequence):
    """The results of one :func:`verify` call: a sequence of :class:`Result` (index by position, id or
    alias), ``verdicts``, ``to_frame()``, ``report(dir)``, ``to_json(path)`` and ``to_table(path)``."""

    def __init__(self, results, provenance: dict | None = None, claims=None):
        from fedcheck.core.schema import CHECK_SCHEMA, schema_errors
        if isinstance(results, (str, bytes, dict)) or not hasattr(results, "__iter__"):
            raise BadInput(f"Results({results!r:.60}): expected a list of results (or Results.read(path))")
        if provenance is not None and not isinstance(provenance, dict):
            raise BadInput(f"Results(provenance={provenance!r:.60}): expected a dict")
        out = []
        for k, r in enumerate(results):
            if isinstance(r, Result):
                out.append(r)
            elif isinstance(r, dict):
                why = schema_errors(r, CHECK_SCHEMA)
                if why:
                    raise BadInput(f"Results: result {k} is not a fedcheck result ({why})")
                out.append(Result.from_dict(r))
            elif callable(getattr(r, "to_dict", None)):
                out.append(Result.from_dict(r.to_dict()))
            else:
                raise BadInput(f"Results: result {k} is a {type(r).__name__}, not a fedcheck result (a dict)")
        self._results = out
        self.provenance = provenance or {}
        self._aliases = {a: c.id for c in (claims or []) for a in getattr(c, "aliases", ())}

    @classmethod
    def read(cls, path) -> "Results":
        """Results read back from a results JSON (``fedcheck verify --json`` or :meth:`to_json`)."""
        from fedcheck.core.results import read_results
        doc = read_results(path)        # BadInput (one line) for anything but a valid results document
        return cls(doc["checks"], doc.get("provenance"))

    # -- the sequence ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._results)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return Results(self._results[key], self.provenance)
        if isinstance(key, str):
            want = self._aliases.get(key, key)
            for r in self._results:
                if r.id == want:
                    return r
            hits = [r for r in self._results if r.id.split(".", 1)[-1] == key]
            if len(hits) == 1:
                return hits[0]
            raise KeyError(f"no result for {key!r} (results: {', '.join(r.id for r in self._results)})")
        return self._results[key]

    def __iter__(self):
        return iter(self._results)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self._results]

    @property
    def verdicts(self) -> dict[str, str]:
        return {r.id: r.verdict for r in self._results}

    @property
    def exit_code(self) -> int:
        """The command line's exit code for these results (0 as the paper says, 1 refuted, 3 inconclusive)."""
        from fedcheck.core.errors import exit_code
        return exit_code(self.dicts)

    @property
    def unexpected(self) -> list[str]:
        """One line per check whose verdict differs from the one its claim declares (``expected``): what ``fedcheck
        verify --expect`` lists (empty: every verdict as declared)."""
        return expectation_differences(self._results)

    @property
    def dicts(self) -> list[dict]:
        return [r.to_dict() for r in self._results]

    def document(self) -> dict:
        from fedcheck.core.results import document, provenance
        return document(self.dicts, self.provenance or provenance(None, None))

    # -- output ------------------------------------------------------------------------------------
    def to_frame(self):
        return to_frame(self.dicts, self.provenance)

    def to_table(self, path) -> Path:
        """Write :meth:`to_frame` as ``.csv`` or ``.parquet`` (atomically; the Parquet file documents its columns)."""
        _path_arg("to_table", path)
        check_table_path(path)
        return write_table(self.to_frame(), path, self.provenance)

    def to_json(self, path) -> Path:
        from fedcheck.core.results import check_writable, write_json
        _path_arg("to_json", path)
        check_writable(path, "--json", directory=False)
        return write_json(self.document(), path)

    def report(self, out="reports") -> list[Path]:
        """Write the HTML and PDF reports (and ``results.json``) under ``out``, as ``fedcheck verify`` does (never over
        a file fedcheck did not write there: :class:`BadInput`)."""
        from fedcheck.render import write_reports
        if not isinstance(out, (str, os.PathLike)):
            raise BadInput(f"report(out={out!r}): expected a folder path")
        return write_reports(self.document(), Path(out))

    # -- display -----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        counts: dict = {}
        for r in self._results:
            counts[r.verdict] = counts.get(r.verdict, 0) + 1
        head = f"Results ({len(self)} check{'s' if len(self) != 1 else ''}: " + \
               ", ".join(f"{n} {v}" for v, n in counts.items()) + ")"
        w = max((len(r.id) for r in self._results), default=0)
        # a long headline (a vacuity note, a plausible reading) is cut so that the ratio column stays in view
        shown = [h if len(h) <= 72 else h[:69] + "..." for h in (r.headline_or_verdict for r in self._results)]
        wv = max((len(h) for h in shown), default=0)
        lines = [head]
        for r, h in zip(self._results, shown):
            line = f"  {r.id.ljust(w)}  {h.ljust(wv)}  max measured/bound {_short(r.max_ratio)}"
            lines.append(line if len(line) <= 200 else line[:197] + "...")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        counts: dict = {}
        for r in self._results:
            counts[r.verdict] = counts.get(r.verdict, 0) + 1
        head = (f"<p><b>fedcheck</b>: {len(self)} check{'s' if len(self) != 1 else ''} &mdash; " +
                ", ".join(f"{n} {_html.escape(v)}" for v, n in counts.items()) + "</p>")
        cards = [_card(r.to_dict(), figure=i < _FIGURES_INLINE) for i, r in enumerate(self._results)]
        return head + "".join(cards)


# ------------------------------------------------------------------------------------------------
# the notebook card
def _card(chk: dict, figure: bool = True) -> str:
    """The notebook card of a result dict (:func:`fedcheck.report.card_html`: verdict, headline, readings with paper
    or analysis, rate, feasibility, main figure)."""
    from fedcheck import report
    return report.card_html(chk, figure=figure)


# ------------------------------------------------------------------------------------------------
# the tidy table: fedcheck.table (docs/TABLE.md documents every column)
from fedcheck.table import (TABLE_COLUMNS, TABLE_DOC, TABLE_SUFFIXES, check_table_path, finite_float,  # noqa: E402
                            table_metadata, to_frame, write_table)


def keep_run(doc: dict, runs_dir=None, written: "Path | None" = None, outputs=None) -> Path:
    """Keep a copy of a run's results as ``runs_dir/<UTC timestamp>-<ids>.json`` (atomically; an earlier
    run's copy is never overwritten), or, with ``outputs`` (:class:`fedcheck.core.outputs.Outputs`), as a new file
    in its ``runs/`` folder.  ``written``: a file that already holds ``doc`` as written by
    :func:`fedcheck.core.results.write_json` (the report's ``results.json``): its bytes are copied instead of
    serializing the document again (0.14 s for Theorem 1's 4 MB).  A copy, not a hard link: an editor that
    saves in place would change both."""
    import re
    from datetime import datetime, timezone
    from fedcheck.core.results import atomic_write, write_json
    ids = [c.get("id", "check") for c in doc.get("checks", [])]
    tag = "+".join(ids[:3]) + (f"+{len(ids) - 3}-more" if len(ids) > 3 else "")
    tag = re.sub(r"[^A-Za-z0-9._+-]+", "_", tag)[:100] or "run"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    runs_dir = Path(outputs.root / "runs") if outputs is not None else Path(runs_dir)
    path = runs_dir / f"{stamp}-{tag}.json"
    n = 1
    while path.exists() or path.is_symlink():
        n += 1
        path = runs_dir / f"{stamp}-{tag}-{n}.json"
    if outputs is not None:
        src = outputs.stage() / "runs" / path.name
        if written is not None:
            data = Path(written).read_bytes()
            atomic_write(src, lambda fh: fh.write(data))
        else:
            write_json(doc, src)
        return outputs.publish({f"runs/{path.name}": src}, new=True)[0]
    if written is not None:
        data = Path(written).read_bytes()
        return atomic_write(path, lambda fh: fh.write(data))
    return write_json(doc, path)
