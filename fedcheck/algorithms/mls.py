"""Non-smooth federated methods with multiple local steps, vectorized over instances and clients.

* :func:`fedmls` -- FedMLS, Algorithm 1 of Palenzuela, Dadras, Yurtsever, Loefstedt, "Provable
  Reduction in Communication Rounds for Non-Smooth Convex Federated Learning" (local training
  first, aggregation last);
* :func:`mopes` -- MOPES, eq. (4)-(5) of the same paper, run literally on the product space
  ``R^{n x p}`` (the method Algorithm 1 rewrites); ``consensus=False`` makes ``proj_X`` the identity,
  which is centralized MOPES on ``f`` when ``n = 1``;
* :func:`scaffold` -- Scaffold with option-II control variates (Karimireddy et al. 2020);
* :func:`scaffnew` -- Scaffnew / ProxSkip (Mishchenko et al. 2022): a local step, then a
  communication with probability ``p_s``, control variates ``h_i`` updated after it.

Indexing is the paper's: ``x_0`` is the start and round ``k = 1..K`` (one communication) produces
``x_k``; traces are indexed by the number of rounds completed, ``k = 0..K`` (Scaffnew, which has no
rounds, by local steps ``s = 0..S`` with the communications counted).  Every trace records, besides
the recorder's metrics (default: ``F`` at the server point), ``calls`` (subgradient calls per client
so far) and ``comms`` (communication rounds so far).

Initial conditions.  Algorithm 1 (line 3) sets ``z_1 = x_0^i = x_0 = z_0^i = y_0^i = y_0`` and uses
``y_1``, ``y_1^i`` (lines 5-6) and the server's ``z_0`` without setting them; the text after eq. (9)
shows they all equal ``y_0`` (``gamma_1 = 1``).  Here::

    y_1 = y_1^i = z_1 = z_0 = z_0^i = x_0 = x_0^i = y_0     (every client alike)

Parameters.  ``beta_k = 4/(lambda_k k)``, so ``1/(beta_k lambda_k) = k/4`` whatever ``lambda_k`` (the
server's step in line 19 and the shift in line 6 do not depend on ``lambda``; only the local
subgradient scale ``1/(n beta_k) = lambda_k k/(4n)`` does).  The ball of radius ``R`` is the paper's
``X'`` (line 10).  The local step count ``T_k`` may differ between instances of a batch: shorter
instances are frozen (masked) once their ``T_k`` steps are done.

FedAvg (the local subgradient method; ``T = 1``: the distributed subgradient method) is the library's one
FedAvg, :func:`fedcheck.algorithms.fedavg.fedavg_rounds`; the helpers below (:func:`start_point`,
:func:`local_step_args`, :func:`drive_rounds`) are what a method in this indexing needs to record it the same way
(the FedMLS paper's adapter, ``theorems/fedmls/methods.py``, is one).  DCS (:mod:`fedcheck.algorithms.sliding`)
shares them.

Oracles: ``oracle(U) -> (B, n, p)`` subgradients of the ``f_i`` at the clients' points; the default is
the deterministic ``batch.loss.grad``; :func:`minibatch_oracle` samples rows without replacement.
Schedules (``lam``, ``T``, ``eta`` ...) are ``(rounds, B)`` arrays made from the SymPy expressions of
``theorems/fedmls/claims.py``; ``eta_step`` / ``p_step`` are indexed by the local-step counter instead.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fedcheck.problems.instances import InstanceBatch
from fedcheck.algorithms.core import Recorder, Trace, default_recorder
from fedcheck.algorithms.pieces import step_sizes
from fedcheck.algorithms.fedmls_jit import lad_prox_steps, numpy_shift, numpy_tail, round_kernels

__all__ = ["fedmls", "mopes", "scaffold", "scaffnew", "minibatch_oracle", "Oracle", "Stop", "approx_prox", "start_point",
           "round_rows", "step_counts", "ball_radii", "drive_rounds", "snapshot_of", "stop_rule", "local_step_args"]

Oracle = Callable[[np.ndarray], np.ndarray]
Stop = Callable[[int, np.ndarray], bool]


# ----------------------------------------------------------------------------------------------
# helpers: the paper's indexing (``x_0`` the start, round ``k = 1..K``), shared by the methods here and DCS
def start_point(batch: InstanceBatch, x0) -> np.ndarray:
    """Server start ``(B, p)``: ``x0`` if given, else each instance's ``x0`` (0 when unset)."""
    if x0 is not None:
        return np.broadcast_to(np.asarray(x0, dtype=float), (batch.B, batch.p)).copy()
    return batch.x0()[:, 0, :].copy()


