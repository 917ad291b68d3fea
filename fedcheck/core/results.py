"""Results: what a run of a claim produced (:class:`Result`, asked for by a :class:`RunConfig`) and results
documents (JSON with provenance, written atomically)."""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from importlib import metadata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fedcheck import __version__

@dataclass
class RunConfig:
    """How a claim is run: seeds (a count or a list), rounds or horizon, given instances, parameters."""

    seeds: Sequence[int] | int | None = None
    rounds: int | None = None
    instances: Sequence[Any] | None = None
    params: dict = field(default_factory=dict)
    full: bool = False
    progress: bool = False
    use_cache: bool = True
    save_dir: str | None = None   # where refuting instances are written (None: not written)
    # a part of a run split by instances (the parallel runner's): the whole run's number of instances, which the
    # mean statistic's Bonferroni family counts (a part's judgements equal the whole run's)
    whole_instances: int | None = None

    def __post_init__(self):
        if isinstance(self.seeds, (int, np.integer)) and not isinstance(self.seeds, bool):
            self.seeds = list(range(int(self.seeds)))

    # The one place a measurement reads ``--seeds``, ``--rounds`` and ``--full`` (every experiment asks these three).
    def seed_list(self, default: int, full: int | None = None) -> list[int]:
        """The seeds to run: the user's (``--seeds``), else ``range(full)`` under ``--full`` (when ``full`` is
        given, non-zero), else ``range(default)``."""
        if self.seeds is not None:
            return list(self.seeds)
        return list(range(int(full if (self.full and full) else default)))

    def seed_count(self, default: int, full: int | None = None) -> int:
        """``len(seed_list(default, full))`` without making the list (a size checked before anything runs)."""
        if self.seeds is not None:
            return len(self.seeds)
        return int(full if (self.full and full) else default)

    def horizon(self, quick: int, full: int | None = None) -> int:
        """The number of rounds to run: ``--rounds R`` when given, else ``full`` under ``--full`` (when given),
        else ``quick``."""
        if self.rounds:
            return int(self.rounds)
        return int(full if (self.full and full) else quick)

    def size(self, quick, full=None):
        """A size that is neither rounds nor seeds -- replicate runs per seeded instance (as ``Rounds.replicates``),
        Monte Carlo draws, a grid of dimensions or values: ``full`` under ``--full`` (when given), else ``quick``;
        ``--rounds`` and ``--seeds`` do not change it (the measurement's comment says what it is)."""
        return full if (self.full and full) else quick

    def horizons(self, quick, full=None) -> list[int]:
        """Declared horizons in this mode (``full`` under ``--full`` when given, else ``quick``); under
        ``--rounds R`` those ``<= R``, or ``[R]`` when none is."""
        hs = [int(h) for h in (full if (self.full and full) else quick)]
        if self.rounds:
            hs = [h for h in hs if h <= int(self.rounds)] or [int(self.rounds)]
        return hs


@dataclass
class Result:
    """What a run of a claim produced (``to_dict`` is the JSON schema of ``docs/DESIGN.md``)."""

    id: str
    title: str
    paper: str
    reference: str
    claim: str
    kind: str
    verdict: str
    reason: str = ""
    headline: str = ""
    expected: str | None = None
    claimed_rate: float | None = None
    fitted_rate: float | None = None
    fitted_rate_ci: list | None = None
    rate_verdict: str | None = None
    max_ratio: float | None = None
    max_excess: float | None = None
    readings: dict = field(default_factory=dict)
    feasibility: dict = field(default_factory=dict)
    symbolic: list = field(default_factory=list)
    evidence: dict = field(default_factory=dict)
    formula: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    assumptions: list = field(default_factory=list)
    domain: dict = field(default_factory=dict)
    instances: list = field(default_factory=list)
    saved_instances: list = field(default_factory=list)
    series: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    observations: list = field(default_factory=list)   # what each bound test's verdict was decided from (tidy table)
    seconds: float = 0.0
    vacuity: dict = field(default_factory=dict)   # could the bound have failed (fedcheck.core.runner.claim_vacuity)

    def to_dict(self) -> dict:
        d = jsonable(self.__dict__)
        for k in ("series", "tables", "observations", "vacuity"):
            if not d[k]:
                del d[k]
        return d

    def __repr__(self) -> str:
        r = f" (max ratio {self.max_ratio:.3g})" if isinstance(self.max_ratio, float) and math.isfinite(self.max_ratio) else ""
        return f"<Result {self.id}: {self.verdict}{r}>"


# CheckResult is the name the report and older code use
CheckResult = Result


_PLAIN = frozenset({str, int, bool, type(None)})        # jsonable(v) is v


def jsonable(x):
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        types = set(map(type, x))       # a recorded curve: thousands of plain floats, no call per element
        if types <= _PLAIN or (types == {float} and all(map(math.isfinite, x))):
            return list(x)
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "biu" or (x.dtype.kind == "f" and np.isfinite(x).all()):
            return x.tolist()           # plain bools, ints, finite floats: what the element-wise conversion gives
        return jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else (None if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.bool_,)):
        return bool(x)
    return x


