"""The C allocator's settings (fedcheck.core.allocator): applied in fedcheck's own processes, never over the user's."""
from __future__ import annotations

import subprocess
import sys

import pytest

from fedcheck.core import allocator
from fedcheck.core.allocator import MMAP_THRESHOLD, TOP_PAD, TRIM_THRESHOLD, tune_allocator


class FakeLibc:
    def __init__(self, ok: int = 1):
        self.calls, self.ok = [], ok

    def mallopt(self, param, value):
        self.calls.append((param.value, value.value))
        return self.ok


def test_the_settings_are_applied_on_a_clean_environment():
    lib = FakeLibc()
    assert tune_allocator(environ={}, libc=lib) is True
    assert lib.calls == [(-3, MMAP_THRESHOLD), (-1, TRIM_THRESHOLD), (-2, TOP_PAD)]   # mmap threshold first


@pytest.mark.parametrize("env", [{"MALLOC_TRIM_THRESHOLD_": "65536"}, {"MALLOC_MMAP_THRESHOLD_": "131072"},
                                 {"MALLOC_TOP_PAD_": "0"}, {"FEDCHECK_TUNE_MALLOC": "0"}])
def test_the_users_own_settings_and_the_opt_out_are_left_alone(env):
    lib = FakeLibc()
    assert tune_allocator(environ=env, libc=lib) is False
    assert lib.calls == []


def test_a_refused_setting_is_reported():
    assert tune_allocator(environ={}, libc=FakeLibc(ok=0)) is False


def _glibc() -> bool:
    return allocator._glibc() is not None


@pytest.mark.skipif(not _glibc(), reason="not glibc: nothing to tune")
def test_the_cli_and_the_workers_forkserver_module_apply_it_and_an_import_does_not():
    code = ("import sys; from fedcheck.core import allocator as a; import fedcheck.api, fedcheck.experiments; "
            "print(a._STATE.get('applied')); import fedcheck.catalog.warm; print(a._STATE.get('applied'))")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("MALLOC_")}
    env.pop("FEDCHECK_TUNE_MALLOC", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.stdout.split() == ["None", "True"], out.stderr[-2000:]
    code = ("from fedcheck.core import allocator as a; from fedcheck.cli.main import main; "
            "rc = main(['list']); print(a._STATE.get('applied'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.stdout.split()[-1] == "True", out.stderr[-2000:]
