"""Vector lanes: numba intrinsics that emit LLVM vector code for eight independent rows at once.

numba compiles its own loops over a small block of rows with the accumulators in memory (each ``acc[l] += ...``
a load and a store; on this project's 2-core Xeon ~4 G multiply-adds/s); written as ``<LANES x double>``
values the accumulators stay in registers (7-15 G/s, ``benchmarks/HISTORY.md``, "Least-squares steps in vector
lanes").  Every operation here is an IEEE ``fmul``/``fadd``/``fsub``/``fdiv``/``sqrt`` without fast-math flags
(no fused multiply-add, no reordering), applied lane by lane in the order of the scalar code it replaces: each
lane gives that code's bits (values, NaN positions, signs of zeros; which NaN an addition of two NaNs returns is
not defined by LLVM and not relied on).

The layout: a block of :data:`LANES` rows keeps row ``l``'s value at ``[..., l]``, so an ``(n, m)`` matrix of
every row of the block is ``(n, m, LANES)`` and a vector ``(n, LANES)``, all C-contiguous float64 (the typing
functions accept nothing else, so a wrong layout does not compile); the shapes are the callers' (checked once
per call before the loops).

* :func:`lanes_step`: one least-squares local step of a block of client rows (``fedavg_jit``);
* :func:`tile_in` / :func:`tile_out`: eight consecutive rows of an ``(R, p)`` array into / out of a block;
  :func:`gather_rows`: eight rows given by their indices into a block;
* :func:`lanes_sumsq`: ``sum_k ((R w)_k - q_k)^2`` of a block of instances (the least-squares recorder's ``F``);
* :func:`lanes_consensus`: ``sum_ij (X[b, i, j] - x_b[j])^2`` of a block of instances (its consensus distance).
"""
from __future__ import annotations

import math

import numpy as np

from fedcheck.problems.compiled import AVAILABLE

__all__ = ["LANES", "aligned_empty", "blocks_of", "gather_rows", "lanes_consensus", "lanes_step", "lanes_sumsq", "tile_in",
           "tile_out"]

LANES = 8   # rows per block: one 512-bit (two 256-bit) vector of float64 lanes
WIDEST = 12  # outputs whose accumulators a matrix-vector block keeps in registers at most


class _Emit:
    """IR helpers over one ``builder`` (vectors of :data:`LANES` doubles, int64 indices)."""

    def __init__(self, context, builder, signature, args):
        from llvmlite import ir
        from numba.core import cgutils
        self.ir, self.cg, self.b = ir, cgutils, builder
        self.vec, self.i64 = ir.VectorType(ir.DoubleType(), LANES), ir.IntType(64)
        self.context, self.signature, self.args = context, signature, args

    def base(self, i, scalar=False):
        """The data pointer of array argument ``i`` (as ``<LANES x double>*``, or ``double*``)."""
        arr = self.cg.create_struct_proxy(self.signature.args[i])(self.context, self.b, value=self.args[i])
        return arr.data if scalar else self.b.bitcast(arr.data, self.vec.as_pointer())

    def const(self, v):
        return self.ir.Constant(self.i64, v)

    def load(self, ptr, i):
        return self.b.load(self.b.gep(ptr, [i]), align=8)

    def store(self, v, ptr, i):
        self.b.store(v, self.b.gep(ptr, [i]), align=8)

    def slots(self, n):
        """``n`` vector variables (allocas: registers after LLVM's mem2reg)."""
        return [self.cg.alloca_once(self.b, self.vec) for _ in range(n)]

    def matvec(self, Hp, Wp, nout, ncol, acc, on_output):
        """For ``k = 0 .. nout-1`` in order: ``on_output(k, (((0 + H[k, 0] w[0]) + H[k, 1] w[1]) + ...))`` with
        ``H`` ``(nout, ncol, LANES)`` at ``Hp`` and ``w`` ``(ncol, LANES)`` at ``Wp``: eight outputs' accumulators
        at a time over ``j``, the last block the remainder (up to :data:`WIDEST`)."""
        b, const = self.b, self.const

        def outputs(k0, width):
            for q in range(width):
                b.store(self.ir.Constant(self.vec, None), acc[q])
            with self.cg.for_range(b, ncol) as loop:
                wj = self.load(Wp, loop.index)
                for q in range(width):
                    h = self.load(Hp, b.add(b.mul(b.add(k0, const(q)), ncol), loop.index))
                    b.store(b.fadd(b.load(acc[q]), b.fmul(h, wj)), acc[q])
            for q in range(width):
                on_output(b.add(k0, const(q)), b.load(acc[q]))

        eights = b.udiv(nout, const(8))
        merge = b.and_(b.icmp_signed(">=", eights, const(1)),
                       b.icmp_signed("<=", b.sub(nout, b.mul(eights, const(8))), const(WIDEST - 8)))
        whole = b.sub(eights, b.zext(merge, self.i64))
        with self.cg.for_range(b, whole) as kb:
            outputs(b.mul(kb.index, const(8)), 8)
        k0 = b.mul(whole, const(8))
        last = b.sub(nout, k0)
        for width in range(1, WIDEST + 1):
            with b.if_then(b.icmp_signed("==", last, const(width))):
                outputs(k0, width)


