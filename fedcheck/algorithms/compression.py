"""Compression operators (re-exported: they are objects of the problem library, :mod:`fedcheck.problems.compression`,
with their constants such as the variance factor ``q(d)`` that problems' bounds read)."""
from fedcheck.problems.compression import *  # noqa: F401,F403
from fedcheck.problems.compression import __all__  # noqa: F401
