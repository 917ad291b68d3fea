"""The named constants only FedFW's bounds use (the shared ones are in :mod:`fedcheck.symbols`)."""
import sympy as sp

__all__ = ["p_part"]

p_part = sp.Symbol("p_part", positive=True)            # participation probability of each client (Section 4.2)
