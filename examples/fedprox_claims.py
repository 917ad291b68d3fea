"""A method fedcheck does not ship (FedProx) and two claims about it, in a user's own file.

    fedcheck verify --theorem-file examples/fedprox_claims.py mine

FedProx (Li et al., 2020): each round every client starts from the server point x and takes
``local_steps`` projected gradient steps on its proximal objective ``f_i(y) + mu/2 ||y - x||^2``; the
server averages.  The round function below is all there is to the method: fedcheck batches it over
instances and runs it like its own methods.
"""
import numpy as np
import sympy as sp

from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Reading, Rounds
from fedcheck.algorithms import federated, pieces
from fedcheck.problems import RandomFamily
from fedcheck.symbols import D, L, t

MINE = Paper(key="mine", title="My conjectures about FedProx", authors="me")
mu = sp.Symbol("mu", positive=True)


def fedprox_round(X, x, ctx, *, eta, mu, local_steps=1):
    """One FedProx round: inexact proximal steps on every client from the server point, then the mean."""
    Y = pieces.local_steps(ctx, ctx.broadcast(x), eta, local_steps, anchor=x, mu=mu)
    return Y, Y.mean(1)


fedprox = federated(fedprox_round, name="FedProx")

def common_minimizer_inside(inst) -> bool:
    """The premise of conjecture 1: one point minimizes every client's least squares, and it lies in the set."""
    A, b = inst.A.reshape(-1, inst.p), inst.b.reshape(-1)
    x = np.linalg.lstsq(A, b, rcond=None)[0]
    return bool(np.linalg.norm(A @ x - b) <= 1e-9 * max(1.0, np.linalg.norm(b)) and np.all(inst.set.contains(x, 1e-9)))


# Clients with a common minimizer inside the set (outside < 1, no noise): FedProx with one local step and
# eta = 1/L is gradient descent on F, so F(x^t) - F* <= L D^2 / (2 (t - 1)).
COMMON = RandomFamily(loss="least_squares", set="l2", n=8, m=20, p=10, radius=1.0, heterogeneity=0.0,
                      noise=0.0, outside=0.5)

gd_rate = Claim(
    id="mine.fedprox_gd_rate", paper=MINE, reference="conjecture 1",
    statement="FedProx, one local step, eta = 1/L, common minimizer: F(x^t) - F* <= L D^2 / (2 (t - 1))",
    evidence=BoundTest(
        Rounds(family=COMMON, algorithm=fedprox, schedules={"eta": 1 / L, "mu": mu},
               algorithm_kwargs={"local_steps": 1}, seeds=4, rounds=2000, valid_from=2),
        bounds=(Bound("O(1/t)", L * D**2 / (2 * (t - 1))),), rate=-1),
    params={"mu": 0.1},
    domain=Domain(fixed={"loss": "least_squares", "set": ("l2", "box")}, params={"mu": ">0"},
                  premises={"the clients' minimizers coincide inside the set": common_minimizer_inside},
                  description="least squares; the clients' minimizers coincide inside the set"),
    expected="holds")

# Heterogeneous clients, five local steps: the conjecture that FedProx still reaches F* at O(1/t) is false
# (client drift: its fixed point is not the minimizer of F).  fedcheck refutes it and saves the instances.
HETERO = RandomFamily(loss="least_squares", set="l2", n=8, m=20, p=10, radius=1.0, heterogeneity=2.0)

drift_free = Claim(
    id="mine.fedprox_no_drift", paper=MINE, reference="conjecture 2",
    statement="FedProx, five local steps, eta = 1/L, heterogeneous clients: F(x^t) - F* <= L D^2 / (2 (t - 1))",
    evidence=BoundTest(
        Rounds(family=HETERO, algorithm=fedprox, schedules={"eta": 1 / L, "mu": mu},
               algorithm_kwargs={"local_steps": 5}, seeds=4, rounds=2000, valid_from=2),
        bounds=(Bound("O(1/t)", L * D**2 / (2 * (t - 1))),),
        rate=-1),
    readings=(Reading("as conjectured"),),
    params={"mu": 0.1},
    domain=Domain(fixed={"loss": "least_squares"}, params={"mu": ">0"}),
    expected="violated")
