"""The FedSGM paper's own methods, beside the public :func:`fedcheck.algorithms.fedsgm`: its FedAvg (the one
FedAvg engine under this paper's argument names and return format), the centralized switching subgradient
method with ``E`` inner steps (what FedSGM is when all clients are identical) and FedSGM instrumented for
Lemma 4.  Indexing follows the paper: ``w_0`` is the start and the iterates are ``w_0 .. w_T``."""
from __future__ import annotations

import numpy as np

from fedcheck.algorithms import pieces, per_row, run_fedavg, switching_weight
from fedcheck.problems import Compressor, UniformStream, make_compressor

__all__ = ["fedavg", "centralized_local_sgm", "fedsgm_lemma4"]


def fedavg(batch, *, rounds: int, eta, local_steps: int = 1, w0=None) -> np.ndarray:
    """FedAvg on ``f`` alone (E local subgradient steps, then model averaging); iterates ``(T+1, B, d)``.
    The one FedAvg (:func:`fedcheck.algorithms.run_fedavg`) with plain averaging."""
    return run_fedavg(np.array(batch.w0 if w0 is None else w0, dtype=float), pieces.static_oracle(batch.f.subgrad),
                      rounds=int(rounds), n=batch.n, eta=per_row(eta, batch.B, "eta"), steps=int(local_steps),
                      iterates=True).metrics["x"]


def centralized_local_sgm(batch, *, rounds: int, eta, eps, rule: str = "hard", beta=None, local_steps: int = 1,
                          w0=None) -> np.ndarray:
    """Centralized switching subgradient with ``E`` inner steps per round at the round's weight
    ``sigma(g(w_t) - eps)`` (what FedSGM does when all clients are identical); iterates ``(T+1, B, d)``."""
    B, n = batch.B, batch.n
    eta, eps, beta = per_row(eta, B, "eta"), per_row(eps, B, "eps"), per_row(beta, B, "beta")
    w = np.array(batch.w0 if w0 is None else w0, dtype=float)
    out = [w]
    for _ in range(int(rounds)):
        sig = switching_weight(batch.full_g(w) - eps, rule, beta)[:, None]
        v = w
        for _ in range(int(local_steps)):
            Vb = np.repeat(v[:, None, :], n, axis=1)
            v = v - eta[:, None] * ((1 - sig) * batch.f.subgrad(Vb).mean(1) + sig * batch.g.subgrad(Vb).mean(1))
        w = v
        out.append(w)
    return np.stack(out)


# ------------------------------------------------------------------------------------------------
# Lemma 4 on its own (the inner-product step of the proofs), measured along a FedSGM run
def fedsgm_lemma4(batch, *, rounds: int, eta, eps, comparator, alphas, G, rule: str = "hard", beta=None,
                  local_steps: int = 1, compressor: Compressor | None = None, seeds=None,
                  stream_key: str = "fedsgm:uplink", w0=None) -> dict:
    """Both sides of Lemma 4 at every round of a FedSGM run (the same iterates as
    :func:`fedcheck.algorithms.fedsgm` with the same arguments: the rounds are replayed with the local-step loop of
    that function)::

        lhs_t = -2 eta E_C<w_t - u, (1/n) sum_j C_j(X_j)> = -2 eta <w_t - u, (1/n) sum_j X_j>   (unbiased C)
        rhs_t(alpha) = (1/n) sum_j sum_{tau < E} [(eta/alpha)||w_t - w_{j,tau}||^2 + eta alpha G^2
                                                   + 2 eta (h_j(u) - h_j(w_{j,tau}))]

    with ``h_j = (1 - sigma_t) f_j + sigma_t g_j`` (hard switching: ``f_j`` on objective rounds, ``g_j`` on
    constraint rounds, Lemma 4's statement).  ``alphas``: ``(A,)`` or per row ``(B, A)`` values of alpha; ``G``: ``(B,)``.
    Returns ``lhs`` ``(T, B)``, ``rhs`` ``(T, B, A)``, ``scale`` ``(T, B)`` (the size of the terms, for
    the rounding slack), ``f``, ``g`` ``(T+1, B)`` (to compare with :func:`fedcheck.algorithms.fedsgm`)."""
    B, n, d, E, T = batch.B, batch.n, batch.d, int(local_steps), int(rounds)
    eta, eps, beta = per_row(eta, B, "eta"), per_row(eps, B, "eps"), per_row(beta, B, "beta")
    al = np.asarray(alphas, dtype=float)
    al = np.broadcast_to(al.reshape(1, -1) if al.ndim <= 1 else al, (B, al.shape[-1] if al.ndim else 1))
    Gv = np.broadcast_to(np.asarray(G, dtype=float), (B,))
    C = compressor or make_compressor(None)
    stream = None
    if C.random:
        if seeds is None:
            raise ValueError("a random compressor needs per-row seeds")
        stream = UniformStream(seeds, f"{stream_key}:{C.spec()}", (n, d))
    w = np.array(batch.w0 if w0 is None else w0, dtype=float)
    u = np.asarray(comparator, dtype=float)
    U = np.broadcast_to(u[:, None, :], (B, n, d))
    fu_j, gu_j = batch.f.value(U), batch.g.value(U)                       # (B, n)
    lhs, scale = np.zeros((T, B)), np.zeros((T, B))
    rhs = np.zeros((T, B, al.shape[1]))
    fr, gr = np.zeros((T + 1, B)), np.zeros((T + 1, B))
    e3 = eta[:, None, None]
    for t in range(T + 1):
        gw = batch.full_g(w)
        fr[t], gr[t] = batch.full_f(w), gw
        if t == T:
            break
        sig = switching_weight(gw - eps, rule, beta)
        a3 = sig[:, None, None]
        s2 = sig[:, None]
        W = np.repeat(w[:, None, :], n, axis=1)
        X = np.zeros((B, n, d))
        dist_sq = np.zeros((B, n))                   # sum_{tau < E} ||w_t - w_{j,tau}||^2
        gap_sum = np.zeros((B, n))                   # sum_{tau < E} (h_j(u) - h_j(w_{j,tau}))
        mag = np.zeros((B, n))
        for tau in range(E):
            hW = (1 - s2) * batch.f.value(W) + s2 * batch.g.value(W)
            hu = (1 - s2) * fu_j + s2 * gu_j
            dist_sq += ((W - w[:, None, :]) ** 2).sum(-1)
            gap_sum += hu - hW
            mag += np.abs(hu) + np.abs(hW)
            V = (1 - a3) * batch.f.subgrad(W) + a3 * batch.g.subgrad(W)
            X += V
            W = W - e3 * V
        Xbar = X.mean(1)
        lhs[t] = -2 * eta * ((w - u) * Xbar).sum(-1)
        base = (2 * eta[:, None] * gap_sum).mean(1)
        dsum = dist_sq.mean(1)
        rhs[t] = (eta[:, None] / al) * dsum[:, None] + E * eta[:, None] * al * Gv[:, None] ** 2 + base[:, None]
        scale[t] = 2 * eta * (np.abs(w - u) * np.abs(Xbar)).sum(-1) + 2 * eta * mag.mean(1) + eta * dsum
        CX = X if stream is None else C.apply(X, stream.next())
        w = w - eta[:, None] * CX.mean(1)
    return {"lhs": lhs, "rhs": rhs, "scale": scale, "f": fr, "g": gr, "w_T": w}