def _arrays_ok(types, arrays, ndims) -> bool:
    return all(isinstance(a, types.Array) and a.dtype == types.float64 and a.layout == "C" and a.ndim == d
               for a, d in zip(arrays, ndims))


# ------------------------------------------------------------------------------------ a least-squares step
def _step_codegen(context, builder, signature, args):
    """LLVM IR of :func:`lanes_step`, in the row kernel's order (``kernels._ls_local_steps_loop``):

    1. ``g[k] = (((0 + H[k, 0] w[0]) + H[k, 1] w[1]) + ...) - c[k]`` (:meth:`_Emit.matvec`);
    2. ``prox``: ``g[k] = g[k] + mu (w[k] - a[k])``; then ``w[k] = w[k] - e g[k]``;
    3. ``proj``: ``s = ||w||^2`` in numpy's pairwise order (``p < 8``: ``((0 + w_0^2) + w_1^2) + ...``; else eight
       accumulators, ``((s_0 + s_1) + (s_2 + s_3)) + ((s_4 + s_5) + (s_6 + s_7))``, then the rest in order;
       ``p <= 128``, the callers check), ``n = sqrt(s)``, ``w *= r / (n if n > 0 else 1)`` where ``n > r``
       (``*= 1`` in the block's other rows; a NaN norm compares false; no row outside: nothing)."""
    e_ = _Emit(context, builder, signature, args)
    ir, b, const, load, store = e_.ir, builder, e_.const, e_.load, e_.store
    Hp, Wp, Cp, Gp, Ap, Lp = (e_.base(i) for i in range(6))
    p, prox, proj = args[6], args[7], args[8]
    acc = e_.slots(WIDEST)

    e_.matvec(Hp, Wp, p, p, acc, lambda k, v: store(b.fsub(v, load(Cp, k)), Gp, k))

    e, mu = load(Lp, const(0)), load(Lp, const(1))
    with e_.cg.for_range(b, p) as loop:
        k = loop.index
        w = load(Wp, k)
        with b.if_then(prox):
            store(b.fadd(load(Gp, k), b.fmul(mu, b.fsub(w, load(Ap, k)))), Gp, k)
        store(b.fsub(w, b.fmul(e, load(Gp, k))), Wp, k)

    with b.if_then(proj):
        zero = ir.Constant(e_.vec, None)

        def sq(i):
            return b.fmul(load(Wp, i), load(Wp, i))
        with b.if_else(b.icmp_signed("<", p, const(8))) as (small, large):
            with small:
                b.store(zero, acc[0])
                with e_.cg.for_range(b, p) as loop:
                    b.store(b.fadd(b.load(acc[0]), sq(loop.index)), acc[0])
            with large:
                for q in range(8):
                    b.store(sq(const(q)), acc[q])
                full = b.udiv(p, const(8))
                with e_.cg.for_range_slice(b, const(1), full, const(1), inc=True) as (blk, _):
                    i0 = b.mul(blk, const(8))
                    for q in range(8):
                        b.store(b.fadd(b.load(acc[q]), sq(b.add(i0, const(q)))), acc[q])
                s = [b.load(acc[q]) for q in range(8)]
                b.store(b.fadd(b.fadd(b.fadd(s[0], s[1]), b.fadd(s[2], s[3])),
                               b.fadd(b.fadd(s[4], s[5]), b.fadd(s[6], s[7]))), acc[0])
                with e_.cg.for_range_slice(b, b.mul(full, const(8)), p, const(1), inc=True) as (i, _):
                    b.store(b.fadd(b.load(acc[0]), sq(i)), acc[0])
        sqrt = e_.cg.get_or_insert_function(b.module, ir.FunctionType(e_.vec, [e_.vec]), f"llvm.sqrt.v{LANES}f64")
        nrm = b.call(sqrt, [b.load(acc[0])])
        rad = load(Lp, const(2))
        out = b.fcmp_ordered(">", nrm, rad)
        with b.if_then(b.icmp_unsigned("!=", b.bitcast(out, ir.IntType(LANES)), ir.Constant(ir.IntType(LANES), 0))):
            one = ir.Constant(e_.vec, [1.0] * LANES)     # (only when a row is outside: no divide otherwise)
            sc = b.select(out, b.fdiv(rad, b.select(b.fcmp_ordered(">", nrm, zero), nrm, one)), one)
            with e_.cg.for_range(b, p) as loop:
                store(b.fmul(load(Wp, loop.index), sc), Wp, loop.index)
    return context.get_dummy_value()


