"""Property suites for users: hypothesis strategies and theorem-checking helpers.

Example (a claim checked on instances drawn inside its declared domain)::

    from hypothesis import given, settings
    from fedcheck.testing import claim_instances, assert_not_refuted
    from theorems.fedfw import theorem1

    @settings(max_examples=10, deadline=None)
    @given(claim_instances(theorem1))
    def test_theorem1_on_drawn_instances(inst):
        assert_not_refuted(theorem1, inst, rounds=500)

Each check reports ``hypothesis.target(measured/bound)``, so hypothesis steers its draws toward the worst
case; a failure is a few lines (the verdict, the worst finding with measured vs bound and where, and the
``fedcheck verify`` command that reproduces it on the saved instance).  With the pytest plugin (installed with
fedcheck) the same checks are a marker or a fixture: ``@pytest.mark.fedcheck("theorem1")``,
``check_claim(claim, instance=...)``.  The project's own tests use the same strategies.
"""
from __future__ import annotations

import math
import os
import sys
from typing import Sequence

from hypothesis import strategies as st

from fedcheck.core.claim import Claim as Check, Result as CheckResult, RunConfig
from fedcheck.problems.instances import Instance, RandomFamily
from fedcheck.core.verdict import INCONCLUSIVE, NOT_REPRODUCED, VIOLATED

__all__ = ["families", "instances", "claim_instances", "check_on", "assert_not_refuted", "failure_message",
           "reproduce_command", "claim_file", "target_worst"]


def families(loss: str | Sequence[str] = ("least_squares", "logistic"),
             sets: Sequence[str] = ("l1", "l2", "box", "simplex"),
             n=st.integers(1, 6), m=st.integers(2, 12), p=st.integers(2, 8),
             radius=st.floats(0.25, 4.0), heterogeneity=st.floats(0.0, 3.0),
             outside=st.floats(1.2, 4.0)) -> st.SearchStrategy[RandomFamily]:
    """Random federated families (see :class:`fedcheck.instances.RandomFamily`)."""
    losses = (loss,) if isinstance(loss, str) else tuple(loss)
    return st.builds(RandomFamily, loss=st.sampled_from(losses), set=st.sampled_from(tuple(sets)), n=n, m=m, p=p,
                     radius=radius, heterogeneity=heterogeneity, outside=outside)


def instances(seeds=st.integers(0, 2**32 - 1), **family_kwargs) -> st.SearchStrategy[Instance]:
    """One instance of a drawn family at a drawn seed (reproducible: the seed is in ``inst.seed``)."""
    return st.builds(lambda fam, seed: fam.draw(seed), families(**family_kwargs), seeds)


def claim_instances(claim, seeds=st.integers(0, 2**31 - 1)) -> st.SearchStrategy:
    """Instances inside ``claim``'s declared domain (what ``fedcheck search`` draws: free properties varied in
    their ranges, everything else as the claim's own family has it), reproducible from the drawn seed."""
    import numpy as np

    from fedcheck.tools.search import SearchSpace, draw_candidate, draw_generic, families_of
    fams = families_of(claim)
    if not fams:
        raise ValueError(f"{claim.id} does not run on instances of a family")
    if isinstance(fams[0], RandomFamily):
        space = SearchSpace.for_check(claim, vary_params=False)
        return seeds.map(lambda s: draw_candidate(space, np.random.default_rng(s), 0).instance)
    space = SearchSpace(params={})
    return seeds.map(lambda s: draw_generic(claim, np.random.default_rng(s), 0, space).instance)


def target_worst(claim: Check, res: CheckResult) -> None:
    """Inside a hypothesis test: ``hypothesis.target(max measured/bound)`` so that the search steers toward
    the worst case (nothing outside a hypothesis test)."""
    ratio = res.max_ratio
    if ratio is None or not isinstance(ratio, (int, float)) or not math.isfinite(float(ratio)):
        return
    try:
        from hypothesis import target
        from hypothesis.control import currently_in_test_context
        from hypothesis.errors import InvalidArgument
    except ImportError:     # pragma: no cover - hypothesis is a dependency
        return
    if not currently_in_test_context():
        return
    try:
        target(float(ratio), label=f"{claim.id}: measured/bound")
    except InvalidArgument:     # the same claim targeted twice in one example: the first counts
        pass


def check_on(check: Check, instance: Instance | Sequence[Instance], rounds: int | None = None,
             params: dict | None = None, use_cache: bool = True, save_dir: str | os.PathLike | None = None
             ) -> CheckResult:
    """Run a declared check on given instance(s) instead of its random family (inside its domain only; the
    instances a refutation rests on are saved under ``save_dir`` when given)."""
    insts = [instance] if not isinstance(instance, (list, tuple)) else list(instance)
    from fedcheck.experiments import takes_instance
    for inst in insts:       # a claim is tested only inside its declared domain
        why = takes_instance(check, inst)
        if why:
            raise ValueError(why)
    res = check.run(RunConfig(instances=insts, rounds=rounds, params=dict(params or {}), use_cache=use_cache,
                              save_dir=None if save_dir is None else str(save_dir)))
    target_worst(check, res)
    return res


