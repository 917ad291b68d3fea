"""FedFW design variants of Dadras et al. (Algorithm 1 and Section 4), vectorized over instances and clients.

One driver, :func:`fedfw_variant`, runs every combination of

* **FedFW-sto** (Section 4.1): ``rho`` given -> ``d_i <- (1 - rho_t) d_i + rho_t (1/n) grad f_i(x_i, omega_i)``,
  ``g_i = d_i + lambda_t (x_i - xbar)``; the (stochastic) gradient oracle is ``grad_oracle`` (default: exact);
* **FedFW+** (Section 4.4): ``plus`` (= lambda_0, shape ``(B,)``) given ->
  ``y_i <- y_i + lambda_0 (x_i - xbar)``, ``g_i += y_i``;
* **partial participation** (Section 4.2): ``participation`` (= p, shape ``(B,)``) given -> client ``i``
  takes part in a round with probability ``p`` (independent Bernoulli draws from SeedSequence streams,
  one per run, :class:`fedcheck.compression.UniformStream`); a non-participant keeps ``x_i`` (and its
  ``d_i``, ``y_i``), the server point is ``mean_i x_i``;
* **split constraints** (Section 4.3): ``client_sets = [(set, mask), ...]`` -> the clients of ``mask``
  (an ``(n,)`` boolean array) use ``set`` (a superset of D) for their LMO instead of ``batch.set``.

With none of them it is FedFW itself, operation for operation (the tests check that partial
participation with ``p = 1`` and FedFW-sto with ``sigma = 0, rho = 1`` give FedFW's iterates).

The server update is written ``xbar <- (1 - eta) xbar + eta mean_i s~_i`` with ``s~_i = s_i`` for a
participant and ``s~_i = x_i`` otherwise, which equals ``mean_i x_i^{t+1}`` (so a full round is the
paper's (9) and server step exactly).

Also here: :func:`gaussian_oracle` (additive Gaussian noise of exact variance sigma^2), recorders of
the Frank-Wolfe gap of ``xbar``, the surrogate gap of ``X`` and the consensus
distance (:func:`fw_recorder`), and :func:`feddr` (FedDR, the baseline of
the paper's experiments).  A ``batch`` is anything with ``loss``, ``set``, ``B``, ``n``, ``p`` and
``x0()`` -- an :class:`fedcheck.instances.InstanceBatch` or a :class:`ProblemBatch`.
"""
from __future__ import annotations

from fedcheck.core.streams import replicate_seeds  # noqa: F401  (one definition)

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from fedcheck.algorithms.core import (Recorder, Trace, clients_start, default_recorder, record_grid, run_recorded,
                                     scalar_source)
from fedcheck.algorithms.l2_round_jit import l2_round

__all__ = ["ProblemBatch", "fedfw_variant", "fedfw_plus", "fedfw_sto", "fedfw_partial", "fedfw_split",
           "gaussian_oracle", "replicate_seeds", "fw_recorder", "feddr", "fw_gap"]


@dataclass
class ProblemBatch:
    """A batch given by its loss object and set directly (e.g. a matrix model, not an ``Instance``)."""

    loss: object
    set: object
    B: int
    n: int
    p: int
    X0: np.ndarray | None = None

    def x0(self) -> np.ndarray:
        return np.zeros((self.B, self.n, self.p)) if self.X0 is None else np.array(self.X0, dtype=float)


def _uniform_stream(seeds, key, shape):
    from fedcheck.problems.compression import UniformStream
    return UniformStream([int(s) for s in seeds], key, shape)


def gaussian_oracle(loss, sigma, seeds, key: str = "fedfw-sto:noise") -> Callable[[np.ndarray, int], np.ndarray]:
    """Stochastic gradients ``grad f_i(x) + sigma xi / sqrt(p)`` with ``xi ~ N(0, I_p)``: unbiased, with
    ``E ||noise||^2 = sigma^2`` exactly (Assumption 1 with equality).  ``sigma`` scalar or ``(B,)``;
    ``seeds`` one per run (``(B,)``).  Normals come from the uniforms of per-run SeedSequence streams
    through the inverse normal CDF."""
    from scipy.special import ndtri
    B, n, p = len(seeds), loss.n, loss.p
    stream = _uniform_stream(seeds, key, (n, p))
    sig = np.broadcast_to(np.asarray(sigma, dtype=float), (B,))[:, None, None] / np.sqrt(p)
    tiny = np.finfo(float).tiny

    def oracle(X, t):
        U = stream.next()
        g = loss.grad(X)
        if np.any(sig):
            g = g + sig * ndtri(np.clip(U, tiny, 1.0 - 2 ** -53))
        return g
    return oracle


