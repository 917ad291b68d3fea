"""FedAvg on strongly convex, smooth clients: Li, Huang, Yang, Wang, Zhang, "On the Convergence of FedAvg on
Non-IID Data", ICLR 2020, Theorem 1 (full participation), written with public modules only.

    "Let Assumptions 1 to 4 hold and L, mu, sigma_k, G be defined therein.  Choose kappa = L/mu,
    gamma = max{8 kappa, E} and the learning rate eta_t = 2 / (mu (gamma + t)).  Then FedAvg with full device
    participation satisfies  E[F(w_T)] - F* <= kappa / (gamma + T - 1) (2B/mu + mu gamma / 2 E||w_1 - w*||^2),
    where B = sum_k p_k^2 sigma_k^2 + 6 L Gamma + 8 (E - 1)^2 G^2."

(The statement as the paper gives it, in ASCII.)  Here: E local steps per round (E = 5; 2 for the false variant, the
rate squared; search varies E), client
weights p_k = n_k / N (unbalanced sample counts), eta_t with t counting local steps, full gradients (sigma_k = 0:
with stochastic gradients Assumption 3's sigma_k and the expectation over the runs would be needed as well), and
G^2 = the largest ||grad F_k(w)||^2 at the local iterates of this run (Assumption 4 along the trajectory: measured,
not a priori; the headline says so).  Round r ends at the paper's T = r E + 1; fedcheck's iterate t = r + 1.

    fedcheck verify --theorem-file examples/fedavg_strongly_convex.py li2020
    fedcheck search --theorem-file examples/fedavg_strongly_convex.py li2020.theorem1_squared --budget 8 -j 2
"""
import numpy as np
import sympy as sp

from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Rounds
from fedcheck.algorithms import federated, pieces
from fedcheck.problems import StronglyConvexFamily
from fedcheck.symbols import E, Gamma, L, kappa, mu, r_0, t

LI = Paper(key="li2020", title="On the Convergence of FedAvg on Non-IID Data", authors="Li, Huang, Yang, Wang, Zhang")
G2 = sp.Symbol("G2", nonnegative=True)          # G^2, recorded along the run


def fedavg_round(X, x, ctx, *, eta):
    """E local gradient steps at eta_t (eta: (B, E), one column per local step), then p_k-weighted averaging."""
    Y = pieces.local_steps(ctx, ctx.broadcast(x), eta, eta.shape[1], project=False, record_grad_sq="G2")
    return Y, ctx.average(Y)


fedavg = federated(fedavg_round, name="FedAvg (Li et al.)")
gamma = sp.Max(8 * kappa, E)
B = 6 * L * Gamma + 8 * (E - 1) ** 2 * G2       # sum_k p_k^2 sigma_k^2 = 0: full gradients
T = (t - 1) * E + 1                              # the paper's T at fedcheck's iterate t
rate = kappa / (gamma + T - 1) * (2 * B / mu + mu * gamma / 2 * r_0**2)


def strongly_convex(inst) -> bool:
    return bool(np.linalg.eigvalsh(inst.make_loss().H)[:, 0].min() > 1e-9)


def theorem(id, bound, expected, E=5):
    return Claim(id=id, paper=LI, reference="Theorem 1", expected=expected, params={"E": E},
                 statement="F(w_T) - F* <= kappa/(gamma+T-1) (2B/mu + mu gamma/2 ||w_1 - w*||^2), eta_t = 2/(mu(gamma+t))",
                 evidence=BoundTest(Rounds(family=StronglyConvexFamily(samples="unbalanced"), algorithm=fedavg,
                                           schedules={"eta": 2 / (mu * (gamma + t))}, local_steps=E,
                                           per_local_step=("eta",), measured={"G2": "G^2"},
                                           seeds=4, rounds=400, valid_from=1), bounds=(Bound("Theorem 1", bound),)),
                 domain=Domain(fixed={"loss": "least_squares", "set": "rp", "weights": "p_k"},
                               free={"n": (2, 8), "p": (1, 6)}, params={"E": "int >= 1"},
                               premises={"every client strongly convex": strongly_convex},
                               description="every client strongly convex and smooth, full gradients, E local steps"))


theorem1 = theorem("li2020.theorem1", rate, "holds")
theorem1_squared = theorem("li2020.theorem1_squared", rate / (gamma + T - 1), "violated", E=2)   # the rate squared
