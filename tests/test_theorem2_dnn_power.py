"""Theorem 2 on a network can fail: the proof's descent step (49) is checked at every round t <= T of every run T
with L at its certified lower end (theorems/fedfw/networks.py), and a wrong constant is refuted by the run, while
(12), (52), (57) at these horizons could not have failed (they hold even with L = 0).  A user's bound above the
trivial bound everywhere is reported as vacuous: tests/test_vacuity.py (examples/mlp_claims.py times 1e6)."""
from dataclasses import replace

import sympy as sp

from fedcheck.core import verdict as V
from fedcheck.core.claim import RunConfig
from fedcheck.core.readings import Reading
from fedcheck.problems.networks import NetworkFamily
from fedcheck.symbols import G, G_nc, L

from theorems.fedfw import networks as N

TINY = NetworkFamily(data="synthetic", model="mlp", hidden=(5,), activation="tanh", n=3, features=6, classes=3,
                     samples=12, set="l2", radius=2.0)


def _claim(subs=None, **kw):
    ev = replace(N.theorem2_dnn.evidence, experiment=N.EveryHorizon(TINY, **{"seeds": 1, "horizon": 10, **kw}))
    c = replace(N.theorem2_dnn, evidence=ev)
    if subs is not None:
        r = N.theorem2_dnn.readings[0]
        c = replace(c, readings=(replace(r, substitutions={G: G_nc, **subs}),))
    return c


def _power(res):
    return next(v for k, v in res.readings.items() if k.startswith("power"))


def test_the_descent_step_is_checked_at_every_round_and_bites():
    res = _claim().run(RunConfig())
    assert res.verdict == V.HOLDS, res.reason
    assert res.readings["(49)"]["verdict"] == V.HOLDS
    assert res.evidence["points_of_49"] == 10 * 11 // 2               # rounds t <= T for T = 1..10
    assert res.vacuity["findings"]["(49)"] == "not vacuous"          # (49) could have failed on this run
    assert "(49)" not in res.headline and "vacuous" in res.headline  # the headline names only the vacuous ones
    p = _power(res)
    assert p["verdict"] == V.HOLDS and not p["paper"]
    assert 0 < res.evidence["smallest_L_admitted_by_49"]["sup"] <= res.instances[0]["constants"]["L"]["lo"]


def test_a_wrong_smoothness_constant_is_refuted_by_the_run():
    """L = 0 (Lemma 1's Lhat = L/n + lambda reduced to the penalty's lambda): (49) fails at every end of the
    interval, the claim is refuted -- while (12) still holds: the theorem's own bound could not have caught it."""
    res = _claim({L: sp.Integer(0)}).run(RunConfig())
    assert res.readings["(49)"]["verdict"] == V.VIOLATED
    assert res.readings["(12)"]["verdict"] == V.HOLDS
    assert res.verdict == V.VIOLATED


def test_a_smoothness_constant_below_the_runs_curvature_is_refuted():
    """L scaled below the smallest L the run admits (the reported step curvature) at its upper end: refuted."""
    base = _claim().run(RunConfig())
    Lmin = base.evidence["smallest_L_admitted_by_49"]["sup"]
    Lhi = base.instances[0]["constants"]["L"]["hi"]
    res = _claim({L: L * sp.Float(0.5 * Lmin / Lhi)}).run(RunConfig())
    assert res.readings["(49)"]["verdict"] == V.VIOLATED
    assert _power(res)["verdict"] == V.VIOLATED


def test_where_the_theorems_bounds_start_to_bite_is_declared():
    """Seed 0's crossings of each bound (at L's lower end) with its trivial bound, recomputed: inside the declared
    ranges' neighbourhood, and beyond the quick run's T <= 30 (so the quick run's three bounds are vacuous)."""
    import numpy as np
    from fedcheck.problems import network_solver
    from fedcheck.symbols import D, E_init, T, lambda_0, n
    from theorems.fedfw.bounds import Ghat_52, bound_12, delta_57
    assert {b.name: b.bites_from for b in N.theorem2_dnn.evidence.bounds if b.name != "(49)"} == N.THEOREM2_DNN_BITES
    inst = N.THEOREM2_DNN_FAMILY.draw(0)
    info = network_solver(inst).info
    E, Gi, Li = info["E"], info["G"], info["L"]
    rn, Dd, lam0 = np.sqrt(inst.n), float(inst.set.diameter), 0.01
    base = {n: float(inst.n), D: Dd, lambda_0: lam0, G: G_nc}
    Ts = np.logspace(0, 12, 1201)
    trivial = {"(12)": rn * Gi.hi * Dd + 0 * Ts, "(52)": (Gi.hi + lam0 * Ts ** (1 / 3) * rn * Dd) * rn * Dd,
               "(57)": rn * Dd + 0 * Ts}
    first = {}
    for name, e in (("(12)", bound_12), ("(52)", Ghat_52), ("(57)", delta_57)):
        f = sp.lambdify((E_init, G_nc, L, T), sp.sympify(e).subs(base), "numpy")
        bites = np.nonzero(f(E.lo, Gi.lo, Li.lo, Ts) < trivial[name])[0]
        first[name] = Ts[bites[0]]
    assert 60 < first["(52)"] < 160
    assert 1e4 < first["(57)"] < 2e4
    assert 1e8 < first["(12)"] < 1e9
