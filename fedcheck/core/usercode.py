"""The one boundary between fedcheck and a user's code.

Every callable a user hands fedcheck -- a round function and its ``init``, a batched algorithm, a measurement, a
case builder, a family's ``draw``, a recorder or metric, a runner, a constant provider, a Fact's ``prove``, a
ProofStep's ``establish`` -- is called through :func:`call_user` (or wrapped once by :func:`guard`).  Any exception
it raises, ``SystemExit`` included, becomes one :class:`~fedcheck.core.errors.UserCodeError` (bad input, exit 2)::

    error in your round function fedprox_round (mine.py:12): ValueError: operands could not be broadcast ...

naming the deepest frame of the traceback in the user's own code (not fedcheck's, not a library's).
``KeyboardInterrupt`` (SIGINT, exit 130) and :class:`~fedcheck.core.errors.Terminated` (SIGTERM, exit 143) pass
through untouched, wherever they arrive.  A callable of fedcheck's own code (the ``fedcheck`` and ``theorems``
packages: the catalog) is called as it is: an exception there is fedcheck's bug (exit 4), never the user's.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import sysconfig
import traceback
from pathlib import Path
from typing import Any, Callable

from fedcheck.core.errors import Terminated, UserCodeError

__all__ = ["call_user", "guard", "is_own", "is_own_file", "user_error", "contract_error", "defined_at", "short_path",
           "main_not_imported"]

_PASS = (KeyboardInterrupt, Terminated, GeneratorExit, UserCodeError)


@functools.lru_cache(maxsize=1)
def _own_roots() -> tuple[str, ...]:
    """The folders of fedcheck's own code: the ``fedcheck`` package and the ``theorems`` package (the catalog)."""
    import importlib.util
    roots = [str(Path(__file__).resolve().parent.parent)]
    try:
        spec = importlib.util.find_spec("theorems")
    except (ImportError, ValueError):
        spec = None
    for loc in (spec.submodule_search_locations or []) if spec is not None else []:
        roots.append(str(Path(loc).resolve()))
    return tuple(r + os.sep for r in roots)


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    """Where Python's standard library and installed packages live (never a user's own file)."""
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(str(Path(sysconfig.get_paths()[key]).resolve()))
        except (KeyError, OSError):
            pass
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p):
            roots.add(str(Path(p).resolve()))
    return tuple(r + os.sep for r in roots if r)


@functools.lru_cache(maxsize=4096)
def is_own_file(filename: str) -> bool:
    """Whether ``filename`` is a source file of fedcheck's own code (``fedcheck/`` or ``theorems/``)."""
    if not filename or filename.startswith("<"):
        return False
    try:
        f = str(Path(filename).resolve())
    except OSError:
        return False
    return f.startswith(_own_roots())


@functools.lru_cache(maxsize=4096)
def _is_library_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return True             # generated code (SymPy's lambdify, dataclasses' __init__), frozen modules
    try:
        f = str(Path(filename).resolve())
    except OSError:
        return True
    return f.startswith(_library_roots()) and not f.startswith(_own_roots())


def _code(fn) -> Any:
    """The code object behind a callable (a function, a method, a partial, an object with ``__call__``)."""
    for _ in range(16):
        if isinstance(fn, functools.partial):
            fn = fn.func
            continue
        inner = getattr(fn, "__wrapped__", None)
        if inner is not None and inner is not fn and getattr(fn, "__fedcheck_guarded__", False):
            fn = inner
            continue
        if inspect.ismethod(fn):
            fn = fn.__func__
            continue
        code = getattr(fn, "__code__", None)
        if code is not None:
            return code
        if inspect.isclass(fn):
            fn = fn.__init__
            continue
        call = getattr(type(fn), "__call__", None)
        if call is None or call is fn:
            return None
        fn = call
    return None


