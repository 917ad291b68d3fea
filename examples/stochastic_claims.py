"""Claims in expectation over stochastic runs, and over horizons, about a user's stochastic method.

    fedcheck verify --theorem-file examples/stochastic_claims.py mine_sto

The method (not in fedcheck): every client takes one step with a noisy gradient (Gaussian noise of standard
deviation sigma per coordinate), the server projects the clients' mean onto the set and keeps the running
average of its iterates, which it reports: projected SGD on F with averaged gradients.  (Projecting every
client's step before averaging is another method, for which the bound below fails: fedcheck refutes it.)  With eta <= 1/L the classical analysis of averaged stochastic gradient
descent gives, after t - 1 steps, E F(xbar^t) - F* <= D^2 / (2 eta (t - 1)) + eta sigma_F^2 with
sigma_F^2 = p sigma^2 / n the variance of the averaged gradient.

* ``mine_sto.anytime``: eta = 1/L, the bound at every round, in expectation over 32 runs per instance (the
  ``mean`` statistic: mean + 3 standard errors);
* ``mine_sto.horizon``: for a horizon T the step eta_T = min(1/L, D/(sigma_F sqrt(T - 1))) is tuned to T, and the
  bound D^2/(2 eta_T (T - 1)) + eta_T sigma_F^2 (= O(T^{-1/2})) is checked at the end of runs of several horizons.
"""
import sympy as sp

from fedcheck import MEAN, Bound, BoundTest, Claim, Domain, HorizonCase, Horizons, Paper, Rounds
from fedcheck.algorithms import federated
from fedcheck.problems import RandomFamily
from fedcheck.symbols import D, L, T, n, p, sigma, t

MINE = Paper(key="mine_sto", title="A stochastic method of my own", authors="me")


def noisy_averaged_round(X, x, ctx, *, eta, sigma):
    """Noisy gradient step on every client, projected server mean, running average of the server iterates."""
    z = ctx.state.get("z", x)                                   # the current (non-averaged) server iterate
    G = ctx.grad(ctx.broadcast(z)) + ctx.col(sigma) * ctx.normal((ctx.n, ctx.p))
    Y = ctx.broadcast(z) - ctx.col(eta) * G
    z = ctx.project(Y.mean(1))
    k = ctx.t                                                   # z is the k-th iterate after the start
    avg = ctx.state.get("avg", 0.0) * (k - 1) / k + z / k
    ctx.state.update(z=z, avg=avg)
    return Y, avg


noisy_avg = federated(noisy_averaged_round, name="noisy averaged FedAvg")
FAMILY = RandomFamily(loss="least_squares", set="l2", n=5, m=20, p=5, radius=1.0, heterogeneity=1.0)
sigma_F2 = p * sigma**2 / n

anytime = Claim(
    id="mine_sto.anytime", paper=MINE, reference="classical averaged SGD bound",
    statement="eta = 1/L: E F(xbar^t) - F* <= L D^2 / (2 (t - 1)) + p sigma^2 / (n L) at every round t >= 2",
    evidence=BoundTest(
        Rounds(family=FAMILY, algorithm=noisy_avg, schedules={"eta": 1 / L, "sigma": sigma}, seeds=3,
               rounds=500, replicates=32, valid_from=2, dense_until=100, per_decade=40),
        bounds=(Bound("averaged SGD", L * D**2 / (2 * (t - 1)) + sigma_F2 / L),), statistic=MEAN),
    params={"sigma": 0.5},
    domain=Domain(fixed={"loss": "least_squares"}, params={"sigma": ">0"}),
    expected="holds")

eta_T = sp.Min(1 / L, D / (sp.sqrt(sigma_F2) * sp.sqrt(T - 1)))

horizon = Claim(
    id="mine_sto.horizon", paper=MINE, reference="classical averaged SGD bound, step tuned to the horizon",
    statement="eta_T = min(1/L, D/(sigma_F sqrt(T-1))): E F(xbar^T) - F* <= D^2/(2 eta_T (T-1)) + eta_T sigma_F^2",
    evidence=BoundTest(
        Horizons(algorithm=noisy_avg, schedules={"eta": eta_T, "sigma": sigma},
                 cases=(HorizonCase("l2 ball, n = 5", FAMILY, seeds=3, horizons=(20, 30, 50, 80, 120, 200, 300, 500), run_seeds=32),),
                 rate_metric="averaged SGD"),
        bounds=(Bound("averaged SGD", D**2 / (2 * sp.Symbol("eta", positive=True) * (T - 1))
                      + sp.Symbol("eta", positive=True) * sigma_F2, metric="gap"),),
        statistic=MEAN, rate=-0.5),
    params={"sigma": 0.5},
    domain=Domain(fixed={"loss": "least_squares"}, params={"sigma": ">0"}),
    expected="holds")
