"""Reusable pieces of federated methods, batched over instances ``B`` and clients ``n``.

Each piece is a plain function on arrays and a :class:`~fedcheck.algorithms.protocol.Round` context, so a
round function composes them: local (projected, proximal) gradient steps, client sampling, unbiased
compression, stochastic gradients, server averaging.  None loops over clients or instances in Python.

Context-free pieces (plain arrays and callables, no :class:`Round`), the parts of the one FedAvg
(:mod:`fedcheck.algorithms.fedavg`) and of anything built like it:

=============================  ====================================================================
:func:`subset_clients`          ``S`` of ``n`` clients per instance, uniformly without replacement
:func:`bernoulli_clients`       each client with probability ``prob`` (a mask; never empty)
:func:`step_sizes`              a client step size per instance: constant, per round, or per local step
:func:`local_updates`           ``steps`` local (sub)gradient steps of every client, per-instance counts
:func:`client_mean`             the average of the clients' points (all, a subset, or a mask)
:func:`uplink_compression`      an unbiased compressor applied to the clients' updates (seeded stream)
:func:`server_step`             ``x + eta_s delta``
=============================  ====================================================================
"""
from __future__ import annotations

import numpy as np

__all__ = ["local_steps", "sample_clients", "masked_mean", "gaussian_gradient", "rand_k", "server_step",
           "subset_clients", "bernoulli_clients", "step_sizes", "local_updates", "client_mean", "uplink_compression",
           "static_oracle"]


def local_steps(ctx, Y, eta, steps: int, *, anchor=None, mu=None, project: bool = True, noise: float = 0.0,
                record_grad_sq: str | None = None):
    """``steps`` (projected) gradient steps of every client from ``Y`` ``(B, n, p)`` with step ``eta`` ``(B,)``, or
    ``(B, steps)`` for a step size per local step (column ``s - 1`` at local step ``s``: a schedule of
    ``Rounds(local_steps=E, per_local_step=("eta",))`` arrives so, ``eta_t`` with ``t = (round - 1) E + s``);
    ``anchor``/``mu``: the proximal term ``mu/2 ||y - anchor||^2`` (FedProx); ``noise``: Gaussian gradient noise
    of standard deviation ``noise`` per coordinate (a stochastic oracle).  ``record_grad_sq="G2"``: record
    (:meth:`~fedcheck.algorithms.protocol.Round.record`) the largest squared norm over the clients of the
    gradient each local step uses, ``max_k ||g_k(w^k)||^2`` at every local iterate (Li et al.'s ``G^2`` along
    the run; ``Rounds(measured={"G2": "G^2"})`` lets a bound read it).

    Least-squares clients (the library's loss in its ``H`` form), an l2 ball or no projection, no noise and the
    context's own ``grad``/``project``: the steps run compiled (:class:`.fedavg_jit.LSSteps`, every client and
    step in one call); the same formula, only the sums of ``H_i y`` in another order than BLAS's (last bits).
    ``FEDCHECK_JIT=0`` (or no numba) runs the numpy steps below, the reference."""
    e = np.asarray(eta, dtype=float)
    hook = None if record_grad_sq is None else \
        (lambda t, W, G: ctx.record(record_grad_sq, np.einsum("bkp,bkp->bk", G, G).max(1)))
    if e.ndim == 2 or hook is not None:     # a step size per local step, or recorded gradients: the numpy steps
        size = (lambda t: e[:, min(t, e.shape[1]) - 1]) if e.ndim == 2 else (lambda t: e)
        return local_updates(Y, _step_grad(ctx, anchor, mu, noise), int(steps), size,
                             client_map=ctx.project if project else None, hook=hook)
    if not noise:
        out = _compiled_local_steps(ctx, Y, eta, steps, anchor, mu, project)
        if out is not None:
            return out

    return local_updates(Y, _step_grad(ctx, anchor, mu, noise), int(steps), lambda t: e,
                         client_map=ctx.project if project else None)


