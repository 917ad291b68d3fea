"""The FedDualAvg paper's instances and experiments (Yuan, Zaheer, Reddi, ICML 2021).

The curved-boundary instance of Sec. 4.2 (:func:`curse_instance`), the Lemma C.3 instance of Sec. 4.6
(:func:`lemma_c3_instance`), the scaled-down experiment generators of Sec. 5 (:func:`lasso_experiment`,
:func:`matrix_sensing_experiment`, :func:`breast_cancer_logistic`) and the experiment of the rate theorems
(expectation bounds at horizon-dependent steps, with a swept limit): :class:`HorizonExpectations`.  The
composite problem classes they build on are the shared library :mod:`fedcheck.problems.composite`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedcheck import Comparison, Finding, Observations, Observed, evaluate_expr
from fedcheck import verdicts as V
from fedcheck.problems import (L1, FiniteSumInstance, InstanceContext, L2BallIndicator, Nuclear, QuadInstance, Value,
                               instance_rng, resolve_all, solve_composite)
from fedcheck.symbols import R as R_sym
from fedcheck.verdicts import POLICY


def curse_instance(K: int = 100, noise: float = 0.0) -> QuadInstance:
    """Note Sec. 4.2: ``d = M = 2``, ``C`` the unit l2 ball, ``F_m(w) = 1/2 ||w - a_m||^2`` with
    ``a_1 = (3, 1)``, ``a_2 = (3, -1)``; ``w* = (1, 0)``, ``Phi* = 2.5``.  FedMiD's server average of the
    clients' projected points stalls at ``avg_m Proj_C(a_m) = (3/sqrt(10), 0)`` for large ``eta_c K``."""
    a = np.array([[3.0, 1.0], [3.0, -1.0]])
    return QuadInstance(Q=np.eye(2)[None], c=-a, e=0.5 * (a * a).sum(1), reg=L2BallIndicator(1.0, 2), K=K,
                        noise="sphere" if noise > 0 else "none", noise_scale=float(noise), geometry="euclidean",
                        seed=None, source="feddualavg:curse:note-4.2", params={"a": a.tolist()})


def lemma_c3_instance(G: float = 1.0) -> QuadInstance:
    """Note Sec. 4.6: ``M = 2``, ``K = 1``, ``d = 1``, ``dom psi = [-1, 1]``, ``f_1(w) = G w``, ``f_2(w) = -G w``
    (exact gradients, ``sup ||grad f|| = G``)."""
    return QuadInstance(Q=np.zeros((1, 1, 1)), c=np.array([[G], [-G]]), reg=L2BallIndicator(1.0, 1), K=1,
                        noise="none", geometry="euclidean", seed=None, source="feddualavg:lemma-c3:note-4.6",
                        params={"G": G})


# ---------------------------------------------------------------------------------------------
# experiments of Section 5, scaled down
def _pick_lambda(make, grid, ok, score):
    """The first ``lam`` of ``grid`` whose exact solution satisfies ``ok`` (the paper: "we select lambda so that the
    centralized solver ... can successfully recover the sparse pattern"); when none does, the ``lam`` whose solution
    scores best (``score``: F1 of the support, minus the rank's error; the first on ties), recorded as not
    recovering.  Returns the instance, its solution, the solutions tried and whether the pattern is recovered."""
    tried, best = [], None
    for lam in grid:
        inst = make(lam)
        sol = solve_composite(inst)
        tried.append((lam, sol))
        if sol.accurate and ok(sol.w_star):
            return inst, sol, tried, True
        s = float(score(sol.w_star)) if sol.accurate else -np.inf
        if best is None or s > best[0]:
            best = (s, inst, sol)
    return best[1], best[2], tried, False


def support_f1(w, truth, threshold):
    """F1 of the support ``|w_i| >= threshold`` against the true support ``truth`` (the paper's metric of A.2)."""
    supp = np.abs(np.asarray(w)) >= threshold
    tp, fp, fn = (supp & truth).sum(-1), (supp & ~truth).sum(-1), (~supp & truth).sum(-1)
    return 2 * tp / np.maximum(2 * tp + fp + fn, 1)


#: Dataset (I) of Appendix A.2 (federated LASSO) and A.3 (nuclear norm): the paper's sizes (``--full``), and the
#: smaller ones of the quick run (a deviation declared with both numbers).  A round is one local epoch of
#: minibatches of 10 over 128 samples: 13 steps, the last of 8 samples.
LASSO_PAPER = {"d": 1024, "d1": 512, "M": 64, "n": 128, "batch": 10, "clients_per_round": 10}
LASSO_QUICK = {"d": 32, "d1": 4, "M": 16, "n": 32, "batch": 4, "clients_per_round": 4}
NUCLEAR_PAPER = {"p": 32, "rank": 16, "M": 64, "n": 128, "batch": 10, "clients_per_round": 10}
NUCLEAR_QUICK = {"p": 6, "rank": 2, "M": 8, "n": 32, "batch": 4, "clients_per_round": 4}


