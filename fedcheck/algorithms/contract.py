"""The round-function contract, checked (not assumed) before anything -- a recorder, a compiled kernel -- reads
what a user's method returned.

A round function (and its ``init``) returns ``(X, x)``: the clients' points ``X`` of shape ``(B, n, p)`` and the
server point ``x`` of shape ``(B, p)``, real floating-point arrays (converted to float64).  Anything else -- ``None``,
one array, a wrong shape, integers, objects -- is the user's error (:class:`~fedcheck.core.errors.UserCodeError`,
exit 2, naming the function and its file), raised before the values are used: no compiled recorder ever reads an
array of another shape than the one it was built for.  Values that are not finite (NaN, inf) are the method's
breakdown, not an error: from the round a run's iterates stop being finite, every metric recorded for that run is
NaN (its comparisons are undecided: the claim is inconclusive, never holds), and the round is kept
(``first_nonfinite``) for the reason the verdict gives.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from fedcheck.core.usercode import contract_error

__all__ = ["RoundContract"]


def _describe(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape}"
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)} item(s)"
    return f"a {type(v).__name__}"


class RoundContract:
    """Checks the outputs of a round function ``fn`` (``role``: how the user knows it) for a batch of ``B``
    instances, ``n`` clients, dimension ``p``, every round (a few comparisons and one sum of each array;
    ``isfinite`` per run when a sum is not finite)."""

    def __init__(self, fn: Callable, role: str, B: int, n: int, p: int):
        self.fn, self.role = fn, role
        self.B, self.n, self.p = int(B), int(n), int(p)
        self.first_nonfinite = np.zeros(self.B)        # per run: the round its iterates stopped being finite (0: never)
        self._any_nonfinite = False

    def _fail(self, t: int, what: str):
        when = "at the start (init)" if t == 0 else f"at round {t}"
        raise contract_error(self.fn, self.role, f"{what} {when}; a round function returns (X, x) with X of shape "
                             f"(B, n, p) = ({self.B}, {self.n}, {self.p}) and x of shape (B, p) = ({self.B}, {self.p}), "
                             "float arrays")

    def _array(self, v, name: str, shape: tuple, t: int) -> np.ndarray:
        try:
            a = v if isinstance(v, np.ndarray) else np.asarray(v)
        except Exception:  # noqa: BLE001 - not an array at all
            self._fail(t, f"returned {name} as {_describe(v)}")
        if a.dtype.kind != "f":
            self._fail(t, f"returned {name} of dtype {a.dtype} ({_describe(v)})")
        if a.shape != shape:
            self._fail(t, f"returned {name} of shape {a.shape}")
        return a if a.dtype == np.float64 else a.astype(np.float64)

    def check(self, out, t: int) -> tuple[np.ndarray, np.ndarray]:
        """``(X, x)`` of round ``t`` (0: the starting points), validated; rows that stop being finite are noted."""
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            self._fail(t, f"returned {_describe(out)}")
        X = self._array(out[0], "X", (self.B, self.n, self.p), t)
        x = self._array(out[1], "x", (self.B, self.p), t)
        # one pass each: a NaN or an infinity anywhere makes the sum NaN or infinite, so finite sums mean finite
        # arrays; a non-finite sum (also a finite array's overflow) takes the exact per-run test
        if math.isfinite(X.sum()) and math.isfinite(x.sum()):
            return X, x
        ok = np.isfinite(x).all(1) & np.isfinite(X).all((1, 2))
        if not ok.all():
            new = ~ok & (self.first_nonfinite == 0)
            self.first_nonfinite[new] = max(t, 1)
            self._any_nonfinite = True
        return X, x

    def mask(self, values):
        """A recorder's values with every run whose iterates are no longer finite set to NaN."""
        if not self._any_nonfinite:         # no run has stopped being finite (only check() sets rows)
            return values
        bad = self.first_nonfinite > 0
        out = {}
        for k, v in values.items():
            a = np.asarray(v)
            if a.ndim >= 1 and a.shape[0] == self.B and a.dtype.kind == "f":
                a = a.astype(float, copy=True)
                a[bad] = np.nan
            out[k] = a
        return out