def round_rows(a, rounds: int, B: int, name: str) -> np.ndarray:
    """A schedule as ``(rounds, B)`` rows (row ``k-1`` is round ``k``): a scalar or ``(B,)`` broadcast, a longer
    array accepted; ``ValueError`` naming ``name`` otherwise."""
    a = np.asarray(a, dtype=float)
    if a.ndim == 0:
        a = np.full((rounds, B), float(a))
    elif a.ndim == 1:
        a = np.broadcast_to(a, (rounds, B))
    if a.shape[0] < rounds or a.shape[1] != B:
        raise ValueError(f"schedule {name!r} has shape {a.shape}; need ({rounds}, {B}) (row k-1 is round k)")
    return a


def step_counts(T, rounds: int, B: int) -> np.ndarray:
    """Local step counts ``T`` as ``(rounds, B)`` non-negative integers (``ValueError`` for fractions)."""
    T = round_rows(T, rounds, B, "T")
    Ti = np.rint(T).astype(np.int64)
    if np.any(np.abs(T - Ti) > 1e-9) or np.any(Ti < 0):
        raise ValueError("local step counts T must be non-negative integers (ceil them in the schedule)")
    return Ti


def ball_radii(R, B: int) -> np.ndarray:
    """Ball radii ``(B,)`` from a scalar, ``(B,)`` or a schedule's rows (the first row); positive."""
    R = np.asarray(R, dtype=float)
    R = R[0] if R.ndim == 2 else R
    R = np.broadcast_to(R, (B,)).astype(float)
    if np.any(R <= 0):
        raise ValueError("the ball radius R must be positive")
    return R


def drive_rounds(rounds: int, grid, step: Callable[[int], None], snapshot: Callable[[int], dict],
           stop: Callable[[int], bool] | None = None) -> Trace:
    """Run ``step(k)`` for ``k = 1..rounds`` and record ``snapshot(k)`` at the grid indices (``0`` is
    the start); ``stop(k)`` ends the run early (the stopping round is always recorded)."""
    grid = np.asarray(grid if grid is not None else np.arange(rounds + 1), dtype=int)
    want = np.zeros(rounds + 1, dtype=bool)
    want[grid[(grid >= 0) & (grid <= rounds)]] = True
    rows: dict[str, list] = {}
    ks: list[int] = []

    def take(k):
        ks.append(k)
        for name, v in snapshot(k).items():
            rows.setdefault(name, []).append(np.asarray(v, dtype=float))
    if want[0]:
        take(0)
    for k in range(1, rounds + 1):
        step(k)
        done = stop is not None and stop(k)
        if want[k] or done:
            take(k)
        if done:
            break
    return Trace(rounds=np.asarray(ks), metrics={name: np.stack(v) for name, v in rows.items()}, start=0)


def snapshot_of(rec: Recorder, X: Callable[[], np.ndarray], xbar: Callable[[], np.ndarray], extra: dict):
    """``snapshot(k)`` for :func:`drive_rounds`: the recorder's metrics at the current clients' points ``X()`` and
    server point ``xbar()``, and a copy of each counter of ``extra`` (e.g. ``calls``, ``comms``)."""
    def snap(k):
        out = dict(rec(k, X(), xbar()))
        out.update({name: np.array(v, dtype=float) for name, v in extra.items()})
        return out
    return snap


def stop_rule(stop: Stop | None, xbar: Callable[[], np.ndarray]):
    """``stop(k, xbar)`` as the ``stop(k)`` of :func:`drive_rounds` (``None`` stays ``None``)."""
    return None if stop is None else (lambda k: bool(stop(k, xbar())))


