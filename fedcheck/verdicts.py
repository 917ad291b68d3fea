"""Verdicts and how they are reached (public): the verdict names, the tolerance policy, the rate fits.

A measurement written in a theorem file (a paper's or a user's) decides its findings with these::

    from fedcheck import verdicts as V
    V.HOLDS if np.all(ratio <= 1 + V.POLICY.rtol) else V.VIOLATED
    fit = V.fit_rate(k, gap); V.rate_verdict(fit["ci"], -1.0)

Defined in :mod:`fedcheck.core.verdict` and :mod:`fedcheck.core.evidence`; this module is their public name.
"""
from fedcheck.core.evidence import clopper_pearson, reproduced_if
from fedcheck.core.verdict import (HOLDS, INCONCLUSIVE, NOT_REPRODUCED, POLICY, REPRODUCED, VIOLATED, TolerancePolicy,
                                   combine, compare_upper, decade_slopes, fit_rate, paired_difference, pooled_rate, rate_claim_verdict,
                                   rate_verdict, slack, verdict_of_codes, MIN_DRAWS, POWER, level_of, corrected_level,
                                   holm, detectable_effect, mean_interval, power_text, counterexample_of,
                                   welch_difference, power_record, t_multiplier)

__all__ = ["HOLDS", "VIOLATED", "INCONCLUSIVE", "REPRODUCED", "NOT_REPRODUCED", "POLICY", "TolerancePolicy", "combine",
           "compare_upper", "slack", "verdict_of_codes", "fit_rate", "decade_slopes", "rate_verdict",
           "rate_claim_verdict", "pooled_rate", "paired_difference", "clopper_pearson", "reproduced_if", "MIN_DRAWS",
           "POWER", "level_of", "corrected_level", "holm", "detectable_effect", "mean_interval", "power_text",
           "counterexample_of", "welch_difference", "power_record", "t_multiplier"]
