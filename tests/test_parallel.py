"""``verify -j N``: checks and seeds in worker processes give the results of a serial run."""
import json
import numpy as np
import pytest

from fedcheck import Bound, BoundTest, Claim, Measurement, MeasureResult, Rounds, RunConfig
from fedcheck.cli import main
from fedcheck.core.evidence import Finding
from fedcheck.problems.instances import RandomFamily
from fedcheck.core.parallel import _parts, run_checks, splittable
from theorems.fedfw import theorem1

TIMING = {"seconds"}


def _strip(x):
    """Drop timing fields (wall-clock seconds) anywhere in a result."""
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in TIMING}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def _verify_json(tmp_path, name, *extra):
    out = tmp_path / f"{name}.json"
    code = main(["verify", "theorem1", "--seeds", "5", "--rounds", "400", "-q", "--no-report",
                 "--json", str(out), *extra])
    return code, json.loads(out.read_text())["checks"]


def test_cli_jobs_2_equals_jobs_1(tmp_path):
    _verify_json(tmp_path, "warm")             # fill the solve cache: both runs below read it
    c1, serial = _verify_json(tmp_path, "j1", "-j", "1")
    c2, parallel = _verify_json(tmp_path, "j2", "-j", "2")
    assert c1 == c2
    assert _strip(serial) == _strip(parallel)
    assert len(parallel[0]["instances"]) == 5


def test_cli_rejects_negative_jobs(tmp_path, capsys):
    assert main(["verify", "theorem1", "--seeds", "2", "--rounds", "50", "-q", "--no-report", "-j", "-1"]) == 2


def _tiny_measure(ctx):
    v = float(np.add(1.0, 1.0))
    return MeasureResult([Finding("1 + 1 = 2", "holds" if v == 2.0 else "violated")],
                         evidence={"value": v, "seeds": list(ctx.config.seeds or [])})


def _tiny():
    """A claim that is not a per-round bound test: runs whole in one worker."""
    return Claim(id="fedfw.tiny", paper=theorem1.paper, reference="-", statement="1 + 1 = 2",
                 evidence=Measurement(_tiny_measure))


def test_api_mixed_checks_and_shapes():
    """Instances of two shapes (two batches: fits pooled in the serial order) and a whole-run check."""
    fam_b = RandomFamily(loss="least_squares", set="l1", n=4, m=12, p=8, radius=1.0)
    insts = [theorem1.evidence.experiment.family.draw(s) for s in range(3)] + [fam_b.draw(s) for s in range(3)]
    insts = [insts[k] for k in (0, 3, 1, 4, 5, 2)]   # interleave the shapes
    config = RunConfig(instances=insts, rounds=300)
    tiny = _tiny()
    assert not splittable(theorem1) and not splittable(tiny)   # theorem1 streams every round: it runs whole
    theorem1.run(RunConfig(instances=insts, rounds=5))   # fill the solve cache (``cached`` is reported)
    serial = [c.run(config) for c in (theorem1, tiny)]
    parallel = run_checks([theorem1, tiny], config, jobs=2)
    for a, b in zip(serial, parallel):
        assert _strip(a.to_dict()) == _strip(b.to_dict())
    assert serial[0].evidence["batches"] == 2


def test_full_mode_uses_full_rounds_and_seeds():
    exp = theorem1.evidence.experiment

    def claim(**kw):
        return Claim(id="x.bound", paper=theorem1.paper, reference="-", statement="-",
                     evidence=BoundTest(Rounds(family=exp.family, algorithm=exp.algorithm, schedules=exp.schedules, **kw),
                                        bounds=theorem1.evidence.bounds))
    r = claim(rounds=40, full_rounds=250, seeds=2, full_seeds=3).evidence.experiment
    assert r.rounds_for(RunConfig()) == 40
    assert r.rounds_for(RunConfig(full=True)) == 250
    assert r.rounds_for(RunConfig(full=True, rounds=7)) == 7
    assert len(r.instances(RunConfig())) == 2 and len(r.instances(RunConfig(full=True))) == 3
    plain = claim(rounds=100).evidence.experiment
    assert plain.rounds_for(RunConfig()) == plain.rounds_for(RunConfig(full=True)) == 100


@pytest.mark.parametrize("n,k", [(5, 2), (2, 4), (16, 3), (1, 1)])
def test_parts_keep_order_and_cover(n, k):
    items = list(range(n))
    parts = _parts(items, k)
    assert sum(parts, []) == items and len(parts) == min(n, k)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
