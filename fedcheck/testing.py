"""Property suites for users: hypothesis strategies and a theorem-checking helper.

Example (a user's own claim, checked on drawn instances)::

    from hypothesis import given, settings
    from fedcheck.testing import instances, assert_not_refuted
    from theorems.fedfw import theorem1

    @settings(max_examples=10, deadline=None)
    @given(instances(loss="least_squares", sets=("l1", "l2")))
    def test_theorem1_on_drawn_instances(inst):
        assert_not_refuted(theorem1, inst, rounds=500)

The project's own tests use the same strategies.
"""
from __future__ import annotations

from typing import Sequence

from hypothesis import strategies as st

from fedcheck.core.claim import Claim as Check, Result as CheckResult, RunConfig
from fedcheck.problems.instances import Instance, RandomFamily
from fedcheck.core.verdict import INCONCLUSIVE, NOT_REPRODUCED, VIOLATED

__all__ = ["families", "instances", "claim_instances", "check_on", "assert_not_refuted"]


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


def check_on(check: Check, instance: Instance | Sequence[Instance], rounds: int | None = None,
             params: dict | None = None, use_cache: bool = True) -> CheckResult:
    """Run a declared check on given instance(s) instead of its random family."""
    insts = [instance] if isinstance(instance, Instance) else list(instance)
    from fedcheck.experiments import takes_instance
    for inst in insts:       # a claim is tested only inside its declared domain
        why = takes_instance(check, inst)
        if why:
            raise ValueError(why)
    return check.run(RunConfig(instances=insts, rounds=rounds, params=dict(params or {}), use_cache=use_cache))


def assert_not_refuted(check: Check, instance, rounds: int | None = None, params: dict | None = None,
                       allow_inconclusive: bool = True) -> CheckResult:
    """Fail (with the evidence) when the check's verdict on ``instance`` is violated / not reproduced."""
    res = check_on(check, instance, rounds=rounds, params=params)
    bad = res.verdict in (VIOLATED, NOT_REPRODUCED) or (not allow_inconclusive and res.verdict == INCONCLUSIVE)
    if bad:
        inst = res.instances[0] if res.instances else {}
        raise AssertionError(
            f"{check.id}: {res.verdict} ({res.reason}); max ratio {res.max_ratio}; readings "
            f"{ {k: v['verdict'] for k, v in res.readings.items()} }; instance {inst.get('instance')}")
    return res
