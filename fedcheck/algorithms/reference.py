"""Plain reference implementations: one instance, one client, one numpy update at a time.

These are written the way research code is written -- Python loops over instances,
rounds and clients, the oracles called on one client's vector -- and exist to check
the batched engine (``tests/test_engine_speed.py``) and to measure it against
(``benchmarks/engine.py``).  They are slow on purpose and never used by checks.
"""
from __future__ import annotations

import numpy as np

from fedcheck.problems.instances import InstanceBatch
from fedcheck.problems.losses import LeastSquares

__all__ = ["fedfw_loop", "fedfw_loop_least_squares_l1"]


def _client_grad(loss, k: int, i: int):
    """``x -> grad f_i(x)`` of client ``i`` of instance ``k`` through the loss's own oracle."""
    one = type(loss)(loss.A[k, i][None], loss.b[k, i][None])
    return lambda x: one.grad(x[None])[0]


def fedfw_loop(batch: InstanceBatch, eta: np.ndarray, lam: np.ndarray, rounds: int,
               X0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """FedFW (Algorithm 1, full participation) for any loss and set, client by client.

    Returns the final client points ``X`` (B, n, p) and server points ``xbar`` (B, p)."""
    loss, S = batch.loss, batch.set
    B, n, p = batch.B, batch.n, batch.p
    X0 = batch.x0() if X0 is None else np.asarray(X0, dtype=float)
    X_out, xbar_out = np.empty((B, n, p)), np.empty((B, p))
    for k in range(B):
        Sk = S.take(k)
        grads = [_client_grad(loss, k, i) for i in range(n)]
        xs = [X0[k, i].copy() for i in range(n)]
        xbar = sum(xs) / n
        for t in range(rounds):
            e, l = float(eta[t, k]), float(lam[t, k])
            s_sum = np.zeros(p)
            for i in range(n):
                g = grads[i](xs[i]) / n + l * (xs[i] - xbar)
                s = Sk.lmo(g)
                xs[i] = (1 - e) * xs[i] + e * s
                s_sum = s_sum + s
            xbar = (1 - e) * xbar + e * (s_sum / n)
        X_out[k] = np.stack(xs)
        xbar_out[k] = xbar
    return X_out, xbar_out


def fedfw_loop_least_squares_l1(batch: InstanceBatch, eta: np.ndarray, lam: np.ndarray, rounds: int,
                                X0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The same algorithm hand-written for least squares on the l1 ball, as a research script would:
    the client gradient ``(H_i x - c_i)/n`` with ``H_i = A_i^T A_i / m`` precomputed, the LMO
    ``-r sign(g_j) e_j`` at ``j = argmax |g|`` (sign(0) = +1)."""
    loss = batch.loss
    if not isinstance(loss, LeastSquares):
        raise TypeError("fedfw_loop_least_squares_l1 needs a least-squares batch")
    B, n, p = batch.B, batch.n, batch.p
    H, c = loss.H, loss.c
    radii = np.broadcast_to(np.asarray(batch.set.radius, dtype=float), (B,))
    X0 = batch.x0() if X0 is None else np.asarray(X0, dtype=float)
    X_out, xbar_out = np.empty((B, n, p)), np.empty((B, p))
    for k in range(B):
        r = float(radii[k])
        xs = [X0[k, i].copy() for i in range(n)]
        xbar = sum(xs) / n
        for t in range(rounds):
            e, l = float(eta[t, k]), float(lam[t, k])
            s_sum = np.zeros(p)
            for i in range(n):
                x = xs[i]
                g = (H[k, i] @ x - c[k, i]) / n + l * (x - xbar)
                j = int(np.argmax(np.abs(g)))
                s = np.zeros(p)
                s[j] = -r if g[j] >= 0 else r
                xs[i] = (1 - e) * x + e * s
                s_sum += s
            xbar = (1 - e) * xbar + e * (s_sum / n)
        X_out[k] = np.stack(xs)
        xbar_out[k] = xbar
    return X_out, xbar_out
