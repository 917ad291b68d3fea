"""Federated problems with a functional constraint (the problem class of switching subgradient methods such as
:func:`fedcheck.algorithms.fedsgm`).

    minimize  f(w) = (1/n) sum_j f_j(w)   subject to   g(w) = (1/n) sum_j g_j(w) <= 0,   w in R^d,

with convex, G-Lipschitz, possibly non-smooth client functions.  Client functions are losses of
:mod:`fedcheck.problems.losses` batched over ``(B, n)`` (B instances, n clients): ``value(W)`` (B, n), ``grad(W)`` = ``subgrad(W)`` (B, n, d),
``lipschitz()`` (an upper bound on each client's Lipschitz constant, flagged exact where it
is), and ``cvx(k, j, w)``.  No Python loop over clients.

Kinds (:data:`COMPONENTS`, the names used in files and content hashes; :func:`component` builds
one from its file arrays): ``l1_residual`` (:class:`~fedcheck.problems.losses.LAD`) and
``max_affine`` (:class:`~fedcheck.problems.losses.MaxAffine`, file arrays ``C, e`` for
``max_k c_k^T w - e_k``), piecewise linear (LP); ``l2_residual``, ``distance`` (second-order cone);
``logistic`` (:class:`~fedcheck.problems.losses.WeightedLogistic`, Neyman-Pearson losses,
exponential cone); ``huber``; ``affine`` (file arrays ``a, e`` for ``a^T w - e``).

Exact constrained optima: :func:`solve_constrained` (cvxpy + Clarabel, status recorded,
cached on disk in the one :class:`~fedcheck.problems.solve.SolutionCache`, every entry re-verified
by :func:`verify_constrained` when it is read back).  The solver's point is made exactly
feasible by moving it towards a known Slater point, so that ``f(w*)`` of the
returned point is a *certified upper bound* on ``f*``; the lower end of the interval
is the solver's duality-gap stopping criterion.

Instances come from a user's arrays (:class:`ConstrainedInstance` of two :func:`component` s) or a file
(:func:`load_constrained`); the FedSGM paper's random families, experiment and runner live in its folder
(``theorems/fedsgm/problems.py``).
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from fedcheck.core.results import atomic_write
from fedcheck.problems.constants import Value
from fedcheck.problems.solve import Solution, SolutionCache, close, solver_versions
from fedcheck.problems.losses import LAD, Affine, Distance, Huber, L2Residual, Loss, MaxAffine, WeightedLogistic

__all__ = ["component", "component_kind", "component_arrays", "ConstrainedInstance", "ConstrainedBatch",
           "verify_constrained", "solve_constrained", "save_constrained", "load_constrained", "COMPONENTS",
           "CLARABEL_SETTINGS"]

FORMULATION_VERSION = "fedsgm-constrained-v1"   # the solve cache's namespace (unchanged, so cached solves stay valid)
CLARABEL_SETTINGS = {"tol_gap_abs": 1e-8, "tol_gap_rel": 1e-8, "tol_feas": 1e-8}


# ------------------------------------------------------------------------------------------------
# client functions: losses of fedcheck.problems.losses, named in files and content hashes by their kinds
#   kind -> (class, the options the kind fixes), file arrays <- loss arrays where they differ
def _neg(x):
    return 0.0 - np.asarray(x, dtype=float)   # -x exactly, and +0.0 for either zero


COMPONENTS = {
    "l1_residual": (LAD, {"lipschitz_bound": "row_norms", "kernel": "einsum"}),
    "max_affine": (MaxAffine, {"kernel": "einsum"}),
    "l2_residual": (L2Residual, {}),
    "distance": (Distance, {}),
    "logistic": (WeightedLogistic, {}),
    "huber": (Huber, {}),
    "affine": (Affine, {}),
}
# file arrays that differ from the loss's own: max_k (c_k^T w - e_k) and a^T w - e (offsets negated)
_FILE_ARRAYS = {
    "max_affine": (("C", "e"), lambda z: {"A": z["C"], "b": _neg(z["e"])}, lambda l: {"C": l.A, "e": _neg(l.b)}),
    "affine": (("a", "e"), lambda z: {"a": z["a"], "b": _neg(z["e"])}, lambda l: {"a": l.a, "e": _neg(l.b)}),
}
# Lipschitz notes of the kinds (in the files' notation: client j, row i), where they differ from the loss's
_LIP_NOTES = {
    "l1_residual": "upper bound (1/m) sum_i ||a_ji|| (the exact constant is a max over sign patterns)",
    "max_affine": "max_k ||c_jk|| (exact: the longest piece is active far along its own direction)",
}


def component(kind: str, **arrays) -> Loss:
    """The client function of kind ``kind`` (:data:`COMPONENTS`), from the arrays under their file names (batch
    axes ``(B, n)``), with the options the kind fixes."""
    cls, opts = COMPONENTS[kind]
    if kind in _FILE_ARRAYS:
        arrays = _FILE_ARRAYS[kind][1](arrays)
    return cls(**arrays, **opts)


def component_kind(loss: Loss) -> str:
    for kind, (cls, _) in COMPONENTS.items():
        if type(loss) is cls:
            return kind
    raise TypeError(f"{type(loss).__name__} is not a constrained problem's client function "
                    f"(kinds: {sorted(COMPONENTS)})")


def component_arrays(loss: Loss) -> dict:
    """The arrays of ``loss`` under their file names (the order fixes the content hash)."""
    kind = component_kind(loss)
    return _FILE_ARRAYS[kind][2](loss) if kind in _FILE_ARRAYS else dict(loss.arrays)


def _file_keys(kind: str) -> tuple:
    return _FILE_ARRAYS[kind][0] if kind in _FILE_ARRAYS else COMPONENTS[kind][0].keys


# ------------------------------------------------------------------------------------------------
# instances and batches
@dataclass
class ConstrainedInstance:
    """One problem: components ``f`` and ``g`` with a batch axis of length 1, a start ``w0`` and a
    strictly feasible (Slater) point used to certify ``f*`` (``None`` when none is known)."""

    f: Loss
    g: Loss
    w0: np.ndarray
    slater: np.ndarray | None = None
    seed: int | None = None
    source: str = "user"
    params: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.f.n

    @property
    def d(self) -> int:
        return int(self.w0.shape[-1])

    # for code written against fedcheck.instances.Instance
    p = d

    def content_hash(self) -> str:
        h = hashlib.sha256()
        for tag, comp in (("f", self.f), ("g", self.g)):
            h.update(f"{tag}:{component_kind(comp)}".encode())
            for k, v in component_arrays(comp).items():
                a = np.ascontiguousarray(v, dtype=np.float64)
                h.update(f"{k}{a.shape}".encode())
                h.update(a.tobytes())
        h.update(np.ascontiguousarray(self.w0, dtype=np.float64).tobytes())
        return h.hexdigest()

    def describe(self) -> dict:
        return {"source": self.source, "seed": self.seed, "f": component_kind(self.f), "g": component_kind(self.g),
                "n": self.n,
                "d": self.d, "params": self.params, "hash": self.content_hash()[:16]}

    def lipschitz(self) -> tuple[float, bool, str]:
        """``G`` of Assumption 1: the max over the 2n client functions of their Lipschitz constants."""
        lf, ef, nf = self.f.lipschitz()
        lg, eg, ng = self.g.lipschitz()
        nf = _LIP_NOTES.get(component_kind(self.f), nf)
        ng = _LIP_NOTES.get(component_kind(self.g), ng)
        return (float(max(lf.max(), lg.max())), bool(ef and eg),
                f"max_j max(Lip f_j, Lip g_j); f: {nf}; g: {ng}")

    # -- constants of bounds on constrained problems (symbols D_0, G_lip, q_u, E of fedcheck.symbols), read by
    # fedcheck.problems.constants.resolve after the check's parameters
    CONSTANT_NAMES = ("D_0", "G_lip", "q_u", "E")

    def constant_names(self, sol=None) -> tuple:
        return self.CONSTANT_NAMES

    def constant(self, name: str, ctx) -> Value:
        """The constant ``name`` of this instance (``ctx``: :class:`fedcheck.problems.constants.InstanceContext`
        with the :class:`~fedcheck.problems.solve.Solution` of :func:`solve_constrained`); :class:`KeyError` for a name it does not supply."""
        if name == "D_0":
            return Value(float(ctx.solution.D), True, "||w_0 - w*|| with w* the solver's minimizer made exactly "
                                                      "feasible (accurate to the solver's tolerance)")
        if name == "G_lip":
            G, exact, note = self.lipschitz()
            return Value(G, exact, note)
        if name == "q_u":
            from fedcheck.problems.compression import make_compressor
            C = make_compressor(ctx.params.get("compressor"))
            return Value(C.q(self.d), True, f"variance factor of {C.label(self.d)}")
        if name == "E":
            return Value(float(ctx.params.get("E", 1)), True, "local steps per round")
        raise KeyError(name)

    def F(self, w):
        return float(self.f.value(np.broadcast_to(w, (1, self.n, self.d))).mean())

    def Gc(self, w):
        return float(self.g.value(np.broadcast_to(w, (1, self.n, self.d))).mean())

    def save(self, stem) -> list[str]:
        """Write this instance to ``<stem>.npz`` (:func:`save_constrained`); the paths written."""
        return [str(save_constrained(self, str(stem) + ".npz"))]


class ConstrainedBatch:
    """Instances of one shape and kind stacked on a leading axis (rows may repeat an instance)."""

    def __init__(self, instances: Sequence[ConstrainedInstance]):
        if not instances:
            raise ValueError("an empty batch")
        self.instances = list(instances)
        self.f = Loss.stack([i.f for i in instances])
        self.g = Loss.stack([i.g for i in instances])
        self.B, self.n, self.d = len(instances), instances[0].n, instances[0].d
        self.w0 = np.stack([np.asarray(i.w0, dtype=float) for i in instances])

    def full_f(self, w):
        """``f(w)`` for one point per row, ``w`` of shape (B, d)."""
        return self.f.value(np.broadcast_to(w[:, None, :], (self.B, self.n, self.d))).mean(-1)

    def full_g(self, w):
        return self.g.value(np.broadcast_to(w[:, None, :], (self.B, self.n, self.d))).mean(-1)

    def lipschitz(self) -> np.ndarray:
        return np.array([i.lipschitz()[0] for i in self.instances])


# ------------------------------------------------------------------------------------------------
# exact constrained optima
def _cache_key(inst: ConstrainedInstance) -> str:
    return hashlib.sha256(f"{inst.content_hash()}|{FORMULATION_VERSION}|{solver_versions()}|"
                          f"{sorted(CLARABEL_SETTINGS.items())}".encode()).hexdigest()


CACHE = SolutionCache(FORMULATION_VERSION)


def verify_constrained(inst: ConstrainedInstance, sol: Solution) -> str | None:
    """Re-verify a stored constrained solution without trusting it (:class:`SolutionCache`): shapes, status,
    finiteness, ``f`` and ``g`` at the stored point, its feasibility ``g(w*) <= 0`` (the point was made exactly
    feasible before it was stored), ``D = ||w0 - w*||`` and the interval ``F_lower <= F_star``."""
    w = np.asarray(sol.x_star, dtype=float)
    if w.shape != (inst.d,):
        return f"shape of w* {w.shape} for an instance with d={inst.d}"
    if sol.reason:
        return sol.reason
    for k in ("g_star", "D"):
        if not isinstance(sol.info.get(k), (int, float)):
            return f"the entry has no scalar {k!r}"
    if not np.all(np.isfinite(w)):
        return "the stored point has a NaN or infinite entry"
    f, g = inst.F(w), inst.Gc(w)
    if not close(f, sol.F_star):
        return f"f at the stored point is {f:.17g}, the entry says {sol.F_star:.17g}"
    if not close(g, sol.info["g_star"]):
        return f"g at the stored point is {g:.17g}, the entry says {sol.info['g_star']:.17g}"
    if not g <= 0:
        return f"the stored point is infeasible: g(w*) = {g:.3g} > 0"
    D = float(np.linalg.norm(np.asarray(inst.w0) - w))
    if not close(D, sol.info["D"]):
        return f"||w0 - w*|| is {D:.17g}, the entry says {sol.info['D']:.17g}"
    if not sol.F_lower <= sol.F_star:
        return f"the stored interval [{sol.F_lower:.17g}, {sol.F_star:.17g}] is empty"
    return None


def _make_feasible(inst: ConstrainedInstance, w: np.ndarray) -> tuple[np.ndarray, bool, str]:
    """Move ``w`` towards the Slater point until ``g <= 0`` exactly (convexity of g)."""
    gw = inst.Gc(w)
    if gw <= 0:
        return w, True, "the solver's point is feasible"
    if inst.slater is None:
        return w, False, f"the solver's point has g = {gw:.2e} > 0 and no Slater point is known"
    s = np.asarray(inst.slater, dtype=float)
    gs = inst.Gc(s)
    if gs >= 0:
        return w, False, "the declared Slater point is not strictly feasible"
    theta = gw / (gw - gs)
    for _ in range(60):
        wc = (1 - theta) * w + theta * s
        if inst.Gc(wc) <= 0:
            return wc, True, f"moved by theta = {theta:.2e} towards the Slater point to make g <= 0"
        theta = min(1.0, 2 * theta)
    return w, False, "could not restore feasibility"


def _solution(f_star, f_lower, g_star, w_star, lam, D, status, elapsed, certified, notes) -> Solution:
    """The one :class:`~fedcheck.problems.solve.Solution`: ``F_star`` = f at the certified feasible point (an
    upper bound on f*), ``F_lower`` the solver's objective minus its duality-gap tolerance, ``g_star`` and
    ``D = ||w0 - w*||`` in ``info``, the constraint's multiplier in ``duals["lam"]``."""
    return Solution(F_star=f_star, F_lower=f_lower, x_star=w_star, status=status, solver="CLARABEL",
                    solver_version=solver_versions(), solve_time=elapsed, certified=certified, duals={"lam": lam},
                    info={"g_star": g_star, "D": D}, notes=notes)


