"""What a run is asked for, parsed and validated before anything runs (shared by the Python API, the command line
and the pytest plugin): seeds, parameters, rounds against a memory estimate, instances against each claim's domain.
Every refusal is :class:`~fedcheck.core.errors.BadInput` with one line naming the option."""
from __future__ import annotations

from fedcheck.core.errors import BadInput
from fedcheck.core.memory import available_memory  # the one estimate (what --rounds and declared sizes meet)

__all__ = ["parse_seeds", "parse_params", "validate_inputs", "option_notes", "available_memory"]


def parse_seeds(text: str) -> list[int]:
    """``8`` (seeds 0..7), ``3,5,9``, ``10-19`` or a mix ``0-3,7``."""
    text = text.strip()
    try:
        if text.isdigit():
            k = int(text)
            if k < 1:
                raise ValueError
            _refuse_many_seeds(text, k)
            return list(range(k))
        out: list[int] = []
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                a, b = part.split("-", 1)
                a, b = int(a), int(b)
                if b < a:
                    raise ValueError
                _refuse_many_seeds(text, len(out) + b - a + 1)
                out.extend(range(a, b + 1))
            else:
                out.append(int(part))
        if not out or min(out) < 0:
            raise ValueError
        return list(dict.fromkeys(out))
    except ValueError:
        raise BadInput(f"--seeds {text!r}: expected a count (8), a list (3,5,9) or a range (10-19) of "
                       "non-negative integers") from None


def _refuse_many_seeds(text: str, count: int) -> None:
    """A seed list too large to hold (about 100 bytes a seed: the list, its check for repeats), refused before it is
    built; the runs' own memory is estimated by :func:`validate_inputs`."""
    from fedcheck.core.memory import refuse_if_too_big
    try:
        refuse_if_too_big(100.0 * count, f"--seeds {text} ({count} seeds)", "use fewer seeds")
    except BadInput as e:       # as a plain BadInput: not the parser's ValueError
        raise BadInput(str(e)) from None


def parse_params(items) -> dict:
    """``NAME=VALUE`` strings (``--param``) as ``{name: float}``."""
    out = {}
    for it in items:
        if "=" not in it:
            raise BadInput(f"--param {it!r}: expected NAME=VALUE")
        k, v = it.split("=", 1)
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise BadInput(f"--param {it!r}: {v!r} is not a number") from None
    return out


def validate_inputs(checks, params: dict, instances: list, rounds: int | None = None, seeds=None) -> None:
    """Refuse, before any computation, a parameter no selected claim has, a value outside its range, and an
    instance a claim cannot run on or that lies outside its domain (all exit 2, one line)."""
    import difflib

    from fedcheck.core.claim import RunConfig
    from fedcheck.experiments import check_declaration, param_domain, takes_instance
    for c in checks:                # a user's declarations (a Claim built in a notebook or a test module)
        if getattr(c, "is_users", False):
            check_declaration(c)
    known = sorted({k for c in checks for k in c.params})
    for name, value in params.items():
        owners = [c for c in checks if name in c.params]
        if not owners:
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            ids = ", ".join(c.id for c in checks[:3]) + (" ..." if len(checks) > 3 else "")
            raise BadInput(f"--param {name}: not a parameter of {ids} (parameters: {', '.join(known) or 'none'}){hint}")
        for c in owners:
            grid = getattr(getattr(c.evidence, "experiment", None), "param_grid", None) or ()
            if any(name in g for g in grid):
                vals = ", ".join(f"{g[name]:g}" for g in grid if name in g)
                raise BadInput(f"--param {name}={value!r}: {c.id} runs {name} over its own grid ({vals}), which "
                               "a --param does not change")
            try:
                c.domain.check_param(name, value, param_domain(c, name))
            except BadInput as e:
                raise BadInput(f"--param {name}={value!r}: {c.id}: {e}") from None
    if rounds or seeds is not None:
        avail = available_memory()
        for c in checks:
            est = getattr(getattr(c.evidence, "experiment", None), "memory_estimate", None)
            need = est(c, RunConfig(rounds=rounds, seeds=seeds)) if est else 0.0
            if avail and need > 0.8 * avail:
                opts = " ".join(o for o in (f"--rounds {rounds}" if rounds else "",
                                            f"--seeds ({len(seeds)} seeds)" if seeds is not None else "") if o)
                raise BadInput(f"{opts}: {c.id} would need about {need / 2**30:.3g} GiB of memory "
                               f"(about {avail / 2**30:.3g} GiB available); use fewer rounds or seeds")
    for path, inst in instances:
        for c in checks:
            try:
                why = takes_instance(c, inst)
            except BadInput as e:
                raise BadInput(f"--instance {path}: {c.id}: {e}") from None
            if why:
                raise BadInput(f"--instance {path}: {why}")


def option_notes(checks, rounds: int | None, full: bool = False) -> list[str]:
    """One line per claim whose statement an option narrows (``--rounds`` on a claim over horizons keeps its declared
    horizons ``T <= rounds``), shown before the run and kept in the claim's evidence."""
    from fedcheck.core.claim import RunConfig
    from fedcheck.experiments import horizons_note
    notes = [horizons_note(c, RunConfig(rounds=rounds, full=full)) for c in checks] if rounds else []
    return [n for n in notes if n]
