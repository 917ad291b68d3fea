"""Non-smooth federated problems for the FedMLS paper (Palenzuela, Dadras, Yurtsever, Loefstedt).

The problem is unconstrained, ``min_x f(x) = (1/n) sum_i f_i(x)`` with convex, Lipschitz, non-smooth
client losses (:mod:`fedcheck.problems`: ``lad``, ``hinge``, ``max_affine``).  Every instance here is a
:class:`fedcheck.problems.Instance` whose set is a Euclidean ball of radius ``rho`` chosen far larger
than the minimizer (its *domain*, not the paper's ``X'``, whose radius ``R`` is an algorithm input):
when the solver's minimizer lies strictly inside the ball, the ball is inactive and, by convexity, the
ball-constrained optimum is the unconstrained one.

Exact optima (:func:`solve_nonsmooth`).  All three losses are sums/maxima of affine pieces, so
``F(x) = sum_tau c_tau max_k (P_tau,k^T x + q_tau,k)`` and ``F*`` is an LP over ``(x, t)`` with the
ball as one second-order cone, solved by cvxpy with Clarabel (status recorded: anything but
``optimal`` makes the checks that use it inconclusive).  Two certificates that do not trust the solver:

* upper end: ``F(x_hat)`` evaluated in numpy at the solver's point (projected into the ball);
* lower end: the LP duals ``mu_tau,k >= 0`` normalized per term to convex weights ``theta`` give,
  for every ``x`` in the ball, ``F(x) >= sum c theta (P x + q) >= sum c theta q - rho ||g||`` with
  ``g = sum c theta P`` (``max_k >= any convex combination``) -- a certified lower bound on ``F*``.

``x*`` is then taken as the point of the (certified-accuracy) optimal set closest to ``x_0`` (a second
solve, ``min ||x - x_0||`` subject to ``F(x) <= F(x_hat) + gap``), since Theorem 3.1 holds for any
minimizer and the closest one gives the tightest bound.  Solves are cached on disk like
:class:`fedcheck.problems.SolutionCache` (``$FEDCHECK_CACHE``).

Families (seeded with :func:`fedcheck.problems.instance_rng`; heterogeneous clients):
:class:`LADFamily`, :class:`HingeFamily`, :class:`MaxAffineFamily`, :class:`FamilyMix`; the drift toy
:func:`drift_instance` (``f_i(x) = |x - c_i|``); the experiment's data :func:`wisconsin_svm` (the paper's
699-sample Wisconsin data, shipped) and :func:`breast_cancer_svm` (scikit-learn's WDBC, a stand-in).
"""
from __future__ import annotations

import hashlib
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from fedcheck.problems import Instance, L2Ball, Solution, SolutionCache, instance_rng, solver_versions

__all__ = ["pieces", "solve_nonsmooth", "client_minimizers", "LADFamily", "HingeFamily", "MaxAffineFamily",
           "FamilyMix", "drift_instance", "breast_cancer_svm", "wisconsin_data", "wisconsin_svm", "subset_clients",
           "FORMULATION_VERSION", "BALL_MARGIN"]

