"""The calling and iterate convention of the federated methods in :mod:`fedcheck.algorithms` (its module doc): every
public method takes ``rounds=`` and a start ``x0=`` by keyword, returns a :class:`~fedcheck.algorithms.Trace` whose
row 0 is the start (``trace.completed[0] == 0`` on the default grid, ``completed = rounds - start``), starts where
``x0`` says, and gives the same trace twice for the same seeds."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import fedcheck.algorithms as A
from fedcheck.algorithms import pieces
from fedcheck.problems import constrained as PS
from fedcheck.problems.instances import Instance, InstanceBatch, RandomFamily, instance_rng
from fedcheck.problems.sets import L2Ball
from theorems.feddualavg import problems as PDF
from fedcheck.problems import composite as PD
from theorems.fedsgm import problems as PX

T = 6


def _fw_batch():
    fam = RandomFamily(n=3, m=4, p=3)
    return InstanceBatch([fam.draw(s) for s in range(2)])


def _lad_batch():
    rng = instance_rng(0, "convention:lad")
    insts = []
    for _ in range(2):
        Am = rng.standard_normal((3, 5, 3))
        insts.append(Instance(Am, Am @ rng.standard_normal(3) + 0.1 * rng.standard_normal((3, 5)), "lad",
                              L2Ball(100.0, 3)))
    return InstanceBatch(insts)


def _sgm_batch():
    fam = PX.ConstrainedFamily(kind="pl", n=3, m=6, d=3, start="infeasible")
    return PS.ConstrainedBatch([fam.draw(s) for s in range(2)])


def _composite():
    fam = PDF.SharedQuadraticFamily(d=3, M=3, K=2, noise=0.3, reg="l1", lam=0.2, geometry="euclidean")
    return PD.batch_of([fam.draw(s) for s in range(2)])


def _rows(v, B=2):
    return np.full((T, B), float(v))


def _fedprox_round(X, x, ctx, *, eta):
    Y = ctx.project(ctx.broadcast(x) - ctx.col(eta) * ctx.grad(ctx.broadcast(x)))
    return Y, Y.mean(1)


_FEDPROX = A.federated(_fedprox_round, name="one-step FedAvg")

# name -> (problem maker, keyword arguments but rounds/x0, random keywords (seed s -> kwargs), the start of a run
# as the trace shows it: (problem, trace) -> the recorded start's server point or value, and the same from x0)
FW = dict(eta=_rows(0.5), lam=_rows(1.0))
LAD = dict(lam=_rows(0.5), T=_rows(2), R=10.0)
COMP = dict(eta_c=0.05)
SGM = dict(eta=0.05, eps=0.1)
METHODS = {
    "fedfw": (_fw_batch, FW, None),
    "fedfw_variant": (_fw_batch, FW, None),
    "fedfw_plus": (_fw_batch, FW, None),
    "fedfw_sto": (_fw_batch, dict(FW, rho=_rows(0.5), sigma=0.1), lambda s: {"seeds": [s, s + 1]}),
    "fedfw_partial": (_fw_batch, dict(FW, participation=0.5), lambda s: {"seeds": [s, s + 1]}),
    "fedfw_split": (_fw_batch, dict(FW, client_sets=()), None),
    "feddr": (_fw_batch, dict(eta=1.0), None),
    "frank_wolfe": (_fw_batch, dict(eta=_rows(0.5)), None),
    "naive_fw_averaging": (_fw_batch, dict(eta=_rows(0.5)), None),
    "federated": (_fw_batch, dict(eta=_rows(0.05)), None),
    "fedsgm": (_sgm_batch, SGM, None),
    "switching_subgradient": (_sgm_batch, SGM, None),
    "fedmls": (_lad_batch, LAD, None),
    "mopes": (_lad_batch, LAD, None),
    "scaffold": (_lad_batch, dict(T=_rows(2), eta_g=1.0, eta=0.01), None),
    "scaffnew": (_lad_batch, dict(eta_step=0.01, p_step=0.5), lambda s: {"seeds": s}),
    "dcs": (_lad_batch, dict(T=_rows(2), R=10.0), None),
    "run_fedavg": (_lad_batch, dict(eta=0.01, steps=2), None),
    "feddualavg": (_composite, COMP, lambda s: {"seeds": s}),
    "feddualavg_osp": (_composite, COMP, lambda s: {"seeds": s}),
    "fedmid": (_composite, COMP, lambda s: {"seeds": s}),
    "fedmid_osp": (_composite, COMP, lambda s: {"seeds": s}),
    "fedmid_no_server_prox": (_composite, COMP, lambda s: {"seeds": s}),
    "fedavg_subgradient": (_composite, COMP, lambda s: {"seeds": s}),
    "primal_averaging": (_composite, dict(COMP, client_prox=True, server_prox=False), lambda s: {"seeds": s}),
}
# the public methods of fedcheck.algorithms (a new one must join METHODS)
PUBLIC_METHODS = set(METHODS) - {"federated"} | {"fedavg_rounds"}


def _start_of(problem) -> np.ndarray:
    """A start ``(B, p)`` different from the problem's own."""
    B = problem.B
    p = getattr(problem, "p", None) or getattr(problem, "d")
    return 0.01 * (1.0 + np.arange(B * p, dtype=float).reshape(B, p))