def solve_constrained(inst: ConstrainedInstance, use_cache: bool = True) -> Solution:
    """Exact ``min f s.t. g <= 0`` with cvxpy and Clarabel (see the module doc), cached on disk
    (:class:`~fedcheck.problems.solve.SolutionCache`, every entry re-verified by :func:`verify_constrained`)."""
    key = _cache_key(inst) if use_cache else None
    if key is not None:
        hit = CACHE.load(key, lambda s: verify_constrained(inst, s))
        if hit is not None:
            return hit
    import cvxpy as cp
    n, d = inst.n, inst.d
    w = cp.Variable(d)
    obj = sum(inst.f.cvx(0, j, w) for j in range(n)) / n
    con = sum(inst.g.cvx(0, j, w) for j in range(n)) / n <= 0
    prob = cp.Problem(cp.Minimize(obj), [con])
    notes = []
    t0 = time.perf_counter()
    try:
        prob.solve(solver=cp.CLARABEL, **CLARABEL_SETTINGS)
        status = str(prob.status)
    except cp.error.SolverError as e:
        status = "solver_error"
        notes.append(str(e))
    elapsed = time.perf_counter() - t0
    nan = float("nan")
    if w.value is None or status not in ("optimal", "optimal_inaccurate"):
        return _solution(nan, nan, nan, np.full(d, np.nan), nan, nan, status, elapsed, False, notes)
    w_hat = np.asarray(w.value, dtype=float)
    w_c, certified, how = _make_feasible(inst, w_hat)
    notes.append(how)
    f_up = inst.F(w_c)
    p = float(prob.value)
    tol = CLARABEL_SETTINGS["tol_gap_abs"] + CLARABEL_SETTINGS["tol_gap_rel"] * max(1.0, abs(p))
    f_lo = min(p, f_up) - tol
    if not certified:
        status = "uncertified"
    lam = con.dual_value
    sol = _solution(f_up, f_lo, inst.Gc(w_c), w_c, float(lam) if lam is not None else nan,
                    float(np.linalg.norm(np.asarray(inst.w0) - w_c)), status, elapsed, certified, notes)
    if key is not None and sol.accurate:
        CACHE.store(key, sol)
    return sol


# ------------------------------------------------------------------------------------------------
# files (.npz, no pickle): f_kind, g_kind, f_<array>, g_<array>, w0, optional slater
def save_constrained(inst: ConstrainedInstance, path) -> Path:
    path = Path(path)
    arrays = {"f_kind": np.array(component_kind(inst.f)), "g_kind": np.array(component_kind(inst.g)),
              "w0": np.asarray(inst.w0)}
    for tag, comp in (("f", inst.f), ("g", inst.g)):
        for k, v in component_arrays(comp).items():
            arrays[f"{tag}_{k}"] = v[0]
    if inst.slater is not None:
        arrays["slater"] = np.asarray(inst.slater)
    atomic_write(path, lambda fh: np.savez(fh, **arrays))
    return path


def load_constrained(path) -> ConstrainedInstance:
    with np.load(path, allow_pickle=False) as z:
        comps = {}
        for tag in ("f", "g"):
            kind = str(z[f"{tag}_kind"])
            comps[tag] = component(kind, **{k: z[f"{tag}_{k}"][None] for k in _file_keys(kind)})
        slater = z["slater"] if "slater" in z.files else None
        return ConstrainedInstance(comps["f"], comps["g"], w0=z["w0"], slater=slater, source=f"file:{path}")
