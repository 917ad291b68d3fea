"""FedDualAvg in the entropic geometry: quadratic clients on the probability simplex and the method.

``F_m(w) = 1/2 w^T Q_m w + c_m^T w``, ``Phi = (1/M) sum_m F_m + psi``, ``psi(w) = <u, w> + chi_Delta(w)``; the
norm is ``||.||_1`` and its dual ``||.||_inf``; ``h`` is the negative entropy, ``w_0`` the uniform point.  Exact
constants in that geometry (Assumptions 1 and 3 of the paper):

* ``L = max_m max_{i,j} |Q_m[i, j]|`` -- the operator norm ``l1 -> l_inf`` of ``Q_m`` (the largest entry), so
  ``||grad F_m(x) - grad F_m(y)||_inf <= L ||x - y||_1``;
* ``G = max_m sup_{w in Delta} ||Q_m w + c_m||_inf = max_{m, i, j} |Q_m[j, i] + c_m[j]|`` (a convex function of
  ``w`` is largest at a vertex ``e_i``);
* ``B = D_h(w*, w_0) = KL(w* || uniform) = sum_i w*_i log(d w*_i)`` (at most ``log d``), with ``w*`` from cvxpy;
  the interval ``[B(w*) - dB, B(w*) + dB]`` covers the solver's error (``dB`` from the certified gap, by the
  strong convexity of ``Phi`` on the simplex).

``F*`` from cvxpy (Clarabel) and a certified lower bound that does not trust the solver: the Frank-Wolfe gap
``Phi(w) + min_i grad_i Phi(w) - <grad Phi(w), w>``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedcheck.problems import instance_rng


@dataclass
class SimplexQuadInstance:
    Q: np.ndarray            # (M, d, d)
    c: np.ndarray            # (M, d)
    K: int
    u: np.ndarray            # (d,) linear part of psi
    seed: int | None = None

    @property
    def M(self) -> int:
        return self.c.shape[0]

    @property
    def d(self) -> int:
        return self.c.shape[1]

    def Phi(self, W: np.ndarray) -> np.ndarray:
        W = np.atleast_2d(W)
        Qb, cb = self.Q.mean(0), self.c.mean(0)
        return 0.5 * np.einsum("bi,ij,bj->b", W, Qb, W) + W @ (cb + self.u)

    def grad(self, w: np.ndarray) -> np.ndarray:
        return self.Q.mean(0) @ w + self.c.mean(0) + self.u

    def describe(self) -> dict:
        return {"family": "simplex quadratics (entropic geometry)", "M": self.M, "d": self.d, "K": self.K,
                "seed": self.seed}

    def sup_phi(self) -> float:
        """``max`` of ``Phi`` over the simplex, certified: at a vertex, ``max_i Qbar_ii/2 + (cbar + u)_i``, when
        ``Qbar`` is positive semidefinite (a convex function on a polytope); else ``max_ij Qbar_ij/2 + max_i (cbar +
        u)_i`` (``w^T Qbar w = sum_ij w_i w_j Qbar_ij`` for a probability vector ``w``)."""
        Qb, lin = self.Q.mean(0), self.c.mean(0) + self.u
        if np.linalg.eigvalsh(0.5 * (Qb + Qb.T)).min() >= 0:
            return float(np.max(0.5 * np.diag(Qb) + lin))
        return float(0.5 * Qb.max() + lin.max())

    def constants(self) -> dict:
        L = float(np.abs(self.Q).max())
        G = float(np.abs(self.Q + self.c[:, :, None]).max())      # |Q_m[j, i] + c_m[j]|
        return {"L": L, "G": G, "sigma": 0.0}


@dataclass(frozen=True)
class SimplexQuadraticFamily:
    """``Q_m = A_m^T A_m / d + mu I`` (heterogeneous curvature), ``c_m = c_0 + tau xi_m`` (heterogeneous linear
    terms), ``u = lam * N(0, I)``."""

    d: int = 6
    M: int = 4
    K: int = 5
    mu: float = 0.2
    tau: float = 0.5
    lam: float = 0.3

    @property
    def key(self) -> str:
        return f"entropic:simplexquad:{self.d}x{self.M}:K={self.K}:mu={self.mu}:tau={self.tau}:lam={self.lam}"

    def draw(self, seed: int) -> SimplexQuadInstance:
        rng = instance_rng(seed, self.key)
        d, M = self.d, self.M
        A = rng.standard_normal((M, d, d))
        Q = np.einsum("mki,mkj->mij", A, A) / d + self.mu * np.eye(d)
        c = rng.standard_normal(d) + self.tau * rng.standard_normal((M, d))
        u = self.lam * rng.standard_normal(d)
        return SimplexQuadInstance(Q=Q, c=c, K=self.K, u=u, seed=int(seed))


@dataclass
class SimplexSolution:
    w_star: np.ndarray
    phi_star: float
    phi_lower: float
    B: float
    B_lo: float
    B_hi: float
    status: str
    reason: str | None = None

    def record(self) -> dict:
        return {"solver": "cvxpy/Clarabel", "status": self.status, "phi_star": self.phi_star,
                "phi_lower": self.phi_lower, "certified_gap": self.phi_star - self.phi_lower}


def solve_simplex(inst: SimplexQuadInstance) -> SimplexSolution:
    """``min Phi`` over the simplex (cvxpy, Clarabel) with the Frank-Wolfe certificate."""
    import cvxpy as cp
    d = inst.d
    Qb = 0.5 * (inst.Q.mean(0) + inst.Q.mean(0).T)
    w = cp.Variable(d)
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(w, cp.psd_wrap(Qb)) + (inst.c.mean(0) + inst.u) @ w),
                      [w >= 0, cp.sum(w) == 1])
    prob.solve(solver=cp.CLARABEL)
    if w.value is None:
        return SimplexSolution(np.full(d, np.nan), np.nan, np.nan, np.nan, np.nan, np.nan, str(prob.status),
                               reason=f"Clarabel: {prob.status}")
    ws = np.clip(np.asarray(w.value, dtype=float), 0.0, None)
    ws /= ws.sum()
    phi = float(inst.Phi(ws)[0])
    g = inst.grad(ws)
    lower = phi + float(g.min() - g @ ws)          # Phi(v) >= Phi(w) + <g, v - w> for every v in the simplex
    gap = max(phi - lower, 0.0)
    mu = float(np.linalg.eigvalsh(Qb).min())       # Phi is mu-strongly convex (l2): ||w - w*||_2^2 <= 2 gap/mu
    dist = np.sqrt(2 * gap / mu) if mu > 0 else np.inf
    pos = ws > 0
    B = float(np.sum(ws[pos] * np.log(d * ws[pos])))
    # |d/dw (w log(d w))| = |log(d w) + 1| <= log d + 1 + |log w_min| on the support; a crude Lipschitz bound
    # for the KL over points within dist of w* (coordinates at least 1e-300); dB = sqrt(d) dist * that bound
    slope = np.log(d) + 1 + np.abs(np.log(np.maximum(ws, 1e-300))).max()
    dB = float(np.sqrt(d) * dist * slope) if np.isfinite(dist) else np.inf
    reason = None if gap <= 1e-7 * max(1.0, abs(phi)) else f"certified gap {gap:.2e} too large"
    return SimplexSolution(ws, phi, lower, B, max(B - dB, 0.0), min(B + dB, np.log(d)), str(prob.status),
                           reason=reason)


# ---- the method: FedDualAvg with the entropic mirror map --------------------------------------------------
# FedDualAvg (Algorithm 3) with a non-Euclidean distance-generating function.
#
# ``h(w) = sum_i w_i log w_i`` (negative entropy, 1-strongly convex w.r.t. ``||.||_1`` on the simplex), ``psi(w) =
# <u, w> + chi_Delta(w)`` (a linear term, possibly zero, plus the simplex indicator).  The mirror map of Algorithm 3,
# ``grad(h + a psi)^*(z) = argmin_w { -<z, w> + a psi(w) + h(w) }``, is ``softmax(z - a u)`` (:func:`mirror`;
# property-tested against cvxpy in ``tests/test_feddualavg.py``).  Algorithm 3 then reads, per round ``r``::
#
#     clients start at z^m_{r,0} = z_r;  for k = 0..K-1:
#         w^m_{r,k} = softmax(z^m_{r,k} - (eta_s eta_c r K + eta_c k) u)
#         z^m_{r,k+1} = z^m_{r,k} - eta_c grad f(w^m_{r,k}; xi)
#     z_{r+1} = z_r + eta_s (1/M) sum_m (z^m_{r,K} - z_r);   w_{r+1} = softmax(z_{r+1} - eta_s eta_c (r+1) K u)
#
# with ``z_0 = grad h(w_0) = log w_0 + 1`` (the constant is immaterial: softmax ignores it).  Vectorized over
# instances ``B`` and clients ``M`` (no Python loop over clients).  Recorded: ``Phi`` of the average of the
# virtual iterates ``w_hat_{r,k} = softmax(zbar_{r,k} - a_{r,k} u)``, ``k = 1..K`` (Theorem C.1's output (4.4),
# meaningful for ``eta_s = 1``) and of the average of the server iterates ``w_1..w_R`` (Theorem E.1's output).
def mirror(z: np.ndarray, a=0.0, u: np.ndarray | None = None) -> np.ndarray:
    """``argmin_{w in simplex} -<z, w> + a <u, w> + sum_i w_i log w_i = softmax(z - a u)`` along the last axis
    (stable: the maximum is subtracted first).  ``a`` broadcasts against ``z[..., 0]``."""
    z = np.asarray(z, dtype=float)
    if u is not None:
        z = z - np.asarray(a, dtype=float)[..., None] * np.asarray(u, dtype=float)
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def feddualavg_entropic(Q: np.ndarray, c: np.ndarray, *, rounds: int, K: int, eta_c, eta_s=1.0,
                        u: np.ndarray | None = None, w0: np.ndarray | None = None, noise: float = 0.0,
                        rng: np.random.Generator | None = None) -> dict:
    """FedDualAvg (Alg. 3) with the entropic mirror map on quadratic clients ``F_m(w) = 1/2 w^T Q_m w + c_m^T w``
    (``Q``: ``(B, M, d, d)``, ``c``: ``(B, M, d)``), ``psi = <u, w> + chi_Delta`` (``u``: ``(B, d)`` or None).
    ``eta_c``, ``eta_s``: scalars or ``(B,)``.  ``noise > 0`` adds ``N(0, noise^2 I)`` to every client gradient
    (needs ``rng``).  Returns ``{"Phi_hat": (rounds, B), "Phi_avg": (rounds, B), "w": (B, d), "w_hat": (B, d)}``:
    row ``R-1`` holds ``Phi`` at the outputs after ``R`` rounds."""
    Q = np.asarray(Q, dtype=float)
    c = np.asarray(c, dtype=float)
    B, M, d = c.shape
    ec = np.broadcast_to(np.asarray(eta_c, dtype=float), (B,))
    es = np.broadcast_to(np.asarray(eta_s, dtype=float), (B,))
    uu = np.zeros((B, d)) if u is None else np.broadcast_to(np.asarray(u, dtype=float), (B, d))
    Qbar, cbar = Q.mean(1), c.mean(1)

    def phi(w):                       # (B, d) -> (B,)
        return 0.5 * np.einsum("bi,bij,bj->b", w, Qbar, w) + (cbar * w).sum(-1) + (uu * w).sum(-1)

    w_start = np.full((B, d), 1.0 / d) if w0 is None else np.broadcast_to(np.asarray(w0, dtype=float), (B, d))
    z = np.log(w_start) + 1.0
    hat_sum, srv_sum = np.zeros((B, d)), np.zeros((B, d))
    out_hat, out_avg = np.empty((rounds, B)), np.empty((rounds, B))
    for r in range(rounds):
        Z = np.repeat(z[:, None, :], M, 1)                                  # (B, M, d)
        for k in range(K):
            a = es * ec * r * K + ec * k                                    # (B,)
            W = mirror(Z, np.repeat(a[:, None], M, 1), uu[:, None, :])
            g = np.einsum("bmij,bmj->bmi", Q, W) + c
            if noise > 0:
                g = g + noise * rng.standard_normal(g.shape)
            Z = Z - ec[:, None, None] * g
            # virtual iterate w_hat_{r,k+1} of (4.4): the mirror of the clients' mean dual at weight a_{r,k+1}
            hat_sum += mirror(Z.mean(1), a + ec, uu)
        z = z + es[:, None] * (Z.mean(1) - z)
        w_srv = mirror(z, es * ec * (r + 1) * K, uu)
        srv_sum += w_srv
        out_hat[r] = phi(hat_sum / ((r + 1) * K))
        out_avg[r] = phi(srv_sum / (r + 1))
    return {"Phi_hat": out_hat, "Phi_avg": out_avg, "w": w_srv, "w_hat": hat_sum / (rounds * K),
            "w_avg": srv_sum / rounds}
