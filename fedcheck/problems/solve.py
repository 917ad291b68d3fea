"""Exact optima with cvxpy (Clarabel), certified and cached.

:func:`solve_consensus` solves the consensus reformulation (3) of the FedFW paper,

    min_{X, z}  (1/n) sum_i f_i(x_i)   s.t.  x_i = z  (dual y_i),  x_i in D,

(with client weights ``p_i`` -- :attr:`Instance.weights` -- the objective is ``sum_i p_i f_i(x_i)``, the duals
``y_i = grad F(x*)/n - p_i grad f_i(x*)`` and the residual is taken for ``p_i f_i + <y_i, .>``),

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

import functools
import hashlib
import json
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from fedcheck.problems.instances import Instance
from fedcheck.core.cache import cache_dir  # one definition: ``fedcheck cache info`` uses it too
from fedcheck.core.results import atomic_write

__all__ = ["Solution", "SolutionCache", "SolutionWarning", "solve_consensus", "verify_consensus", "solve_all", "cache_dir", "CACHE_STATS",
           "FORMULATION_VERSION"]

FORMULATION_VERSION = "consensus-v2"
ACCURATE = "optimal"
CACHE_STATS = {"hits": 0, "misses": 0}


_FIELD_ALIASES = {"phi_star": "F_star", "phi_lower": "F_lower", "f_star": "F_star", "f_lower": "F_lower",
                  "w_star": "x_star"}


class SolutionWarning(UserWarning):
    """A cached solution failed its re-verification (it is solved again)."""


@dataclass
class Solution:
    """The exact solution of one problem, whatever its kind (one type for the whole library).

    ``F_star`` is the objective at the certified point (an upper bound on the optimum) and ``F_lower`` a
    certified lower bound, so the optimum lies in ``[F_lower, F_star]`` (``gap`` wide).  ``duals`` holds the
    dual variables a bound needs (``"Y"``: the consensus duals ``Y*``; ``"lam"``: a constraint's multiplier),
    ``info`` the scalars computed with the solution (``Y_norm``, ``dual_residual``, ``D``, ``dist_bound``,
    ``g_star``...); both are also readable as attributes (``sol.Y_norm``).  ``status`` is the solver's;
    ``certified`` says whether the lower bound comes from a certificate that does not trust the solver."""

    F_star: float
    F_lower: float
    x_star: np.ndarray
    status: str
    solver: str = "CLARABEL"
    solver_version: str = ""
    solve_time: float = 0.0
    certified: bool = True
    duals: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    cached: bool = False
    notes: list = field(default_factory=list)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        d = self.__dict__
        if name in _FIELD_ALIASES:      # the names the papers use for the optimum (Phi*, f*) and the point (w*)
            return d[_FIELD_ALIASES[name]]
        key = {"Y_star": "Y"}.get(name, name)
        for store in ("duals", "info"):
            if key in d.get(store, {}):
                return d[store][key]
        raise AttributeError(f"Solution has no {name!r} (info: {sorted(d.get('info', {}))}, "
                             f"duals: {sorted(d.get('duals', {}))})")

    @property
    def gap(self) -> float:
        return float(self.F_star - self.F_lower)

    @property
    def accurate(self) -> bool:
        return self.reason is None

    @property
    def reason(self) -> str | None:
        if self.status != ACCURATE:
            return f"solver {self.solver} returned status {self.status!r}, not {ACCURATE!r}"
        # an uncertified solution (the solver's polished point, no lower bound) has F_lower and its info NaN
        vals = [self.F_star] + ([self.F_lower] + [v for v in self.info.values() if isinstance(v, (int, float))]
                                if self.certified else [])
        if not np.all(np.isfinite(np.asarray(vals, dtype=float))):
            return "the exact solve produced a NaN or infinite value"
        return None

    def record(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("x_star", "duals", "info")}
        d.update({k: v for k, v in self.info.items()})
        d["gap"] = self.gap
        d["x_star"] = np.asarray(self.x_star).tolist()
        return d


class SolutionCache:
    """The one on-disk cache of exact solutions (``$FEDCHECK_CACHE``; ``off`` disables).

    An entry is read back only after it passes ``verify(solution) -> problem or None``, a re-computation of
    what is cheap (the objective at the stored point, its certificate, the duals' residual, shapes): a mismatch,
    a NaN, a wrong type or an unreadable file is reported as a :class:`SolutionWarning` and the problem is solved
    again.  A cache entry never crashes a run and is never trusted as it is."""

    def __init__(self, namespace: str):
        self.namespace = namespace

    FORMAT = "s2"     # the entry layout (Solution with duals and info); older entries are simply not read

    def _paths(self, key: str):
        d = cache_dir()
        return None if d is None else (d / f"{self.FORMAT}-{key}.json", d / f"{self.FORMAT}-{key}.npz")

    def load(self, key: str, verify) -> "Solution | None":
        import warnings
        paths = self._paths(key)
        if paths is None or not (paths[0].exists() and paths[1].exists()):
            return None
        try:
            meta = json.loads(paths[0].read_text())
            with np.load(paths[1], allow_pickle=False) as z:
                arrays = {k: np.array(z[k]) for k in z.files}
            x = arrays.pop("x_star")
            duals = {k[len("dual_"):]: v for k, v in arrays.items() if k.startswith("dual_")}
            duals.update(meta.pop("scalar_duals", {}))
            for k in ("cached", "gap"):
                meta.pop(k, None)
            sol = Solution(x_star=x, duals=duals, cached=True, **meta)
            problem = verify(sol)
        except Exception as e:   # an unreadable or ill-typed entry: solve again
            problem = f"unreadable entry ({type(e).__name__}: {e})"
        if problem:
            CACHE_STATS["rejected"] = CACHE_STATS.get("rejected", 0) + 1
            warnings.warn(f"cached solution {key[:12]} ({self.namespace}) failed re-verification: {problem}; "
                          "solving again", SolutionWarning, stacklevel=3)
            return None
        return sol

    def store(self, key: str, sol: "Solution") -> None:
        paths = self._paths(key)
        if paths is None or not sol.accurate:
            return
        try:
            paths[0].parent.mkdir(parents=True, exist_ok=True)
            arr = {f"dual_{k}": np.asarray(v) for k, v in sol.duals.items() if np.ndim(v) > 0}
            scal = {k: float(v) for k, v in sol.duals.items() if np.ndim(v) == 0}
            meta = {k: v for k, v in asdict(sol).items() if k not in ("x_star", "duals", "cached")}
            meta["scalar_duals"] = scal
            atomic_write(paths[1], lambda fh: np.savez(fh, x_star=np.asarray(sol.x_star), **arr))
            atomic_write(paths[0], lambda fh: fh.write(json.dumps(meta, default=float).encode()))
        except OSError:
            pass  # a read-only cache is not an error


def solve_all(solve, insts, use_cache: bool = True, progress: bool = False, desc: str = "solving") -> list:
    """``[solve(inst, use_cache=use_cache) for inst in insts]`` with a status line "solving k/N" (the one
    progress display, :mod:`fedcheck.core.progress`; off with ``--quiet`` or when stderr is not a terminal)."""
    from fedcheck.core import progress as _progress
    out = []
    with _progress.task(desc, total=len(insts), unit="solve", enabled=progress) as bar:
        for inst in insts:
            out.append(solve(inst, use_cache=use_cache))
            bar.update()
    return out


def close(a: float, b: float, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    return bool(np.isfinite(a) and np.isfinite(b) and abs(a - b) <= atol + rtol * max(abs(a), abs(b)))


@functools.lru_cache(maxsize=None)
def _versions() -> str:
    """cvxpy's and Clarabel's versions (part of every solve cache key, here and in :mod:`.constrained` and
    :mod:`.composite`): read from the installed distributions, the same strings as their ``__version__``, without
    importing cvxpy (~1.3 s per process; a run whose solves all come from the cache never needs it)."""
    from importlib import metadata
    try:
        return f"cvxpy={metadata.version('cvxpy')};clarabel={metadata.version('clarabel')}"
    except metadata.PackageNotFoundError:      # pragma: no cover - not installed as distributions
        import clarabel
        import cvxpy
        return f"cvxpy={cvxpy.__version__};clarabel={getattr(clarabel, '__version__', '?')}"


def solver_versions() -> str:
    """cvxpy's and Clarabel's versions as they enter every solve cache key: an exact solver of one's own (a paper's)
    keys its :class:`SolutionCache` with them too, so an upgrade of either invalidates its entries."""
    return _versions()


def _key(inst: Instance) -> str:
    return hashlib.sha256(f"{inst.content_hash()}|{FORMULATION_VERSION}|{_versions()}".encode()).hexdigest()


CACHE = SolutionCache(FORMULATION_VERSION)


def verify_consensus(inst: Instance, sol: Solution) -> str | None:
    """Re-verify a stored consensus solution without trusting it: shapes, status, the point in ``D``, ``F`` at
    the point, the Frank-Wolfe certificate of ``F_lower``, ``||Y*||_F`` and the duals' residual."""
    x, Y = np.asarray(sol.x_star, dtype=float), np.asarray(sol.duals.get("Y"), dtype=float)
    if x.shape != (inst.p,) or Y.shape != (inst.n, inst.p):
        return f"shapes x {x.shape}, Y {Y.shape} for an instance with n={inst.n}, p={inst.p}"
    if sol.reason:
        return sol.reason
    if not bool(np.all(inst.set.contains(x, 1e-9 * max(1.0, float(np.max(inst.set.radius)))))):
        return "the stored point is not in the set"
    loss = inst.make_loss()
    F = float(loss.full_value(x))
    if not close(F, sol.F_star):
        return f"F at the stored point is {F:.17g}, the entry says {sol.F_star:.17g}"
    gap = _fw_gap(loss, inst.set, x)
    floor = 64 * np.finfo(float).eps * max(1.0, abs(F))      # the rounding slack of the verdict policy
    if not (gap <= sol.gap * (1 + 1e-9) + floor and close(sol.F_star - sol.F_lower, sol.gap)):
        return f"the Frank-Wolfe gap at the stored point is {gap:.3g}, above the stored accuracy {sol.gap:.3g}"
    if not close(float(np.linalg.norm(Y)), float(sol.info.get("Y_norm", np.nan))):
        return "||Y*||_F does not match the stored duals"
    res = _dual_residual(loss, inst, x, Y)
    if not (res <= float(sol.info.get("dual_residual", np.nan)) * (1 + 1e-6) + 1e-12):
        return f"the duals' residual is {res:.3g}, above the stored {sol.info.get('dual_residual')}"
    return None


def _load_cached(key: str, inst: Instance | None = None) -> Solution | None:
    return CACHE.load(key, (lambda s: verify_consensus(inst, s)) if inst is not None else (lambda s: s.reason))


def _store(key: str, sol: Solution) -> None:
    CACHE.store(key, sol)


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
    if getattr(inst, "weights", None) is not None:     # F = sum_k p_k f_k
        return cp.hstack([loss.cvx(None, i, X[i]) for i in range(n)]) @ inst.weights
    return cp.sum(cp.hstack([loss.cvx(None, i, X[i]) for i in range(n)])) / n


def _reduced_objective(inst: Instance, loss, x):
    """cvxpy expression of ``F(x) = (1/n) sum_i f_i(x)`` at one point ``x``."""
    import cvxpy as cp
    n, m, p = inst.A.shape
    w = getattr(inst, "weights", None)
    if inst.loss == "least_squares" and w is not None:   # sum_k p_k ||A_k x - b_k||^2: the rows scaled by sqrt(p_k)
        s = np.sqrt(w)
        R, q, rho = type(loss)(s[:, None, None] * inst.A, s[:, None] * inst.b)._stacked_qr()
        return (cp.sum_squares(R @ x - q) + float(rho)) / (2 * m)
    if inst.loss == "least_squares":  # sum_i ||A_i x - b_i||^2 = ||R x - q||^2 + rho (QR of the stacked rows)
        R, q, rho = loss._stacked_qr()
        return (cp.sum_squares(R @ x - q) + float(rho)) / (2 * m * n)
    if w is not None:
        return cp.hstack([loss.cvx(None, i, x) for i in range(n)]) @ w
    return cp.sum(cp.hstack([loss.cvx(None, i, x) for i in range(n)])) / n


def solve_consensus(inst: Instance, use_cache: bool = True) -> Solution:
    """Exact ``F*``, ``x*`` and consensus duals ``Y*`` of one instance (see module doc)."""
    key = _key(inst)
    if use_cache:
        hit = _load_cached(key, inst)
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
        return Solution(nan, nan, np.full(p, np.nan), status, "CLARABEL", _versions(), elapsed,
                        duals={"Y": np.full((n, p), np.nan)}, info={"Y_norm": nan, "dual_residual": nan}, notes=notes)
    Y = None if reduced else np.stack([np.asarray(c.dual_value) for c in consensus])
    sol = certify(inst, np.asarray(z.value), Y)
    sol.status, sol.solve_time, sol.notes = status, elapsed, notes
    if use_cache and sol.accurate:
        _store(key, sol)
    return sol


def _fw_gap(loss, S, x) -> float:
    g = loss.full_grad(x)
    if getattr(S, "name", "") == "rp":      # R^p has no FW gap: F(x) - F* <= ||grad F||^2 / (2 mu_F) for a quadratic
        H = getattr(loss, "H", None)
        mu = float(np.linalg.eigvalsh(loss.client_average(np.asarray(H).reshape(-1, x.size, x.size), -3))[0]) \
            if H is not None else 0.0
        nrm2 = float(g @ g)
        return nrm2 / (2 * mu) if mu > 0 else (0.0 if nrm2 == 0 else float("inf"))
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
    if Y is None and loss.weights is not None:    # client weights: p_i grad f_i(x) + y_i = grad F(x) / n
        Gx = loss.grad(np.broadcast_to(x_hat, (inst.n, inst.p)))
        Y = loss.client_average(Gx, -2) / inst.n - loss.weights[:, None] * Gx
    elif Y is None:
        Gx = loss.grad(np.broadcast_to(x_hat, (inst.n, inst.p)))
        Y = (Gx.mean(0) - Gx) / inst.n
    # Dual residual under the Lagrangian F^(X) + <Y, X - R> of (32): x_hat must minimize
    # (1/n) f_i + <y_i, .> over D for every i, and sum_i y_i = 0.  cvxpy's sign convention for
    # the dual of ``x_i == z`` is the opposite one, so both are tried and the better is kept.
    best = min(((_dual_residual(loss, inst, x_hat, sign * Y), sign * Y) for sign in (1.0, -1.0)),
               key=lambda r: r[0])
    return Solution(F_star=F_hat, F_lower=F_hat - gap, x_star=x_hat, status=ACCURATE, solver="CLARABEL",
                    solver_version=_versions(), duals={"Y": best[1]},
                    info={"Y_norm": float(np.linalg.norm(best[1])), "dual_residual": float(best[0])})


def _dual_residual(loss, inst: Instance, x: np.ndarray, Y: np.ndarray) -> float:
    """``max_i`` FW gap of ``x`` for the client Lagrangian ``(1/n) f_i + <y_i, .>`` over ``D``, and ``||sum_i y_i||``."""
    S = inst.set
    if loss.weights is not None:       # the client Lagrangian p_i f_i + <y_i, .>
        Li = loss.weights[:, None] * loss.grad(np.broadcast_to(x, (inst.n, inst.p))) + Y
    else:
        Li = loss.grad(np.broadcast_to(x, (inst.n, inst.p))) / inst.n + Y
    if getattr(S, "name", "") == "rp":     # R^p: stationarity of every client Lagrangian, ||grad|| = 0
        res = float(np.linalg.norm(Li, axis=-1).max())
    else:
        res = float(np.maximum(np.einsum("ip,ip->i", Li, x - S.lmo(Li)), 0.0).max())
    return max(res, float(np.linalg.norm(Y.sum(0))))
