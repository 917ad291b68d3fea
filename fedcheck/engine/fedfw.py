"""Frank-Wolfe family: FedFW (Algorithm 1 of the FedFW paper), naive FW averaging
(Appendix A), and classical Frank-Wolfe.  Vectorized over instances and clients."""
from __future__ import annotations

import numpy as np

from ..instances import InstanceBatch
from .core import Recorder, Trace, default_recorder, record_grid, run_recorded

__all__ = ["fedfw", "naive_fw_averaging", "frank_wolfe"]


def fedfw(batch: InstanceBatch, eta: np.ndarray, lam: np.ndarray, rounds: int,
          grid: np.ndarray | None = None, X0: np.ndarray | None = None,
          recorder: Recorder | None = None) -> Trace:
    """FedFW, Algorithm 1 of Dadras et al. (full participation).

    Per round ``t`` and client ``i`` (all at once)::

        g_i = (1/n) grad f_i(x_i) + lambda_t (x_i - xbar)
        s_i = lmo_D(g_i);  x_i <- (1 - eta_t) x_i + eta_t s_i
        xbar <- (1 - eta_t) xbar + eta_t mean_i s_i

    ``eta`` and ``lam`` are ``(rounds, B)`` arrays (row ``t-1`` is round ``t``)."""
    loss, S, n = batch.loss, batch.set, batch.n
    X = batch.x0() if X0 is None else np.array(X0, dtype=float)
    state = {"X": X, "xbar": X.mean(1)}
    grid = record_grid(rounds + 1) if grid is None else grid
    rec = recorder or default_recorder(batch)
    inv_n = 1.0 / n

    def step(t):
        X, xbar = state["X"], state["xbar"]
        e = eta[t - 1][:, None, None]
        g = loss.grad(X)
        g *= inv_n
        g += lam[t - 1][:, None, None] * (X - xbar[:, None, :])
        s = S.lmo(g)
        X += e * (s - X)
        state["xbar"] = xbar + e[:, 0] * (s.mean(1) - xbar)

    trace = run_recorded(rounds, grid, step, lambda k: rec(k, state["X"], state["xbar"]))
    trace.final = {"X": state["X"], "xbar": state["xbar"]}
    return trace


def naive_fw_averaging(batch: InstanceBatch, eta: np.ndarray, rounds: int, local_steps: int = 1,
                       grid: np.ndarray | None = None, x0: np.ndarray | None = None,
                       recorder: Recorder | None = None) -> Trace:
    """Naive Frank-Wolfe with model averaging, procedure (20) of Appendix A of the FedFW paper:
    each client runs ``local_steps`` FW steps on its own ``f_i`` from ``xbar``; the server averages."""
    loss, S, n = batch.loss, batch.set, batch.n
    xbar = np.zeros((batch.B, batch.p)) if x0 is None else np.array(x0, dtype=float)
    state = {"xbar": xbar, "X": np.repeat(xbar[:, None, :], n, 1)}
    grid = record_grid(rounds + 1) if grid is None else grid
    rec = recorder or default_recorder(batch)

    def step(t):
        X = np.repeat(state["xbar"][:, None, :], n, 1)
        e = eta[t - 1][:, None, None]
        for _ in range(local_steps):
            X = X + e * (S.lmo(loss.grad(X)) - X)
        state["X"], state["xbar"] = X, X.mean(1)

    trace = run_recorded(rounds, grid, step, lambda k: rec(k, state["X"], state["xbar"]))
    trace.final = {"X": state["X"], "xbar": state["xbar"]}
    return trace


def frank_wolfe(batch: InstanceBatch, eta: np.ndarray, rounds: int, grid=None, x0=None, recorder=None) -> Trace:
    """Classical (centralized) Frank-Wolfe on F = mean_i f_i: x <- x + eta_t (lmo(grad F(x)) - x)."""
    loss, S = batch.loss, batch.set
    x = np.zeros((batch.B, batch.p)) if x0 is None else np.array(x0, dtype=float)
    state = {"x": x}
    grid = record_grid(rounds + 1) if grid is None else grid
    rec = recorder or default_recorder(batch)

    def step(t):
        x = state["x"]
        state["x"] = x + eta[t - 1][:, None] * (S.lmo(loss.full_grad(x)) - x)

    trace = run_recorded(rounds, grid, step, lambda k: rec(k, state["x"][:, None, :], state["x"]))
    trace.final = {"xbar": state["x"]}
    return trace
