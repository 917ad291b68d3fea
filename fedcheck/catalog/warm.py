"""What every local worker of ``-j N`` imports, imported once: the forkserver of the embedded Dask cluster
(:func:`fedcheck.catalog.parallel.session`) preloads this module, and each worker process it forks starts with
these modules in memory instead of importing them itself (~3 s of CPU per worker: the catalog's theorem modules,
SymPy, SciPy, numba, statsmodels' OLS of the rate fits, the LaTeX parser of the printed formulas).

Importing it only imports (and builds the catalog once, which imports the papers' modules), sets the C
allocator's settings that the workers inherit (:mod:`fedcheck.core.allocator`) and freezes what it imported out
of the garbage collector's way (``gc.freeze``): no thread is started, no file is written, nothing is computed
that a task would read back -- a worker forked from the forkserver runs the same code on the same inputs as a
freshly spawned one.  Any failure here is ignored (the
worker then imports what it needs on demand, as a spawned worker does).
"""
from __future__ import annotations


def _warm() -> None:
    import warnings

    from fedcheck.core.allocator import tune_allocator
    tune_allocator()        # inherited by every worker forked from here (fedcheck.core.allocator)

    from fedcheck.catalog import parallel  # noqa: F401  (the task functions)
    from fedcheck.catalog.registry import default_registry
    default_registry()                                          # the papers' modules
    from statsmodels.regression.linear_model import OLS  # noqa: F401  (fedcheck.core.verdict's rate fits)
    from statsmodels.tools.tools import add_constant  # noqa: F401
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fedcheck.core import latex  # noqa: F401  (the printed formulas' check)
        try:        # SymPy's ANTLR LaTeX parser: its generated tables are deserialized on import (0.5 s)
            import sympy.parsing.latex._parse_latex_antlr  # noqa: F401
        except ImportError:
            pass


try:
    _warm()
except Exception:  # noqa: BLE001  (an optimization only: a worker imports on demand what is missing)
    pass
# what was imported stays for the life of every worker: the garbage collector's full passes need not walk it
# (nor touch its pages, which the forked workers then keep sharing)
import gc  # noqa: E402

gc.freeze()