def minibatch_oracle(batch: InstanceBatch, fraction: float, rng: np.random.Generator,
                     sizes: np.ndarray | None = None) -> Oracle:
    """Unbiased minibatch subgradients: client ``i`` samples ``ceil(fraction m_i)`` of its ``m_i`` rows
    without replacement and rescales by ``m_i / batch`` (the paper's experiment: 10% of each client's
    samples).  ``sizes`` (``(B, n)``, default each instance's ``params['client_sizes']`` or ``m``) counts
    the real rows, which come first (padding rows last).  The loss must accept ``grad(X, weights)``.

    The sample is a partial Fisher-Yates shuffle of the client's rows ``0..m_i-1``: draw ``j`` (``j <
    k_i = ceil(fraction m_i)``) swaps position ``j`` with position ``j + floor(u_j (m_i - j))``, ``u_j`` uniform on
    [0, 1) (with round-to-nearest the product stays below ``m_i - j``; clamped to ``m_i - j - 1`` all the same),
    and positions ``0..k_i-1`` are the sample: every ``k_i``-subset equally likely, to the 2^-53 resolution of ``u``.  One call
    draws ``rng.random((B, n, max_i k_i))`` -- ``k_i`` numbers per client, not one per row -- which
    :mod:`fedcheck.problems.hinge_jit`'s compiled form draws too (the same rows from the same stream)."""
    B, n, m = batch.B, batch.n, batch.loss.m
    if sizes is None:
        sizes = np.stack([np.asarray(inst.params.get("client_sizes", np.full(n, m)), dtype=float)
                          for inst in batch.instances])
    sizes = np.broadcast_to(np.asarray(sizes, dtype=float), (B, n))
    if not 0 < fraction <= 1:
        raise ValueError("the minibatch fraction must be in (0, 1]")
    if np.any(sizes < 0) or np.any(sizes > m) or np.any(sizes != np.round(sizes)):
        raise ValueError(f"client sizes must be whole numbers in 0..{m} (the rows of each client)")
    bsz = np.maximum(np.ceil(fraction * sizes), 1.0)
    weight = sizes / (bsz * m)                       # E[weight * selected] = 1/m on each real row
    nreal = sizes.astype(np.int64)
    take = np.minimum(bsz, sizes).astype(np.int64)   # an empty client draws nothing (its weight is 0)
    kmax = max(int(take.max(initial=0)), 1)
    j = np.arange(kmax)
    span = nreal[..., None] - j                      # (B, n, kmax): rows left at draw j
    drawn = j < take[..., None]
    bi, ii = np.indices((B, n))
    at_b, at_i = (np.broadcast_to(x[..., None], drawn.shape)[drawn] for x in (bi, ii))
    w_drawn = np.broadcast_to(weight[..., None], drawn.shape)[drawn]

    def sample(u):
        """The rows at positions ``0..kmax-1`` after the partial Fisher-Yates shuffle (those of ``drawn`` count)."""
        off = np.where(drawn, np.minimum(np.floor(u * span), span - 1), 0).astype(np.int64)
        perm = np.broadcast_to(np.arange(m), (B, n, m)).copy()
        for jj in range(kmax):
            other = jj + off[..., jj]
            a, b_ = perm[..., jj].copy(), perm[bi, ii, other]
            perm[..., jj] = b_
            perm[bi, ii, other] = a
        return perm[..., :kmax]

    def oracle(U):
        rows = sample(rng.random((B, n, kmax)))
        W = np.zeros((B, n, m))
        W[at_b, at_i, rows[drawn]] = w_drawn                 # distinct rows per client: one write each
        return batch.loss.grad(U, weights=W)
    from fedcheck.problems.hinge_jit import minibatch_hinge_oracle   # the hinge loss's compiled form, else this
    return minibatch_hinge_oracle(batch.loss, rng, nreal, take, weight, kmax, oracle)


