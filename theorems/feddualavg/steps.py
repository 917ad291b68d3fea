"""The audited proof steps of FedDualAvg: the tuned-step derivations (symbolic) and, checked numerically,
Proposition C.4 and Claim C.6 (Lemma C.2's proof),
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

import sympy as sp

from fedcheck import algorithms as engine
from fedcheck import steps as A
from fedcheck.problems import (InstanceContext, QuadInstance, Zero, batch_of, instance_rng, resolve_all,
                               solve_composite)
from fedcheck.symbols import K, L
from fedcheck.verdicts import POLICY
from theorems.feddualavg.problems import ConstrainedQuadraticFamily, SharedQuadraticFamily
from theorems.feddualavg.sources import SRC_STEP
from theorems.feddualavg.symbols import eta

__all__ = ["dtilde", "c2_steps_data", "d2_steps_data", "e_steps_data", "e3_fixed_point_instance", "grid_step",
           "mean_step", "symbolic_proof_steps", "lemma_c2_audit_steps", "lemma_d2_audit_steps",
           "theorem_4_1_audit_steps"]

ROUNDS_C, ROUNDS_E, DRAWS = 12, 60, 256


def dtilde(reg, a, w, z):
    """``D~_{h + a psi}(w, z)`` for ``h = 1/2||.||^2`` (batched over the leading axis; ``a`` ``(B,)``)."""
    wh = reg.prox(z, a)
    a_ = np.asarray(a, dtype=float)
    return (0.5 * (w * w).sum(-1) + a_ * reg.value(w) - 0.5 * (wh * wh).sum(-1) - a_ * reg.value(wh)
            - ((z) * (w - wh)).sum(-1))


def _insts():
    return [("F1 l1 (Gaussian noise)", SharedQuadraticFamily(d=6, M=4, K=5, noise=0.3, reg="l1", lam=0.2,
                                                                geometry="euclidean").draw(0)),
            ("F2 l2 ball, client Hessians differ (sphere noise)",
             ConstrainedQuadraticFamily(d=6, M=4, K=5, noise=0.3, ball="l2ball").draw(0))]


def _consts(inst):
    sol = solve_composite(inst)
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
    out = {"C.6": ([], []), "C.4": ([], [], []), "C.25": ([], []), "labels": []}
    for label, inst in _insts():
        sol, cs = _consts(inst)
        Lv, sig, Mv = cs["L"], cs["sigma"], inst.M
        ec = 1.0 / (4 * Lv)
        batch = batch_of([inst])
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
    out = {"D.4": ([], []), "D.6": ([], []), "labels": []}
    for seed in (0, 1):
        inst = SharedQuadraticFamily(d=6, M=4, K=5, noise=0.3, reg="l1", lam=0.2, tau=0.5, geometry="Q").draw(seed)
        sol, cs = _consts(inst)
        Lv, zeta, Kv = cs["L"], cs["zeta"], inst.K
        ec = 1.0 / (4 * Lv)
        batch = batch_of([inst])
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
    q, a = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    return QuadInstance(Q=q[:, None, None], c=(-q * a)[:, None], e=0.5 * q * a * a, reg=Zero(1), K=2,
                          noise="none", geometry="euclidean", seed=None, source="feddualavg:audit:e3-fixed-point",
                          params={"q": q.tolist(), "a": a.tolist()})


@functools.lru_cache(maxsize=None)
def e_steps_data():
    """Lemma E.2 (E.4)-(E.6) per round (eta = 1/(8KL), eta_s = 10, noisy gradients, w = w* and a random w), and
    Lemma E.3 (E.7) and (E.33) with sigma = 0 on :func:`e3_fixed_point_instance` (eta = 1/(8KL), eta_s = 1, 10)."""
    out = {"E.2": ([], []), "labels": []}
    for label, inst in _insts():
        sol, cs = _consts(inst)
        Lv, Kv = cs["L"], inst.K
        eta = 1.0 / (8 * Kv * Lv)
        es = 10.0
        batch = batch_of([inst])
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
    batch = batch_of([inst])
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


# ---- the proof steps of the claims (``fedcheck audit feddualavg``) ------------------------------------------------
# The tuned-step derivations (SYM_C, SYM_D, SYM_E of bounds.py) are the proof steps of the tuned claims.  Rate facts
# stay out (they state the order of a bound, not a step of its proof).
def symbolic_proof_steps(facts, reference, source=None):
    return tuple(A.ProofStep(c.name, c.name, "symbolic", (lambda c=c: A.from_symbolic_claim(c)), reference=reference,
                             source=source)
                 for c in facts if " is of order R^" not in c.name)


# Proposition C.4, Claims C.6, D.4, D.6, D.7, Lemmas E.2, E.3 (with the proof lines around them that decide whether
# they follow), on the pathwise / conditional-expectation data above.
def lemma_c2_audit_steps():
    from sympy.stats import E as Expect, Normal
    s_, M_, ec, a_, b_, cc, tt = sp.symbols("s M eta_c a b c t", positive=True)

    def c25_as_printed():
        """d = 1, psi = 0, grad F = 0 at the state: w^_{k+1} - w^_k = -eta_c xi_bar = eta_c eps_bar, eps_bar ~
        N(0, s^2/M), sigma^2 = s^2: (C.25)'s first line is eta_c E[eps_bar^2], its 'dual norm' line eta_c E|eps_bar|^2."""
        X = Normal("eps_bar", 0, s_ / sp.sqrt(M_))
        lhs = ec * sp.simplify(Expect(X**2))
        rhs = ec * sp.simplify(Expect(sp.Abs(X)))**2
        out = A.prove_le(lhs, rhs, f"E<eps_bar, w^_(k+1) - w^_k> = {sp.sstr(lhs)} against E||eps_bar|| "
                                   f"E||w^_(k+1) - w^_k|| = {sp.sstr(rhs)} (ratio pi/2)")
        return out

    def c28_quadratic():
        return A.all_of(
            ("(eta_c sigma/sqrt(M)) b - b^2/4 <= eta_c^2 sigma^2/M for every b (the 'quadratic maximum')",
             A.prove_nonnegative(ec**2 * tt**2 - (ec * tt * b_ - b_**2 / 4), "with t = sigma/sqrt(M)",
                                 transform=sp.factor)),
            ("eta_c L ||.||^2 - 1/2 ||.||^2 <= -1/4 ||.||^2 for eta_c <= 1/(4L) ((C.19)-(C.21); eta_c = 1/(4L(1 + c)))",
             A.prove_nonnegative(sp.simplify(sp.Rational(1, 4) - L / (4 * L * (1 + cc))))))

    def young_repair():
        return A.prove_nonnegative(ec**2 * a_**2 - (ec * a_ * b_ - b_**2 / 4), "eta_c ||a||_* ||b|| - ||b||^2/4 <= "
                                   "eta_c^2 ||a||_*^2 pointwise, so E[eta_c <a, b> - ||b||^2/4 | F] <= eta_c^2 "
                                   "E||a||_*^2 <= eta_c^2 sigma^2/M", transform=sp.factor)

    return (
        A.ProofStep("Claim C.6 along runs", "F(w^_{k+1}) - F(w) <= <(1/M) sum_m grad f(w^m_k; xi), w^_{k+1} - w> + "
                    "<(1/M) sum_m (grad F_m(w^m_k) - grad f(w^m_k; xi)), w^_{k+1} - w> + L ||w^_{k+1} - w^_k||^2 + "
                    "(L/M) sum_m ||zbar_k - z^m_k||_*^2 (deterministic)", "grid",
                    grid_step(c2_steps_data, "C.6", "(C.15) at every (r, k), eta_c = 1/(4L), noisy gradients"),
                    reference="Claim C.6, (C.14)-(C.15), (C.43)-(C.50)", source=SRC_STEP["C.6"]),
        A.ProofStep("Proposition C.4 (conditional expectation)", "E[D~_{h_{r,k+1}}(w, zbar_{k+1}) | F_k] <= D~_{h_{r,k}}(w, "
                    "zbar_k) - eta_c E[Phi(w^_{k+1}) - Phi(w) | F_k] + eta_c L E[(1/M) sum_m ||zbar_k - z^m_k||_*^2 | F_k] "
                    "+ eta_c^2 sigma^2/M", "grid",
                    mean_step(c2_steps_data, "C.4", "(C.10)-(C.11) at every visited state"),
                    reference="Proposition C.4, (C.10)-(C.11)", source=SRC_STEP["C.4"]),
        A.ProofStep("(C.25) as printed", "E[<a, b> | F] <= E[||a||_* | F] E[||b|| | F] with a = (1/M) sum_m (grad F_m - "
                    "grad f), b = w^_{k+1} - w^_k, which depends on the same noise ('by definition of dual norm')",
                    "symbolic", c25_as_printed, reference="(C.25)", source=SRC_STEP["C.25"],
                    conclusion="survives: Young's inequality before the expectation gives (C.28)'s eta_c^2 sigma^2/M "
                               "with the same constants (the repaired step below)"),
        A.ProofStep("(C.19)-(C.21), (C.28) quadratic steps", "eta_c L ||d||^2 - ||d||^2/2 <= -||d||^2/4 and "
                    "max_b (eta_c sigma b/sqrt(M) - b^2/4) = eta_c^2 sigma^2/M", "symbolic", c28_quadratic,
                    reference="(C.19)-(C.21), (C.28)", source=SRC_STEP["C.28"]),
        A.ProofStep("(C.25)-(C.28) repaired pointwise", "Young's inequality before the expectation: eta_c <a, b> - "
                    "||b||^2/4 <= eta_c^2 ||a||_*^2, which gives (C.28)'s eta_c^2 sigma^2/M without (C.25)", "symbolic",
                    young_repair, reference="(C.25)-(C.28)", paper=False, source=SRC_STEP["C.25"]),
    )


