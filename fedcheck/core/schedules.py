"""Schedules and recording grids: SymPy expressions evaluated over rounds, and which rounds are stored."""
from __future__ import annotations

import functools
from typing import Mapping

import numpy as np
import sympy as sp

__all__ = ["record_grid", "evaluate_schedule", "evaluate_expr"]


def lambdify(args, expr, modules):
    """``sp.lambdify`` without the generated function's docstring: it holds ``str(expr)``, about half of
    lambdify's time on the catalog's bounds (2.0 -> 1.1 ms a call), and nothing reads it.  The same function."""
    try:
        return sp.lambdify(args, expr, modules=modules, docstring_limit=0)
    except TypeError:           # SymPy < 1.13 has no docstring_limit
        return sp.lambdify(args, expr, modules=modules)


@functools.lru_cache(maxsize=4096)
def _lambdified(expr, tsym, free):
    """One compiled function per (expression, variables): schedules and bounds are evaluated block by block."""
    return lambdify([tsym, *free], expr, modules="numpy")


@functools.lru_cache(maxsize=4096)
def _lambdified_free(expr, free):
    """One compiled function per (expression, variables) for :func:`evaluate_expr` (a bound is evaluated per
    group and horizon: lambdify took ~3 ms a call, up to 1.1 s of a FedDualAvg claim)."""
    return lambdify(list(free), expr, modules="numpy")


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
    from fedcheck.core.symbols import t as t_default
    tsym = t_symbol or t_default
    expr = sp.sympify(expr)
    free = sorted((s for s in expr.free_symbols if s != tsym), key=lambda s: s.name)
    missing = [s.name for s in free if s.name not in values]
    if missing:
        raise KeyError(f"schedule {expr} needs values for {missing}")
    fn = _lambdified(expr, tsym, tuple(free))
    tv = np.asarray(t_values, dtype=float)[:, None]
    args = [np.broadcast_to(np.asarray(values[s.name], dtype=float), (B,))[None, :] for s in free]
    named = [(tsym.name, tv), *((s.name, a) for s, a in zip(free, args))]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = _real(np.asarray(fn(tv, *args)), expr, named)
    _nan_is_real(out, fn, [tv, *args], expr, named)
    return np.broadcast_to(out, (len(tv), B)).copy()


def evaluate_expr(expr, values: Mapping, n: int | None = None) -> np.ndarray:
    """Evaluate a SymPy expression with ``values[name]`` (scalars or equal-length arrays) for each free
    symbol; ``inf``/``nan`` where undefined (no warnings)."""
    expr = sp.sympify(expr)
    free = sorted(expr.free_symbols, key=lambda s: s.name)
    missing = [s.name for s in free if s.name not in values]
    if missing:
        raise KeyError(f"{expr} needs values for {missing}")
    fn = _lambdified_free(expr, tuple(free))
    args = [np.asarray(values[s.name], dtype=float) for s in free]
    named = [(s.name, a) for s, a in zip(free, args)]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = _real(np.asarray(fn(*args)), expr, named)
    _nan_is_real(out, fn, args, expr, named)
    return out if n is None else np.broadcast_to(out, (n,)).copy()


def _nan_is_real(out: np.ndarray, fn, args, expr, named_args) -> None:
    """numpy evaluates ``sqrt(2 - t)`` at ``t = 3`` on floats as NaN, not as ``i``: where ``out`` is NaN at finite
    inputs, evaluate again on complex numbers, and a non-real value there is the user's error as in :func:`_real`
    (a NaN that stays NaN -- ``0/0`` -- is left to the caller: inconclusive where it is judged)."""
    nan = np.isnan(out)
    if not nan.any() or not all(np.all(np.isfinite(a)) for a in args):
        return
    try:
        with np.errstate(all="ignore"):
            c = np.asarray(fn(*[np.asarray(a, dtype=complex) for a in args]))
        c = np.broadcast_to(c, out.shape)
    except (TypeError, ValueError):     # an operation numpy has no complex form of (max, comparisons): as before
        return
    if np.iscomplexobj(c):
        _real(np.where(nan, c, 0.0), expr, named_args)


def _real(out: np.ndarray, expr, named_args) -> np.ndarray:
    """``out`` as floats; a value with a non-zero imaginary part (``sqrt(-t)``, ``(-1/L)**(1/2)``) is the user's
    error -- :class:`~fedcheck.core.errors.BadInput` naming the expression and the first such point -- never read as
    its real part."""
    if not np.iscomplexobj(out):
        return np.asarray(out, dtype=float)
    bad = np.isfinite(out.imag) & (out.imag != 0)
    if bad.any():
        from fedcheck.core.errors import BadInput
        idx = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
        point = []
        for name, a in sorted(named_args):
            try:
                point.append(f"{name}={float(np.broadcast_to(np.asarray(a), bad.shape)[idx]):g}")
            except ValueError:          # a constant expression: the same at every point
                pass
        val = complex(out[idx])
        raise BadInput(f"{sp.sstr(expr)} is not a real number at {', '.join(point) or 'every point'} "
                       f"({val.real:g}{val.imag:+g}i): a schedule or bound must be real wherever it is evaluated")
    return np.asarray(out.real, dtype=float)
