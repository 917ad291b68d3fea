"""FedMLS's compiled LAD path (``fedcheck.algorithms.fedmls_jit``) against the numpy reference it replaces.

The tolerance is zero: the kernels do numpy's operations in numpy's (BLAS's, einsum's, pairwise) order, and
the run takes them only when a probe found this machine's numpy summing that way.  Where the probe declines
(another BLAS or CPU), the equality tests skip and say so; the gate itself is tested to decline.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedcheck.algorithms import mls as M
from fedcheck.algorithms import fedmls_jit as J
from fedcheck.problems import losses as L
from fedcheck.problems.instances import InstanceBatch
from theorems.fedmls.problems import HingeFamily, LADFamily

needs_numba = pytest.mark.skipif(J._lad_prox_c is None, reason="numba is off (FEDCHECK_JIT=0 or absent)")


def _lad_batch(n, m, p, B=4, seed=0):
    fam = LADFamily(n=n, m=m, p=p, heterogeneity=0.5)
    return InstanceBatch([fam.draw(seed + s) for s in range(B)])


def _need_probe(kind, m, p):
    if J._probe(kind, m, p, M._numpy_prox_steps) is None:
        pytest.skip(f"this numpy sums LAD's {kind} for m={m}, p={p} in another order: the compiled path declines")


def _numpy_only(monkeypatch):
    monkeypatch.setattr(M, "lad_prox_steps", lambda *a: None)
    monkeypatch.setattr(M, "_compiled_prox_steps", lambda *a: None)
    monkeypatch.setattr(M, "round_kernels", lambda *a: None)
    monkeypatch.setattr(J, "lad_full_value", lambda loss: None)


@needs_numba
@pytest.mark.parametrize("n,m,p", [(32, 12, 3), (4, 12, 3), (3, 5, 3), (5, 13, 2), (2, 1, 3), (7, 9, 2)])
def test_fedmls_compiled_equals_numpy_bit_for_bit(monkeypatch, n, m, p):
    _need_probe("prox", m, p)
    _need_probe("F", m, p)
    batch = _lad_batch(n, m, p, B=5, seed=3 * m + p)
    B, T = batch.B, 40
    k = np.arange(1, T + 1, dtype=float)[:, None]
    lam = np.broadcast_to(1.0 / k, (T, B)).copy()
    Tk = np.broadcast_to(np.minimum(np.ceil(k / 3.0), 8.0), (T, B)).copy()
    Tk[::5, 1] = 0.0                                    # per-instance step counts: frozen rows
    Tk[::3, 2] += 1.0
    R = np.array([10.0, 0.3, 1.0, 5.0, 0.05])           # small radii: the projection is active
    calls = []
    kernel = J._lad_prox_c
    monkeypatch.setattr(J, "_lad_prox_c", lambda *a: calls.append(1) or kernel(*a))
    assert J.round_kernels(B, n, p) is not None, "the compiled round declined"
    fast = M.fedmls(batch, rounds=T, lam=lam, T=Tk, R=R)
    assert calls, "the compiled path was not taken"
    monkeypatch.undo()
    _numpy_only(monkeypatch)
    ref = M.fedmls(batch, rounds=T, lam=lam, T=Tk, R=R)
    for key in ("x", "y", "z", "xi", "yi", "zi"):
        assert np.array_equal(fast.final[key], ref.final[key]), key
    for name, v in ref.metrics.items():
        assert np.array_equal(fast.metrics[name], v), name


@needs_numba
def test_mopes_compiled_equals_numpy_bit_for_bit(monkeypatch):
    _need_probe("prox", 12, 3)
    batch = _lad_batch(6, 12, 3, B=3, seed=11)
    T = 25
    kw = dict(rounds=T, lam=np.full((T, 3), 0.5), T=np.full((T, 3), 4.0), R=2.0)
    fast = M.mopes(batch, **kw)
    _numpy_only(monkeypatch)
    ref = M.mopes(batch, **kw)
    for key in ("X", "Xp", "Z", "Zp"):
        assert np.array_equal(fast.final[key], ref.final[key]), key


@needs_numba
@pytest.mark.parametrize("n,m,p", [(32, 12, 3), (3, 7, 2), (300, 12, 3), (129, 20, 2), (1, 1, 3), (5, 131, 3), (9, 16, 3)])
def test_lad_F_compiled_equals_full_value_bit_for_bit(n, m, p):
    """Includes more than 128 clients (numpy's pairwise sum splits in halves there)."""
    _need_probe("F", m, p)
    rng = np.random.default_rng(n * m * p)
    loss = L.LAD(rng.standard_normal((3, n, m, p)), rng.standard_normal((3, n, m)))
    F = J.lad_full_value(loss)
    assert F is not None
    for scale in (1e-3, 1.0, 1e3):
        x = scale * rng.standard_normal((3, p))
        assert np.array_equal(F(x), loss.full_value(x))


@needs_numba
def test_the_compiled_lad_path_declines_what_it_does_not_cover():
    _need_probe("prox", 12, 3)      # where this numpy sums in another order, the path declines everything anyway
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((2, 3, 12, 3)), rng.standard_normal((2, 3, 12))
    U = np.zeros((2, 3, 3))
    args = (U, U.copy(), U.copy(), np.ones(2), np.array([2, 2]), np.ones(2), 2, M._numpy_prox_steps)
    assert J.lad_prox_steps(L.LAD(A, b).grad, *args) is not None
    assert J.lad_prox_steps(L.LAD(A, b, kernel="einsum").grad, *args) is None      # another order
    assert J.lad_prox_steps(lambda X: L.LAD(A, b).grad(X), *args) is None           # a user's / minibatch oracle
    A4 = rng.standard_normal((2, 3, 12, 4))
    assert J.lad_prox_steps(L.LAD(A4, b).grad, np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), np.zeros((2, 3, 4)),
                            *args[3:]) is None                                       # p = 4: not written
    hinge = InstanceBatch([HingeFamily(n=3, m=16, p=3).draw(0)]).loss
    assert J.lad_prox_steps(hinge.grad, U[:1], U[:1].copy(), U[:1].copy(), np.ones(1), np.array([2]), np.ones(1),
                            2, M._numpy_prox_steps) is None
    assert J.lad_full_value(hinge) is None and J.lad_full_value(L.LAD(A, b, kernel="einsum")) is None
    assert J.lad_prox_steps(L.LAD(A, b).grad, U[:1], *args[1:]) is None              # shapes that do not match


