"""The JSON Schema of a results document (``fedcheck.results/1``: what ``verify --json``, ``results.json`` and the other
subcommands' results files hold), checked with `jsonschema <https://python-jsonschema.readthedocs.io>`_ wherever a
document comes from outside the process: ``fedcheck report``, :meth:`fedcheck.Results.read`, and result dicts given to
:class:`fedcheck.Results`.  A document that does not match is bad input (one line naming the file and the first
offending place, exit 2), never a traceback from the report code.

Numbers that are not finite are written as ``null`` (NaN) or the strings ``"inf"`` / ``"-inf"``
(:func:`fedcheck.core.results.jsonable`); JSON's non-standard ``NaN``/``Infinity`` literals are refused when read.
Fields a check does not use may be absent; others may be added (``additionalProperties``).
"""
from __future__ import annotations

from typing import Any

__all__ = ["RESULTS_SCHEMA", "CHECK_SCHEMA", "schema_errors"]

_NUM = {"anyOf": [{"type": "number"}, {"type": "null"}, {"enum": ["inf", "-inf"]}]}
_NUMS = {"type": "array", "items": _NUM}
_STR = {"type": ["string", "null"]}
_OBJ = {"type": "object"}
_OBJ_OR_NULL = {"type": ["object", "null"]}
_LIST = {"type": "array"}

_INSTANCE = {
    "type": "object",
    "properties": {
        "rounds": _NUMS,
        "metric": _NUMS,
        "bound": {"type": ["object", "null"], "additionalProperties": {"anyOf": [_NUMS, _NUM]}},
        "readings": _OBJ_OR_NULL,
        "seed": {"type": ["integer", "null", "string"]},
        "F_star": _NUM,
        "F_star_lower": _NUM,
        "constants": _OBJ_OR_NULL,
        "grid": {"type": "array", "items": _OBJ},
    },
}

CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "verdict"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "verdict": {"type": "string", "minLength": 1},
        "title": _STR, "paper": _STR, "reference": _STR, "claim": _STR, "kind": _STR, "reason": _STR,
        "headline": _STR, "expected": _STR, "rate_verdict": _STR,
        "claimed_rate": _NUM, "fitted_rate": _NUM, "max_ratio": _NUM, "max_excess": _NUM, "seconds": _NUM,
        "fitted_rate_ci": {"anyOf": [{"type": "null"}, _NUMS]},
        "readings": {"type": "object", "additionalProperties": {"type": "object",
                                                                "properties": {"max_ratio": _NUM,
                                                                               "verdict": {"type": "string"}}}},
        "feasibility": _OBJ, "evidence": _OBJ, "formula": _OBJ, "params": _OBJ, "domain": _OBJ, "provenance": _OBJ,
        # optional (results written before it have none): could the bound have failed
        "vacuity": {"type": "object", "properties": {"status": {"enum": ["vacuous", "partly vacuous", "not vacuous",
                                                                          "unknown"]},
                                                      "findings": _OBJ, "trivial": _STR}},
        "symbolic": {"type": "array", "items": _OBJ},
        "assumptions": _LIST,
        "instances": {"type": "array", "items": _INSTANCE},
        "saved_instances": {"type": "array", "items": {"type": "string"}},
        "series": {"type": "array", "items": {"type": "object", "required": ["x", "y"],
                                              "properties": {"x": _NUMS, "y": _NUMS, "label": _STR, "panel": _STR}}},
        "tables": {"type": "array", "items": {"type": "object",
                                              "properties": {"columns": _LIST,
                                                             "rows": {"type": "array", "items": _LIST}}}},
    },
}

RESULTS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "fedcheck results document",
    "type": "object",
    "required": ["schema", "checks"],
    "properties": {
        "schema": {"const": "fedcheck.results/1"},
        "provenance": _OBJ_OR_NULL,
        "checks": {"type": "array", "items": CHECK_SCHEMA},
        "proof_audits": _OBJ,
    },
}


def _where(err) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path).lstrip(".")
    return path


def schema_errors(doc: Any, schema: dict | None = None) -> str | None:
    """``None`` when ``doc`` matches ``schema`` (default: a results document), else one line saying where and why
    (the first error in document order)."""
    import jsonschema
    validator = jsonschema.Draft202012Validator(RESULTS_SCHEMA if schema is None else schema)
    try:
        err = next(iter(sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))), None)
    except RecursionError:
        return "nested too deeply"
    if err is None:
        return None
    msg = " ".join(err.message.split())
    if len(msg) > 160:
        msg = msg[:157] + "..."
    where = _where(err)
    return f"{where}: {msg}" if where else msg