def lemma_d2_audit_steps():
    zz, gF, dl, ep, ec = sp.symbols("z gradF delta eps eta_c", real=True)

    def d7():
        d = d2_steps_data()["D.7"]
        grid = {"draw": np.arange(len(d["formula"]))}

        def at(x):
            return lambda draw: x[draw.astype(int)]
        return A.all_of(
            ("the closed-form maximizer w = A^-1 z / sqrt(z^T A^-1 z), A = Q/||Q||_2, has primal norm 1",
             A.check_on_grid(at(d["primal_norm_of_maximizer"]), at(np.ones_like(d["formula"])), grid, "||w|| <= 1")),
            ("and attains <z, w> = sqrt(||Q||_2 z^T Q^-1 z)",
             A.check_on_grid(at(d["attained"]), at(d["formula"]), grid, "<z, w> >= formula", relation=">=")),
            ("no point of 400 random points of the unit sphere of ||.|| exceeds it",
             A.check_on_grid(at(d["sampled_max"]), at(d["formula"]), grid, "max <z, u> <= formula")),
            method="grid")

    def d23_as_printed():
        # both sides minus their common part z - eta_c grad F
        return A.prove_identity(-ec * (ep + dl), ec * dl + ec * ep,
                                "(D.22) z - eta_c grad f = z - eta_c (grad F + eps + delta) against (D.23) as printed, "
                                "z - eta_c grad F + eta_c delta + eta_c eps (compared after removing z - eta_c grad F)")
    return (
        A.ProofStep("Claim D.4 along runs", "||z^{m1}_{k+1} - z^{m2}_{k+1}||^2_{Q^-1} <= (1 + 1/K) ||dz - eta_c Q dw - "
                    "eta_c d eps||^2_{Q^-1} + (1 + K) eta_c^2 ||d delta||^2_{Q^-1} (deterministic, every client pair)",
                    "grid", grid_step(d2_steps_data, "D.4", "(D.13)-(D.14), every client pair and step, eta_c = 1/(4L)"),
                    reference="Claim D.4, (D.13)-(D.14), (D.25)-(D.31)", source=SRC_STEP["D.4"]),
        A.ProofStep("(D.23) as printed", "z - eta_c grad f(w; xi) = z - eta_c grad F(w) + eta_c (grad F_m - grad F) + "
                    "eta_c (grad f - grad F_m) (two signs; (D.24) has them right)", "symbolic", d23_as_printed,
                    reference="(D.22)-(D.24)", source=SRC_STEP["D.23"]),
        A.ProofStep("Claim D.6 along runs", "||delta^{m1} - delta^{m2}||^2_{Q^-1} <= 4 ||Q||_2^-1 zeta^2 (zeta: "
                    "sup ||grad F_m - grad F||_*, the proof's reading of (4.7))", "grid",
                    grid_step(d2_steps_data, "D.6", "(D.16), every client pair and step"),
                    reference="Claim D.6, (D.16), (D.50)-(D.51)", source=SRC_STEP["D.6"]),
        A.ProofStep("Claim D.7", "the dual of ||w|| = (w^T Q w/||Q||_2)^{1/2} is ||z||_* = (||Q||_2 z^T Q^-1 z)^{1/2}",
                    "grid", d7, reference="Claim D.7", source=SRC_STEP["D.7"]),
    )