def lasso_data(seed: int, d: int, d1: int, M: int, n: int):
    """The data of (A.2)-(A.4): ``X`` ``(M, n, d + 1)`` (the features and a bias column of ones), ``y`` ``(M, n)``,
    ``w_real = [1_{d1}; 0_{d - d1}]`` and ``b_real``, from ``instance_rng(seed, ...)`` keyed by the sizes."""
    rng = instance_rng(seed, f"feddualavg:lasso:{d}:{d1}:{M}:{n}")
    w_real = np.r_[np.ones(d1), np.zeros(d - d1)]
    b_real = rng.standard_normal()
    mu = rng.standard_normal((M, 1, d))
    Xf = mu + rng.standard_normal((M, n, d))
    y = Xf @ w_real + b_real + rng.standard_normal((M, n))
    return np.concatenate([Xf, np.ones((M, n, 1))], axis=-1), y, w_real, b_real


def matrix_sensing_data(seed: int, p: int, rank: int, M: int, n: int):
    """The data of (A.6)-(A.8): ``X`` ``(M, n, p^2 + 1)`` (the matrices flattened and a bias column), ``y``
    ``(M, n)``, ``W_real = diag(1_rank, 0)`` and ``b_real``, from ``instance_rng(seed, ...)`` keyed by the sizes."""
    rng = instance_rng(seed, f"feddualavg:nuclear:{p}:{rank}:{M}:{n}")
    W_real = np.zeros((p, p))
    W_real[np.arange(rank), np.arange(rank)] = 1.0
    b_real = rng.standard_normal()
    mu = rng.standard_normal((M, 1, p * p))
    Xf = mu + rng.standard_normal((M, n, p * p))
    y = Xf @ W_real.ravel() + b_real + rng.standard_normal((M, n))
    return np.concatenate([Xf, np.ones((M, n, 1))], axis=-1), y, W_real, b_real


def lasso_experiment(seed: int = 0, d: int = 32, d1: int = 4, M: int = 16, n: int = 32, batch: int = 4,
                     clients_per_round: int = 4, lam_grid=(0.05, 0.1, 0.2, 0.3, 0.5), threshold: float = 1e-2):
    """Federated LASSO (5.1)/(A.1)-(A.4) (``**LASSO_PAPER``: dataset (I); the defaults are the quick sizes,
    ``LASSO_QUICK``): ``w_real = [1_{d1}; 0]``, ``b_real ~ N(0,1)``,
    client means ``mu_m ~ N(0, I)``, ``x = mu_m + N(0, I)``, ``y = w_real^T x + b_real + N(0, 1)``; objective
    ``(1/M) sum_m mean (x^T w + b - y)^2 + lam ||w||_1`` with the bias unregularized (last coordinate).
    ``lam`` is the first value of ``lam_grid`` whose centralized solution has exactly the support of
    ``w_real`` (|w_i| >= threshold), as in the paper ("selected so the centralized solver recovers the
    sparse pattern"); when none has (dataset (I) at the paper's sizes, seed 0: every lam of the grid, and up to 3,
    leaves 6 or more of the 512 zeros above 1e-2), the one of the best F1, recorded in ``params``
    (``centralized_recovers``, ``centralized_f1``)."""
    X, y, w_real, b_real = lasso_data(seed, d, d1, M, n)
    mask = np.r_[np.ones(d), 0.0]
    supp = w_real != 0

    def make(lam):
        return FiniteSumInstance(X=X, y=y, loss="lsq", reg=L1(lam, d + 1, mask), batch_size=batch,
                                 clients_per_round=clients_per_round, seed=seed, source="feddualavg:lasso",
                                 truth={"w_real": w_real, "b_real": b_real, "support": supp},
                                 params={"d": d, "d1": d1, "M": M, "n": n, "batch": batch, "lam": lam,
                                         "clients_per_round": clients_per_round, "threshold": threshold})
    inst, sol, tried, found = _pick_lambda(make, lam_grid,
                                           lambda w: np.array_equal(np.abs(w[:d]) >= threshold, supp),
                                           lambda w: support_f1(w[:d], supp, threshold))
    inst.params["lam_tried"] = [t[0] for t in tried]
    inst.params["centralized_recovers"] = found
    inst.params["centralized_f1"] = float(support_f1(sol.w_star[:d], supp, threshold))
    return inst, sol


