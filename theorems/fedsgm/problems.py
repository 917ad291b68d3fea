"""The FedSGM paper's own problem and runner: the Neyman-Pearson breast-cancer experiment
(:func:`breast_cancer_np`) and the runner of its horizon claims (:func:`run_fedsgm`, the
:class:`fedcheck.experiments.Horizons` protocol).  The constrained problem class is the shared library
:mod:`fedcheck.problems.constrained`."""
from __future__ import annotations

import numpy as np

from fedcheck.problems.constrained import ConstrainedBatch, ConstrainedInstance, component
from fedcheck.problems.instances import instance_rng

__all__ = ["breast_cancer_np", "run_fedsgm"]


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
# the runner of the horizon claims (the fedcheck.experiments.Horizons protocol)
def _run_seed(inst: ConstrainedInstance, run_seed: int) -> int:
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
    from fedcheck.problems.compression import make_compressor
    from fedcheck.algorithms.switching import fedsgm
    batch = ConstrainedBatch(insts)
    C = make_compressor(settings.get("compressor"))
    E = int(settings.get("E", 1))
    u = np.stack([s.x_star for s in sols])
    f_hi = np.array([s.F_star for s in sols])
    f_lo = np.array([s.F_lower for s in sols])
    seeds = [_run_seed(i, r) for i, r in zip(insts, run_seeds)]
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
