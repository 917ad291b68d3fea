"""The algorithm protocol: a federated method is a *round function*; :func:`federated` makes it a batched
algorithm that every experiment runs like fedcheck's own.

A round function receives the clients' points ``X`` ``(B, n, p)`` (B instances, n clients), the server point
``x`` ``(B, p)``, a :class:`Round` context and the schedules' values at this round (each ``(B,)``), and
returns the new ``(X, x)``.  Everything is batched: no Python loop over clients or instances::

    def fedprox_round(X, x, ctx, *, eta, mu, local_steps=5):
        Y = ctx.broadcast(x)                                   # every client starts from the server point
        for _ in range(local_steps):                           # inexact prox step on f_i + mu/2 ||y - x||^2
            Y = ctx.project(Y - ctx.col(eta) * (ctx.grad(Y) + ctx.col(mu) * (Y - x[:, None, :])))
        return Y, Y.mean(1)

    fedprox = federated(fedprox_round, name="FedProx")

``fedprox(batch, rounds=T, grid=..., recorder=..., eta=(T, B) array, mu=(T, B) array)`` returns a
:class:`~fedcheck.algorithms.core.Trace` (the schedules come from the claim's SymPy expressions; constants
such as ``local_steps`` come from ``algorithm_kwargs``).  Randomness (sampled clients, stochastic gradients,
compression) comes only from ``ctx.rng`` / ``ctx.normal`` / ``ctx.uniform``, one
``numpy.random.Generator`` per instance row seeded from ``numpy.random.SeedSequence`` (the ``seeds`` the
experiment passes, :func:`fedcheck.core.streams.replicate_seeds`): a row's numbers do not depend on the
other rows of its batch.  Reusable pieces: :mod:`fedcheck.algorithms.pieces`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from fedcheck.algorithms.contract import RoundContract
from fedcheck.algorithms.core import Trace, clients_start, default_recorder, run_recorded, scalar_source
from fedcheck.core.schedules import record_grid
from fedcheck.core.streams import LazyRows, row_generators
from fedcheck.core.usercode import guard

__all__ = ["Round", "federated", "row_generators"]




@dataclass
class Round:
    """What a round function sees: the batch (losses, set), the round ``t`` (1-based) and randomness."""

    batch: object
    t: int = 0
    rngs: list = field(default_factory=list)
    state: dict = field(default_factory=dict)      # the method's own memory across rounds (control variates...)
    rounds: int = 0
    recorded: dict = field(default_factory=dict)   # {name: (B, rounds)}: what ctx.record kept (Rounds(measured=))

    def record(self, name: str, values) -> None:
        """Record a quantity measured during the run, per instance row ``values`` ``(B,)``: each round keeps the
        largest value recorded in it (``Rounds(measured={name: label})`` lets a bound read it, as measured, not a
        priori).  E.g. ``ctx.record("G2", (G ** 2).sum(-1).max(1))`` at every local step's gradient ``G``."""
        if not 1 <= self.t <= self.rounds:
            raise ValueError(f"ctx.record({name!r}, ...) is for the rounds 1 .. {self.rounds}, not round {self.t}")
        arr = self.recorded.get(name)
        if arr is None:
            arr = self.recorded[name] = np.full((self.B, self.rounds), np.nan)
        row = arr[:, self.t - 1]
        np.fmax(row, np.broadcast_to(np.asarray(values, dtype=float), (self.B,)), out=row)

    # -- problem access -------------------------------------------------------------------------
    @property
    def B(self) -> int:
        return self.batch.B

    @property
    def n(self) -> int:
        return self.batch.n

    @property
    def p(self) -> int:
        return self.batch.p

    def grad(self, X: np.ndarray) -> np.ndarray:
        """Every client's gradient at its own point: ``(B, n, p)``."""
        return self.batch.loss.grad(X)

    def value(self, X: np.ndarray) -> np.ndarray:
        return self.batch.loss.value(X)

    def full_grad(self, x: np.ndarray) -> np.ndarray:
        return self.batch.loss.full_grad(x)

    def project(self, Z: np.ndarray) -> np.ndarray:
        """Projection onto each instance's feasible set (client points ``(B, n, p)`` or server points ``(B, p)``;
        the set's radius broadcasts over the leading instance axis)."""
        return self.batch.set.project(Z)

    def lmo(self, G: np.ndarray) -> np.ndarray:
        """Linear minimization oracle of each instance's set: ``argmin_{s in D} <g, s>`` per row."""
        return self.batch.set.lmo(G)

    @staticmethod
    def col(v) -> np.ndarray:
        """A per-instance value ``(B,)`` shaped to broadcast against client arrays ``(B, n, p)``."""
        return np.asarray(v, dtype=float)[:, None, None]

    @staticmethod
    def row(v) -> np.ndarray:
        """A per-instance value ``(B,)`` shaped to broadcast against server points ``(B, p)``."""
        return np.asarray(v, dtype=float)[:, None]

    def average(self, X: np.ndarray) -> np.ndarray:
        """The server's average of the clients' points ``(B, p)``: ``sum_k p_k X_k`` with the instances' client
        weights (``Instance(weights=...)``, ``p_k = n_k / N``), ``X.mean(1)`` (the same bits) without them."""
        return self.batch.loss.client_average(X, -2)

    def broadcast(self, x: np.ndarray) -> np.ndarray:
        """The server point copied to every client: ``(B, n, p)``."""
        return np.repeat(x[:, None, :], self.n, axis=1)

    # -- randomness (one generator per instance row) ----------------------------------------------
    def normal(self, shape: tuple) -> np.ndarray:
        """Standard normal draws of shape ``(B, *shape)``, row ``b`` from its own stream."""
        return np.stack([g.standard_normal(shape) for g in self.rngs])

    def uniform(self, shape: tuple) -> np.ndarray:
        return np.stack([g.uniform(size=shape) for g in self.rngs])


