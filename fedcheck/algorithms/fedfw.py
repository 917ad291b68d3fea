"""Frank-Wolfe family: FedFW (Algorithm 1 of the FedFW paper), naive FW averaging
(Appendix A), and classical Frank-Wolfe.  Vectorized over instances and clients.

All three write the convex combination as ``x <- (1 - eta_t) x + eta_t s`` (the paper's
form), into buffers allocated once per run; see :mod:`.kernels` for the gradient and
vertex shortcuts and ``benchmarks/engine.py`` for what they buy."""
from __future__ import annotations

import numpy as np

from fedcheck.problems.instances import InstanceBatch
from fedcheck.algorithms.core import (Recorder, Stream, Trace, clients_start, default_recorder, instance_chunks,
                                     record_grid, run_recorded, scalar_source)
from fedcheck.algorithms.kernels import make_full_grad_kernel, make_grad_kernel, make_vertex_lmo, slice_set, uniform_rows

__all__ = ["fedfw", "naive_fw_averaging", "frank_wolfe"]


class _Rows:
    """Round ``t``'s row of a ``(rounds, B)`` schedule, shaped to multiply arrays ``(B, *tail)``: a Python
    float when every instance has the same value in every round (cheaper than a broadcast), else a view."""

    def __init__(self, a, tail: int):
        a = np.asarray(a, dtype=float)
        self.uniform = uniform_rows(a)
        self.a = a
        self.col = a[:, 0] if self.uniform else None   # a view: no per-round Python objects kept
        self.index = (slice(None),) + (None,) * tail

    def __call__(self, i: int):
        return float(self.col[i]) if self.uniform else self.a[i][self.index]

    def complement(self, i: int):
        """``1 - row`` (the factor of the convex combination)."""
        return 1.0 - float(self.col[i]) if self.uniform else (1.0 - self.a[i])[self.index]

    def per_row(self, i: int, instance: np.ndarray):
        """The row's values repeated for each client row (``instance`` maps rows to instances)."""
        return float(self.col[i]) if self.uniform else self.a[i].take(instance)


def _groups(B: int, n: int, p: int, grad, lmo, S):
    """Cache-sized instance groups ``[(lo, hi, grad, lmo, S)]`` for the chunked driver, or ``None``."""
    if not grad.bytes_per_instance:
        return None
    per_instance = grad.bytes_per_instance + 4 * n * p * 8  # + the round's (n, p) buffers
    chunks = instance_chunks(B, per_instance, n)
    if len(chunks) < 2:
        return None
    out = []
    for lo, hi in chunks:
        g = grad.slice(lo, hi)
        Sc = S if lmo is not None else slice_set(S, lo, hi)
        if g is None or Sc is None:
            return None
        out.append((lo, hi, g, None if lmo is None else lmo.slice(lo, hi), Sc))
    return out