def defined_at(fn) -> tuple[str, int, str]:
    """``(file, first line, name)`` of a callable ('' and 0 where it has no Python code)."""
    code = _code(fn)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    name = str(name).rpartition("<locals>.")[2]         # a function defined inside another: its own name
    if code is None:
        return "", 0, str(name)
    return code.co_filename, code.co_firstlineno, str(name)


def is_own(fn) -> bool:
    """Whether ``fn`` is fedcheck's own code (then it is called without the guard)."""
    code = _code(fn)
    return code is not None and is_own_file(code.co_filename)


def short_path(filename: str) -> str:
    """A file as the user knows it: relative to the working folder when it is inside it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return rel if not rel.startswith("..") else filename


def _where(exc: BaseException, fn) -> str:
    """``file:line`` of the deepest frame of ``exc``'s traceback in the user's code (else the function's own
    file, else where it is defined)."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    own_file = defined_at(fn)[0]
    for fr in reversed(frames):
        if not is_own_file(fr.filename) and not _is_library_file(fr.filename):
            return f"{short_path(fr.filename)}:{fr.lineno}"
    for fr in reversed(frames):
        if own_file and fr.filename == own_file:
            return f"{short_path(fr.filename)}:{fr.lineno}"
    f, line, _ = defined_at(fn)
    return f"{short_path(f)}:{line}" if f else "?"


def _what(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"calls sys.exit({exc.code!r})"
    msg = " ".join(str(exc).split())
    if len(msg) > 400:
        msg = msg[:397] + "..."
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def user_error(exc: BaseException, fn, role: str) -> UserCodeError:
    """The one-line error for ``exc`` raised by the user's ``fn`` playing ``role``."""
    name = defined_at(fn)[2]
    where = _where(exc, fn)
    return UserCodeError(f"error in your {role} {name} ({where}): {_what(exc)}", role, name, where)


def contract_error(fn, role: str, what: str) -> UserCodeError:
    """A user's ``fn`` returned something its contract forbids (no exception to point at: its definition is named)."""
    f, line, name = defined_at(fn)
    where = f"{short_path(f)}:{line}" if f else "?"
    return UserCodeError(f"error in your {role} {name} ({where}): {' '.join(what.split())}", role, name, where)


def call_user(fn: Callable, *args, role: str, **kwargs):
    """``fn(*args, **kwargs)``; when ``fn`` is a user's code, any exception it raises (``SystemExit`` included)
    becomes a :class:`UserCodeError` naming ``role``, the function and the user's file and line.  Interrupts
    (``KeyboardInterrupt``, SIGTERM's :class:`Terminated`) pass through."""
    if is_own(fn):
        return fn(*args, **kwargs)
    try:
        return fn(*args, **kwargs)
    except _PASS:
        raise
    except BaseException as e:  # noqa: BLE001 - a user's code may raise anything, SystemExit included
        raise user_error(e, fn, role) from None


def guard(fn: Callable | None, role: str) -> Callable | None:
    """``fn`` itself when it is fedcheck's own code (or ``None``), else a wrapper calling it through
    :func:`call_user` (its attributes kept)."""
    if fn is None or is_own(fn) or getattr(fn, "__fedcheck_guarded__", False):
        return fn

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _PASS:
            raise
        except BaseException as e:  # noqa: BLE001
            raise user_error(e, fn, role) from None
    guarded.__fedcheck_guarded__ = True
    return guarded


@contextlib.contextmanager
def main_not_imported():
    """The user's main script hidden from the processes started meanwhile (fedcheck's renderers, the forkserver and
    the workers of ``-j N``).  Without this, ``multiprocessing``'s ``spawn`` and ``forkserver`` run the script
    again in each of them, to rebuild its ``__main__`` module -- and a script without an ``if __name__ ==
    "__main__":`` guard starts its work over there (calling ``fedcheck.verify(..., jobs=2)`` again, which fails
    to start its cluster).  None of those processes needs ``__main__``: a claim or round function defined in the
    script reaches a worker pickled by value (cloudpickle), not by the script's name."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    try:
        main.__dict__.pop("__file__", None)
        main.__spec__ = None
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)
