"""The FedSGM paper's own problems and runner: its random families with an exact constrained optimum
(:class:`ConstrainedFamily`, the notes' F1-F4 and the ``axis`` instance; :class:`UnconstrainedFamily`, the
``g = 0`` special case), the Neyman-Pearson breast-cancer experiment (:func:`breast_cancer_np`) and the runner of
its horizon claims (:func:`run_fedsgm`, the :class:`fedcheck.Horizons` protocol).  The constrained problem class
(instances, batches, exact solves, files) is the shared library :mod:`fedcheck.problems.constrained`."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fedcheck.algorithms import fedsgm
from fedcheck.problems import ConstrainedBatch, ConstrainedInstance, component, instance_rng, make_compressor

__all__ = ["ConstrainedFamily", "UnconstrainedFamily", "breast_cancer_np", "uplink_seed", "run_fedsgm", "W_REASON",
           "RECURSION_REASON", "UNBOUNDED_W", "UNBOUNDED_RECURSION"]

# vacuity: why the measured quantities of the theorems have no finite trivial bound over the class
W_REASON = ("w ranges over R^d (the constraint g(w) <= 0 is a function, not a set), where f(w) - f* and g(w) are "
            "unbounded")
RECURSION_REASON = ("the quantity grows with ||w_t - u||, unbounded for w in R^d (only convexity, the proof's step, "
                    "bounds it)")
UNBOUNDED_W = "no finite trivial bound: " + W_REASON
UNBOUNDED_RECURSION = "no finite trivial bound: " + RECURSION_REASON


# ------------------------------------------------------------------------------------------------
# families
def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@dataclass(frozen=True)
class ConstrainedFamily:
    """Seeded random families with an exact constrained optimum (notes' F1-F4) and the ``axis``
    instance.  In F1-F4 a planted model ``w_true`` (norm 3) fits the objective, the constraint
    excludes it (active constraint) and ``w = 0`` (or a large intercept, for NP) is strictly
    feasible.  Data rows have norm about 1, so that f and g have Lipschitz constants of the same
    order (the theorems use one G for both: a G set by a steep f makes eps too large for g to matter).  ``start``: ``zero`` (w0 = 0) or ``infeasible`` (w0 = w_true)."""

    kind: str = "pl"
    n: int = 5
    m: int = 10
    d: int = 5
    pieces: int = 3
    heterogeneity: float = 1.0
    noise: float = 0.1
    start: str = "zero"
    axis_start: float = 1.0

    def __post_init__(self):
        if self.kind not in ("pl", "norm", "logistic_np", "huber", "axis"):
            raise ValueError(f"unknown family kind {self.kind!r}")
        if self.start not in ("zero", "infeasible"):
            raise ValueError("start must be 'zero' or 'infeasible'")

    @property
    def key(self) -> str:
        return (f"fedsgm:{self.kind}:n={self.n}:m={self.m}:d={self.d}:k={self.pieces}:h={self.heterogeneity}:"
                f"s={self.noise}:start={self.start}:a={self.axis_start}")

    @property
    def label(self) -> str:
        return {"pl": "F1 piecewise-linear (LP)", "norm": "F2 Euclidean norms (SOCP)",
                "logistic_np": "F3 logistic Neyman-Pearson", "huber": "F4 Huber + linear constraint",
                "axis": "axis-aligned linear constraint"}[self.kind] + f", n={self.n}, d={self.d}"

    def draw(self, seed: int) -> ConstrainedInstance:
        rng = instance_rng(seed, self.key)
        n, m, d = self.n, self.m, self.d
        params = {k: getattr(self, k) for k in ("kind", "n", "m", "d", "pieces", "heterogeneity", "noise", "start")}
        if self.kind == "axis":
            e1 = np.zeros(d)
            e1[0] = 1.0
            f = component("distance", c=np.broadcast_to(3 * e1, (1, n, d)), r=np.zeros((1, n)))
            g = component("affine", a=np.broadcast_to(e1, (1, n, d)), e=np.ones((1, n)))
            return ConstrainedInstance(f, g, w0=(1 + self.axis_start) * e1, slater=np.zeros(d), seed=int(seed),
                                       source=self.key, params=params)
        u = _unit(rng.standard_normal(d))
        w_true = 3.0 * u
        W = w_true + self.heterogeneity * rng.standard_normal((n, d)) / math.sqrt(d)
        slater = np.zeros(d)
        if self.kind in ("pl", "norm", "huber"):
            A = rng.standard_normal((n, m, d)) / math.sqrt(d)     # rows of norm ~1: G of f ~ G of g
            b = np.einsum("nmd,nd->nm", A, W)
            if self.kind == "huber":
                b = b + self.noise * rng.standard_t(2, (n, m))
            else:
                b = b + self.noise * rng.standard_normal((n, m))
            if self.kind == "pl":
                f = component("l1_residual", A=A[None], b=b[None])
                C = _unit(u + 0.7 * rng.standard_normal((n, self.pieces, d)) / math.sqrt(d))
                e = rng.uniform(0.5, 1.5, (n, self.pieces))
                g = component("max_affine", C=C[None], e=e[None])
            elif self.kind == "norm":
                f = component("l2_residual", A=A[None], b=b[None])
                c = 0.5 * rng.standard_normal((n, d)) / math.sqrt(d)
                inside = np.linalg.norm(c, axis=-1).mean()
                outside = np.linalg.norm(w_true - c, axis=-1).mean()
                r = np.full(n, 0.5 * (inside + outside))
                g = component("distance", c=c[None], r=r[None])
            else:
                f = component("huber", A=A[None], b=b[None], M=np.full((1, n), 0.5))
                a = u + 0.3 * rng.standard_normal((n, d)) / math.sqrt(d)
                e = rng.uniform(0.5, 1.5, n)
                g = component("affine", a=a[None], e=e[None])
            w0 = np.zeros(d) if self.start == "zero" else w_true.copy()
        else:  # logistic_np: overlapping Gaussian classes, intercept as the last feature
            p = d - 1
            if p < 1:
                raise ValueError("logistic_np needs d >= 2 (features + intercept)")
            mu = rng.standard_normal((n, p)) * self.heterogeneity / math.sqrt(p)
            direction = _unit(rng.standard_normal(p))
            X0 = mu[:, None, :] - 0.75 * direction + rng.standard_normal((n, m, p))
            X1 = mu[:, None, :] + 0.75 * direction + rng.standard_normal((n, m, p))
            one = np.ones((n, m, 1))
            X0, X1 = np.concatenate([X0, one], -1), np.concatenate([X1, one], -1)
            v = np.full((n, m), 1.0 / m)
            kappa = 0.4
            f = component("logistic", X=X0[None], y=np.zeros((1, n, m)), v=v[None], kappa=np.zeros((1, n)))
            g = component("logistic", X=X1[None], y=np.ones((1, n, m)), v=v[None], kappa=np.full((1, n), kappa))
            slater = np.zeros(d)
            slater[-1] = 1.0 - math.log(math.expm1(kappa))  # intercept with class-1 loss < kappa
            w0 = np.zeros(d)
            if self.start == "infeasible":  # scores class 1 below class 0: minority loss well above kappa
                w0[:-1] = -1.5 * direction
        inst = ConstrainedInstance(f, g, w0=w0, slater=slater, seed=int(seed), source=self.key, params=params)
        inst.params["constraint_active_at_w_true"] = bool(inst.Gc(w_true) > 0) if self.kind != "logistic_np" else True
        return inst


@dataclass(frozen=True)
class UnconstrainedFamily:
    """``g_j = 0`` for every client (the paper's FedCOM special case, "g_j = 0, E = 1": unconstrained FedAvg with
    uplink compression): the objective of a :class:`ConstrainedFamily` draw (``base``), the constraint replaced by
    the affine ``g_j(w) = <0, w> - 0 = 0``, so every round is in ``A = {t: g(w_t) <= eps}`` and ``wbar`` is the
    average of all iterates; ``f*`` is the unconstrained minimum (the constraint ``0 <= 0`` never binds; no Slater
    point is needed or given)."""

    base: ConstrainedFamily = field(default_factory=lambda: ConstrainedFamily(kind="pl", n=4, m=10, d=10))

    @property
    def key(self) -> str:
        return f"fedsgm:g=0:{self.base.key}"

    @property
    def label(self) -> str:
        return f"g = 0 (FedCOM), f of {self.base.label}"

    def draw(self, seed: int) -> ConstrainedInstance:
        b = self.base.draw(seed)
        n, d = b.n, b.d
        g = component("affine", a=np.zeros((1, n, d)), e=np.zeros((1, n)))
        params = {**b.params, "constraint": "g = 0", "base": self.base.key}
        return ConstrainedInstance(b.f, g, w0=b.w0.copy(), slater=None, seed=int(seed), source=self.key, params=params)


def breast_cancer_np(n: int = 10, seed: int = 0, kappa: float = 0.0, intercept: bool = True) -> ConstrainedInstance:
    """The paper's experiment: Neyman-Pearson logistic classification on scikit-learn's breast-cancer
    data (569 samples, 30 features, standardized; an intercept feature), split IID over ``n`` clients
    with each class dealt round-robin after a seeded shuffle (sizes differ by at most one; class ratios
    equal up to one sample).  ``f_j``: mean loss of the majority class (benign, 357 samples) labelled 0;
    ``g_j``: mean loss of the minority class (malignant, 212) labelled 1, minus ``kappa``."""
    from sklearn.datasets import load_breast_cancer
    data = load_breast_cancer()
    Xr = (data.data - data.data.mean(0)) / data.data.std(0)
    if intercept:
        Xr = np.concatenate([Xr, np.ones((Xr.shape[0], 1))], 1)
    rng = instance_rng(seed, "fedsgm:breast_cancer_split")
    majority, minority = np.flatnonzero(data.target == 1), np.flatnonzero(data.target == 0)

    def deal(idx):
        idx = rng.permutation(idx)
        parts = [idx[j::n] for j in range(n)]
        m = max(len(p) for p in parts)
        X = np.zeros((n, m, Xr.shape[1]))
        v = np.zeros((n, m))
        for j, p in enumerate(parts):  # data layout only (not an optimisation loop)
            X[j, :len(p)] = Xr[p]
            v[j, :len(p)] = 1.0 / len(p)
        return X, v

    X0, v0 = deal(majority)
    X1, v1 = deal(minority)
    d = Xr.shape[1]
    f = component("logistic", X=X0[None], y=np.zeros((1,) + v0.shape), v=v0[None], kappa=np.zeros((1, n)))
    g = component("logistic", X=X1[None], y=np.ones((1,) + v1.shape), v=v1[None], kappa=np.full((1, n), kappa))
    return ConstrainedInstance(f, g, w0=np.zeros(d), slater=None, seed=int(seed),
                               source=f"sklearn breast_cancer, {n} clients, split seed {seed}",
                               params={"n": n, "kappa": kappa, "intercept": intercept,
                                       "majority": "benign (sklearn label 1)", "minority": "malignant (label 0)"})


# ------------------------------------------------------------------------------------------------
# the runner of the horizon claims (the fedcheck.Horizons protocol)
def uplink_seed(inst: ConstrainedInstance, run_seed: int) -> int:
    """The seed of the uplink randomness of run ``run_seed`` on ``inst`` (one stream per instance and run)."""
    return int(inst.seed or 0) * 1_000_003 + int(run_seed)


def run_fedsgm(insts, sols, schedule: dict, T: int, settings: dict, run_seeds) -> dict:
    """Run FedSGM on one batch (rows = instances, repeated as needed) and measure what the FedSGM
    bounds control.  ``schedule``: ``eta``, ``epsilon`` and (soft) ``beta`` per row; ``settings``:
    ``rule`` (hard/soft), ``E``, ``compressor`` (spec or object; none = identity), ``a_set``.

    Measurements (per row, or per round ``(T, B)``):

    * ``f_gap`` = f(wbar) - f* as an interval (f* known within [f_lower, f_star]);
      ``g_out`` = g(wbar); ``A_empty`` = 1 when no round is in A (wbar undefined);
      ``accuracy`` = max(f_gap, g_out), the smallest eps' for which wbar is an eps'-solution;
    * ``summed`` = (1/T) sum_t h_t, h_t of the per-round recursion with u = w*;
    * ``per_round`` = E_C||w_{t+1} - u||^2 - ||w_t - u||^2 + 2 eta E h_t (conditional expectation,
      exact; the realized value when there is no compression);
    * ``drift_step``, ``drift_sq`` (Lemma 5), ``agg_sq_cond`` (Lemma 3), ``max_dir``.
    """
    batch = ConstrainedBatch(insts)
    C = make_compressor(settings.get("compressor"))
    E = int(settings.get("E", 1))
    u = np.stack([s.x_star for s in sols])
    f_hi = np.array([s.F_star for s in sols])
    f_lo = np.array([s.F_lower for s in sols])
    seeds = [uplink_seed(i, r) for i, r in zip(insts, run_seeds)]
    eta, eps = schedule["eta"], schedule["epsilon"]
    tr = fedsgm(batch, rounds=T, eta=eta, eps=eps, rule=settings.get("rule", "hard"), beta=schedule.get("beta"),
                local_steps=E, compressor=C, seeds=seeds, comparator=u, a_set=settings.get("a_set"))
    M = tr.metrics
    wbar = tr.final["wbar"]
    empty = tr.final["A_size"] == 0
    fw = np.where(empty, np.nan, batch.full_f(np.nan_to_num(wbar)))
    gw = np.where(empty, np.nan, batch.full_g(np.nan_to_num(wbar)))
    scale = np.maximum(1.0, np.abs(f_hi))
    f_gap = {"value": fw - f_hi, "lo": fw - f_hi, "hi": fw - f_lo, "scale": scale}
    acc = {"value": np.maximum(fw - f_hi, gw), "lo": np.maximum(fw - f_hi, gw), "hi": np.maximum(fw - f_lo, gw),
           "scale": scale}
    h = M["h"][:T]
    d2 = M["dist2"]
    per_round = M["cond_dist2"][:T] - d2[:T] + 2 * eta * E * h
    viol = (M["g"][:T] > eps).sum(0)
    return {
        "f_gap": f_gap, "g_out": {"value": gw, "scale": np.maximum(1.0, np.abs(gw))},
        "A_empty": empty.astype(float), "accuracy": acc,
        "summed": {"value": h.mean(0), "scale": np.maximum(1.0, d2[0])},
        "per_round": {"value": per_round, "scale": np.maximum(1.0, d2[:T])},
        "drift_step": M["drift_step"][:T], "drift_sq": M["drift_sq"][:T], "agg_sq_cond": M["agg_sq_cond"][:T],
        "max_dir": M["max_dir"][:T],
        "_evidence": {"A_size": tr.final["A_size"], "A_weight": tr.final["A_weight"],
                      "sigma_sum_A": tr.final["sigma_sum_A"], "f_out": fw, "g_out": gw, "eta": eta, "epsilon": eps,
                      "violating_rounds": viol, "final_dist": np.sqrt(d2[T]),
                      "constraint_rounds": (M["sigma"][:T] > 0).sum(0)},
        "_trace": tr,
    }
