"""Engine core: the round driver, the recording grid and schedule evaluation (see the package doc)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from fedcheck.core.schedules import evaluate_schedule, record_grid
from fedcheck.problems.instances import InstanceBatch

__all__ = ["record_grid", "evaluate_schedule", "Trace", "Recorder", "default_recorder", "with_iterates", "run_recorded",
           "instance_chunks", "Stream", "StreamBuffer", "scalar_source", "STREAM_BLOCK", "clients_start"]


@dataclass
class Trace:
    """Metrics recorded along a batched run: ``metrics[name]`` has shape ``(len(rounds), B)``.

    ``rounds`` are the recorded iterates in the method's paper's own indexing, whose start is iterate ``start``
    (1 for FedFW's ``x^1`` and every :func:`~fedcheck.algorithms.federated` method, 0 for ``w_0``/``x_0``);
    ``completed = rounds - start`` are the numbers of rounds completed, the one meaning of a row for every
    method: row ``i`` is the iterate after ``completed[i]`` rounds, and on every method's default grid row 0 is
    the start (``completed[0] == 0``)."""

    rounds: np.ndarray
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    final: dict[str, np.ndarray] = field(default_factory=dict)
    start: int = 1

    @property
    def completed(self) -> np.ndarray:
        """Rounds completed at each recorded row (``rounds - start``; 0 is the start)."""
        return np.asarray(self.rounds) - int(self.start)


Recorder = Callable[[int, np.ndarray, np.ndarray], Mapping[str, np.ndarray]]


def clients_start(X0, x0, n: int):
    """The clients' start ``(B, n, p)`` of a method whose clients keep their own points: ``X0`` when given, else
    the server start ``x0`` ``(B, p)`` copied to the ``n`` clients, else ``None`` (the batch's own start)."""
    if X0 is not None or x0 is None:
        return X0
    return np.repeat(np.asarray(x0, dtype=float)[:, None, :], int(n), axis=1)

# ``stream(k, values)``: ``k`` consecutive iterate indices (int array), ``values[name]`` of shape ``(len(k), B)``
Stream = Callable[[np.ndarray, Mapping[str, np.ndarray]], None]
STREAM_BLOCK = 512   # rows (iterates) per streamed block


def scalar_source(recorder: Recorder) -> Recorder:
    """The innermost recorder whose scalar metrics ``recorder`` returns unchanged.

    A wrapper that only adds entries (``with_iterates``) or side effects (a progress bar) may say so with the
    attribute ``scalars_of = inner``; the engine then computes every-round values from ``inner`` (or, for the
    default least-squares recorder, in the compiled FedFW round itself)."""
    seen = 0
    while getattr(recorder, "scalars_of", None) is not None and seen < 64:
        recorder, seen = recorder.scalars_of, seen + 1
    return recorder


def _is_scalar_metric(v) -> bool:
    return np.ndim(v) == 1


class StreamBuffer:
    """Every-round values in blocks of ``rows`` iterates, handed to ``stream(k, values)`` when a block is full
    (and at the end).  Each block is a fresh set of arrays, so the stream may keep them.

    ``push(k, values)`` appends iterate ``k`` from a recorder's output (its 1-D, i.e. per-instance scalar,
    entries); ``slot(k)`` reserves row ``k`` for a caller that writes the values itself into ``cols`` (one
    ``(rows, B)`` array per name of ``names``, in that order).  Indices must come consecutively."""

    def __init__(self, stream: Stream, rows: int = STREAM_BLOCK):
        self.stream, self.rows = stream, max(int(rows), 1)
        self.names: list[str] | None = None
        self.B = 0
        self.cols: list[np.ndarray] = []
        self.k0, self.n = 1, 0
        self.next_k = 1

    def start(self, names: Sequence[str], B: int) -> None:
        self.names, self.B = list(names), int(B)
        self._alloc()

    def _alloc(self) -> None:
        self.cols = [np.empty((self.rows, self.B)) for _ in self.names]
        self.k0, self.n = self.next_k, 0

    def slot(self, k: int) -> int:
        if k != self.next_k:
            raise ValueError(f"stream rows must be consecutive: got iterate {k}, expected {self.next_k}")
        if self.n == self.rows:
            self.flush()
            self._alloc()
        row = self.n
        self.n += 1
        self.next_k = k + 1
        return row

    def slots(self, k: int, most: int) -> tuple[int, int]:
        """``(row, count)``: rows ``row .. row + count - 1`` of ``cols`` reserved for iterates ``k ..``, ``1 <= count
        <= most``, within one block (as ``count`` calls of :meth:`slot`)."""
        row = self.slot(k)
        count = max(1, min(int(most), self.rows - row))
        self.n += count - 1
        self.next_k = k + count
        return row, count

    def push(self, k: int, values: Mapping[str, np.ndarray]) -> None:
        if self.names is None:
            scal = {name: np.asarray(v, dtype=float) for name, v in values.items() if _is_scalar_metric(v)}
            B = len(next(iter(scal.values()))) if scal else 0
            self.start(list(scal), B)
        row = self.slot(k)
        for name, col in zip(self.names, self.cols):
            col[row] = values[name]

    def flush(self) -> None:
        if self.n:
            k = np.arange(self.k0, self.k0 + self.n)
            self.stream(k, {name: col[:self.n] for name, col in zip(self.names, self.cols)})
            self.k0, self.n = self.next_k, 0


def default_recorder(batch: InstanceBatch) -> Recorder:
    """``F`` at the server point, consensus distance ``||X - xbar 1^T||_F`` and infeasibility of ``xbar``.

    The consensus distance is one compiled pass when numba is available (:func:`.jit.consensus_distance`)."""
    from fedcheck.algorithms.jit import consensus_distance, least_squares_recorder
    from fedcheck.algorithms.fedmls_jit import lad_full_value
    loss, S = batch.loss, batch.set
    fast = least_squares_recorder(loss, S)
    full_value = lad_full_value(loss) or loss.full_value   # LAD's F compiled, the same bits

    def rec(k, X, xbar):
        out = fast(k, X, xbar) if fast is not None else None
        if out is not None:
            return out
        return {
            "F": full_value(xbar),
            "consensus": consensus_distance(X, xbar),
            "infeasibility": S.gauge(xbar),
        }
    rec.least_squares = fast   # the compiled recorder (its data let FedFW's compiled round stream the metrics)
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
    rec.scalars_of = recorder   # the per-instance scalar metrics are the wrapped recorder's
    return rec


def run_recorded(T: int, grid: np.ndarray, step: Callable[[int], None], snapshot: Callable[[int], Mapping],
                 chunk_steps: Sequence[tuple[int, int, Callable[[int], None]]] | None = None,
                 state: Sequence[np.ndarray] | None = None, record: Callable[..., Mapping] | None = None,
                 min_block: int = 8, block: int = 16, max_buffered: int = 16, *,
                 stream: Stream | None = None, scalar_snapshot: Callable[[int], Mapping] | None = None,
                 stream_step=None, stream_block: int | None = None) -> Trace:
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
    they use ``step``.

    Every-round values (``stream``).  With ``stream(k, values)`` the scalar (per-instance, 1-D) metrics of
    every iterate ``k = 1 .. T+1`` are handed over in blocks of ``stream_block`` (default
    :data:`STREAM_BLOCK`) consecutive iterates, in
    order, each exactly once (:class:`StreamBuffer`); the recorded :class:`Trace` is the same, bit for bit.
    Off the grid they come from ``scalar_snapshot(k)`` (default ``snapshot``; the recorder must then be a
    function of the iterate, without state), on the grid from the very ``snapshot(k)`` that is recorded.
    ``stream_step(t, buffer)``, if given, runs round ``t`` *and* writes iterate ``t + 1``'s values into
    ``buffer.cols[buffer.slot(t + 1)]`` itself (``stream_step.names``: the names, in the order of ``cols``;
    some or all of the recorder's scalar metrics: only those are streamed); then the snapshot is
    taken on the grid only.  Streaming
    runs the rounds with ``step`` (instances are independent: the same numbers as the cache-blocked driver)."""
    if stream is not None:
        return _run_streamed(T, grid, step, snapshot, stream, scalar_snapshot or snapshot, stream_step,
                             stream_block)
    want = np.zeros(T + 2, dtype=bool)
    want[grid] = True
    stops = [int(k) for k in np.flatnonzero(want) if k >= 2]
    if T >= 1 and (not stops or stops[-1] != T + 1):   # (T = 0: iterate 1 only, recorded once)
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


def _run_streamed(T, grid, step, snapshot, stream, scalar_snapshot, stream_step, stream_block) -> Trace:
    """:func:`run_recorded` with every-round values streamed (see there)."""
    want = np.zeros(T + 2, dtype=bool)
    want[grid] = True
    rows: dict[str, list] = {}
    buf = StreamBuffer(stream, STREAM_BLOCK if stream_block is None else stream_block)

    def take(values):
        for name, v in values.items():
            rows.setdefault(name, []).append(np.asarray(v, dtype=float))
    first = snapshot(1) if want[1] else scalar_snapshot(1)
    if want[1]:
        take(first)
    if stream_step is not None:
        names = list(getattr(stream_step, "names", ()))
        missing = [m for m in names if not (m in first and _is_scalar_metric(first[m]))]
        if missing:
            raise ValueError(f"stream_step writes {missing}, which the recorder does not give")
        buf.start(names, len(np.asarray(first[names[0]])))
    buf.push(1, first)
    if stream_step is not None:
        # ``stream_step.recorded(k, streamed)`` (optional): the recorder's values of iterate ``k`` given the ones the
        # step has just streamed (copies), instead of ``snapshot(k)`` computing those again
        recorded = getattr(stream_step, "recorded", None)
        many = getattr(stream_step, "many", None)     # many(r, count, row, cols): rounds r .. r + count - 1 at once
        wanted = np.flatnonzero(want)
        r = 1
        while many is not None and r <= T:
            k = wanted[np.searchsorted(wanted, r + 1)] if wanted.size and wanted[-1] >= r + 1 else T + 1  # next recorded
            row, count = buf.slots(r + 1, min(k, T + 1) - r)
            many(r, count, row, buf.cols)
            r += count
            if want[r]:
                if recorded is None:
                    take(snapshot(r))
                else:
                    take(recorded(r, {name: col[buf.n - 1].copy() for name, col in zip(buf.names, buf.cols)}))
        for r in range(1, T + 1 if many is None else 0):
            stream_step(r, buf)
            if want[r + 1]:
                if recorded is None:
                    take(snapshot(r + 1))
                else:
                    take(recorded(r + 1, {name: col[buf.n - 1].copy() for name, col in zip(buf.names, buf.cols)}))
    else:
        for r in range(1, T + 1):
            step(r)
            k = r + 1
            if want[k]:
                values = snapshot(k)
                take(values)
            else:
                values = scalar_snapshot(k)
            buf.push(k, values)
    buf.flush()
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
