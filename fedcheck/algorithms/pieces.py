"""Reusable pieces of federated methods, batched over instances ``B`` and clients ``n``.

Each piece is a plain function on arrays and a :class:`~fedcheck.algorithms.protocol.Round` context, so a
round function composes them: local (projected, proximal) gradient steps, client sampling, unbiased
compression, stochastic gradients, server averaging.  None loops over clients or instances in Python.
"""
from __future__ import annotations

import numpy as np

__all__ = ["local_steps", "sample_clients", "masked_mean", "gaussian_gradient", "rand_k", "server_step"]


def local_steps(ctx, Y, eta, steps: int, *, anchor=None, mu=None, project: bool = True, noise: float = 0.0):
    """``steps`` (projected) gradient steps of every client from ``Y`` ``(B, n, p)`` with step ``eta`` ``(B,)``;
    ``anchor``/``mu``: the proximal term ``mu/2 ||y - anchor||^2`` (FedProx); ``noise``: Gaussian gradient noise
    of standard deviation ``noise`` per coordinate (a stochastic oracle)."""
    e = ctx.col(eta)
    for _ in range(int(steps)):
        G = ctx.grad(Y)
        if noise:
            G = G + noise * ctx.normal(Y.shape[1:])
        if anchor is not None and mu is not None:
            G = G + ctx.col(mu) * (Y - anchor[:, None, :])
        Y = Y - e * G
        if project:
            Y = ctx.project(Y)
    return Y


def sample_clients(ctx, prob) -> np.ndarray:
    """A participation mask ``(B, n)``: each client independently with probability ``prob`` (scalar or ``(B,)``);
    an empty draw keeps client 0 (a round always has a participant)."""
    mask = ctx.uniform((ctx.n,)) < np.broadcast_to(np.asarray(prob, dtype=float), (ctx.B,))[:, None]
    mask[~mask.any(1), 0] = True
    return mask


def masked_mean(X, mask) -> np.ndarray:
    """Mean over the participating clients ``(B, p)``."""
    w = mask.astype(float)
    return np.einsum("bn,bnp->bp", w, X) / w.sum(1)[:, None]


def gaussian_gradient(ctx, Y, sigma) -> np.ndarray:
    """An unbiased stochastic gradient: the exact client gradients plus ``N(0, sigma^2 I)`` per client."""
    return ctx.grad(Y) + np.asarray(sigma, dtype=float).reshape(-1, 1, 1) * ctx.normal(Y.shape[1:])


def rand_k(ctx, V, k: int) -> np.ndarray:
    """Unbiased rand-k compression of each client's vector ``V`` ``(B, n, p)``: ``k`` coordinates kept,
    scaled by ``p/k`` (variance factor ``p/k - 1``)."""
    B, n, p = V.shape
    keys = ctx.uniform((n, p))
    keep = np.argsort(keys, axis=-1)[..., :k]
    out = np.zeros_like(V)
    np.put_along_axis(out, keep, np.take_along_axis(V, keep, axis=-1) * (p / k), axis=-1)
    return out


def server_step(x, delta, eta_s=1.0) -> np.ndarray:
    """``x + eta_s * delta`` with a per-instance server step ``(B,)`` or scalar."""
    return x + np.asarray(eta_s, dtype=float).reshape(-1, 1) * delta if np.ndim(eta_s) else x + eta_s * delta
