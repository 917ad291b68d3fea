"""Exact solves: time per solve, formulations compared, and the cache's hit rate.

    python benchmarks/solve.py                  # formulations on Theorem 1's family (16 seeds)
    python benchmarks/solve.py --seeds 8 --family small

Every formulation solves the consensus problem (3) of the FedFW paper,
``min (1/n) sum_i f_i(x_i)  s.t.  x_i = z (dual y_i),  x_i in D``, with Clarabel through
cvxpy, and is then certified by ``fedcheck.solve.certify`` (projected-gradient polishing,
Frank-Wolfe gap of the polished point, dual residual of ``Y*``), so every row is judged by
the same certificates.  Times are CPU seconds of this process (the machine is shared), split
into cvxpy's compilation and Clarabel's own solve time.  The last section runs
``solve_consensus`` twice on the same instances with a fresh cache and prints
``fedcheck.solve.CACHE_STATS``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cvxpy as cp  # noqa: E402

from fedcheck.problems import solve as S  # noqa: E402
from fedcheck.problems.instances import Instance, RandomFamily  # noqa: E402
from theorems.fedfw import theorem1  # noqa: E402


def _set_rows(inst: Instance, X):
    """``X[i] in D`` for every row, vectorized where cvxpy allows it."""
    r = float(inst.set.radius)
    name = inst.set.name
    if name == "l1":
        return [cp.norm1(X, axis=1) <= r]
    if name == "l2":
        return [cp.norm(X, 2, axis=1) <= r]
    if name == "box":
        return [X <= r, X >= -r]
    if name == "simplex":
        return [X >= 0, cp.sum(X, axis=1) == r]
    return [c for i in range(inst.n) for c in inst.set.cvx_constraints(X[i])]


def _ls_objective(inst: Instance, X, how: str):
    n, m, p = inst.A.shape
    if how == "rows":
        return S._objective_terms(inst, X)
    if how == "quad":  # (1/n) sum_i 0.5 x_i^T H_i x_i - c_i^T x_i + b2_i, with H_i = A_i^T A_i / m
        loss = inst.make_loss()
        terms = [0.5 * cp.quad_form(X[i], cp.psd_wrap(loss.H[i])) - loss.c[i] @ X[i] for i in range(n)]
        return (cp.sum(cp.hstack(terms)) + float(loss.b2.sum())) / n
    if how == "stacked":  # one sum_squares of the block-diagonal residual (R_i from a QR when m > p)
        import scipy.sparse as sp
        blocks, rhs, const = [], [], 0.0
        for i in range(n):
            if m > p:
                Q, R = np.linalg.qr(inst.A[i])
                q = Q.T @ inst.b[i]
                blocks.append(R)
                rhs.append(q)
                const += float(inst.b[i] @ inst.b[i] - q @ q)
            else:
                blocks.append(inst.A[i])
                rhs.append(inst.b[i])
        M = sp.block_diag(blocks, format="csr")
        return (cp.sum_squares(M @ cp.vec(X, order="C") - np.concatenate(rhs)) + const) / (2 * m * n)
    raise ValueError(how)


def _solve(prob, settings) -> tuple[float, float]:
    """Compile (cvxpy) and solve (Clarabel) separately; CPU seconds of each."""
    c0 = time.process_time()
    data, chain, inverse = prob.get_problem_data(cp.CLARABEL, solver_opts=settings)
    c1 = time.process_time()
    soln = chain.solve_via_data(prob, data, solver_opts=settings)
    prob.unpack_results(soln, chain, inverse)
    return c1 - c0, time.process_time() - c1


def formulation(name: str):
    """``inst -> (x, Y, status, compile_s, solve_s)`` for one formulation."""
    def run(inst: Instance, **settings):
        n, m, p = inst.A.shape
        X = cp.Variable((n, p))
        objective = _ls_objective(inst, X, {"v1-rows": "rows", "vec-quad": "quad"}.get(name, "stacked")) \
            if inst.loss == "least_squares" else S._objective_terms(inst, X)
        if name == "v1-rows":  # the formulation of consensus-v1: one constraint per client
            z = cp.Variable(p)
            cons_c = [X[i] == z for i in range(n)]
            cons = cons_c + [c for i in range(n) for c in inst.set.cvx_constraints(X[i])]
            dual = lambda: np.stack([c.dual_value for c in cons_c])  # noqa: E731
        elif name in ("vec", "vec-quad"):  # X == 1 z^T in one constraint, sets vectorized over rows
            z = cp.Variable(p)
            cc = X == np.ones((n, 1)) @ cp.reshape(z, (1, p), order="C")
            cons = [cc] + _set_rows(inst, X)
            dual = lambda: np.asarray(cc.dual_value)  # noqa: E731
        elif name == "elim":  # no z: x_i = x_1 for i >= 2 (duals mu_i; y_1 = -sum mu_i)
            cc = X[1:, :] == np.ones((n - 1, 1)) @ X[0:1, :]
            cons = [cc] + _set_rows(inst, X)
            dual = lambda: (lambda mu: np.vstack([-mu.sum(0, keepdims=True), mu]))(  # noqa: E731
                np.asarray(cc.dual_value).reshape(n - 1, p))
        else:
            raise ValueError(name)
        prob = cp.Problem(cp.Minimize(objective), cons)
        comp_s, solve_s = _solve(prob, settings)
        x = X.value.mean(0) if X.value is not None else np.full(p, np.nan)
        return x, dual(), str(prob.status), comp_s, solve_s
    return run


def single_variable(inst: Instance, **settings):
    """min F(x) over D in p variables; Y* in closed form y_i = (grad F(x*) - grad f_i(x*)) / n (smooth f_i)."""
    n, m, p = inst.A.shape
    x = cp.Variable(p)
    X = cp.vstack([x] * n)
    prob = cp.Problem(cp.Minimize(_ls_objective(inst, X, "stacked") if inst.loss == "least_squares"
                                  else S._objective_terms(inst, X)), inst.set.cvx_constraints(x))
    comp_s, solve_s = _solve(prob, settings)
    return np.asarray(x.value), None, str(prob.status), comp_s, solve_s   # certify forms Y* at x_hat


def compare(insts, rows, settings_rows):
    print(f"{'formulation':34} {'status':>8} {'compile s':>10} {'clarabel s':>11} {'total s':>8} "
          f"{'max gap':>9} {'max dual res':>12} {'max |F-F_v1|':>13} {'max |Y-Y_v1|':>13}")
    ref = {}
    for label, fn, settings in rows + settings_rows:
        comp, solv, gaps, dres, dF, ynorm, stat = [], [], [], [], [], [], set()
        for inst in insts:
            x, Y, status, c_s, s_s = fn(inst, **settings)
            sol = S.certify(inst, x, Y)
            comp.append(c_s)
            solv.append(s_s)
            gaps.append(sol.gap)
            dres.append(sol.dual_residual)
            stat.add(status)
            key = inst.seed
            if label == rows[0][0]:
                ref[key] = sol
            dF.append(abs(sol.F_star - ref[key].F_star))
            ynorm.append(float(np.max(np.abs(sol.Y_star - ref[key].Y_star))))
        print(f"{label:34} {'/'.join(sorted(stat)):>8} {statistics.median(comp):10.4f} {statistics.median(solv):11.4f} "
              f"{statistics.median(comp) + statistics.median(solv):8.4f} {max(gaps):9.1e} {max(dres):12.1e} "
              f"{max(dF):13.1e} {max(ynorm):13.1e}")


def cache_run(insts):
    old = os.environ.get("FEDCHECK_CACHE")
    with tempfile.TemporaryDirectory() as d:
        os.environ["FEDCHECK_CACHE"] = d
        S.CACHE_STATS.update(hits=0, misses=0)
        ts = []
        for rep in range(2):
            c0 = time.process_time()
            for inst in insts:
                S.solve_consensus(inst)
            ts.append(time.process_time() - c0)
        st = dict(S.CACHE_STATS)
    if old is None:
        os.environ.pop("FEDCHECK_CACHE", None)
    else:
        os.environ["FEDCHECK_CACHE"] = old
    rate = st["hits"] / max(1, st["hits"] + st["misses"])
    print(f"\nsolve_consensus ({S.FORMULATION_VERSION}), {len(insts)} instances, fresh cache, run twice: "
          f"cold {ts[0]:.2f} s ({ts[0] / len(insts):.3f} s/solve), warm {ts[1]:.3f} s "
          f"({1e3 * ts[1] / len(insts):.1f} ms/instance); CACHE_STATS={st} hit rate {rate:.0%} "
          f"(second run {st['hits'] / len(insts):.0%})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--family", choices=["theorem1", "small", "tall"], default="theorem1",
                    help="theorem1: n=10 m=20 p=20; small: n=4 m=10 p=6; tall: n=10 m=60 p=20 (QR compression)")
    ap.add_argument("--loss", default=None, help="override the family's loss (least_squares, logistic)")
    ap.add_argument("--set", default=None, help="override the family's set (l1, l2, box, simplex)")
    args = ap.parse_args(argv)
    fam = {"theorem1": theorem1.family,
           "small": RandomFamily(n=4, m=10, p=6),
           "tall": RandomFamily(n=10, m=60, p=20)}[args.family]
    if args.loss or args.set:
        import dataclasses
        fam = dataclasses.replace(fam, loss=args.loss or fam.loss, set=args.set or fam.set)
    insts = [fam.draw(s) for s in range(args.seeds)]
    print(f"# family {fam.key}, {len(insts)} instances; medians per solve (CPU s), worst certificates")
    rows = [("v1-rows (consensus-v1)", formulation("v1-rows"), {}),
            ("vec: X = 1 z^T, sets by rows", formulation("vec"), {}),
            ("vec-quad: quad_form(psd_wrap(H_i))", formulation("vec-quad"), {}),
            ("elim: x_i = x_1, no z", formulation("elim"), {}),
            ("single x + closed-form Y*", single_variable, {})]
    settings_rows = [("vec + tol 1e-10", formulation("vec"), {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10,
                                                              "tol_feas": 1e-10}),
                     ("vec + no presolve/equilibrate", formulation("vec"), {"presolve_enable": False,
                                                                            "equilibrate_enable": False})]
    compare(insts, rows, settings_rows)
    cache_run(insts)


if __name__ == "__main__":
    main()
