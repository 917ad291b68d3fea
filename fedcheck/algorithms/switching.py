"""Switching subgradient methods: FedSGM (Algorithm 1 of Upadhyay, Moon and Hashemi), hard and
soft switching, E local steps and unbiased uplink compression; the centralized switching subgradient
method (a reference and a baseline).  Vectorized over instances and clients.  The FedSGM paper's FedAvg and its
instrumented variants live in its folder (``theorems/fedsgm/methods.py``).

Indexing follows the FedSGM paper: ``w_0`` is the start, round ``t = 0..T-1`` maps ``w_t`` to
``w_{t+1}``; traces are indexed by ``k = 0..T`` (``trace.rounds``).

Round ``t`` (all rows ``b`` and clients ``j`` at once)::

    alpha_t = sigma(g(w_t) - eps)          hard: 1{z > 0};  soft: min(1, [1 + beta z]_+)
    w_{j,0} = w_t;  nu_{j,tau} = (1 - alpha_t) df_j(w_{j,tau}) + alpha_t dg_j(w_{j,tau})
    w_{j,tau+1} = w_{j,tau} - eta nu_{j,tau}           (tau = 0..E-1)
    X_j = sum_tau nu_{j,tau}   (= (w_t - w_{j,E}) / eta)
    w_{t+1} = w_t - eta (1/n) sum_j C_j(X_j)

``X_j`` is accumulated as the sum of the local directions (the proof's definition) rather than
recomputed as ``(w_t - w_{j,E})/eta``: the two are equal in exact arithmetic, and the sum makes
``n = 1, E = 1, C = Id`` reproduce the centralized method bit for bit.

The output is the theorems' average over the "feasible" rounds ``A``: hard switching
``A = {t : g(w_t) <= eps}`` with the plain mean; soft switching ``A = {t : g(w_t) < eps}`` with
weights ``1 - sigma_t`` (``a_set`` overrides the boundary convention).

Recorded per round (arrays ``(T+1, B)``; entries a quantity does not have are NaN):

``f``, ``g``, ``sigma``
    values at ``w_k`` and the switching weight ``sigma_k = sigma(g(w_k) - eps)``.
``in_A``, ``weight``
    membership of round ``k`` in ``A`` and its weight in the output average (rounds ``k < T``).
``dist2``, ``cond_dist2``, ``h``
    with a comparator ``u`` (e.g. a minimizer): ``||w_k - u||^2``; the exact conditional
    expectation ``E_C ||w_{k+1} - u||^2`` given ``w_k`` (via the compressor's exact variance);
    ``h_k = (1 - sigma_k)(f(w_k) - f(u)) + sigma_k (g(w_k) - g(u))``.
``drift_step``, ``drift_sq``
    ``max_{j, tau >= 1} ||w_k - w_{j,tau}|| / (tau eta)`` (Lemma 5: <= G) and
    ``max_j sum_{tau < E} ||w_k - w_{j,tau}||^2`` (Lemma 5: <= eta^2 G^2 E^3 / 3).
``agg_sq``, ``agg_sq_cond``
    ``||(1/n) sum_j C_j(X_j)||^2`` and its exact conditional expectation (Lemma 3).
``max_dir``
    ``max_{j, tau} ||nu_{j,tau}||`` (the Lipschitz bound is used only at visited points).

``trace.final``: ``wbar`` (B, d; NaN where ``A`` is empty), ``A_size``, ``A_weight``,
``sigma_sum_A``, ``w_T``.
"""
from __future__ import annotations

import numpy as np

from fedcheck.problems.compression import Compressor, Identity, UniformStream
from fedcheck.algorithms.core import Trace
from fedcheck.algorithms.kernels import clients_mean
from fedcheck.algorithms import switching_jit as _jit

__all__ = ["fedsgm", "switching_subgradient", "switching_weight"]


def switching_weight(z: np.ndarray, rule: str, beta=None) -> np.ndarray:
    """``sigma(z)``: hard ``1{z > 0}``, soft ``min(1, [1 + beta z]_+)``."""
    if rule == "hard":
        return (z > 0).astype(float)
    if rule == "soft":
        return np.minimum(1.0, np.maximum(0.0, 1.0 + beta * z))
    raise ValueError(f"unknown switching rule {rule!r} (hard or soft)")


