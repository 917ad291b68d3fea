"""The fedsgm paper: its claims (``claims.py``, ending with ``CLAIMS``) and the measurements, problems (its random
families, the breast-cancer experiment, the horizon runner), methods (its FedAvg, the reductions, the Lemma 4 replay)
and proof steps only it uses.  ``from theorems.fedsgm import <name>`` reads the declarations."""
from theorems.fedsgm.claims import *  # noqa: F401,F403
from theorems.fedsgm.claims import CLAIMS  # noqa: F401