def _run(name, problem, x0=None, seed=0):
    make, kw, rand = METHODS[name]
    kw = dict(kw, **(rand(seed) if rand else {}))
    if name == "federated":
        return _FEDPROX(problem, rounds=T, x0=x0, **kw)
    if name == "run_fedavg":
        start = problem.x0()[:, 0, :] if x0 is None else x0
        return A.run_fedavg(start, pieces.static_oracle(problem.loss.grad), rounds=T, n=problem.n, iterates=True, **kw)
    fn = getattr(A, name)
    if x0 is not None:
        kw["x0"] = x0
    return fn(problem, rounds=T, **kw)


def _server_start(name, trace):
    """The recorded start's server point, from what each method records."""
    if name == "switching_subgradient":
        return trace.metrics["w"][0]
    if name == "run_fedavg":
        return trace.metrics["x"][0]
    return None


def test_every_public_method_is_covered():
    exported = {n for n in A.__all__ if callable(getattr(A, n)) and getattr(A, n).__module__.startswith(
        "fedcheck.algorithms") and inspect.isfunction(getattr(A, n))}
    helpers = {"default_recorder", "evaluate_schedule", "record_grid", "run_recorded", "with_iterates", "federated",
               "fw_gap", "fw_recorder", "switching_weight", "per_row", "minibatch_oracle", "approx_prox", "start_point",
               "local_step_args", "drive_rounds", "replicate_seeds"}
    assert exported - helpers == PUBLIC_METHODS


@pytest.mark.parametrize("name", sorted(METHODS))
def test_keywords_rounds_and_x0(name):
    fn = _FEDPROX if name == "federated" else getattr(A, name)
    params = inspect.signature(fn).parameters
    assert "rounds" in params
    passes_on = any(v.kind is inspect.Parameter.VAR_KEYWORD for v in params.values())   # to the family's method
    assert "x0" in params or passes_on or name == "run_fedavg"   # FedAvg's start is its first argument, x0


@pytest.mark.parametrize("name", sorted(METHODS))
def test_trace_row_zero_is_the_start_and_seeds_reproduce(name):
    problem = METHODS[name][0]()
    tr = _run(name, problem, seed=3)
    assert isinstance(tr, A.Trace)
    done = tr.completed
    assert done[0] == 0 and done[-1] == T and np.all(np.diff(done) > 0)
    assert np.array_equal(done, np.asarray(tr.rounds) - tr.start)
    for k, v in tr.metrics.items():
        assert np.shape(v)[0] == len(tr.rounds), k
    again = _run(name, problem, seed=3)
    assert np.array_equal(again.rounds, tr.rounds)
    for k, v in tr.metrics.items():
        np.testing.assert_array_equal(again.metrics[k], v, err_msg=k)
    if METHODS[name][2] is not None:
        other = _run(name, problem, seed=4)
        assert any(not np.array_equal(other.metrics[k], v, equal_nan=True) for k, v in tr.metrics.items()
                   if k not in ("comms",)) or name == "fedfw_sto"


@pytest.mark.parametrize("name", sorted(METHODS))
def test_x0_is_the_start(name):
    """Row 0 shows ``x0``: the recorded start differs from the default run's, and the first recorded value
    is the recorder's value at ``x0`` where the method records the point itself."""
    problem = METHODS[name][0]()
    x0 = _start_of(problem)
    tr = _run(name, problem, x0=x0, seed=1)
    base = _run(name, problem, seed=1)
    pt = _server_start(name, tr)
    if pt is not None:
        np.testing.assert_array_equal(pt, x0)
        return
    first = {k: np.asarray(v)[0] for k, v in tr.metrics.items() if k not in ("calls", "comms")}
    assert any(not np.allclose(first[k], np.asarray(base.metrics[k])[0]) for k in first)


def test_fedsgm_row_k_is_the_centralized_iterate_k():
    """One indexing across methods: row k of FedSGM (n = 1, E = 1) is row k of the centralized method."""
    fam = PX.ConstrainedFamily(kind="pl", n=1, m=6, d=3, start="infeasible")
    b = PS.ConstrainedBatch([fam.draw(s) for s in range(2)])
    tr = A.fedsgm(b, rounds=T, **SGM)
    ref = A.switching_subgradient(b, rounds=T, **SGM)
    np.testing.assert_array_equal(tr.completed, ref.completed)
    np.testing.assert_array_equal(tr.metrics["g"], np.stack([b.full_g(w) for w in ref.metrics["w"]]))


def test_fedfw_start_label_is_x1_and_completed_counts_rounds():
    """FedFW keeps its paper's labels (x^1 is the start: ``trace.rounds`` from 1), the same rows as every
    method's ``completed``."""
    tr = _run("fedfw", _fw_batch())
    assert tr.start == 1 and tr.rounds[0] == 1 and tr.completed[0] == 0
    tr = _run("fedmls", _lad_batch())
    assert tr.start == 0 and tr.rounds[0] == 0
