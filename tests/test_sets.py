"""Every LMO, projection and support function against cvxpy; deterministic zero directions."""
import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fedcheck.problems.sets import Box, L1Ball, L2Ball, NuclearBall, ProductSet, Simplex, make_set, stack_sets

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
SETTINGS = settings(max_examples=25, deadline=None)


def vector_sets():
    return st.builds(lambda kind, r, p: kind(r, p), st.sampled_from([L1Ball, L2Ball, Box, Simplex]),
                     st.floats(0.1, 5.0), st.integers(1, 7))


def all_sets():
    nuclear = st.builds(lambda r, a, b: NuclearBall(r, (a, b)), st.floats(0.1, 5.0), st.integers(1, 4), st.integers(1, 4))
    product = st.builds(lambda a, b: ProductSet((a, b)), vector_sets(), vector_sets())
    return st.one_of(vector_sets(), nuclear, product)


def _reference(prob):
    """The cvxpy reference solved to an OPTIMAL status: Clarabel's defaults, and where they stop at
    ``optimal_inaccurate`` (a nuclear-ball projection of a point with many equal entries does), once more with
    tighter tolerances; a reference that is still not optimal fails the test."""
    prob.solve(solver=cp.CLARABEL)
    if prob.status != cp.OPTIMAL:
        prob.solve(solver=cp.CLARABEL, max_iter=500, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    assert prob.status == cp.OPTIMAL
    return prob


def _cvx_min(S, g):
    x = cp.Variable(S.dim)
    return _reference(cp.Problem(cp.Minimize(g @ x), S.cvx_constraints(x))).value


def _cvx_proj(S, y):
    x = cp.Variable(S.dim)
    _reference(cp.Problem(cp.Minimize(cp.sum_squares(x - y)), S.cvx_constraints(x)))
    return x.value


@SETTINGS
@given(all_sets(), st.data())
def test_lmo_matches_cvxpy(S, data):
    g = data.draw(arrays(float, S.dim, elements=finite))
    s = S.lmo(g)
    assert S.contains(s, 1e-9)
    ref = _cvx_min(S, g)
    assert g @ s == pytest.approx(ref, abs=1e-6 * (1 + abs(ref)))
    assert S.support(-g) == pytest.approx(-ref, abs=1e-6 * (1 + abs(ref)))


@SETTINGS
@given(all_sets(), st.data())
def test_projection_matches_cvxpy(S, data):
    y = data.draw(arrays(float, S.dim, elements=finite))
    x = S.project(y)
    assert S.contains(x, 1e-9)
    ref = _cvx_proj(S, y)
    # ours is at least as close as the interior-point solution (which is accurate to ~1e-5 here),
    # and the two agree (the projection is unique)
    assert np.sum((x - y) ** 2) <= np.sum((ref - y) ** 2) + 1e-7 * (1 + np.sum(y ** 2))
    assert np.linalg.norm(x - ref) <= 1e-3 * (1 + np.linalg.norm(y))
    # idempotent
    np.testing.assert_allclose(S.project(x), x, atol=1e-9)


def test_nuclear_projection_where_the_reference_needs_tighter_tolerances():
    """The example hypothesis found: Clarabel's defaults stop at ``optimal_inaccurate`` on it (6.6e-4 from the
    projection); the reference solved tighter agrees with ours."""
    a = -7.48828125
    S, y = NuclearBall(4.023840008374597, (4, 3)), np.array([6.076171875, a, a, a, a, a, 0.0, 9.109375, a, a, 0.0, 0.0])
    x = S.project(y)
    assert S.contains(x, 1e-9)
    ref = _cvx_proj(S, y)
    assert np.sum((x - y) ** 2) <= np.sum((ref - y) ** 2) + 1e-7 * (1 + np.sum(y ** 2))
    assert np.linalg.norm(x - ref) <= 1e-5 * (1 + np.linalg.norm(y))


@pytest.mark.parametrize("S", [L1Ball(2.0, 5), L2Ball(2.0, 5), Box(2.0, 5), Simplex(2.0, 5),
                               NuclearBall(2.0, (2, 3)), ProductSet((L1Ball(1.0, 2), Box(1.0, 3)))])
def test_zero_direction_is_deterministic(S):
    s1 = S.lmo(np.zeros(S.dim))
    s2 = S.lmo(np.zeros(S.dim))
    assert np.array_equal(s1, s2)
    assert S.contains(s1, 1e-12)
    # the same vertex in a batch, whatever the batch size
    sb = S.lmo(np.zeros((3, 4, S.dim)))
    assert np.array_equal(sb[2, 3], s1)


def test_zero_direction_convention():
    assert np.array_equal(L1Ball(1.0, 3).lmo(np.zeros(3)), [-1.0, 0, 0])
    assert np.array_equal(L2Ball(1.0, 3).lmo(np.zeros(3)), [-1.0, 0, 0])
    assert np.array_equal(Box(1.0, 3).lmo(np.zeros(3)), [-1.0, -1.0, -1.0])
    assert np.array_equal(Simplex(1.0, 3).lmo(np.zeros(3)), [1.0, 0, 0])


@pytest.mark.parametrize("S,expected", [(L1Ball(1.5, 4), 3.0), (L2Ball(1.5, 4), 3.0), (Box(1.5, 4), 6.0),
                                        (Simplex(1.5, 4), 1.5 * np.sqrt(2)), (NuclearBall(1.5, (2, 3)), 3.0)])
def test_exact_diameter(S, expected):
    assert float(S.diameter) == pytest.approx(expected, rel=1e-14)
    # attained by two extreme points: s = lmo(g) and lmo(-g) for a direction through a diameter
    rng = np.random.default_rng(0)
    best = 0.0
    for _ in range(200):
        g = rng.standard_normal(S.dim)
        best = max(best, np.linalg.norm(S.lmo(g) - S.lmo(-g)))
    if isinstance(S, Simplex):
        best = np.linalg.norm(S.lmo(-np.eye(4)[0]) - S.lmo(-np.eye(4)[1]))
    assert best <= expected * (1 + 1e-12)
    assert best >= 0.5 * expected


@SETTINGS
@given(vector_sets(), st.floats(1e-6, 1e-2))
def test_membership_tolerance(S, eps):
    rng = np.random.default_rng(1)
    x = S.lmo(rng.standard_normal(S.dim))
    assert S.contains(x, 1e-12)
    out = x * (1 + 10 * eps) if not isinstance(S, Simplex) else x + 10 * eps
    assert not S.contains(out, eps * 0.1)
    assert S.contains(out, 1e3)


def test_batched_radius_equals_per_instance():
    rng = np.random.default_rng(2)
    for name in ("l1", "l2", "box", "simplex"):
        sets = [make_set(name, r, 6) for r in (0.5, 1.0, 3.0)]
        SB = stack_sets(sets)
        G = rng.standard_normal((3, 4, 6))
        for k, S in enumerate(sets):
            np.testing.assert_allclose(SB.lmo(G)[k], S.lmo(G[k]))
            np.testing.assert_allclose(SB.project(G)[k], S.project(G[k]))
            np.testing.assert_allclose(SB.gauge(G)[k], S.gauge(G[k]))
            assert SB.take(k).radius == S.radius


def test_nuclear_lmo_is_rank_one():
    S = NuclearBall(2.0, (3, 4))
    s = S.lmo(np.random.default_rng(3).standard_normal(12)).reshape(3, 4)
    sv = np.linalg.svd(s, compute_uv=False)
    assert sv[0] == pytest.approx(2.0) and np.all(sv[1:] < 1e-12)


def test_unknown_set_name():
    with pytest.raises(ValueError, match="unknown set"):
        make_set("l3", 1.0, 3)


@pytest.mark.parametrize("shape,radius", [((7,), 2.0), ((4, 3, 6), 1.5), ((4, 3, 6), np.array([1.0, 2.0, 0.5, 3.0])),
                                          ((2, 5, 1), 1.0), ((0, 3), 1.0)])
def test_l1_lmo_is_the_take_put_along_axis_reference(shape, radius):
    """The L1 ball's LMO (a row gather and scatter) against the reference it replaced, bit for bit: the first largest
    |g_j| (ties, zeros), the sign convention sign(0) = +1, batched radii."""
    from fedcheck.problems.sets import _sign
    rng = np.random.default_rng(len(shape))
    S = L1Ball(radius, shape[-1])
    for g in (rng.standard_normal(shape), np.round(rng.standard_normal(shape)), np.zeros(shape), -np.ones(shape)):
        j = np.argmax(np.abs(g), axis=-1)[..., None]
        ref = np.zeros_like(g)
        if g.size:
            np.put_along_axis(ref, j, -_sign(np.take_along_axis(g, j, axis=-1)) * S._r(g), axis=-1)
        got = S.lmo(g)
        assert got.shape == ref.shape and np.array_equal(got, ref) and np.array_equal(np.signbit(got), np.signbit(ref))


@pytest.mark.parametrize("shape, radius", [((7, 5), 1.5), ((4, 3, 6), np.array([0.5, 1.0, 2.0, 3.0])),
                                           ((2, 3, 1), 2.0), ((3, 4), np.array([1.0, 0.0, 2.0]))])
def test_l2_oracles_are_the_linalg_norm_reference(shape, radius):
    """The L2 ball's LMO and projection (the norm as sqrt(add.reduce(x * x)), the masked forms only when a row needs
    them) against the numpy.linalg.norm forms they replaced, bit for bit: zero rows (LMO -r e_1), NaN rows, points
    inside, on and outside the ball, batched radii (one of them 0)."""
    rng = np.random.default_rng(len(shape))
    S = L2Ball(radius, shape[-1])
    g0 = rng.standard_normal(shape)
    cases = [g0, 3 * g0, g0 / 10, np.zeros(shape), np.where(np.arange(shape[-2])[:, None] == 1, 0.0, g0)]
    nan = g0.copy()
    nan[..., 0, 0] = np.nan
    cases.append(nan)
    for g in cases:
        nrm = np.linalg.norm(g, axis=-1, keepdims=True)
        e1 = np.zeros(g.shape[-1])
        e1[0] = 1.0
        ref_lmo = -S._r(g) * np.where(nrm > 0, g / np.where(nrm > 0, nrm, 1.0), e1)
        r = S._r(g)
        ref_proj = g * np.where(nrm > r, r / np.where(nrm > 0, nrm, 1.0), 1.0)
        for got, ref in ((S.lmo(g), ref_lmo), (S.project(g), ref_proj)):
            assert got.shape == ref.shape
            assert np.array_equal(got, ref, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(ref))
        assert S.project(g) is not g
