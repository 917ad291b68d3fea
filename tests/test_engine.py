"""The engine: metamorphic properties, reductions, schedules from the declaration, recording."""
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcheck.algorithms import evaluate_schedule, fedfw, frank_wolfe, record_grid
from fedcheck.problems.instances import Instance, InstanceBatch
from fedcheck.core.symbols import lambda_0, t
from fedcheck.testing import instances
from theorems.fedfw import theorem1

T = 200


def _sched(B, lam0):
    tt = np.arange(1, T + 1)
    eta = evaluate_schedule(theorem1.evidence.experiment.schedules["eta"], tt, {}, B)
    lam = evaluate_schedule(theorem1.evidence.experiment.schedules["lam"], tt, {"lambda_0": lam0}, B)
    return eta, lam


def _run(inst, lam0=1.0):
    batch = InstanceBatch([inst])
    eta, lam = _sched(1, lam0)
    return fedfw(batch, eta=eta, lam=lam, rounds=T, grid=np.arange(1, T + 2))


# Polytopes: the LMO returns a vertex, so the rounding differences of a permuted sum cannot grow.
# On the l2 ball the LMO -r g/||g|| amplifies them by 1/||g|| whenever the penalty balances the
# gradient, so there the relation is checked to a looser tolerance.
POLYTOPES = ("l1", "box", "simplex")


@settings(max_examples=15, deadline=None)
@given(instances(sets=POLYTOPES), st.randoms(use_true_random=False))
def test_permuting_clients_leaves_xbar_unchanged(inst, rnd):
    perm = list(range(inst.n))
    rnd.shuffle(perm)
    other = Instance(inst.A[perm], inst.b[perm], inst.loss, inst.set)
    a, b = _run(inst), _run(other)
    np.testing.assert_allclose(a.metrics["F"], b.metrics["F"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.final["xbar"], b.final["xbar"], rtol=1e-9, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(instances(sets=("l2",)), st.randoms(use_true_random=False))
def test_permuting_clients_on_the_l2_ball(inst, rnd):
    perm = list(range(inst.n))
    rnd.shuffle(perm)
    other = Instance(inst.A[perm], inst.b[perm], inst.loss, inst.set)
    a, b = _run(inst), _run(other)
    # the dynamics can be chaotic there (differences of 1e-16 reach 1e-3 within ~200 rounds on some
    # draws), so the relation is checked over the first 30 rounds, where amplification is still small
    np.testing.assert_allclose(a.metrics["F"][:31], b.metrics["F"][:31], rtol=1e-6, atol=1e-9)


@settings(max_examples=15, deadline=None)
@given(instances(sets=POLYTOPES))
def test_duplicating_clients_leaves_xbar_unchanged(inst):
    """Duplicating every client halves each client's weight 1/n in g_i; with the penalty per unit of
    weight kept (lambda_0 halved, exact in floating point) every LMO direction is scaled by 1/2, so
    the server point is unchanged.  (With lambda_0 kept the penalty doubles relative to the losses:
    FedFW is not invariant to client duplication at fixed lambda_0.)"""
    dup = Instance(np.concatenate([inst.A, inst.A]), np.concatenate([inst.b, inst.b]), inst.loss, inst.set)
    a, b = _run(inst, 1.0), _run(dup, 0.5)
    np.testing.assert_allclose(a.final["xbar"], b.final["xbar"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.metrics["F"], b.metrics["F"], rtol=1e-9, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(instances(n=st.just(1)))
def test_one_client_without_penalty_is_frank_wolfe(inst):
    batch = InstanceBatch([inst])
    eta, lam = _sched(1, 0.0)
    a = fedfw(batch, eta=eta, lam=lam, rounds=T)
    b = frank_wolfe(batch, eta=eta, rounds=T)
    assert np.array_equal(a.final["xbar"], b.final["xbar"])
    np.testing.assert_allclose(eta[:, 0], 2.0 / (np.arange(1, T + 1) + 1), rtol=0, atol=0)


def test_batch_equals_separate_runs():
    from theorems.fedfw import theorem1 as th
    insts = [th.evidence.experiment.family.draw(s) for s in range(3)]
    batch = InstanceBatch(insts)
    eta, lam = _sched(3, 1.0)
    together = fedfw(batch, eta=eta, lam=lam, rounds=T)
    for k, inst in enumerate(insts):
        alone = _run(inst)
        np.testing.assert_allclose(together.final["xbar"][k], alone.final["xbar"][0], rtol=1e-12, atol=1e-14)


def test_schedules_come_from_the_declaration():
    """The arrays the engine receives are the SymPy expressions of theorems/fedfw/claims.py, evaluated."""
    tt = np.arange(1, 50)
    lam = evaluate_schedule(theorem1.evidence.experiment.schedules["lam"], tt, {"lambda_0": 0.7}, 1)[:, 0]
    ref = [float(theorem1.evidence.experiment.schedules["lam"].subs({t: k, lambda_0: 0.7})) for k in tt]
    np.testing.assert_allclose(lam, ref, rtol=1e-15)
    assert sp.simplify(theorem1.evidence.experiment.schedules["eta"] - 2 / (t + 1)) == 0
    # a different declared schedule gives a different run
    inst = theorem1.evidence.experiment.family.draw(0)
    batch = InstanceBatch([inst])
    eta = evaluate_schedule(theorem1.evidence.experiment.schedules["eta"], np.arange(1, 101), {}, 1)
    lam_a = evaluate_schedule(theorem1.evidence.experiment.schedules["lam"], np.arange(1, 101), {"lambda_0": 1.0}, 1)
    lam_b = evaluate_schedule(theorem1.evidence.experiment.schedules["lam"], np.arange(1, 101), {"lambda_0": 5.0}, 1)
    a = fedfw(batch, eta=eta, lam=lam_a, rounds=100)
    b = fedfw(batch, eta=eta, lam=lam_b, rounds=100)
    assert not np.allclose(a.final["X"], b.final["X"])


def test_record_grid():
    g = record_grid(1000)
    assert np.array_equal(g, np.arange(1, 1001))
    g = record_grid(100001)
    assert g[-1] == 100001 and np.all(np.diff(g) > 0)
    assert np.array_equal(g[:1000], np.arange(1, 1001))
    for lo in (1e3, 1e4):
        inside = g[(g >= lo) & (g < 10 * lo)]
        assert len(inside) >= 50


def test_clients_start_at_zero_or_given_point():
    inst = theorem1.evidence.experiment.family.draw(0)
    tr = _run(inst)
    # the compiled recorder sums F in another order than the numpy loss: equal to rounding (a few ulps), and
    # far from F at any other start
    F0 = inst.make_loss().full_value(np.zeros(inst.p))
    assert tr.metrics["F"][0, 0] == pytest.approx(F0, rel=1e-14, abs=0)
    x0 = inst.set.lmo(np.ones(inst.p))
    inst2 = Instance(inst.A, inst.b, inst.loss, inst.set, x0=x0)
    tr2 = _run(inst2)
    F1 = inst.make_loss().full_value(x0)
    assert tr2.metrics["F"][0, 0] == pytest.approx(F1, rel=1e-14, abs=0) and abs(F1 - F0) > 1e-6
