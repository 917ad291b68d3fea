"""FedAvg on strongly convex, smooth clients: Li, Huang, Yang, Wang, Zhang, "On the Convergence of FedAvg on
Non-IID Data", ICLR 2020, Theorem 1 (full participation), written with public modules only.

    "Let Assumptions 1 to 4 hold and L, mu, sigma_k, G be defined therein.  Choose kappa = L/mu,
    gamma = max{8 kappa, E} and the learning rate eta_t = 2 / (mu (gamma + t)).  Then FedAvg with full device
    participation satisfies  E[F(w_T)] - F* <= kappa / (gamma + T - 1) (2B/mu + mu gamma / 2 E||w_1 - w*||^2),
    where B = sum_k p_k^2 sigma_k^2 + 6 L Gamma + 8 (E - 1)^2 G^2."

(The statement as the paper gives it, in ASCII.)  Here full gradients (sigma_k = 0), p_k = 1/n and one local step per
round (E = 1: the G^2 term vanishes; its G bounds the gradients along the run, not an a-priori constant of R^p);
fedcheck's iterate x^t is the paper's w_t (w_1 the start).

    fedcheck verify --theorem-file examples/fedavg_strongly_convex.py li2020
    fedcheck search --theorem-file examples/fedavg_strongly_convex.py li2020.theorem1_squared --budget 8 -j 2
"""
import dataclasses

import numpy as np
import sympy as sp

from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Rounds
from fedcheck.algorithms import federated, pieces
from fedcheck.problems import Instance, Unconstrained
from fedcheck.symbols import Gamma, L, kappa, mu, r_0, t

LI = Paper(key="li2020", title="On the Convergence of FedAvg on Non-IID Data", authors="Li, Huang, Yang, Wang, Zhang")


@dataclasses.dataclass(frozen=True)
class Ridge:
    """Heterogeneous least squares on R^p, every client strongly convex (m >= p rows of full rank)."""
    n: int = 4
    m: int = 12
    p: int = 4
    heterogeneity: float = 1.0

    def draw(self, seed):
        rng = np.random.default_rng(seed)
        A = rng.standard_normal((self.n, self.m, self.p))
        w = rng.standard_normal(self.p) + self.heterogeneity * rng.standard_normal((self.n, self.p))
        b = np.einsum("kmp,kp->km", A, w) + 0.1 * rng.standard_normal((self.n, self.m))
        return Instance(A=A, b=b, loss="least_squares", set=Unconstrained(np.inf, self.p), seed=seed, source="ridge")


def fedavg_round(X, x, ctx, *, mu, gamma):
    """Round t (x^t -> x^{t+1}, the paper's w_t -> w_{t+1}): one local gradient step at eta_t = 2 / (mu (gamma + t))."""
    Y = pieces.local_steps(ctx, ctx.broadcast(x), 2.0 / (mu * (gamma + ctx.t)), 1, project=False)
    return Y, Y.mean(1)


fedavg = federated(fedavg_round, name="FedAvg (Li et al.)")
gamma = sp.Max(8 * kappa, 1)
B = 6 * L * Gamma
rate = kappa / (gamma + t - 1) * (2 * B / mu + mu * gamma / 2 * r_0**2)


def strongly_convex(inst) -> bool:
    return bool(np.linalg.eigvalsh(inst.make_loss().H)[:, 0].min() > 1e-9)


def theorem(id, bound, expected):
    return Claim(id=id, paper=LI, reference="Theorem 1", expected=expected,
                 statement="F(w_T) - F* <= kappa/(gamma+T-1) (2B/mu + mu gamma/2 ||w_1 - w*||^2), eta_t = 2/(mu(gamma+t))",
                 evidence=BoundTest(Rounds(family=Ridge(), algorithm=fedavg, schedules={"mu": mu, "gamma": gamma},
                                           seeds=4, rounds=2000, valid_from=1), bounds=(Bound("Theorem 1", bound),)),
                 domain=Domain(fixed={"loss": "least_squares", "set": "rp"}, free={"n": (2, 8), "p": (1, 6)},
                               premises={"every client strongly convex": strongly_convex},
                               description="every client strongly convex and smooth, full gradients, E = 1"))


theorem1 = theorem("li2020.theorem1", rate, "holds")
theorem1_squared = theorem("li2020.theorem1_squared", rate / (gamma + t - 1), "violated")    # the rate squared
