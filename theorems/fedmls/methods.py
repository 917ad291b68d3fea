"""The FedMLS paper's FedAvg: the library's one FedAvg (:func:`fedcheck.algorithms.fedavg_rounds`, plain averaging)
with the paper's argument names, indexing and trace (the other methods the paper runs -- FedMLS, MOPES, Scaffold,
Scaffnew, DCS -- are the library's, :mod:`fedcheck.algorithms`).

Indexing is the paper's: ``x_0`` is the start and round ``k = 1..K`` produces ``x_k``; the trace is indexed by the
rounds completed, ``k = 0..K``, and records, besides the recorder's metrics (default ``F`` at the server point),
``calls`` (subgradient calls per client so far) and ``comms`` (communication rounds so far).
"""
from __future__ import annotations

import numpy as np

from fedcheck.algorithms import default_recorder, drive_rounds, fedavg_rounds, local_step_args, pieces, start_point

__all__ = ["fedavg"]


def fedavg(batch, *, rounds: int, T, eta=None, eta_step=None, grid=None, recorder=None, oracle=None, x0=None,
           stop=None):
    """FedAvg (local subgradient method): every client starts from the server point, takes ``T_k``
    steps ``x^i <- x^i - eta g_i(x^i)`` on its own ``f_i``, and the server averages.  ``eta`` is per
    round ``(rounds, B)`` or ``eta_step`` per local step (``(S, B)``, counter over all rounds).
    ``oracle(U) -> (B, n, p)`` (default ``batch.loss.grad``); ``stop(k, xbar)`` ends the run early."""
    Tk, eta, eta_step = local_step_args(rounds, batch.B, T, eta, eta_step)
    states = fedavg_rounds(start_point(batch, x0), pieces.static_oracle(oracle or batch.loss.grad), rounds=rounds,
                           n=batch.n, eta=eta, eta_step=eta_step, steps=Tk)
    st = next(states)
    rec = recorder or default_recorder(batch)

    def snapshot(k):
        out = dict(rec(k, st.X, st.x))
        out.update({"calls": np.array(st.calls, dtype=float), "comms": np.array(st.comms, dtype=float)})
        return out
    trace = drive_rounds(rounds, grid, lambda k: next(states), snapshot,
                         None if stop is None else (lambda k: bool(stop(k, st.x))))
    trace.final = {"xbar": st.x.copy(), "X": st.X.copy()}
    return trace
