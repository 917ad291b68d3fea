"""Compiled local steps and FedAvg rounds of least-squares clients (for the library's FedAvg, and for users'
round functions through ``pieces.local_steps``).

Three things, all on the library's least squares in its ``H`` form (``kernels.plain_least_squares``), every
instance and client in one compiled call, the client rows in blocks of ``lanes.LANES`` = 8 (``kernels.blocked_layout``:
``H`` of a block ``(p, p, 8)``, entry ``[k, j, l]`` = ``H_row_l[k, j]``), the rows a block's vector lanes; each
local step of a block is :func:`.lanes.lanes_step` (LLVM vector code: ``H w - c`` with eight outputs'
accumulators in registers, the proximal term, the step, the projection -- every lane the row kernel
``kernels._ls_local_steps_loop``'s operations in its order, no fused multiply-add: the same bits):

* :func:`ls_local_steps`: the one FedAvg's local steps -- the blocked kernel below when every instance takes the
  same number of steps, else the row kernel (each row's own count); the same bits (``tests/test_compiled_paths.py``).
* :class:`LSFedAvg`: one round of the one FedAvg with plain averaging (no map, hook, sampling, uplink, server
  step) fused into one call: the clients start from the server point (no ``np.repeat``), take the round's
  steps, and the server point is their mean in numpy's order (clients added one after the other, then divided
  by ``S``: ``kernels.clients_mean``'s bits).  Everything that does not change between rounds (the layout, the
  scratch, the checks) is prepared once per run.
* :class:`LSSteps`: the same local steps for ``pieces.local_steps`` (FedProx and any user round function built
  on it) with the per-call checks that cannot change between rounds (loss, layout, shapes) done once per loss.

Decline (``None``) for anything else; ``FEDCHECK_JIT=0`` (or no numba) switches everything here off.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from fedcheck.algorithms.kernels import (FUSE_LIMIT_BYTES, blocked_layout, client_mean_compiled,
                                         ls_local_steps_compiled, plain_least_squares)
from fedcheck.algorithms.lanes import LANES, aligned_empty, blocks_of, gather_rows, lanes_step, tile_in, tile_out
from fedcheck.problems.compiled import AVAILABLE, numba

__all__ = ["LSFedAvg", "LSSteps", "lanes_ok", "ls_fedavg", "ls_local_steps", "ls_steps", "steps_blocked", "work_array"]


def work_array(p: int) -> np.ndarray:
    """The scratch of :func:`_blocks` for dimension ``p`` (aligned: :func:`.lanes.aligned_empty`)."""
    return aligned_empty((3 * p + 3, LANES))


def _blocks(src, from_server, W3, Hb, cb, eta, T, anchor, mu, rad, prox, proj, work):
    """Every block: gather its rows (from ``src`` ``(B, S, p)``, or from the server point ``src[b, 0]`` of
    ``(B, 1, p)`` when ``from_server``), ``T`` steps of the block (:func:`.lanes.lanes_step`), scatter into ``W3`` ``(B, S, p)``."""
    B, S, p = W3.shape
    C, _, L = cb.shape
    R = B * S
    if L != LANES or Hb.shape[1:] != (p, p, LANES) or cb.shape[1] != p or work.shape[0] < 3 * p + 3 \
            or work.shape[1] != LANES:
        raise ValueError("fedavg_jit: blocks of LANES rows expected")
    Wb = work[0:p]
    g = work[p:2 * p]
    anc = work[2 * p:3 * p]
    lane = work[3 * p:3 * p + 3]       # the rows' step size, mu and radius
    inst = np.empty(LANES, dtype=np.int64)
    rows = src.reshape(src.shape[0] * src.shape[1], p)    # (B S, p) rows, or (B, p) server points
    out = W3.reshape(R, p)
    nb, ni = 0, 0         # instance and client of the next row (row r = nb S + ni; advanced, no division)
    for c in range(C):
        r0 = c * LANES
        full = r0 + LANES <= R
        for l in range(LANES):
            if r0 + l < R:
                inst[l] = nb
                lane[1, l] = mu[nb] if prox else 0.0
                lane[2, l] = rad[nb] if proj else 1.0
                ni += 1
                if ni == S:
                    nb, ni = nb + 1, 0
            else:
                inst[l] = -1
                lane[1, l] = 0.0
                lane[2, l] = 1.0
        if full and not from_server:        # eight consecutive rows: one (8, p) tile, transposed
            tile_in(rows, Wb, r0, p)
        elif full:                          # eight rows' server points (every inst[l] a row of src)
            gather_rows(rows, Wb, inst, p)
        else:
            for l in range(LANES):
                b = inst[l]
                if b >= 0:
                    w = rows[b] if from_server else rows[r0 + l]
                    for k in range(p):
                        Wb[k, l] = w[k]
                else:
                    for k in range(p):
                        Wb[k, l] = 0.0
        if prox and full:
            gather_rows(anchor, anc, inst, p)
        elif prox:
            for l in range(LANES):
                b = inst[l]
                for k in range(p):
                    anc[k, l] = anchor[b, k] if b >= 0 else 0.0
        H, cc = Hb[c], cb[c]
        for t in range(T):      # T local steps of the block's rows
            te = min(t, eta.shape[0] - 1)
            for l in range(LANES):
                lane[0, l] = eta[te, inst[l]] if inst[l] >= 0 else 0.0
            lanes_step(H, Wb, cc, g, anc, lane, p, prox, proj)
        if full:
            tile_out(out, Wb, r0, p)
        else:
            for l in range(R - r0):
                w = out[r0 + l]
                for k in range(p):
                    w[k] = Wb[k, l]
    # (nothing returned: boxing an array for Python costs ~1 us a call)


def _steps_blocked(W3, Hb, cb, eta, T, anchor, mu, rad, prox, proj, work):
    """``T`` steps of every row, in place on ``W3`` ``(B, S, p)``; ``Hb`` ``(C, p, p, L)`` with ``Hb[c, k, j, l] =
    H_row[k, j]`` (row ``c L + l`` of the ``B S`` rows, zero padded), ``cb`` ``(C, p, L)`` (``kernels.blocked_layout``);
    ``work``: :func:`work_array`.  The row kernel's bits (``kernels._ls_local_steps_loop``)."""
    _blocks(W3, False, W3, Hb, cb, eta, T, anchor, mu, rad, prox, proj, work)