def per_row(x, B, name):
    """A per-row value ``(B,)`` from a number, a ``(B,)`` array or a constant ``(rounds, B)`` schedule (FedSGM's
    schedules do not vary with t; a varying one is refused naming ``name``)."""
    if x is None:
        return None
    a = np.asarray(x, dtype=float)
    if a.ndim == 2:  # a (rounds, B) schedule of a constant step: FedSGM's schedules do not vary with t
        if not np.all(a == a[:1]):
            raise ValueError(f"{name}: FedSGM uses a constant {name} within a run")
        a = a[0]
    return np.broadcast_to(a, (B,)).astype(float)


def _in_A(g, eps, rule, a_set):
    conv = a_set or ("le" if rule == "hard" else "lt")
    return g <= eps if conv == "le" else g < eps


def fedsgm(batch, *, rounds: int, eta, eps, rule: str = "hard", beta=None, local_steps: int = 1,
           compressor: Compressor | None = None, seeds=None, comparator=None, a_set: str | None = None,
           stream_key: str = "fedsgm:uplink", w0=None, x0=None) -> Trace:
    """Run FedSGM on a :class:`fedcheck.problems.constrained.ConstrainedBatch` (see the module doc).

    ``eta``, ``eps``, ``beta``: per row (B,) or a constant ``(rounds, B)`` schedule.  ``eps`` is the
    switching threshold (and the level defining ``A``).  ``seeds``: per-row seeds of the uplink
    randomness (required with a random compressor).  ``comparator``: (B, d) point ``u``.  ``w0`` (or ``x0``, the
    library's name): the start ``(B, d)``, default ``batch.w0``.  Returns a :class:`Trace` whose row ``k`` is
    ``w_k`` (``trace.start = 0``).

    Example::

        tr = fedsgm(batch, rounds=100, eta=0.05, eps=0.1)        # tr.metrics["f"][k], tr.final["wbar"]
    """
    B, n, d, E, T = batch.B, batch.n, batch.d, int(local_steps), int(rounds)
    eta, eps, beta = per_row(eta, B, "eta"), per_row(eps, B, "eps"), per_row(beta, B, "beta")
    if rule == "soft" and beta is None:
        raise ValueError("soft switching needs beta")
    C = compressor or Identity()
    stream = None
    if C.random:
        if seeds is None:
            raise ValueError("a random compressor needs per-row seeds")
        stream = UniformStream(seeds, f"{stream_key}:{C.spec()}", (n, d))
    w0 = x0 if w0 is None else w0
    w = np.array(batch.w0 if w0 is None else w0, dtype=float)
    u = None if comparator is None else np.asarray(comparator, dtype=float)
    fu = batch.full_f(u) if u is not None else None
    gu = batch.full_g(u) if u is not None else None
    if _jit.AVAILABLE and w.shape == (B, d) and (u is None or u.shape == (B, d)):
        args = _jit.eligible(batch, C, rule, E)
        if not isinstance(args, str):   # the whole run compiled, the same bits (switching_jit's module doc)
            out = _jit.run_fedsgm(args, w=w, eta=eta, eps=eps, beta=beta, rule=rule, a_set=a_set, E=E, T=T, u=u,
                                  fu=fu, gu=gu, stream=stream)
            if out is not None:
                rec, S_w, S_weight, A_size, sig_A, w = out
                return _trace(T, rec, S_w, S_weight, A_size, sig_A, w)
            if stream is not None:     # the kernel left the run to numpy: its uniforms from the start again
                stream = UniformStream(seeds, f"{stream_key}:{C.spec()}", (n, d))
    keys = ("f", "g", "sigma", "in_A", "weight", "dist2", "cond_dist2", "h", "drift_step", "drift_sq",
            "agg_sq", "agg_sq_cond", "max_dir")
    rec = {k: np.full((T + 1, B), np.nan) for k in keys}
    S_w = np.zeros((B, d))
    S_weight, A_size, sig_A = np.zeros(B), np.zeros(B), np.zeros(B)
    taus = np.arange(1, E + 1)
    eta3 = eta[:, None, None]

    for t in range(T + 1):
        fw, gw = batch.full_f(w), batch.full_g(w)
        sig = switching_weight(gw - eps, rule, beta)
        rec["f"][t], rec["g"][t], rec["sigma"][t] = fw, gw, sig
        if u is not None:
            rec["dist2"][t] = ((w - u) ** 2).sum(-1)
            rec["h"][t] = (1 - sig) * (fw - fu) + sig * (gw - gu)
        if t == T:
            break
        inA = _in_A(gw, eps, rule, a_set)
        wt = np.where(inA, 1.0 if rule == "hard" else 1.0 - sig, 0.0)
        rec["in_A"][t], rec["weight"][t] = inA, wt
        S_w += wt[:, None] * w
        S_weight += wt
        A_size += inA
        sig_A += np.where(inA, sig, 0.0)
        # local steps, all clients at once
        a3 = sig[:, None, None]
        W = np.repeat(w[:, None, :], n, axis=1)
        X = np.zeros((B, n, d))
        drift = np.zeros((B, n, E))       # ||w_t - w_{j,tau}|| for tau = 1..E
        drift_sq = np.zeros((B, n))        # sum_{tau < E} ||w_t - w_{j,tau}||^2
        max_dir = np.zeros(B)
        for tau in range(E):
            V = (1 - a3) * batch.f.subgrad(W) + a3 * batch.g.subgrad(W)
            max_dir = np.maximum(max_dir, np.sqrt((V ** 2).sum(-1)).max(-1))
            X += V
            W = W - eta3 * V
            dist = np.sqrt(((W - w[:, None, :]) ** 2).sum(-1))
            drift[:, :, tau] = dist
            if tau + 1 < E:
                drift_sq += dist ** 2
        rec["drift_step"][t] = (drift / (taus * eta[:, None, None])).max((-1, -2))
        rec["drift_sq"][t] = drift_sq.max(-1)
        rec["max_dir"][t] = max_dir
        CX = X if stream is None else C.apply(X, stream.next())
        Xbar = clients_mean(X)                  # X.mean(1), the same bits (compiled)
        agg = Xbar if CX is X else clients_mean(CX)
        var = C.variance(X).sum(-1) / n ** 2
        rec["agg_sq"][t] = (agg ** 2).sum(-1)
        rec["agg_sq_cond"][t] = (Xbar ** 2).sum(-1) + var
        if u is not None:
            rec["cond_dist2"][t] = ((w - eta[:, None] * Xbar - u) ** 2).sum(-1) + eta ** 2 * var
        w = w - eta[:, None] * agg

    return _trace(T, rec, S_w, S_weight, A_size, sig_A, w)


