"""Numerical audit steps of FedDualAvg's proofs (issue 17): Proposition C.4 and Claim C.6 (Lemma C.2's proof),
Claims D.4, D.6, D.7 (Lemma D.2's proof), Lemmas E.2 and E.3 (Theorem E.1's proof).

Every deterministic step is checked pathwise: both sides are computed at every local step (or round) of
FedDualAvg runs with noisy gradients (``check_on_grid`` over the grid ``case`` x ``point``; the instances,
runs and references are stated in the evidence).  Conditional expectations given ``F_{r,k}`` (Proposition
C.4) are estimated at each visited state by fresh noise draws: the step is ``verified`` when the mean plus
``z`` standard errors is below the right-hand side everywhere and ``refuted`` only when the mean minus ``z``
standard errors is above it somewhere (``z`` = the policy's ``statistical_z``).

``h = 1/2 ||.||_2^2`` throughout (the paper's choice), so ``grad(h + a psi)^* = prox_{a psi}`` and the
generalized Bregman divergence is ``D~_{h + a psi}(w, z) = h(w) + a psi(w) - h(w^) - a psi(w^) - <z, w - w^>``
with ``w^ = prox_{a psi}(z)``.
"""
from __future__ import annotations

import functools

import numpy as np

from fedcheck.core.verdict import POLICY

__all__ = ["dtilde", "c2_steps_data", "d2_steps_data", "e_steps_data", "e3_fixed_point_instance", "grid_step",
           "mean_step"]

ROUNDS_C, ROUNDS_E, DRAWS = 12, 60, 256


def dtilde(reg, a, w, z):
    """``D~_{h + a psi}(w, z)`` for ``h = 1/2||.||^2`` (batched over the leading axis; ``a`` ``(B,)``)."""
    wh = reg.prox(z, a)
    a_ = np.asarray(a, dtype=float)
    return (0.5 * (w * w).sum(-1) + a_ * reg.value(w) - 0.5 * (wh * wh).sum(-1) - a_ * reg.value(wh)
            - ((z) * (w - wh)).sum(-1))


def _insts():
    from fedcheck.problems import composite as P
    return [("F1 l1 (Gaussian noise)", P.SharedQuadraticFamily(d=6, M=4, K=5, noise=0.3, reg="l1", lam=0.2,
                                                                geometry="euclidean").draw(0)),
            ("F2 l2 ball, client Hessians differ (sphere noise)",
             P.ConstrainedQuadraticFamily(d=6, M=4, K=5, noise=0.3, ball="l2ball").draw(0))]


def _consts(inst):
    from fedcheck.problems import composite as P
    from fedcheck.problems.constants import InstanceContext, resolve_all
    sol = P.solve_composite(inst)
    return sol, {k: float(v.value) for k, v in resolve_all(InstanceContext(inst, None, sol, {})).items()}


def _refs(inst, sol, rng):
    """The reference points w of the steps: w* and a random point of dom psi."""
    X = rng.standard_normal((1, inst.d))
    if inst.reg.name == "l2ball":
        X = X / np.linalg.norm(X) * float(inst.reg.radius) * 0.7
    return {"w*": sol.w_star, "random w": X[0]}


