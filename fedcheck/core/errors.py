"""Errors a user can cause (bad input): every one of them ends as exit code 2 with one line naming the problem."""
from __future__ import annotations

__all__ = ["BadInput", "DomainError"]


class BadInput(Exception):
    """A file, option, parameter or declaration that fedcheck refuses, with a one-line message."""


class DomainError(BadInput, ValueError):
    """An instance or parameter outside a claim's declared domain."""