def fedfw(batch: InstanceBatch, eta: np.ndarray, lam: np.ndarray, rounds: int,
          grid: np.ndarray | None = None, X0: np.ndarray | None = None,
          recorder: Recorder | None = None, stream: Stream | None = None, *, x0=None) -> Trace:
    """FedFW, Algorithm 1 of Dadras et al. (full participation).

    Per round ``t`` and client ``i`` (all at once)::

        g_i = (1/n) grad f_i(x_i) + lambda_t (x_i - xbar)
        s_i = lmo_D(g_i);  x_i <- (1 - eta_t) x_i + eta_t s_i
        xbar <- (1 - eta_t) xbar + eta_t mean_i s_i

    ``eta`` and ``lam`` are ``(rounds, B)`` arrays (row ``t-1`` is round ``t``).  ``stream(k, values)``
    (optional) receives the recorder's scalar metrics at every iterate, in blocks (see
    :func:`.core.run_recorded`); on the compiled path with the default least-squares recorder they are
    computed inside the compiled round, bit for bit what the recorder gives.

    Reference: Dadras et al., "Federated Frank-Wolfe Algorithm", Algorithm 1; Theorem 1 (convex, ``eta_t = 2/(t+1)``,
    ``lambda_t = lambda_0 sqrt(t+1)``), Theorem 2 (non-convex, fixed ``eta``, ``lambda``).  Start: ``X0`` the clients'
    points ``(B, n, p)``, or ``x0`` ``(B, p)`` at every client (default: the batch's).  Returns a :class:`Trace` in the
    paper's indexing, ``start = 1`` (row ``i`` is ``x^{trace.rounds[i]}``, after ``trace.completed[i]`` rounds).

    Example::

        T = 100; t = np.arange(1, T + 1)[:, None]
        eta, lam = np.repeat(2 / (t + 1), batch.B, 1), np.repeat(np.sqrt(t + 1), batch.B, 1)
        tr = fedfw(batch, rounds=T, eta=eta, lam=lam)      # tr.metrics["F"][i] at x^{tr.rounds[i]}"""
    loss, S, n = batch.loss, batch.set, batch.n
    X0 = clients_start(X0, x0, n)      # the clients' own start X0, or the server's x0 (B, p) at every client
    X = np.array(batch.x0() if X0 is None else X0, dtype=float, order="C")
    B, p = X.shape[0], X.shape[-1]
    xbar = X.mean(1)
    grid = record_grid(rounds + 1) if grid is None else grid
    rec = recorder or default_recorder(batch)
    eta = np.asarray(eta, dtype=float)
    lam = np.asarray(lam, dtype=float)
    grad = make_grad_kernel(loss, 1.0 / n)          # (1/n) grad f_i, the weight fused into the kernel
    lmo = make_vertex_lmo(S, X.shape)
    G = np.empty_like(X)
    Dif = np.empty_like(X)
    HX = np.empty_like(X)   # (1/n) H_i x_i, kept up to date by the incremental path
    if getattr(grad, "b", None) is not None and getattr(grad, "A", None) is not None:   # factored least squares:
        HX = np.empty(np.shape(grad.b))                                               # A_i x_i (compiled round)

    def make_step(lo, hi, grad, lmo, S):
        """One round for instances ``lo:hi``, on views of the batch's arrays (all buffers preallocated)."""
        Xc, xc, Gc, Dc = X[lo:hi], xbar[lo:hi], G[lo:hi], Dif[lo:hi]
        xc3, Xflat, Bc = xc[:, None, :], Xc.reshape(-1), hi - lo
        ETA, LAM = _Rows(eta[:, lo:hi], 2), _Rows(lam[:, lo:hi], 2)
        subtract, multiply, add, bincount = np.subtract, np.multiply, np.add, np.bincount
        if lmo is not None:
            server_base, instance, minlength = lmo.server_base, lmo.instance, Bc * p
        if ETA.uniform and LAM.uniform and lmo is not None and getattr(grad, "HT", None) is not None \
                and grad.post == 1.0:
            return _incremental_step(Xc, xc, Gc, Dc, HX[lo:hi], grad, lmo, ETA.col, LAM.col, n, p)
        if ETA.uniform and LAM.uniform:  # the common case: Python floats, no broadcasting
            e_l, l_l = ETA.col, LAM.col
            gradient = grad.bind(Xc, Gc)
            vertex = lmo.bind(Gc) if lmo is not None else None
            flat = lmo.flat if lmo is not None else None

            def step(t):
                i = t - 1
                e, l = float(e_l[i]), float(l_l[i])
                om = 1.0 - e
                gradient()                                 # G = (1/n) grad f_i(x_i)
                subtract(Xc, xc3, Dc)
                multiply(Dc, l, Dc)
                add(Gc, Dc, Gc)                            # + lambda_t (x_i - xbar)
                if vertex is not None:
                    j, val = vertex()
                    multiply(Xc, om, Xc)
                    Xflat[flat] += val * e                 # x_i <- (1 - eta) x_i + eta s_i (s_i sparse)
                    sbar = bincount(add(server_base, j), val, minlength)
                    sbar /= n                              # mean_i s_i
                    multiply(xc, om, xc)
                    sbar *= e
                    add(xc, sbar.reshape(Bc, p), xc)       # xbar <- (1 - eta) xbar + eta mean_i s_i
                else:
                    s = S.lmo(Gc)
                    sbar = s.sum(1)
                    multiply(Xc, om, Xc)
                    add(Xc, e * s, Xc)
                    sbar /= n
                    multiply(xc, om, xc)
                    sbar *= e
                    add(xc, sbar, xc)
            return step

        ETA_S = _Rows(eta[:, lo:hi], 1)

        def step(t):  # per-instance schedules
            i = t - 1
            grad(Xc, Gc)
            subtract(Xc, xc3, Dc)
            multiply(Dc, LAM(i), Dc)
            add(Gc, Dc, Gc)
            if lmo is not None:
                j, val = lmo(Gc)
                multiply(Xc, ETA.complement(i), Xc)
                Xflat[lmo.flat] += val * ETA.per_row(i, instance)
                sbar = bincount(add(server_base, j), val, minlength).reshape(Bc, p)
            else:
                s = S.lmo(Gc)
                sbar = s.sum(1)
                multiply(Xc, ETA.complement(i), Xc)
                add(Xc, ETA(i) * s, Xc)
            sbar /= n
            multiply(xc, ETA_S.complement(i), xc)
            sbar *= ETA_S(i)
            add(xc, sbar, xc)
        return step

    jit_step = _jit_step(X, xbar, HX, grad, lmo, eta, lam)
    stream_step = None
    if jit_step is not None:   # compiled fused round: no chunking needed (H is read one column per client)
        step, chunk_steps = jit_step, None
        if stream is not None:
            stream_step = _jit_stream_step(X, xbar, HX, grad, lmo, eta, lam, rec)
    else:
        step = make_step(0, B, grad, lmo, S)
        groups = _groups(B, n, p, grad, lmo, S) if stream is None else None
        chunk_steps = [(g[0], g[1], make_step(*g)) for g in groups] if groups else None
    base = scalar_source(rec)
    trace = run_recorded(rounds, grid, step, lambda k: rec(k, X, xbar), chunk_steps, state=(X, xbar), record=rec,
                         stream=stream, scalar_snapshot=lambda k: base(k, X, xbar), stream_step=stream_step)
    trace.final = {"X": X, "xbar": xbar}
    return trace


