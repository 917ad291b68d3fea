"""The local searches of the non-convex families' constants (:func:`fedcheck.problems.nonconvex._local_values`) run
all starts in one batch: the same bits as one start at a time, on both non-convex losses and both sets."""
import numpy as np
import pytest

import fedcheck.problems.nonconvex as NC
from theorems.fedfw.measurements import SigmoidFamily, SignedQuadraticFamily


@pytest.mark.parametrize("family", [SignedQuadraticFamily(), SigmoidFamily(), SignedQuadraticFamily(set="l2"),
                                    SigmoidFamily(set="l1")], ids=lambda f: f"{type(f).__name__}-{f.set}")
@pytest.mark.parametrize("seed", range(3))
def test_batched_local_searches_are_one_start_at_a_time(family, seed):
    inst = family.draw(seed)
    loss, S = inst.make_loss(), inst.set
    rng = np.random.default_rng(seed)
    starts = [np.zeros((inst.n, inst.p))] + [S.project(rng.standard_normal((inst.n, inst.p))) for _ in range(4)]
    got = NC._local_values(loss, S, starts)
    want = [loss.value(NC._local_min(loss, S, x0)) for x0 in starts]
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
