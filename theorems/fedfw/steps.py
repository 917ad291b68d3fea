"""Numerical audit steps of FedFW's proofs: (24)-(26) and (33)-(34) of Theorem 1, (53)-(54) and
(58)-(62) of Theorem 2, each checked at random points X in D^n of a few instances (``check_on_grid`` over the
grid ``case`` x ``point``: the instances and the number of points are stated in the step's evidence)."""
from __future__ import annotations

import numpy as np

from fedcheck.algorithms import fw_gap
from fedcheck.problems import InstanceBatch, RandomFamily

POINTS = 64


def _lmo(S, G):
    """The batched set's LMO on (k, B, ..., p) directions (the set broadcasts over its leading instance axis)."""
    Gt = np.moveaxis(G, 0, 1)
    shp = Gt.shape
    return np.moveaxis(S.lmo(Gt.reshape(shp[0], -1, shp[-1])).reshape(shp), 1, 0)


def _random_points(S, B, n, p, rng, k):
    """k points of D^n per instance: random convex combinations of LMO outputs (extreme points), (k, B, n, p)."""
    out = np.zeros((k, B, n, p))
    for _ in range(6):
        v = _lmo(S, rng.standard_normal((k, B, n, p)))
        w = rng.uniform(0, 1, (k, B, n, 1))
        out = (1 - w) * out + w * v
    return out


def _batch(family, seeds):
    return InstanceBatch([family.draw(s) for s in seeds])


def theorem1_steps_data(seeds=(0, 1, 2)):
    """Values of both sides of (26) after one FedFW step from random X^t, and of (34) at random X, on Theorem 1's
    family (least squares, l1 ball)."""
    from fedcheck.problems import solve_consensus
    fam = RandomFamily(loss="least_squares", set="l1", n=10, m=20, p=20, radius=1.0, heterogeneity=1.0)
    insts = [fam.draw(s) for s in seeds]
    sols = [solve_consensus(i) for i in insts]
    b = InstanceBatch(insts)
    B, n, p = b.B, b.n, b.p
    rng = np.random.default_rng(np.random.SeedSequence(1726))
    X = _random_points(b.set, B, n, p, rng, POINTS)                   # (k, B, n, p)
    Lc = b.loss.smoothness().max(-1)
    Dm = np.array([i.set.diameter for i in insts])
    Fs = np.array([s.F_star for s in sols])
    Fl = np.array([s.F_lower for s in sols])
    Ys = np.array([s.Y_norm for s in sols])
    t = rng.integers(1, 1000, POINTS).astype(float)[:, None]        # one round t per point
    eta, lam = 2.0 / (t + 1), np.sqrt(t + 1)                         # lambda_0 = 1
    xbar = X.mean(2, keepdims=True)
    d2 = ((X - xbar) ** 2).sum((-2, -1))
    Fhat = np.stack([b.loss.value(Xk).mean(-1) for Xk in X])        # (k, B)
    G = np.stack([b.loss.grad(Xk) for Xk in X]) / n + lam[..., None, None] * (X - xbar)
    Snew = _lmo(b.set, G)
    X1 = X + eta[..., None, None] * (Snew - X)
    x1bar = X1.mean(2, keepdims=True)
    d2n = ((X1 - x1bar) ** 2).sum((-2, -1))
    F1 = np.stack([b.loss.value(Xk).mean(-1) for Xk in X1])
    Lhat = Lc[None, :] / n + lam
    lhs26 = F1 + 0.5 * lam * d2n - Fl[None, :]                      # F^_t(X^{t+1}) - F^(X*) (upper end)
    rhs26 = (1 - eta) * (Fhat + 0.5 * lam * d2 - Fs[None, :]) - 0.5 * eta * lam * d2 + 0.5 * Lhat * eta**2 * n * Dm**2
    lhs34 = -(Fhat - Fl[None, :])                                   # F^(X*) - F^(X) <= ||Y*|| dist(X, C)
    rhs34 = Ys[None, :] * np.sqrt(d2)
    return {"(26)": (lhs26, rhs26), "(34)": (lhs34, rhs34), "instances": [f"theorem1 family seed {s}" for s in seeds]}