def fedfw_variant(batch, eta: np.ndarray, lam: np.ndarray, rounds: int, grid: np.ndarray | None = None,
                  X0: np.ndarray | None = None, recorder: Recorder | None = None, *,
                  participation=None, seeds: Sequence[int] | None = None, rho: np.ndarray | None = None,
                  grad_oracle: Callable[[np.ndarray, int], np.ndarray] | None = None, plus=None,
                  client_sets: Sequence[tuple] = (), hook: Callable | None = None, stream=None, x0=None) -> Trace:
    """FedFW and its variants (see the module doc).  ``eta``, ``lam`` and ``rho`` are ``(rounds, B)``
    arrays (row ``t-1`` is round ``t``); ``participation`` and ``plus`` scalars or ``(B,)``; ``seeds``
    one stream seed per run (needed for random participation).  ``hook(t, state)`` (optional) sees the
    state after each round: ``X``, ``xbar``, ``S`` (the messages ``s_i``), ``mask`` (participants).

    Reference: the FedFW paper, Algorithm 1 and Section 4 (4.1 FedFW-sto, Theorem 3; 4.2 partial
    participation; 4.3 split constraints; 4.4 FedFW+).  Start ``X0`` ``(B, n, p)`` or ``x0`` ``(B, p)``; returns a
    :class:`~fedcheck.algorithms.core.Trace` (``start = 1``: ``x^1`` is the start).
    Example: ``fedfw_variant(batch, rounds=T, eta=eta, lam=lam, participation=0.5, seeds=range(batch.B))``."""
    loss, S, n, B = batch.loss, batch.set, batch.n, batch.B
    X0 = clients_start(X0, x0, n)      # the clients' own start X0, or the server's x0 (B, p) at every client
    X = batch.x0() if X0 is None else np.array(X0, dtype=float)
    state = {"X": X, "xbar": X.mean(1), "S": None, "mask": None}
    grid = record_grid(rounds + 1) if grid is None else grid
    rec = recorder or default_recorder(batch)
    inv_n = 1.0 / n
    if participation is not None:
        if seeds is None:
            raise ValueError("random participation needs one stream seed per run (seeds=)")
        pp = np.broadcast_to(np.asarray(participation, dtype=float), (B,))[:, None]
        if np.any(pp <= 0) or np.any(pp > 1):
            raise ValueError("participation probabilities must lie in (0, 1]")
        mask_stream = _uniform_stream(seeds, "fedfw:participation", (n,))
    if rho is not None:
        state["Dm"] = np.zeros_like(X)
    if plus is not None:
        lam0 = np.broadcast_to(np.asarray(plus, dtype=float), (B,))[:, None, None]
        state["Y"] = np.zeros_like(X)
    alt = [(T, np.asarray(m, dtype=bool)[None, :, None]) for T, m in client_sets]

    def step(t):
        X, xbar = state["X"], state["xbar"]
        e = eta[t - 1][:, None, None]
        mask = None
        if participation is not None:
            mask = (mask_stream.next() < pp)[:, :, None]
        g = grad_oracle(X, t) if grad_oracle is not None else loss.grad(X)
        if rho is None and plus is None and mask is None and not alt and hook is None:
            xb = l2_round(X, xbar, g, inv_n, lam[t - 1], eta[t - 1], S)      # compiled, the same bits (l2 ball)
            if xb is not None:
                state["xbar"] = xb
                return
        if rho is not None:
            r = rho[t - 1][:, None, None]
            Dm = state["Dm"]
            Dnew = (1 - r) * Dm + r * (g * inv_n)
            state["Dm"] = Dnew if mask is None else np.where(mask, Dnew, Dm)
            g = state["Dm"].copy()
        else:
            g *= inv_n
        diff = X - xbar[:, None, :]
        g += lam[t - 1][:, None, None] * diff
        if plus is not None:
            Ynew = state["Y"] + lam0 * diff
            state["Y"] = Ynew if mask is None else np.where(mask, Ynew, state["Y"])
            g += state["Y"]
        s = S.lmo(g)
        for T, m in alt:
            s = np.where(m, T.lmo(g), s)
        if mask is not None:
            s = np.where(mask, s, X)
        X += e * (s - X)
        state["xbar"] = xbar + e[:, 0] * (s.mean(1) - xbar)
        if hook is not None:
            state["S"], state["mask"] = s, mask
            hook(t, state)

    scalars = scalar_source(rec)       # every round's metrics for the every-round check (``stream``)
    trace = run_recorded(rounds, grid, step, lambda k: rec(k, state["X"], state["xbar"]), stream=stream,
                         scalar_snapshot=lambda k: scalars(k, state["X"], state["xbar"]))
    trace.final = {"X": state["X"], "xbar": state["xbar"]}
    if plus is not None:
        trace.final["Y"] = state["Y"]
    return trace


