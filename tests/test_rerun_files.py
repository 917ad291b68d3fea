"""One problem file format: every claim that runs on instances reruns from a saved file of its own
family's problem kind, through ``load_problem`` -- what ``verify --instance`` and the rerun hints use."""
import pytest

from fedcheck.core.claim import RunConfig
from fedcheck.catalog.registry import default_registry
from fedcheck.experiments import takes_instance
from fedcheck.problems.io import load_problem, problem_kind
from fedcheck.tools.search import families_of

REG = default_registry()


def _runs_on_its_family(c):
    fams = families_of(c)
    if not fams:
        return False
    try:
        return takes_instance(c, fams[0].draw(0)) is None
    except Exception:
        return False


CLAIMS = [c for c in REG.checks.values() if _runs_on_its_family(c)]


def test_every_kind_of_problem_is_rerunnable():
    kinds = {problem_kind(families_of(c)[0].draw(0).save("/tmp/fedcheck-kind-probe")[0]) for c in CLAIMS}
    assert {"federated", "constrained"} <= kinds
    assert len(CLAIMS) >= 15


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_claim_reruns_from_a_saved_file(claim, tmp_path):
    inst = families_of(claim)[0].draw(0)
    paths = inst.save(str(tmp_path / "p"))
    loaded = load_problem(paths[0])
    assert type(loaded) is type(inst)
    assert takes_instance(claim, loaded) is None
    res = claim.run(RunConfig(instances=[loaded], rounds=40, save_dir=None))
    assert res.verdict in ("holds", "violated", "inconclusive", "reproduced", "not_reproduced")
    assert res.instances, "the run must say what it ran on"