def _fedavg_round(x, W3, xout, Hb, cb, eta, T, work):
    """One plain-averaging FedAvg round: every client from ``x`` ``(B, p)``, ``T`` steps into ``W3``, and
    ``xout`` = the clients' mean in numpy's order (``kernels._client_mean_loop``)."""
    B, S, p = W3.shape
    none1 = np.zeros(1)
    _blocks(x.reshape(B, 1, p), True, W3, Hb, cb, eta, T, np.zeros((1, 1)), none1, none1, False, False, work)
    _client_mean(W3, xout)


_client_mean = client_mean_compiled      # kernels._client_mean_loop: numpy's W.mean(1) order, compiled

if AVAILABLE and _client_mean is not None:
    _jit = numba.njit(cache=True, fastmath=False, nogil=True)
    _blocks = _jit(_blocks)
    steps_blocked = _jit(_steps_blocked)
    _fedavg_round_c = _jit(_fedavg_round)
else:  # pragma: no cover - FEDCHECK_JIT=0 or no numba: the callers run numpy
    steps_blocked = _fedavg_round_c = None


@functools.lru_cache(maxsize=None)
def lanes_ok() -> bool:
    """Whether the vector-lane kernel compiles here and gives the row kernel's values (checked once per process
    on a small random problem: two blocks, one partial, the proximal term and the projection, p = 10 and 3).
    ``False`` (a numba whose internals the intrinsics do not fit, say) turns the blocked kernels off: the row
    kernel or numpy runs instead."""
    if steps_blocked is None or ls_local_steps_compiled is None:
        return False
    try:
        rng = np.random.default_rng(0)
        for p in (10, 3):
            B, S = 2, 5
            A = rng.standard_normal((B * S, 6, p))
            H = np.ascontiguousarray((np.swapaxes(A, 1, 2) @ A / 6).reshape(B, S, p, p))
            c = rng.standard_normal((B, S, p))
            R = B * S
            Hb, cb = blocks_of(H.reshape(R, p, p), R), blocks_of(c.reshape(R, p), R)
            W = rng.standard_normal((B, S, p))
            eta = np.full((1, B), 0.1)
            anchor, mu, rad = W.mean(1), np.full(B, 0.5), np.full(B, 0.8)
            a, b = W.copy(), W.copy()
            ls_local_steps_compiled(a, H, c, eta, np.full(B, 3, dtype=np.int64), anchor, mu, True, rad, True,
                                     np.empty(p))
            steps_blocked(b, Hb, cb, eta, 3, anchor, mu, rad, True, True, work_array(p))
            if not np.array_equal(a, b):
                return False
        return True
    except Exception:  # noqa: BLE001 - any failure to compile or run: the lanes are off, nothing else changes
        return False


