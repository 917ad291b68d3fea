"""Engine core: the round driver, the recording grid and schedule evaluation (see the package doc)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import sympy as sp

from fedcheck.core.schedules import evaluate_schedule, record_grid
from fedcheck.problems.instances import InstanceBatch

__all__ = ["record_grid", "evaluate_schedule", "Trace", "Recorder", "default_recorder", "with_iterates", "run_recorded",
           "instance_chunks"]


@dataclass
class Trace:
    """Metrics recorded along a batched run: ``metrics[name]`` has shape ``(len(rounds), B)``."""

    rounds: np.ndarray
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    final: dict[str, np.ndarray] = field(default_factory=dict)


Recorder = Callable[[int, np.ndarray, np.ndarray], Mapping[str, np.ndarray]]


def default_recorder(batch: InstanceBatch) -> Recorder:
    """``F`` at the server point, consensus distance ``||X - xbar 1^T||_F`` and infeasibility of ``xbar``.

    The consensus distance is one compiled pass when numba is available (:func:`.jit.consensus_distance`)."""
    from fedcheck.algorithms.jit import consensus_distance, least_squares_recorder
    loss, S = batch.loss, batch.set
    fast = least_squares_recorder(loss, S)

    def rec(k, X, xbar):
        out = fast(k, X, xbar) if fast is not None else None
        if out is not None:
            return out
        return {
            "F": loss.full_value(xbar),
            "consensus": consensus_distance(X, xbar),
            "infeasibility": S.gauge(xbar),
        }
    return rec


def with_iterates(recorder: Recorder, clients: bool = False) -> Recorder:
    """Also record the server point ``xbar`` (and the client points ``X`` if ``clients``) at every
    recorded round: ``metrics["xbar"]`` of shape ``(len(grid), B, p)``.  Memory then grows with the
    number of recorded rounds; without it a run's memory does not depend on the number of rounds."""
    def rec(k, X, xbar):
        out = dict(recorder(k, X, xbar))
        out["xbar"] = np.array(xbar, dtype=float)
        if clients:
            out["X"] = np.array(X, dtype=float)
        return out
    return rec


def run_recorded(T: int, grid: np.ndarray, step: Callable[[int], None], snapshot: Callable[[int], Mapping],
                 chunk_steps: Sequence[tuple[int, int, Callable[[int], None]]] | None = None,
                 state: Sequence[np.ndarray] | None = None, record: Callable[..., Mapping] | None = None,
                 min_block: int = 8, block: int = 16, max_buffered: int = 16) -> Trace:
    """Drive ``step(t)`` for t = 1..T and call ``snapshot(k)`` at the grid indices (k = t + 1).

    Cache blocking (optional).  ``chunk_steps`` are ``(lo, hi, step_lo_hi)``: step functions for disjoint
    contiguous groups of instances that together make up ``step``.  Instances are independent, so a
    stretch of rounds may be run group after group; a group's data then stay in the CPU cache for the
    whole stretch instead of being evicted by the other groups every round (see :func:`instance_chunks`).
    ``state`` are the arrays the algorithm updates in place (leading axis: instances) and
    ``record(k, *state)`` what ``snapshot(k)`` computes from them: recorded rounds inside a stretch are
    taken from copies of the state (at most ``max_buffered`` per stretch, so memory does not grow with
    ``T``).  Every recorded row sees all instances at the same round, exactly as without blocking.
    Stretches are made ``block`` rounds long where the grid is dense; shorter than ``min_block`` rounds
    they use ``step``."""
    want = np.zeros(T + 2, dtype=bool)
    want[grid] = True
    stops = [int(k) for k in np.flatnonzero(want) if k >= 2]
    if not stops or stops[-1] != T + 1:
        stops.append(T + 1)
    rows: dict[str, list] = {}

    def take(k, values=None):
        for name, v in (snapshot(k) if values is None else values).items():
            rows.setdefault(name, []).append(np.asarray(v, dtype=float))
    if want[1]:
        take(1)
    blocked = bool(chunk_steps) and len(chunk_steps) > 1
    buffers = [[np.empty_like(a) for a in state] for _ in range(max_buffered)] if blocked and state and record else []
    t, idx = 1, 0
    while idx < len(stops):
        # a stretch: from round t up to stop `end`, recording the `inner` stops on the way (buffered)
        end, inner = stops[idx], []
        while (blocked and end - t < block and idx + 1 < len(stops)
               and (not want[end] or len(inner) < len(buffers))):
            if want[end]:
                inner.append(end)
            idx += 1
            end = stops[idx]
        if blocked and end - t >= min_block:
            for lo, hi, cstep in chunk_steps:
                tt = t
                for b, k in enumerate(inner):
                    for r in range(tt, k):
                        cstep(r)
                    for buf, a in zip(buffers[b], state):
                        buf[lo:hi] = a[lo:hi]
                    tt = k
                for r in range(tt, end):
                    cstep(r)
            for b, k in enumerate(inner):
                take(k, record(k, *buffers[b]))
        else:
            for r in range(t, end):
                step(r)
        t = end
        idx += 1
        if want[end]:
            take(end)
    return Trace(rounds=np.asarray(grid), metrics={k: np.stack(v) for k, v in rows.items()})


def _cache_bytes() -> int:
    """Per-core L2 cache size (bytes): ``$FEDCHECK_CACHE_BYTES``, else Linux sysfs, else 1 MiB."""
    env = os.environ.get("FEDCHECK_CACHE_BYTES")
    if env:
        return int(env)
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for idx in sorted(base.glob("index*")):
            if (idx / "level").read_text().strip() == "2" and (idx / "type").read_text().strip() in ("Unified", "Data"):
                txt = (idx / "size").read_text().strip().upper()
                mult = {"K": 2**10, "M": 2**20}.get(txt[-1], 1)
                return int(txt.rstrip("KM")) * mult
    except (OSError, ValueError):
        pass
    return 2**20


CACHE_BYTES = _cache_bytes()
MIN_CHUNK_ROWS = 192   # below this many client rows per group, per-call overhead outweighs the cache gain


def instance_chunks(B: int, bytes_per_instance: float, rows_per_instance: int,
                    budget: float | None = None) -> list[tuple[int, int]]:
    """Split ``B`` instances into balanced contiguous groups whose per-round data (``bytes_per_instance``
    each) fit in three quarters of the per-core L2 cache; one group ``[(0, B)]`` when the whole batch fits
    or when the groups would have fewer than :data:`MIN_CHUNK_ROWS` client rows.  (Measured on the
    2 MiB L2 of the development machine: a stacked ``matmul`` over 1.2 MiB of matrices runs at L2 speed,
    over 1.5 MiB it starts to spill; Theorem 1's 64-instance batch runs fastest in 2 groups of 32.)"""
    budget = 0.75 * CACHE_BYTES if budget is None else budget
    per = int(budget // max(bytes_per_instance, 1.0))
    per = max(per, -(-MIN_CHUNK_ROWS // max(rows_per_instance, 1)), 1)
    if per >= B:
        return [(0, B)]
    k = -(-B // per)
    size = -(-B // k)
    return [(lo, min(B, lo + size)) for lo in range(0, B, size)]
