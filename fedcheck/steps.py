"""Proof steps (public): a paper's inequalities between named quantities, established symbolically, on a grid or
by a witness instance -- the vocabulary of :mod:`fedcheck.core.steps`::

    from fedcheck import steps as A
    A.ProofStep("(24)", "the third line", establish=lambda: A.prove_le(lhs, rhs))

Defined in :mod:`fedcheck.core.steps`; this module is its public name.
"""
from fedcheck.core.steps import (INCONCLUSIVE, METHODS, PROVEN, REFUTED, VERIFIED, ProofStep, StepOutcome, all_of,
                                 check_on_grid, from_symbolic_claim, prove_equal, prove_identity, prove_le,
                                 prove_nonnegative)

__all__ = ["ProofStep", "StepOutcome", "PROVEN", "VERIFIED", "REFUTED", "INCONCLUSIVE", "METHODS", "prove_identity",
           "prove_nonnegative", "prove_le", "prove_equal", "check_on_grid", "all_of", "from_symbolic_claim"]