# ------------------------------------------------------------------------------------------------
# short failure messages
def claim_file(claim: Check) -> str | None:
    """The user's file a claim was declared in (``None`` for the built-in catalog's claims)."""
    if _is_builtin(claim):
        return None
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        name = getattr(mod, "__name__", "") or ""
        if not f or name.startswith(("theorems", "fedcheck.")):
            continue
        try:
            if any(v is claim for v in vars(mod).values()):
                return os.path.abspath(f)
        except Exception:       # noqa: BLE001 - an odd module
            continue
    return None


def _is_builtin(claim: Check) -> bool:
    try:
        from fedcheck.catalog.registry import default_registry
        return default_registry().checks.get(claim.id) is claim
    except Exception:       # noqa: BLE001
        return False


def reproduce_command(claim: Check, res: CheckResult, *, rounds=None, seeds=None, params=None,
                      theorem_file: str | None = None) -> str:
    """The ``fedcheck verify`` command that reruns ``claim`` on the saved instance of a failure (or on the
    same seeds when nothing was saved)."""
    import shlex
    parts = ["fedcheck", "verify", claim.id]
    f = theorem_file or claim_file(claim)
    if f:
        parts += ["--theorem-file", f]
    saved = [p for p in (res.saved_instances or []) if str(p).endswith(".npz")]
    if saved:
        parts += ["--instance", str(saved[0])]
    elif seeds is not None:
        parts += ["--seeds", ",".join(map(str, seeds)) if not isinstance(seeds, (int, str)) else str(seeds)]
    if rounds is not None:
        parts += ["--rounds", str(rounds)]
    for k, v in (params or {}).items():
        parts += ["--param", f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}"]
    return " ".join(shlex.quote(str(p)) for p in parts)


def _fmt(x) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "-"
    return f"{v:.4g}" if math.isfinite(v) else str(v)


def _clip(s: str, n: int = 240) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[:n - 3] + "..."


def _position(axis: str, t: float) -> str:
    """Where a point is, said as the bound says it: on the round axis ``t = 501 (after 500 rounds)`` -- the bound's t
    is the iterate's index, x^1 the start, so a 500-round run ends at t = 501 --, on the horizon axis ``T = 71``."""
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return ""
    if axis == "round":
        done = t - 1
        return f" at t = {t:g} ({'the start' if done == 0 else f'after {done:g} round' + ('s' if done != 1 else '')})"
    if axis == "horizon":
        return f" at horizon T = {t:g}"
    return f" at point {t:g}"


def failure_message(claim: Check, res: CheckResult, command: str | None = None) -> str:
    """A few lines: the verdict, the worst finding (measured vs bound, where) and the command reproducing it."""
    head = res.headline or res.verdict
    lines = [f"{claim.id} ({claim.reference}): {head}"]
    readings = res.readings or {}
    bad = [(n, d) for n, d in readings.items() if d.get("verdict") == res.verdict]
    paper = [(n, d) for n, d in bad if d.get("paper", True)]
    bad = paper or bad
    if bad:
        name, d = max(bad, key=lambda nd: nd[1].get("max_ratio") if isinstance(nd[1].get("max_ratio"), (int, float))
                      and math.isfinite(nd[1]["max_ratio"]) else -math.inf)
        where = ""
        try:
            from fedcheck.api import to_frame
            df = to_frame([res.to_dict()])
            df = df[(df["finding"] == name) & df["ratio"].notna()]
            if len(df):
                row = df.loc[df["ratio"].idxmax()]
                pos = _position(str(row["axis"]), row["t"])
                where = (f": measured {_fmt(row['measured'])} vs bound {_fmt(row['bound_value'])} "
                         f"({row['relation']}){pos} ({row['instance']})")
        except Exception:       # noqa: BLE001 - a message never fails the message
            where = ""
        lines.append(_clip(f"worst finding {name!r}{where}; max measured/bound {_fmt(d.get('max_ratio'))}"))
        if d.get("evidence") and isinstance(d["evidence"], str):
            lines.append(_clip(f"evidence: {d['evidence']}"))
    elif res.reason:
        lines.append(_clip(f"reason: {res.reason}"))
    if command:
        lines.append(f"reproduce: {command}")
    return "\n".join(lines)


def assert_not_refuted(check: Check, instance, rounds: int | None = None, params: dict | None = None,
                       allow_inconclusive: bool = True, save_dir: str | os.PathLike | None = None) -> CheckResult:
    """Fail (with a short message and the command reproducing it) when the check's verdict on ``instance`` is
    violated / not reproduced (or inconclusive, with ``allow_inconclusive=False``)."""
    __tracebackhide__ = True
    own = save_dir is None
    if own:
        import tempfile
        save_dir = tempfile.mkdtemp(prefix="fedcheck-failure-")
    res = check_on(check, instance, rounds=rounds, params=params, save_dir=save_dir)
    bad = res.verdict in (VIOLATED, NOT_REPRODUCED) or (not allow_inconclusive and res.verdict == INCONCLUSIVE)
    if own and not bad:
        import shutil
        shutil.rmtree(save_dir, ignore_errors=True)
    if bad:
        raise AssertionError(failure_message(check, res, reproduce_command(check, res, rounds=rounds, params=params)))
    return res