def federated(round_fn: Callable, *, name: str | None = None, init: Callable | None = None,
              stream: str | None = None) -> Callable:
    """A batched algorithm from ``round_fn(X, x, ctx, **schedules_at_t, **kwargs) -> (X, x)``.

    ``init(batch) -> (X, x)`` gives the starting points (default: every client at the instance's
    starting point, the server at their mean; ``x0=`` ``(B, p)`` at the call puts every client there).  The returned
    function has the engine's signature
    ``algo(batch, *, rounds, grid=None, recorder=None, seeds=None, x0=None, **schedules_and_kwargs) -> Trace``:
    a keyword whose value is a ``(rounds, B)`` array is a schedule (row ``t-1`` is passed at round ``t``), a
    ``(rounds, B, E)`` array a schedule per local step (row ``t-1``, ``(B, E)``, at round ``t``: what
    ``Rounds(local_steps=E, per_local_step=(...))`` evaluates; :func:`.pieces.local_steps` takes it);
    any other keyword is passed unchanged (``local_steps=5``).  ``stream(k, values)`` (optional) receives the
    recorder's scalar metrics at every iterate ``k = 1 .. rounds+1`` in blocks (:func:`.core.run_recorded`)."""
    label = name or getattr(round_fn, "__name__", "method")
    key = stream or f"fedcheck.federated:{label}"
    call_round, call_init = guard(round_fn, "round function"), guard(init, "init function")

    def algorithm(batch, *, rounds: int, grid=None, recorder=None, seeds=None, stream=None, x0=None, **kw) -> Trace:
        rounds = int(rounds)
        grid = record_grid(rounds + 1) if grid is None else np.asarray(grid)
        rec = recorder or default_recorder(batch)
        contract = RoundContract(round_fn, "round function", batch.B, batch.n, batch.p)   # (X, x) checked every round
        if init is not None:
            X, x = RoundContract(init, "init function", batch.B, batch.n, batch.p).check(call_init(batch), 0)
        else:   # every client at the instance's start, or at the server start x0 (B, p) when given
            X = np.array(batch.x0() if x0 is None else clients_start(None, x0, batch.n), dtype=float)
            x = X.mean(1)
        sched = {k: np.asarray(v, dtype=float) for k, v in kw.items()
                 if isinstance(v, np.ndarray) and v.ndim in (2, 3) and v.shape[0] >= rounds and v.shape[1] == batch.B}
        static = {k: v for k, v in kw.items() if k not in sched}
        ctx = Round(batch, 0, LazyRows(seeds, batch.B, key), rounds=rounds)    # the generators made on a first draw
        state = {"X": X, "x": x}

        def step(t):
            ctx.t = t
            now = {k: v[t - 1] for k, v in sched.items()}
            state["X"], state["x"] = contract.check(call_round(state["X"], state["x"], ctx, **now, **static), t)

        def snapshot(k):
            return contract.mask(rec(k, state["X"], state["x"]))
        base = scalar_source(rec)
        trace = run_recorded(rounds, grid, step, snapshot, stream=stream,
                             scalar_snapshot=lambda k: contract.mask(base(k, state["X"], state["x"])))
        trace.final = {"x": state["x"], "X": state["X"], "nonfinite_round": contract.first_nonfinite,
                       **{f"recorded:{k}": v for k, v in ctx.recorded.items()}}
        return trace

    algorithm.__name__ = label
    algorithm.__doc__ = f"{label}: batched by fedcheck.algorithms.protocol.federated from {round_fn.__name__}.\n\n" + \
        (round_fn.__doc__ or "")
    algorithm.round_function = round_fn
    return algorithm
