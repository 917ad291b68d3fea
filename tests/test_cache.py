"""Stored values are re-verified: a tampered, ill-typed or non-optimal cache entry is solved again
with a warning, never trusted and never a crash."""
import json
import warnings

import numpy as np
import pytest

from fedcheck.core import verdict as V
from fedcheck.core.claim import RunConfig
from fedcheck.problems import solve as S
from fedcheck.problems.instances import RandomFamily


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDCHECK_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _entry(cache):
    metas = sorted(cache.glob("*.json"))
    assert len(metas) == 1
    return metas[0], metas[0].with_suffix(".npz")


def _edit_meta(path, **changes):
    m = json.loads(path.read_text())
    m.update(changes)
    path.write_text(json.dumps(m))


def _edit_info(path, **changes):
    m = json.loads(path.read_text())
    m["info"].update(changes)
    path.write_text(json.dumps(m))


INST = RandomFamily(loss="least_squares", set="l1", n=4, m=6, p=5).draw(3)


def _fresh():
    return S.solve_consensus(INST, use_cache=False)


TAMPER = {
    "F* lowered by 20": lambda meta, arr: _edit_meta(meta, F_star=json.loads(meta.read_text())["F_star"] - 20,
                                                     F_lower=json.loads(meta.read_text())["F_lower"] - 20),
    "F* raised by 20": lambda meta, arr: _edit_meta(meta, F_star=json.loads(meta.read_text())["F_star"] + 20,
                                                    F_lower=json.loads(meta.read_text())["F_lower"] + 20),
    "a tighter certificate than the point allows": lambda meta, arr: _edit_meta(
        meta, F_lower=json.loads(meta.read_text())["F_star"] - 1e-300),
    "Y_norm 0": lambda meta, arr: _edit_info(meta, Y_norm=0.0),
    "Y_norm 1e6": lambda meta, arr: _edit_info(meta, Y_norm=1e6),
    "NaN": lambda meta, arr: meta.write_text(meta.read_text().replace('"F_star": ', '"F_star": NaN, "x": ', 1)),
    "not optimal": lambda meta, arr: _edit_meta(meta, status="optimal_inaccurate"),
    "wrong type": lambda meta, arr: _edit_meta(meta, F_star="zero"),
    "wrong shape": lambda meta, arr: np.savez(arr, x_star=np.zeros(3), dual_Y=np.zeros((4, 5))),
    "not JSON": lambda meta, arr: meta.write_text("{"),
    "not npz": lambda meta, arr: arr.write_bytes(b"garbage"),
}


@pytest.mark.parametrize("how", sorted(TAMPER))
def test_tampered_consensus_entries_are_solved_again(cache, how):
    first = S.solve_consensus(INST)
    meta, arr = _entry(cache)
    TAMPER[how](meta, arr)
    with pytest.warns(S.SolutionWarning):
        again = S.solve_consensus(INST)
    assert not again.cached and again.F_star == pytest.approx(first.F_star, rel=1e-12)
    assert again.Y_norm == pytest.approx(first.Y_norm, rel=1e-9)
    # and the entry written back is sound: read silently next time
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        third = S.solve_consensus(INST)
    assert third.cached


def test_a_sound_entry_is_read_without_warning(cache):
    a = S.solve_consensus(INST)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = S.solve_consensus(INST)
    assert b.cached and b.F_star == a.F_star and np.array_equal(b.Y_star, a.Y_star)


def test_a_lowered_cached_optimum_cannot_refute_theorem1(cache):
    """Lowering the cached F* by 20 once turned Theorem 1 into 'violated' (and saved a 'refuting' instance)."""
    from theorems.fedfw import theorem1
    cfg = RunConfig(seeds=[0], rounds=200)
    clean = theorem1.run(cfg)
    meta = sorted(cache.glob("*.json"))[0]
    m = json.loads(meta.read_text())
    _edit_meta(meta, F_star=m["F_star"] - 20, F_lower=m["F_lower"] - 20)
    with pytest.warns(S.SolutionWarning):
        again = theorem1.run(cfg)
    assert again.verdict == clean.verdict == V.HOLDS and again.max_ratio == pytest.approx(clean.max_ratio, rel=1e-12)


def test_nonsmooth_entries_are_reverified(cache):
    from theorems.fedmls import problems as P
    inst = P.LADFamily(n=2, m=12, p=3, heterogeneity=0.5).draw(0)
    first = P.solve_nonsmooth(inst)
    meta, arr = sorted(cache.glob("*.json"))[0], None
    m = json.loads(meta.read_text())
    _edit_meta(meta, F_lower=m["F_lower"] + 0.5, F_star=m["F_star"] + 0.5)
    with pytest.warns(S.SolutionWarning):
        again = P.solve_nonsmooth(inst)
    assert not again.cached and again.F_star == pytest.approx(first.F_star, rel=1e-12)


def test_composite_entries_are_reverified(cache):
    """FedDualAvg's composite problems use the same Solution and SolutionCache: a raised Phi* is solved again."""
    from fedcheck.problems import composite as P
    from theorems.feddualavg.problems import SharedQuadraticFamily
    inst = SharedQuadraticFamily().draw(0)
    first = P.solve_composite(inst)
    assert isinstance(first, S.Solution) and first.certified
    meta = sorted(cache.glob("*.json"))[0]
    m = json.loads(meta.read_text())
    _edit_meta(meta, F_star=m["F_star"] + 20)
    with pytest.warns(S.SolutionWarning):
        again = P.solve_composite(inst)
    assert not again.cached and again.F_star == pytest.approx(first.F_star, rel=1e-12)
    assert again.phi_star == again.F_star and again.w_star is again.x_star      # the paper's names, one type
