"""Constants of non-convex federated problems, as certified intervals.

Non-convex bounds (FedFW's Theorem 2, a user's gap bound) need, instead of an exact optimum, ``E`` of (51)
(``F(x^1) - (1/n) sum_i min_D f_i``) and ``G = sup_{X in D^n} ||grad F^(X)||_F``.  Neither is computable
in general; :func:`nonconvex_constants` brackets them in :class:`Interval` s that are certified (exact by
vertex enumeration where the extremum is at a vertex of the set, or by a convex/concave split), and
:data:`fedcheck.problems.constants.GENERIC` reads them as ``E_init`` and ``G_nc`` (the upper end of each
interval, marked inexact when the interval has width).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fedcheck.problems.suprema import sup_grad_norm_sq
from fedcheck.problems.instances import Instance, instance_rng, memoized_by_content
from fedcheck.problems.losses import SignedQuadratic, Sigmoid
from fedcheck.problems.sets import Box, L1Ball
from fedcheck.problems.solve import Solution

__all__ = ["Interval", "nonconvex_constants", "nonconvex_solver", "is_nonconvex_solution"]


class Interval(NamedTuple):
    """A constant known to lie in ``[lo, hi]`` (``lo == hi``: exact).  A named tuple, so that it is stored
    as it is in :attr:`fedcheck.problems.solve.Solution.info` (and written as ``[lo, hi, note]``)."""

    lo: float
    hi: float
    note: str = ""

    @classmethod
    def exact(cls, v: float, note: str = "") -> "Interval":
        return cls(float(v), float(v), note)

    @property
    def is_exact(self) -> bool:
        return self.lo == self.hi

    @property
    def mid(self) -> float:
        return 0.5 * (self.lo + self.hi)

    def record(self) -> dict:
        return {"value": self.hi, "lo": self.lo, "hi": self.hi, "exact": self.is_exact, "note": self.note}


# =============================================================================================
# constants of the non-convex families, as certified intervals
def _vertices(S) -> np.ndarray | None:
    """The vertices of a polytope set (l1 ball: 2p; box up to dimension 16), else None."""
    r, p = float(S.radius), S.dim
    if isinstance(S, L1Ball):
        return np.concatenate([r * np.eye(p), -r * np.eye(p)])
    if isinstance(S, Box) and p <= 16:
        return r * (1 - 2 * ((np.arange(2 ** p)[:, None] >> np.arange(p)) & 1)).astype(float)
    return None


def _local_min(loss, S, x0: np.ndarray, iters: int = 400) -> np.ndarray:
    """Projected gradient from ``x0`` (per client, batched): an upper bound on ``min_D f_i`` by evaluation."""
    L = np.asarray(loss.smoothness(), dtype=float)[:, None]
    x = x0.copy()
    for _ in range(iters):
        x = S.project(x - loss.grad(x) / np.maximum(L, 1e-12))
    return x


def _local_values(loss, S, starts: list) -> list:
    """``loss.value`` at :func:`_local_min` from each start (``(n, p)`` each): all starts in one batch (one Python
    loop of ``iters`` steps instead of one per start, ~3-4x faster), which gives the same bits as one start at a time
    (each row goes through the same ``matmul`` / ``einsum`` kernels and row-wise projections:
    ``tests/test_nonconvex_batch.py``); checked here on the first start, else one start at a time."""
    if len(starts) > 1 and isinstance(loss, (SignedQuadratic, Sigmoid)):
        X = _local_min(loss, S, np.stack(starts))
        vals = loss.value(X)
        x0 = _local_min(loss, S, starts[0])
        if np.array_equal(X[0], x0) and np.array_equal(vals[0], loss.value(x0)):
            return list(vals)
    return [loss.value(_local_min(loss, S, x0)) for x0 in starts]


def _min_f_interval(inst: Instance) -> tuple[np.ndarray, np.ndarray, str]:
    """Per client ``[lo, hi]`` with ``lo <= min_{x in D} f_i(x) <= hi``."""
    loss, S = inst.make_loss(), inst.set
    n, p = inst.n, inst.p
    V_ = _vertices(S)
    rng = instance_rng(0 if inst.seed is None else inst.seed, "fedfw:min-f")
    starts = [np.zeros((n, p))] + [S.project(rng.standard_normal((n, p))) for _ in range(3)]
    if V_ is not None:
        starts += [np.broadcast_to(v, (n, p)).copy() for v in V_[:: max(1, len(V_) // 8)]]
    hi = np.full(n, np.inf)
    for v in _local_values(loss, S, starts):
        hi = np.minimum(hi, v)
    if V_ is not None:
        hi = np.minimum(hi, loss.value(np.broadcast_to(V_[:, None, :], (len(V_), n, p))).min(0))
    if isinstance(loss, SignedQuadratic):
        lo = np.empty(n)
        for i in range(n):
            H = loss.H[i]
            if np.all(inst.b[i] <= 0) and V_ is not None:      # concave: the minimum is at a vertex
                lo[i] = loss.value(np.broadcast_to(V_[:, None, :], (len(V_), n, p)))[:, i].min()
            elif np.all(inst.b[i] >= 0):                        # convex: certified by the FW gap
                x = _local_min(loss, S, np.zeros((n, p)), iters=3000)[i]
                g = loss.grad(np.broadcast_to(x, (n, p)))[i]
                gap = max(float(g @ (x - S.lmo(g))), 0.0)
                fx = float(loss.value(np.broadcast_to(x, (n, p)))[i])
                hi[i] = min(hi[i], fx)
                lo[i] = fx - gap
            else:                                               # indefinite: convex + concave parts
                w, Q = np.linalg.eigh(H)
                c0 = 0.5 * float(np.sum(inst.b[i])) / inst.m
                neg = (Q * np.minimum(w, 0)) @ Q.T
                rmax = float(np.max(np.linalg.norm(V_, axis=1))) if V_ is not None else float(S.radius)
                lo[i] = c0 + 0.5 * float(np.min(np.linalg.eigvalsh(neg))) * rmax ** 2 - float(S.support(loss.c[i]))
        return lo, hi, "convex clients: projected gradient with its FW-gap certificate; concave clients: vertex enumeration"
    if isinstance(loss, Sigmoid):
        # each term sigma(-z_j) >= sigma(-max_D z_j), max_D b_j a_j^T x = support_D(b_j a_j)
        sup = S.support(loss.BA.reshape(-1, p)).reshape(n, inst.m)
        lo = (1.0 / (1.0 + np.exp(sup))).mean(-1)
        return lo, hi, "lower: sum of per-term minima sigma(-support_D(b_j a_j)); upper: best of local searches"
    raise ValueError(f"no bound on min f_i for the {inst.loss} loss")


def _sup_grad_sq_interval(inst: Instance) -> tuple[np.ndarray, np.ndarray, str]:
    """Per client ``[lo, hi]`` of ``sup_{x in D} ||grad f_i(x)||^2``."""
    loss, S = inst.make_loss(), inst.set
    n, p = inst.n, inst.p
    V_ = _vertices(S)
    if isinstance(loss, SignedQuadratic) and V_ is not None:
        G = np.einsum("ipq,vq->ivp", loss.H, V_) - loss.c[:, None, :]
        s = (G ** 2).sum(-1).max(-1)
        return s, s, "exact: ||H_i x - c_i||^2 is convex, its maximum over the polytope is at a vertex"
    if isinstance(loss, Sigmoid):
        # grad f_i = -(1/m) sum_j w_j b_j a_j with w_j = s(1-s) in (0, 1/4]: max over w in [0, 1/4]^m is at a vertex
        m = inst.m
        combos = ((np.arange(2 ** m)[:, None] >> np.arange(m)) & 1).astype(float)
        ub = np.array([np.max(np.sum((combos @ loss.BA[i]) ** 2, -1)) for i in range(n)]) / (4 * m) ** 2
        rng = instance_rng(0 if inst.seed is None else inst.seed, "fedfw:sup-grad")
        pts = S.project(rng.standard_normal((256, p)) * float(S.radius))
        pts = np.concatenate([pts, S.lmo(rng.standard_normal((256, p)))])
        g = loss.grad(np.broadcast_to(pts[:, None, :], (len(pts), n, p)))
        lb = (g ** 2).sum(-1).max(0)
        return lb, ub, "upper: max over w in {0, 1/4}^m of ||(1/m) sum_j w_j b_j a_j||^2; lower: sampled points"
    s, exact, how = sup_grad_norm_sq(loss, S)
    return (s if exact else np.zeros(n)), s, how


def nonconvex_constants(inst: Instance) -> Solution:
    """E of (51) (start X^1 = x0 1^T, all clients equal) and G = sup_{X in D^n} ||grad F^(X)||_F: what the
    non-convex checks need instead of an exact optimum, as the one :class:`~fedcheck.problems.solve.Solution`
    with ``info["E"]``, ``info["G"]`` (:class:`Interval` s, read as ``sol.E``, ``sol.G``) and ``info["min_f"]``
    (per-client lower and upper bounds on ``min_D f_i``).  ``F_star = F(x^1)`` and
    ``F_lower = (1/n) sum_i (lower bound on min_D f_i)`` bracket ``min_D F`` (both certified)."""
    loss = inst.make_loss()
    x1 = np.zeros(inst.p) if inst.x0 is None else inst.x0
    F1 = float(loss.value(np.broadcast_to(x1, (inst.n, inst.p))).mean())
    mlo, mhi, how = _min_f_interval(inst)
    E = Interval(F1 - float(mhi.mean()), F1 - float(mlo.mean()), "E = F(x^1) - (1/n) sum_i min_D f_i; " + how)
    glo, ghi, ghow = _sup_grad_sq_interval(inst)
    G = Interval(float(np.sqrt(glo.sum()) / inst.n), float(np.sqrt(ghi.sum()) / inst.n),
                 "sup_{X in D^n} ||grad F^(X)||_F = (1/n)(sum_i sup_x ||grad f_i||^2)^(1/2); " + ghow)
    return Solution(F_star=F1, F_lower=float(mlo.mean()), x_star=np.asarray(x1, dtype=float), status="optimal",
                    solver="fedcheck.problems.nonconvex.nonconvex_constants", solver_version="", certified=True,
                    info={"E": E, "G": G, "min_f": (mlo, mhi)},
                    notes=["non-convex: no optimum; F_star = F(x^1), F_lower = mean_i lower bound on min_D f_i"])


def is_nonconvex_solution(sol) -> bool:
    return isinstance(getattr(sol, "info", None), dict) and isinstance(sol.info.get("E"), Interval)


nonconvex_solver = memoized_by_content(
    nonconvex_constants, "nonconvex_solver",
    "The ``solver`` of the non-convex checks: :func:`nonconvex_constants`, memoized per process by content.")