def matrix_sensing_experiment(seed: int = 0, p: int = 6, rank: int = 2, M: int = 8, n: int = 32, batch: int = 4,
                              clients_per_round: int = 4, lam_grid=(0.05, 0.1, 0.2, 0.3, 0.5, 0.8),
                              threshold: float = 1e-2):
    """Nuclear-norm matrix estimation (5.2)/(A.5)-(A.8) (``**NUCLEAR_PAPER``: dataset (I); the defaults are the
    quick sizes, ``NUCLEAR_QUICK``): ``W_real = diag(1_rank, 0)``, ``mu_m`` with i.i.d. N(0, 1) entries,
    ``X = mu_m + N(0, I)``, ``y = <W_real, X> + b_real + N(0, 1)``, objective ``(1/M) sum_m mean(<X, W> + b - y)^2
    + lam ||W||_*`` (bias unregularized); ``lam`` the first of ``lam_grid`` whose centralized solution has the
    exact rank (singular values > threshold); when none has, the one of the closest rank, recorded in ``params``
    (``centralized_recovers``, ``centralized_rank``)."""
    X, y, W_real, b_real = matrix_sensing_data(seed, p, rank, M, n)

    def make(lam):
        return FiniteSumInstance(X=X, y=y, loss="lsq", reg=Nuclear(lam, (p, p), 1), batch_size=batch,
                                 clients_per_round=clients_per_round, seed=seed, source="feddualavg:nuclear",
                                 truth={"W_real": W_real, "b_real": b_real, "rank": rank},
                                 params={"p": p, "rank": rank, "M": M, "n": n, "batch": batch, "lam": lam,
                                         "clients_per_round": clients_per_round, "threshold": threshold})

    def rank_of(w):
        return int((np.linalg.svd(w[:p * p].reshape(p, p), compute_uv=False) > threshold).sum())
    inst, sol, tried, found = _pick_lambda(make, lam_grid, lambda w: rank_of(w) == rank,
                                           lambda w: -abs(rank_of(w) - rank))
    inst.params["lam_tried"] = [t[0] for t in tried]
    inst.params["centralized_recovers"] = found
    inst.params["centralized_rank"] = rank_of(sol.w_star)
    return inst, sol


def breast_cancer_logistic(seed: int = 0, M: int = 12, n: int = 32, batch: int = 4, clients_per_round: int = 4,
                           lam: float = 0.02):
    """Sparse (l1) logistic regression on scikit-learn's breast-cancer data (569 x 30), a stand-in for the
    paper's fMRI task (Sec. 5.3): features standardized, labels +-1, a bias column (unregularized); the
    samples sorted by the first principal component and dealt to ``M`` clients in contiguous blocks
    (heterogeneous clients, as sessions are), ``n`` training samples per client, the rest validation."""
    from sklearn.datasets import load_breast_cancer
    data = load_breast_cancer()
    Xa = (data.data - data.data.mean(0)) / data.data.std(0)
    ya = np.where(data.target == 1, 1.0, -1.0)
    rng = instance_rng(seed, "feddualavg:breast_cancer")
    order = rng.permutation(len(ya))
    Xa, ya = Xa[order], ya[order]
    ntr = M * n
    Xtr, ytr, Xva, yva = Xa[:ntr], ya[:ntr], Xa[ntr:], ya[ntr:]
    pc = np.linalg.svd(Xtr - Xtr.mean(0), full_matrices=False)[2][0]
    srt = np.argsort(Xtr @ pc)
    Xtr, ytr = Xtr[srt], ytr[srt]
    d = Xa.shape[1]
    X = np.concatenate([Xtr, np.ones((ntr, 1))], 1).reshape(M, n, d + 1)
    y = ytr.reshape(M, n)
    mask = np.r_[np.ones(d), 0.0]
    inst = FiniteSumInstance(X=X, y=y, loss="logistic", reg=L1(lam, d + 1, mask), batch_size=batch,
                             clients_per_round=clients_per_round, seed=seed, source="sklearn:breast_cancer",
                             validation={"X": np.concatenate([Xva, np.ones((len(yva), 1))], 1), "y": yva},
                             params={"M": M, "n": n, "batch": batch, "lam": lam,
                                     "clients_per_round": clients_per_round, "features": d,
                                     "validation_samples": int(len(yva))})
    return inst, solve_composite(inst)