def _layout_ok(loss, B: int, S: int, p: int) -> bool:
    """The blocked kernels apply: the plain least squares of these shapes, ``p <= 128`` (the norm's pairwise
    order), ``H`` contiguous and not huge (the layout copies it once), and the lanes work here (:func:`lanes_ok`)."""
    if steps_blocked is None or B < 1 or S < 1 or not plain_least_squares(loss) or not lanes_ok():
        return False
    H = loss.H
    return (H.shape == (B, S, p, p) and H.flags.c_contiguous and loss.c.flags.c_contiguous and 2 <= p <= 128
            and 2 * H.nbytes <= FUSE_LIMIT_BYTES)


class LSFedAvg:
    """The fused plain-averaging round of :func:`.fedavg.fedavg_rounds` for one run (see the module doc):
    ``round(x, eta, T) -> (W, x_new)`` with ``eta`` ``(1, B)`` (every step) or ``(T', B)`` (row ``t``), ``T``
    the local steps of every instance this round; new arrays every round (a caller may keep the old ones)."""

    def __init__(self, loss, B: int, S: int, p: int):
        self.B, self.S, self.p = B, S, p
        self.Hb, self.cb = blocked_layout(loss)
        self.work = work_array(p)

    def round(self, x: np.ndarray, eta: np.ndarray, T: int):
        B, S, p = self.B, self.S, self.p
        if x.shape != (B, p) or x.dtype != np.float64 or not x.flags.c_contiguous:
            x = np.ascontiguousarray(x, dtype=float)
            if x.shape != (B, p):
                raise ValueError(f"compiled FedAvg round: x of shape {x.shape}, expected {(B, p)}")
        if eta.ndim != 2 or eta.shape[1] != B or eta.dtype != np.float64 or not eta.flags.c_contiguous \
                or (eta.shape[0] != 1 and eta.shape[0] < T):
            raise ValueError(f"compiled FedAvg round: step sizes of shape {eta.shape}, expected (1 or >= {T}, {B})")
        W = np.empty((B, S, p))
        xn = np.empty((B, p))
        _fedavg_round_c(x, W, xn, self.Hb, self.cb, eta, int(T), self.work)
        return W, xn


def ls_fedavg(loss, B: int, S: int, p: int) -> LSFedAvg | None:
    """:class:`LSFedAvg` for ``loss`` (the plain least squares of ``B`` instances of ``S`` clients in
    dimension ``p``), or ``None`` when the compiled round does not apply."""
    return LSFedAvg(loss, B, S, p) if _fedavg_round_c is not None and _layout_ok(loss, B, S, p) else None


class LSSteps:
    """``pieces.local_steps`` of one loss, compiled (see the module doc): ``__call__(Y, eta, T, anchor, mu,
    radius)`` -> new ``(B, S, p)`` array, or ``None`` when an argument is not what the kernel takes."""

    def __init__(self, loss, B: int, S: int, p: int):
        self.H = loss.H
        self.B, self.S, self.p = B, S, p
        self.Hb, self.cb = blocked_layout(loss)
        self.none1, self.none2 = np.zeros(1), np.zeros((1, 1))
        self.scratch = threading.local()        # each thread's own work_array (the object is shared)

    def _row(self, v):
        """A per-instance value as a contiguous float64 ``(B,)`` array, or ``None``."""
        a = v if type(v) is np.ndarray and v.dtype == np.float64 else np.asarray(v, dtype=float)
        if a.ndim == 0:
            return np.full(self.B, float(a))
        if a.shape != (self.B,):
            return None
        return a if a.flags.c_contiguous else np.ascontiguousarray(a)

    def __call__(self, Y, eta, T: int, anchor=None, mu=None, radius=None):
        B, S, p = self.B, self.S, self.p
        if type(Y) is not np.ndarray or Y.shape != (B, S, p) or Y.dtype != np.float64 or T < 0:
            return None
        e = self._row(eta)
        if e is None:
            return None
        prox = anchor is not None and mu is not None
        anc, mu_ = self.none2, self.none1
        if prox:
            anc = anchor if type(anchor) is np.ndarray and anchor.dtype == np.float64 else \
                np.asarray(anchor, dtype=float)
            mu_ = self._row(mu)
            if anc.shape != (B, p) or mu_ is None:
                return None
            if not anc.flags.c_contiguous:
                anc = np.ascontiguousarray(anc)
        rad = self.none1
        if radius is not None:
            rad = self._row(radius)
            if rad is None:
                return None
        if not Y.flags.c_contiguous:
            Y = np.ascontiguousarray(Y)
        work = getattr(self.scratch, "work", None)
        if work is None:
            work = self.scratch.work = work_array(p)
        out = np.empty((B, S, p))             # a new array, the input untouched (read block by block)
        _blocks(Y, False, out, self.Hb, self.cb, e.reshape(1, B), int(T), anc, mu_, rad, prox, radius is not None,
                work)
        return out


