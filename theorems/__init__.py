"""Theorem declarations, one module per paper.

Each module listed in ``PAPERS`` ends with ``CLAIMS``, the tuple of its :class:`fedcheck.core.claim.Claim`
declarations; the registry (``fedcheck.catalog.registry``) reads those tuples."""

PAPERS = ("fedfw", "fedsgm", "fedmls", "feddualavg")