def fedfw_plus(batch, eta, lam, rounds, grid=None, X0=None, recorder=None, *, plus=1.0, stream=None, **kw) -> Trace:
    """FedFW+ (augmented Lagrangian, Section 4.4): dual step ``lambda_0`` = ``plus``.

    Arguments and return as :func:`fedfw_variant`.  Example: ``fedfw_plus(batch, rounds=T, eta=eta, lam=lam)``."""
    return fedfw_variant(batch, eta, lam, rounds, grid, X0, recorder, plus=plus, stream=stream, **kw)


def fedfw_sto(batch, eta, lam, rho, rounds, grid=None, X0=None, recorder=None, *, sigma=0.0, seeds=None,
              grad_oracle=None, stream=None, **kw) -> Trace:
    """FedFW-sto (Section 4.1) with additive Gaussian gradient noise of variance ``sigma^2`` (unless a
    ``grad_oracle`` is given).

    Reference: Section 4.1, Theorem 3 (``eta_t = 9/(t+8)``, ``lambda_t = lambda_0 sqrt(t+8)``).  ``seeds``: one per
    instance row (the noise streams).  Arguments and return as :func:`fedfw_variant`.
    Example: ``fedfw_sto(batch, rounds=T, eta=eta, lam=lam, rho=rho, sigma=0.1, seeds=range(batch.B))``."""
    if grad_oracle is None:
        if seeds is None:
            seeds = np.arange(batch.B)
        grad_oracle = gaussian_oracle(batch.loss, sigma, seeds)
    return fedfw_variant(batch, eta, lam, rounds, grid, X0, recorder, rho=rho, grad_oracle=grad_oracle,
                         seeds=seeds, stream=stream, **kw)


def fedfw_partial(batch, eta, lam, rounds, grid=None, X0=None, recorder=None, *, participation, seeds, stream=None,
                  **kw):
    """FedFW with random client participation (Section 4.2).

    ``participation`` a probability (scalar or ``(B,)``), ``seeds`` one per instance row.  Arguments and return as
    :func:`fedfw_variant`.
    Example: ``fedfw_partial(batch, rounds=T, eta=eta, lam=lam, participation=0.5, seeds=[0, 1])``."""
    return fedfw_variant(batch, eta, lam, rounds, grid, X0, recorder, participation=participation, seeds=seeds,
                         stream=stream, **kw)


def fedfw_split(batch, eta, lam, rounds, grid=None, X0=None, recorder=None, *, client_sets, stream=None, **kw):
    """FedFW with split constraints (Section 4.3): ``client_sets = [(superset, client mask), ...]``.

    Arguments and return as :func:`fedfw_variant`.
    Example: ``fedfw_split(batch, rounds=T, eta=eta, lam=lam, client_sets=[(L1Ball(2.0, p), mask)])``."""
    return fedfw_variant(batch, eta, lam, rounds, grid, X0, recorder, client_sets=client_sets, stream=stream, **kw)


