"""Strongly convex least squares with its constants known exactly: every client's Hessian has the spectrum the
family is asked for.

:class:`StronglyConvexFamily` draws ``f_k(x) = ||A_k x - b_k||^2 / (2m)`` on ``R^p`` (or any set of
:data:`~fedcheck.problems.sets.SET_NAMES`) with ``A_k = U_k diag(sqrt(m lam)) V_k^T`` (``U_k`` ``m x p`` and ``V_k``
``p x p`` with orthonormal columns, drawn from Gaussian matrices by QR), so ``H_k = A_k^T A_k / m = V_k diag(lam)
V_k^T``: each client is exactly ``mu``-strongly convex and ``L``-smooth (``lam`` spaced geometrically from ``mu`` to
``L``; with ``p = 1`` the clients' single eigenvalues are so spaced).  The generic constants
(:mod:`fedcheck.problems.constants`: ``mu``, ``L``, ``kappa``, ``mu_F``, ``L_F``, ``Gamma``, ``F_k_star_max``) read
them back from the eigenvalues; ``mu`` and ``L`` equal the family's to rounding::

    from fedcheck.problems import StronglyConvexFamily
    fam = StronglyConvexFamily(n=4, m=8, p=3, mu=0.5, L=4.0, samples=(10, 20, 30, 40))
    inst = fam.draw(0)          # an Instance on R^p, client weights p_k = n_k / N = (0.1, 0.2, 0.3, 0.4)

``samples`` (optional) are the clients' sample counts ``n_k`` (a tuple, or ``"unbalanced"``: drawn per instance,
``n_k = 1 + floor(exp(3 + Z_k))`` with ``Z_k`` standard normal, so they follow ``n``): the instance's client weights are
``p_k = n_k / N`` (``F = sum_k p_k f_k``); each client's loss keeps its ``m`` rows (least squares depends on its
data only through ``H_k`` and ``A_k^T b_k``, which ``m >= p`` rows hold exactly).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedcheck.problems.instances import Instance, instance_rng
from fedcheck.problems.sets import SET_NAMES, make_set

__all__ = ["StronglyConvexFamily", "client_spectra"]


def client_spectra(n: int, p: int, mu: float, L: float) -> np.ndarray:
    """The eigenvalues ``(n, p)`` of the clients' Hessians: ``mu .. L`` geometrically for each client (``p >= 2``),
    or across the clients (``p = 1``)."""
    if p >= 2:
        return np.broadcast_to(np.geomspace(mu, L, p), (n, p)).copy()
    return np.geomspace(mu, L, n)[:, None] if n >= 2 else np.full((1, 1), float(mu))


@dataclass(frozen=True)
class StronglyConvexFamily:
    """Heterogeneous strongly convex least squares whose ``mu`` and ``L`` are the family's (see the module doc).

    ``n`` clients, ``m >= p`` rows each, dimension ``p``; every client's Hessian has eigenvalues from ``mu`` to ``L``;
    client models ``w_k = w_0 + heterogeneity * u_k`` (``u_k`` standard normal / sqrt(p)), labels
    ``b_k = A_k w_k + noise``; ``set``/``radius`` the feasible set (default ``rp``: ``R^p``); ``samples`` the
    clients' sample counts ``n_k`` for the weights ``p_k = n_k / N`` (``None``: ``1/n`` each)."""

    n: int = 4
    m: int = 8
    p: int = 4
    mu: float = 0.5
    L: float = 4.0
    heterogeneity: float = 1.0
    noise: float = 0.1
    set: str = "rp"
    radius: float = math.inf
    samples: tuple | None = None

    def __post_init__(self):
        from fedcheck.core.errors import BadValue
        for name in ("n", "m", "p"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise BadValue(f"StronglyConvexFamily: {name} must be an integer >= 1, not {v!r}")
        if self.m < self.p:
            raise BadValue(f"StronglyConvexFamily: m = {self.m} rows cannot make a p = {self.p} Hessian positive "
                           "definite; give m >= p")
        for name in ("mu", "L", "heterogeneity", "noise"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(float(v)) or v < 0 or (name in ("mu", "L") and v <= 0):
                raise BadValue(f"StronglyConvexFamily: {name} must be a finite number "
                               f"{'> 0' if name in ('mu', 'L') else '>= 0'}, not {v!r}")
        if self.mu > self.L:
            raise BadValue(f"StronglyConvexFamily: mu = {self.mu} must be at most L = {self.L}")
        if not isinstance(self.set, str) or self.set not in SET_NAMES:
            raise BadValue(f"StronglyConvexFamily: unknown set {self.set!r}; expected one of {sorted(SET_NAMES)}")
        if self.set != "rp" and not (isinstance(self.radius, (int, float)) and 0 < self.radius < math.inf):
            raise BadValue(f"StronglyConvexFamily: the {self.set} set needs a finite radius > 0, not {self.radius!r}")
        if self.samples is not None and self.samples != "unbalanced":
            s = self.samples
            if not isinstance(s, tuple) or len(s) != self.n or any(
                    isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1 for c in s):
                raise BadValue(f"StronglyConvexFamily: samples must be a tuple of n = {self.n} integers >= 1 "
                               f"(the clients' sample counts n_k) or 'unbalanced', not {s!r}")

    @property
    def key(self) -> str:
        return (f"strongly-convex:{self.n}x{self.m}x{self.p}:mu={self.mu}:L={self.L}:h={self.heterogeneity}:"
                f"s={self.noise}:{self.set}:{self.radius}")

    def weights(self, rng: np.random.Generator | None = None) -> np.ndarray | None:
        """``p_k = n_k / N`` (``None`` without ``samples``; ``"unbalanced"`` draws the counts from ``rng``)."""
        if self.samples is None:
            return None
        if self.samples == "unbalanced":
            c = 1.0 + np.floor(np.exp(3.0 + rng.standard_normal(self.n)))
        else:
            c = np.asarray(self.samples, dtype=float)
        return c / c.sum()

    def draw(self, seed: int) -> Instance:
        rng = instance_rng(seed, self.key)
        n, m, p = self.n, self.m, self.p
        lam = client_spectra(n, p, float(self.mu), float(self.L))
        U = np.linalg.qr(rng.standard_normal((n, m, p)))[0]
        V = np.linalg.qr(rng.standard_normal((n, p, p)))[0]
        A = np.einsum("kmj,kj,kqj->kmq", U, np.sqrt(m * lam), V)
        W = rng.standard_normal(p) + self.heterogeneity * rng.standard_normal((n, p)) / np.sqrt(p)
        b = np.einsum("kmp,kp->km", A, W) + self.noise * rng.standard_normal((n, m))
        weights = self.weights(rng)
        radius = math.inf if self.set == "rp" else float(self.radius)
        return Instance(A=A, b=b, loss="least_squares", set=make_set(self.set, radius, p), seed=int(seed),
                        source=self.key, weights=weights,
                        params={k: getattr(self, k) for k in ("n", "m", "p", "mu", "L", "heterogeneity", "noise")})
