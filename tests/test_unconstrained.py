"""R^p as a set (``fedcheck.problems.Unconstrained``): projection is the identity, every point is inside, the exact
solve is the closed-form least-squares minimizer, the strongly convex constants are exact there, and a Frank-Wolfe
method refuses it in one line."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedcheck.core.errors import BadInput
from fedcheck.problems import Instance, Unconstrained
from fedcheck.problems.constants import InstanceContext, resolve
from fedcheck.problems.solve import solve_consensus


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_projection_is_the_identity_and_everything_is_inside(p, seed):
    S = Unconstrained(np.inf, p)
    x = np.random.default_rng(seed).standard_normal((3, p)) * 1e6
    assert np.array_equal(S.project(x), x) and S.contains(x).all() and S.diameter == np.inf


def _instance(seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((3, 10, 4))
    b = rng.standard_normal((3, 10))
    return Instance(A=A, b=b, loss="least_squares", set=Unconstrained(np.inf, 4), source="test")


@pytest.mark.parametrize("seed", [0, 1])
def test_the_exact_solve_is_the_least_squares_minimizer(seed):
    inst = _instance(seed)
    sol = solve_consensus(inst, use_cache=False)
    x = np.linalg.lstsq(inst.A.reshape(-1, 4), inst.b.reshape(-1), rcond=None)[0]
    assert np.allclose(sol.x_star, x, atol=1e-6)
    g = resolve("Gamma", InstanceContext(inst, inst.make_loss(), sol, {}))
    assert g.exact and g.value >= 0


def test_frank_wolfe_refuses_it_in_one_line():
    with pytest.raises(BadInput, match="no linear minimization oracle") as e:
        Unconstrained(np.inf, 3).lmo(np.ones(3))
    assert "\n" not in str(e.value)
