"""Exit codes of the ``fedcheck`` command line (defined with the errors in :mod:`fedcheck.core.errors`)."""
from fedcheck.core.errors import (EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_INTERNAL, EXIT_INTERRUPTED,  # noqa: F401
                                  EXIT_OK, EXIT_REFUTED, EXIT_SCHEDULER, EXIT_TERMINATED, BadInput, DomainError,
                                  SchedulerLost, Terminated, UserCodeError, exit_code)

__all__ = ["EXIT_OK", "EXIT_REFUTED", "EXIT_BAD_INPUT", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL", "EXIT_INTERRUPTED",
           "EXIT_TERMINATED", "EXIT_SCHEDULER", "BadInput", "DomainError", "UserCodeError", "SchedulerLost",
           "Terminated", "exit_code"]