def theorem_4_1_audit_steps():
    u, v, b_, c_, t_ = sp.symbols("u v b c t", positive=True)    # u: eta_c; eta_c = 1/(16 (1 + v)) <= 1/16

    def e3_uniform():
        """FedDualAvg with psi = 0 and h Euclidean is FedAvg with a server step; on e3_fixed_point_instance its round
        map is affine with the fixed point w_inf(eta_c) (independent of eta_s) and slope 1 - (eta/2)(6 - 5 eta_c)."""
        w = sp.Symbol("w", real=True)
        q, a = (1, 2), (1, -1)
        s = [1 - (1 - u * qm)**2 for qm in q]                     # K = 2 local gradient steps on q_m (w - a_m)^2/2
        w_inf = sp.solve(sum(sm * (w - am) for sm, am in zip(s, a)), w)[0]
        w_star = sp.Rational(sum(qm * am for qm, am in zip(q, a)), sum(q))
        bias = sp.simplify(w_inf - w_star)
        eta_ = sp.Symbol("eta", positive=True)
        slope = 1 - eta_ / 2 * sp.simplify(sum(sm for sm in s) / u)
        sub = {u: 1 / (16 * (1 + v))}
        parts = (
            (f"fixed point w_inf - w* = {sp.sstr(bias)} > 0 for 0 < eta_c <= 1/16",
             A.prove_nonnegative(sp.simplify(bias.subs(sub)))),
            ("the round map contracts: 1 - slope = (eta/2)(6 - 5 eta_c) >= 0",
             A.prove_nonnegative(sp.simplify((1 - slope).subs(sub)))),
            ("and slope = 1 - (eta/2)(6 - 5 eta_c) >= 0 for eta <= 1/(4KL) = 1/16",
             A.prove_nonnegative(sp.simplify(slope.subs(sub).subs(eta_, 1 / (16 * (1 + c_)))))),
        )
        res = A.all_of(*parts)
        if res.verdict != A.PROVEN:
            return res
        return A.StepOutcome(A.REFUTED, res.evidence + "; so w_r -> w_inf != w*, D~_{h_{r,0}}(w*, z_r) converges and "
                             "the left side of (E.7) tends to 0 while its right side tends to -eta K (Phi(w_inf) - "
                             "Phi*) < 0: for every eta_c in (0, 1/16] (E.7) fails at every large r; no eta_c^max "
                             "independent of r (Theorem E.1 telescopes (E.7) over r = 0..R-1 for every R)",
                             witness={"instance": "d = 1, M = 2, F_m = q_m (w - a_m)^2/2, q = (1, 2), a = (1, -1), "
                                                  "psi = 0, K = 2, sigma = 0", "w_inf - w*": sp.sstr(bias)})

    def e28():
        return A.all_of(
            ("-(1/2 - L eta K/2) <= -3/8 for eta <= 1/(4KL) (eta = 1/(4KL(1 + c)))",
             A.prove_nonnegative(sp.simplify((sp.Rational(1, 2) - L * K / 2 / (4 * K * L * (1 + c_))) - sp.Rational(3, 8)))),
            ("-(3/8) b^2 + eta sigma sqrt(K/M) b <= -(1/4) b^2 + 2 eta^2 K sigma^2/M (t = sigma sqrt(K/M))",
             A.prove_nonnegative(-sp.Rational(1, 4) * b_**2 + 2 * eta**2 * t_**2
                                 - (-sp.Rational(3, 8) * b_**2 + eta * t_ * b_), transform=sp.factor)))

    return (
        A.ProofStep("Lemma E.2 per round", "D~_{h_{r+1,0}}(w, zbar_{r+1,0}) - D~_{h_{r,0}}(w, zbar_{r,0}) <= -D~_{h_{r,0}}"
                    "(w^_{r+1,0}, zbar_{r,0}) - eta K (Phi(w^_{r+1,0}) - Phi(w)) + (L/2) eta K ||w^_{r+1,0} - w^_{r,0}||^2"
                    " + eta K <grad F(w^_{r,0}) - (1/(MK)) sum_m sum_k grad f(w^m_{r,k}; xi), w^_{r+1,0} - w> "
                    "(deterministic)", "grid",
                    grid_step(e_steps_data, "E.2", "(E.4)-(E.6) every round, eta = 1/(8KL), eta_s = 10, noisy",
                                labels="E.2 labels"),
                    reference="Lemma E.2, (E.4)-(E.6), (E.9)-(E.13)", source=SRC_STEP["E.2"]),
        A.ProofStep("(E.28) quadratic steps", "-(1/2 - L eta K/2) <= -3/8 and the quadratic optimum 2 eta^2 K sigma^2/M",
                    "symbolic", e28, reference="(E.26)-(E.28)", source=SRC_STEP["E.28"]),
        A.ProofStep("Lemma E.3 with sigma = 0, every round", "D~_{h_{r+1,0}}(w*, z_{r+1}) - D~_{h_{r,0}}(w*, z_r) <= -eta "
                    "K (Phi(w^_{r+1,0}) - Phi*) (+ 3 eta^2 K sigma^2/M = 0), client Hessians differ, eta = 1/(8KL)",
                    "grid", grid_step(e_steps_data, "E.3", "(E.7) with sigma = 0, 400 rounds", labels="E.3 labels"),
                    reference="Lemma E.3, (E.7)", source=SRC_STEP["E.3"]),
        A.ProofStep("Lemma E.3 uniform in r", "there is eta_c^max (depending on eta and w_0 only) such that (E.7) holds "
                    "for every r when eta_c <= eta_c^max (as (E.8) uses it)", "symbolic", e3_uniform,
                    reference="Lemma E.3, (E.7)-(E.8); Theorem E.1", source=SRC_STEP["E.3"]),
        A.ProofStep("(E.33) with sigma = 0", "(sum_m sum_k E||w^_{r,0} - w^m_{r,k}||) E||w^_{r+1,0} - w|| <= eta K sigma^2/L "
                    "= 0 for some eta_c^max > 0", "grid",
                    grid_step(e_steps_data, "E.33", "(E.33) along the sigma = 0 runs, w = w*", labels="E.3 labels"),
                    reference="(E.32)-(E.33)", source=SRC_STEP["E.33"]),
    )
