"""The feddualavg paper: its claims (``claims.py``, ending with ``CLAIMS``) and the measurements, problems and
proof steps only it uses.  ``from theorems.feddualavg import <name>`` reads the declarations."""
from theorems.feddualavg.claims import *  # noqa: F401,F403
from theorems.feddualavg.claims import CLAIMS  # noqa: F401
