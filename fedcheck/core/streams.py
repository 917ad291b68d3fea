"""Random streams: every random number of fedcheck comes from ``numpy.random.SeedSequence`` keyed by what it is
for (an instance seed, a replicate, a method's name), never by the worker or the batch it runs in, so that the same
seed gives the same result, serial or distributed."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["LazyRows", "replicate_seeds", "row_generators"]


def replicate_seeds(seeds: Sequence[int], replicates: int) -> np.ndarray:
    """One stream seed per (instance seed, replicate) pair, ``(len(seeds) * replicates,)``, instance-major.

    Derived with ``SeedSequence([seed, replicate])``, so replicate ``r`` of seed ``s`` always gets the same
    stream whatever else is in the batch."""
    return np.array([int(np.random.SeedSequence([int(s), int(r)]).generate_state(1)[0])
                     for s in seeds for r in range(replicates)], dtype=np.int64)


def row_generators(seeds: Sequence[int] | None, B: int, key: str) -> list[np.random.Generator]:
    """One generator per instance row: ``SeedSequence([seed, crc(key)])`` (seed 0.. when none are given)."""
    import zlib
    tag = zlib.crc32(key.encode())
    seeds = list(range(B)) if seeds is None else [int(s) for s in seeds]
    if len(seeds) != B:
        raise ValueError(f"{len(seeds)} stream seeds for {B} rows")
    return [np.random.default_rng(np.random.SeedSequence([s % 2**63, tag])) for s in seeds]


class LazyRows(Sequence):
    """:func:`row_generators` made on first use (a run that draws nothing does not pay for ``B`` generators;
    the streams are the same whenever they are made).  The seeds are checked at once."""

    def __init__(self, seeds: Sequence[int] | None, B: int, key: str):
        seeds = None if seeds is None else [int(s) for s in seeds]
        if seeds is not None and len(seeds) != B:
            raise ValueError(f"{len(seeds)} stream seeds for {B} rows")
        self._args, self._rows = (seeds, B, key), None

    def _get(self) -> list[np.random.Generator]:
        if self._rows is None:
            self._rows = row_generators(*self._args)
        return self._rows

    def __getitem__(self, i):
        return self._get()[i]

    def __len__(self) -> int:
        return self._args[1]

    def __iter__(self):
        return iter(self._get())