@needs_numba
def test_the_probe_declines_a_kernel_that_sums_in_another_order(monkeypatch):
    """A kernel whose order is not numpy's must not be used: the probe compares bit for bit."""
    monkeypatch.setattr(J, "_probed", {})
    kernel = J._lad_prox_c

    def off_by_an_ulp(A, b, U, Ut, *rest):
        kernel(A, b, U, Ut, *rest)
        U *= 1.0 + 2.0 ** -52
    monkeypatch.setattr(J, "_lad_prox_c", off_by_an_ulp)
    assert J._probe("prox", 12, 3, M._numpy_prox_steps) is None
    rng = np.random.default_rng(1)
    loss = L.LAD(rng.standard_normal((2, 3, 12, 3)), rng.standard_normal((2, 3, 12)))
    U = np.zeros((2, 3, 3))
    assert J.lad_prox_steps(loss.grad, U, U.copy(), U.copy(), np.ones(2), np.array([2, 2]), np.ones(2), 2,
                            M._numpy_prox_steps) is None


@needs_numba
def test_fedmls_compiled_round_on_another_loss_equals_numpy(monkeypatch):
    """The round's compiled shift and tail are loss-independent: on hinge (numpy's oracle) the same bits too."""
    batch = InstanceBatch([HingeFamily(n=6, m=16, p=3).draw(s) for s in range(3)])
    if J.round_kernels(3, 6, 3) is None:
        pytest.skip("this numpy averages the clients in another order: the compiled round declines")
    kw = dict(rounds=30, lam=np.full((30, 3), 0.7), T=np.full((30, 3), 3.0), R=5.0)
    fast = M.fedmls(batch, **kw)
    _numpy_only(monkeypatch)
    ref = M.fedmls(batch, **kw)
    for key in ("x", "y", "z", "xi", "yi", "zi"):
        assert np.array_equal(fast.final[key], ref.final[key]), key


@needs_numba
@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 40), m=st.integers(1, 20), p=st.sampled_from([2, 3]), seed=st.integers(0, 2**31 - 1),
       steps=st.integers(1, 9), radius=st.sampled_from([0.01, 1.0, 1e3]))
def test_lad_prox_steps_equal_numpy_on_random_shapes(n, m, p, seed, steps, radius):
    """The fused steps against approx-prox's numpy loop with LAD's own ``grad``, bit for bit, on random
    shapes, step counts (frozen instances) and radii (the ball active or not)."""
    _need_probe("prox", m, p)
    rng = np.random.default_rng(seed)
    B = 3
    loss = L.LAD(rng.standard_normal((B, n, m, p)), rng.standard_normal((B, n, m)))
    U0 = rng.standard_normal((B, n, p)) * 10.0 ** rng.integers(-2, 3)
    V = rng.standard_normal((B, n, p))
    scale = rng.uniform(0.01, 50.0, B)
    T = rng.integers(0, steps + 1, B)
    T[0] = steps
    R = np.full(B, radius)
    got = J.lad_prox_steps(loss.grad, U0.copy(), U0.copy(), V, scale, T, R, steps, M._numpy_prox_steps)
    assert got is not None
    ref = M._numpy_prox_steps(loss.grad, U0.copy(), U0.copy(), V, scale[:, None, None], T, R[:, None, None],
                              steps, False)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])