REFRESH = 64  # the incremental gradient is recomputed exactly every REFRESH rounds
# Whether the compiled round also streams the consensus distance (F and infeasibility always).  It costs as
# much as F: with it the every-round stream costs ~1.38x a run, without ~1.20x (benchmarks/HISTORY.md, section
# "Every-round stream"); no claim bounds the default recorder's consensus, so it is off.  The numpy path and
# the other algorithms stream every scalar metric of the recorder.
STREAM_CONSENSUS = False


def _jit_step(X, xbar, HX, grad, lmo, eta, lam):
    """The compiled round of :mod:`.jit` when it applies (quadratic losses with the fused kernel, l1 ball
    or simplex vertices, schedules equal across instances), else ``None``."""
    from fedcheck.algorithms import jit
    from fedcheck.algorithms.kernels import FactoredGrad, L1Vertex, SimplexVertex
    if not jit.AVAILABLE or not (isinstance(lmo, (L1Vertex, SimplexVertex)) and uniform_rows(eta)
                                 and uniform_rows(lam)):
        return None
    kind = jit.L1 if isinstance(lmo, L1Vertex) else jit.SIMPLEX
    if isinstance(grad, FactoredGrad) and _factored_ok(grad, X):
        A, bvec, r_row = grad.A, grad.b, np.ascontiguousarray(lmo.r_row)
        e_col, l_col = np.ascontiguousarray(eta[:, 0]), np.ascontiguousarray(lam[:, 0])
        sbar, g, scale = np.empty(X.shape[-1]), np.empty(X.shape[-1]), float(grad.scale)
        rnd = jit.fedfw_round_factored

        def fstep(t):
            i = t - 1
            rnd(X, xbar, HX, A, bvec, r_row, e_col[i], l_col[i], i % REFRESH == 0, kind, sbar, scale, g)
        return fstep
    if getattr(grad, "HT", None) is None or grad.post != 1.0:
        return None
    HT, c, r_row = grad.HT, np.ascontiguousarray(grad.c), np.ascontiguousarray(lmo.r_row)
    e_col, l_col = np.ascontiguousarray(eta[:, 0]), np.ascontiguousarray(lam[:, 0])
    rnd = jit.bind_fedfw_round(X, xbar, HX, HT, c, r_row, kind, np.empty(X.shape[-1]))   # shapes checked once

    def step(t):
        i = t - 1
        rnd(e_col[i], l_col[i], i % REFRESH == 0)
    return step