@functools.lru_cache(maxsize=None)
def c2_steps_data():
    """Claim C.6 (C.14)-(C.15) and Proposition C.4 (C.10)-(C.11) along FedDualAvg runs (eta_s = 1,
    eta_c = 1/(4L), noisy gradients), at w = w* and a random w in dom psi, every (r, k)."""
    from fedcheck.algorithms import composite as engine
    from fedcheck.problems import composite as P
    from fedcheck.problems.instances import instance_rng
    out = {"C.6": ([], []), "C.4": ([], [], []), "C.25": ([], []), "labels": []}
    for label, inst in _insts():
        sol, cs = _consts(inst)
        Lv, sig, Mv = cs["L"], cs["sigma"], inst.M
        ec = 1.0 / (4 * Lv)
        batch = P.batch_of([inst])
        reg = batch.reg
        rng = instance_rng(0, "feddualavg.audit.c2")
        refs = _refs(inst, sol, rng)
        rows = {name: {"c6l": [], "c6r": [], "c4m": [], "c4s": [], "c4r": [], "c25l": [], "c25r": []} for name in refs}

        def hook(r, k, info, rows=rows, batch=batch, reg=reg):
            Z, W, a = info["Z"], info["W"], info["a"]
            zbar = info["zbar"]
            gF = batch.full_grad_clients(W).mean(1)                  # (1/M) sum_m grad F_m(w^m_{r,k})
            gs = info["g"].mean(1)                                  # (1/M) sum_m grad f(w^m_{r,k}; xi)
            zn = info["Zn"].mean(1)                                 # zbar_{r,k+1}
            what = reg.prox(zbar, a)
            whn = reg.prox(zn, a + ec)
            disc = ((Z - zbar[:, None, :]) ** 2).sum(-1).mean(1)    # (1/M) sum_m ||zbar - z^m||^2
            # conditional law of zbar_{r,k+1} given F_{r,k}: zbar - eta_c (gF + xi_bar), fresh noise draws
            xi = batch.noise_draw((DRAWS, Mv, inst.d), rng)
            xib = np.zeros((DRAWS, inst.d)) if xi is None else xi.mean(1)
            znd = zbar - ec * (gF + xib)                            # (DRAWS, d)
            whd = reg.prox(znd, np.full(DRAWS, a[0] + ec))
            for name, w in rows.items():
                wr = refs[name][None]
                # Claim C.6: the two inner products of (C.15) sum to <(1/M) sum grad F_m, w^_{k+1} - w>
                lhs6 = batch.F(whn) - batch.F(wr)
                rhs6 = (((gs) * (whn - wr)).sum(-1) + ((gF - gs) * (whn - wr)).sum(-1)
                        + Lv * ((whn - what) ** 2).sum(-1) + Lv * disc)
                w["c6l"].append(float(lhs6[0]))
                w["c6r"].append(float(rhs6[0]))
                # Proposition C.4: E[D~_{k+1}(w, zbar_{k+1}) + eta_c (Phi(w^_{k+1}) - Phi(w)) | F_k]
                #   <= D~_k(w, zbar_k) + eta_c L (1/M) sum ||zbar - z^m||^2 + eta_c^2 sigma^2 / M
                X = (dtilde(reg, np.full(DRAWS, a[0] + ec), np.repeat(wr, DRAWS, 0), znd)
                     + ec * (batch.Phi(whd) - batch.Phi(np.repeat(wr, DRAWS, 0))))
                w["c4m"].append(float(X.mean()))
                w["c4s"].append(float(X.std(ddof=1) / np.sqrt(DRAWS)))
                w["c4r"].append(float(dtilde(reg, a, wr, zbar)[0] + ec * Lv * disc[0] + ec**2 * sig**2 / Mv))
            # (C.25) as printed: E<eps_bar, w^_{k+1} - w^_k> <= E||eps_bar|| E||w^_{k+1} - w^_k||
            eps_bar = -xib
            rows[next(iter(rows))]["c25l"].append(float(((eps_bar * (whd - what)).sum(-1)).mean()))
            rows[next(iter(rows))]["c25r"].append(float(np.linalg.norm(eps_bar, axis=-1).mean()
                                                        * np.linalg.norm(whd - what, axis=-1).mean()))
        engine.feddualavg(batch, rounds=ROUNDS_C, eta_c=ec, eta_s=1.0, hook=hook, rng=rng)
        for name, w in rows.items():
            out["labels"].append(f"{label}, {name}")
            out["C.6"][0].append(w["c6l"])
            out["C.6"][1].append(w["c6r"])
            out["C.4"][0].append(w["c4m"])
            out["C.4"][1].append(w["c4s"])
            out["C.4"][2].append(w["c4r"])
        first = rows[next(iter(rows))]
        out["C.25"][0].append(first["c25l"])
        out["C.25"][1].append(first["c25r"])
    return {k: (tuple(np.array(x).T for x in v) if k != "labels" else v) for k, v in out.items()} | {
        "C.25 labels": [lbl for lbl, _ in _insts()], "what": f"{ROUNDS_C} rounds x K = 5 steps, {DRAWS} noise draws "
                                                                "per state"}


