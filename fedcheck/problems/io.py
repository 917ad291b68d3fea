"""One problem file format: an ``.npz`` archive of plain arrays (read without pickle) whose keys say which
kind of problem it holds.

=============  ===============================================  ==========================================
kind           keys                                             problem class
=============  ===============================================  ==========================================
federated      ``A`` (n, m, p), ``b`` (n, m), ``loss``, ``set``,  :class:`fedcheck.problems.instances.Instance`
               ``radius`` [, ``x0``]                            (README, "Instance files")
constrained    ``f_kind``, ``g_kind``, ``w0``, ``f_<array>``,     ``fedcheck.problems.constrained.ConstrainedInstance``
               ``g_<array>`` [, ``slater``]                     (objective f and constraint g <= 0)
composite      the arrays (``Q``, ``c``, ``e`` or ``X``, ``y``)     ``fedcheck.problems.composite`` instances
               with a ``.json`` of the same stem                (regularizer, noise, local steps; no pickle)
=============  ===============================================  ==========================================

:func:`load_problem` reads any of them and refuses anything else with an :class:`InstanceError` naming the
file and the problem; every problem class writes its own kind with ``instance.save(stem)``.
"""
from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

from fedcheck.problems.instances import InstanceError, load_instance

__all__ = ["load_problem", "problem_kind"]


def problem_kind(path: str | os.PathLike) -> str:
    """The kind of problem a file holds (``federated``, ``constrained`` or ``composite``); ``InstanceError``
    when it is none of them."""
    import numpy as np
    path = Path(path)
    if not path.exists():
        raise InstanceError(f"{path}: no such file")
    if not zipfile.is_zipfile(path):
        raise InstanceError(f"{path}: cannot be read as .npz (not a zip archive of arrays)")
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = set(z.files)
    except Exception as e:
        raise InstanceError(f"{path}: cannot be read as .npz: {e}") from None
    if {"f_kind", "g_kind", "w0"} <= keys:
        return "constrained"
    sidecar = path.with_suffix(".json")
    if sidecar.exists():
        try:
            meta = json.loads(sidecar.read_text())
        except (OSError, ValueError) as e:
            raise InstanceError(f"{sidecar}: not valid JSON: {e}") from None
        if isinstance(meta, dict) and str(meta.get("format", "")).startswith("fedcheck.composite/"):
            return "composite"
    return "federated"


def load_problem(path: str | os.PathLike):
    """Load any problem file (see the module doc); every failure is an :class:`InstanceError`."""
    kind = problem_kind(path)
    if kind == "federated":
        return load_instance(path)
    try:
        if kind == "constrained":
            from fedcheck.problems.constrained import load_constrained
            return load_constrained(path)
        from fedcheck.problems.composite import load_problem as load_composite
        return load_composite(path)
    except InstanceError:
        raise
    except Exception as e:    # a malformed file of a known kind: one line, no traceback
        raise InstanceError(f"{path}: not a valid {kind} problem file: {type(e).__name__}: {e}") from None
