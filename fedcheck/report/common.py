"""What every part of the report shares: values of a results document read as numbers (:func:`to_float`,
:func:`to_array`) and written as a person reads them (:func:`fmt`), the tone of a verdict, an instance's label, the
paragraph on rates and the Greek letters by name."""
from __future__ import annotations

import math

import numpy as np

from fedcheck.core import verdict as V

_GOOD, _BAD = {V.HOLDS, V.REPRODUCED}, {V.VIOLATED, V.NOT_REPRODUCED}


PARAGRAPH_RATE = ("A claimed rate r means metric = O(t^r): the rate is consistent with the claim when the 95% "
                  "confidence interval of the fitted log-log slope lies at or below r.")


# the Greek letters by name: a title's names as letters (title_html); a figure's label typesets mathtext's own
# names (typeset.LABEL_GREEK)
GREEK = {"alpha": "\u03b1", "beta": "\u03b2", "gamma": "\u03b3", "Gamma": "\u0393", "delta": "\u03b4",
         "Delta": "\u0394", "eps": "\u03b5", "epsilon": "\u03b5", "zeta": "\u03b6", "eta": "\u03b7",
         "theta": "\u03b8", "kappa": "\u03ba", "lambda": "\u03bb", "Lambda": "\u039b", "mu": "\u03bc",
         "rho": "\u03c1", "sigma": "\u03c3", "Sigma": "\u03a3", "tau": "\u03c4", "phi": "\u03c6",
         "Phi": "\u03a6", "psi": "\u03c8", "omega": "\u03c9"}


# ------------------------------------------------------------------------------------------------
# value helpers
def to_float(x) -> float:
    if isinstance(x, (bool, np.bool_)):
        return float(x)
    if isinstance(x, (int, float, np.integer, np.floating)):
        return float(x)
    if isinstance(x, str):
        s = x.strip().lower()
        if s in ("inf", "+inf", "infinity", "+infinity"):
            return math.inf
        if s in ("-inf", "-infinity"):
            return -math.inf
    return math.nan


def to_array(xs) -> np.ndarray:
    if not isinstance(xs, (list, tuple)):
        return np.zeros(0)
    return np.array([to_float(v) for v in xs], dtype=float)


def fmt(x, digits: int = 4) -> str:
    """A value as a person reads it: ``-`` for missing, ``inf``, 4 significant digits."""
    if x is None:
        return "-"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        v = float(x)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == int(v) and abs(v) < 1e6:
            return str(int(v))
        return f"{v:.{digits}g}"
    if isinstance(x, (list, tuple)):
        if len(x) == 2 and all(isinstance(v, (int, float)) for v in x):
            return f"[{fmt(x[0], 3)}, {fmt(x[1], 3)}]"
        return ", ".join(fmt(v, digits) for v in x)
    if isinstance(x, dict):
        return "; ".join(f"{k}: {fmt(v, digits)}" for k, v in x.items())
    return str(x)


def tone(verdict: str | None) -> str:
    return "good" if verdict in _GOOD else "bad" if verdict in _BAD else "unknown"


def instance_label(inst: dict, j: int) -> str:
    if inst.get("seed") is not None:
        return f"seed {inst['seed']}"
    src = (inst.get("instance") or {}).get("source") if isinstance(inst.get("instance"), dict) else None
    return src or f"instance {j + 1}"