def _step_typing(typingctx, H, W, C, G, A, lane, p, prox, proj):
    """``lanes_step(H, W, C, G, A, lane, p, prox, proj)``: one local step of a block's :data:`LANES` rows, in
    place on ``W`` -- ``H`` ``(p, p, LANES)``; ``W``, ``C`` (the rows' ``c``), ``G`` (scratch), ``A`` (the anchor)
    ``(p, LANES)``; ``lane`` ``(3, LANES)``: the rows' step size, ``mu`` and radius; ``p`` int64,
    ``prox``/``proj`` booleans."""
    from numba import types
    if not _arrays_ok(types, (H, W, C, G, A, lane), (3, 2, 2, 2, 2, 2)) or p != types.int64 or \
            prox != types.boolean or proj != types.boolean:
        return None
    return types.void(H, W, C, G, A, lane, p, prox, proj), _step_codegen


# ------------------------------------------------------------------------------------ rows in and out
def _tile_codegen(into_lanes: bool, indexed: bool = False):
    """LLVM IR of :func:`tile_in` / :func:`tile_out` / :func:`gather_rows`: rows ``r0 .. r0 + LANES - 1`` (or
    rows ``idx[0 .. LANES - 1]``) of ``rows`` ``(R, p)`` to / from the block ``Wb`` ``(p, LANES)``: per ``k`` eight
    scalar loads into one vector store (or one vector load to eight scalar stores) -- moves, no arithmetic."""
    def codegen(context, builder, signature, args):
        e_ = _Emit(context, builder, signature, args)
        ir, b = e_.ir, builder
        rows, block = e_.base(0, scalar=True), e_.base(1)
        p = args[3]
        if indexed:
            arr = e_.cg.create_struct_proxy(signature.args[2])(context, b, value=args[2])
            first = [b.mul(b.load(b.gep(arr.data, [e_.const(l)]), align=8), p) for l in range(LANES)]
        else:
            first = [b.mul(b.add(args[2], e_.const(l)), p) for l in range(LANES)]
        with e_.cg.for_range(b, p) as loop:
            k = loop.index
            at = [b.gep(rows, [b.add(first[l], k)]) for l in range(LANES)]
            slot = b.gep(block, [k])
            if into_lanes:
                v = ir.Constant(e_.vec, ir.Undefined)
                for l in range(LANES):
                    v = b.insert_element(v, b.load(at[l], align=8), ir.Constant(ir.IntType(32), l))
                b.store(v, slot, align=8)
            else:
                v = b.load(slot, align=8)
                for l in range(LANES):
                    b.store(b.extract_element(v, ir.Constant(ir.IntType(32), l)), at[l], align=8)
        return context.get_dummy_value()
    return codegen


