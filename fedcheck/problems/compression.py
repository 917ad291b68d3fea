"""Unbiased compression operators, batched, with their exact variance.

A compressor ``C`` maps a vector ``x`` in R^d to a random vector with

    E[C(x)] = x,        E ||C(x) - x||^2 = variance(x) <= q_u(d) ||x||^2,

the *unbiased compression* assumption of federated analyses (e.g. Assumption 2 of
the FedSGM paper), ``q_u`` being the compressor's variance factor.  Every compressor
here works on arrays ``X`` of shape ``(..., d)`` (instances, clients, coordinates) at
once and draws its randomness from uniforms ``U`` of the same shape, so that the
caller owns the random streams (:class:`UniformStream`) and runs are reproducible.

``variance(X)`` is the *exact* conditional variance ``E ||C(x) - x||^2`` of each
vector (not only the bound ``q_u ||x||^2``): a checker can then evaluate the
conditional expectation of a quantity after a compressed step in closed form.

Compressors:

* :class:`Identity` -- no compression, ``q_u = 0``.
* :class:`RandK` -- keep ``K`` coordinates drawn uniformly without replacement,
  scaled by ``d/K``; ``variance = (d/K - 1) ||x||^2`` exactly, ``q_u = d/K - 1``.
* :class:`Bernoulli` -- keep each coordinate independently with probability
  ``p``, scaled by ``1/p``; ``variance = (1/p - 1) ||x||^2``, ``q_u = 1/p - 1``.
* :class:`RandomQuantization` -- unbiased random quantization with ``s`` levels
  (QSGD, Alistarh et al. 2017): ``C(x)_i = ||x|| sign(x_i) xi_i / s`` with
  ``xi_i = floor(s|x_i|/||x||) + Bernoulli(frac)``; ``variance =
  (||x||^2/s^2) sum_i p_i (1 - p_i)`` with ``p_i`` the fractional parts,
  ``q_u = min(d/s^2, sqrt(d)/s)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fedcheck.problems.instances import instance_rng

__all__ = ["Compressor", "Identity", "RandK", "Bernoulli", "RandomQuantization", "UniformStream",
           "make_compressor"]


class Compressor:
    """Base class; see the module doc for the contract."""

    name = "compressor"

    def q(self, d: int) -> float:
        """The variance factor ``q_u``: ``E||C(x) - x||^2 <= q_u ||x||^2`` for every x in R^d."""
        raise NotImplementedError

    def apply(self, X: np.ndarray, U: np.ndarray) -> np.ndarray:
        """``C(x)`` for every vector of ``X`` (shape ``(..., d)``), given uniforms ``U`` of the same shape."""
        raise NotImplementedError

    def variance(self, X: np.ndarray) -> np.ndarray:
        """Exact ``E ||C(x) - x||^2`` for every vector of ``X``: shape ``X.shape[:-1]``."""
        raise NotImplementedError

    @property
    def random(self) -> bool:
        return True

    def spec(self) -> dict:
        return {"name": self.name}

    def label(self, d: int) -> str:
        return self.name


@dataclass(frozen=True)
class Identity(Compressor):
    name = "identity"

    def q(self, d):
        return 0.0

    def apply(self, X, U=None):
        return X

    def variance(self, X):
        return np.zeros(X.shape[:-1])

    @property
    def random(self):
        return False

    def label(self, d):
        return "none"


@dataclass(frozen=True)
class RandK(Compressor):
    """Rand-K with unbiased scaling ``d/K`` (coordinates drawn without replacement)."""

    k: int
    name = "rand_k"

    def __post_init__(self):
        if self.k < 1:
            raise ValueError("Rand-K needs K >= 1")

    def _k(self, d):
        if self.k > d:
            raise ValueError(f"Rand-K with K={self.k} > d={d}")
        return self.k

    def q(self, d):
        return d / self._k(d) - 1.0

    def apply(self, X, U):
        d = X.shape[-1]
        k = self._k(d)
        if k == d:
            return X.copy()
        # the K coordinates with the smallest uniforms: a uniformly random K-subset
        idx = np.argpartition(U, k - 1, axis=-1)[..., :k]
        mask = np.zeros(X.shape, dtype=bool)
        np.put_along_axis(mask, idx, True, axis=-1)
        return np.where(mask, X * (d / k), 0.0)

    def variance(self, X):
        d = X.shape[-1]
        return self.q(d) * np.einsum("...i,...i->...", X, X)

    def spec(self):
        return {"name": self.name, "k": self.k}

    def label(self, d):
        return f"Rand-{self.k} of {d}"


@dataclass(frozen=True)
class Bernoulli(Compressor):
    """Independent Bernoulli sparsification: keep coordinate i with probability ``p``, scale ``1/p``."""

    p: float
    name = "bernoulli"

    def __post_init__(self):
        if not (0 < self.p <= 1):
            raise ValueError("Bernoulli sparsification needs 0 < p <= 1")

    def q(self, d):
        return 1.0 / self.p - 1.0

    def apply(self, X, U):
        return np.where(U < self.p, X / self.p, 0.0)

    def variance(self, X):
        return self.q(X.shape[-1]) * np.einsum("...i,...i->...", X, X)

    def spec(self):
        return {"name": self.name, "p": self.p}

    def label(self, d):
        return f"Bernoulli(p={self.p:g})"


@dataclass(frozen=True)
class RandomQuantization(Compressor):
    """Unbiased random quantization with ``s`` levels per sign (QSGD)."""

    s: int
    name = "random_quantization"

    def __post_init__(self):
        if self.s < 1:
            raise ValueError("random quantization needs s >= 1 levels")

    def q(self, d):
        return min(d / self.s ** 2, math.sqrt(d) / self.s)

    def _levels(self, X):
        norm = np.sqrt(np.einsum("...i,...i->...", X, X))[..., None]
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(norm > 0, self.s * np.abs(X) / norm, 0.0)
        lo = np.floor(r)
        return norm, r, lo, r - lo

    def apply(self, X, U):
        norm, r, lo, frac = self._levels(X)
        xi = lo + (U < frac)
        return norm * np.sign(X) * xi / self.s

    def variance(self, X):
        norm, r, lo, frac = self._levels(X)
        return (norm[..., 0] ** 2 / self.s ** 2) * (frac * (1 - frac)).sum(-1)

    def spec(self):
        return {"name": self.name, "s": self.s}

    def label(self, d):
        return f"QSGD(s={self.s})"


def make_compressor(spec) -> Compressor:
    """A compressor from ``None`` / ``"none"``, a :class:`Compressor`, or a spec dict."""
    if spec is None or spec == "none":
        return Identity()
    if isinstance(spec, Compressor):
        return spec
    spec = dict(spec)
    name = spec.pop("name")
    cls = {"identity": Identity, "rand_k": RandK, "bernoulli": Bernoulli, "random_quantization": RandomQuantization}
    if name not in cls:
        raise ValueError(f"unknown compressor {name!r}; expected one of {sorted(cls)}")
    return cls[name](**spec)


class UniformStream:
    """Per-row reproducible uniforms for a batch of ``B`` independent runs.

    Row ``b`` draws from ``instance_rng(seeds[b], key)`` (a SeedSequence stream), so a
    run's randomness depends only on its own seed and key, not on the rest of the
    batch.  Uniforms of shape ``shape`` are produced ``chunk`` rounds at a time (the
    loop over rows happens once per chunk, not once per round)."""

    def __init__(self, seeds: Sequence[int], key: str, shape: tuple, chunk: int = 64):
        self.gens = [instance_rng(int(s), key) for s in seeds]
        self.shape, self.chunk = tuple(shape), int(chunk)
        self._buf, self._pos = None, self.chunk

    def next(self) -> np.ndarray:
        if self._pos >= self.chunk:
            self._buf = np.stack([g.random((self.chunk,) + self.shape) for g in self.gens], axis=1)
            self._pos = 0
        out = self._buf[self._pos]
        self._pos += 1
        return out
