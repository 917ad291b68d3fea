"""Your own claims about FedFW, checked exactly like the paper's.

    fedcheck verify --theorem-file examples/my_claims.py my.fast_rate my.too_good

``my.fast_rate`` conjectures that FedFW on these instances converges like classical
Frank-Wolfe, F(xbar^t) - F* <= 2 n L D^2 / (t + 1); ``my.too_good`` claims a much smaller
constant.  fedcheck runs both and says which holds.
"""
import sympy as sp

from fedcheck import algorithms as engine
from fedcheck.check import BoundCheck, Paper, rate_claim
from fedcheck.problems.instances import RandomFamily
from fedcheck.core.symbols import D, L, lambda_0, n, t

MINE = Paper(key="my", title="My conjectures about FedFW", authors="me")

schedules = {"eta": 2 / (t + 1), "lam": lambda_0 * sp.sqrt(t + 1)}
family = RandomFamily(loss="least_squares", set="l1", n=10, m=20, p=20)

fast_rate = BoundCheck(
    id="my.fast_rate", paper=MINE, reference="conjecture 1",
    claim="F(xbar^t) - F* <= 2 n L D^2 / (t + 1)",
    algorithm=engine.fedfw, schedules=schedules, bound=2 * n * L * D**2 / (t + 1),
    claimed_rate=-1, params={"lambda_0": 1.0}, family=family, valid_from=2,
    symbolic=(rate_claim(2 * n * L * D**2 / (t + 1), -1),), default_seeds=4, default_rounds=3000,
)

too_good = BoundCheck(
    id="my.too_good", paper=MINE, reference="conjecture 2",
    claim="F(xbar^t) - F* <= L D^2 / (100 (t + 1))",
    algorithm=engine.fedfw, schedules=schedules, bound=L * D**2 / (100 * (t + 1)),
    claimed_rate=-1, params={"lambda_0": 1.0}, family=family, valid_from=2, default_seeds=4, default_rounds=3000,
)