def _tile_typing(into_lanes: bool):
    def typing(typingctx, rows, Wb, r0, p):
        """``(rows, Wb, r0, p)``: ``rows`` ``(R, p)`` and ``Wb`` ``(p, LANES)``; rows ``r0 .. r0 + LANES - 1``
        exist (the caller's check)."""
        from numba import types
        if not _arrays_ok(types, (rows, Wb), (2, 2)) or r0 != types.int64 or p != types.int64:
            return None
        return types.void(rows, Wb, r0, p), _tile_codegen(into_lanes)
    return typing


def _gather_typing(typingctx, rows, Wb, idx, p):
    """``gather_rows(rows, Wb, idx, p)``: ``Wb[:, l] = rows[idx[l]]`` -- ``rows`` ``(R, p)``, ``Wb`` ``(p, LANES)``,
    ``idx`` ``(LANES,)`` int64 C-contiguous with every ``0 <= idx[l] < R`` (the caller's check)."""
    from numba import types
    if not _arrays_ok(types, (rows, Wb), (2, 2)) or p != types.int64 or not (
            isinstance(idx, types.Array) and idx.dtype == types.int64 and idx.layout == "C" and idx.ndim == 1):
        return None
    return types.void(rows, Wb, idx, p), _tile_codegen(True, indexed=True)


# ------------------------------------------------------------------------------------ the recorder's F
def _sumsq_codegen(context, builder, signature, args):
    """LLVM IR of :func:`lanes_sumsq`: ``out = (((0 + r_0^2) + r_1^2) + ...)`` with ``r_k = (((0 + R[k, 0] x[0]) +
    R[k, 1] x[1]) + ...) - q[k]`` -- ``jit._ls_record``'s ``F`` sums, in its order, lane by lane."""
    e_ = _Emit(context, builder, signature, args)
    b = builder
    Rp, Xp, Qp, Op = (e_.base(i) for i in range(4))
    ncol, nout = args[4], args[5]
    acc = e_.slots(WIDEST)
    total = e_.slots(1)[0]
    b.store(e_.ir.Constant(e_.vec, None), total)

    def add(k, v):
        r = b.fsub(v, e_.load(Qp, k))
        b.store(b.fadd(b.load(total), b.fmul(r, r)), total)
    e_.matvec(Rp, Xp, nout, ncol, acc, add)
    e_.store(b.load(total), Op, e_.const(0))
    return context.get_dummy_value()


def _sumsq_typing(typingctx, R, X, Q, out, p, k_rows):
    """``lanes_sumsq(R, X, Q, out, p, k_rows)``: ``R`` ``(k_rows, p, LANES)``, ``X`` ``(p, LANES)``, ``Q``
    ``(k_rows, LANES)``, ``out`` ``(1, LANES)``."""
    from numba import types
    if not _arrays_ok(types, (R, X, Q, out), (3, 2, 2, 2)) or p != types.int64 or k_rows != types.int64:
        return None
    return types.void(R, X, Q, out, p, k_rows), _sumsq_codegen