SCHEMA = "fedcheck.results/1"
_PACKAGES = ("numpy", "scipy", "cvxpy", "clarabel", "sympy", "matplotlib")


def provenance(argv: list[str] | None = None, seeds=None, run: dict | None = None) -> dict:
    """Where a results document comes from: versions, git commit, the command line, the time -- and ``run``, the
    options of a ``verify`` run that decide its verdicts (:func:`run_options`), from which each check's own command is
    built (:func:`verify_command`)."""
    versions = {}
    for p in _PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = None
    git = None
    try:
        here = Path(__file__).resolve().parent.parent
        git = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5).stdout.strip() or None
    except Exception:
        pass
    import uuid
    out = {
        "run_id": uuid.uuid4().hex,             # names this run in the tidy table (one per document)
        "fedcheck": __version__, "python": sys.version.split()[0], "platform": platform.platform(),
        "packages": versions, "git": git, "solver": "CLARABEL (via cvxpy)",
        "seeds": list(seeds) if seeds is not None else None,
        "command": "fedcheck " + " ".join(argv) if argv is not None else None,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if run is not None:
        out["run"] = run
    return out


def run_options(*, theorem_files=(), seeds=None, rounds=None, params=None, instances=(), full=False) -> dict:
    """The options of a ``verify`` run that decide its verdicts, as a provenance record (paths made absolute, so that
    a command built from them runs from any folder)."""
    return {"theorem_files": [os.path.abspath(str(f)) for f in theorem_files],
            "seeds": None if seeds is None else [int(s) for s in seeds],
            "rounds": None if rounds is None else int(rounds),
            "params": {str(k): float(v) for k, v in (params or {}).items()},
            "instances": [os.path.abspath(str(p)) for p in instances], "full": bool(full)}


def _seeds_arg(seeds: list[int]) -> str:
    """Seeds as ``--seeds`` takes them: a range ``a-b`` when consecutive, else a list."""
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def verify_command(check_id: str, run: dict | None = None, instance: str | None = None,
                   check_params: dict | None = None) -> str:
    """The ``fedcheck verify`` command that reruns one check as ``run`` (:func:`run_options`) ran it -- its theorem
    files, seeds, rounds, parameters (those of ``check_params``, the check's own, when given), instances and mode --
    or, with ``instance``, on that problem file instead of its seeds and instances.  Runnable as printed (quoted for a
    POSIX shell, paths absolute)."""
    import shlex
    run = run or {}
    parts = ["fedcheck", "verify", check_id]
    for f in run.get("theorem_files") or []:
        parts += ["--theorem-file", f]
    if instance is not None:
        parts += ["--instance", os.path.abspath(str(instance))]
    else:
        if run.get("seeds") is not None:
            parts += ["--seeds", _seeds_arg(list(run["seeds"]))]
        for p in run.get("instances") or []:
            parts += ["--instance", p]
    if run.get("rounds") is not None:
        parts += ["--rounds", str(run["rounds"])]
    for k, v in (run.get("params") or {}).items():
        if check_params is None or k in check_params:
            parts += ["--param", f"{k}={v!r}"]
    if run.get("full"):
        parts.append("--full")
    return " ".join(shlex.quote(str(p)) for p in parts)


def document(checks: list[dict], prov: dict) -> dict:
    return {"schema": SCHEMA, "provenance": prov, "checks": checks}


def atomic_write(path: str | os.PathLike, write) -> Path:
    """Write a file atomically: ``write(binary_handle)`` fills a temporary file in the same folder,
    which then replaces ``path``; on any failure (or Ctrl-C) nothing is left behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.chmod(tmp, 0o666 & ~_umask())     # the mode of an ordinary new file (mkstemp makes 0600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def shown_path(path) -> str:
    """A path as a message can print it: a name longer than 80 characters shortened in the middle, bytes that are
    not UTF-8 (``surrogateescape``) as ``\\xNN``."""
    s = os.fspath(path)
    s = s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if isinstance(s, str) else repr(s)
    return s if len(s) <= 80 else f"{s[:40]}...{s[-30:]}"


def check_writable(path: str | os.PathLike, what: str, directory: bool) -> None:
    """Refuse (``BadInput``, one line), before any computation, an output location that cannot be written: a name
    that is not UTF-8 (the reports link their files by URL) or longer than the file system allows, a place where a
    file cannot be created -- tried by creating (and removing) a temporary file there, since ``os.access`` says yes
    to root everywhere (``/proc``, a read-only mount)."""
    import tempfile

    from fedcheck.core.errors import BadInput
    p = Path(path)
    shown = shown_path(p)
    try:
        os.fspath(p).encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{what} {shown}: the name is not valid UTF-8; choose a UTF-8 name") from None
    try:
        exists = p.exists()
    except OSError as e:        # ENAMETOOLONG and the like
        raise BadInput(f"{what} {shown}: {e.strerror}") from None
    if exists:
        if directory and not p.is_dir():
            raise BadInput(f"{what} {shown}: exists and is not a directory")
        if not directory and p.is_dir():
            raise BadInput(f"{what} {shown}: is a directory, expected a file")
        target = p if directory else p.parent
    else:
        target = p.parent if not directory else p
        while not target.exists():
            target = target.parent
        if not target.is_dir():
            raise BadInput(f"{what} {shown}: {target} is not a directory")
    probe = target if target.exists() else target.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        raise BadInput(f"{what} {shown}: {probe} is not writable")
    try:
        name_max = os.pathconf(probe, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        name_max = 255
    for part in p.parts:
        if len(os.fsencode(part)) > name_max:
            raise BadInput(f"{what} {shown}: a name of {len(os.fsencode(part))} bytes; the file system allows "
                           f"{name_max}")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".fedcheck-probe-", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise BadInput(f"{what} {shown}: no file can be created in {probe} ({e.strerror})") from None


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


def _scalar(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


_SCALARS = frozenset({str, int, float, bool, type(None)})
_STRICT = json.JSONEncoder(allow_nan=False)      # json.dumps(x, allow_nan=False) without a new encoder per call
_KEYS = json.JSONEncoder()                       # json.dumps(key)


def dumps(doc, indent: int = 1) -> str:
    """JSON with one key per line (readable, diffable) and every list of numbers or strings on one line: a curve of
    1,000 recorded points is one line, not 1,000 (a third of the size of ``json.dumps(indent=1)``).  Strict JSON
    (``allow_nan=False``): write :func:`jsonable` values."""
    def enc(x, level: int) -> str:
        if isinstance(x, dict):
            if not x:
                return "{}"
            pad = " " * (indent * (level + 1))
            items = ",\n".join(f"{pad}{_KEYS.encode(str(k))}: {enc(v, level + 1)}" for k, v in x.items())
            return "{\n" + items + "\n" + " " * (indent * level) + "}"
        if isinstance(x, (list, tuple)):
            if set(map(type, x)) <= _SCALARS or all(_scalar(v) for v in x):
                return _STRICT.encode(list(x))
            pad = " " * (indent * (level + 1))
            return "[\n" + ",\n".join(pad + enc(v, level + 1) for v in x) + "\n" + " " * (indent * level) + "]"
        if type(x) is float and math.isfinite(x):
            return float.__repr__(x)        # what the encoder writes for a float
        return _STRICT.encode(x)
    return enc(doc, 0)


def write_json(doc: dict, path: str | os.PathLike) -> Path:
    return atomic_write_text(path, dumps(doc))


def read_json(path: str | os.PathLike) -> dict:
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("checks"), list):
        raise ValueError(f"{path}: not a fedcheck results file (schema {SCHEMA!r})")
    return doc


def read_results(path) -> dict:
    """A results document read from ``path`` and checked against its JSON Schema (:mod:`fedcheck.core.schema`):
    :class:`~fedcheck.core.errors.BadInput` with one line naming the file otherwise -- not UTF-8, not JSON, JSON's
    ``NaN``/``Infinity`` literals, nested too deeply, or not a results document (where and why)."""
    from fedcheck.core.errors import BadInput
    from fedcheck.core.schema import schema_errors
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise BadInput(f"{path!r}: expected the path of a results JSON file")
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{p}: not a UTF-8 text file, so not a fedcheck results file") from None
    except OSError as e:
        raise BadInput(f"{p}: cannot be read ({e.strerror or type(e).__name__})") from None

    def constant(name):
        raise ValueError(f"{name} is not a JSON number (fedcheck writes null for NaN and \"inf\" for infinity)")
    try:
        doc = json.loads(text, parse_constant=constant)
    except RecursionError:
        raise BadInput(f"{p}: nested too deeply to be a fedcheck results file") from None
    except ValueError as e:
        raise BadInput(f"{p}: not valid JSON ({' '.join(str(e).split())[:200]})") from None
    if _depth(doc) > MAX_DEPTH:
        raise BadInput(f"{p}: nested more than {MAX_DEPTH} levels deep: not a fedcheck results file")
    why = schema_errors(doc)
    if why:
        raise BadInput(f"{p}: not a fedcheck results file ({why})")
    return doc


MAX_DEPTH = 64      # a results document is at most ~10 levels deep; the reports walk it recursively


def _depth(doc) -> int:
    """The nesting depth of a JSON value (iteratively: no recursion on a hostile document)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            deepest = max(deepest, d)
            if d > MAX_DEPTH:
                return d
            stack.extend((v, d + 1) for v in (x.values() if isinstance(x, dict) else x))
    return deepest
