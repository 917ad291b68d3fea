"""The one FedAvg, batched over instances ``B`` and clients ``n``, composed of the pieces of
:mod:`fedcheck.algorithms.pieces`.

Round ``r = 0 .. rounds-1`` (all instances and clients at once, no Python loop over either)::

    sel      = participation(r)                 None (all n), (B, S) indices, or a (B, n) mask
    grad     = oracle(r, sel)                   the round's oracle grad(W, t) -> (B, S, p)
    W        = x copied to every (selected) client
    t = 1 .. steps:   W <- client_map(W - eta(r, t) grad(W, t))        (local_updates; per-instance
                                                                      step counts freeze finished rows)
    server:  eta_s is None and no uplink:  x <- mean_i W_i                       (plain averaging;
                                                                                  sum_i p_i W_i with weights)
             otherwise:                    x <- x + eta_s mean_i C(W_i - x)       (C = uplink, or the
                                                                                  identity: mean_i W_i - x)
             then x <- server_map(x)                                             (e.g. a server prox)

Everything a variant changes is an argument: the oracle (exact, stochastic with its own seeded
generator, ``f + psi`` subgradients), the step sizes (constant, per round, or per local step with a
counter over rounds), per-instance local step counts, client sampling (a uniform subset or Bernoulli
mask), a client map (projection, FedMiD's client prox), uplink compression, a server step and a server
map (FedMiD's server prox), and a per-local-step ``hook`` for pathwise checks.

**Two server orders** (an explicit option, not reconcilable bit for bit): ``eta_s=None`` is the
plain average ``x <- mean_i W_i`` (FedMLS's and FedSGM's FedAvg); a number or ``(B,)`` array is the
server step ``x <- x + eta_s (mean_i W_i - x)`` (FedDualAvg's Algorithm 1).  In exact arithmetic
``eta_s = 1`` is the plain average, in floating point ``x + (m - x)`` can differ from ``m`` in the last
bit, so each caller keeps the order it always had.

:func:`fedavg_rounds` is a generator: it yields one :class:`FedAvgState` (the same object, updated)
before the first round and after every round, so a caller records on its own grid and stops when it
likes (a state's ``rounds`` counts completed rounds: 0 is the start).  :func:`run_fedavg` runs it to the end and
returns the library's :class:`~fedcheck.algorithms.core.Trace`.  This is the library's one FedAvg: a paper that states
FedAvg in its own notation keeps a thin translation of its arguments in its folder
(``theorems/<paper>/methods.py``: FedDualAvg's on :func:`fedcheck.algorithms.primal_averaging`, FedMLS's
on :func:`fedavg_rounds`, FedSGM's on :func:`run_fedavg`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from fedcheck.algorithms.fedavg_jit import ls_fedavg, ls_local_steps
from fedcheck.algorithms.pieces import client_mean, local_updates, server_step, step_sizes
from fedcheck.problems.losses import LeastSquares

__all__ = ["FedAvgState", "fedavg_rounds", "run_fedavg"]

# oracle(r, sel) -> grad(W, t): the round-r oracle (set up once per round, after the client draw)
RoundOracle = Callable[[int, object], Callable[[np.ndarray, int], np.ndarray]]


@dataclass
class FedAvgState:
    """The run's state after ``rounds`` completed rounds (one object, updated in place by the generator):
    server point ``x`` ``(B, p)``, the clients' points ``X`` of the last round ``(B, S, p)`` (at the start,
    ``x`` copied to all ``n`` clients), its participation ``sel``, and per instance the local steps per
    client ``calls`` and the communications ``comms`` so far."""

    x: np.ndarray
    X: np.ndarray
    calls: np.ndarray
    comms: np.ndarray
    rounds: int = 0
    sel: object = None


def fedavg_rounds(x0, oracle: RoundOracle, *, rounds: int, n: int, eta=None, eta_step=None, steps=1,
                  eta_s=None, participation: Callable[[int], object] | None = None,
                  client_map: Callable[[np.ndarray], np.ndarray] | None = None,
                  server_map: Callable[[np.ndarray], np.ndarray] | None = None,
                  uplink: Callable[[np.ndarray], np.ndarray] | None = None,
                  hook: Callable[[int, int, dict], None] | None = None, weights=None) -> Iterator[FedAvgState]:
    """FedAvg (see the module doc); yields the state at ``0, 1, .., rounds`` completed rounds.

    ``x0`` ``(B, p)`` the server start (not modified).  ``oracle(r, sel)`` returns the round's
    ``grad(W, t)`` (``t = 1 ..`` the local step); :func:`~fedcheck.algorithms.pieces.static_oracle` wraps a
    plain ``grad(X)``.  ``n`` clients.  Client step size: ``eta`` a scalar / ``(B,)`` (constant) or
    ``(rounds, B)`` (row ``r``), ``(rounds, B, E)`` (row ``r``, column ``t - 1`` at local step ``t``: a
    schedule per local step, as ``Rounds(local_steps=E, per_local_step=...)`` evaluates one), or ``eta_step``
    ``(S, B)`` indexed by each instance's local-step counter.
    ``steps`` an int or ``(rounds, B)`` integer counts (row ``r``; finished instances are frozen).
    ``eta_s`` ``None`` (plain averaging) or the server step (scalar or ``(B,)``).  ``participation(r)``
    ``None``, ``(B, S)`` client indices (the clients' array is then ``(B, S, p)``; the oracle gets the
    indices) or a ``(B, n)`` boolean mask (the average is over the mask).  ``client_map`` after every local
    step, ``server_map`` after the server step, ``uplink(D)`` compresses the clients' updates
    ``D = W - x`` ``(B, S, p)``.  ``hook(r, k, {"W": W, "g": g})`` after local step ``k = t - 1`` with the
    unscaled direction ``g``.  ``weights`` the client weights ``p_k`` ``(n,)`` or ``(B, n)`` (``p_k = n_k / N``,
    an instance's :attr:`~fedcheck.problems.Instance.weights`): the server averages ``sum_k p_k W_k`` (over the
    round's participants, renormalized); ``None`` is the plain mean, bit for bit as before."""
    x = np.asarray(x0, dtype=float)
    B = x.shape[0]
    size = step_sizes(B, eta, eta_step)
    counts = np.asarray(steps)
    if counts.ndim == 2:
        counts = counts.astype(np.int64)
    else:
        counts = int(counts)
    cum = np.zeros(B, dtype=np.int64)
    ls = _plain_ls_oracle(oracle)
    p = x.shape[1]
    # the plain least-squares oracle, plain averaging, nothing per step: the round fused and compiled (same bits)
    fused = ls_fedavg(ls, B, int(n), p) if (ls is not None and client_map is None and hook is None and uplink is None
                                            and eta_s is None and server_map is None and weights is None) else None
    w_all = None if weights is None else np.broadcast_to(np.asarray(weights, dtype=float), (B, int(n)))
    per_step = eta_step is not None or np.ndim(eta) == 3
    uniform = None if not isinstance(counts, np.ndarray) else np.all(counts == counts[:, :1], axis=1)
    st = FedAvgState(x=x, X=np.repeat(x[:, None, :], int(n), axis=1), calls=np.zeros(B), comms=np.zeros(B))
    yield st
    for r in range(int(rounds)):
        sel = participation(r) if participation is not None else None
        grad = oracle(r, sel)
        mask = sel if sel is not None and np.asarray(sel).dtype == bool else None
        S = int(n) if sel is None or mask is not None else sel.shape[1]
        Tb = counts[r] if isinstance(counts, np.ndarray) else counts
        on_step = None if hook is None else (lambda t, W, G, r=r: hook(r, t - 1, {"W": W, "g": G}))
        W = xf = None
        if ls is not None and sel is None and client_map is None and hook is None:
            # the plain least-squares oracle, every client, no map/hook: the compiled local steps, or with plain
            # averaging and one step count for every instance the whole round fused (fedavg_jit; the same bits)
            Tm = int(np.max(Tb, initial=0))
            if not per_step:           # a step size per round: the same for every local step of round r
                sizes = np.asarray(size(r, 1, cum), dtype=float)
            else:
                sizes = np.stack([np.broadcast_to(np.asarray(size(r, t, cum), dtype=float), (B,))
                                  for t in range(1, Tm + 1)]) if Tm else np.zeros((1, B))
            if fused is not None and (uniform is None or uniform[r]) and (per_step or sizes.shape == (B,)):
                W, xf = fused.round(x, np.ascontiguousarray(sizes.reshape(-1, B)), Tm)
            else:
                W = ls_local_steps(ls, np.repeat(x[:, None, :], S, axis=1), sizes, Tb)
        if W is None:
            W = local_updates(np.repeat(x[:, None, :], S, axis=1), grad, Tb, lambda t, r=r: size(r, t, cum),
                              client_map=client_map, hook=on_step)
        cum += Tb
        # the weights of W's clients: all n (or under the mask), or the sampled subset's
        w = w_all if w_all is None or sel is None or mask is not None else np.take_along_axis(w_all, sel, 1)
        if xf is not None:             # the fused round averaged (plain averaging: no uplink, server step or map)
            x = xf
        elif uplink is None and eta_s is None:
            x = client_mean(W, mask, w)
        else:
            delta = client_mean(W, mask, w) - x if uplink is None else client_mean(uplink(W - x[:, None, :]), mask, w)
            x = server_step(x, delta, 1.0 if eta_s is None else eta_s)
        if server_map is not None:
            x = server_map(x)
        st.x, st.X, st.sel = x, W, sel
        st.calls += Tb
        st.comms += 1.0
        st.rounds = r + 1
        yield st


def _plain_ls_oracle(oracle):
    """The least-squares loss whose plain ``grad`` a :func:`~.pieces.static_oracle` wraps, else ``None``."""
    from fedcheck.algorithms.kernels import plain_least_squares
    grad = getattr(oracle, "grad", None)
    loss = getattr(grad, "__self__", None)
    if loss is None or getattr(grad, "__func__", None) is not LeastSquares.grad or not plain_least_squares(loss):
        return None
    return loss


def run_fedavg(x0, oracle: RoundOracle, *, rounds: int, n: int, iterates: bool = False, grid=None, **kw):
    """FedAvg (McMahan et al. 2017; the local (sub)gradient method) run to the end: :func:`fedavg_rounds` (its
    arguments) recorded on ``grid``, the numbers of completed rounds (default ``0``, the start, then
    :func:`record_grid`; every round ``0 .. rounds`` with ``iterates``).  Returns a :class:`~.core.Trace`
    (``start = 0``): ``metrics["calls"]``, ``metrics["comms"]`` ``(len(grid), B)``, with ``iterates`` also
    ``metrics["x"]`` ``(len(grid), B, p)``; ``final``: ``x``, ``X``, ``calls``, ``comms`` after the last round.

    Example::

        tr = run_fedavg(x0, static_oracle(batch.loss.grad), rounds=100, n=batch.n, eta=0.01, steps=5)
        x_R = tr.final["x"]
    """
    from fedcheck.algorithms.core import Trace, record_grid
    R = int(rounds)
    grid = (np.arange(R + 1) if iterates else np.append(0, record_grid(R))) if grid is None else np.asarray(grid)
    want = np.zeros(R + 1, dtype=bool)
    want[grid[(grid >= 0) & (grid <= R)]] = True
    rows: dict = {}
    for st in fedavg_rounds(x0, oracle, rounds=R, n=n, **kw):
        if want[st.rounds]:
            for name, v in (("calls", st.calls), ("comms", st.comms)) + ((("x", st.x),) if iterates else ()):
                rows.setdefault(name, []).append(np.array(v, dtype=float))
    return Trace(rounds=np.flatnonzero(want), metrics={k: np.stack(v) for k, v in rows.items()},
                 final={"x": st.x, "X": st.X, "calls": st.calls, "comms": st.comms}, start=0)
