"""Theorem declarations, one module per paper.

Every module-level :class:`fedcheck.check.Check` in a module listed in ``PAPERS``
is registered under its id (``<paper>.<name>``) and its aliases."""

PAPERS = ("fedfw", "fedsgm", "fedmls", "feddualavg")
