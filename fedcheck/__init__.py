"""fedcheck: a verification-focused theory checker for federated optimization.

The public API (imported lazily, so that ``import fedcheck`` stays light)::

    res = fedcheck.verify("theorem1", seeds=4, rounds=2000)   # -> Results: repr, to_frame(), report(dir)

    from fedcheck import Claim, Paper, Reading, Source, Domain, BoundTest, Bound, Measurement, Proof, Fact
    from fedcheck import Rounds, Horizons, Cases, RunConfig, MEAN, PATHWISE, fraction, ProofStep
    from fedcheck.algorithms import federated, pieces  # a round function -> a batched method; its building blocks
    from fedcheck.problems import RandomFamily         # instance families, sets, losses, exact solves
    from fedcheck.symbols import t, T, L, D, n         # the named constants of bounds
    from fedcheck.testing import claim_instances       # hypothesis strategies for property suites
    from fedcheck import verdicts as V                 # verdict names, the tolerance policy, rate fits
    from fedcheck import steps as A                    # proof steps: ProofStep, prove_identity, check_on_grid

These seven modules are the public surface (``docs/DESIGN.md``); everything else is internal.
"""
__version__ = "0.2.0"

_EXPORTS = {
    "Claim": "fedcheck.core.claim", "Paper": "fedcheck.core.claim", "Reading": "fedcheck.core.claim",
    "Domain": "fedcheck.core.claim", "Source": "fedcheck.core.readings", "Deviation": "fedcheck.core.readings", "RunConfig": "fedcheck.core.claim", "Result": "fedcheck.core.claim",
    "BoundTest": "fedcheck.core.evidence", "Bound": "fedcheck.core.evidence", "Measurement": "fedcheck.core.evidence",
    "MeasureResult": "fedcheck.core.evidence", "Proof": "fedcheck.core.evidence", "Fact": "fedcheck.core.evidence",
    "Finding": "fedcheck.core.evidence", "Comparison": "fedcheck.core.evidence", "Statistic": "fedcheck.core.evidence",
    "PATHWISE": "fedcheck.core.evidence", "MEAN": "fedcheck.core.evidence", "fraction": "fedcheck.core.evidence",
    "reproduced_if": "fedcheck.core.evidence",
    "Rounds": "fedcheck.experiments", "Horizons": "fedcheck.experiments", "HorizonCase": "fedcheck.experiments",
    "Cases": "fedcheck.experiments", "Case": "fedcheck.experiments", "Metric": "fedcheck.experiments",
    "objective_gap": "fedcheck.experiments", "recorded": "fedcheck.experiments",
    "Trivial": "fedcheck.experiments", "fw_gap_trivial": "fedcheck.experiments",
    "no_trivial_bound": "fedcheck.experiments",
    "SideCondition": "fedcheck.experiments", "algorithm_runner": "fedcheck.experiments",
    "ProofStep": "fedcheck.core.steps", "StepOutcome": "fedcheck.core.steps",
    "BadInput": "fedcheck.core.errors", "DomainError": "fedcheck.core.errors",
    "verify": "fedcheck.api", "Results": "fedcheck.api",
    # what a paper's measurements and proof steps build with (the catalog imports these, as a user's file does)
    "Observations": "fedcheck.core.evidence", "Observed": "fedcheck.core.evidence", "MeasureContext": "fedcheck.core.evidence",
    "clopper_pearson": "fedcheck.core.evidence", "order_fact": "fedcheck.core.evidence",
    "geometric_horizons": "fedcheck.experiments", "instance_inequality": "fedcheck.experiments",
    "evaluate_expr": "fedcheck.core.schedules", "jsonable": "fedcheck.core.results",
    "atomic_write_text": "fedcheck.core.results", "cache_dir": "fedcheck.core.cache",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fedcheck' has no attribute {name!r}")