@functools.lru_cache(maxsize=None)
def d2_steps_data():
    """Claims D.4 (D.13)-(D.14) and D.6 (D.16) for every client pair at every step of FedDualAvg runs on shared-
    Hessian l1 quadratics in the Q geometry (eta_s = 1, eta_c = 1/(4L), Gaussian noise), and Claim D.7 on random
    draws of Q > 0 and z."""
    from fedcheck.algorithms import composite as engine
    from fedcheck.problems import composite as P
    from fedcheck.problems.instances import instance_rng
    out = {"D.4": ([], []), "D.6": ([], []), "labels": []}
    for seed in (0, 1):
        inst = P.SharedQuadraticFamily(d=6, M=4, K=5, noise=0.3, reg="l1", lam=0.2, tau=0.5, geometry="Q").draw(seed)
        sol, cs = _consts(inst)
        Lv, zeta, Kv = cs["L"], cs["zeta"], inst.K
        ec = 1.0 / (4 * Lv)
        batch = P.batch_of([inst])
        Q = batch.Qbar[0]
        Qinv = np.linalg.inv(Q)
        nQ = float(np.linalg.norm(Q, 2))
        i, j = np.triu_indices(inst.M, 1)
        rows = {"d4l": [], "d4r": [], "d6l": []}

        def qn(V):
            return np.einsum("...i,ij,...j->...", V, Qinv, V)

        def hook(r, k, info):
            Z, Zn, W, g = info["Z"][0], info["Zn"][0], info["W"][0], info["g"][0]
            gFm = batch.full_grad_clients(info["W"])[0]            # grad F_m(w^m)
            gF = W @ Q.T + batch.cbar[0]                            # grad F(w^m)
            eps, dlt = g - gFm, gFm - gF
            dz, dzn, dw = Z[i] - Z[j], Zn[i] - Zn[j], W[i] - W[j]
            de, dd = eps[i] - eps[j], dlt[i] - dlt[j]
            rows["d4l"].append(qn(dzn))
            rows["d4r"].append((1 + 1 / Kv) * qn(dz - ec * dw @ Q.T - ec * de) + (1 + Kv) * ec**2 * qn(dd))
            rows["d6l"].append(qn(dd))
        engine.feddualavg(batch, rounds=ROUNDS_C, eta_c=ec, eta_s=1.0, hook=hook,
                          rng=instance_rng(seed, "feddualavg.audit.d2"))
        out["labels"].append(f"F1 (Q geometry) seed {seed}")
        out["D.4"][0].append(np.concatenate(rows["d4l"]))
        out["D.4"][1].append(np.concatenate(rows["d4r"]))
        d6 = np.concatenate(rows["d6l"])
        out["D.6"][0].append(d6)
        out["D.6"][1].append(np.full_like(d6, 4 * zeta**2 / nQ))
    res = {k: tuple(np.array(x).T for x in v) for k, v in out.items() if k != "labels"}
    # Claim D.7: sup_{w^T (Q/||Q||) w <= 1} <z, w> = sqrt(||Q|| z^T Q^-1 z); the maximizer in closed form, and
    # random points of the unit ball of the primal norm never exceed it
    rng = np.random.default_rng(np.random.SeedSequence(1707))
    n_draws, d = 200, 5
    A = rng.standard_normal((n_draws, 2 * d, d))
    Qs = np.einsum("nki,nkj->nij", A, A) / (2 * d) + 0.05 * np.eye(d)
    nQs = np.linalg.norm(Qs, 2, axis=(1, 2))
    Qi = np.linalg.inv(Qs)
    z = rng.standard_normal((n_draws, d))
    formula = np.sqrt(nQs * np.einsum("ni,nij,nj->n", z, Qi, z))
    Ai = Qi * nQs[:, None, None]                                    # (Q/||Q||)^-1
    wstar = np.einsum("nij,nj->ni", Ai, z) / np.sqrt(np.einsum("ni,nij,nj->n", z, Ai, z))[:, None]
    attained = (z * wstar).sum(-1)
    pnorm = np.sqrt(np.einsum("ni,nij,nj->n", wstar, Qs, wstar) / nQs)
    U = rng.standard_normal((n_draws, 400, d))
    U /= np.sqrt(np.einsum("nki,nij,nkj->nk", U, Qs, U) / nQs[:, None])[..., None]
    sampled = np.einsum("nki,ni->nk", U, z).max(1)
    res["D.7"] = {"formula": formula, "attained": attained, "primal_norm_of_maximizer": pnorm, "sampled_max": sampled}
    res["labels"] = out["labels"]
    return res