def _step_grad(ctx, anchor, mu, noise):
    """The local steps' oracle ``grad(Y, t)`` of :func:`local_steps`."""
    def grad(Y, t):
        G = ctx.grad(Y)
        if noise:
            G = G + noise * ctx.normal(Y.shape[1:])
        if anchor is not None and mu is not None:
            G = G + ctx.col(mu) * (Y - anchor[:, None, :])
        return G
    return grad


_COMPILED: dict = {}


def _compiled_parts() -> dict:
    from fedcheck.algorithms.fedavg_jit import ls_steps
    from fedcheck.algorithms.protocol import Round
    from fedcheck.problems.sets import L2Ball
    return {"ls_steps": ls_steps, "Round": Round, "L2Ball": L2Ball}


def _compiled_local_steps(ctx, Y, eta, steps, anchor, mu, project):
    """:func:`local_steps` by the compiled kernel (:class:`.fedavg_jit.LSSteps`), or ``None`` when it does not
    apply (then numpy runs): the context's own ``grad`` (and ``project`` when projecting) on the library's least
    squares (an l2 ball or no projection), arrays of the batch's shapes."""
    if not _COMPILED:
        _COMPILED.update(_compiled_parts())
    Round = _COMPILED["Round"]
    batch = getattr(ctx, "batch", None)
    loss = getattr(batch, "loss", None)
    if loss is None or type(ctx).grad is not Round.grad or type(Y) is not np.ndarray or Y.ndim != 3:
        return None
    B, n, p = Y.shape
    run = _COMPILED["ls_steps"](loss, B, n, p)        # checked once per loss and shapes, kept on the loss
    if run is None:
        return None
    radius = None
    if project:
        S = batch.set
        if type(ctx).project is not Round.project or type(S) is not _COMPILED["L2Ball"]:
            return None
        radius = S.radius
    return run(Y, eta, int(steps), anchor, mu, radius)


def sample_clients(ctx, prob) -> np.ndarray:
    """A participation mask ``(B, n)``: each client independently with probability ``prob`` (scalar or ``(B,)``);
    an empty draw keeps client 0 (a round always has a participant)."""
    return bernoulli_clients(ctx.uniform((ctx.n,)), prob)


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


# ----------------------------------------------------------------------------------------------
# context-free pieces (the one FedAvg, fedcheck.algorithms.fedavg)
def subset_clients(rng: np.random.Generator, B: int, n: int, S) -> np.ndarray | None:
    """``S`` of the ``n`` clients of every instance, uniformly without replacement: ``(B, S)`` indices
    (``argsort`` of ``B x n`` uniforms of ``rng``, the first ``S``); ``None`` (everyone, no draw) when
    ``S`` is ``None`` or ``>= n``."""
    if S is None or S >= n:
        return None
    return np.argsort(rng.random((B, n)), axis=1)[:, :S]


def bernoulli_clients(U: np.ndarray, prob) -> np.ndarray:
    """A participation mask ``(B, n)`` from uniforms ``U`` ``(B, n)``: client ``i`` takes part when
    ``U[:, i] < prob`` (scalar or ``(B,)``); an empty draw keeps client 0."""
    B = U.shape[0]
    mask = U < np.broadcast_to(np.asarray(prob, dtype=float), (B,))[:, None]
    mask[~mask.any(1), 0] = True
    return mask


def static_oracle(grad):
    """A per-round oracle factory (the one FedAvg's ``oracle``) from a plain ``grad(X) -> (B, n, p)``."""
    def start(r, sel):
        return lambda X, t: grad(X)
    start.grad = grad           # what the oracle is (the one FedAvg runs least squares' local steps compiled)
    return start