# ------------------------------------------------------------------------------------ the consensus distance
def _consensus_codegen(context, builder, signature, args):
    """LLVM IR of :func:`lanes_consensus`: ``out = (((0 + d_00^2) + d_01^2) + ...)``, ``d_ij = X[b, i, j] -
    x[j]`` over ``i`` then ``j`` -- ``jit._ls_record``'s consensus sum, in its order, lane by lane (the rows of
    instance ``b0 + l`` read with eight scalar loads per ``(i, j)``)."""
    e_ = _Emit(context, builder, signature, args)
    b, const = builder, e_.const
    Xp = e_.base(0, scalar=True)
    Wp, Op = e_.base(1), e_.base(2)
    b0, n, p = args[3], args[4], args[5]
    acc = e_.slots(1)[0]
    b.store(e_.ir.Constant(e_.vec, None), acc)
    slab = b.mul(n, p)
    rows = [b.mul(b.add(b0, const(l)), slab) for l in range(LANES)]
    with e_.cg.for_range(b, n) as li:
        with e_.cg.for_range(b, p) as lj:
            at = b.add(b.mul(li.index, p), lj.index)
            v = e_.ir.Constant(e_.vec, e_.ir.Undefined)
            for l in range(LANES):
                x = b.load(b.gep(Xp, [b.add(rows[l], at)]), align=8)
                v = b.insert_element(v, x, e_.ir.Constant(e_.ir.IntType(32), l))
            d = b.fsub(v, e_.load(Wp, lj.index))
            b.store(b.fadd(b.load(acc), b.fmul(d, d)), acc)
    e_.store(b.load(acc), Op, const(0))
    return context.get_dummy_value()


def _consensus_typing(typingctx, X, x8, out, b0, n, p):
    """``lanes_consensus(X, x8, out, b0, n, p)``: ``X`` ``(B, n, p)`` with instances ``b0 .. b0 + LANES - 1``
    (the caller's check), ``x8`` ``(p, LANES)`` their server points, ``out`` ``(1, LANES)``."""
    from numba import types
    if not _arrays_ok(types, (X, x8, out), (3, 2, 2)) or any(v != types.int64 for v in (b0, n, p)):
        return None
    return types.void(X, x8, out, b0, n, p), _consensus_codegen


def _compiled_only(*args):     # pragma: no cover - replaced by the intrinsics when numba is there
    raise RuntimeError("compiled code only")


lanes_step = tile_in = tile_out = gather_rows = lanes_sumsq = lanes_consensus = _compiled_only
if AVAILABLE:
    from numba.extending import intrinsic as _intrinsic
    lanes_step = _intrinsic(_step_typing)
    tile_in, tile_out = _intrinsic(_tile_typing(True)), _intrinsic(_tile_typing(False))
    gather_rows = _intrinsic(_gather_typing)
    lanes_sumsq = _intrinsic(_sumsq_typing)
    lanes_consensus = _intrinsic(_consensus_typing)


ALIGN = 64   # bytes: one <LANES x double>, so that no vector load or store of a block straddles two cache lines


def aligned_empty(shape) -> np.ndarray:
    """An uninitialised C-contiguous float64 array whose data start on an :data:`ALIGN`-byte boundary.

    Every vector of a block (``[..., 0:LANES]``) then lies in one cache line; numpy aligns only to 16 bytes, and
    a block array straddling lines costs ~12 % of a local step (``benchmarks/HISTORY.md``)."""
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    size = math.prod(shape)
    buf = np.empty(size + ALIGN // 8)
    skip = (-buf.ctypes.data % ALIGN) // 8
    return buf[skip:skip + size].reshape(shape)


def blocks_of(a: np.ndarray, R: int) -> np.ndarray:
    """Rows ``(R, *tail)`` -> blocks ``(C, *tail, LANES)`` (zero padded), contiguous and :data:`ALIGN`-aligned."""
    C = -(-R // LANES)
    pad = np.zeros((C * LANES,) + a.shape[1:])
    pad[:R] = a
    pad = pad.reshape((C, LANES) + a.shape[1:])
    out = aligned_empty((C,) + a.shape[1:] + (LANES,))
    out[...] = np.moveaxis(pad, 1, -1)
    return out