@needs_numba
@pytest.mark.parametrize("n,m,p", [(2, 12, 3), (5, 7, 2), (3, 1, 3), (9, 12, 2)])
@pytest.mark.parametrize("T", [[6, 6, 6, 6], [5, 0, 3, 9]])
def test_dcs_inner_steps_compiled_equal_numpy_bit_for_bit(monkeypatch, n, m, p, T):
    """DCS's communication sliding with the LAD subgradient fused in (``dcs_inner``) gives numpy's iterates, the
    whole trace and the final state, bit for bit -- all instances stepping, and instances with fewer (or no) steps."""
    from fedcheck.algorithms import sliding as D
    if J._probe("dcs", m, p, D._numpy_inner) is None:
        pytest.skip(f"this numpy sums LAD's DCS steps for m={m}, p={p} in another order: the compiled path declines")
    batch = _lad_batch(n, m, p)
    kw = dict(rounds=12, T=np.array(T)[None, :] * np.ones((12, 1), dtype=int), R=np.array([0.5, 1.0, 3.0, 50.0]),
              grid=np.arange(1, 14))
    calls = []
    real = J.dcs_inner
    monkeypatch.setattr(D, "dcs_inner", lambda *a: calls.append(real(*a)) or calls[-1])
    fast = D.dcs(batch, **kw)
    assert calls and all(c is not None for c in calls)          # every outer iteration took the compiled steps
    monkeypatch.setattr(D, "dcs_inner", lambda *a: None)
    ref = D.dcs(batch, **kw)
    for k in ref.metrics:
        np.testing.assert_array_equal(fast.metrics[k], ref.metrics[k], err_msg=k)
    for k in ref.final:
        np.testing.assert_array_equal(fast.final[k], ref.final[k], err_msg=k)


@needs_numba
def test_dcs_inner_declines_what_it_does_not_cover():
    from fedcheck.algorithms import sliding as D
    batch = _lad_batch(3, 5, 4)                                         # p = 4: not a covered shape
    x = np.zeros((4, 3, 4))
    e = np.ones((4, 1, 1))
    args = (x, x, x, e, np.ones(4), np.array([2, 2, 2, 2]), 2, D._numpy_inner)
    assert J.dcs_inner(batch.loss.grad, *args) is None
    assert J.dcs_inner(lambda X: batch.loss.grad(X), *args) is None    # not the library's own bound grad
    b3 = _lad_batch(3, 5, 3)
    x3 = np.zeros((4, 3, 3))
    assert J.dcs_inner(b3.loss.grad, x3, x3, x3, e, np.ones(3), np.array([2, 2, 2, 2]), 2, D._numpy_inner) is None


@needs_numba
@pytest.mark.parametrize("m,p", [(12, 3), (12, 2), (5, 3), (1, 3)])
def test_the_probe_accepts_openblas_haswell_kernels(m, p):
    """OpenBLAS's Haswell kernels (its choice on AMD CPUs with AVX-512 too) sum LAD's subgradient with every
    product rounded (its C tail compiled without FMA contraction) and its residuals with FMA: orders the
    kernels are written for, so the peer benchmark's shape (m = 12, p = 3) takes the compiled path there."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    if not blas or blas[0].get("internal_api") != "openblas" or blas[0].get("architecture") != "Haswell":
        pytest.skip(f"numpy's BLAS is not OpenBLAS's Haswell kernels: {blas[:1]}")
    from fedcheck.algorithms import sliding as D
    assert J._probe("prox", m, p, M._numpy_prox_steps) is not None
    assert J._probe("dcs", m, p, D._numpy_inner) is not None
    assert J._probe("F", m, p) is not None


@needs_numba
@pytest.mark.parametrize("m", [1, 3, 4, 9, 12])
def test_the_subgradient_order_without_contraction_is_dgemv_n_s(m):
    """``gorder`` 1 sums ``(S[:, i]^T A_i)_k`` as ``dgemv_n``'s C tail compiled without contraction: blocks of
    4 rows as ``t + (a_j s_j + a_(j+1) s_(j+1))`` twice, then ``t + a_j s_j``, then ``0 + t``."""
    rng = np.random.default_rng(m)
    B, n, p = 2, 5, 3
    A, b = rng.standard_normal((B, n, m, p)), rng.standard_normal((B, n, m))
    AT, bT = J._transposed(A, b)
    X = rng.standard_normal((B, n, p))
    G = np.empty((B, n, p))
    J._lad_grad_c(AT, bT, X, 0, 1, G, np.empty((B, n, 2)), np.empty((p, n)), np.empty((p, n)), np.empty((m, n)))
    s = np.sign(np.matmul(A, X[..., None])[..., 0] - b) / m
    for bi in range(B):
        for i in range(n):
            for k in range(p):
                a, sv, t, j = A[bi, i, :, k].tolist(), s[bi, i].tolist(), 0.0, 0
                while j + 4 <= m:
                    t = t + (a[j] * sv[j] + a[j + 1] * sv[j + 1])
                    t = t + (a[j + 2] * sv[j + 2] + a[j + 3] * sv[j + 3])
                    j += 4
                for q in range(j, m):
                    t = t + a[q] * sv[q]
                assert G[bi, i, k] == 0.0 + t