# =============================================================================================
# the experiment of the rate theorems: expectation bounds at horizon-dependent parameters
def fit_horizon_rate(R, mean, floor, policy=POLICY) -> dict | None:
    """The one rate fitter over every horizon (``fit_rate(window="all")``): the slope of ``log mean`` against
    ``log R`` over the points above ``policy.resolution_factor * floor``; ``None`` with fewer than
    ``policy.fit_min_points``."""
    return V.fit_rate(R, mean, floor, policy, window="all", min_points=max(policy.fit_min_points, 3))


def _sweep_verdict(vs: list) -> str:
    """A reading holds when it holds at the last (most extreme) value of the sweep, is violated when it is
    violated at every value, and is inconclusive otherwise."""
    if not vs:
        return V.INCONCLUSIVE
    if all(v == V.VIOLATED for v in vs):
        return V.VIOLATED
    return V.HOLDS if vs[-1] == V.HOLDS else V.INCONCLUSIVE


def _inst_label(inst) -> str:
    return f"seed {inst.seed}" if getattr(inst, "seed", None) is not None else getattr(inst, "source", "instance")


@dataclass(frozen=True)
class HorizonExpectations:
    """Expectation bounds at horizon-dependent parameters (the experiment of Theorems 4.1-4.3 / C.1, D.1, E.1).

    Rate theorems of stochastic federated methods read "for a horizon ``R`` and the step size ``eta(R, L, B,
    sigma, ...)``, ``E[Phi(output_R)] - Phi* <= bound(R, ...)``".  Every horizon ``R`` of a geometric grid is its
    own set of runs (one batch of ``instances x replicates``; a single run records every ``R`` when no schedule
    depends on ``R``), and the expectation is estimated over ``replicates`` independent random streams:

    * the measured quantity is ``Phi(output) - Phi*`` per run, an interval since ``Phi*`` is certified to an
      interval (``solution.phi_lower``, ``solution.phi_star``);
    * the bound is an interval when a constant is (``Value.interval``, e.g. ``B = D_h(w*, w_0)`` from an
      approximate ``w*``): it is evaluated at the corners of the intervals;
    * a reading is compared with the bound of its own name (else with every bound of the test), under the
      test's statistic (``mean``: mean + z standard errors over the replicates; a deterministic instance is run
      once, and under ``mean`` its run is given twice -- its own expectation, standard error 0);
    * rate: the log-log slope of the mean gap against ``R`` (points above ``POLICY.resolution_factor`` times
      the certified floor), one fit per instance, pooled by the runner; ``rate_decides=True`` adds a ``rate``
      finding (a big-O claim whose constant is not given).

    ``sweep = (name, quick values[, full values])`` repeats everything for several values of a parameter whose
    *limit* the theorem is about ("there exists eta_c^max such that for every eta_c <= eta_c^max ...", swept as
    ``eta_s = 1, 10, 100`` at fixed ``eta = eta_s eta_c``): a reading holds when it holds at the last (most
    extreme) value, is violated when it is violated at *every* value, and is inconclusive otherwise.  The
    runner combines observations by their worst case, which is not that rule, so with a sweep this experiment
    judges every comparison itself (``Comparison.judge`` under the test's statistic) and returns the readings
    as findings; without a sweep it returns the comparisons (one per reading and instance) for the runner.

    Problem protocol: ``family.draw(seed)`` gives an instance with ``constant_names(solution)`` and
    ``constant(name, ctx) -> Value`` (read by :func:`fedcheck.problems.constants.resolve`), ``stochastic``, ``describe()`` and ``batch(instances)``; ``solver(instance, use_cache=)`` gives a solution
    with ``phi_star``, ``phi_lower``, ``reason`` and ``record()``; ``algorithm(batch, rounds=, grid=, rng=,
    **schedules, **algorithm_kwargs)`` returns a trace whose ``metrics[output]`` is ``Phi`` of the output at the
    recorded numbers of rounds.  ``controls``: ``{label: algorithm or (algorithm, metric)}`` run beside,
    reported only; ``save_instance(instance, stem, extra) -> paths`` writes a refuting instance."""

    family: object
    algorithm: object
    output: str
    schedules: dict
    solver: object
    seeds: int = 3
    full_seeds: int | None = None
    horizons: tuple = (16, 32, 64, 128, 256, 512, 1024, 2048)
    full_horizons: tuple | None = None
    replicates: int = 30
    full_replicates: int | None = None
    sweep: tuple | None = None
    algorithm_kwargs: dict = field(default_factory=dict)
    controls: dict = field(default_factory=dict)
    rate_decides: bool = False
    save_instance: object = None
    metric_label: str = "E[Phi(w_hat)] - Phi*"
    trivial: object = None      # (instance, solution) -> (trivial bound of Phi - Phi* on dom psi, what it is): vacuity
    axis = "horizon"

    def __post_init__(self):
        import sympy as sp
        object.__setattr__(self, "schedules", {k: sp.sympify(v) for k, v in self.schedules.items()})
        object.__setattr__(self, "horizons", tuple(self.horizons))
        if self.full_horizons is not None:
            object.__setattr__(self, "full_horizons", tuple(self.full_horizons))

    def validate(self, claim, test) -> None:
        if not test.bounds:
            raise TypeError(f"{claim.id}: HorizonExpectations needs a bound")
        missing = [b.name for b in test.bounds if b.expr is None]
        if missing:
            raise TypeError(f"{claim.id}: HorizonExpectations evaluates SymPy bounds; bound(s) {missing} have no "
                            "expression")
        if test.findings not in ("reading", "auto"):
            raise ValueError(f"{claim.id}: HorizonExpectations names its findings by reading")
        kinds = {test.statistic_of(r).kind for r in claim.readings}
        if self.sweep is not None and "fraction" in kinds:
            raise ValueError(f"{claim.id}: a swept HorizonExpectations judges the mean or every run, not a fraction")

    # -- declaration helpers ------------------------------------------------------------------
    def bounds_of(self, test, reading) -> list:
        """The bounds a reading is compared with: the one of its own name, else every bound."""
        own = [b for b in test.bounds if b.name == reading.name]
        return own or list(test.bounds)

    def reading_bound(self, bound, reading):
        """``bound`` with the reading's substitutions and the schedules substituted (a bound may name a step
        size, e.g. (C.2) at the step (C.3))."""
        import sympy as sp
        b = sp.sympify(bound.expr).subs(dict(reading.substitutions))
        sub = {sp.Symbol(k, positive=True): v for k, v in self.schedules.items()}
        for s in b.free_symbols:
            if s.name in self.schedules:
                sub[s] = self.schedules[s.name]
        return b.subs(sub)

    def _formula(self, claim, test) -> dict:
        import sympy as sp
        return {"bound": sp.latex(test.bounds[0].expr), "bound_text": sp.sstr(test.bounds[0].expr),
                "schedules": {k: sp.latex(v) for k, v in self.schedules.items()},
                "readings": {r.name: {"latex": sp.latex(sp.sympify(self.bounds_of(test, r)[0].expr)
                                                        .subs(dict(r.substitutions))),
                                      "substitutions": {sp.sstr(k): sp.latex(v) for k, v in dict(r.substitutions).items()},
                                      "paper": r.paper, "description": r.description} for r in claim.readings},
                "metric": self.metric_label,
                "statistic": test.statistic.describe() + " (per instance; deterministic instances: their one run)",
                "statistical_z": V.POLICY.statistical_z,
                "sweep": None if self.sweep is None else {"parameter": self.sweep[0],
                                                          "semantics": "holds if it holds at the last value; violated "
                                                                       "only if violated at every value"}}

    def _pick(self, config):
        seeds = config.seed_list(self.seeds, self.full_seeds)
        hs = config.horizons(self.horizons, self.full_horizons)
        reps = config.size(self.replicates, self.full_replicates)   # runs per seeded instance (a sample size)
        sw = None
        if self.sweep is not None:      # the swept values (neither rounds nor seeds)
            vals = config.size(self.sweep[1], self.sweep[2] if len(self.sweep) > 2 else None)
            sw = (self.sweep[0], list(vals))
        return seeds, hs, int(reps), sw

    # -- the run ------------------------------------------------------------------------------------
    def observe(self, claim, test, config, params):
        obs = Observations()
        obs.formula = self._formula(claim, test)
        readings = claim.readings
        if config.instances:
            obs.reasons.append(f"{claim.id} runs on its own problem family; --instance files do not apply "
                               "(run without it)")
            obs.findings = [Finding(r.name, V.INCONCLUSIVE, r.paper, r.description, source=r.source,
                                    deviation=r.deviations) for r in readings]
            return obs
        seeds, horizons, reps, sweep = self._pick(config)
        insts = [self.family.draw(s) for s in seeds]
        sols = [self.solver(i, use_cache=config.use_cache) for i in insts]
        consts = [resolve_all(InstanceContext(i, None, s, {})) for i, s in zip(insts, sols)]
        for c in consts:
            for k, v in params.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    c[k] = Value(float(v), True, "parameter")
        S = [reps if i.stochastic else 1 for i in insts]
        triv = [self.trivial(i, s) for i, s in zip(insts, sols)] if self.trivial is not None else None
        sweep_vals = sweep[1] if sweep else [None]
        pairs = [(r, b) for r in readings for b in self.bounds_of(test, r)]
        rb = {(r.name, b.name): self.reading_bound(b, r) for r, b in pairs}
        depends_R = any(R_sym in e.free_symbols for e in self.schedules.values())
        # results[v_idx][i] = {"lo": (S, P), "hi": (S, P), "bound": {(reading, bound): (lo (P,), hi (P,))}, "controls"}
        results: list = []
        for v in sweep_vals:
            per_inst = [{"lo": np.full((S[i], len(horizons)), np.nan), "hi": np.full((S[i], len(horizons)), np.nan),
                         "bound": {key: (np.full(len(horizons), np.nan), np.full(len(horizons), np.nan)) for key in rb},
                         "controls": {c: np.full((S[i], len(horizons)), np.nan) for c in self.controls}}
                        for i in range(len(insts))]
            groups = [[h] for h in horizons] if depends_R else [list(horizons)]
            for hs in groups:
                self._run_group(claim.id, insts, sols, consts, S, hs, horizons, v, sweep, per_inst, rb)
            results.append(per_inst)
        # comparisons and their judgements under the test's statistic
        last = len(sweep_vals) - 1
        cmps = [[{} for _ in insts] for _ in sweep_vals]
        summaries = [[{} for _ in insts] for _ in sweep_vals]
        verdict_table = {r.name: [] for r in readings}    # per sweep value: combined over instances
        # the mean statistic's Bonferroni family: every (sweep value, instance, reading, bound, horizon) judged
        family = len(sweep_vals) * len(insts) * len(horizons) * sum(
            len(self.bounds_of(test, r)) for r in readings if test.statistic_of(r).kind == "mean")
        for vi in range(len(sweep_vals)):
            for r in readings:
                st = test.statistic_of(r).of_family(family)
                vs = []
                for i, inst in enumerate(insts):
                    d = results[vi][i]
                    lo, hi = d["lo"], d["hi"]
                    if st.kind == "mean" and lo.shape[0] == 1:     # one deterministic run: its own expectation
                        lo, hi = np.repeat(lo, 2, 0), np.repeat(hi, 2, 0)
                    js = []
                    for b in self.bounds_of(test, r):
                        blo, bhi = d["bound"][(r.name, b.name)]
                        cmp = Comparison(lhs_lo=lo, lhs_hi=hi, rhs_lo=blo, rhs_hi=bhi, relation=b.relation,
                                         scale=max(1.0, abs(sols[i].phi_star)) if np.isfinite(sols[i].phi_star) else 1.0,
                                         points=horizons, point_name="R",
                                         **({"trivial": triv[i][0], "trivial_what": triv[i][1]} if triv else {}))
                        cmps[vi][i][(r.name, b.name)] = cmp
                        s = cmp.judge(st)
                        if sols[i].reason:
                            s["verdict"] = V.combine([s["verdict"], V.INCONCLUSIVE])
                            s["inconclusive_reason"] = sols[i].reason
                        js.append(s)
                        if sweep is not None:       # kept for the tidy table, which applies the sweep rule too
                            obs.judged.append((r.name, Observed(r.name, b.name, _inst_label(inst), cmp, instance=inst,
                                                                reason=sols[i].reason), s, st,
                                               {"sweep": {"parameter": sweep[0], "value": float(sweep_vals[vi]),
                                                          "index": vi, "values": len(sweep_vals)}}))
                    s = js[0] if len(js) == 1 else {
                        "verdict": V.combine([j["verdict"] for j in js]),
                        "max_ratio": max((j["max_ratio"] for j in js if j["max_ratio"] is not None), default=None),
                        "bounds": js}
                    summaries[vi][i][r.name] = s
                    vs.append(s["verdict"])
                verdict_table[r.name].append(V.combine(vs))
        if sweep is None:       # the runner judges the comparisons
            for i, inst in enumerate(insts):
                for (rname, bname), cmp in cmps[0][i].items():
                    save = None
                    if self.save_instance is not None:
                        save = (lambda stem, inst=inst, i=i: self.save_instance(inst, stem, {
                            "check": claim.id, "readings": summaries[0][i], "horizons": list(horizons)}))
                    r_st = test.statistic_of(next(r for r in readings if r.name == rname))
                    obs.items.append(Observed(rname, bname, _inst_label(inst), cmp, instance=inst,
                                              reason=sols[i].reason, save=save, key=i,
                                              statistic=r_st.of_family(family) if r_st.kind == "mean" else None))
        else:                   # the sweep rule, per reading
            for r in readings:
                vt = verdict_table[r.name]
                ratios = [summaries[last][i][r.name]["max_ratio"] for i in range(len(insts))
                          if summaries[last][i][r.name]["max_ratio"] is not None]
                bad = [i for i in range(len(insts)) if summaries[last][i][r.name]["verdict"] == V.VIOLATED]
                ev = "; ".join(f"{sweep[0]}={val:g}: {vv}" for val, vv in zip(sweep_vals, vt))
                if bad:
                    s = summaries[last][bad[0]][r.name]
                    s = s if "bounds" not in s else next(j for j in s["bounds"] if j["verdict"] == V.VIOLATED)
                    ev = (f"violated on {len(bad)}/{len(insts)} instance(s); first: {_inst_label(insts[bad[0]])} from "
                          f"R={s['first_violation_R']} (worst R={s['argmax_R']}: measured {s['lhs_at_argmax']:.4g} vs "
                          f"bound {s['rhs_at_argmax']:.4g}); {ev}")
                obs.findings.append(Finding(r.name, _sweep_verdict(vt), r.paper, r.description,
                                            max(ratios) if ratios else None, ev,
                                            {"statistic": test.statistic_of(r).describe(), "cases": len(insts),
                                             "sweep": {sweep[0]: sweep_vals, "verdicts": vt}},
                                            source=r.source, deviation=r.deviations))
        # rates (last sweep value), records, series
        claimed = test.rate if test.rate is not None else claim.claimed_rate
        series, fits = [], []
        for i, inst in enumerate(insts):
            d = results[last][i]
            mean = np.nanmean(d["hi"], 0)
            floor = np.nanmean(d["hi"] - d["lo"], 0)
            fit = fit_horizon_rate(horizons, mean, floor) if claimed is not None else None
            fits.append(fit)
            rec = {"seed": inst.seed, "instance": inst.describe(), "F_star": sols[i].phi_star,
                   "F_star_lower": sols[i].phi_lower, "solver": sols[i].record(),
                   "constants": {k: {"value": c.value, "exact": c.exact, "note": c.note,
                                     **({"interval": list(c.interval)} if getattr(c, "interval", None) else {})}
                                 for k, c in consts[i].items()},
                   "replicates": S[i], "rounds": list(horizons), "x_label": "R (rounds; one run per horizon)",
                   "metric": mean, "metric_lo": np.nanmean(d["lo"], 0),
                   "metric_se": (np.nanstd(d["hi"], 0, ddof=1) / np.sqrt(S[i])) if S[i] > 1 else np.zeros(len(horizons)),
                   "bound": {r.name: d["bound"][(r.name, self.bounds_of(test, r)[0].name)][1] for r in readings},
                   "readings": summaries[last][i], "fit": fit}
            if sols[i].reason:
                rec["inconclusive_reason"] = sols[i].reason
            if self.controls:
                rec["controls"] = {c: np.nanmean(a, 0) for c, a in d["controls"].items()}
            if sweep:
                rec["sweep"] = [{"value": val, "metric": np.nanmean(results[vi][i]["hi"], 0),
                                 "bound": {r.name: results[vi][i]["bound"][(r.name, self.bounds_of(test, r)[0].name)][1]
                                           for r in readings},
                                 "readings": {k: {"verdict": s["verdict"], "max_ratio": s["max_ratio"]}
                                              for k, s in summaries[vi][i].items()}}
                                for vi, val in enumerate(sweep_vals)]
            obs.records.append(rec)
            if i == 0:
                panel = f"{claim.id}: {_inst_label(inst)}" + (f" ({sweep[0]}={sweep_vals[last]:g})" if sweep else "")
                common = {"panel": panel, "x": list(horizons), "xlabel": "R", "ylabel": self.metric_label,
                          "logx": True, "logy": True}
                series.append({**common, "label": self.metric_label, "y": mean, "role": "measured"})
                for r in readings:
                    series.append({**common, "label": f"bound ({r.name})", "y": rec["bound"][r.name], "role": "bound"})
                for c, a in d["controls"].items():
                    series.append({**common, "label": c, "y": np.nanmean(a, 0), "role": "reference"})
        obs.series = series
        obs.fits = fits
        if claimed is not None and self.rate_decides:
            pooled = V.pooled_rate(fits)
            slope, ci = (pooled["slope"], pooled["ci"]) if pooled else (None, None)
            obs.findings.append(Finding("rate", V.rate_verdict(ci, float(claimed)), True,
                                        f"fitted slope of the mean gap in R vs the claimed {float(claimed):g}",
                                        None, f"slope {slope} CI {ci}"))
        obs.reasons.extend(sorted({s.reason for s in sols if s.reason}))
        obs.evidence = {"horizons": list(horizons), "instances": len(insts), "replicates": S,
                        "sweep": None if sweep is None else {"parameter": sweep[0], "values": sweep_vals,
                                                             "verdicts": verdict_table},
                        "one_run_per_horizon": depends_R, "statistical_z": V.POLICY.statistical_z}
        # a refuted sweep: write the refuting instances (without a sweep the runner saves them)
        if sweep is not None and config.save_dir and self.save_instance is not None:
            paper_findings = [f for f in obs.findings if f.paper] or obs.findings
            if V.combine(f.verdict for f in paper_findings) == V.VIOLATED:
                paper = {r.name for r in readings if r.paper}
                for i, inst in enumerate(insts):
                    if any(summaries[last][i][n]["verdict"] == V.VIOLATED for n in paper):
                        stem = f"{config.save_dir}/{claim.id}-seed{inst.seed}"
                        obs.saved_instances.extend(self.save_instance(inst, stem, {
                            "check": claim.id, "readings": summaries[last][i], "horizons": list(horizons),
                            "sweep": {sweep[0]: sweep_vals}}))
        return obs

    def _values(self, consts_i: dict, R: int, sweep, v) -> dict:
        vals = {k: float(c.value) for k, c in consts_i.items()}
        vals[R_sym.name] = float(R)
        if sweep is not None:
            vals[sweep[0]] = float(v)
        return vals

    def _run_group(self, cid, insts, sols, consts, S, hs, horizons, v, sweep, per_inst, rb):
        import itertools
        Rrun = max(hs)
        # batches of instances of one shape
        shape_groups: dict = {}
        for i, inst in enumerate(insts):
            key = (type(inst).__name__, inst.M, inst.d, inst.K, type(inst.reg).__name__, inst.noise)
            shape_groups.setdefault(key, []).append(i)
        for idxs in shape_groups.values():
            elems = [(i, s) for i in idxs for s in range(S[i])]
            vals = [self._values(consts[i], Rrun, sweep, v) for i, _ in elems]
            N = len(elems)
            steps = {}
            for name, expr in self.schedules.items():
                need = {s.name for s in expr.free_symbols}
                arr = {k: np.array([vv[k] for vv in vals]) for k in need}
                steps[name] = evaluate_expr(expr, arr, N)
            batch = insts[idxs[0]].batch([insts[i] for i, _ in elems])
            tag = f"{cid}|{v}|{Rrun}|" + ",".join(str(insts[i].seed) for i in idxs)
            rng = instance_rng(0, tag)
            grid = np.array(sorted(hs))
            trace = self.algorithm(batch, rounds=Rrun, grid=grid, rng=rng, **steps, **self.algorithm_kwargs)
            phi = trace.metrics[self.output]                    # (len(grid), N)
            ctrl = {}
            for cname, spec in self.controls.items():
                calg, cmetric = spec if isinstance(spec, tuple) else (spec, self.output)
                ctr = calg(batch, rounds=Rrun, grid=grid, rng=instance_rng(1, tag), **steps, **self.algorithm_kwargs)
                ctrl[cname] = ctr.metrics[cmetric if cmetric in ctr.metrics else "Phi_avg"]
            cols = [horizons.index(h) for h in grid]
            for n, (i, s) in enumerate(elems):
                sol = sols[i]
                per_inst[i]["lo"][s, cols] = phi[:, n] - sol.phi_star
                lower = sol.phi_lower if np.isfinite(sol.phi_lower) else np.nan
                per_inst[i]["hi"][s, cols] = phi[:, n] - lower
                for cname, arr in ctrl.items():
                    per_inst[i]["controls"][cname][s, cols] = arr[:, n] - sol.phi_star
            for i in idxs:
                for key, expr in rb.items():
                    for col, h in zip(cols, grid):
                        base = self._values(consts[i], h, sweep, v)
                        ivals = {k: getattr(c, "interval", None) for k, c in consts[i].items()}
                        ivals = {k: iv for k, iv in ivals.items() if iv is not None and
                                 k in {s.name for s in expr.free_symbols}}
                        outs = []
                        for corner in itertools.product(*[[(k, iv[0]), (k, iv[1])] for k, iv in ivals.items()]):
                            vv = dict(base)
                            vv.update(dict(corner))
                            outs.append(float(evaluate_expr(expr, vv)))
                        if not outs:
                            outs = [float(evaluate_expr(expr, base))]
                        per_inst[i]["bound"][key][0][col] = min(outs)
                        per_inst[i]["bound"][key][1][col] = max(outs)
