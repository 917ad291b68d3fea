"""Errors a user can cause (bad input: exit code 2 with one line naming the problem) and the exit codes of every
front end (the command line, the API's ``Results.exit_code``, the pytest plugin).

==== =========================================================================
0    every claim checked comes out as the paper says (bounds hold,
     counterexamples reproduce)
1    at least one claim is refuted (a bound is violated, an iterate leaves the
     set, a claimed counterexample does not reproduce)
2    bad input: unknown check id, malformed instance, theorem or results file, bad
     option, an instance or parameter outside a claim's domain, and a user's
     own code that fails (a round function, a measurement, a family's draw ...:
     :class:`UserCodeError`, naming the user's file, line and function), or an
     output folder or cache fedcheck does not own
3    inconclusive: no claim refuted, but at least one could not be decided
     (inaccurate solve, NaN, an assumption the instance breaks)
4    internal error (a bug in fedcheck's own code: please report it)
5    a Dask scheduler given with --scheduler was lost during the run, or has no
     worker within :data:`fedcheck.catalog.parallel.WORKER_TIMEOUT` seconds
130  interrupted (SIGINT)
143  terminated (SIGTERM)
==== =========================================================================

"""
from __future__ import annotations

__all__ = ["BadInput", "BadValue", "DomainError", "UserCodeError", "Terminated", "SchedulerLost", "EXIT_OK", "EXIT_REFUTED", "EXIT_BAD_INPUT", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED", "EXIT_TERMINATED", "EXIT_SCHEDULER", "exit_code"]


class BadInput(Exception):
    """A file, option, parameter or declaration that fedcheck refuses, with a one-line message."""


class BadValue(BadInput, ValueError):
    """A field of a declared object outside its domain (a family's size, radius or name, a claim's declared
    rounds): refused when the object is made, before anything is computed; a ``ValueError`` too, as before."""


class DomainError(BadInput, ValueError):
    """An instance or parameter outside a claim's declared domain."""


class UserCodeError(BadInput):
    """A user's own code (a round function, a measurement, a family's draw, a bound's evaluation ...) raised, or
    broke its contract: ``error in your <role> <function> (<file>:<line>): <what>`` (exit 2).  Made by
    :func:`fedcheck.core.usercode.call_user`, the one boundary between fedcheck and user code; its fields are
    plain strings, so it travels between processes (Dask workers) unchanged."""

    def __init__(self, message: str, role: str = "", function: str = "", where: str = ""):
        super().__init__(message)
        self.role, self.function, self.where = role, function, where

    def __reduce__(self):
        return (type(self), (self.args[0], self.role, self.function, self.where))


class Terminated(BaseException):
    """SIGTERM, raised in the main thread by the command line's handler: a ``BaseException`` (like
    ``KeyboardInterrupt``) so that no ``except Exception`` on the way -- a solver guard, a measurement's own
    error handling, the guard around a user's code -- can swallow it (exit 143)."""


class SchedulerLost(Exception):
    """The Dask scheduler of ``--scheduler`` went away during a run, or has no worker to run the tasks (exit 5)."""


EXIT_OK, EXIT_REFUTED, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_SCHEDULER = 5
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


def exit_code(results: list[dict]) -> int:
    from fedcheck.core import verdict as V      # numpy: not needed by `fedcheck list` / `--help`
    vs = [r["verdict"] for r in results]
    if any(v in (V.VIOLATED, V.NOT_REPRODUCED) for v in vs):
        return EXIT_REFUTED
    if any(v == V.INCONCLUSIVE for v in vs):
        return EXIT_INCONCLUSIVE
    return EXIT_OK