def step_sizes(B: int, eta=None, eta_step=None):
    """The client step size as a function ``size(r, t, cum) -> (B,)`` of the round ``r`` (0-based), the
    local step ``t`` (1-based) and each instance's count ``cum`` ``(B,)`` of local steps of earlier rounds:

    * ``eta`` a scalar or ``(B,)``: constant;  ``eta`` ``(rounds, B)``: row ``r`` in round ``r``;
    * ``eta`` ``(rounds, B, E)``: row ``r``, column ``t - 1`` (clipped to the last column): a step size per local
      step, the local-step counter of Li et al. being ``r E + t`` (what ``Rounds(local_steps=E,
      per_local_step=("eta",))`` evaluates a SymPy schedule into);
    * ``eta_step`` ``(S, B)``: row ``cum + t - 1`` (clipped to the last row), a counter over all rounds.
    """
    if (eta is None) == (eta_step is None):
        raise ValueError("give exactly one of eta and eta_step")
    if eta_step is not None:
        es = np.asarray(eta_step, dtype=float)
        cols = np.arange(B)
        return lambda r, t, cum: es[np.minimum(cum + t - 1, es.shape[0] - 1), cols]
    e = np.asarray(eta, dtype=float)
    if e.ndim == 3:
        return lambda r, t, cum: e[r, :, min(t, e.shape[2]) - 1]
    if e.ndim == 2:
        return lambda r, t, cum: e[r]
    e = np.broadcast_to(e, (B,)).astype(float)
    return lambda r, t, cum: e


def local_updates(W: np.ndarray, grad, steps, size, *, client_map=None, hook=None) -> np.ndarray:
    """Local steps of every client at once: ``W <- client_map(W - size(t) * grad(W, t))`` for
    ``t = 1 .. max(steps)``.

    ``W`` ``(B, S, p)``; ``grad(W, t) -> (B, S, p)`` (any oracle: exact, stochastic, with a subgradient of a
    regularizer added); ``size(t) -> (B,)``; ``client_map`` a projection or prox (``None``: identity);
    ``steps`` an int or per-instance counts ``(B,)``: an instance whose count is reached is frozen (its
    rows are masked, the oracle still sees them).  ``hook(t, W, G)`` after each step (``G`` unscaled)."""
    counts = np.asarray(steps)
    Tmax = int(counts.max(initial=0))
    uniform = counts.ndim == 0 or bool(np.all(counts == Tmax))
    last = s_full = None
    for t in range(1, Tmax + 1):
        G = grad(W, t)
        s = np.asarray(size(t), dtype=float)
        key = (s.shape, s.tobytes())                # by value (bit for bit): 0.1 us, np.array_equal 1.2 us
        if key != last:
            last, s_full = key, None
            Wn = np.multiply(s[:, None, None], G)
        else:
            # the same step sizes again: spread them to the clients' shape once (a product of equal shapes is
            # ~2.5x faster than a (B, 1, 1) broadcast on small rows; the same numbers).  Compared by value, so
            # a step-size function that reuses and mutates its array is still read correctly.
            if s_full is None or s_full.shape != G.shape:
                s_full = np.empty(G.shape)
                s_full[...] = s[:, None, None]
            Wn = np.multiply(s_full, G)
        np.subtract(W, Wn, out=Wn)
        if client_map is not None:
            Wn = client_map(Wn)
        W = Wn if uniform else np.where((t <= counts)[:, None, None], Wn, W)
        if hook is not None:
            hook(t, W, G)
    return W


def client_mean(W: np.ndarray, mask=None, weights=None) -> np.ndarray:
    """The average of the clients' points ``(B, p)``: over the second axis of ``W`` (all clients, or the
    sampled subset ``W`` already holds), or over a participation ``mask`` ``(B, n)`` (:func:`masked_mean`).

    ``weights`` ``(B, S)`` (or ``(S,)``) the clients' weights ``p_k`` for ``W``'s clients: the weighted average
    ``sum_k p_k W_k / sum_k p_k`` (over the mask's clients with a mask); ``None`` is the plain mean (same bits)."""
    if weights is not None:
        w = np.broadcast_to(np.asarray(weights, dtype=float), W.shape[:2])
        if mask is not None:
            w = w * mask
        return np.einsum("bn,bnp->bp", w, W) / w.sum(1)[:, None]
    if mask is None:
        from fedcheck.algorithms.kernels import clients_mean     # W.mean(1), the same bits, compiled
        return clients_mean(W)
    return masked_mean(W, mask)


def uplink_compression(compressor, stream):
    """Unbiased compression of the clients' updates: ``D -> compressor.apply(D, stream.next())``, the
    uniforms from a seeded :class:`~fedcheck.problems.compression.UniformStream` (one block per round)."""
    return lambda D: compressor.apply(D, stream.next())
