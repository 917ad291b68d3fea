"""FedDualAvg in the entropic geometry on the probability simplex (issue 17; Yuan, Zaheer, Reddi, "Federated
Composite Optimization", ICML 2021, Algorithm 3 with a non-Euclidean distance-generating function).

``h(w) = sum_i w_i log w_i`` (negative entropy, 1-strongly convex w.r.t. ``||.||_1`` on the simplex), ``psi(w) =
<u, w> + chi_Delta(w)`` (a linear term, possibly zero, plus the simplex indicator).  The mirror map of Algorithm 3,
``grad(h + a psi)^*(z) = argmin_w { -<z, w> + a psi(w) + h(w) }``, is ``softmax(z - a u)`` (:func:`mirror`;
property-tested against cvxpy in ``tests/test_feddualavg.py``).  Algorithm 3 then reads, per round ``r``::

    clients start at z^m_{r,0} = z_r;  for k = 0..K-1:
        w^m_{r,k} = softmax(z^m_{r,k} - (eta_s eta_c r K + eta_c k) u)
        z^m_{r,k+1} = z^m_{r,k} - eta_c grad f(w^m_{r,k}; xi)
    z_{r+1} = z_r + eta_s (1/M) sum_m (z^m_{r,K} - z_r);   w_{r+1} = softmax(z_{r+1} - eta_s eta_c (r+1) K u)

with ``z_0 = grad h(w_0) = log w_0 + 1`` (the constant is immaterial: softmax ignores it).  Vectorized over
instances ``B`` and clients ``M`` (no Python loop over clients).  Recorded: ``Phi`` of the average of the
virtual iterates ``w_hat_{r,k} = softmax(zbar_{r,k} - a_{r,k} u)``, ``k = 1..K`` (Theorem C.1's output (4.4),
meaningful for ``eta_s = 1``) and of the average of the server iterates ``w_1..w_R`` (Theorem E.1's output).
"""
from __future__ import annotations

import numpy as np

__all__ = ["mirror", "feddualavg_entropic"]


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
