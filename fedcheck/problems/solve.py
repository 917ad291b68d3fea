"""Exact optima with cvxpy (Clarabel), certified and cached.

:func:`solve_consensus` solves the consensus reformulation (3) of the FedFW paper,

    min_{X, z}  (1/n) sum_i f_i(x_i)   s.t.  x_i = z  (dual y_i),  x_i in D,

and returns ``F*``, ``x*`` and the duals ``Y* = [y_1 .. y_n]`` of the consensus
constraint.

Formulation (``consensus-v2``).  For smooth losses the consensus variable is
eliminated altogether: Clarabel solves ``min_{x in D} F(x)`` in ``p`` variables (least
squares through one QR of the clients' stacked rows: a ``p x p`` least-squares term),
and the consensus duals are formed in closed form at the certified point,

    y_i = (grad F(x*) - grad f_i(x*)) / n,

which satisfy ``sum_i y_i = 0`` and make ``x*`` a minimizer of every client's
Lagrangian ``(1/n) f_i + <y_i, .>`` over ``D`` (its gradient is ``grad F(x*) / n``).
This is the dual an interior-point method returns on the full consensus problem: the
set of dual solutions is symmetric under permuting the clients, and the analytic centre
of a symmetric set is symmetric, i.e. the normal-cone part of ``-grad f_i / n - y_i`` is
split evenly (``benchmarks/solve.py`` compares it with Clarabel's duals of ``consensus-v1``:
equal to solver accuracy).  Non-smooth losses, whose subgradients give no such formula,
keep the consensus problem with one constraint ``x_i = z`` per client and Clarabel's duals.

Every result records the solver, its status and two certificates that do not trust the
solver:

* the Frank-Wolfe gap of ``x_hat`` (the solver's point projected onto ``D``):
  ``F(x_hat) - F* <= gap(x_hat)``, so ``F*`` is known to lie in
  ``[F(x_hat) - gap, F(x_hat)]`` -- this is the *certified accuracy* of ``F*``;
* the dual residual: ``max_i`` of the FW gap of ``x_hat`` for the client Lagrangian
  ``(1/n) f_i + <y_i, .>`` over ``D`` plus ``||sum_i y_i||`` (zero for an exact dual).

Solves are cached on disk by the content of the instance, the formulation and
the solver's version, so a repeated run does not solve again.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from fedcheck.problems.instances import Instance
from fedcheck.core.results import atomic_write

__all__ = ["Solution", "solve_consensus", "cache_dir", "CACHE_STATS", "FORMULATION_VERSION"]

FORMULATION_VERSION = "consensus-v2"
ACCURATE = "optimal"
CACHE_STATS = {"hits": 0, "misses": 0}


def cache_dir() -> Path | None:
    """``$FEDCHECK_CACHE`` (``off`` disables), else ``~/.cache/fedcheck``."""
    env = os.environ.get("FEDCHECK_CACHE")
    if env is not None and env.lower() in ("", "0", "off", "none"):
        return None
    return Path(env) if env else Path.home() / ".cache" / "fedcheck"


@dataclass
class Solution:
    F_star: float
    F_lower: float
    gap: float
    x_star: np.ndarray
    Y_star: np.ndarray
    Y_norm: float
    dual_residual: float
    solver: str
    status: str
    solve_time: float
    solver_version: str
    cached: bool = False
    notes: list = field(default_factory=list)

    @property
    def accurate(self) -> bool:
        return (self.status == ACCURATE and np.isfinite(self.F_star) and np.isfinite(self.gap)
                and np.isfinite(self.Y_norm))

    @property
    def reason(self) -> str | None:
        if self.status != ACCURATE:
            return f"solver {self.solver} returned status {self.status!r}, not {ACCURATE!r}"
        if not (np.isfinite(self.F_star) and np.isfinite(self.gap) and np.isfinite(self.Y_norm)):
            return "the exact solve produced a NaN or infinite value"
        return None

    def record(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("x_star", "Y_star")}
        d["x_star"] = self.x_star.tolist()
        return d


def _versions() -> str:
    import clarabel
    import cvxpy
    return f"cvxpy={cvxpy.__version__};clarabel={getattr(clarabel, '__version__', '?')}"


def _key(inst: Instance) -> str:
    return hashlib.sha256(f"{inst.content_hash()}|{FORMULATION_VERSION}|{_versions()}".encode()).hexdigest()


def _load_cached(key: str) -> Solution | None:
    d = cache_dir()
    if d is None:
        return None
    meta, arrs = d / f"{key}.json", d / f"{key}.npz"
    if not (meta.exists() and arrs.exists()):
        return None
    try:
        m = json.loads(meta.read_text())
        with np.load(arrs, allow_pickle=False) as z:
            x, Y = z["x_star"], z["Y_star"]
        m.pop("cached", None)
        return Solution(x_star=x, Y_star=Y, cached=True, **m)
    except Exception:  # a corrupt cache entry is ignored and rewritten
        return None


def _store(key: str, sol: Solution) -> None:
    d = cache_dir()
    if d is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        meta = {k: v for k, v in asdict(sol).items() if k not in ("x_star", "Y_star", "cached")}
        atomic_write(d / f"{key}.npz", lambda fh: np.savez(fh, x_star=sol.x_star, Y_star=sol.Y_star))
        atomic_write(d / f"{key}.json", lambda fh: fh.write(json.dumps(meta).encode()))
    except OSError:
        pass  # a read-only cache is not an error


def _objective_terms(inst: Instance, X):
    """cvxpy expression of (1/n) sum_i f_i(X[i]), compressed where it is cheaper."""
    import cvxpy as cp
    n, m, p = inst.A.shape
    terms = []
    if inst.loss == "least_squares":
        const = 0.0
        for i in range(n):
            if m > p:  # ||A x - b||^2 = ||R x - Q^T b||^2 + ||b||^2 - ||Q^T b||^2
                Q, R = np.linalg.qr(inst.A[i])
                q = Q.T @ inst.b[i]
                terms.append(cp.sum_squares(R @ X[i] - q))
                const += float(inst.b[i] @ inst.b[i] - q @ q)
            else:
                terms.append(cp.sum_squares(inst.A[i] @ X[i] - inst.b[i]))
        return (cp.sum(cp.hstack(terms)) + const) / (2 * m * n)
    loss = inst.make_loss()
    return cp.sum(cp.hstack([loss.cvx(None, i, X[i]) for i in range(n)])) / n


def _reduced_objective(inst: Instance, loss, x):
    """cvxpy expression of ``F(x) = (1/n) sum_i f_i(x)`` at one point ``x``."""
    import cvxpy as cp
    n, m, p = inst.A.shape
    if inst.loss == "least_squares":  # sum_i ||A_i x - b_i||^2 = ||R x - q||^2 + rho (QR of the stacked rows)
        R, q, rho = loss._stacked_qr()
        return (cp.sum_squares(R @ x - q) + float(rho)) / (2 * m * n)
    return cp.sum(cp.hstack([loss.cvx(None, i, x) for i in range(n)])) / n


def solve_consensus(inst: Instance, use_cache: bool = True) -> Solution:
    """Exact ``F*``, ``x*`` and consensus duals ``Y*`` of one instance (see module doc)."""
    key = _key(inst)
    if use_cache:
        hit = _load_cached(key)
        if hit is not None:
            CACHE_STATS["hits"] += 1
            return hit
    CACHE_STATS["misses"] += 1
    import cvxpy as cp
    n, m, p = inst.A.shape
    loss = inst.make_loss()
    reduced = bool(getattr(loss, "smooth", True))
    if reduced:   # min_{x in D} F(x); Y* in closed form at the certified point
        z = cp.Variable(p)
        prob = cp.Problem(cp.Minimize(_reduced_objective(inst, loss, z)), inst.set.cvx_constraints(z))
        notes = ["consensus-v2: min_{x in D} F(x) in p variables; Y* = (grad F(x*) - grad f_i(x*))/n"]
    else:         # non-smooth: the consensus problem, one constraint x_i = z per client, Clarabel's duals
        X = cp.Variable((n, p))
        z = cp.Variable(p)
        consensus = [X[i] == z for i in range(n)]
        cons = list(consensus)
        for i in range(n):
            cons += inst.set.cvx_constraints(X[i])
        prob = cp.Problem(cp.Minimize(_objective_terms(inst, X)), cons)
        notes = ["consensus problem (non-smooth losses): x_i = z per client; Y* = Clarabel's duals"]
    t0 = time.perf_counter()
    try:
        prob.solve(solver=cp.CLARABEL)
        status = str(prob.status)
    except cp.error.SolverError as e:
        status = "solver_error"
        notes.append(str(e))
    elapsed = time.perf_counter() - t0
    if z.value is None or status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        nan = float("nan")
        sol = Solution(nan, nan, nan, np.full(p, np.nan), np.full((n, p), np.nan), nan, nan,
                       "CLARABEL", status, elapsed, _versions(), notes=notes)
        return sol
    Y = None if reduced else np.stack([np.asarray(c.dual_value) for c in consensus])
    sol = certify(inst, np.asarray(z.value), Y)
    sol.status, sol.solve_time, sol.notes = status, elapsed, notes
    if use_cache and sol.accurate:
        _store(key, sol)
    return sol


def _fw_gap(loss, S, x) -> float:
    g = loss.full_grad(x)
    return max(float(g @ (x - S.lmo(g))), 0.0)


def polish(loss, S, x: np.ndarray, iters: int = 300, target: float = 1e-13) -> tuple[np.ndarray, float]:
    """Projected-gradient polishing (step 1/L) of a feasible point; returns the point with the smallest
    Frank-Wolfe gap seen.  Projection snaps interior-point solutions onto the active faces exactly,
    which tightens the certified accuracy of F* by orders of magnitude."""
    L = float(np.mean(loss.smoothness()))
    best_x, best_gap = x, _fw_gap(loss, S, x)
    if not np.isfinite(L) or L <= 0:
        return best_x, best_gap
    for _ in range(iters):
        if best_gap <= target:
            break
        x = S.project(x - loss.full_grad(x) / L)
        gap = _fw_gap(loss, S, x)
        if gap < best_gap:
            best_x, best_gap = x, gap
    return best_x, best_gap


def certify(inst: Instance, x: np.ndarray, Y: np.ndarray | None = None) -> Solution:
    """Certificates for a candidate primal point ``x`` and consensus duals ``Y`` (``None``: the closed
    form ``y_i = (grad F(x_hat) - grad f_i(x_hat)) / n`` at the polished point, for smooth losses)."""
    loss = inst.make_loss()
    S = inst.set
    x_hat, gap = polish(loss, S, S.project(x))
    F_hat = float(loss.full_value(x_hat))
    if Y is None:
        Gx = loss.grad(np.broadcast_to(x_hat, (inst.n, inst.p)))
        Y = (Gx.mean(0) - Gx) / inst.n
    # Dual residual under the Lagrangian F^(X) + <Y, X - R> of (32): x_hat must minimize
    # (1/n) f_i + <y_i, .> over D for every i, and sum_i y_i = 0.  cvxpy's sign convention for
    # the dual of ``x_i == z`` is the opposite one, so both are tried and the better is kept.
    Gi = loss.grad(np.broadcast_to(x_hat, (inst.n, inst.p))) / inst.n
    best = None
    for sign in (1.0, -1.0):
        Ys = sign * Y
        Li = Gi + Ys
        res = np.maximum(np.einsum("ip,ip->i", Li, x_hat - S.lmo(Li)), 0.0).max()
        res = max(res, float(np.linalg.norm(Ys.sum(0))))
        if best is None or res < best[0]:
            best = (res, Ys)
    return Solution(F_star=F_hat, F_lower=F_hat - gap, gap=gap, x_star=x_hat, Y_star=best[1],
                    Y_norm=float(np.linalg.norm(best[1])), dual_residual=float(best[0]), solver="CLARABEL",
                    status=ACCURATE, solve_time=0.0, solver_version=_versions())
