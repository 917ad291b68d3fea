"""fedcheck.problems.constants: one mechanism for the named constants of bounds.

Resolution order (parameter > the instance's own ``constant(name, ctx)`` > ``register_constant`` > the
generic table), the message for an unknown name, ``register_constant`` refusing duplicates, and no
registration as a side effect of importing a problem module."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from fedcheck.problems import constants as C
from fedcheck.problems.constants import GENERIC, USER, InstanceContext, Value, known_constants, register_constant, resolve


@pytest.fixture
def user_table():
    """Leave USER as it was (tests register names of their own)."""
    saved = dict(USER)
    yield USER
    USER.clear()
    USER.update(saved)


class _Plain:
    """An instance without constants of its own (only what the generic table needs)."""
    n, m, p = 3, 5, 2


class _Own(_Plain):
    """An instance carrying its own constants ``n`` (shadowing the generic one) and ``kappa``."""

    def constant_names(self, sol=None):
        return ("n", "kappa")

    def constant(self, name, ctx):
        if name == "n":
            return Value(30.0, True, "instance")
        if name == "kappa":
            return 2.5  # a number is wrapped in a Value
        raise KeyError(name)


def _ctx(inst, params=None):
    return InstanceContext(inst, None, None, dict(params or {}))


def test_generic_table_is_a_literal_of_known_names():
    for name in ("n", "m", "p", "L", "D", "Y_norm", "G_sup", "G_max", "G_F", "r_0", "Delta_F", "xstar_norm",
                 "grad_hat_star", "grad_F_star", "E_init", "G_nc", "grad_hat_x1"):
        assert name in GENERIC and callable(GENERIC[name])
    # the problem classes' own constants are not generic
    for name in ("D_0", "G_lip", "q_u", "E", "sigma", "zeta", "B"):
        assert name not in GENERIC
    assert not hasattr(C, "constant") and not hasattr(C, "PROVIDERS")


def test_generic_constant():
    v = resolve("n", _ctx(_Plain()))
    assert (v.value, v.exact, v.note) == (3, True, "number of clients")


def test_order_param_over_instance_over_user_over_generic(user_table):
    register_constant("kappa", lambda ctx: Value(-1.0, True, "user"))
    register_constant("omega", lambda ctx: 4)
    own = _Own()
    # parameter first
    assert resolve("n", _ctx(own, {"n": 7})).value == 7.0
    assert resolve("n", _ctx(own, {"n": 7})).note == "parameter"
    assert resolve("kappa", _ctx(own, {"kappa": 9})).value == 9.0
    # then the instance (over the generic n and over the user's kappa)
    assert (resolve("n", _ctx(own)).value, resolve("n", _ctx(own)).note) == (30.0, "instance")
    assert resolve("kappa", _ctx(own)).value == 2.5
    # then the user's table (an instance without kappa; a name the instance does not know)
    assert resolve("kappa", _ctx(_Plain())).note == "user"
    assert resolve("omega", _ctx(own)).value == 4.0
    # then the generic table (the instance does not know p)
    assert resolve("p", _ctx(own)).value == 2


def test_resolve_all_uses_the_instance_names():
    got = C.resolve_all(_ctx(_Own(), {"kappa": 1}))
    assert list(got) == ["n", "kappa"] and got["n"].value == 30.0 and got["kappa"].note == "parameter"
    with pytest.raises(ValueError, match="constant_names"):
        C.resolve_all(_ctx(_Plain()))


def test_unknown_name_lists_the_known_names(user_table):
    register_constant("my_const", lambda ctx: 1.0)
    with pytest.raises(KeyError) as e:
        resolve("no_such_constant", _ctx(_Own()))
    msg = str(e.value)
    assert "no_such_constant" in msg and "known:" in msg
    for name in ("L", "G_sup", "E_init", "my_const", "kappa"):  # generic, user and the instance's own
        assert repr(name) in msg


def test_register_constant_refuses_duplicates(user_table):
    fn = lambda ctx: 1.0  # noqa: E731
    assert register_constant("my_const", fn) is fn and USER["my_const"] is fn
    with pytest.raises(ValueError, match="already registered"):
        register_constant("my_const", lambda ctx: 2.0)
    with pytest.raises(ValueError, match="generic"):
        register_constant("L", lambda ctx: 2.0)
    with pytest.raises(ValueError):
        register_constant("", fn)
    with pytest.raises(ValueError):
        register_constant("other", 3.0)
    assert USER["my_const"] is fn
    view = known_constants()
    assert "my_const" in view and "L" in view
    with pytest.raises(TypeError):
        view["x"] = fn  # read-only


def test_problem_classes_supply_their_own_constants():
    from theorems.fedsgm.problems import ConstrainedFamily
    inst = ConstrainedFamily().draw(0)
    ctx = InstanceContext(inst, None, None, {"compressor": None})
    G, exact, _ = inst.lipschitz()
    assert resolve("G_lip", ctx).value == G
    assert resolve("E", ctx).value == 1.0 and resolve("E", InstanceContext(inst, None, None, {"E": 3})).value == 3.0
    assert resolve("q_u", ctx).value == 0.0
    assert resolve("n", ctx).value == inst.n  # generic


def test_nonconvex_constants_are_generic_and_load_no_paper():
    code = ("import sys\n"
            "import fedcheck.problems.constants\n"
            "print(any(m.startswith('theorems') for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    from theorems.fedfw import measurements as F
    inst = F.SignedQuadraticFamily().draw(1)
    ctx = F.horizon_context(inst, F.nonconvex_solver(inst), {})
    iv = F.nonconvex_constants(inst)
    assert resolve("E_init", ctx).value == iv.E.hi and resolve("G_nc", ctx).value == iv.G.hi
    assert resolve("grad_hat_x1", ctx).value == C._grad_hat_x1(ctx).value


_SNAPSHOT = r"""
import json, sys
from fedcheck.problems import constants as C
def snap():
    return {"generic": {k: f"{v.__module__}.{v.__qualname__}" for k, v in C.GENERIC.items()},
            "user": sorted(C.USER)}
before = snap()
import importlib
for mod in sys.argv[1:]:
    importlib.import_module(mod)
after = snap()
print(json.dumps({"before": before, "after": after}))
"""


@pytest.mark.parametrize("modules", [["fedcheck.problems.constrained"], ["theorems.fedfw.measurements"],
                                     ["fedcheck.problems.composite"],
                                     ["fedcheck.problems.constrained", "theorems.fedfw.measurements",
                                      "fedcheck.problems.composite", "theorems.fedsgm", "theorems.fedfw",
                                      "theorems.feddualavg"]])
def test_importing_problem_modules_registers_nothing(modules):
    out = subprocess.run([sys.executable, "-c", _SNAPSHOT, *modules], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["before"] == r["after"]
    assert r["after"]["user"] == []


def test_feddualavg_instance_constants():
    from theorems.feddualavg.problems import SharedQuadraticFamily
    inst = SharedQuadraticFamily(d=3, M=2, K=4, noise=0.2, geometry="euclidean").draw(0)
    ctx = InstanceContext(inst, None, None, {})
    assert resolve("K", ctx).value == 4 and resolve("M", ctx).value == 2 and resolve("d", ctx).value == 3
    assert resolve("sigma", ctx).value == pytest.approx(0.2 * np.sqrt(3))
    assert list(C.resolve_all(ctx)) == ["M", "K", "d", "L", "sigma", "zeta", "G"]
