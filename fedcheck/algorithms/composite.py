"""Federated composite optimization: the algorithms of Yuan, Zaheer & Reddi (ICML 2021).

Algorithms (all with ``h = 1/2 ||.||_2^2``, the paper's choice in every experiment, so that
``grad h`` is the identity and ``grad (h + a psi)^*`` is ``prox_{a psi}``):

================================  =====================================================================
:func:`primal_averaging`          the primal-averaging family (FedAvg with a server learning rate and
                                  optional client / server proxes); the methods below but FedDualAvg
:func:`fedavg_subgradient`        FedAvg(d): local subgradient steps on ``f + psi`` (Fig. 1 baseline)
:func:`fedmid`                    Algorithm 2 (FedMiD): client prox steps, server prox of weight
                                  ``eta_s eta_c K``, *as written*
:func:`fedmid_no_server_prox`     control: Algorithm 2 without the server prox (``psi`` counted once)
:func:`fedmid_osp`                Algorithm 4 (FedMiD-OSP): plain client steps, server prox
:func:`feddualavg`                Algorithm 3 (FedDualAvg)
:func:`feddualavg_osp`            Algorithm 5 (FedDualAvg-OSP): client primal without prox
================================  =====================================================================

Indexing is the paper's: rounds ``r = 0 .. R-1``, local steps ``k = 0 .. K-1``, server states
``w_0 .. w_R``.  A trace's ``rounds`` are numbers of *completed* rounds (``R`` on the record grid; the default
grid is ``0`` -- the start -- then :func:`record_grid`); ``trace.start = 0``.

Common arguments (the library's convention, :mod:`fedcheck.algorithms`): ``rounds``; ``eta_c``, ``eta_s`` scalars or
``(B,)``; ``grid``, ``recorder``; ``w0`` (or ``x0``) the start ``(B, d)``; ``rng`` a generator or ``seeds`` its
:class:`numpy.random.SeedSequence` entropy (default 0) for client sampling and stochastic gradients.  Each returns a
:class:`~fedcheck.algorithms.core.Trace`.  Example::

    tr = feddualavg(problem, rounds=50, eta_c=0.01, seeds=1)     # tr.metrics["Phi_avg"][i] after tr.rounds[i]

Problem protocol (``fedcheck.problems.composite.QuadraticClients`` / ``FiniteSumClients``)::

    B, M, d, K                       batch size, clients, dimension, local steps
    reg                              a batched regularizer (fedcheck.regularizers)
    x0() -> (B, d)                   starting points w_0 (in dom psi)
    start_round(sel, rng) -> ctx     per-round oracle state (e.g. an epoch permutation)
    grad(W, ctx, k, rng) -> (B,S,d)  stochastic gradients of the selected clients at W (B, S, d)
    F(w), Phi(w) -> (B,)             objective values at server points (B, d)
    dual_norm_sq(V) -> V.shape[:-1]  squared dual norm of the geometry

Step sizes ``eta_c``, ``eta_s`` are scalars or ``(B,)`` arrays (one value per instance; the paper
uses constant step sizes).  ``clients_per_round`` (``|S_r|``) draws a uniform subset per round and
instance (partial participation); ``None`` is full participation (``S_r = [M]``, Assumption 1(e)).
No Python loop over clients or instances: a round is ``K`` batched steps.

Recorded at each grid point ``R`` (by :func:`default_recorder`): ``Phi`` of the server state ``w_R``,
``Phi_avg`` of ``(1/R) sum_{r=1}^R w_r`` (the output of Theorem E.1), and for FedDualAvg ``Phi_hat``
of ``(1/(KR)) sum_{r<R} sum_{k=1}^K hat w_{r,k}`` (the output (4.4) of Theorems C.1/D.1, with the
virtual iterates ``hat w_{r,k} = prox_{eta~_{r,k} psi}(zbar_{r,k})``) and ``disc``, the discrepancy
``sum_{r<R, k<K, m} ||zbar_{r,k} - z^m_{r,k}||_*^2`` of Lemma C.2.  ``track_stability=True`` keeps
``(1/M) sum_m ||z^m_{r,k} - zbar_{r,k}||_*^2`` for every ``r`` and ``k = 0..K`` in ``trace.final["stab"]``
(shape ``(R, K+1, B)``); ``track=False`` skips the (4.4) average and the discrepancy (experiments).
``hook(r, k, info)`` is called after every local step with the batched
quantities of that step (for pathwise lemma checks).
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from fedcheck.algorithms.composite_jit import CompositeRounds, DualStep, prox_of
from fedcheck.algorithms.core import Trace, record_grid
from fedcheck.algorithms.fedavg import fedavg_rounds
from fedcheck.algorithms.kernels import clients_mean
from fedcheck.algorithms.pieces import subset_clients

__all__ = ["primal_averaging", "fedavg_subgradient", "fedmid", "fedmid_no_server_prox", "fedmid_osp", "feddualavg",
           "feddualavg_osp", "default_recorder", "ALGORITHMS"]

Recorder = Callable[[object, int, Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]


def default_recorder(problem, R: int, points: Mapping[str, np.ndarray]) -> dict:
    """``Phi`` at every recorded point: ``w`` -> ``Phi``, ``w_avg`` -> ``Phi_avg``, ``w_hat`` -> ``Phi_hat``."""
    out = {}
    for name, w in points.items():
        if name.startswith("w"):
            out["Phi" + name[1:]] = problem.Phi(w)
        else:
            out[name] = w
    return out


def _euclidean_dual_norm(problem) -> bool:
    """Whether ``problem.dual_norm_sq(V)`` is ``(V * V).sum(-1)`` (the library's composite problems in the
    Euclidean geometry)."""
    from fedcheck.problems.composite import FiniteSumClients, QuadraticClients
    fn = getattr(type(problem), "dual_norm_sq", None)
    return (fn is QuadraticClients.dual_norm_sq and problem.geometry == "euclidean") or \
        fn is FiniteSumClients.dual_norm_sq


def _vec(x, B):
    return np.broadcast_to(np.asarray(x, dtype=float), (B,)).astype(float)


def _select(problem, S, rng):
    return subset_clients(rng, problem.B, problem.M, S)


def _whole_rounds(run, problem, prox, dual, z, ec, es, hat_sum, disc):
    """Every round by :class:`~fedcheck.algorithms.composite_jit.CompositeRounds` (the same bits), recorded on the
    grid; the last server point ``w``, or ``None`` when the compiled rounds do not apply (nothing done)."""
    runner = CompositeRounds.of(problem, prox)
    if runner is None or run.R < 1:
        return None
    batched = run.rec is default_recorder
    K = problem.K
    if hat_sum is None:                  # FedMiD: no virtual iterates, no discrepancy
        hat_sum, disc = np.zeros((problem.B, problem.d)), np.zeros(problem.B)
    if runner.lanes:                     # the recorded values (or points) written by the compiled rounds
        w, rec, pts = runner.run(dual, run.R, z, ec, es, run.w_sum, hat_sum, disc, run.rng, run.want, batched)
        rr = np.flatnonzero(run.want[1:run.R + 1]) + 1
        if batched and rr.size:
            for m, k in enumerate(("Phi", "Phi_avg", "Phi_hat", "disc") if dual else ("Phi", "Phi_avg")):
                head = run.rows.get(k)
                run.rows[k] = np.concatenate([np.stack(head), rec[m]]) if head else rec[m]
        elif not batched:
            names = ("w", "w_avg", "w_hat") if dual else ("w", "w_avg")
            for j, r in enumerate(rr):
                pts_r = {k: np.ascontiguousarray(pts[m, j].T) for m, k in enumerate(names)}
                if dual:
                    pts_r["disc"] = rec[3, j].copy()
                run.take(int(r), pts_r)
        return w
    w = None
    for r0, nr, ow, ows, oh, od in runner.rounds(dual, run.R, z, ec, es, run.w_sum, hat_sum, disc, run.rng):
        rr = np.arange(r0 + 1, r0 + nr + 1)
        want = run.want[rr]
        w = ow[:, -1].copy()
        if not want.any():
            continue
        avg = ows / rr[:, None]
        hat = oh / (K * rr)[:, None] if dual else None
        if batched:                  # default_recorder's Phi of every recorded point of the block at once
            cols = {"Phi": runner.Phi(ow), "Phi_avg": runner.Phi(avg)}
            if dual:
                cols.update(Phi_hat=runner.Phi(hat), disc=od)
            for j in np.flatnonzero(want):
                for k, v in cols.items():
                    run.rows.setdefault(k, []).append(v[:, j].copy())
            continue
        for j in np.flatnonzero(want):
            pts = {"w": np.ascontiguousarray(ow[:, j]), "w_avg": np.ascontiguousarray(avg[:, j])}
            if dual:
                pts.update(w_hat=np.ascontiguousarray(hat[:, j]), disc=od[:, j].copy())
            run.take(int(rr[j]), pts)
    return w


class _Run:
    """Shared round driver: recording on a grid of completed rounds, server averages."""

    def __init__(self, problem, rounds, grid, recorder, rng, clients_per_round, seeds=None):
        self.p = problem
        self.R = int(rounds)
        self.grid = np.append(0, record_grid(self.R)) if grid is None else np.asarray(grid, dtype=int)   # 0: the start
        self.grid = self.grid[(self.grid >= 0) & (self.grid <= self.R)]
        self.want = np.zeros(self.R + 1, dtype=bool)
        self.want[self.grid] = True
        self.rec = recorder or default_recorder
        seed = np.random.SeedSequence(0 if seeds is None else seeds)
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self.S = clients_per_round
        self.rows: dict[str, list] = {}
        self.w_sum = np.zeros((problem.B, problem.d))

    def take(self, R, points):
        for k, v in self.rec(self.p, R, points).items():
            self.rows.setdefault(k, []).append(np.asarray(v, dtype=float))

    def trace(self, final):
        return Trace(rounds=self.grid.copy(), metrics={k: v if type(v) is np.ndarray else np.stack(v)
                                                       for k, v in self.rows.items()}, final=final,
                     start=0)


def primal_averaging(problem, *, rounds, eta_c, eta_s=1.0, client_prox: bool, server_prox: bool, subgradient=False,
                     grid=None, recorder=None, rng=None, clients_per_round=None, hook=None, w0=None, x0=None,
                     seeds=None) -> Trace:
    """The primal-averaging family of composite methods -- FedAvg (no prox), FedAvg(d) (``subgradient``), FedMiD
    (both proxes), FedMiD-OSP (``server_prox`` only), FedMiD without server prox (``client_prox`` only): the one
    FedAvg (:func:`fedcheck.algorithms.fedavg.fedavg_rounds`) with this module's oracle, client sampling,
    server step ``eta_s`` and the prox hooks (line 8: client ``grad(h + eta_c psi)^*``; line 10: server
    ``grad(h + eta_s eta_c K psi)^*``); recording on the grid of completed rounds.

    Reference: Yuan, Zaheer and Reddi (ICML 2021), Algorithms 1, 2 and 4; Theorem 4.1 (FedMiD, as stated in the
    main text).  Arguments and return: the module doc (``rounds``, ``eta_c``, ``eta_s``, ``x0``/``w0``,
    ``seeds``/``rng``; a :class:`Trace` with ``start = 0``).
    Example: ``primal_averaging(problem, rounds=R, eta_c=0.01, client_prox=True, server_prox=True, seeds=0)``."""
    B, K = problem.B, problem.K
    ec, es = _vec(eta_c, B), _vec(eta_s, B)
    reg = problem.reg
    prox = prox_of(reg)                                  # reg.prox (compiled for the plain l1: the same bits)
    run = _Run(problem, rounds, grid, recorder, rng, clients_per_round, seeds)
    w0 = x0 if w0 is None else w0
    if client_prox and server_prox and not subgradient and hook is None and (run.S is None or run.S >= problem.M):
        x = np.array(problem.x0() if w0 is None else w0, dtype=float)   # FedMiD's rounds compiled (the same bits)
        if run.want[0]:
            run.take(0, {"w": x, "w_avg": x})
        w = _whole_rounds(run, problem, prox, False, x, ec, es, None, None) if x.flags.c_contiguous else None
        if w is not None:
            return run.trace({"w": w})
        run.rows.clear()

    def oracle(r, sel):
        ctx = problem.start_round(sel, run.rng)
        if subgradient:                                 # FedAvg(d): g + s, s in d psi(w)
            return lambda W, t: problem.grad(W, ctx, t - 1, run.rng) + reg.subgrad(W)
        return lambda W, t: problem.grad(W, ctx, t - 1, run.rng)

    states = fedavg_rounds(problem.x0() if w0 is None else np.array(w0, dtype=float), oracle, rounds=run.R,
                           n=problem.M, eta=ec, steps=K, eta_s=es,
                           participation=lambda r: subset_clients(run.rng, B, problem.M, run.S),
                           client_map=(lambda W: prox(W, ec)) if client_prox else None,
                           server_map=(lambda w: prox(w, es * ec * K)) if server_prox else None, hook=hook)
    st = next(states)
    if run.want[0]:
        run.take(0, {"w": st.x, "w_avg": st.x})
    for st in states:
        run.w_sum += st.x
        if run.want[st.rounds]:
            run.take(st.rounds, {"w": st.x, "w_avg": run.w_sum / st.rounds})
    return run.trace({"w": st.x})


def fedavg_subgradient(problem, *, rounds, eta_c, eta_s=1.0, **kw) -> Trace:
    """FedAvg(d), the subgradient baseline of Fig. 1 ("local subgradient method in lieu of SGD"):
    ``w <- w - eta_c (g + s)`` with ``s`` in ``d psi(w)`` at the current point (``sign(0) = 0``), plain
    FedAvg server step."""
    return primal_averaging(problem, rounds=rounds, eta_c=eta_c, eta_s=eta_s, client_prox=False, server_prox=False,
                            subgradient=True, **kw)


def fedmid(problem, *, rounds, eta_c, eta_s=1.0, **kw) -> Trace:
    """Algorithm 2 (FedMiD) exactly as written: client ``w <- prox_{eta_c psi}(w - eta_c g)``; server
    ``w_{r+1} = prox_{eta_s eta_c K psi}(w_r + eta_s Delta_r)`` -- which applies ``psi`` on the clients *and*
    again on the server (see :func:`fedmid_no_server_prox`)."""
    return primal_averaging(problem, rounds=rounds, eta_c=eta_c, eta_s=eta_s, client_prox=True, server_prox=True, **kw)


def fedmid_no_server_prox(problem, *, rounds, eta_c, eta_s=1.0, **kw) -> Trace:
    """Control (not in the paper): Algorithm 2 with the server line ``w_{r+1} = w_r + eta_s Delta_r``, so that
    ``psi`` carries the weight ``eta_s eta_c K`` per round, like the gradients (the literal Algorithm 2
    applies it twice for a non-idempotent ``psi``)."""
    return primal_averaging(problem, rounds=rounds, eta_c=eta_c, eta_s=eta_s, client_prox=True, server_prox=False, **kw)


def fedmid_osp(problem, *, rounds, eta_c, eta_s=1.0, **kw) -> Trace:
    """Algorithm 4 (FedMiD-OSP): client ``w <- w - eta_c g`` (line 8, no prox); server prox as Algorithm 2."""
    return primal_averaging(problem, rounds=rounds, eta_c=eta_c, eta_s=eta_s, client_prox=False, server_prox=True, **kw)


def _dual_family(problem, rounds, eta_c, eta_s, client_prox, grid=None, recorder=None, rng=None,
                 clients_per_round=None, hook=None, track_stability=False, w0=None, track=True, x0=None, seeds=None):
    B, K, d = problem.B, problem.K, problem.d
    ec, es = _vec(eta_c, B), _vec(eta_s, B)
    ec3 = ec[:, None, None]
    reg = problem.reg
    prox = prox_of(reg)                                  # reg.prox (compiled for the plain l1: the same bits)
    track = bool(track and client_prox)   # the (4.4) average and the discrepancy (FedDualAvg only)
    run = _Run(problem, rounds, grid, recorder, rng, clients_per_round, seeds)
    w0 = x0 if w0 is None else w0
    w0 = problem.x0() if w0 is None else np.array(w0, dtype=float)
    z = w0.copy()                                        # line 2: z_0 = grad h(w_0)
    w = w0
    hat_sum = np.zeros((B, d))
    disc = np.zeros(B)
    stab = np.zeros((run.R, K + 1, B)) if track_stability else None
    eck = [ec * k for k in range(K)]                     # eta_c k of line 8, once
    ecf = None
    # the step's bookkeeping after the oracle in one compiled pass (the same operations and orders), when the
    # discrepancy is the Euclidean one and nothing else looks inside the step (no hook, no stability track)
    fused = {} if (track and hook is None and stab is None and _euclidean_dual_norm(problem)) else None
    if run.want[0]:
        pts = {"w": w, "w_avg": w}
        if track:
            pts.update(w_hat=w, disc=disc.copy())
        run.take(0, pts)
    if fused is not None and (run.S is None or run.S >= problem.M):     # every round compiled (the same bits)
        w_last = _whole_rounds(run, problem, prox, True, z, ec, es, hat_sum, disc)
        if w_last is not None:
            return run.trace({"w": w_last, "z": z})
    for r in range(run.R):
        sel = _select(problem, run.S, run.rng)
        ctx = problem.start_round(sel, run.rng)
        S = problem.M if sel is None else sel.shape[1]
        Z = np.repeat(z[:, None, :], S, axis=1)         # line 6: z^m_{r,0} = z_r
        base = es * ec * r * K
        zbar_n = None                                    # Zn.mean(1) of the last step (when tracked)
        for k in range(K):
            a = base + eck[k]                            # line 8: eta~_{r,k} = eta_s eta_c r K + eta_c k
            W = prox(Z, a) if client_prox else Z     # line 9 (Alg. 5 line 8: grad h^*(z) = z)
            g = problem.grad(W, ctx, k, run.rng)         # line 10
            zbar = clients_mean(Z) if zbar_n is None else zbar_n   # Z.mean(1), of the same Z, done once
            if fused is not None:
                step = fused.get(S, False)
                if step is False:
                    step = fused[S] = DualStep.of(prox, B, S, d)
                out = step(Z, g, ec, zbar, a + ec, hat_sum, disc) if step is not None else None
                if out is not None:                      # disc, Zn, zbar_n = Zn.mean(1), hat_sum as below
                    Z, zbar_n = out
                    continue
            if track or track_stability:
                dev = problem.dual_norm_sq(Z - zbar[:, None, :])     # (B, S)
                disc += dev.sum(1)
                if stab is not None:
                    stab[r, k] = dev.mean(1)
            if ecf is None or ecf.shape != g.shape:      # eta_c spread to the clients' shape once
                ecf = np.empty(g.shape)
                ecf[...] = ec3
            Zn = np.multiply(ecf, g)                     # line 11: Z - eta_c g (the same products)
            np.subtract(Z, Zn, out=Zn)
            if track:
                zbar_n = clients_mean(Zn)
                hat_n = prox(zbar_n, a + ec)         # hat w_{r,k+1} = grad h_{r,k+1}^*(zbar_{r,k+1})
                hat_sum += hat_n
            if hook is not None:
                hook(r, k, {"Z": Z, "Zn": Zn, "W": W, "g": g, "a": a, "eta_c": ec, "zbar": zbar})
            Z = Zn
        Zbar = clients_mean(Z) if zbar_n is None else zbar_n
        if stab is not None:
            stab[r, K] = problem.dual_norm_sq(Z - Zbar[:, None, :]).mean(1)
        z = z + es[:, None] * (Zbar - z)                 # lines 12-13
        w = prox(z, es * ec * (r + 1) * K)           # line 14 (server primal)
        run.w_sum += w
        if run.want[r + 1]:
            pts = {"w": w, "w_avg": run.w_sum / (r + 1)}
            if track:
                pts.update(w_hat=hat_sum / (K * (r + 1)), disc=disc.copy())
            run.take(r + 1, pts)
    final = {"w": w, "z": z}
    if stab is not None:
        final["stab"] = stab
    return run.trace(final)


def feddualavg(problem, *, rounds, eta_c, eta_s=1.0, **kw) -> Trace:
    """Algorithm 3 (FedDualAvg): clients ``w = prox_{eta~ psi}(z)``, ``z <- z - eta_c grad f(w; xi)``
    with ``eta~_{r,k} = eta_s eta_c r K + eta_c k``; server ``z_{r+1} = z_r + eta_s Delta_r`` (dual averaging),
    ``w_{r+1} = prox_{eta_s eta_c (r+1) K psi}(z_{r+1})``.

    Reference: Yuan, Zaheer and Reddi (ICML 2021), Algorithm 3; Theorems 4.1/E.1, 4.2/C.1, 4.3/D.1.  Arguments
    and return: the module doc.  Example: ``feddualavg(problem, rounds=R, eta_c=0.01, seeds=0).metrics["Phi_hat"]``."""
    return _dual_family(problem, rounds, eta_c, eta_s, client_prox=True, **kw)


def feddualavg_osp(problem, *, rounds, eta_c, eta_s=1.0, **kw) -> Trace:
    """Algorithm 5 (FedDualAvg-OSP): clients take gradients at ``w = grad h^*(z) = z`` (no prox); server
    as Algorithm 3 (``w_{r+1} = prox_{eta_s eta_c (r+1) K psi}(z_{r+1})``)."""
    return _dual_family(problem, rounds, eta_c, eta_s, client_prox=False, **kw)


ALGORITHMS = {"FedAvg(d)": fedavg_subgradient, "FedMiD": fedmid,
              "FedMiD (no server prox)": fedmid_no_server_prox, "FedMiD-OSP": fedmid_osp,
              "FedDualAvg": feddualavg, "FedDualAvg-OSP": feddualavg_osp}