def e3_fixed_point_instance():
    """d = 1, M = 2 clients ``F_m(w) = q_m (w - a_m)^2 / 2`` with ``q = (1, 2)``, ``a = (1, -1)``, psi = 0, K = 2
    (exact gradients): client Hessians differ, so local steps bias FedAvg's (= FedDualAvg's, psi = 0) fixed point."""
    from fedcheck.problems import composite as P
    from fedcheck.problems.regularizers import Zero
    q, a = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    return P.QuadInstance(Q=q[:, None, None], c=(-q * a)[:, None], e=0.5 * q * a * a, reg=Zero(1), K=2,
                          noise="none", geometry="euclidean", seed=None, source="feddualavg:audit:e3-fixed-point",
                          params={"q": q.tolist(), "a": a.tolist()})


@functools.lru_cache(maxsize=None)
def e_steps_data():
    """Lemma E.2 (E.4)-(E.6) per round (eta = 1/(8KL), eta_s = 10, noisy gradients, w = w* and a random w), and
    Lemma E.3 (E.7) and (E.33) with sigma = 0 on :func:`e3_fixed_point_instance` (eta = 1/(8KL), eta_s = 1, 10)."""
    from fedcheck.algorithms import composite as engine
    from fedcheck.problems import composite as P
    from fedcheck.problems.instances import instance_rng
    out = {"E.2": ([], []), "labels": []}
    for label, inst in _insts():
        sol, cs = _consts(inst)
        Lv, Kv = cs["L"], inst.K
        eta = 1.0 / (8 * Kv * Lv)
        es = 10.0
        batch = P.batch_of([inst])
        reg = batch.reg
        rng = instance_rng(1, "feddualavg.audit.e2")
        refs = _refs(inst, sol, rng)
        zs = []

        def hook(r, k, info, zs=zs):
            if k == 0:
                zs.append(info["Z"][:, 0, :].copy())               # z_r (every client starts there)
        tr = engine.feddualavg(batch, rounds=ROUNDS_E, eta_c=eta / es, eta_s=es, hook=hook, rng=rng)
        zs.append(tr.final["z"])
        Z = np.concatenate(zs)                                      # (R+1, d): z_0..z_R
        Rn = len(Z) - 1
        aa = eta * Kv * np.arange(Rn + 1)                           # weights eta r K of h_{r,0}
        Wh = reg.prox(Z, aa)
        gbar = (Z[:-1] - Z[1:]) / (eta * Kv)                        # (1/(MK)) sum_m sum_k grad f(w^m_{r,k}; xi)
        gF = Wh[:-1] @ batch.Qbar[0].T + batch.cbar[0]
        for name, w in refs.items():
            W = np.repeat(w[None], Rn, 0)
            lhs = dtilde(reg, aa[1:], W, Z[1:]) - dtilde(reg, aa[:-1], W, Z[:-1])
            rhs = (-dtilde(reg, aa[:-1], Wh[1:], Z[:-1]) - eta * Kv * (batch.Phi(Wh[1:]) - batch.Phi(W))
                   + 0.5 * Lv * eta * Kv * ((Wh[1:] - Wh[:-1]) ** 2).sum(-1)
                   + eta * Kv * ((gF - gbar) * (Wh[1:] - W)).sum(-1))
            out["E.2"][0].append(lhs)
            out["E.2"][1].append(rhs)
            out["labels"].append(f"{label}, {name}")
    res = {"E.2": tuple(np.array(x).T for x in out["E.2"]), "E.2 labels": out["labels"]}
    # Lemma E.3 with sigma = 0 (and (E.33)) on the fixed-point instance
    inst = e3_fixed_point_instance()
    sol, cs = _consts(inst)
    Lv, Kv = cs["L"], inst.K
    eta = 1.0 / (8 * Kv * Lv)
    batch = P.batch_of([inst])
    reg = batch.reg
    e3l, e3r, e3s, e33, labels = [], [], [], [], []
    for es in (1.0, 10.0):
        zs, dev = [], []

        def hook(r, k, info, zs=zs, dev=dev):
            if k == 0:
                zs.append(info["Z"][:, 0, :].copy())
                dev.append(0.0)
            dev[-1] += float(np.linalg.norm(info["W"][0] - zs[-1][0], axis=-1).sum())   # sum_m ||w^_{r,0} - w^m_{r,k}||
        tr = engine.feddualavg(batch, rounds=400, eta_c=eta / es, eta_s=es, hook=hook)
        zs.append(tr.final["z"])
        Z = np.concatenate(zs)
        Rn = len(Z) - 1
        aa = eta * Kv * np.arange(Rn + 1)
        Wh = reg.prox(Z, aa)
        W = np.repeat(sol.w_star[None], Rn, 0)
        D = dtilde(reg, aa, np.repeat(sol.w_star[None], Rn + 1, 0), Z)
        gap = batch.Phi(Wh[1:]) - sol.phi_star
        e3l.append(D[1:] - D[:-1])
        e3r.append(-eta * Kv * gap)
        e3s.append(np.abs(D[1:]) + np.abs(D[:-1]) + eta * Kv * np.abs(gap))
        e33.append(np.asarray(dev) * np.linalg.norm(Wh[1:] - W, axis=-1))
        labels.append(f"eta_s = {es:g} (eta_c = {eta / es:.3g})")
    res["E.3"] = (np.array(e3l).T, np.array(e3r).T, np.array(e3s).T)
    res["E.33"] = (np.array(e33).T, np.zeros_like(np.array(e33).T))
    res["E.3 labels"] = labels
    res["E.3 limit"] = {"w_R": [float(x) for x in Wh[-1]], "w*": sol.w_star.tolist(),
                        "gap_R": float(gap[-1])}
    return res


