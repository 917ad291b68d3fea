"""The certified lower end of a network's smoothness constant: a local maximization of the difference quotient
raises it far above the sampled one (on the theorem2_dnn network, from ~8 to ~2.4e3) and it stays a value attained
by a difference quotient between two points of the set, below the certified upper end."""
import numpy as np

from fedcheck.problems import NetworkFamily
from fedcheck.problems.networks import climbed_smoothness, mlp_bounds, network_constants


def _inst():
    fam = NetworkFamily(data="synthetic", model="mlp", hidden=(6,), activation="tanh", n=3, features=8, classes=3,
                        samples=15, set="l2", radius=5.0)
    return fam.draw(0)


def test_the_climb_raises_the_lower_end_and_stays_below_the_upper_end():
    inst = _inst()
    base = network_constants(inst, climb_steps=0).info["L"]
    climbed = network_constants(inst).info["L"]
    assert climbed.hi == base.hi
    assert base.lo <= climbed.lo <= climbed.hi
    assert climbed.lo > base.lo        # the hill climb finds larger quotients than the sampled points


def test_every_climbed_quotient_is_attained_between_points_of_the_set():
    inst = _inst()
    loss, S = inst.make_loss(), inst.set
    X0 = np.broadcast_to(inst.start(), (inst.n, inst.p)).copy()
    q = climbed_smoothness(loss, S, X0, np.random.default_rng(3), steps=30)
    _, L_hi = mlp_bounds(loss, S)
    assert np.all(q <= L_hi) and np.all(q > 0)
