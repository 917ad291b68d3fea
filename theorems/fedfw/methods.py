"""FedFW as the paper's claims instrument it: inexact linear minimization, noisy LMOs (privacy), non-uniform
participation, and a recorder of the surrogate of (31)/(35) (:func:`with_surrogate`).

The paper (Section 3.2) says "FW is robust against additive and multiplicative errors in the linear minimization
step [24]; consequently, we can introduce noise to augment data privacy without compromising the convergence
guarantees", and (Section 4.2) that "non-uniform participation can be addressed similarly".  It gives no constants;
the error models here are the standard ones of its reference [24] (Jaggi 2013) and of Lacoste-Julien & Jaggi 2015:

* **additive** (:class:`AdditiveErrorLMO`): each client's message ``s~`` is a point of D with
  ``<s~, g> <= min_(s in D) <s, g> + eps_t`` -- here the *worst* such point on the segment from the exact
  ``s = lmo(g)`` to the maximizer ``v = lmo(-g)``: ``s~ = (1 - theta) s + theta v``, ``theta = min(1, eps_t /
  <v - s, g>)``, so the error is exactly ``min(eps_t, <v - s, g>)``.  Jaggi's condition is
  ``eps_t = (delta/2) eta_t C`` (decaying with the step); a constant ``eps`` is also allowed;
* **multiplicative** (``alpha`` in (0, 1]): ``<s~ - x, g> <= alpha <s - x, g>``; the choice
  ``s~ = x + alpha (s - x)`` attains it with equality, and FedFW's update with it is FedFW with the step
  ``alpha eta_t`` -- :func:`multiplicative_eta` (no new round function);
* **noise for privacy** (:class:`NoisyLMO`): ``s~ = lmo(g + sigma_t xi)``, ``xi ~ N(0, I/p)`` from per-run
  SeedSequence streams (the message stays an extreme point);
* **non-uniform participation** (:func:`fedfw_nonuniform`): client ``i`` takes part with its own probability
  ``p_i``; a non-participant keeps ``x_i``; the server point is ``mean_i x_i``.

The wrappers are sets (``lmo`` plus everything else delegated to the wrapped set), passed as the batch's set to
:func:`fedcheck.algorithms.fedfw_variant`, which calls ``lmo`` once per round on the whole
``(B, n, p)`` array of directions (vectorized over instances and clients).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from fedcheck.algorithms import ProblemBatch, Trace, default_recorder, fedfw_variant
from fedcheck.problems import UniformStream

__all__ = ["AdditiveErrorLMO", "NoisyLMO", "multiplicative_eta", "with_set", "fedfw_inexact", "fedfw_nonuniform",
           "additive_error", "with_surrogate"]


def _uniform_stream(seeds, key, shape):
    return UniformStream([int(s) for s in seeds], key, shape)


class _Wrapped:
    """A set whose LMO is replaced; every other attribute is the wrapped set's.  ``round`` counts LMO calls
    (FedFW calls it once per round), so per-round schedules index ``round - 1``."""

    def __init__(self, base):
        self.base = base
        self.round = 0

    def __getattr__(self, name):
        return getattr(self.base, name)


class AdditiveErrorLMO(_Wrapped):
    """Inexact LMO with additive error ``eps``: ``eps`` a scalar, ``(B,)``, or ``(rounds, B)`` (row ``t-1``: round t)."""

    def __init__(self, base, eps):
        super().__init__(base)
        self.eps = np.asarray(eps, dtype=float)
        self.last_error = None

    def lmo(self, g):
        self.round += 1
        e = self.eps[self.round - 1] if self.eps.ndim == 2 else self.eps
        e = np.broadcast_to(e, g.shape[:1])[:, None, None] if g.ndim == 3 else e
        s = self.base.lmo(g)
        v = self.base.lmo(-g)
        width = np.einsum("...p,...p->...", v - s, g)[..., None]
        theta = np.where(width > 0, np.minimum(1.0, e / np.where(width > 0, width, 1.0)), 0.0)
        out = s + theta * (v - s)
        self.last_error = np.einsum("...p,...p->...", out - s, g)
        return out


def additive_error(S, g, s_tilde) -> np.ndarray:
    """``<s~, g> - min_(s in D) <s, g>`` (the additive error of a message), per client."""
    return np.einsum("...p,...p->...", s_tilde - S.lmo(g), g)


class NoisyLMO(_Wrapped):
    """``lmo(g + sigma_t xi)``, ``xi ~ N(0, I/p)`` (``E||sigma xi||^2 = sigma^2``); ``sigma`` scalar, ``(B,)`` or
    ``(rounds, B)``; one stream seed per run."""

    def __init__(self, base, sigma, seeds: Sequence[int], n: int, p: int, key: str = "fedfw:lmo-noise"):
        super().__init__(base)
        self.sigma = np.asarray(sigma, dtype=float)
        self.stream = _uniform_stream(seeds, key, (n, p))
        self.p = p

    def lmo(self, g):
        from scipy.special import ndtri
        self.round += 1
        sig = self.sigma[self.round - 1] if self.sigma.ndim == 2 else self.sigma
        sig = np.broadcast_to(sig, g.shape[:1])[:, None, None] / np.sqrt(self.p)
        U = self.stream.next()
        xi = ndtri(np.clip(U, np.finfo(float).tiny, 1.0 - 2 ** -53))
        return self.base.lmo(g + sig * xi)


def multiplicative_eta(eta: np.ndarray, alpha) -> np.ndarray:
    """The steps of FedFW whose messages have multiplicative error ``alpha``: ``s~ = x + alpha (s - x)`` gives
    ``x + eta (s~ - x) = x + (alpha eta)(s - x)``."""
    return np.asarray(eta, dtype=float) * np.asarray(alpha, dtype=float)


def with_set(batch, S) -> ProblemBatch:
    """The batch with its set replaced (same loss, sizes and start)."""
    return ProblemBatch(batch.loss, S, batch.B, batch.n, batch.p, batch.x0())


def fedfw_inexact(batch, eta, lam, rounds, grid=None, X0=None, recorder=None, *, eps=None, sigma=None, seeds=None,
                  alpha=None, **kw):
    """FedFW with an additive LMO error ``eps``, LMO noise ``sigma`` (needs ``seeds``) or a multiplicative error
    ``alpha`` (one of them)."""
    if sum(v is not None for v in (eps, sigma, alpha)) != 1:
        raise ValueError("give exactly one of eps, sigma, alpha")
    if alpha is not None:
        return fedfw_variant(batch, multiplicative_eta(eta, np.asarray(alpha)[None] if np.ndim(alpha) else alpha),
                             lam, rounds, grid, X0=X0, recorder=recorder, **kw)
    if eps is not None:
        S = AdditiveErrorLMO(batch.set, eps)
    else:
        if seeds is None:
            raise ValueError("LMO noise needs one stream seed per run (seeds=)")
        S = NoisyLMO(batch.set, sigma, seeds, batch.n, batch.p)
    return fedfw_variant(with_set(batch, S), eta, lam, rounds, grid, X0=X0, recorder=recorder, **kw)


def fedfw_nonuniform(batch, eta, lam, rounds, grid=None, X0=None, recorder=None, *, participation, seeds, **kw):
    """FedFW where client ``i`` takes part with probability ``participation[..., i]`` (``(n,)`` or ``(B, n)``),
    independently across clients, rounds and runs (SeedSequence streams, one seed per run); a non-participant keeps
    ``x_i``, the server point is ``mean_i x_i`` (the paper's (63) with per-client p_i)."""
    B, n = batch.B, batch.n
    P = np.broadcast_to(np.asarray(participation, dtype=float), (B, n))
    if np.any(P <= 0) or np.any(P > 1):
        raise ValueError("participation probabilities must lie in (0, 1]")
    stream = _uniform_stream(seeds, "fedfw:nonuniform", (n,))
    prev = {"X": None}

    def hook(t, state):
        X = state["X"]
        keep = (stream.next() >= P)[:, :, None]            # non-participants this round
        if prev["X"] is not None:
            X[...] = np.where(keep, prev["X"], X)
        else:   # round 1: every client started at X^1 (= the batch's start)
            X[...] = np.where(keep, x_start, X)
        state["xbar"] = X.mean(1)
        prev["X"] = X.copy()
    x_start = batch.x0() if X0 is None else np.array(X0, dtype=float)
    return fedfw_variant(batch, eta, lam, rounds, grid, X0=x_start, recorder=recorder, hook=hook, **kw)


def with_surrogate(algorithm: Callable[..., Trace]) -> Callable[..., Trace]:
    """Wrap an algorithm so that its recorder also records the surrogate of the iterate ``X^k``,
    ``surrogate = F^_{k-1}(X^k) = (1/n) sum_i f_i(x_i^k) + (lambda_{k-1}/2) dist^2(X^k, C)`` (the left
    side of (31)/(35); NaN at ``k = 1``), ``dist = dist(X^k, C)`` and ``F_hat = F^(X^k)``."""
    def run(batch, eta, lam, rounds, grid=None, recorder=None, stream=None, **kw):
        base = recorder or default_recorder(batch)
        loss = batch.loss

        def rec(k, X, xbar):
            out = dict(base(k, X, xbar))
            d2 = ((X - xbar[:, None, :]) ** 2).sum((-2, -1))
            Fh = loss.value(X).mean(-1)
            lam_prev = lam[k - 2] if k >= 2 else np.full(batch.B, np.nan)
            out["F_hat"], out["dist"], out["surrogate"] = Fh, np.sqrt(d2), Fh + 0.5 * lam_prev * d2
            return out
        if stream is not None:      # the wrapped algorithm streams every round's metrics (the surrogate included)
            kw["stream"] = stream
        return algorithm(batch, eta=eta, lam=lam, rounds=rounds, grid=grid, recorder=rec, **kw)
    run.__name__ = f"{getattr(algorithm, '__name__', 'algorithm')}_with_surrogate"
    run.__doc__ = with_surrogate.__doc__
    return run
