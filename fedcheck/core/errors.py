"""Errors a user can cause (bad input: exit code 2 with one line naming the problem) and the exit codes of every
front end (the command line, the API's ``Results.exit_code``, the pytest plugin).

==== =========================================================================
0    every claim checked comes out as the paper says (bounds hold,
     counterexamples reproduce)
1    at least one claim is refuted (a bound is violated, an iterate leaves the
     set, a claimed counterexample does not reproduce)
2    bad input: unknown check id, malformed instance or theorem file, bad option,
     an instance or parameter outside a claim's domain
3    inconclusive: no claim refuted, but at least one could not be decided
     (inaccurate solve, NaN, an assumption the instance breaks)
4    internal error (a bug in fedcheck: please report it)
130  interrupted (SIGINT)
143  terminated (SIGTERM)
==== =========================================================================

"""
from __future__ import annotations

__all__ = ["BadInput", "DomainError", "EXIT_OK", "EXIT_REFUTED", "EXIT_BAD_INPUT", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED", "EXIT_TERMINATED", "exit_code"]


class BadInput(Exception):
    """A file, option, parameter or declaration that fedcheck refuses, with a one-line message."""


class DomainError(BadInput, ValueError):
    """An instance or parameter outside a claim's declared domain."""


EXIT_OK, EXIT_REFUTED, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


def exit_code(results: list[dict]) -> int:
    from fedcheck.core import verdict as V      # numpy: not needed by `fedcheck list` / `--help`
    vs = [r["verdict"] for r in results]
    if any(v in (V.VIOLATED, V.NOT_REPRODUCED) for v in vs):
        return EXIT_REFUTED
    if any(v == V.INCONCLUSIVE for v in vs):
        return EXIT_INCONCLUSIVE
    return EXIT_OK
