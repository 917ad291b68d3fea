"""The fedmls paper: its claims (``claims.py``, ending with ``CLAIMS``) and the measurements, problems and
proof steps only it uses.  ``from theorems.fedmls import <name>`` reads the declarations."""
from theorems.fedmls.claims import *  # noqa: F401,F403
from theorems.fedmls.claims import CLAIMS  # noqa: F401
