"""The FedDualAvg paper's families of composite problems (note Sec. 6.1) and the families its claims draw from.

F1 (:class:`SharedQuadraticFamily`): a shared Hessian with an l1, nuclear-norm or ball regularizer; F2
(:class:`ConstrainedQuadraticFamily`): an l2- or l1-ball constraint with the optimum on the boundary.  Both draw
:class:`fedcheck.problems.QuadInstance` problems (the generic composite problem of the library), seeded with
:func:`fedcheck.problems.instance_rng` under the family's key.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedcheck.problems import L1, L1BallIndicator, L2BallIndicator, Nuclear, QuadInstance, Regularizer, Zero, instance_rng


@dataclass(frozen=True)
class SharedQuadraticFamily:
    """F1 (note Sec. 6.1): shared Hessian ``Q = A^T A / n_A + mu I``, ``F_m = 1/2 w^T Q w + c_m^T w`` with
    ``c_m = c_0 + tau N(0, I)``, Gaussian noise ``N(0, s^2 I)``, ``psi`` = ``l1`` (``lam``), ``nuclear``
    (``lam``, a ``p x p`` matrix with ``d = p^2``) or ``l2ball`` / ``l1ball`` (``radius``).  In the Q geometry of
    Assumption 2 every constant of Theorem 4.3 / D.1 is exact."""

    d: int = 8
    M: int = 4
    K: int = 5
    mu: float = 0.1
    tau: float = 0.5
    noise: float = 0.3
    reg: str = "l1"
    lam: float = 0.1
    radius: float = 1.0
    geometry: str = "Q"
    scale_c: float = 1.0

    @property
    def key(self) -> str:
        return ("feddualavg:F1:" + ":".join(f"{k}={getattr(self, k)}" for k in
                ("d", "M", "K", "mu", "tau", "noise", "reg", "lam", "radius", "geometry", "scale_c")))

    def draw(self, seed: int) -> QuadInstance:
        rng = instance_rng(seed, self.key)
        d = self.d
        A = rng.standard_normal((2 * d, d))
        Q = A.T @ A / (2 * d) + self.mu * np.eye(d)
        c0 = self.scale_c * rng.standard_normal(d)
        c = c0 + self.tau * rng.standard_normal((self.M, d))
        reg = _make_reg(self.reg, d, self.lam, self.radius)
        return QuadInstance(Q=Q, c=c, reg=reg, K=self.K, noise="gaussian" if self.noise > 0 else "none",
                            noise_scale=float(self.noise), geometry=self.geometry, seed=int(seed), source=self.key,
                            params={k: getattr(self, k) for k in ("d", "M", "K", "mu", "tau", "noise", "reg", "lam",
                                                                   "radius", "geometry")})


@dataclass(frozen=True)
class ConstrainedQuadraticFamily:
    """F2 (note Sec. 6.1): ``psi = chi_C`` with ``C`` an l2 or l1 ball, client Hessians
    ``Q_m = A_m^T A_m / n_A + mu I`` (different per client), ``c_m = c_0 + tau N(0, I)`` with ``c_0`` scaled so
    that the unconstrained optimum lies ``outside`` times the radius away (optimum on the boundary), noise
    uniform on the sphere of radius ``s`` (Assumption 3 needs bounded gradients: ``sigma = s`` and
    ``G = max_m sup_C ||Q_m w + c_m|| + s``, both exact)."""

    d: int = 6
    M: int = 4
    K: int = 5
    mu: float = 0.2
    tau: float = 0.5
    noise: float = 0.3
    ball: str = "l2ball"
    radius: float = 1.0
    outside: float = 2.0

    @property
    def key(self) -> str:
        return ("feddualavg:F2:" + ":".join(f"{k}={getattr(self, k)}" for k in
                ("d", "M", "K", "mu", "tau", "noise", "ball", "radius", "outside")))

    def draw(self, seed: int) -> QuadInstance:
        rng = instance_rng(seed, self.key)
        d, M = self.d, self.M
        A = rng.standard_normal((M, 2 * d, d))
        Q = np.einsum("mki,mkj->mij", A, A) / (2 * d) + self.mu * np.eye(d)
        u = rng.standard_normal(d)
        Qbar = Q.mean(0)
        # unconstrained minimizer -Qbar^-1 c0 at `outside * radius` (in the ball's own norm)
        target = u / (np.abs(u).sum() if self.ball == "l1ball" else np.linalg.norm(u)) * self.outside * self.radius
        c0 = -Qbar @ target
        c = c0 + self.tau * rng.standard_normal((M, d))
        reg = _make_reg(self.ball, d, 0.0, self.radius)
        return QuadInstance(Q=Q, c=c, reg=reg, K=self.K, noise="sphere" if self.noise > 0 else "none",
                            noise_scale=float(self.noise), geometry="euclidean", seed=int(seed), source=self.key,
                            params={k: getattr(self, k) for k in ("d", "M", "K", "mu", "tau", "noise", "ball",
                                                                   "radius", "outside")})


def _make_reg(kind, d, lam, radius) -> Regularizer:
    if kind == "l1":
        return L1(lam, d)
    if kind == "nuclear":
        p = int(round(np.sqrt(d)))
        if p * p != d:
            raise ValueError("the nuclear-norm family needs d = p^2")
        return Nuclear(lam, (p, p))
    if kind == "l2ball":
        return L2BallIndicator(radius, d)
    if kind == "l1ball":
        return L1BallIndicator(radius, d)
    if kind == "zero":
        return Zero(d)
    raise ValueError(f"unknown regularizer kind {kind!r}")


# ---- the families the claims draw from (deterministic variants use noise = 0) -------------------------------
F1_EUCLID = SharedQuadraticFamily(d=6, M=4, K=5, mu=0.1, tau=0.5, noise=0.3, reg="l1", lam=0.2, geometry="euclidean")
F1_Q = SharedQuadraticFamily(d=6, M=4, K=5, mu=0.1, tau=0.5, noise=0.3, reg="l1", lam=0.2, geometry="Q")
F2_L2 = ConstrainedQuadraticFamily(d=6, M=4, K=5, mu=0.2, tau=0.5, noise=0.3, ball="l2ball", radius=1.0)
F1_FEDMID = SharedQuadraticFamily(d=5, M=4, K=5, mu=0.1, tau=0.5, noise=0.0, reg="l1", lam=0.5, geometry="euclidean")
F2_FEDMID = ConstrainedQuadraticFamily(d=5, M=4, K=5, mu=0.2, tau=0.5, noise=0.0, ball="l2ball", radius=1.0)


# ---- vacuity: the largest Phi(w) - Phi* over dom psi (the trivial bound of every objective-gap bound) ---------------
#: why a family with a finite regularizer has no finite trivial bound of Phi - Phi*
UNBOUNDED_DOMAIN = ("no finite trivial bound: dom psi = R^d (psi a finite regularizer, l1 or nuclear norm), where "
                    "Phi(w) - Phi* is unbounded")
GAP_TRIVIAL = "the largest Phi - Phi* on dom psi (||Qbar||_2 r^2/2 + ||cbar||_* r + mean e - Phi_lower, C a ball)"


def objective_gap_trivial(inst, phi_lower: float) -> float:
    """The trivial bound of ``Phi(w) - Phi*`` over ``w`` in ``dom psi`` (every iterate and output of the methods is
    there), certified: for ``psi`` the indicator of an l2 (l1) ball of radius ``r``, ``Phi = F`` on it and ``sup_C F
    <= ||Qbar||_2 r^2/2 + ||cbar||_2 r + mean e`` (``||cbar||_inf r`` for the l1 ball, whose points have ``||w||_2 <=
    r``), minus ``Phi_lower <= Phi*``; ``inf`` where ``psi`` is finite on ``R^d`` (:data:`UNBOUNDED_DOMAIN`)."""
    reg = inst.reg
    if not isinstance(reg, (L2BallIndicator, L1BallIndicator)):
        return float("inf")
    r = float(np.max(reg.radius))
    Qb, cb, eb = inst.quadratic()
    dual = np.linalg.norm(cb) if isinstance(reg, L2BallIndicator) else np.abs(cb).max()
    return float(np.linalg.norm(Qb, 2) * r * r / 2 + dual * r + eb - phi_lower)


def gap_trivial_what(inst) -> str:
    """What :func:`objective_gap_trivial` gives for ``inst``."""
    return GAP_TRIVIAL if isinstance(inst.reg, (L2BallIndicator, L1BallIndicator)) else UNBOUNDED_DOMAIN