# ----------------------------------------------------------------------------------------------
def approx_prox(oracle: Oracle, U0: np.ndarray, V: np.ndarray, scale: np.ndarray, T: np.ndarray,
                R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """approx-prox of eq. (5)/(9): ``T`` projected subgradient steps on
    ``h(U) = scale * F(U) + 1/2 ||U - V||^2`` over the balls ``||u^i|| <= R``, from ``U0``::

        U <- proj( U - (1/(1 + t/2)) (scale * g(U) + U - V) ),   Ut <- (1 - theta_t) Ut + theta_t U

    ``theta_t = 2(t+1)/(t(t+3))``.  ``scale`` ``(B,)`` is ``1/(n beta_k)``, ``T`` ``(B,)`` the step
    counts, ``R`` ``(B,)`` the radii.  Returns the last iterate and the weighted average."""
    U = U0.copy()
    Ut = U0.copy()
    Tmax = int(T.max(initial=0))
    if Tmax == 0:
        return U, Ut
    fast = lad_prox_steps(oracle, U, Ut, V, scale, T, R, Tmax, _numpy_prox_steps)
    if fast is None:
        fast = _compiled_prox_steps(oracle, U, Ut, V, scale, T, R, Tmax)
    if fast is not None:
        return fast
    return _numpy_prox_steps(oracle, U, Ut, V, scale[:, None, None], T, R[:, None, None], Tmax,
                             bool(np.all(T == Tmax)))


def _numpy_prox_steps(oracle, U, Ut, V, sc, T, Rr, Tmax, uniform):
    """:func:`approx_prox`'s steps in numpy (the reference; ``FEDCHECK_JIT=0`` runs it)."""
    for t in range(1, Tmax + 1):
        a = 2.0 / (t + 2.0)
        G = oracle(U)
        G *= a * sc
        Uh = (1.0 - a) * U
        Uh += a * V
        Uh -= G
        nrm = np.sqrt(np.einsum("bnp,bnp->bn", Uh, Uh))[..., None]
        Uh *= Rr / np.maximum(nrm, Rr)                  # min(1, R/||u||), no division by zero
        th = 2.0 * (t + 1.0) / (t * (t + 3.0))
        if uniform:
            U = Uh
            Ut += th * (U - Ut)
        else:  # rows whose T_k steps are done stay frozen
            act = t <= T
            np.copyto(U, Uh, where=act[:, None, None])
            Ut += (th * act)[:, None, None] * (U - Ut)
    return U, Ut


def _compiled_prox_steps(oracle, U, Ut, V, scale, T, R, Tmax):
    """:func:`approx_prox`'s loop with its elementwise stretches compiled (:mod:`.kernels`): the oracle and the
    ``einsum`` norm stay numpy's, the rest is the same operations in one pass each -- the same bits.  ``None``
    when numba is off or an input is not C-contiguous float64 of the shapes it takes (then numpy runs)."""
    from fedcheck.algorithms import kernels as K
    if K._approx_prox_pre_c is None or U.ndim != 3:
        return None
    B = U.shape[0]
    scale, R = np.asarray(scale), np.asarray(R)
    V = np.asarray(V)
    if not (V.shape == U.shape and V.dtype == np.float64 and U.dtype == np.float64 and scale.shape == (B,)
            and R.shape == (B,) and np.shape(T) == (B,)):
        return None
    V, scale, R = np.ascontiguousarray(V), np.ascontiguousarray(scale, dtype=float), np.ascontiguousarray(R, dtype=float)
    U, Ut, Tb = np.ascontiguousarray(U), np.ascontiguousarray(Ut), np.ascontiguousarray(T, dtype=np.int64)
    Uh = np.empty_like(U)
    pre, post, einsum = K._approx_prox_pre_c, K._approx_prox_post_c, np.einsum
    for t in range(1, Tmax + 1):
        a = 2.0 / (t + 2.0)
        G = oracle(U)
        if G.shape != U.shape or G.dtype != np.float64:
            raise ValueError(f"the oracle returned {G.shape} {G.dtype}; expected {U.shape} float64")
        pre(U, V, np.ascontiguousarray(G), a, scale, Uh)
        nrm2 = einsum("bnp,bnp->bn", Uh, Uh)
        post(Uh, nrm2, R, U, Ut, 2.0 * (t + 1.0) / (t * (t + 3.0)), Tb, t)
    return U, Ut


def fedmls(batch: InstanceBatch, *, rounds: int, lam, T, R, grid=None, recorder: Recorder | None = None,
           oracle: Oracle | None = None, x0=None, stop: Stop | None = None) -> Trace:
    """FedMLS (Algorithm 1), all instances and clients at once.  Per round ``k``::

        v^i   = z_{k-1}^i - (k/4)(y_k^i - y_k)                                   (line 6)
        (z_k^i, zt_k^i) = approx-prox from z_{k-1}^i, scale lambda_k k/(4n)     (lines 7-13)
        x_k^i = (1-g_k) x_{k-1}^i + g_k zt_k^i ;  y_{k+1}^i = (1-g_{k+1}) x_k^i + g_{k+1} z_k^i
        x_k   = (1-g_k) x_{k-1} + g_k z_k ;  y_{k+1} = (1-g_{k+1}) x_k + g_{k+1} z_k   (server)
        z_{k+1} = z_k - ((k+1)/4)(y_{k+1} - mean_i y_{k+1}^i)                      (line 19)

    with ``g_k = 2/(k+1)``.  The returned point after ``K`` rounds is the server's ``x_K``.

    Reference: Palenzuela et al., Algorithm 1; Corollary 3.2 (its rate).  ``lam``, ``T`` ``(rounds, B)`` (or numbers),
    ``R`` the ball radius, ``x0`` ``(B, p)`` the start.  Returns a :class:`Trace` (``start = 0``: row ``i`` is
    ``x_{trace.rounds[i]}``; ``calls``, ``comms`` recorded).
    Example: ``fedmls(batch, rounds=K, lam=lam, T=T, R=10.0)``."""
    B, n = batch.B, batch.n
    lam = round_rows(lam, rounds, B, "lam")
    Tk = step_counts(T, rounds, B)
    Rb = ball_radii(R, B)
    oracle = oracle or batch.loss.grad
    y0 = start_point(batch, x0)
    st = {"x": y0.copy(), "y": y0.copy(), "z": y0.copy(), "xi": np.repeat(y0[:, None, :], n, 1)}
    st["yi"], st["zi"] = st["xi"].copy(), st["xi"].copy()
    extra = {"calls": np.zeros(B), "comms": np.zeros(B)}
    # lines 6 and 14-19 compiled (the same bits, or numpy's functions when the probe declines)
    shift, tail = round_kernels(B, n, batch.p) or (numpy_shift, numpy_tail)

    def step(k):
        V = shift(st["zi"], st["yi"], st["y"], k / 4.0)
        zi, zti = approx_prox(oracle, st["zi"], V, lam[k - 1] * k / (4.0 * n), Tk[k - 1], Rb)
        st["x"], st["y"], st["z"], st["xi"], st["yi"] = tail(st["x"], st["y"], st["z"], st["xi"], zi, zti,
                                                             2.0 / (k + 1.0), 2.0 / (k + 2.0), (k + 1.0) / 4.0)
        st["zi"] = zi
        extra["calls"] += Tk[k - 1]
        extra["comms"] += 1.0

    rec = recorder or default_recorder(batch)
    trace = drive_rounds(rounds, grid, step, snapshot_of(rec, lambda: st["xi"], lambda: st["x"], extra),
                         stop_rule(stop, lambda: st["x"]))
    trace.final = {k: v.copy() for k, v in st.items()}
    trace.final["xbar"] = st["x"].copy()
    return trace


def mopes(batch: InstanceBatch, *, rounds: int, lam, T, R, consensus: bool = True, grid=None,
          recorder: Recorder | None = None, oracle: Oracle | None = None, x0=None) -> Trace:
    """MOPES, eq. (4)-(5), literally on the product space (``X, X', Z, Z'`` of shape ``(B, n, p)``)::

        Y = (1-g_k) X + g_k Z ;  Y' = (1-g_k) X' + g_k Z'
        Z = proj_X(Z - (1/(beta_k lambda_k))(Y - Y'))
        (Z', Zt') = approx-prox_{F/beta_k}(Z' - (1/(beta_k lambda_k))(Y' - Y))   (from U_0 = Z'_{k-1})
        X = (1-g_k) X + g_k Z ;  X' = (1-g_k) X' + g_k Zt'

    ``proj_X`` averages the columns (``consensus=True``, the FL reformulation (7)) or is the identity.
    The gradient of ``F(X) = (1/n) sum_i f_i(x^i)`` has columns ``(1/n) g_i``.  Records ``mean_i X``.

    Reference: Palenzuela et al., eq. (4)-(5); Theorem 3.1 (Thekumparampil et al. 2020, Theorem 5).  Arguments and
    return as :func:`fedmls`.  Example: ``mopes(batch, rounds=K, lam=lam, T=T, R=10.0, consensus=False)``."""
    B, n = batch.B, batch.n
    lam = round_rows(lam, rounds, B, "lam")
    Tk = step_counts(T, rounds, B)
    Rb = ball_radii(R, B)
    oracle = oracle or batch.loss.grad
    X0 = np.repeat(start_point(batch, x0)[:, None, :], n, 1)
    st = {"X": X0.copy(), "Xp": X0.copy(), "Z": X0.copy(), "Zp": X0.copy()}
    extra = {"calls": np.zeros(B), "comms": np.zeros(B)}

    def step(k):
        g, c = 2.0 / (k + 1.0), k / 4.0
        Y = (1.0 - g) * st["X"] + g * st["Z"]
        Yp = (1.0 - g) * st["Xp"] + g * st["Zp"]
        Z = st["Z"] - c * (Y - Yp)
        if consensus:
            Z = np.repeat(Z.mean(1, keepdims=True), n, 1)
        V = st["Zp"] - c * (Yp - Y)
        Zp, Zt = approx_prox(oracle, st["Zp"], V, lam[k - 1] * k / (4.0 * n), Tk[k - 1], Rb)
        st["X"] = (1.0 - g) * st["X"] + g * Z
        st["Xp"] = (1.0 - g) * st["Xp"] + g * Zt
        st["Z"], st["Zp"] = Z, Zp
        extra["calls"] += Tk[k - 1]
        extra["comms"] += 1.0

    rec = recorder or default_recorder(batch)
    trace = drive_rounds(rounds, grid, step, snapshot_of(rec, lambda: st["Xp"], lambda: st["X"].mean(1), extra))
    trace.final = {k: v.copy() for k, v in st.items()}
    trace.final["xbar"] = st["X"].mean(1)
    return trace


def local_step_args(rounds, B, T, eta, eta_step):
    """Validated per-round step counts ``(rounds, B)`` and exactly one of ``eta`` ``(rounds, B)`` (per round)
    and ``eta_step`` ``(S, B)`` (per local step, a counter over all rounds)."""
    Tk = step_counts(T, rounds, B)
    if (eta is None) == (eta_step is None):
        raise ValueError("give exactly one of eta (per round) and eta_step (per local step)")
    if eta is not None:
        return Tk, round_rows(eta, rounds, B, "eta"), None
    eta_step = np.asarray(eta_step, dtype=float)
    need = int(Tk.sum(0).max(initial=0))
    if eta_step.shape[0] < need or eta_step.shape[1] != B:
        raise ValueError(f"eta_step has shape {eta_step.shape}; need ({need}, {B}) (row s-1 is local step s)")
    return Tk, None, eta_step


def _local_steps(rounds, B, T, eta, eta_step):
    """Per-round step counts and a function ``step_size(k, t, cum)`` -> ``(B,)`` (round ``k`` 1-based)."""
    Tk, eta, eta_step = local_step_args(rounds, B, T, eta, eta_step)
    size = step_sizes(B, eta, eta_step)
    return Tk, lambda k, t, cum: size(k - 1, t, cum)


def scaffold(batch: InstanceBatch, *, rounds: int, T, eta_g, eta=None, eta_step=None, grid=None,
             recorder: Recorder | None = None, oracle: Oracle | None = None, x0=None,
             stop: Stop | None = None) -> Trace:
    """Scaffold, full participation, option II control variates::

        y^i <- x ;  T_k steps  y^i <- y^i - eta (g_i(y^i) - c^i + c)
        c^i+ = c^i - c + (x - y^i) / (sum of the round's local step sizes)
        x <- x + eta_g mean_i (y^i - x) ;  c <- c + mean_i (c^i+ - c^i)

    (with a constant step the divisor is ``T_k eta``, as in the paper).  ``eta_g`` is per round.

    Reference: Karimireddy et al. (2020), option II; a baseline of the FedMLS paper's Section 4.  ``x0`` ``(B, p)``
    the start.  Returns a :class:`Trace` (``start = 0``, as :func:`fedmls`).
    Example: ``scaffold(batch, rounds=K, T=T, eta_g=1.0, eta=0.01)``."""
    B, n = batch.B, batch.n
    Tk, size = _local_steps(rounds, B, T, eta, eta_step)
    eg = round_rows(eta_g, rounds, B, "eta_g")
    oracle = oracle or batch.loss.grad
    st = {"x": start_point(batch, x0), "c": np.zeros((B, batch.p)), "ci": np.zeros((B, n, batch.p))}
    st["Y"] = np.repeat(st["x"][:, None, :], n, 1)
    extra = {"calls": np.zeros(B), "comms": np.zeros(B)}
    cum = np.zeros(B, dtype=np.int64)

    def step(k):
        x, c, ci = st["x"], st["c"], st["ci"]
        Y = np.repeat(x[:, None, :], n, 1)
        Tb = Tk[k - 1]
        total = np.zeros(B)
        drift = c[:, None, :] - ci
        for t in range(1, int(Tb.max(initial=0)) + 1):
            act = t <= Tb
            e = size(k, t, cum) * act
            G = oracle(Y)
            G += drift
            Y = Y - e[:, None, None] * G
            total += e
        cum[:] += Tb
        safe = np.where(total > 0, total, 1.0)[:, None, None]
        ci_new = np.where(total[:, None, None] > 0, ci - c[:, None, :] + (x[:, None, :] - Y) / safe, ci)
        st["x"] = x + eg[k - 1][:, None] * (Y - x[:, None, :]).mean(1)
        st["c"] = c + (ci_new - ci).mean(1)
        st["ci"], st["Y"] = ci_new, Y
        extra["calls"] += Tb
        extra["comms"] += 1.0

    rec = recorder or default_recorder(batch)
    trace = drive_rounds(rounds, grid, step, snapshot_of(rec, lambda: st["Y"], lambda: st["x"], extra),
                         stop_rule(stop, lambda: st["x"]))
    trace.final = {"xbar": st["x"].copy(), "c": st["c"].copy(), "ci": st["ci"].copy()}
    return trace


def scaffnew(batch: InstanceBatch, *, steps: int | None = None, eta_step, p_step,
             rng: np.random.Generator | None = None, grid=None, recorder: Recorder | None = None,
             oracle: Oracle | None = None, x0=None, rounds: int | None = None, seeds=None) -> Trace:
    """Scaffnew / ProxSkip for the consensus constraint, with step ``eta_s`` and communication
    probability ``p_s`` at local step ``s``::

        xh^i = x^i - eta_s (g_i(x^i) - h^i)
        with probability p_s (one coin per instance): x^i = mean_j (xh^j - (eta_s/p_s) h^j), else x^i = xh^i
        h^i <- h^i + (p_s/eta_s)(x^i - xh^i)

    The control variates are updated *after* the communication (so they do move; cf. the note on the
    authors' code).  Traces are indexed by local steps; the server point is the last average.  Scaffnew has no
    rounds: ``steps`` (or ``rounds``, the library's name: iterations) counts local steps, ``comms`` the random
    communications.  The coins come from ``rng`` or a generator seeded by ``seeds``
    (:class:`numpy.random.SeedSequence` entropy).

    Reference: Mishchenko et al. (2022), ProxSkip; a baseline of the FedMLS paper's Section 4.  Returns a
    :class:`Trace` (``start = 0``; ``trace.rounds`` count local steps).
    Example: ``scaffnew(batch, rounds=S, eta_step=0.01, p_step=0.2, seeds=0)``."""
    B, n = batch.B, batch.n
    steps = rounds if steps is None else steps
    if steps is None:
        raise TypeError("scaffnew needs steps= (or rounds=)")
    if rng is None:
        if seeds is None:
            raise TypeError("scaffnew needs rng= or seeds= (its communication coins)")
        rng = np.random.default_rng(np.random.SeedSequence(seeds))
    eta_step = round_rows(eta_step, steps, B, "eta_step")
    p_step = round_rows(p_step, steps, B, "p_step")
    if np.any(p_step <= 0) or np.any(p_step > 1):
        raise ValueError("communication probabilities must be in (0, 1]")
    oracle = oracle or batch.loss.grad
    x = start_point(batch, x0)
    st = {"xbar": x, "X": np.repeat(x[:, None, :], n, 1), "H": np.zeros((B, n, batch.p))}
    extra = {"calls": np.zeros(B), "comms": np.zeros(B)}

    def step(s):
        e, pr = eta_step[s - 1][:, None, None], p_step[s - 1][:, None, None]
        Xh = st["X"] - e * (oracle(st["X"]) - st["H"])
        coin = rng.random(B) < p_step[s - 1]
        avg = (Xh - (e / pr) * st["H"]).mean(1)
        Xn = np.where(coin[:, None, None], avg[:, None, :], Xh)
        st["H"] = st["H"] + (pr / e) * (Xn - Xh)
        st["X"] = Xn
        st["xbar"] = np.where(coin[:, None], avg, st["xbar"])
        extra["calls"] += 1.0
        extra["comms"] += coin

    rec = recorder or default_recorder(batch)
    trace = drive_rounds(steps, grid, step, snapshot_of(rec, lambda: st["X"], lambda: st["xbar"], extra))
    trace.final = {"xbar": st["xbar"].copy(), "H": st["H"].copy()}
    return trace