def _factored_ok(grad, X) -> bool:
    """The compiled factored round takes C-contiguous float64 ``A`` ``(B, n, m, p)`` and ``b`` ``(B, n, m)``."""
    A, b = grad.A, grad.b
    return (A.ndim == 4 and A.shape[:2] == X.shape[:2] and A.shape[-1] == X.shape[-1] and b.shape == A.shape[:3]
            and A.dtype == np.float64 and b.dtype == np.float64 and A.flags.c_contiguous and b.flags.c_contiguous)


def _jit_stream_step(X, xbar, HX, grad, lmo, eta, lam, rec):
    """The compiled round that also writes the default least-squares recorder's metrics of the new iterate
    into the stream buffer (``None`` unless ``rec``'s scalar metrics are those of that recorder)."""
    from fedcheck.algorithms import jit
    from fedcheck.algorithms.kernels import L1Vertex
    ls = getattr(scalar_source(rec), "least_squares", None)
    if ls is None or getattr(ls, "data", None) is None or ls.data["B"] != X.shape[0] or X.dtype != np.float64:
        return None
    fused = jit.StreamedRound(ls, consensus=STREAM_CONSENSUS)
    kind = jit.L1 if isinstance(lmo, L1Vertex) else jit.SIMPLEX
    from fedcheck.algorithms.kernels import FactoredGrad
    if isinstance(grad, FactoredGrad):
        step = fused.bind_factored(X, xbar, HX, grad.A, grad.b, np.ascontiguousarray(lmo.r_row), kind,
                                   np.empty(X.shape[-1]), float(grad.scale), eta[:, 0], lam[:, 0], REFRESH)
    else:
        step = fused.bind(X, xbar, HX, grad.HT, np.ascontiguousarray(grad.c), np.ascontiguousarray(lmo.r_row), kind,
                          np.empty(X.shape[-1]), eta[:, 0], lam[:, 0], REFRESH)
    if getattr(rec, "least_squares", None) is ls:     # the recorder is that recorder itself (no wrapper adding values):
        step.recorded = fused.recorded(X, xbar)       # its recorded rows reuse the streamed F
    return step


def _incremental_step(Xc, xc, Gc, Dc, HXc, grad, lmo, e_l, l_l, n, p):
    """A FedFW round for quadratic losses and 1-sparse vertices with an incremental gradient.

    With ``x_i <- (1 - eta) x_i + eta v e_j`` the weighted gradient ``(1/n) H_i x_i`` moves to
    ``(1 - eta) (1/n) H_i x_i + eta v (1/n) H_i e_j``: one column of ``H_i`` per client instead of a
    ``p x p`` product, the same quantity up to rounding.  It is recomputed exactly (the fused matmul
    kernel) every ``REFRESH`` rounds, so rounding cannot accumulate beyond ``REFRESH`` updates."""
    R = Xc.shape[0] * Xc.shape[1]
    HT2 = grad.HT.reshape(R * p, p)          # row (r, j) = column j of (1/n) H_r (H symmetric or not)
    c = grad.c
    exact = grad.bind(Xc, Gc)                 # Gc <- (1/n) H x - (1/n) c
    vertex = lmo.bind(Gc)
    flat = lmo.flat
    server_base, minlength = lmo.server_base, Xc.shape[0] * p
    Xflat, HX2 = Xc.reshape(-1), HXc.reshape(R, p)
    xc3 = xc[:, None, :]
    col_index = np.arange(R) * p
    cols = np.empty((R, p))
    idx = np.empty(R, dtype=np.intp)
    subtract, multiply, add, bincount, take = np.subtract, np.multiply, np.add, np.bincount, np.take

    def step(t):
        i = t - 1
        e, l = float(e_l[i]), float(l_l[i])
        om = 1.0 - e
        if i % REFRESH == 0:
            exact()
            add(Gc, c, HXc)                            # HX = (1/n) H x, exactly
        else:
            subtract(HXc, c, Gc)                       # G = (1/n) grad f_i(x_i)
        subtract(Xc, xc3, Dc)
        multiply(Dc, l, Dc)
        add(Gc, Dc, Gc)                                # + lambda_t (x_i - xbar)
        j, val = vertex()
        ev = val * e
        multiply(Xc, om, Xc)
        Xflat[flat] += ev                              # x_i <- (1 - eta) x_i + eta s_i
        add(col_index, j, idx)
        take(HT2, idx, axis=0, out=cols)               # (1/n) H_i e_j per client
        multiply(cols, ev[:, None], cols)
        multiply(HX2, om, HX2)
        add(HX2, cols, HX2)                            # HX <- (1 - eta) HX + eta v (1/n) H_i e_j
        sbar = bincount(add(server_base, j), val, minlength)
        sbar /= n
        multiply(xc, om, xc)
        sbar *= e
        add(xc, sbar.reshape(xc.shape), xc)            # xbar <- (1 - eta) xbar + eta mean_i s_i
    return step


