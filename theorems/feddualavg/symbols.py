"""The symbols only the FedDualAvg paper's bounds use (the composite problems' constants ``M``, ``K``, ``R``, ``B``,
``sigma``, ``zeta`` and the step sizes ``eta_c``, ``eta_s`` are the shared ones of :mod:`fedcheck.symbols`)."""
import sympy as sp

eta = sp.Symbol("eta", positive=True)                 # eta_s * eta_c (Appendix E)
Disc = sp.Symbol("Disc", nonnegative=True)            # measured discrepancy sum_{r,k<K,m} ||zbar - z^m||_*^2

__all__ = ["eta", "Disc"]