FORMULATION_VERSION = "nonsmooth-pl-v1"
BALL_MARGIN = 0.5   # the minimizer must lie within BALL_MARGIN * rho for the domain ball to count as inactive
CLARABEL_SETTINGS = {"tol_feas": 1e-9, "tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9}
# the closest-minimizer point is accepted when F(x) <= F(x_hat) + gap + CLOSE_SLACK (1 + |F(x_hat)|):
# ten times the solver's requested tolerance, since its constraints hold only to that tolerance
CLOSE_SLACK = 1e-8


# ----------------------------------------------------------------------------------------------
# piecewise-linear form and the exact solve
def pieces(inst: Instance) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(P, q, c, client)``: ``F(x) = sum_tau c_tau max_k (P[tau, k] x + q[tau, k])`` for one instance
    (``P`` ``(N, K, p)``, ``q`` ``(N, K)``, ``c`` ``(N,)``, ``client`` ``(N,)`` the client of each term)."""
    A, b = inst.A, inst.b
    n, m, p = A.shape
    if inst.loss == "lad":
        a = A.reshape(n * m, p)
        r = b.reshape(n * m)
        P = np.stack([a, -a], axis=1)
        q = np.stack([-r, r], axis=1)
        c = np.full(n * m, 1.0 / (n * m))
        client = np.repeat(np.arange(n), m)
    elif inst.loss == "hinge":
        real = (b != 0).reshape(-1)
        ba = (A * b[..., None]).reshape(n * m, p)[real]
        P = np.stack([np.zeros_like(ba), -ba], axis=1)
        q = np.stack([np.zeros(len(ba)), np.ones(len(ba))], axis=1)
        c = np.full(len(ba), 1.0 / (n * m))
        client = np.repeat(np.arange(n), m)[real]
    elif inst.loss == "max_affine":
        P, q = A.copy(), b.copy()
        c = np.full(n, 1.0 / n)
        client = np.arange(n)
    else:
        raise ValueError(f"no piecewise-linear form for the {inst.loss!r} loss")
    return P, q, c, client


def close(a: float, b: float, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    """``a`` and ``b`` finite and equal within ``atol + rtol max(|a|, |b|)`` (the stored certificate's checks)."""
    return bool(np.isfinite(a) and np.isfinite(b) and abs(a - b) <= atol + rtol * max(abs(a), abs(b)))


def _key(inst: Instance) -> str:
    x0 = np.zeros(inst.p) if inst.x0 is None else np.asarray(inst.x0, dtype=float)
    h = hashlib.sha256(f"{inst.content_hash()}|{FORMULATION_VERSION}|{solver_versions()}".encode())
    h.update(np.ascontiguousarray(x0).tobytes())
    return h.hexdigest()


def solve_nonsmooth(inst: Instance, use_cache: bool = True) -> Solution:
    """Exact ``F*`` of a piecewise-linear instance, certified, with ``x*`` the minimizer closest to
    ``x_0`` (see the module doc).  ``Y_star`` holds the clients' shares ``g_i`` of the certificate's
    subgradient (consensus duals: ``sum_i g_i = 0`` up to ``dual_residual``)."""
    key = _key(inst)
    if use_cache:
        hit = CACHE.load(key, lambda s: verify_nonsmooth(inst, s))
        if hit is not None:
            return hit
    import cvxpy as cp
    P, q, c, client = pieces(inst)
    N, K, p = P.shape
    rho = float(inst.set.radius)
    x0 = np.zeros(p) if inst.x0 is None else np.asarray(inst.x0, dtype=float)
    x, tt = cp.Variable(p), cp.Variable(N)
    cons = [tt >= P[:, k, :] @ x + q[:, k] for k in range(K)]
    ball = [cp.norm2(x) <= rho]
    prob = cp.Problem(cp.Minimize(c @ tt), cons + ball)
    notes: list[str] = []
    t0 = time.perf_counter()
    try:
        prob.solve(solver=cp.CLARABEL, **CLARABEL_SETTINGS)
        status = str(prob.status)
    except cp.error.SolverError as e:
        status = "solver_error"
        notes.append(str(e))
    nan = float("nan")
    if x.value is None or status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        return Solution(nan, nan, np.full(p, nan), status, "CLARABEL", solver_versions(), time.perf_counter() - t0,
                        duals={"Y": np.full((inst.n, p), nan)}, info={"Y_norm": nan, "dual_residual": nan}, notes=notes)
    loss = inst.make_loss()
    x_hat = inst.set.project(np.asarray(x.value, dtype=float))
    F_hat = float(loss.full_value(x_hat))
    # certified lower bound from the duals, normalized to convex weights per term
    mu = np.stack([np.maximum(np.asarray(cc.dual_value, dtype=float).reshape(N), 0.0) for cc in cons], axis=1)
    tot = mu.sum(1, keepdims=True)
    act = np.zeros_like(mu)
    act[np.arange(N), np.argmax(np.einsum("nkp,p->nk", P, x_hat) + q, axis=1)] = 1.0
    theta = np.where(tot > 0, mu / np.where(tot > 0, tot, 1.0), act)
    w = c[:, None] * theta
    g_clients = np.zeros((inst.n, p))
    np.add.at(g_clients, client, np.einsum("nk,nkp->np", w, P))
    g = g_clients.sum(0)
    lower = float((w * q).sum() - rho * np.linalg.norm(g))
    gap = max(F_hat - lower, 0.0)
    # x*: the point of the optimal set (to the certified accuracy) closest to x_0
    x_star = x_hat
    xc = cp.Variable(p)
    tc = cp.Variable(N)
    close = cp.Problem(cp.Minimize(cp.norm2(xc - x0)),
                       [tc >= P[:, k, :] @ xc + q[:, k] for k in range(K)]
                       + [cp.norm2(xc) <= rho, c @ tc <= F_hat + gap])
    try:
        with warnings.catch_warnings():  # its answer is verified below, whatever the solver's status
            warnings.simplefilter("ignore")
            close.solve(solver=cp.CLARABEL)
        if close.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and xc.value is not None:
            cand = inst.set.project(np.asarray(xc.value, dtype=float))
            if float(loss.full_value(cand)) <= F_hat + gap + CLOSE_SLACK * (1.0 + abs(F_hat)):
                x_star = cand
            else:
                notes.append("closest-minimizer solve left the optimal set; x* is the solver's point")
        else:
            notes.append(f"closest-minimizer solve: status {close.status}; x* is the solver's point")
    except cp.error.SolverError as e:
        notes.append(f"closest-minimizer solve failed: {e}")
    if np.linalg.norm(x_star) > BALL_MARGIN * rho:
        status = "ball_active"
        notes.append(f"||x*|| = {np.linalg.norm(x_star):.3g} > {BALL_MARGIN} * rho = {BALL_MARGIN * rho:.3g}: "
                     "the domain ball may be active, so F* may not be the unconstrained optimum")
    sol = Solution(F_star=F_hat, F_lower=F_hat - gap, x_star=x_star, status=status, solver="CLARABEL",
                   solver_version=solver_versions(), solve_time=time.perf_counter() - t0,
                   duals={"Y": g_clients, "w": w},
                   info={"Y_norm": float(np.linalg.norm(g_clients)), "dual_residual": float(np.linalg.norm(g))},
                   notes=notes)
    if use_cache and sol.accurate:
        CACHE.store(key, sol)
    return sol


CACHE = SolutionCache(FORMULATION_VERSION)


def verify_nonsmooth(inst: Instance, sol: Solution) -> str | None:
    """Re-verify a stored solution without trusting it: shapes, status, the dual lower bound recomputed from the
    stored weights, ``F`` at the stored point inside the certified interval, the duals' norms."""
    P, q, c, client = pieces(inst)
    N, K, p = P.shape
    x, Y, w = (np.asarray(sol.x_star, float), np.asarray(sol.duals.get("Y"), float),
               np.asarray(sol.duals.get("w"), float))
    if x.shape != (p,) or Y.shape != (inst.n, p) or w.shape != (N, K):
        return f"shapes x {x.shape}, Y {Y.shape}, w {w.shape} for n={inst.n}, p={p}, {N}x{K} pieces"
    if sol.reason:
        return sol.reason
    if not (np.all(w >= 0) and np.allclose(w.sum(1), c, rtol=1e-9, atol=1e-12)):
        return "the stored dual weights are not a certificate (negative, or not summing to the pieces' weights)"
    rho = float(inst.set.radius)
    g = np.einsum("nk,nkp->p", w, P)
    lower = float((w * q).sum() - rho * np.linalg.norm(g))
    if not close(lower, sol.F_lower, rtol=1e-9, atol=1e-12) and not lower >= sol.F_lower:
        return f"the dual lower bound recomputes to {lower:.17g}, the entry says {sol.F_lower:.17g}"
    F = float(inst.make_loss().full_value(x))
    tol = CLOSE_SLACK * (1.0 + abs(sol.F_star))
    if not (sol.F_lower - tol <= F <= sol.F_star + sol.gap + tol):
        return f"F at the stored point is {F:.17g}, outside the certified interval [{sol.F_lower:.17g}, {sol.F_star:.17g}]"
    if not close(float(np.linalg.norm(Y)), float(sol.info.get("Y_norm", np.nan))):
        return "||Y||_F does not match the stored duals"
    return None


def client_minimizers(inst: Instance) -> np.ndarray:
    """Each client's own minimizer of ``f_i`` over the domain ball (cvxpy, Clarabel), ``(n, p)``.
    Their average is where FedAvg with many exact local steps per round ends up (client drift)."""
    import cvxpy as cp
    loss = inst.make_loss()
    out = np.empty((inst.n, inst.p))
    for i in range(inst.n):
        x = cp.Variable(inst.p)
        prob = cp.Problem(cp.Minimize(loss.cvx(None, i, x)), inst.set.cvx_constraints(x))
        prob.solve(solver=cp.CLARABEL, **CLARABEL_SETTINGS)
        if prob.status != cp.OPTIMAL or x.value is None:
            out[i] = np.nan
        else:
            out[i] = np.asarray(x.value, dtype=float)
    return out


# ----------------------------------------------------------------------------------------------
# families
def _domain(scale: float) -> float:
    """A domain ball far larger than the data's scale (checked after the solve, see BALL_MARGIN)."""
    return float(10.0 * scale + 10.0)


@dataclass(frozen=True)
class LADFamily:
    """Federated least absolute deviations: client ``i`` has its own model ``w_i = w_0 + h u_i`` and
    data ``b_i = A_i w_i + noise`` (Laplace noise, scale ``noise``), ``A_i`` standard normal.  ``m <=
    16`` keeps the Lipschitz constant exact.  Starts at ``x_0 = 0``."""

    n: int = 4
    m: int = 8
    p: int = 5
    heterogeneity: float = 1.0
    noise: float = 0.1

    @property
    def key(self) -> str:
        return f"fedmls:lad:{self.n}x{self.m}x{self.p}:h={self.heterogeneity}:s={self.noise}"

    def draw(self, seed: int) -> Instance:
        rng = instance_rng(seed, self.key)
        n, m, p = self.n, self.m, self.p
        w0 = rng.standard_normal(p)
        W = w0 + self.heterogeneity * rng.standard_normal((n, p))
        A = rng.standard_normal((n, m, p))
        b = np.einsum("nmp,np->nm", A, W) + self.noise * rng.laplace(size=(n, m))
        rho = _domain(np.linalg.norm(W, axis=1).max())
        return Instance(A=A, b=b, loss="lad", set=L2Ball(rho, p), seed=int(seed), source=self.key,
                        params={"family": "lad", "n": n, "m": m, "p": p, "heterogeneity": self.heterogeneity,
                                "noise": self.noise})


@dataclass(frozen=True)
class HingeFamily:
    """Federated hinge-loss SVM (no regularizer) with a bias column: client ``i``'s features are
    shifted by its own mean ``h v_i`` (covariate shift), labels ``sign(a^T w + bias)`` with a
    fraction ``flip`` flipped so that the data are not separable (``f* > 0``, bounded minimizers)."""

    n: int = 4
    m: int = 8
    p: int = 5
    heterogeneity: float = 1.0
    flip: float = 0.25

    @property
    def key(self) -> str:
        return f"fedmls:hinge:{self.n}x{self.m}x{self.p}:h={self.heterogeneity}:f={self.flip}"

    def draw(self, seed: int) -> Instance:
        rng = instance_rng(seed, self.key)
        n, m, p = self.n, self.m, self.p
        w = rng.standard_normal(p - 1)
        shift = self.heterogeneity * rng.standard_normal((n, 1, p - 1))
        F = rng.standard_normal((n, m, p - 1)) + shift
        y = np.where(F @ w + 0.3 * rng.standard_normal((n, m)) >= 0, 1.0, -1.0)
        flip = rng.random((n, m)) < self.flip
        y[flip] *= -1
        # make sure every client sees both labels (non-separable per client as well as overall)
        y[:, 0], y[:, 1] = 1.0, -1.0
        A = np.concatenate([F, np.ones((n, m, 1))], axis=-1)
        rho = _domain(10.0)
        return Instance(A=A, b=y, loss="hinge", set=L2Ball(rho, p), seed=int(seed), source=self.key,
                        params={"family": "hinge", "n": n, "m": m, "p": p, "heterogeneity": self.heterogeneity,
                                "flip": self.flip})


@dataclass(frozen=True)
class MaxAffineFamily:
    """Max of affine functions: client ``i`` has ``m0`` random pieces and the ``2p`` pieces
    ``+-s (x_l - w_il)`` that make ``f_i >= s ||x - w_i||_inf`` coercive around its own centre
    ``w_i = w_0 + h u_i``.  ``Lip(f_i) = max(max_j ||a_ij||, s)`` exactly."""

    n: int = 4
    m0: int = 6
    p: int = 5
    heterogeneity: float = 1.0
    s: float = 1.0

    @property
    def key(self) -> str:
        return f"fedmls:maxaff:{self.n}x{self.m0}x{self.p}:h={self.heterogeneity}:s={self.s}"

    def draw(self, seed: int) -> Instance:
        rng = instance_rng(seed, self.key)
        n, m0, p, s = self.n, self.m0, self.p, self.s
        w0 = rng.standard_normal(p)
        W = w0 + self.heterogeneity * rng.standard_normal((n, p))
        Ar = rng.standard_normal((n, m0, p)) / np.sqrt(p)
        cr = rng.standard_normal((n, m0))
        E = np.concatenate([np.eye(p), -np.eye(p)])
        Ab = np.broadcast_to(s * E, (n, 2 * p, p))
        cb = -s * np.einsum("kp,np->nk", E, W)
        A = np.concatenate([Ar, Ab], axis=1)
        b = np.concatenate([cr, cb], axis=1)
        rho = _domain(np.linalg.norm(W, axis=1).max() + np.abs(cr).max() / s)
        return Instance(A=A, b=b, loss="max_affine", set=L2Ball(rho, p), seed=int(seed), source=self.key,
                        params={"family": "max_affine", "n": n, "m0": m0, "p": p,
                                "heterogeneity": self.heterogeneity, "s": s})


@dataclass(frozen=True)
class FamilyMix:
    """Cycles through families by seed: seed ``k`` is drawn from ``families[k % len(families)]``."""

    families: tuple = field(default_factory=lambda: (LADFamily(), HingeFamily(), MaxAffineFamily()))

    @property
    def key(self) -> str:
        return "mix(" + ",".join(f.key for f in self.families) + ")"

    def draw(self, seed: int) -> Instance:
        return self.families[int(seed) % len(self.families)].draw(seed)


def drift_instance(c: Sequence[float] = (0.0, 0.0, 3.0), x0: float = 2.0) -> Instance:
    """The client-drift toy: ``f_i(x) = |x - c_i|`` in one dimension (LAD with one row per client).
    ``f*`` is attained at the median of ``c``; FedAvg with many exact local steps goes to the mean."""
    c = np.asarray(c, dtype=float)
    A = np.ones((len(c), 1, 1))
    b = c[:, None]
    return Instance(A=A, b=b, loss="lad", set=L2Ball(_domain(np.abs(c).max() + abs(x0)), 1), seed=None,
                    source=f"fedmls:drift:c={tuple(c.tolist())}:x0={x0}", x0=np.array([float(x0)]),
                    params={"family": "drift", "c": c.tolist(), "x0": float(x0)})


def _padded_clients(Z: np.ndarray, y: np.ndarray, labels: np.ndarray, n_clients: int):
    """Rows ``Z`` with labels ``y`` split by the cluster ``labels`` into ``n_clients`` clients, padded to a common
    size with label-0 rows (ignored by the hinge loss): ``(A, b, sizes)``."""
    sizes = np.bincount(labels, minlength=n_clients)
    m = int(sizes.max())
    A = np.zeros((n_clients, m, Z.shape[1]))
    b = np.zeros((n_clients, m))
    for i in range(n_clients):  # data preparation, not the engine
        rows = np.nonzero(labels == i)[0]
        A[i, :len(rows)] = Z[rows]
        b[i, :len(rows)] = y[rows]
    return A, b, sizes


def breast_cancer_svm(n_clients: int = 10, seed: int = 0, features: int = 9, train_fraction: float = 0.8) -> Instance:
    """The paper's experiment at small scale, on the dataset scikit-learn ships.

    *Substitution*: scikit-learn ships the Wisconsin **Diagnostic** Breast Cancer data (569 samples,
    30 features), not the paper's original Wisconsin data (699 samples, 9 features + id).  The first
    ``features = 9`` columns are used (with all 30 the data are linearly separable, ``f* = 0`` and the
    hinge minimizers are unbounded), standardized with the training split's mean and deviation, plus a
    bias column of ones; labels ``+-1``.  As in the authors' code, an ``train_fraction`` train split is
    taken first and the training samples are partitioned into ``n_clients`` clients by k-means on the
    raw training features (10 restarts).  Clients are padded to a common size with label-0 rows.

    The objective is the paper's (10) divided by the padded client size ``m`` (a constant): ``f_i =
    (1/m) sum_j hinge``; it rescales ``lambda_0`` and ``eta_0`` by ``m``, which are tuned anyway."""
    from sklearn.cluster import KMeans
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :features]
    y = np.where(y == 1, 1.0, -1.0)
    rng = instance_rng(seed, f"fedmls:breast_cancer:{n_clients}:{features}:{train_fraction}")
    perm = rng.permutation(len(y))
    ntr = int(round(train_fraction * len(y)))
    tr = perm[:ntr]
    Xtr, ytr = X[tr], y[tr]
    labels = KMeans(n_clusters=n_clients, n_init=10, random_state=int(seed)).fit_predict(Xtr)
    mu, sd = Xtr.mean(0), Xtr.std(0)
    Z = np.concatenate([(Xtr - mu) / sd, np.ones((ntr, 1))], axis=1)
    A, b, sizes = _padded_clients(Z, ytr, labels, n_clients)
    return Instance(A=A, b=b, loss="hinge", set=L2Ball(_domain(100.0), Z.shape[1]), seed=int(seed),
                    source=f"sklearn:load_breast_cancer[:, :{features}]:kmeans{n_clients}",
                    params={"family": "breast_cancer", "client_sizes": sizes.tolist(), "features": features,
                            "train_samples": ntr, "dataset": "scikit-learn load_breast_cancer (WDBC 569x30)"})


WISCONSIN_CSV = Path(__file__).with_name("data") / "wisconsin_breast_cancer.csv"


def wisconsin_data() -> tuple[np.ndarray, np.ndarray]:
    """The paper's data set (Section 4): the original Wisconsin Breast Cancer data, 699 biopsies, 9 attributes
    scored 1..10, the 16 missing 'bare nuclei' values imputed with the column mean ("Missing values were imputed
    using column-wise means"); labels +1 malignant, -1 benign.  Shipped with fedcheck
    (``theorems/fedmls/data/wisconsin_breast_cancer.csv``, copied from R's MASS::biopsy; see its header)."""
    rows = [ln.split(",") for ln in WISCONSIN_CSV.read_text().splitlines() if ln and not ln.startswith("#")][1:]
    X = np.array([[float(v) if v else np.nan for v in r[:9]] for r in rows])
    y = np.array([1.0 if r[9] == "malignant" else -1.0 for r in rows])
    if X.shape != (699, 9) or np.isnan(X).sum() != 16:
        raise ValueError(f"{WISCONSIN_CSV}: expected 699 x 9 attributes with 16 missing values")
    X = np.where(np.isnan(X), np.nanmean(X, axis=0)[None, :], X)
    return X, y


def wisconsin_svm(n_clients: int = 10, seed: int = 0) -> Instance:
    """Section 4's problem (10) on the paper's data: the hinge-loss SVM with a bias, no regularizer, on all 699
    samples of :func:`wisconsin_data` (raw attributes: the paper mentions no scaling, only the imputation), split
    among ``n_clients = 10`` clients by k-means ("we partitioned data among n=10 clients using k-means clustering";
    the paper states neither the features k-means runs on nor its seed: raw attributes, scikit-learn's KMeans with
    10 restarts, ``random_state=seed``).  Clients are padded to a common size with label-0 rows (ignored by the
    hinge loss).  The objective is (10) divided by the padded client size ``m``: ``f_i = (1/m) sum_j hinge``, a
    constant factor that schedules written with ``m`` undo exactly (same iterates as in the paper's units)."""
    from sklearn.cluster import KMeans
    X, y = wisconsin_data()
    labels = KMeans(n_clusters=n_clients, n_init=10, random_state=int(seed)).fit_predict(X)
    Z = np.concatenate([X, np.ones((len(y), 1))], axis=1)
    A, b, sizes = _padded_clients(Z, y, labels, n_clients)
    return Instance(A=A, b=b, loss="hinge", set=L2Ball(_domain(100.0), Z.shape[1]), seed=int(seed),
                    source=f"fedmls:wisconsin699:kmeans{n_clients}",
                    params={"family": "wisconsin_breast_cancer", "client_sizes": sizes.tolist(), "features": 9,
                            "train_samples": int(len(y)),
                            "dataset": "original Wisconsin Breast Cancer (699 x 9, Wolberg & Mangasarian 1990)"})


def subset_clients(inst: Instance, n: int) -> Instance:
    """The instance made of the first ``n`` clients (nested families: clients i.i.d. from one generator)."""
    return Instance(A=inst.A[:n].copy(), b=inst.b[:n].copy(), loss=inst.loss, set=inst.set, seed=inst.seed,
                    source=f"{inst.source}[:{n} clients]", x0=inst.x0, params={**inst.params, "n": n})
