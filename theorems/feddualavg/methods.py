"""The FedDualAvg paper's FedAvg: its Algorithm 1 in the paper's argument names and trace format, on the library's
composite methods (:func:`fedcheck.algorithms.primal_averaging`, itself the one FedAvg engine
:func:`fedcheck.algorithms.fedavg_rounds` with the composite oracle and recording)."""
from __future__ import annotations

from fedcheck.algorithms import Trace, primal_averaging

__all__ = ["fedavg"]


def fedavg(problem, *, rounds, eta_c, eta_s=1.0, **kw) -> Trace:
    """Algorithm 1: ``w^m_{r,k+1} = w^m_{r,k} - eta_c g``; ``w_{r+1} = w_r + eta_s Delta_r`` (``psi`` ignored)."""
    return primal_averaging(problem, rounds=rounds, eta_c=eta_c, eta_s=eta_s, client_prox=False, server_prox=False,
                            **kw)
