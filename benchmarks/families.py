"""Every algorithm family against a plain per-client loop: same instances, same process, same iterates.

    python benchmarks/families.py                     # the table (all families), CPU-time medians of 3
    python benchmarks/families.py --only fedavg fedsgm --repeat 5
    python benchmarks/families.py --profile fedsgm    # cProfile of one family's engine run (top 25)

For each family a *loop* reference -- Python loops over instances, rounds, (local steps,) clients, one
client's numpy update at a time, the same formulas in the same floating-point order and the same random
streams as the engine (a faithful research-script implementation, not a strawman: per-client constants
precomputed, no recording) -- and the *engine* (the batched function the catalog calls, with the recording
the catalog asks for) run on the same batch of instances.  Columns:

* ``loop s`` / ``engine s``: CPU time of this process, medians over interleaved repetitions (the machine is
  shared; ratios within one run are what the project states);
* ``speedup``: loop time per round / engine time per round (FedFW's loop runs fewer rounds than its engine,
  as in ``benchmarks/engine.py``; every other family runs the same rounds in both);
* ``equal``: the final iterates (and the method's output averages) of engine and loop, in units in the last
  place of their magnitude: ``max |engine - loop| / (eps * max |loop|)`` over each compared array (``eps`` =
  2.2e-16), which must be ``<= ULPS`` (64); ``bitwise`` when every compared array is identical.  Bit identity is
  observed, not promised: engine and loop sum their products (``A_i @ w`` one client at a time against batched
  ``matmul``/``einsum``, BLAS, numpy's reductions) in orders that a numpy or BLAS release may change -- FedProx's
  tiny case, bitwise on the releases the suite was first green with, is 0.5 ulp off with numpy 2.4.6.

Targets: ``speedup >= 30`` for every family, FedFW's ``>= 100``.  Last line:
``min_speedup=<..> fedfw_speedup=<..> all_equal=<True|False>``.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ULPS = 64     # engine and loop agree within 64 units in the last place of each compared array's magnitude


@dataclass
class Case:
    name: str
    shape: str
    engine: Callable[[], dict]          # -> {name: array} of the compared outputs
    loop: Callable[[], dict]
    engine_rounds: int
    loop_rounds: int
    check_engine: Callable[[], dict] | None = None     # the engine at the loop's rounds (when they differ)


def _soft(x, t):
    """``prox`` of ``t ||.||_1`` on one vector (the formula of ``fedcheck.problems.regularizers._soft``)."""
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


# ------------------------------------------------------------------------------------------------ FedFW
def case_fedfw(B=64, rounds=5000, loop_rounds=40, tiny=False) -> Case:
    from fedcheck.algorithms import default_recorder, fedfw, record_grid
    from fedcheck.algorithms.reference import fedfw_loop_least_squares_l1
    from fedcheck.core.schedules import evaluate_schedule
    from fedcheck.problems.instances import InstanceBatch
    from theorems.fedfw import theorem1
    fam = theorem1.family if getattr(theorem1, "family", None) is not None else theorem1.evidence.experiment.family
    decl = getattr(theorem1, "schedules", None) or theorem1.evidence.experiment.schedules
    batch = InstanceBatch([fam.draw(s) for s in range(B)])
    tt = np.arange(1, rounds + 1)
    values = {k: np.full(B, float(v)) for k, v in theorem1.params.items()}
    values["n"] = np.full(B, float(batch.n))
    sched = {k: evaluate_schedule(e, tt, values, B) for k, e in decl.items()}
    short = {k: v[:loop_rounds] for k, v in sched.items()}

    def run(T, s):
        tr = fedfw(batch, rounds=T, grid=record_grid(T + 1), recorder=default_recorder(batch), **s)
        return {"X": tr.final["X"], "xbar": tr.final["xbar"]}

    def loop():
        X, xb = fedfw_loop_least_squares_l1(batch, short["eta"], short["lam"], loop_rounds)
        return {"X": X, "xbar": xb}
    return Case("FedFW", f"{B}x{batch.n}x{batch.p}", lambda: run(rounds, sched), loop, rounds, loop_rounds,
                check_engine=lambda: run(loop_rounds, short))


# ------------------------------------------------------------------------------------------------ FedAvg
def _lad_arrays(batch):
    return np.stack([i.A for i in batch.instances]), np.stack([i.b for i in batch.instances])


def loop_fedavg_lad(A, b, rounds, steps, eta):
    """FedAvg on LAD clients: loops over instances, rounds, clients and local steps; the subgradient
    ``(sign(A_i w - b_i) / m)^T A_i`` in the order of ``LAD.grad`` (matmul kernel)."""
    B, n, m, p = A.shape
    out = np.zeros((B, p))
    for bi in range(B):
        x = np.zeros(p)
        for k in range(rounds):
            e = eta[k, bi]
            acc = np.zeros(p)
            for i in range(n):
                Ai, bi_ = A[bi, i], b[bi, i]
                w = x.copy()
                for _ in range(steps):
                    r = Ai @ w
                    r -= bi_
                    w = w - e * ((np.sign(r) / m) @ Ai)
                acc += w
            x = acc / n
        out[bi] = x
    return out


def case_fedavg(B=64, n=10, m=20, p=20, rounds=40, steps=5, paper=False) -> Case:
    from fedcheck.algorithms.fedavg import run_fedavg
    from fedcheck.algorithms.pieces import static_oracle
    from fedcheck.problems.instances import Instance, InstanceBatch, instance_rng
    from fedcheck.problems.sets import L2Ball
    if paper:
        from theorems.fedmls.problems import LADFamily
        fam = LADFamily(n=32, m=12, p=3, heterogeneity=0.5)
        batch = InstanceBatch([fam.draw(s) for s in range(B)])
    else:
        rng = instance_rng(0, f"benchmarks:fedavg:{B}:{n}:{m}:{p}")
        insts = []
        for _ in range(B):
            A = rng.standard_normal((n, m, p))
            bb = A @ rng.standard_normal(p) + 0.3 * rng.standard_normal((n, m)) + rng.standard_normal((n, 1))
            insts.append(Instance(A, bb, "lad", L2Ball(100.0, p)))
        batch = InstanceBatch(insts)
    A, bb = _lad_arrays(batch)
    k = np.arange(1, rounds + 1, dtype=float)[:, None]
    eta = 0.5 / np.sqrt(k) * np.linspace(0.5, 1.5, B)[None, :]
    x0 = np.zeros((B, batch.p))

    def engine():
        return {"x": run_fedavg(x0, static_oracle(batch.loss.grad), rounds=rounds, n=batch.n, eta=eta,
                                steps=steps).final["x"]}
    name = "FedAvg (FedMLS n-scaling LAD)" if paper else "FedAvg (LAD)"
    return Case(name, f"{B}x{batch.n}x{batch.p} m={A.shape[2]} E={steps}", engine,
                lambda: {"x": loop_fedavg_lad(A, bb, rounds, steps, eta)}, rounds, rounds)


# ------------------------------------------------------------------------------------------------ composite
def _composite_batch(B, d=6, M=4, K=5, noise=0.3):
    from fedcheck.problems import composite as P
    from theorems.feddualavg.problems import SharedQuadraticFamily
    fam = SharedQuadraticFamily(d=d, M=M, K=K, mu=0.1, tau=0.5, noise=noise, reg="l1", lam=0.2, geometry="euclidean")
    return P.batch_of([fam.draw(s) for s in range(B)])


def loop_composite(prob, rounds, ec, es, method, seed):
    """FedDualAvg / FedMiD / FedAvg (Yuan et al.) on shared-Hessian quadratics with an l1 regularizer and
    Gaussian gradient noise: rounds, local steps, instances, clients.  The noise is the engine's stream: one
    generator, each client drawing its ``d`` normals when it takes its step (instances, then clients, in the
    order of the engine's ``(B, M, d)`` block per local step, hence the same numbers)."""
    B, M, d, K = prob.B, prob.M, prob.d, prob.K
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    Q = [prob.Q[b, 0] for b in range(B)]
    c = prob.c
    lam = np.broadcast_to(np.asarray(prob.reg.lam, dtype=float), (B,))
    sd = prob.noise_scale
    w0 = prob.x0()
    z = [w0[b].copy() for b in range(B)]              # dual (FedDualAvg) or primal server state
    w = [w0[b].copy() for b in range(B)]
    w_sum = [np.zeros(d) for _ in range(B)]
    hat_sum = [np.zeros(d) for _ in range(B)]
    disc = np.zeros(B)
    dual = method == "feddualavg"
    for r in range(rounds):
        Zs = [[z[b].copy() for _ in range(M)] for b in range(B)]
        for k in range(K):
            for b in range(B):
                zc = Zs[b]
                if dual:
                    a = es[b] * ec[b] * r * K + ec[b] * k
                    zbar = sum(zc) / M
                    for m_ in range(M):
                        dv = zc[m_] - zbar
                        disc[b] += (dv * dv).sum()
                for m_ in range(M):
                    x = zc[m_]
                    wm = _soft(x, a * lam[b]) if dual else x
                    g = Q[b] @ wm + c[b, m_] + rng.standard_normal(d) * sd[b]
                    x = x - ec[b] * g
                    if method == "fedmid":
                        x = _soft(x, ec[b] * lam[b])
                    zc[m_] = x
                if dual:
                    hat_sum[b] += _soft(sum(zc) / M, (a + ec[b]) * lam[b])
        for b in range(B):
            mean = sum(Zs[b]) / M
            z[b] = z[b] + es[b] * (mean - z[b])
            if dual:
                w[b] = _soft(z[b], es[b] * ec[b] * (r + 1) * K * lam[b])
            elif method == "fedmid":
                z[b] = _soft(z[b], es[b] * ec[b] * K * lam[b])
                w[b] = z[b]
            else:
                w[b] = z[b]
            w_sum[b] += w[b]
    out = {"w": np.stack(w), "w_avg": np.stack(w_sum) / rounds}
    if dual:
        out.update(w_hat=np.stack(hat_sum) / (K * rounds), disc=disc)
    return out


def case_composite(method, B=64, rounds=200) -> Case:
    from fedcheck.algorithms import composite as E
    from fedcheck.algorithms.core import record_grid
    prob = _composite_batch(B)
    ec = np.full(B, 0.05) * np.linspace(0.5, 1.5, B)
    es = np.full(B, 1.0)
    from theorems.feddualavg.methods import fedavg
    alg = {"feddualavg": E.feddualavg, "fedmid": E.fedmid, "fedavg": fedavg}[method]

    def engine():
        rng = np.random.default_rng(np.random.SeedSequence(7))
        grid = record_grid(rounds)
        tr = alg(prob, rounds=rounds, eta_c=ec, eta_s=es, grid=grid, rng=rng,
                 recorder=lambda P_, R, pts: {**E.default_recorder(P_, R, pts), **{k: v for k, v in pts.items()}})
        out = {"w": tr.final["w"], "w_avg": tr.metrics["w_avg"][-1]}
        if method == "feddualavg":
            out.update(w_hat=tr.metrics["w_hat"][-1], disc=tr.metrics["disc"][-1])
        return out
    label = {"feddualavg": "FedDualAvg", "fedmid": "FedMiD", "fedavg": "FedAvg (composite, Alg. 1)"}[method]
    return Case(label, f"{B}x{prob.M}x{prob.d} K={prob.K}", engine,
                lambda: loop_composite(prob, rounds, ec, es, method, 7), rounds, rounds)


# ------------------------------------------------------------------------------------------------ FedMLS / MOPES
def _client_approx_prox(A, bvec, m, U0, V, sc, T, R):
    """approx-prox of one client (eq. (9)): ``T`` projected subgradient steps from ``U0``."""
    U, Ut = U0.copy(), U0.copy()
    for t in range(1, T + 1):
        a = 2.0 / (t + 2.0)
        r = A @ U
        r -= bvec
        G = (np.sign(r) / m) @ A
        G *= a * sc
        Uh = (1.0 - a) * U
        Uh += a * V
        Uh -= G
        nrm = np.sqrt(Uh @ Uh)
        Uh *= R / max(nrm, R)
        th = 2.0 * (t + 1.0) / (t * (t + 3.0))
        U = Uh
        Ut += th * (U - Ut)
    return U, Ut


def loop_fedmls(A, bb, rounds, lam, T, R):
    """FedMLS (Algorithm 1) on LAD clients: instances, rounds, clients (each its approx-prox loop)."""
    B, n, m, p = A.shape
    out_x, out_xi = np.zeros((B, p)), np.zeros((B, n, p))
    for b in range(B):
        x, y, z = np.zeros(p), np.zeros(p), np.zeros(p)
        xi = [np.zeros(p) for _ in range(n)]
        yi = [np.zeros(p) for _ in range(n)]
        zi = [np.zeros(p) for _ in range(n)]
        for k in range(1, rounds + 1):
            g, g1 = 2.0 / (k + 1.0), 2.0 / (k + 2.0)
            sc = lam[k - 1, b] * k / (4.0 * n)
            for i in range(n):
                V = zi[i] - (k / 4.0) * (yi[i] - y)
                zn, zt = _client_approx_prox(A[b, i], bb[b, i], m, zi[i], V, sc, int(T[k - 1, b]), R)
                xi[i] = (1.0 - g) * xi[i] + g * zt
                yi[i] = (1.0 - g1) * xi[i] + g1 * zn
                zi[i] = zn
            x = (1.0 - g) * x + g * z
            y = (1.0 - g1) * x + g1 * z
            z = z - ((k + 1.0) / 4.0) * (y - sum(yi) / n)
        out_x[b], out_xi[b] = x, np.stack(xi)
    return {"xbar": out_x, "xi": out_xi}


def loop_mopes(A, bb, rounds, lam, T, R):
    """MOPES (eq. (4)-(5)) with the consensus projection, on LAD clients: instances, rounds, clients."""
    B, n, m, p = A.shape
    out = np.zeros((B, p))
    for b in range(B):
        X = [np.zeros(p) for _ in range(n)]
        Xp, Z, Zp = [v.copy() for v in X], [v.copy() for v in X], [v.copy() for v in X]
        for k in range(1, rounds + 1):
            g, c = 2.0 / (k + 1.0), k / 4.0
            sc = lam[k - 1, b] * k / (4.0 * n)
            Y = [(1.0 - g) * X[i] + g * Z[i] for i in range(n)]
            Yp = [(1.0 - g) * Xp[i] + g * Zp[i] for i in range(n)]
            Zc = [Z[i] - c * (Y[i] - Yp[i]) for i in range(n)]
            zmean = sum(Zc) / n
            for i in range(n):
                V = Zp[i] - c * (Yp[i] - Y[i])
                zn, zt = _client_approx_prox(A[b, i], bb[b, i], m, Zp[i], V, sc, int(T[k - 1, b]), R)
                X[i] = (1.0 - g) * X[i] + g * zmean
                Xp[i] = (1.0 - g) * Xp[i] + g * zt
                Z[i], Zp[i] = zmean, zn
        out[b] = sum(X) / n
    return {"xbar": out}


def case_fedmls(method="fedmls", B=64, rounds=30, n=32) -> Case:
    from fedcheck.algorithms import mls as M
    from theorems.fedmls.problems import LADFamily
    from fedcheck.problems.instances import InstanceBatch
    fam = LADFamily(n=n, m=12, p=3, heterogeneity=0.5)
    batch = InstanceBatch([fam.draw(s) for s in range(B)])
    A, bb = _lad_arrays(batch)
    k = np.arange(1, rounds + 1, dtype=float)[:, None]
    lam = np.broadcast_to(1.0 / k, (rounds, B)).copy()
    T = np.broadcast_to(np.minimum(np.ceil(k / 3.0), 8.0), (rounds, B)).copy()
    R = 10.0
    if method == "fedmls":
        def engine():
            tr = M.fedmls(batch, rounds=rounds, lam=lam, T=T, R=R)
            return {"xbar": tr.final["xbar"], "xi": tr.final["xi"]}
        loop = lambda: loop_fedmls(A, bb, rounds, lam, T, R)     # noqa: E731
    else:
        def engine():
            return {"xbar": M.mopes(batch, rounds=rounds, lam=lam, T=T, R=R).final["xbar"]}
        loop = lambda: loop_mopes(A, bb, rounds, lam, T, R)      # noqa: E731
    return Case("FedMLS" if method == "fedmls" else "MOPES", f"{B}x{batch.n}x{batch.p} m=12 T<=8", engine, loop,
                rounds, rounds)


# ------------------------------------------------------------------------------------------------ FedSGM
def loop_fedsgm(batch, rounds, eta, eps, E):
    """FedSGM (hard switching, identity uplink): instances, rounds, clients, local steps, through each
    client's own loss objects (``f_j``, ``g_j`` of one client)."""
    B, n, d = batch.B, batch.n, batch.d
    fs = [[batch.f.map(lambda v, b=b, j=j: v[b:b + 1, j:j + 1]) for j in range(n)] for b in range(B)]
    gs = [[batch.g.map(lambda v, b=b, j=j: v[b:b + 1, j:j + 1]) for j in range(n)] for b in range(B)]
    out_w, out_bar = np.zeros((B, d)), np.zeros((B, d))
    for b in range(B):
        w = np.array(batch.w0[b], dtype=float)
        S_w, S_weight = np.zeros(d), 0.0
        for t in range(rounds):
            gw = np.array([gs[b][j].value(w[None, None])[0, 0] for j in range(n)]).mean()
            sig = 1.0 if gw - eps[b] > 0 else 0.0
            if gw <= eps[b]:
                S_w += w
                S_weight += 1.0
            Xs = np.zeros(d)
            for j in range(n):
                W = w.copy()
                X = np.zeros(d)
                for _ in range(E):
                    V = (1 - sig) * fs[b][j].subgrad(W[None, None])[0, 0] + sig * gs[b][j].subgrad(W[None, None])[0, 0]
                    X += V
                    W = W - eta[b] * V
                Xs = Xs + X
            w = w - eta[b] * (Xs / n)
        out_w[b] = w
        out_bar[b] = S_w / S_weight if S_weight > 0 else np.nan
    return {"w_T": out_w, "wbar": out_bar}


def case_fedsgm(B=64, rounds=300, E=3, kind="pl", n=5) -> Case:
    from fedcheck.algorithms.switching import fedsgm
    from fedcheck.problems import constrained as P
    from theorems.fedsgm.problems import ConstrainedFamily
    fam = ConstrainedFamily(kind=kind, n=n, m=10, d=5, start="infeasible")
    batch = P.ConstrainedBatch([fam.draw(s) for s in range(B)])
    eta = np.full(B, 0.02) * np.linspace(0.5, 1.5, B)
    eps = np.full(B, 0.05)
    u = np.zeros((B, batch.d))                      # a comparator, as the catalog passes w*

    def engine():
        tr = fedsgm(batch, rounds=rounds, eta=eta, eps=eps, rule="hard", local_steps=E, comparator=u)
        return {"w_T": tr.final["w_T"], "wbar": tr.final["wbar"]}
    return Case(f"FedSGM ({kind})", f"{B}x{batch.n}x{batch.d} m=10 E={E}", engine,
                lambda: loop_fedsgm(batch, rounds, eta, eps, E), rounds, rounds)


# ------------------------------------------------------------------------------------------------ protocol
def loop_fedprox(batch, rounds, eta, mu, steps):
    """FedProx (the ``federated`` round function of ``examples/fedprox_claims.py``) on least squares over
    l2 balls: instances, rounds, clients, local steps."""
    loss = batch.loss
    B, n, p = batch.B, batch.n, batch.p
    radii = np.broadcast_to(np.asarray(batch.set.radius, dtype=float), (B,))
    X0 = batch.x0()
    out_x, out_X = np.zeros((B, p)), np.zeros((B, n, p))
    for b in range(B):
        rad = float(radii[b])
        x = X0[b].mean(0)
        ys = [X0[b, i] for i in range(n)]
        for t in range(rounds):
            e, mu_ = eta[t, b], mu[t, b]
            for i in range(n):
                y = x.copy()
                for _ in range(steps):
                    g = loss.H[b, i] @ y
                    g -= loss.c[b, i]
                    g = g + mu_ * (y - x)
                    y = y - e * g
                    nrm = np.linalg.norm(y)
                    if nrm > rad:
                        y = y * (rad / nrm)
                ys[i] = y
            x = sum(ys) / n
        out_x[b], out_X[b] = x, np.stack(ys)
    return {"x": out_x, "X": out_X}


def case_fedprox(B=64, rounds=200, steps=5, n=8, p=10) -> Case:
    from fedcheck.problems.instances import InstanceBatch, RandomFamily
    from examples.fedprox_claims import fedprox
    fam = RandomFamily(loss="least_squares", set="l2", n=n, m=20, p=p, radius=1.0, heterogeneity=2.0)
    batch = InstanceBatch([fam.draw(s) for s in range(B)])
    L = np.asarray(batch.loss.smoothness()).max(-1)
    eta = np.broadcast_to(1.0 / L, (rounds, B)).copy()
    mu = np.full((rounds, B), 0.1)

    def engine():
        tr = fedprox(batch, rounds=rounds, eta=eta, mu=mu, local_steps=steps)
        return {"x": tr.final["x"], "X": tr.final["X"]}
    return Case("federated(FedProx)", f"{B}x{n}x{p} m=20 E={steps}", engine,
                lambda: loop_fedprox(batch, rounds, eta, mu, steps), rounds, rounds)


# ------------------------------------------------------------------------------------------------ driver
CASES = {
    "fedfw": case_fedfw,
    "fedavg": case_fedavg,
    "fedavg_paper": lambda **kw: case_fedavg(paper=True, **kw),
    "feddualavg": lambda **kw: case_composite("feddualavg", **kw),
    "fedmid": lambda **kw: case_composite("fedmid", **kw),
    "fedavg_composite": lambda **kw: case_composite("fedavg", **kw),
    "fedmls": lambda **kw: case_fedmls("fedmls", **kw),
    "mopes": lambda **kw: case_fedmls("mopes", **kw),
    "fedsgm": case_fedsgm,
    "fedprox": case_fedprox,
}

TINY = {   # the test's shapes (tests/test_families_equal.py)
    "fedfw": dict(B=3, rounds=12, loop_rounds=12),
    "fedavg": dict(B=3, n=3, m=5, p=4, rounds=4, steps=3),
    "fedavg_paper": dict(B=3, rounds=4, steps=2),
    "feddualavg": dict(B=3, rounds=6),
    "fedmid": dict(B=3, rounds=6),
    "fedavg_composite": dict(B=3, rounds=6),
    "fedmls": dict(B=3, rounds=6, n=3),
    "mopes": dict(B=3, rounds=6, n=3),
    "fedsgm": dict(B=3, rounds=10, E=2, n=3),
    "fedprox": dict(B=3, rounds=6, steps=2, n=3, p=4),
}


def compare(a: dict, b: dict) -> tuple[bool, float]:
    """``(bitwise, ulps)`` over the compared outputs ``a`` (engine) and ``b`` (loop): ``ulps`` the largest
    ``max |a - b| / (eps max |b|)`` of an array, in units in the last place of its magnitude (NaN equal to NaN;
    ``inf`` for another shape or other NaNs or infinities)."""
    bit, worst = True, 0.0
    for k in a:
        x, y = np.asarray(a[k], dtype=float), np.asarray(b[k], dtype=float)
        if x.shape != y.shape:
            return False, float("inf")
        if not np.array_equal(np.isnan(x), np.isnan(y)):
            return False, float("inf")
        ok = ~np.isnan(x)
        if not np.array_equal(x[ok], y[ok]):
            bit = False
            d = np.abs(x[ok] - y[ok])
            if not np.isfinite(d).all():
                return False, float("inf")
            scale = float(np.max(np.abs(y[ok]))) * np.finfo(float).eps
            worst = max(worst, float(d.max()) / scale if scale > 0 else float("inf"))
    return bit, worst


def check_equal(case: Case) -> tuple[bool, float]:
    eng = (case.check_engine or case.engine)()
    return compare(eng, case.loop())


def _cpu(fn) -> float:
    gc.collect()
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def measure(case: Case, repeat: int) -> dict:
    bit, diff = check_equal(case)                # also warms up (numba, caches)
    te, tl = [], []
    for _ in range(repeat):
        te.append(_cpu(case.engine))
        tl.append(_cpu(case.loop))
    e, l_ = statistics.median(te), statistics.median(tl)
    speed = (l_ / case.loop_rounds) / (e / case.engine_rounds)
    return {"engine": e, "loop": l_, "speedup": speed, "bitwise": bit, "ulps": diff, "equal": diff <= ULPS,
            "runs_engine": te, "runs_loop": tl}


def profile(name: str, top: int = 25) -> None:
    import cProfile
    import pstats
    case = CASES[name]()
    case.engine()
    pr = cProfile.Profile()
    pr.enable()
    case.engine()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(top)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", choices=sorted(CASES), help="families to run (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", choices=sorted(CASES), help="cProfile one family's engine run instead")
    a = ap.parse_args(argv)
    if a.profile:
        profile(a.profile)
        return 0
    names = a.only or list(CASES)
    print(f"# {os.cpu_count()} cores, numpy {np.__version__}; load average {os.getloadavg()[0]:.2f}; "
          f"CPU-time medians of {a.repeat} interleaved repeats")
    print(f"{'family':32s} {'shape':26s} {'rounds e/l':>11s} {'loop s':>8s} {'engine s':>9s} {'speedup':>8s}  equal")
    res = {}
    for name in names:
        case = CASES[name]()
        r = measure(case, a.repeat)
        res[name] = r
        eq = "bitwise" if r["bitwise"] else (f"{r['ulps']:.1f} ulp" + ("" if r["equal"] else f"  DIFFER (> {ULPS})"))
        print(f"{case.name:32s} {case.shape:26s} {case.engine_rounds:>5d}/{case.loop_rounds:<5d} {r['loop']:8.3f} "
              f"{r['engine']:9.4f} {r['speedup']:8.1f}  {eq}", flush=True)
    mins = min(r["speedup"] for r in res.values())
    fw = res.get("fedfw", {}).get("speedup", float("nan"))
    ok = all(r["equal"] for r in res.values())
    print(f"min_speedup={mins:.1f} fedfw_speedup={fw:.1f} all_equal={ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