def _move_to_vertex(X, Xflat, G, lmo, S, ETA, i):
    """``X <- (1 - eta_t) X + eta_t lmo(G)`` in place (a scatter of the 1-sparse vertex when the set has one)."""
    om = ETA.complement(i)
    if lmo is not None:
        j, val = lmo(G)
        X *= om
        Xflat[lmo.row_base + j] += val * ETA.per_row(i, lmo.instance)
    else:
        s = S.lmo(G)
        X *= om
        X += ETA(i) * s


def naive_fw_averaging(batch: InstanceBatch, eta: np.ndarray, rounds: int, local_steps: int = 1,
                       grid: np.ndarray | None = None, x0: np.ndarray | None = None,
                       recorder: Recorder | None = None, stream: Stream | None = None) -> Trace:
    """Naive Frank-Wolfe with model averaging, procedure (20) of Appendix A of the FedFW paper:
    each client runs ``local_steps`` FW steps on its own ``f_i`` from ``xbar``; the server averages.

    Reference: the FedFW paper's Appendix A counterexample.  ``x0`` ``(B, p)`` the start; returns a
    :class:`Trace` (``start = 1``, as :func:`fedfw`).
    Example: ``naive_fw_averaging(batch, rounds=T, eta=eta, local_steps=5)``."""
    loss, S, n = batch.loss, batch.set, batch.n
    xbar = batch.x0()[:, 0, :].copy() if x0 is None else np.array(x0, dtype=float)  # the instances' start
    X = np.repeat(xbar[:, None, :], n, 1)
    grid = record_grid(rounds + 1) if grid is None else grid
    rec = recorder or default_recorder(batch)
    grad = make_grad_kernel(loss, 1.0)
    lmo = make_vertex_lmo(S, X.shape)
    ETA = _Rows(eta, 2)
    G = np.empty_like(X)
    Xflat = X.reshape(-1)

    def step(t):
        X[...] = xbar[:, None, :]
        for _ in range(local_steps):
            grad(X, G)
            _move_to_vertex(X, Xflat, G, lmo, S, ETA, t - 1)
        np.mean(X, axis=1, out=xbar)

    base = scalar_source(rec)
    trace = run_recorded(rounds, grid, step, lambda k: rec(k, X, xbar), stream=stream,
                         scalar_snapshot=lambda k: base(k, X, xbar))
    trace.final = {"X": X, "xbar": xbar}
    return trace


def frank_wolfe(batch: InstanceBatch, eta: np.ndarray, rounds: int, grid=None, x0=None, recorder=None,
                stream: Stream | None = None) -> Trace:
    """Classical (centralized) Frank-Wolfe on F = mean_i f_i: x <- (1 - eta_t) x + eta_t lmo(grad F(x)).

    Reference: Frank and Wolfe (1956), the centralized baseline of the FedFW paper.  ``eta`` ``(rounds, B)``,
    ``x0`` ``(B, p)`` the start; returns a :class:`Trace` (``start = 1``, as :func:`fedfw`).
    Example: ``frank_wolfe(batch, rounds=T, eta=eta).final["xbar"]``."""
    loss, S = batch.loss, batch.set
    x = batch.x0()[:, 0, :].copy() if x0 is None else np.array(x0, dtype=float, order="C")  # as fedfw starts
    grid = record_grid(rounds + 1) if grid is None else grid
    rec = recorder or default_recorder(batch)
    grad = make_full_grad_kernel(loss)
    lmo = make_vertex_lmo(S, x.shape)
    ETA = _Rows(eta, 1)
    g = np.empty_like(x)
    xflat = x.reshape(-1)
    x3 = x[:, None, :]

    def step(t):
        grad(x, g)
        _move_to_vertex(x, xflat, g, lmo, S, ETA, t - 1)

    base = scalar_source(rec)
    trace = run_recorded(rounds, grid, step, lambda k: rec(k, x3, x), stream=stream,
                         scalar_snapshot=lambda k: base(k, x3, x))
    trace.final = {"xbar": x}
    return trace
