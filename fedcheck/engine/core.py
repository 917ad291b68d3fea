"""Engine core: the round driver, the recording grid and schedule evaluation (see the package doc)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import sympy as sp

from ..instances import InstanceBatch

__all__ = ["record_grid", "evaluate_schedule", "Trace", "Recorder", "default_recorder", "run_recorded"]


def record_grid(last: int, dense_until: int = 1000, per_decade: int = 50) -> np.ndarray:
    """Iterate indices to record: every index up to ``dense_until``, then at least
    ``per_decade`` log-spaced indices per decade, always including ``last``."""
    last = int(last)
    dense = np.arange(1, min(last, dense_until) + 1)
    if last <= dense_until:
        return dense
    decades = np.log10(last) - np.log10(dense_until)
    num = int(np.ceil(per_decade * decades)) + 1
    geo = np.unique(np.round(np.logspace(np.log10(dense_until), np.log10(last), num)).astype(int))
    return np.unique(np.concatenate([dense, geo, [last]]))


def evaluate_schedule(expr: sp.Expr, t_values: np.ndarray, values: Mapping[str, np.ndarray], B: int,
                      t_symbol: sp.Symbol | None = None) -> np.ndarray:
    """Evaluate a SymPy schedule at rounds ``t_values`` for ``B`` instances: shape ``(len(t), B)``.

    ``values`` maps the name of every other free symbol to a scalar or a ``(B,)`` array."""
    from ..symbols import t as t_default
    tsym = t_symbol or t_default
    expr = sp.sympify(expr)
    free = sorted((s for s in expr.free_symbols if s != tsym), key=lambda s: s.name)
    missing = [s.name for s in free if s.name not in values]
    if missing:
        raise KeyError(f"schedule {expr} needs values for {missing}")
    fn = sp.lambdify([tsym] + free, expr, modules="numpy")
    tv = np.asarray(t_values, dtype=float)[:, None]
    args = [np.broadcast_to(np.asarray(values[s.name], dtype=float), (B,))[None, :] for s in free]
    out = np.asarray(fn(tv, *args), dtype=float)
    return np.broadcast_to(out, (len(tv), B)).copy()


@dataclass
class Trace:
    """Metrics recorded along a batched run: ``metrics[name]`` has shape ``(len(rounds), B)``."""

    rounds: np.ndarray
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    final: dict[str, np.ndarray] = field(default_factory=dict)


Recorder = Callable[[int, np.ndarray, np.ndarray], Mapping[str, np.ndarray]]


def default_recorder(batch: InstanceBatch) -> Recorder:
    """``F`` at the server point, consensus distance ``||X - xbar 1^T||_F`` and infeasibility of ``xbar``."""
    loss, S = batch.loss, batch.set

    def rec(k, X, xbar):
        return {
            "F": loss.full_value(xbar),
            "consensus": np.sqrt(((X - xbar[:, None, :]) ** 2).sum((-2, -1))),
            "infeasibility": S.gauge(xbar),
        }
    return rec


def run_recorded(T: int, grid: np.ndarray, step: Callable[[int], None], snapshot: Callable[[int], Mapping]) -> Trace:
    """Drive ``step(t)`` for t = 1..T and call ``snapshot(k)`` at the grid indices (k = t + 1)."""
    want = np.zeros(T + 2, dtype=bool)
    want[grid] = True
    rows: dict[str, list] = {}

    def take(k):
        for name, v in snapshot(k).items():
            rows.setdefault(name, []).append(np.asarray(v, dtype=float))
    if want[1]:
        take(1)
    for t in range(1, T + 1):
        step(t)
        if want[t + 1]:
            take(t + 1)
    return Trace(rounds=np.asarray(grid), metrics={k: np.stack(v) for k, v in rows.items()})


