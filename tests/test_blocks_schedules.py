"""Schedules per local step (t counting local steps, Li et al.'s eta_t) and quantities measured during the run (G^2
along the trajectory) in a bound: against a plain numpy loop, and the results saying the quantity is measured."""
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import fedcheck
from fedcheck import Bound, BoundTest, Claim, Domain, Paper, Rounds
from fedcheck.algorithms import federated, pieces, run_fedavg
from fedcheck.algorithms.pieces import static_oracle
from fedcheck.core.errors import BadInput
from fedcheck.problems import InstanceBatch, StronglyConvexFamily, solve_consensus
from fedcheck.symbols import E, L, mu, t

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fedavg_strongly_convex.py"
P = Paper(key="blocks", title="blocks", authors="x")
G2 = sp.Symbol("G2", nonnegative=True)


def _round(X, x, ctx, *, eta):
    Y = pieces.local_steps(ctx, ctx.broadcast(x), eta, eta.shape[1], project=False, record_grad_sq="G2")
    return Y, ctx.average(Y)


fedavg = federated(_round, name="FedAvg per local step")


def _reference(inst, rounds, E_, eta_of_t):
    """FedAvg by hand: E local steps at eta_t, t = (r - 1) E + s, p_k-weighted average; G^2 the largest squared
    gradient norm a local step used."""
    loss, w = inst.make_loss(), inst.client_weights()
    x, g2 = inst.start(), 0.0
    for r in range(1, rounds + 1):
        W = np.tile(x, (inst.n, 1))
        for s in range(1, E_ + 1):
            G = loss.grad(W)
            g2 = max(g2, float((G ** 2).sum(1).max()))
            W = W - eta_of_t((r - 1) * E_ + s) * G
        x = w @ W
    return x, g2


def _claim(bound, E_=3, rounds=30, measured=True, local_steps=E, **kw):
    return Claim(id="blocks.local", paper=P, reference="r", statement="s", expected="holds", params={"E": E_},
                 evidence=BoundTest(Rounds(family=StronglyConvexFamily(n=3, m=5, p=2, samples="unbalanced"),
                                           algorithm=fedavg, schedules={"eta": 1 / (L * (4 + t))}, local_steps=local_steps,
                                           per_local_step=("eta",), measured={"G2": "G^2"} if measured else {},
                                           seeds=2, rounds=rounds, **kw), bounds=(Bound("b", bound),)),
                 domain=Domain(params={"E": "int >= 1"}))


def test_a_schedule_per_local_step_and_measured_g2_against_a_numpy_loop():
    res = fedcheck.verify(_claim(1e6 + G2))
    d = list(res)[0].to_dict()
    assert d["verdict"] == "holds" and d["headline"].endswith("(uses measured G^2)")
    assert d["evidence"]["measured"]["G2"]["a_priori"] is False
    assert all(r.get("measured") == {"G2": "G^2"} for r in d["readings"].values())
    assert d["formula"]["per_local_step"]["schedules"] == ["eta"]
    fam = StronglyConvexFamily(n=3, m=5, p=2, samples="unbalanced")
    for rec in d["instances"]:
        inst = fam.draw(rec["seed"])
        Lk = float(np.max(inst.make_loss().smoothness()))
        x, g2 = _reference(inst, 30, 3, lambda tt: 1 / (Lk * (4 + tt)))
        const = rec["constants"]["G2"]
        assert const["measured"] is True and const["exact"] is False
        assert const["value"] == pytest.approx(g2, rel=1e-12)
        sol = solve_consensus(inst)
        F = inst.make_loss().full_value(x) - sol.F_star
        assert rec["metric"][-1] == pytest.approx(F, rel=1e-9, abs=1e-13)


def test_a_measured_quantity_decides_the_bound():
    """The bound reads the run's G^2: G2 / 1e9 (far below the gap) is violated, G2 * 1e9 holds."""
    assert list(fedcheck.verify(_claim(G2 * 1e-9, rounds=10)))[0].verdict == "violated"
    assert list(fedcheck.verify(_claim(G2 * 1e9, rounds=10)))[0].verdict == "holds"


def test_declarations_are_checked():
    with pytest.raises(BadInput, match="per_local_step"):
        fedcheck.verify(_claim(1 + t, local_steps=None))
    with pytest.raises(BadInput, match="integer >= 1"):
        fedcheck.verify(_claim(1 + t, local_steps=0))
    with pytest.raises(BadInput, match="one integer >= 1"):
        fedcheck.verify(_claim(1 + t, local_steps=mu))
    with pytest.raises((BadInput, ValueError), match="G2"):
        fedcheck.verify(_claim(G2 + 1, measured=False))


def test_run_fedavg_takes_a_schedule_per_local_step():
    """``eta`` ``(rounds, B, E)``: column s - 1 at local step s of round r, as the numpy loop (weights too)."""
    fam = StronglyConvexFamily(n=4, m=5, p=3, samples=(1, 2, 3, 4))
    insts = [fam.draw(s) for s in range(2)]
    batch = InstanceBatch(insts)
    rounds, E_ = 12, 4
    tt = np.arange(1, rounds * E_ + 1, dtype=float)
    eta = (1.0 / (4.0 * (3 + tt))).reshape(rounds, E_)[:, None, :].repeat(2, 1)
    st = run_fedavg(np.zeros((2, 3)), static_oracle(batch.loss.grad), rounds=rounds, n=4, eta=eta, steps=E_,
                    weights=batch.loss.weights)
    for b, inst in enumerate(insts):
        x, _ = _reference(inst, rounds, E_, lambda t_: 1.0 / (4.0 * (3 + t_)))
        assert np.allclose(st.final["x"][b], x, rtol=1e-12, atol=1e-14)


def test_the_example_is_li_et_al_with_e_above_one_in_80_lines():
    text = EXAMPLE.read_text()
    assert len(text.splitlines()) <= 80
    assert "8 (E - 1)^2 G^2" in text and "import fedcheck." not in text.replace("from fedcheck", "")
    res = {r.id: r.to_dict() for r in fedcheck.verify(str(EXAMPLE), rounds=60)}
    assert res["li2020.theorem1"]["params"]["E"] == 5
    assert res["li2020.theorem1"]["verdict"] == "holds" and res["li2020.theorem1_squared"]["verdict"] == "violated"
    assert all("uses measured G^2" in r["headline"] for r in res.values())
    assert res["li2020.theorem1"]["instances"][0]["instance"]["weights"]     # p_k = n_k / N
