"""Least squares in factored form (to save memory): ``A_i^T (A_i x - b_i) / m`` instead of stacked ``H_i``.

The factored form is what large instances (``m < p`` and stacked ``H`` over ``FACTOR_LIMIT_BYTES``) use;
these tests force it on small instances and compare every quantity with the ``H`` form."""
import numpy as np
import pytest

from fedcheck.problems import losses as L
from fedcheck.problems.constants import sup_grad_norm_sq
from fedcheck.problems.instances import InstanceBatch, RandomFamily


def _pair(monkeypatch, n=6, m=4, p=9, set_="l1"):
    inst = RandomFamily(n=n, m=m, p=p, set=set_).draw(3)
    dense = L.LeastSquares(inst.A, inst.b)
    monkeypatch.setattr(L, "FACTOR_LIMIT_BYTES", -1)
    fact = L.LeastSquares(inst.A, inst.b)
    assert not dense.factored and fact.factored and fact.__dict__.get("_H") is None
    return inst, dense, fact


def test_gradients_and_values_agree(monkeypatch):
    inst, dense, fact = _pair(monkeypatch)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, inst.n, inst.p))
    np.testing.assert_allclose(fact.grad(X), dense.grad(X), rtol=1e-12, atol=1e-12)
    x = rng.standard_normal((5, inst.p))
    np.testing.assert_allclose(fact.full_grad(x), dense.full_grad(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fact.value(X), dense.value(X), rtol=1e-13)
    assert fact.__dict__.get("_H") is None            # nothing above formed H
    np.testing.assert_allclose(fact.H, dense.H)       # on demand it is still there


def test_stacked_qr_without_q(monkeypatch):
    """The large-instance QR (R of [A | b], no Q) gives the same F as the residual form."""
    inst = RandomFamily(n=4, m=30, p=6).draw(1)       # n m > p: the QR path
    monkeypatch.setattr(L, "FACTOR_LIMIT_BYTES", -1)
    fact = L.LeastSquares(inst.A, inst.b)
    fact.factored = True                              # m > p here: force the large-instance branch
    x = np.random.default_rng(2).standard_normal((3, inst.p))
    direct = fact.value(np.broadcast_to(x[:, None, :], (3, inst.n, inst.p))).mean(-1)
    np.testing.assert_allclose(fact.full_value(x), direct, rtol=1e-12)


@pytest.mark.parametrize("set_", ["l1", "simplex", "l2", "box"])
def test_sup_grad_norm_agrees(monkeypatch, set_):
    import fedcheck.problems.suprema as C
    inst, dense, fact = _pair(monkeypatch, set_=set_)
    s_dense, ex_d, _ = sup_grad_norm_sq(dense, inst.set)
    monkeypatch.setattr(C, "_ENUM_LIMIT_BYTES", 8 * inst.n * inst.p * 4)   # chunk the enumeration too
    s_fact, ex_f, _ = sup_grad_norm_sq(fact, inst.set)
    assert ex_d == ex_f
    np.testing.assert_allclose(s_fact, s_dense, rtol=1e-10)


def test_fedfw_runs_factored_with_same_iterates(monkeypatch):
    from fedcheck.algorithms.fedfw import fedfw
    from fedcheck.algorithms.kernels import FactoredGrad, make_grad_kernel
    fam = RandomFamily(n=5, m=4, p=12)
    insts = [fam.draw(s) for s in range(3)]
    T = 200
    eta = np.broadcast_to((2.0 / (np.arange(1, T + 1) + 1))[:, None], (T, 3)).copy()
    lam = np.broadcast_to(np.sqrt(np.arange(1, T + 1) + 1.0)[:, None], (T, 3)).copy()
    ref = fedfw(InstanceBatch(insts), eta, lam, T)
    monkeypatch.setattr(L, "FACTOR_LIMIT_BYTES", -1)
    batch = InstanceBatch(insts)
    assert isinstance(make_grad_kernel(batch.loss, 0.2), FactoredGrad)
    got = fedfw(batch, eta, lam, T)
    np.testing.assert_allclose(got.final["xbar"], ref.final["xbar"], atol=1e-9)