# ---------------------------------------------------------------------------------------------
# recorders
def fw_gap(loss, S, x: np.ndarray) -> np.ndarray:
    """The Frank-Wolfe gap (11) ``max_{u in D} <grad F(x), x - u>`` of server points ``x`` ``(B, p)``."""
    g = loss.full_grad(x)
    return np.einsum("bp,bp->b", g, x - S.lmo(g))


def fw_recorder(batch, lam_fixed: np.ndarray | None = None, base: Recorder | None = None) -> Recorder:
    """``gap`` (FW gap of ``xbar``), ``dist`` (``||X - xbar 1^T||_F``), ``F_hat`` (``(1/n) sum_i f_i(x_i)``)
    and, with ``lam_fixed`` ``(B,)``, ``gap_hat``: the surrogate gap (45) ``max_{U in D^n}
    <grad F^_T(X), X - U>`` for the fixed penalty of Theorem 2; plus ``base``'s metrics."""
    loss, S, n = batch.loss, batch.set, batch.n

    def rec(k, X, xbar):
        out = dict(base(k, X, xbar)) if base is not None else {}
        diff = X - xbar[:, None, :]
        out["gap"] = fw_gap(loss, S, xbar)
        out["dist"] = np.sqrt((diff ** 2).sum((-2, -1)))
        out["F_hat"] = loss.value(X).mean(-1)
        if lam_fixed is not None:
            g = loss.grad(X) / n + lam_fixed[:, None, None] * diff
            out["gap_hat"] = np.einsum("bip,bip->b", g, X - S.lmo(g))
        return out
    return rec


# ---------------------------------------------------------------------------------------------
def feddr(batch, rounds: int, eta, alpha: float = 1.0, local_steps: int = 1, lr=None,
          grid: np.ndarray | None = None, X0=None, recorder: Recorder | None = None,
          grad_oracle: Callable | None = None, *, x0=None) -> Trace:
    """FedDR (Tran-Dinh et al. 2021, the baseline of the FedFW paper's experiments) for
    ``min (1/n) sum_i f_i + indicator_D``, full participation::

        y_i <- y_i + alpha (xbar - x_i)
        x_i <- prox_{eta f_i}(y_i)      (inexact: ``local_steps`` gradient steps of size ``lr``)
        xhat_i = 2 x_i - y_i;           xbar <- proj_D(mean_i xhat_i)

    ``eta`` a scalar or one value per instance ``(B,)``; ``lr`` defaults to ``1 / (L_i + 1/eta)`` per client
    (the prox subproblem's smoothness).

    Start ``X0`` ``(B, n, p)`` or ``x0`` ``(B, p)``; returns a :class:`~fedcheck.algorithms.core.Trace` in FedFW's
    indexing (``start = 1``).  Example: ``feddr(batch, rounds=T, eta=1.0, local_steps=5)``."""
    loss, S, n, B = batch.loss, batch.set, batch.n, batch.B
    X0 = clients_start(X0, x0, n)      # the clients' own start X0, or the server's x0 (B, p) at every client
    X = batch.x0() if X0 is None else np.array(X0, dtype=float)
    state = {"X": X.copy(), "Yd": X.copy(), "xbar": X.mean(1)}
    grid = record_grid(rounds + 1) if grid is None else grid
    rec = recorder or default_recorder(batch)
    eta_b = np.broadcast_to(np.asarray(eta, dtype=float).reshape(-1), (B,))[:, None]     # scalar or (B,)
    if lr is None:
        lr = 1.0 / (np.asarray(loss.smoothness()) + 1.0 / eta_b)
    lr = np.broadcast_to(np.asarray(lr, dtype=float), (B, n))[:, :, None]
    eta = eta_b[:, :, None]

    def step(t):
        Yd = state["Yd"] + alpha * (state["xbar"][:, None, :] - state["X"])
        Z = state["X"]
        for _ in range(local_steps):
            g = grad_oracle(Z, t) if grad_oracle is not None else loss.grad(Z)
            Z = Z - lr * (g + (Z - Yd) / eta)
        state["X"], state["Yd"] = Z, Yd
        state["xbar"] = S.project((2 * Z - Yd).mean(1))

    trace = run_recorded(rounds, grid, step, lambda k: rec(k, state["X"], state["xbar"]))
    trace.final = {"X": state["X"], "xbar": state["xbar"]}
    return trace