def _trace(T, rec, S_w, S_weight, A_size, sig_A, w) -> Trace:
    with np.errstate(invalid="ignore", divide="ignore"):
        wbar = np.where(S_weight[:, None] > 0, S_w / S_weight[:, None], np.nan)
    trace = Trace(rounds=np.arange(T + 1), metrics=rec, start=0)
    trace.final = {"wbar": wbar, "A_size": A_size, "A_weight": S_weight, "sigma_sum_A": sig_A, "w_T": w}
    return trace


def switching_subgradient(batch, *, rounds: int, eta, eps, rule: str = "hard", beta=None, w0=None, x0=None) -> Trace:
    """Centralized switching subgradient method (Polyak; Lan and Zhou) on ``f = mean_j f_j``,
    ``g = mean_j g_j``: ``w_{t+1} = w_t - eta [(1 - sigma_t) df(w_t) + sigma_t dg(w_t)]``.
    A reference written independently of :func:`fedsgm` (arguments as there).  Returns a :class:`Trace` of the
    iterates: ``metrics["w"]`` ``(T+1, B, d)``, row ``k`` is ``w_k`` (``trace.start = 0``); ``final["w_T"]``.

    Example::

        w = switching_subgradient(batch, rounds=50, eta=0.05, eps=0.1).metrics["w"]     # w_0 .. w_50
    """
    B, n = batch.B, batch.n
    eta, eps, beta = per_row(eta, B, "eta"), per_row(eps, B, "eps"), per_row(beta, B, "beta")
    w0 = x0 if w0 is None else w0
    w = np.array(batch.w0 if w0 is None else w0, dtype=float)
    out = [w]
    for _ in range(int(rounds)):
        Wb = np.repeat(w[:, None, :], n, axis=1)
        sig = switching_weight(batch.full_g(w) - eps, rule, beta)[:, None]
        v = (1 - sig) * batch.f.subgrad(Wb).mean(1) + sig * batch.g.subgrad(Wb).mean(1)
        w = w - eta[:, None] * v
        out.append(w)
    return Trace(rounds=np.arange(len(out)), metrics={"w": np.stack(out)}, final={"w_T": w}, start=0)
