"""The federated engine: algorithms vectorized over instances and clients.

Arrays: client points ``X`` of shape ``(B, n, p)`` (B instances, n clients), the
server point ``xbar`` of shape ``(B, p)``.  A round is a handful of batched numpy
operations; there is no Python loop over clients or instances in the hot path.

Schedules (step sizes, penalties) are *not* written here: algorithms receive the
``(rounds, B)`` arrays that :func:`evaluate_schedule` makes from the SymPy
expressions declared in ``theorems/`` (one source of truth).

The convention of every method (``tests/test_methods_convention.py`` checks each one):

* **Call.**  ``method(problem, *, rounds=T, <schedules>, grid=None, recorder=None, x0=None, seeds=None, ...)``,
  all by keyword.  ``rounds`` is the number of rounds (communications) run; the schedules keep the symbols of the
  method's paper (``eta``/``lam`` for FedFW, ``eta_c``/``eta_s`` for FedDualAvg/FedMiD, ``eta``/``eps`` for FedSGM,
  ``lam``/``T``/``R`` for FedMLS), each a number, one value per instance ``(B,)`` or a ``(rounds, B)`` array whose
  row ``t-1`` is round ``t``.  ``x0`` is the server's start ``(B, p)`` (default: the problem's own); a paper's own
  name stays an alias (FedSGM's and FedDualAvg's ``w0``; FedFW's ``X0``, the clients' starts ``(B, n, p)``, as
  FedFW's clients keep their own points).  Randomness comes from ``seeds`` (entropy for
  :class:`numpy.random.SeedSequence`: one per instance row for FedFW-sto, FedFW with partial participation, FedSGM's
  compressors and :func:`federated` methods; one for the batch for the composite methods and Scaffnew, which also
  take a ``rng``): the same seeds give the same trace, bit for bit.  Scaffnew, which has no rounds, counts local
  steps (``steps``, or ``rounds``); :func:`run_fedavg` takes its start ``x0`` and its oracle first.
* **Return.**  A :class:`Trace`: ``metrics[name]`` ``(len(trace.rounds), B, ...)`` on the recording grid and
  ``final`` (the last points).
* **Iterates.**  The start is iterate 0: ``trace.completed`` (``trace.rounds - trace.start``) is the number of
  rounds completed at each row, the same meaning for every method, and on every method's default grid row 0 is
  the start.  ``trace.rounds`` keep the paper's own labels: FedFW (and :func:`federated`) start at ``x^1``
  (``start = 1``: round ``t`` uses ``eta_t``, ``lambda_t`` and makes ``x^{t+1}``; a run of ``T`` rounds has iterates
  ``k = 1 .. T+1``, recorded on :func:`record_grid`), FedSGM at ``w_0``, FedDualAvg at ``w_0``, FedMLS, Scaffold
  and DCS at ``x_0`` (``start = 0``).  A paper folder translates its paper's own indexing in its own code.

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
