"""The fedfw paper: its claims (``claims.py``, ending with ``CLAIMS``) and the measurements, problems and
proof steps only it uses.  ``from theorems.fedfw import <name>`` reads the declarations."""
from theorems.fedfw.claims import *  # noqa: F401,F403
from theorems.fedfw.claims import CLAIMS  # noqa: F401
PEP_MODELS = "theorems.fedfw.pep"  # its performance-estimation models: what `fedcheck pep` runs
