"""Families (seeded, heterogeneous, boundary optimum) and user files (validated, no pickle)."""
import numpy as np
import pytest

from fedcheck.problems.instances import InstanceError, RandomFamily, load_instance, save_instance
from fedcheck.problems.solve import solve_consensus


def test_same_seed_same_instance():
    fam = RandomFamily()
    a, b = fam.draw(7), fam.draw(7)
    assert np.array_equal(a.A, b.A) and np.array_equal(a.b, b.b)
    assert not np.array_equal(fam.draw(8).A, a.A)


@pytest.mark.parametrize("set_name", ["l1", "l2", "box", "simplex"])
def test_heterogeneous_and_boundary(set_name):
    fam = RandomFamily(set=set_name, n=4, m=30, p=5, heterogeneity=2.0)
    inst = fam.draw(0)
    # client optima differ: unconstrained least-squares minimizers of the clients
    xs = np.stack([np.linalg.lstsq(inst.A[i], inst.b[i], rcond=None)[0] for i in range(inst.n)])
    assert np.min(np.linalg.norm(xs[:, None] - xs[None], axis=-1)[np.triu_indices(inst.n, 1)]) > 0.1
    sol = solve_consensus(inst)
    assert sol.accurate
    # the optimum is on the boundary: the projection of a slightly scaled-up x* moves it
    S = inst.set
    if set_name == "simplex":
        assert np.min(sol.x_star) < 1e-7  # a face of the simplex
    else:
        assert np.linalg.norm(S.project(sol.x_star * 1.01) - sol.x_star * 1.01) > 1e-6


def _write(tmp_path, **arrays):
    base = dict(A=np.ones((2, 3, 4)), b=np.ones((2, 3)), loss=np.array("least_squares"), set=np.array("l1"),
                radius=np.array(1.0))
    base.update(arrays)
    for k in [k for k, v in base.items() if v is None]:
        del base[k]
    path = tmp_path / "inst.npz"
    np.savez(path, **base)
    return path


def test_roundtrip(tmp_path):
    inst = RandomFamily(loss="logistic", n=3, m=4, p=5).draw(1)
    path = save_instance(inst, tmp_path / "x.npz")
    back = load_instance(path)
    assert np.array_equal(back.A, inst.A) and np.array_equal(back.b, inst.b)
    assert back.loss == "logistic" and back.set.name == "l1" and back.set.radius == 1.0
    assert back.content_hash() == inst.content_hash()


@pytest.mark.parametrize("arrays,message", [
    (dict(A=None), r"missing key\(s\) \['A'\]"),
    (dict(radius=None, set=None), r"missing key\(s\) \['set', 'radius'\]"),
    (dict(A=np.ones((2, 3))), r"'A' must have shape \(n, m, p\)"),
    (dict(b=np.ones((2, 4))), r"'b' must have shape \(n, m\) = \(2, 3\)"),
    (dict(A=np.full((2, 3, 4), np.nan)), r"'A' contains 24 NaN or infinite"),
    (dict(b=np.array([[1, 2, np.inf], [1, 1, 1]])), r"'b' contains 1 NaN or infinite"),
    (dict(radius=np.array(np.nan)), r"'radius' contains 1 NaN"),
    (dict(radius=np.array(-1.0)), r"'radius' must be > 0"),
    (dict(radius=np.ones(2)), r"'radius' must be a single float"),
    (dict(loss=np.array("cubic")), r"unknown loss 'cubic'"),
    (dict(set=np.array("l7")), r"unknown set 'l7'"),
    (dict(loss=np.array(3.0)), r"'loss' must be a string"),
    (dict(loss=np.array("logistic"), b=np.full((2, 3), 0.5)), r"labels 'b' must all be \+1 or -1"),
    (dict(A=np.array([["a"]])), r"'A' must be numeric"),
    (dict(x0=np.ones(3)), r"'x0' must have shape \(p,\) = \(4,\)"),
    (dict(x0=np.ones(4)), r"'x0' is not in the l1 set"),
])
def test_malformed_files_are_named(tmp_path, arrays, message):
    with pytest.raises(InstanceError, match=message):
        load_instance(_write(tmp_path, **arrays))


def test_pickle_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, A=np.array([{"x": 1}], dtype=object), b=np.ones((1, 1)), loss=np.array("least_squares"),
             set=np.array("l1"), radius=np.array(1.0))
    with pytest.raises(InstanceError, match="pickle"):
        load_instance(path)


def test_not_an_npz(tmp_path):
    path = tmp_path / "junk.npz"
    path.write_bytes(b"this is not a zip file")
    with pytest.raises(InstanceError, match="cannot be read"):
        load_instance(path)
    with pytest.raises(InstanceError, match="no such file"):
        load_instance(tmp_path / "missing.npz")


@pytest.mark.parametrize("kind", ["l2", "l1", "simplex", "box"])
def test_batch_starting_points_are_each_instances_start(kind):
    """``InstanceBatch.x0`` tests the default start of all instances at once: the same points as each instance's
    own ``start()`` (0, or its projection onto the simplex), and instances with their own ``x0`` keep it."""
    from fedcheck.problems.instances import InstanceBatch
    fam = RandomFamily(loss="least_squares", set=kind, n=3, m=5, p=4)
    insts = [fam.draw(s) for s in range(5)]
    batch = InstanceBatch(insts)
    want = np.stack([np.broadcast_to(i.start(), (3, 4)) for i in insts])
    got = batch.x0()
    assert got.flags.c_contiguous and got.shape == (5, 3, 4)
    np.testing.assert_array_equal(got, want)
    insts[2].x0 = np.full(4, 0.125)
    np.testing.assert_array_equal(InstanceBatch(insts).x0()[2], np.full((3, 4), 0.125))