def grid_step(data_fn, key, what, relation="<=", labels="labels"):
    """A ``grid`` ProofStep body: ``lhs <= rhs`` at every (point, case) of ``data_fn()[key]`` (optionally a third
    array: the scale of the rounding slack)."""
    def run():
        from fedcheck.core import steps as A
        d = data_fn()
        arrs = d[key]
        lhs, rhs = arrs[0], arrs[1]
        sc = arrs[2] if len(arrs) > 2 else np.maximum(np.abs(lhs), np.abs(rhs))
        k, B = lhs.shape
        return A.check_on_grid(lambda point, case: lhs[point.astype(int), case.astype(int)],
                               lambda point, case: rhs[point.astype(int), case.astype(int)],
                               {"point": np.arange(k), "case": np.arange(B)},
                               f"{what} ({k} points on each of: {'; '.join(d[labels])})", relation=relation,
                               scale=lambda point, case: sc[point.astype(int), case.astype(int)])
    return run


def mean_step(data_fn, key, what, labels="labels"):
    """A conditional expectation against a bound: ``verified`` when mean + z SE <= rhs at every point, ``refuted``
    when mean - z SE > rhs at some point (``check_on_grid`` on each end), else ``inconclusive``."""
    def run():
        from fedcheck.core import steps as A
        d = data_fn()
        mean, se, rhs = d[key]
        z = POLICY.statistical_z
        k, B = mean.shape
        grid = {"point": np.arange(k), "case": np.arange(B)}
        desc = f"{what} ({k} states on each of: {'; '.join(d[labels])}; mean of {DRAWS} draws, z = {z:g})"

        def side(x):
            return lambda point, case: x[point.astype(int), case.astype(int)]
        sc = side(np.maximum(np.abs(mean), np.abs(rhs)))
        upper = A.check_on_grid(side(mean + z * se), side(rhs), grid, desc + ", mean + z SE", scale=sc)
        if upper.verdict == A.VERIFIED:
            return upper
        lower = A.check_on_grid(side(mean - z * se), side(rhs), grid, desc + ", mean - z SE", scale=sc)
        if lower.verdict == A.REFUTED:
            return lower
        return A.StepOutcome(A.INCONCLUSIVE, f"{desc}: undecided (mean + z SE above, mean - z SE below the bound)",
                             grid=upper.grid, details=upper.details)
    return run
