"""The named SymPy symbols declarations use (``from fedcheck.symbols import t, L, D``); see
:mod:`fedcheck.core.symbols`, where they are defined."""
from fedcheck.core.symbols import *  # noqa: F401,F403
from fedcheck.core.symbols import __all__ as _core_all  # noqa: F401