def ls_steps(loss, B: int, S: int, p: int) -> LSSteps | None:
    """:class:`LSSteps` of ``loss`` (made once per loss and kept on it), or ``None`` when it does not apply."""
    if steps_blocked is None:
        return None
    got = loss.__dict__.get("_fedavg_jit_steps")
    if got is not None and got[0] is loss.H and got[1] == (B, S, p):
        return got[2]
    made = LSSteps(loss, B, S, p) if _layout_ok(loss, B, S, p) else None
    loss.__dict__["_fedavg_jit_steps"] = (loss.H, (B, S, p), made)
    return made


def _per_instance(v, B: int) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return v if v.shape == (B,) and v.flags.c_contiguous else np.ascontiguousarray(np.broadcast_to(v, (B,)))


def ls_local_steps(loss, W: np.ndarray, eta: np.ndarray, steps, *, anchor=None, mu=None, radius=None):
    """Local gradient steps of least-squares clients, compiled: a new array, or ``None`` when the
    compiled path does not apply (numba off; not the plain batched least squares; shapes) and the caller runs
    numpy.  ``eta`` ``(T, B)`` (row ``t`` is local step ``t + 1``) or ``(B,)`` (every step); ``steps`` an int or ``(B,)`` counts;
    ``anchor`` ``(B, p)`` and ``mu`` ``(B,)``: the proximal term; ``radius`` ``(B,)``: project on the l2 ball."""
    if ls_local_steps_compiled is None or not plain_least_squares(loss) or W.ndim != 3:
        return None
    B, S, p = W.shape
    H = loss.H
    if H.shape != (B, S, p, p) or not H.flags.c_contiguous or not loss.c.flags.c_contiguous:
        return None
    counts = np.full(B, steps, dtype=np.int64) if isinstance(steps, int) else \
        np.ascontiguousarray(np.broadcast_to(np.asarray(steps, dtype=np.int64), (B,)))
    eta = np.ascontiguousarray(eta, dtype=float)
    if eta.ndim == 1 and eta.shape[0] == B:
        eta = eta.reshape(1, B)                 # one step size per instance for every step
    if eta.ndim != 2 or eta.shape[1] != B or (eta.shape[0] != 1 and eta.shape[0] < int(counts.max(initial=0))):
        return None
    out = np.array(W, dtype=float, order="C")
    prox = anchor is not None and mu is not None
    anc = np.ascontiguousarray(anchor, dtype=float) if prox else np.zeros((1, 1))
    mu_ = _per_instance(mu, B) if prox else np.zeros(1)
    proj = radius is not None
    rad = _per_instance(radius, B) if proj else np.zeros(1)
    if prox and anc.shape != (B, p):
        return None
    Tmax = int(counts.max(initial=0))
    if steps_blocked is not None and bool(np.all(counts == Tmax)) and p <= 128 and 2 * H.nbytes <= FUSE_LIMIT_BYTES \
            and lanes_ok():
        # every row takes the same number of steps: the blocked kernel (vectorized over rows), the same bits
        Hb, cb = blocked_layout(loss)
        steps_blocked(out, Hb, cb, eta, Tmax, anc, mu_, rad, prox, proj, work_array(p))
        return out
    ls_local_steps_compiled(out, H, loss.c, eta, counts, anc, mu_, prox, rad, proj,
                             np.empty(p))
    return out
