"""One progress display for everything a user waits on: rounds, solves, SymPy proofs and reports.

::

    from fedcheck.core import progress
    with progress.task("solving", total=len(insts), unit="solve", enabled=config.progress) as bar:
        for inst in insts:
            ...
            bar.update()

A task is a tqdm bar (on stderr, removed when done) whose **ETA ignores the warm-up**.  The first intervals
carry one-off costs -- numba's JIT compile of the round kernel (which lands in the first *or the second*
interval: the recorder sees round 0 or 1 before the compiled loop starts), importing cvxpy, building the
first SymPy expression -- and extrapolating them made the per-round bar open with an ETA of hours.  The
warm-up ends at the end of the slowest interval (time per unit) among the early ones (the first
:data:`WARMUP_UPDATES` updates, or the first :data:`WARMUP_FRACTION` of the total); until an update arrives
after it the ETA is shown as ``?``; after that the rate is the plain average since the warm-up, so the
estimate is the remaining work at the rate actually observed.

The display is off with ``--quiet`` (``enabled=False``) and when stderr is not a terminal (logs, CI,
captured output; a Jupyter kernel's stderr counts as a terminal); ``FEDCHECK_PROGRESS=1`` forces it on and
``FEDCHECK_PROGRESS=0`` off.  Nothing here changes a computation: a task only counts.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Callable, Iterator

__all__ = ["Task", "task", "enabled", "callback", "WARMUP_UPDATES", "WARMUP_FRACTION"]

WARMUP_UPDATES = 3          # the first intervals that may hold the warm-up ...
WARMUP_FRACTION = 0.05      # ... or those within the first 5 % of the total


def enabled(requested: bool = True, stream=None) -> bool:
    """Whether to draw: ``requested`` (``--quiet`` gives False), ``$FEDCHECK_PROGRESS``, and a terminal."""
    if not requested:
        return False
    env = os.environ.get("FEDCHECK_PROGRESS", "").strip().lower()
    if env in ("0", "off", "no", "false"):
        return False
    if env in ("1", "on", "yes", "true"):
        return True
    stream = sys.stderr if stream is None else stream
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):
        return False
    return stream is sys.stderr and "ipykernel" in sys.modules     # a notebook shows stderr as it comes


_show = enabled


class Task:
    """Counts ``n`` of ``total`` and estimates the time left from the updates after the first one.

    ``clock`` is injectable (tests use a fake one); the bar, when drawn, is a tqdm bar fed with this rate."""

    def __init__(self, desc: str, total: int | None = None, unit: str = "it", *, show: bool = False,
                 clock: Callable[[], float] = time.monotonic, leave: bool = False, file=None):
        self.desc, self.total, self.unit = desc, total, unit
        self.n = 0
        self._clock = clock
        self.start = clock()
        self._warm: tuple[float, int] | None = None     # (time, n) at the end of the warm-up
        self._warm_unit = 0.0                           # its interval's seconds per unit
        self._updates = 0
        self._last = self.start
        self._bar = None
        if show:
            self._bar = _bar_class()(total=total, desc=desc, unit=unit, leave=leave,
                                     file=sys.stderr if file is None else file, mininterval=0.25, smoothing=0)
            self._bar.task = self

    # -- counting ----------------------------------------------------------------------------------
    def update(self, n: int = 1) -> None:
        if n <= 0:
            return
        now = self._clock()
        per_unit = (now - self._last) / n
        self.n += n
        self._last = now
        self._updates += 1
        early = self._updates <= WARMUP_UPDATES or (self.total is not None and self.n <= WARMUP_FRACTION * self.total)
        if self._warm is None or (early and per_unit > self._warm_unit):
            self._warm, self._warm_unit = (now, self.n), per_unit
        if self._bar is not None:
            self._bar.update(n)

    def advance_to(self, n: int) -> None:
        """Set the count to ``n`` (a recorder's round index, a report callback's ``done``)."""
        self.update(n - self.n)

    def set_total(self, total: int | None) -> None:
        self.total = total
        if self._bar is not None and self._bar.total != total:
            self._bar.total = total
            self._bar.refresh()

    def set_label(self, label: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(label, refresh=False)

    # -- estimates ---------------------------------------------------------------------------------
    @property
    def warm(self) -> bool:
        """True once an update after the warm-up interval has been seen."""
        return self._warm is not None and self.n > self._warm[1]

    def rate(self) -> float | None:
        """Units per second since the warm-up (``None`` before a second update)."""
        if not self.warm:
            return None
        t_w, n_w = self._warm
        dt = self._last - t_w
        return (self.n - n_w) / dt if dt > 0 else None

    def eta(self) -> float | None:
        """Seconds left at the post-warm-up rate; ``None`` while unknown (no total, or still warming up)."""
        r = self.rate()
        if r is None or self.total is None:
            return None
        return max(self.total - self.n, 0) / r

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def task(desc: str, total: int | None = None, unit: str = "it", *, enabled: bool = True,
         clock: Callable[[], float] = time.monotonic, leave: bool = False, file=None) -> Iterator[Task]:
    """A :class:`Task`, drawn when ``enabled`` and stderr is a terminal (see :func:`enabled`), closed on exit."""
    t = Task(desc, total, unit, show=_show(enabled, file), clock=clock, leave=leave, file=file)
    try:
        yield t
    finally:
        t.close()


def callback(t: Task) -> Callable[[int, int, str], None]:
    """``progress(done, total, label)`` as :func:`fedcheck.render.write_reports` calls it, feeding ``t``."""
    def cb(done: int, total: int, label: str = "") -> None:
        t.set_total(total)
        if label:
            t.set_label(label)
        t.advance_to(done)
    return cb


_BAR = None


def _bar_class():
    """A tqdm bar whose rate (hence its ETA) is the task's post-warm-up rate, ``?`` until it is known."""
    global _BAR
    if _BAR is None:
        from tqdm import tqdm

        class _Bar(tqdm):
            task: Task | None = None

            @property
            def format_dict(self):
                d = super().format_dict
                t = self.task
                if t is not None:
                    r = t.rate()
                    d["rate"] = r
                    if r is None:           # no average over the warm-up: tqdm shows '?' for a zero rate
                        d["initial"] = d["n"]
                return d
        _BAR = _Bar
    return _BAR
