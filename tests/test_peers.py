"""The JAX peers of ``benchmarks/peers.py`` compute what fedcheck computes (tiny shapes, no timing).

JAX is a benchmark dependency only (the ``bench`` extra): without it these tests are skipped."""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax", reason="JAX is a benchmark dependency (pip install 'fedcheck[bench]'); not installed")

_root = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fedcheck_bench_peers", _root / "benchmarks" / "peers.py")
P = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = P
_spec.loader.exec_module(P)

TINY = {
    "fedfw": dict(B=3, T=40, loop_rounds=2),
    "fedavg": dict(B=3, n=3, m=6, p=4, T=20, E=3, loop_rounds=2),
    "feddualavg": dict(B=3, T=10),
    "fedmid": dict(B=3, T=10),
    "fedmls": dict(B=3, T=12, n=4),
    "fedsgm": dict(B=3, T=20, E=2, n=3),
    "fedprox": dict(B=3, T=12, E=2, n=3, p=4),
}
MAKE = {"fedfw": P.case_fedfw, "fedavg": P.case_fedavg, "feddualavg": lambda **k: P.case_composite("feddualavg", **k),
        "fedmid": lambda **k: P.case_composite("fedmid", **k), "fedmls": P.case_fedmls, "fedsgm": P.case_fedsgm,
        "fedprox": P.case_fedprox}


@pytest.mark.parametrize("name", sorted(TINY))
def test_jax_peer_equals_fedcheck(name):
    case = MAKE[name](**TINY[name])
    ref = {k: np.asarray(v) for k, v in (case.jax_check or case.jax_run)().items()}
    got = case.fedcheck()
    assert P.max_rel_diff(got, ref, case.compare) <= P.TOL


@pytest.mark.parametrize("incremental", [False, True])
def test_jax_peer_of_factored_fedfw(monkeypatch, incremental):
    from fedcheck.problems import losses as L
    monkeypatch.setattr(L, "FACTOR_LIMIT_BYTES", -1)       # the factored form on a small instance
    case = P.case_fedfw(B=2, T=70, p=30, loop_rounds=2, incremental_peer=incremental)
    assert "factored" in case.name
    ref = {k: np.asarray(v) for k, v in case.jax_run().items()}
    assert P.max_rel_diff(case.fedcheck(), ref, case.compare) <= P.TOL


def test_max_rel_diff_sees_a_difference():
    a = {"x": np.array([1.0, 2.0])}
    assert P.max_rel_diff(a, {"x": np.array([1.0, 2.0])}, ("x",)) == 0.0
    assert P.max_rel_diff(a, {"x": np.array([1.0, 2.1])}, ("x",)) > P.TOL
    assert P.max_rel_diff(a, {"x": np.array([1.0])}, ("x",)) == float("inf")


def test_a_nan_on_one_side_only_is_a_difference():
    a = {"x": np.array([1.0, np.nan])}
    assert P.max_rel_diff(a, {"x": np.array([1.0, 2.0])}, ("x",)) == float("inf")
    assert P.max_rel_diff(a, {"x": np.array([1.0, np.nan])}, ("x",)) == 0.0


def test_the_peers_record_what_fedcheck_records():
    """Same workload: the JAX peer computes (and the benchmark compares) every per-round quantity fedcheck's run
    records, not only F (FedSGM records 13, the default recorder F, consensus and infeasibility)."""
    from fedcheck.algorithms.switching import fedsgm
    from fedcheck.problems import constrained as C
    from theorems.fedsgm.problems import ConstrainedFamily
    batch = C.ConstrainedBatch([ConstrainedFamily(kind="pl", n=2, m=3, d=2, start="infeasible").draw(s)
                                for s in range(2)])
    tr = fedsgm(batch, rounds=3, eta=np.full(2, 0.1), eps=np.full(2, 0.05), local_steps=2, comparator=np.zeros((2, 2)))
    assert set(tr.metrics) == set(P.FEDSGM_EVERY + P.FEDSGM_ROUNDS)
    assert set(P.FEDSGM_EVERY + P.FEDSGM_ROUNDS) <= set(MAKE["fedsgm"](**TINY["fedsgm"]).compare)
    for name in ("fedavg", "fedprox"):
        case = MAKE[name](**TINY[name])
        assert set(P.RECORDED) <= set(case.compare)
        assert {k for k in case.fedcheck() if k in ("F", "consensus", "infeasibility")} == set(P.RECORDED)


@pytest.mark.parametrize("name,variant", [("fedavg", "unrolled"), ("fedavg", "fori"), ("feddualavg", "matmul"),
                                          ("fedmid", "matmul"), ("fedsgm", "plain")])
def test_every_jax_variant_equals_fedcheck(name, variant):
    """The other JAX peers the benchmark times (the fastest is the family's peer) compute what fedcheck computes."""
    make = {"fedsgm": lambda variant, **k: P.case_fedsgm(lean=variant == "lean", **k)}.get(name, MAKE[name])
    case = make(variant=variant, **TINY[name])
    ref = {k: np.asarray(v) for k, v in case.jax_run().items()}
    assert P.max_rel_diff(case.fedcheck(), ref, case.compare) <= P.TOL


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_jax_network_peers_equal_fedcheck(model):
    """``jax.grad`` of the peer's network (the library's flat layout, convolution, pooling) is the library's gradient,
    and FedFW on the network (both JAX forms) gives fedcheck's iterates."""
    case = P.case_network_grad(model, small=True)
    assert P.max_rel_diff(case.fedcheck(), {k: np.asarray(v) for k, v in case.jax_run().items()}, case.compare) <= 1e-12
    for variant in ("scan", "vmap-grad"):
        case = P.case_network_fedfw(model, T=3, variant=variant, small=True)
        ref = {k: np.asarray(v) for k, v in case.jax_run().items()}
        assert P.max_rel_diff(case.fedcheck(), ref, case.compare) <= P.TOL


def test_the_paired_repeats_are_those_of_the_peer_that_is_timed(monkeypatch):
    """The median line paired fedcheck with the first JAX form listed, not the fastest one the row times."""
    slow, fast = {"x": np.zeros(2)}, {"x": np.zeros(2)}
    # _wall(f) runs f and gives a time: the slow form 5 s, the fast one 1 s, fedcheck and the floor 2 s
    monkeypatch.setattr(P, "_wall", lambda f: {id(slow): 5.0, id(fast): 1.0}.get(id(f()), 2.0))
    monkeypatch.setattr(P, "_block", lambda x: x)
    case = P.Case("t", "1", 1, fedcheck=lambda: {"x": np.zeros(2)}, jax_run=lambda: slow, jax_check=None, loop=None,
                  loop_rounds=1, floor=lambda: None, compare=("x",), extra={"variant": "slow"},
                  alts={"fast": lambda: fast})
    r = P.measure(case, 3, with_loop=False)
    assert r["peer"] == "fast" and r["jax"] == 1.0 and r["runs_jax"] == [1.0, 1.0, 1.0]
