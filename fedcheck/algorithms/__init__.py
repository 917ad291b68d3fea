"""The federated engine: algorithms vectorized over instances and clients.

Arrays: client points ``X`` of shape ``(B, n, p)`` (B instances, n clients), the
server point ``xbar`` of shape ``(B, p)``.  A round is a handful of batched numpy
operations; there is no Python loop over clients or instances in the hot path.

Schedules (step sizes, penalties) are *not* written here: algorithms receive the
``(rounds, B)`` arrays that :func:`evaluate_schedule` makes from the SymPy
expressions declared in ``theorems/`` (one source of truth).

Indexing follows the FedFW paper: ``x^1`` is the starting point, round ``t`` uses
``eta_t``, ``lambda_t`` and produces ``x^{t+1}``.  A run of ``T`` rounds has
iterates ``k = 1 .. T+1``; metrics are recorded on :func:`record_grid`.

One module per algorithm family (``fedfw.py``, ...); each algorithm is a function
``algo(batch, *, rounds, grid, <schedule arrays>, recorder=None, ...) -> Trace``.
"""
from fedcheck.algorithms.core import Recorder, Trace, default_recorder, evaluate_schedule, record_grid, run_recorded, with_iterates
from fedcheck.algorithms.fedfw import fedfw, frank_wolfe, naive_fw_averaging
from fedcheck.algorithms.protocol import Round, federated
from fedcheck.algorithms.fedfw_variants import fedfw_partial, fedfw_plus, fedfw_split, fedfw_sto, fedfw_variant, feddr
from fedcheck.algorithms.fedavg import FedAvgState, fedavg_rounds, run_fedavg

__all__ = ["Round", "federated", "Recorder", "Trace", "default_recorder", "evaluate_schedule", "record_grid", "run_recorded",
           "with_iterates", "fedfw", "frank_wolfe", "naive_fw_averaging",
           "fedfw_variant", "fedfw_plus", "fedfw_sto", "fedfw_partial", "fedfw_split", "feddr",
           "FedAvgState", "fedavg_rounds", "run_fedavg"]

# Methods and pieces whose modules load on first use (``from fedcheck.algorithms import fedsgm``): the federated methods
# a user may run on their own problems, one name each (no submodule shares a name given here: the import system
# would replace the function by the module once that is imported -- FedMLS's module is mls, DCS's sliding).
_LAZY = {
    **dict.fromkeys(("ProblemBatch", "fw_gap", "fw_recorder"), "fedcheck.algorithms.fedfw_variants"),
    "replicate_seeds": "fedcheck.core.streams",
    **dict.fromkeys(("fedsgm", "switching_subgradient", "switching_weight", "per_row"), "fedcheck.algorithms.switching"),
    **dict.fromkeys(("fedmls", "mopes", "scaffold", "scaffnew", "minibatch_oracle", "approx_prox", "start_point",
                     "local_step_args", "drive_rounds"), "fedcheck.algorithms.mls"),
    "dcs": "fedcheck.algorithms.sliding",
    **dict.fromkeys(("feddualavg", "feddualavg_osp", "fedmid", "fedmid_osp", "fedmid_no_server_prox",
                     "fedavg_subgradient", "primal_averaging"), "fedcheck.algorithms.composite"),
}
__all__ += list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fedcheck.algorithms' has no attribute {name!r}")
