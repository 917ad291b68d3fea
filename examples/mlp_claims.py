"""A user's own neural-network problem: a small tanh MLP family, FedFW run on it, and a gap bound checked.

    fedcheck verify --theorem-file examples/mlp_claims.py mlpdemo

The family is :class:`fedcheck.problems.NetworkFamily` (any width, activation, data, set); its instances batch like
every other problem, so FedFW (:func:`fedcheck.algorithms.fedfw`) and the generic :class:`fedcheck.Horizons`
experiment run it unchanged.  The runner below is all the glue: one FedFW run per horizon ``T`` with that horizon's
step and penalty, and the smallest Frank-Wolfe gap of the server point over the iterates ``1..T``.  The bound is
FedFW's Theorem 2, written out again as a user would (the catalog's own check is ``fedcheck verify
fedfw.theorem2_dnn``):

    min_{t <= T} gap(xbar^t) <= Ghat + (G + L D) delta,
    Ghat  = (E + n D^2 lambda_0 / 2) T^(-1/3) + (L D^2 / 2) T^(-2/3),
    delta = G / (lambda_0 T^(1/3)) + sqrt((E / lambda_0 + n D^2 / 2) T^(-2/3) + L D^2 / (2 lambda_0) T^(-1)).

A network's L, G and E cannot be computed exactly: :func:`fedcheck.problems.network_solver` brackets each by a
certified interval, and the constants resolve to the *upper* ends.  Any L' >= L is a valid smoothness constant (and
likewise G' >= G; the bound grows with E), so the bound evaluated here is Theorem 2's bound for valid constants:
"holds" says the theorem holds with these certified constants (weaker than with the exact ones, which
``fedfw.theorem2_dnn`` decides at both ends of the intervals).

The FW gap cannot exceed ``sup ||grad F|| diam(D) <= sqrt(n) G D`` (:func:`fedcheck.experiments.fw_gap_trivial`, with
the certified upper end of G): declared as the metric's trivial bound, it makes the result say whether the bound
could have failed at these horizons ("holds (vacuous at these horizons: ...)" when it is above it everywhere).
"""
import numpy as np
import sympy as sp

from fedcheck import Bound, BoundTest, Claim, Domain, HorizonCase, Horizons, Paper
from fedcheck.algorithms import fedfw
from fedcheck.algorithms.fedfw_variants import fw_recorder
from fedcheck.experiments import fw_gap_trivial
from fedcheck.problems import InstanceBatch, NetworkFamily, network_solver
from fedcheck.symbols import D, E_init, G_nc, L, T, lambda_0, n

MINE = Paper(key="mlpdemo", title="FedFW's Theorem 2 on my own MLP", authors="me")

# 4 clients, 10 features, 3 labels (synthetic(0.5, 0.5) data, 20 samples per source), one hidden layer of 8 tanh
# units: p = 10*8 + 8 + 8*3 + 3 = 115 parameters on the l2 ball of radius 2; IID split; a common random start.
SMALL_MLP = NetworkFamily(data="synthetic", model="mlp", hidden=(8,), activation="tanh", n=4, features=10,
                          classes=3, samples=20, set="l2", radius=2.0)


def min_gap_runner(instances, solutions, schedules, T, settings, run_seeds):
    """FedFW for ``T`` rounds with each row's constant ``eta`` and ``lam``; ``min_{t<=T} gap(xbar^t)`` per row."""
    batch = InstanceBatch(instances)
    eta = np.broadcast_to(schedules["eta"], (T, batch.B)).copy()
    lam = np.broadcast_to(schedules["lam"], (T, batch.B)).copy()
    trace = fedfw(batch, eta=eta, lam=lam, rounds=T, grid=np.arange(1, T + 2), recorder=fw_recorder(batch))
    return {"min_gap": trace.metrics["gap"][:T].min(0)}


Ghat = (E_init + n * D**2 * lambda_0 / 2) * T ** sp.Rational(-1, 3) + L * D**2 / 2 * T ** sp.Rational(-2, 3)
delta = G_nc / (lambda_0 * T ** sp.Rational(1, 3)) + sp.sqrt(
    (E_init / lambda_0 + n * D**2 / 2) * T ** sp.Rational(-2, 3) + L * D**2 / (2 * lambda_0) / T)

mlp_gap = Claim(
    id="mlpdemo.theorem2_gap", paper=MINE, reference="FedFW Theorem 2 on a tanh MLP",
    title="FedFW on a small tanh MLP: min_{t<=T} gap(xbar^t) <= Theorem 2's bound (certified upper constants)",
    statement="FedFW with eta = T^(-2/3), lambda = lambda_0 T^(1/3) from a common start: the FW gap bound of Theorem 2",
    evidence=BoundTest(
        Horizons(runner=min_gap_runner, solver=network_solver,
                 cases=(HorizonCase("tanh MLP 10-8-3, 4 clients", SMALL_MLP, seeds=2, horizons=(5, 10, 20, 40)),),
                 schedules={"eta": T ** sp.Rational(-2, 3), "lam": lambda_0 * T ** sp.Rational(1, 3)},
                 trivial={"min_gap": fw_gap_trivial(G_nc)}),
        bounds=(Bound("(12)", Ghat + (G_nc + L * D) * delta, metric="min_gap",
                      description="min_{t<=T} gap(xbar^t), the Frank-Wolfe gap of the server point"),)),
    params={"lambda_0": 0.1},
    domain=Domain(params={"lambda_0": ">0"}),
    expected="holds")
