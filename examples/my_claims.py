"""Your own claims about FedFW, checked exactly like the paper's.

    fedcheck verify --theorem-file examples/my_claims.py my.fast_rate my.too_good

``my.fast_rate`` conjectures that FedFW on these instances converges like classical
Frank-Wolfe, F(xbar^t) - F* <= 2 n L D^2 / (t + 1); ``my.too_good`` claims a much smaller
constant.  fedcheck runs both and says which holds.
"""
import sympy as sp

from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Rounds
from fedcheck import algorithms as engine
from fedcheck.problems import RandomFamily
from fedcheck.symbols import D, L, lambda_0, n, t

MINE = Paper(key="my", title="My conjectures about FedFW", authors="me")

schedules = {"eta": 2 / (t + 1), "lam": lambda_0 * sp.sqrt(t + 1)}
family = RandomFamily(loss="least_squares", set="l1", n=10, m=20, p=20)
# both conjectures are about least squares on the l1 ball, any size, any number of clients
domain = Domain(fixed={"loss": "least_squares", "set": "l1"},
                free={"n": (1, None), "m": (1, None), "p": (1, None), "radius": (0, None), "x0": None},
                params={"lambda_0": ">0"})


def conjecture(id, reference, statement, bound, expected):
    return Claim(id=id, paper=MINE, reference=reference, statement=statement,
                 evidence=BoundTest(Rounds(family=family, algorithm=engine.fedfw, schedules=schedules, valid_from=2,
                                           seeds=4, rounds=3000),
                                    bounds=(Bound(reference, bound),), rate=-1),
                 params={"lambda_0": 1.0}, domain=domain, expected=expected)


fast_rate = conjecture("my.fast_rate", "conjecture 1", "F(xbar^t) - F* <= 2 n L D^2 / (t + 1)",
                       2 * n * L * D**2 / (t + 1), "holds")
too_good = conjecture("my.too_good", "conjecture 2", "F(xbar^t) - F* <= L D^2 / (100 (t + 1))",
                      L * D**2 / (100 * (t + 1)), "violated")