def theorem2_steps_data(seeds=(0, 1, 2)):
    """Both sides of (54) (with ||grad F^(X)||_F for G) and of (62) (with ||grad F^(xbar 1^T)||_F + L D/sqrt(n) for
    G + LD: the sharper form the proof's Cauchy-Schwarz steps give) at random X in D^n, lambda = 1, on the signed
    quadratic family of Theorem 2 (non-convex)."""
    from theorems.fedfw.measurements import SignedQuadraticFamily
    b = _batch(SignedQuadraticFamily(), seeds)
    B, n, p = b.B, b.n, b.p
    rng = np.random.default_rng(np.random.SeedSequence(1727))
    X = _random_points(b.set, B, n, p, rng, POINTS)
    lam = 10.0 ** rng.uniform(-2, 2, (POINTS, 1))
    xbar = X.mean(2, keepdims=True)
    dist = np.sqrt(((X - xbar) ** 2).sum((-2, -1)))
    Gh = np.stack([b.loss.grad(Xk) for Xk in X]) / n                      # grad F^(X), (k, B, n, p)
    g = Gh + lam[..., None, None] * (X - xbar)
    gap_hat = np.einsum("kbip,kbip->kb", g, X - _lmo(b.set, g))
    lhs54 = -gap_hat
    rhs54 = np.sqrt((Gh ** 2).sum((-2, -1))) * dist - lam * dist ** 2
    Xb = np.broadcast_to(xbar, X.shape)
    Gb = np.stack([b.loss.grad(np.ascontiguousarray(Xk)) for Xk in Xb]) / n
    Lc = b.loss.smoothness().max(-1)
    Dm = np.array([i.set.diameter for i in b.instances])
    gap_x = np.stack([fw_gap(b.loss, b.set, xbar[k, :, 0]) for k in range(POINTS)])
    lhs62 = gap_x
    rhs62 = gap_hat + (np.sqrt((Gb ** 2).sum((-2, -1))) + Lc * Dm / np.sqrt(n)) * dist
    # (60) as printed: the third term <grad F^(Xbar) - grad F^(Xbar), X - U> is zero, so the printed second line
    # would say max_U <grad F^(X), X - U> = max_U {<grad F^(Xbar), Xbar - U> + <grad F^(Xbar), X - Xbar>}
    # over U in D^n cap C; both sides at random X:
    lmo_u = _lmo(b.set, Gh.sum(2))                                           # U = u 1^T, u = lmo(sum_i grad_i)
    lhs60 = np.einsum("kbip,kbip->kb", Gh, X - lmo_u[:, :, None, :])
    lmo_b = _lmo(b.set, Gb.sum(2))
    rhs60 = np.einsum("kbip,kbip->kb", Gb, np.broadcast_to(xbar, X.shape) - lmo_b[:, :, None, :]) + \
        np.einsum("kbip,kbip->kb", Gb, X - xbar)
    return {"(54)": (lhs54, rhs54), "(62)": (lhs62, rhs62), "(60) as printed": (lhs60, rhs60),
            "instances": [f"signed quadratic seed {s}" for s in seeds]}


def grid_step(data_fn, key, what, relation="<="):
    """A ``grid`` ProofStep body: ``lhs <= rhs`` at every (point, case) of ``data_fn()[key]``."""
    def run():
        from fedcheck import steps as A
        d = data_fn()
        lhs, rhs = d[key]
        k, B = lhs.shape
        return A.check_on_grid(lambda point, case: lhs[point.astype(int), case.astype(int)],
                               lambda point, case: rhs[point.astype(int), case.astype(int)],
                               {"point": np.arange(k), "case": np.arange(B)},
                               f"{what} ({k} random points of D^n on each of: {', '.join(d['instances'])})",
                               relation=relation)
    return run
