"""The C allocator's settings in the processes fedcheck owns (the CLI, its local Dask workers, its renderers).

The engine allocates and frees numpy temporaries of 0.1-10 MB every round.  With glibc's defaults the top of
the heap is given back to the kernel as soon as 128 KiB of it is free (``M_TRIM_THRESHOLD``), and arrays above
a threshold that starts at 128 KiB are fresh ``mmap`` mappings: the next round's temporaries fault the same pages
in again, zero-filled by the kernel.  On the Table 2 CNN check that was 3.5 million page faults and 5.3 s of
system time in an 18.7 s run (13.2 s with these settings: ``python benchmarks/allocator.py``; ``benchmarks/HISTORY.md``,
"The quick catalog's CPU").  :func:`tune_allocator` keeps
freed memory for reuse: the top of the heap is trimmed only above :data:`TRIM_THRESHOLD` free bytes, the heap
grows by :data:`TOP_PAD` at a time, and arrays below :data:`MMAP_THRESHOLD` (glibc's own largest dynamic
threshold) come from the heap.  A process's peak memory does not grow (the pages are reused, not added); up to
:data:`TRIM_THRESHOLD` of freed memory stays mapped until the process exits.

Numbers are unchanged: the allocator decides where an array lives, never what is computed in it.

Applied only with glibc (elsewhere: nothing happens), and never over a choice of the user's: when any of
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TOP_PAD_`` is set (glibc applied it at start-up)
or ``FEDCHECK_TUNE_MALLOC=0``, the settings are left as they are.  A library import never calls this: a Python
program that uses fedcheck's API keeps its allocator's settings unless it calls :func:`tune_allocator` itself.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["tune_allocator", "TRIM_THRESHOLD", "TOP_PAD", "MMAP_THRESHOLD", "USER_SETTINGS"]

TRIM_THRESHOLD = 128 * 2**20     # bytes free at the top of the heap before it is given back to the kernel
TOP_PAD = 16 * 2**20             # extra bytes asked of the kernel when the heap grows
MMAP_THRESHOLD = 32 * 2**20      # allocations from this size on are their own mappings (glibc's dynamic maximum)
USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3     # glibc's mallopt parameters (malloc.h)
_STATE: dict = {}                                                 # "applied": the outcome in this process


def _glibc():
    """The C library's handle when it is glibc (it has ``gnu_get_libc_version`` and ``mallopt``), else ``None``."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        libc.gnu_get_libc_version      # noqa: B018  (glibc only)
        return libc if hasattr(libc, "mallopt") else None
    except (OSError, AttributeError):
        return None


def tune_allocator(environ=None, libc=None) -> bool:
    """Apply the settings of the module doc once per process; whether they are in force (``False``: not glibc,
    the user's own ``MALLOC_*`` settings, ``FEDCHECK_TUNE_MALLOC=0``, or ``mallopt`` refused).  A process forked
    after the call inherits them (the local workers, from the forkserver that calls it in
    :mod:`fedcheck.catalog.warm`).  ``environ``/``libc``: for tests."""
    env = os.environ if environ is None else environ
    if environ is None and libc is None and "applied" in _STATE:
        return _STATE["applied"]
    applied = False
    if env.get("FEDCHECK_TUNE_MALLOC", "1").strip() != "0" and not any(k in env for k in USER_SETTINGS):
        lib = _glibc() if libc is None else libc
        if lib is not None:
            # the mmap threshold first: setting it (or the trim threshold) turns off glibc's dynamic adjustment
            applied = all(int(lib.mallopt(ctypes.c_int(p), ctypes.c_int(v))) == 1
                          for p, v in ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD), (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
                                       (_M_TOP_PAD, TOP_PAD)))
    if environ is None and libc is None:
        _STATE["applied"] = applied
    return applied
