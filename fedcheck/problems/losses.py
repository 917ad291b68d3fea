"""Client losses, batched over instances and clients: the one loss hierarchy of fedcheck.

A loss object holds the data of a whole batch.  Every array has the leading axes ``(..., n)``
(instances, then clients) followed by the loss's own axes: ``A`` of shape ``(..., n, m, p)`` and
``b`` of shape ``(..., n, m)`` for most losses; each class lists its arrays in ``keys`` and their
trailing axes in ``dims``.  Its oracles take the clients' points ``X`` of shape ``(..., n, p)``
and return per-client values ``(..., n)`` and gradients ``(..., n, p)``; no Python loop over
clients or instances.

One sign convention: a loss is what is minimized, and a constraint ``g(x) <= 0`` is a loss too
(offsets of affine pieces are *added*, ``a^T x + b``; levels are *subtracted*, ``||x - c|| - r``,
``logistic loss - kappa``).

Interface:

``Loss(*arrays, **arrays_and_options)``
    arrays in ``keys`` order, positionally or by name; keyword options (``options``: name ->
    allowed values, the first the default) change numerics only as documented per class.
``value(X)``, ``grad(X)`` (alias ``subgrad``)
    per-client value and gradient (a subgradient for non-smooth losses, ``smooth = False``).
``smoothness()``
    the per-client smoothness constant ``L_i`` (``inf`` for non-smooth losses).
``lipschitz()``
    ``(L, exact, note)``: per-client Lipschitz constants (non-smooth losses and constraint kinds).
``cvx(k, i, x)``
    the cvxpy expression of client ``i`` of instance ``k`` (``k`` ignored without a batch axis).
``take(k)``, ``stack(losses)``, ``map(fn)``, ``arrays``
    the loss of one instance (its leading axis dropped); losses of one kind concatenated on the
    leading (instance) axis; every array transformed by ``fn``; the arrays by name.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

__all__ = ["Loss", "LeastSquares", "Logistic", "LOSSES", "make_loss", "take_rows", "lam_max_gram"]


class Loss:
    name = "loss"
    smooth = True
    keys: tuple = ("A", "b")
    dims: tuple = ("mp", "m")        # trailing axes of each array after ``(..., n)``
    options: dict = {}               # option -> allowed values (the first is the default)

    def __init__(self, *arrays, **kwargs):
        cls = type(self)
        if len(arrays) > len(cls.keys):
            raise TypeError(f"{cls.__name__} takes the arrays {cls.keys}; got {len(arrays)} positional arguments")
        named = dict(zip(cls.keys, arrays))
        for k in cls.keys:
            if k in kwargs:
                if k in named:
                    raise TypeError(f"{cls.__name__}: array {k!r} given twice")
                named[k] = kwargs.pop(k)
        missing = [k for k in cls.keys if k not in named]
        if missing:
            raise ValueError(f"{cls.__name__}: missing arrays {missing}")
        unknown = sorted(set(kwargs) - set(cls.options))
        if unknown:
            raise TypeError(f"{cls.__name__}: unknown options {unknown}; expected {sorted(cls.options)}")
        self.opts = {}
        for opt, allowed in cls.options.items():
            val = kwargs.get(opt, allowed[0])
            if val not in allowed:
                raise ValueError(f"{cls.__name__}: option {opt}={val!r}; expected one of {allowed}")
            self.opts[opt] = val
        sizes, lead, ok = {}, None, True
        for k, dims in zip(cls.keys, cls.dims):
            a = np.asarray(named[k], dtype=float)
            setattr(self, k, a)
            if a.ndim < len(dims) + 1:
                ok = False
                continue
            here = a.shape[:a.ndim - len(dims)]
            ok = ok and (lead is None or here == lead)
            lead = here if lead is None else lead
            for ax, size in zip(dims, a.shape[a.ndim - len(dims):]):
                ok = ok and sizes.setdefault(ax, size) == size
        if not ok:
            want = " and ".join(f"{k} (..., n{''.join(', ' + c for c in dims)})" for k, dims in zip(cls.keys, cls.dims))
            got = ", ".join(f"{k} {getattr(self, k).shape}" for k in cls.keys)
            raise ValueError(f"{cls.__name__}: arrays must be {want}; got {got}")
        self.lead_shape = lead
        self.m = sizes.get("m")
        self._p = sizes.get("p")

    @property
    def n(self) -> int:
        return self.lead_shape[-1]

    @property
    def p(self) -> int:
        return self._p

    @property
    def batch_shape(self) -> tuple:
        return self.lead_shape[:-1]

    @property
    def arrays(self) -> dict:
        return {k: getattr(self, k) for k in self.keys}

    #: Client weights ``p_k`` ``(..., n)`` summing to 1 (``None``: ``1/n`` each, the plain mean): ``F = sum_k p_k f_k``.
    weights: np.ndarray | None = None

    def map(self, fn: Callable[[np.ndarray], np.ndarray]) -> "Loss":
        """The same kind and options with every array replaced by ``fn(array)`` (e.g. an index on
        the leading axes, a permutation or repetition of the clients); client weights follow."""
        out = type(self)(**{k: fn(v) for k, v in self.arrays.items()}, **self.opts)
        if self.weights is not None:
            out.weights = np.asarray(fn(self.weights), dtype=float)
        return out

    def take(self, k: int) -> "Loss":
        """Instance ``k`` (the first leading axis dropped)."""
        return self.map(lambda v: v[k])

    @classmethod
    def stack(cls, losses: Sequence["Loss"]) -> "Loss":
        """Concatenate losses of one kind and options along the leading (instance) axis."""
        l0 = losses[0]
        if any(type(l) is not type(l0) or l.opts != l0.opts for l in losses):
            raise ValueError("cannot stack losses of different kinds or options")
        out = type(l0)(**{k: np.concatenate([l.arrays[k] for l in losses]) for k in l0.keys}, **l0.opts)
        if any(l.weights is not None for l in losses):
            out.weights = np.concatenate([l.client_weights() for l in losses])
        return out

    def client_weights(self) -> np.ndarray:
        """The client weights ``p_k`` ``(..., n)`` (``1/n`` each when none are set)."""
        if self.weights is not None:
            return self.weights
        return np.full(self.lead_shape, 1.0 / self.n)

    def client_average(self, V: np.ndarray, axis: int = -1) -> np.ndarray:
        """``sum_k p_k V_k`` over the clients' axis ``axis`` of ``V`` (the plain mean, same bits, without weights)."""
        if self.weights is None:
            return V.mean(axis)
        w = np.expand_dims(self.weights, tuple(range(axis + 1, 0))) if axis < -1 else self.weights
        return (V * w).sum(axis)

    def _client(self, key: str, k, i):
        """Client ``i`` of instance ``k`` of array ``key`` (``k`` ignored without a batch axis)."""
        a = getattr(self, key)
        return a[k][i] if len(self.batch_shape) >= 1 and k is not None else a[i]

    def full_value(self, x: np.ndarray) -> np.ndarray:
        """``F(x) = (1/n) sum_i f_i(x)`` at one point per instance, ``x`` of shape ``(..., p)``."""
        return self.client_average(self.value(np.broadcast_to(x[..., None, :], x.shape[:-1] + (self.n, x.shape[-1]))))

    def full_grad(self, x: np.ndarray) -> np.ndarray:
        """``grad F(x) = sum_k p_k grad f_k(x)`` (the plain mean without weights)."""
        return self.client_average(self.grad(np.broadcast_to(x[..., None, :], x.shape[:-1] + (self.n, x.shape[-1]))), -2)

    def value(self, X):
        raise NotImplementedError

    def grad(self, X):
        raise NotImplementedError

    def subgrad(self, X):
        """Alias of :meth:`grad` (a subgradient for non-smooth losses)."""
        return self.grad(X)

    def smoothness(self) -> np.ndarray:
        raise NotImplementedError

    def lipschitz(self) -> tuple[np.ndarray, bool, str]:
        raise NotImplementedError

    def cvx(self, k, i, x):
        raise NotImplementedError

    def _inf(self) -> np.ndarray:
        return np.full(self.lead_shape, np.inf)


def lam_max_gram(A: np.ndarray) -> np.ndarray:
    """Largest eigenvalue of ``A^T A`` for a stack of matrices (exact, via the SVD)."""
    return np.linalg.svd(A, compute_uv=False)[..., 0] ** 2


def take_rows(A: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``np.take_along_axis(A, rows[..., None], axis=len(rows.shape) - 1)``: for every leading index, the rows
    ``rows[...]`` of ``A`` (``A`` ``(*lead, m, *tail)``, ``rows`` ``(*lead, b)`` integers in ``[0, m)``), as one
    gather on the flattened array -- the same elements (a copy), ~10x faster than ``take_along_axis``'s
    broadcast index arrays on the minibatch oracles' small blocks.  Leading axes that would broadcast go to
    ``take_along_axis``; an index out of range raises ``IndexError`` as it does."""
    k = rows.ndim - 1
    lead = rows.shape[:-1]
    if A.shape[:k] != lead or A.ndim <= k:
        return np.take_along_axis(A, rows.reshape(rows.shape + (1,) * (A.ndim - rows.ndim)), axis=k)
    m, tail = A.shape[k], A.shape[k + 1:]
    if rows.size and (rows.min() < 0 or rows.max() >= m):
        raise IndexError(f"take_rows: a row index outside [0, {m})")
    offsets = (np.arange(math.prod(lead), dtype=np.intp) * m).reshape(lead + (1,))
    return A.reshape((-1,) + tail).take((offsets + rows).reshape(-1), axis=0).reshape(rows.shape + tail)


# Above this size of the stacked Hessians ``H_i`` (and with m < p) least squares keeps its factored form.
FACTOR_LIMIT_BYTES = 64 * 2**20


class LeastSquares(Loss):
    """``f_i(x) = ||A_i x - b_i||^2 / (2m)``; ``L_i = lambda_max(A_i^T A_i) / m``.

    Gradients use the precomputed ``H_i = A_i^T A_i / m`` and ``c_i = A_i^T b_i / m``
    (``p x p`` instead of ``m x p`` work per client); values use residuals.

    **Factored form.**  When the clients have fewer rows than features (``m < p``) and the stacked ``H``
    would take more than :data:`FACTOR_LIMIT_BYTES`, ``H`` is not formed: gradients are
    ``A_i^T (A_i x - b_i) / m`` (``2 m p`` work instead of ``p^2``, and ``n m p`` memory instead of
    ``n p^2``: 40 MB instead of 400 MB for ``n = 200, m = 50, p = 500``).  ``self.factored`` says which
    form a loss uses; ``self.H`` is still available (formed on first access) for code that needs it."""

    name = "least_squares"
    factored = False

    def __init__(self, A, b):
        super().__init__(A, b)
        h_bytes = 8 * self.p * self.p * (self.A.size // (self.A.shape[-1] * self.A.shape[-2]))
        self.factored = bool(self.m < self.p and h_bytes > FACTOR_LIMIT_BYTES)
        self._H = None if self.factored else np.einsum("...mp,...mq->...pq", self.A, self.A) / self.m
        self.c = np.einsum("...mp,...m->...p", self.A, self.b) / self.m
        self.b2 = np.einsum("...m,...m->...", self.b, self.b) / (2 * self.m)

    @property
    def H(self) -> np.ndarray:
        """``H_i = A_i^T A_i / m`` stacked (formed on first access in the factored form)."""
        if self.__dict__.get("_H") is None:
            self._H = np.einsum("...mp,...mq->...pq", self.A, self.A) / self.m
        return self._H

    @H.setter
    def H(self, value):
        self._H = value

    def value(self, X):
        r = np.einsum("...mp,...p->...m", self.A, X) - self.b
        return np.einsum("...m,...m->...", r, r) / (2 * self.m)

    def grad(self, X):
        if self.factored:
            r = np.matmul(self.A, X[..., None])        # (..., m, 1)
            r -= self.b[..., None]
            g = np.matmul(np.swapaxes(self.A, -1, -2), r)[..., 0]
            g /= self.m
            return g
        g = np.matmul(self.H, X[..., None])[..., 0]
        g -= self.c  # in place: one temporary fewer (same values as ``H x - c``)
        return g

    # -- fast paths for F and grad F (used by the engine's recorders and by polishing) ----------------
    def _stacked_qr(self):
        """``(R, q, rho)`` with ``sum_i ||A_i x - b_i||^2 = ||R x - q||^2 + rho`` for every ``x``: a QR of the
        clients' stacked rows (computed once).  ``rho = ||b - Q Q^T b||^2`` is formed from the residual
        itself, so ``F`` keeps the accuracy of the residual form without the ``n m x p`` work."""
        qr = self.__dict__.get("_qr")
        if qr is None:
            lead = self.A.shape[:-3]
            A = self.A.reshape(lead + (-1, self.p))
            b = self.b.reshape(lead + (-1,))
            if A.shape[-2] > A.shape[-1] and self.factored:
                # large: R of the QR of [A | b] (no Q formed): its top-left block is R, its last column
                # q = Q^T b, and its corner entry squared the residual rho
                Rb = np.linalg.qr(np.concatenate([A, b[..., None]], axis=-1), mode="r")
                p = self.p
                qr = (np.ascontiguousarray(Rb[..., :p, :p]), np.ascontiguousarray(Rb[..., :p, p]),
                      Rb[..., p, p] ** 2)
            elif A.shape[-2] > A.shape[-1]:
                Q, R = np.linalg.qr(A)
                q = np.einsum("...kp,...k->...p", Q, b)
                res = b - np.einsum("...kp,...p->...k", Q, q)
                qr = (R, q, np.einsum("...k,...k->...", res, res))
            else:
                qr = (A, b, np.zeros(lead))
            self._qr = qr
        return qr

    def full_value(self, x):
        if type(self).value is not LeastSquares.value or self.weights is not None:  # its own f_i, or client weights
            return super().full_value(x)
        R, q, rho = self._stacked_qr()
        r = np.matmul(R, np.asarray(x, dtype=float)[..., None])[..., 0]
        r -= q
        return (np.einsum("...k,...k->...", r, r) + rho) / (2 * self.m * self.n)

    def full_grad(self, x):
        if type(self).grad is not LeastSquares.grad or self.weights is not None:
            return super().full_grad(x)
        if self.factored:  # (1/(n m)) sum_i A_i^T (A_i x - b_i), without H
            x = np.asarray(x, dtype=float)
            r = np.einsum("...nmp,...p->...nm", self.A, x) - self.b
            return np.einsum("...nmp,...nm->...p", self.A, r) / (self.m * self.n)
        Hc = self.__dict__.get("_mean_Hc")
        if Hc is None:
            Hc = self._mean_Hc = (self.H.mean(-3), self.c.mean(-2))
        g = np.matmul(Hc[0], np.asarray(x, dtype=float)[..., None])[..., 0]
        g -= Hc[1]
        return g

    def smoothness(self):
        return lam_max_gram(self.A) / self.m

    def cvx(self, k, i, x):
        import cvxpy as cp
        A, b = (self.A[k], self.b[k]) if self.A.ndim == 4 else (self.A, self.b)
        return cp.sum_squares(A[i] @ x - b[i]) / (2 * self.m)


def _log1pexp(z):
    return np.logaddexp(0.0, z)


def _sigmoid(z):
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


class Logistic(Loss):
    """``f_i(x) = (1/m) sum_j log(1 + exp(-b_ij a_ij^T x))`` with labels ``b_ij = +-1``;
    ``L_i = lambda_max(A_i^T A_i) / (4m)``."""

    name = "logistic"

    def __init__(self, A, b):
        super().__init__(A, b)
        if not np.all(np.isin(self.b, (-1.0, 1.0))):
            raise ValueError("logistic labels b must be +1 or -1")
        self.BA = self.A * self.b[..., None]  # rows b_ij a_ij

    def value(self, X):
        z = np.einsum("...mp,...p->...m", self.BA, X)
        return _log1pexp(-z).mean(-1)

    def grad(self, X):
        z = np.einsum("...mp,...p->...m", self.BA, X)
        w = _sigmoid(-z)
        return -np.einsum("...mp,...m->...p", self.BA, w) / self.m

    def smoothness(self):
        return lam_max_gram(self.A) / (4 * self.m)

    def cvx(self, k, i, x):
        import cvxpy as cp
        BA = self.BA[k] if self.BA.ndim == 4 else self.BA
        return cp.sum(cp.logistic(-(BA[i] @ x))) / self.m


LOSSES = {"least_squares": LeastSquares, "logistic": Logistic}


def make_loss(name: str, A, b) -> Loss:
    try:
        cls = LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; expected one of {sorted(LOSSES)}") from None
    return cls(A, b)


# ---------------------------------------------------------------------------------------------
# Smooth non-convex losses with exact smoothness constants (FedFW Theorem 2 families).
_SIGMOID_CURV = float(np.sqrt(3.0) / 18.0)   # max_z |sigma''(z)|, attained at z = +-log(2 + sqrt 3)


class Sigmoid(Loss):
    """Non-convex sigmoid loss ``f_i(x) = (1/m) sum_j sigma(-b_ij a_ij^T x)`` with labels ``b_ij = +-1``.

    ``L_i = (sqrt 3 / 18) lambda_max(A_i^T A_i) / m``.  This is the exact smoothness constant on R^p
    whenever the rows of ``A_i`` are linearly independent (``m <= p`` generically): the Hessian is
    ``(1/m) sum_j sigma''(-z_j) a_ij a_ij^T`` with ``|sigma''| <= sqrt 3 / 18``, and every ``z_j`` can be
    set to the maximizer at once.  Otherwise it is an upper bound (``exact_smoothness`` says which)."""

    name = "sigmoid"

    def __init__(self, A, b):
        super().__init__(A, b)
        if not np.all(np.isin(self.b, (-1.0, 1.0))):
            raise ValueError("sigmoid labels b must be +1 or -1")
        self.BA = self.A * self.b[..., None]

    def value(self, X):
        z = np.einsum("...mp,...p->...m", self.BA, X)
        return _sigmoid(-z).mean(-1)

    def grad(self, X):
        z = np.einsum("...mp,...p->...m", self.BA, X)
        s = _sigmoid(-z)
        return -np.einsum("...mp,...m->...p", self.BA, s * (1.0 - s)) / self.m

    def smoothness(self):
        return _SIGMOID_CURV * lam_max_gram(self.A) / self.m

    def exact_smoothness(self) -> np.ndarray:
        """Per client: is ``smoothness()`` exact (rows of ``A_i`` linearly independent)?"""
        if self.m > self.p:
            return np.zeros(self.A.shape[:-2], dtype=bool)
        sv = np.linalg.svd(self.A, compute_uv=False)
        return sv[..., -1] > 1e-10 * sv[..., 0]

    def cvx(self, k, i, x):
        raise NotImplementedError("the sigmoid loss is not convex: no cvxpy expression")


class SignedQuadratic(Loss):
    """Indefinite quadratic ``f_i(x) = (1/(2m)) sum_j b_ij (a_ij^T x - 1)^2`` with real weights ``b_ij`` of
    either sign: ``H_i = A_i^T diag(b_i) A_i / m`` (convex when all ``b_ij >= 0``, concave when all
    ``b_ij <= 0``, indefinite otherwise), ``grad f_i(x) = H_i x - c_i`` with ``c_i = A_i^T b_i / m``;
    ``L_i = ||H_i||_2`` exactly."""

    name = "signed_quadratic"

    def __init__(self, A, b):
        super().__init__(A, b)
        self.H = np.einsum("...mp,...m,...mq->...pq", self.A, self.b, self.A) / self.m
        self.c = np.einsum("...mp,...m->...p", self.A, self.b) / self.m

    def value(self, X):
        r = np.einsum("...mp,...p->...m", self.A, X) - 1.0
        return np.einsum("...m,...m->...", self.b * r, r) / (2 * self.m)

    def grad(self, X):
        return np.matmul(self.H, X[..., None])[..., 0] - self.c

    def smoothness(self):
        return np.abs(np.linalg.eigvalsh(self.H)).max(-1)

    def cvx(self, k, i, x):
        import cvxpy as cp
        A, b = (self.A[k], self.b[k]) if self.A.ndim == 4 else (self.A, self.b)
        if np.any(b[i] < 0):
            raise NotImplementedError("client with a negative weight: not convex")
        return cp.sum(cp.multiply(b[i], cp.square(A[i] @ x - 1.0))) / (2 * self.m)


LOSSES["sigmoid"] = Sigmoid
LOSSES["signed_quadratic"] = SignedQuadratic
__all__ += ["Sigmoid", "SignedQuadratic"]


# ---------------------------------------------------------------------------------------------
# Non-smooth convex losses (FedMLS families): ``smooth = False``, ``grad`` returns a subgradient,
# ``lipschitz()`` the per-client Lipschitz constant, exact where it can be computed.
#
# Each of these losses is Lipschitz with the constant of its recession function
# ``g(d) = lim_{t->oo} f(x + t d) / t``: ``f'(x; d) <= g(d)`` everywhere and ``f(x + t d) / t -> g(d)``,
# so ``Lip(f) = max_{||d|| <= 1} g(d)``, which for a sum of absolute values or hinges is a maximum over
# the 2^m sign or support patterns of the rows (enumerated up to ``MAX_PATTERN_ROWS`` rows).
#
# Clients of unequal size are padded with zero rows at the end: ``a = 0, b = 0`` contributes 0 to the
# absolute loss, and a hinge row with label 0 is ignored.  ``f_i`` is always ``(1/m)`` times the sum
# over client ``i``'s rows, with ``m`` the padded size.
MAX_PATTERN_ROWS = 16


def _pattern_max_norm(V: np.ndarray, signs: bool) -> np.ndarray:
    """``max_s ||sum_j s_j v_j||`` over ``s in {-1, 1}^m`` (``signs``) or ``{0, 1}^m``, for rows ``V``
    of shape ``(..., m, p)``; exact enumeration (by symmetry ``s_1 = 1`` for signs)."""
    m = V.shape[-2]
    k = m - 1 if signs else m
    bits = ((np.arange(2 ** k)[:, None] >> np.arange(k)) & 1).astype(float)
    if signs:
        S = np.concatenate([np.ones((bits.shape[0], 1)), 1.0 - 2.0 * bits], axis=1)
    else:
        S = bits
    out = np.zeros(V.shape[:-2])
    for lo in range(0, S.shape[0], 4096):  # chunks keep the (..., 4096, p) temporary small
        W = np.matmul(S[lo:lo + 4096], V)
        out = np.maximum(out, np.sqrt((W * W).sum(-1)).max(-1))
    return out


class LAD(Loss):
    """Least absolute deviations ``f_i(x) = (1/m) sum_j |a_ij^T x - b_ij| = (1/m) ||A_i x - b_i||_1``
    (the ``l1_residual`` kind of :mod:`fedcheck.problems.constrained`).

    Subgradient ``(1/m) A_i^T sign(A_i x - b_i)`` (``sign(0) = 0``, in the subdifferential, whichever
    ``kernel``).  ``Lip(f_i) = max_{||d|| <= 1} (1/m) ||A_i d||_1 = max_{s in {-1,1}^m} ||A_i^T s|| / m``
    (the l2 -> l1 norm of ``A_i / m``).

    Options:

    ``lipschitz_bound``
        ``"exact"`` (default): the constant above, exact by enumeration for ``m <= MAX_PATTERN_ROWS``,
        else the upper bound ``min((1/m) sum_j ||a_ij||, ||A_i||_2 / sqrt(m))``;
        ``"row_norms"``: the upper bound ``(1/m) sum_j ||a_ij||`` (never flagged exact; cheap for any ``m``),
        the constant of the ``l1_residual`` kind.
    ``kernel``
        the floating-point evaluation order, nothing else: ``"matmul"`` (default; residual by
        ``matmul``, subgradient ``(sign / m)^T A``) or ``"einsum"`` (residual by ``einsum``, subgradient
        ``(A^T sign) / m``: the order of the ``l1_residual`` kind).  The two differ in the last bits only."""

    name = "lad"
    smooth = False
    options = {"lipschitz_bound": ("exact", "row_norms"), "kernel": ("matmul", "einsum")}

    def residual(self, X):
        if self.opts["kernel"] == "einsum":
            return np.einsum("...mp,...p->...m", self.A, X) - self.b
        r = np.matmul(self.A, X[..., None])[..., 0]
        r -= self.b
        return r

    def value(self, X):
        return np.abs(self.residual(X)).mean(-1)

    def grad(self, X, weights=None):
        """A subgradient; with ``weights`` (shape ``(..., n, m)``) the rows are weighted by them
        instead of ``1/m`` (minibatch oracles)."""
        s = np.sign(self.residual(X))
        if self.opts["kernel"] == "einsum":
            if weights is not None:
                return np.einsum("...mp,...m->...p", self.A, s * weights)
            return np.einsum("...mp,...m->...p", self.A, s) / self.m
        s = s * weights if weights is not None else s / self.m
        return np.matmul(s[..., None, :], self.A)[..., 0, :]

    def smoothness(self):
        return self._inf()

    def lipschitz(self) -> tuple[np.ndarray, bool, str]:
        if self.opts["lipschitz_bound"] == "row_norms":
            return (np.linalg.norm(self.A, axis=-1).mean(-1), False,
                    "upper bound (1/m) sum_j ||a_ij|| (the exact constant is a max over sign patterns)")
        if self.m <= MAX_PATTERN_ROWS:
            return (_pattern_max_norm(self.A, signs=True) / self.m, True,
                    "exact: max over sign vectors s of ||A_i^T s|| / m (enumerated)")
        ub = np.minimum(np.linalg.norm(self.A, axis=-1).mean(-1),
                        np.linalg.norm(self.A, ord=2, axis=(-2, -1)) / np.sqrt(self.m))
        return ub, False, "upper bound min((1/m) sum_j ||a_ij||, ||A_i||_2 / sqrt(m))"

    def row_norms(self) -> np.ndarray:
        """``||a_ij||``: the size of row ``j``'s contribution to a subgradient (times ``1/m``)."""
        return np.linalg.norm(self.A, axis=-1)

    def cvx(self, k, i, x):
        import cvxpy as cp
        return cp.sum(cp.abs(self._client("A", k, i) @ x - self._client("b", k, i))) / self.m


class Hinge(Loss):
    """Hinge loss ``f_i(x) = (1/m) sum_j max(0, 1 - b_ij a_ij^T x)``, labels ``b_ij = +-1`` (0 marks a
    padding row, which is ignored).  A bias is a column of ones in ``A``.

    Subgradient ``-(1/m) sum_{j: margin < 1} b_ij a_ij`` (0 at margin exactly 1, in the
    subdifferential).  ``Lip(f_i) = max_{S subset rows} ||sum_{j in S} b_ij a_ij|| / m``: exact by
    enumeration for ``m <= MAX_PATTERN_ROWS``, else the upper bound
    ``min((1/m) sum_j |b_ij| ||a_ij||, ||diag(b_i) A_i||_2 / sqrt(m))``."""

    name = "hinge"
    smooth = False

    def __init__(self, A, b):
        super().__init__(A, b)
        if not np.all(np.isin(self.b, (-1.0, 0.0, 1.0))):
            raise ValueError("hinge labels b must be +1 or -1 (0 marks a padding row)")
        self.BA = self.A * self.b[..., None]
        self.real = self.b != 0

    def margin(self, X):
        return np.matmul(self.BA, X[..., None])[..., 0]

    def value(self, X):
        h = np.maximum(0.0, 1.0 - self.margin(X))
        return np.where(self.real, h, 0.0).mean(-1)

    def grad(self, X, weights=None):
        active = (self.margin(X) < 1.0) & self.real
        w = active * weights if weights is not None else active / self.m
        return -np.matmul(w[..., None, :], self.BA)[..., 0, :]

    def smoothness(self):
        return np.full(self.A.shape[:-2], np.inf)

    def lipschitz(self) -> tuple[np.ndarray, bool, str]:
        if self.m <= MAX_PATTERN_ROWS:
            return (_pattern_max_norm(self.BA, signs=False) / self.m, True,
                    "exact: max over row subsets S of ||sum_{j in S} b_ij a_ij|| / m (enumerated)")
        ub = np.minimum(np.linalg.norm(self.BA, axis=-1).mean(-1),
                        np.linalg.norm(self.BA, ord=2, axis=(-2, -1)) / np.sqrt(self.m))
        return ub, False, "upper bound min((1/m) sum_j ||b_ij a_ij||, ||diag(b_i) A_i||_2 / sqrt(m))"

    def row_norms(self) -> np.ndarray:
        return np.linalg.norm(self.BA, axis=-1)

    def cvx(self, k, i, x):
        import cvxpy as cp
        BA, real = (self.BA[k], self.real[k]) if self.A.ndim == 4 else (self.BA, self.real)
        rows = BA[i][real[i]]
        return cp.sum(cp.pos(1 - rows @ x)) / self.m


class MaxAffine(Loss):
    """Max of affine functions ``f_i(x) = max_j (a_ij^T x + b_ij)`` (``A`` holds the slopes, ``b`` the
    offsets; the constrained problems' ``max_affine`` ``max_k (c_k^T w - e_k)`` is ``A = C, b = -e``).  Subgradient
    ``a_{i, j*}`` at a maximizing piece ``j*`` (lowest index on ties, whichever ``kernel``).
    ``Lip(f_i) = max_j ||a_ij||`` exactly (the longest slope is active far along its own direction).

    Option ``kernel``: the floating-point evaluation order of the pieces only, ``"matmul"`` (default) or
    ``"einsum"`` (the order of the ``max_affine`` kind); they differ in the last bits (and so, rarely, in the
    piece picked at a near-tie)."""

    name = "max_affine"
    smooth = False
    options = {"kernel": ("matmul", "einsum")}

    def pieces(self, X):
        if self.opts["kernel"] == "einsum":
            return np.einsum("...mp,...p->...m", self.A, X) + self.b
        z = np.matmul(self.A, X[..., None])[..., 0]
        z += self.b
        return z

    def value(self, X):
        return self.pieces(X).max(-1)

    def grad(self, X, weights=None):
        if weights is not None:
            raise ValueError("a max of affine functions has no sample structure: no minibatch oracle")
        j = self.pieces(X).argmax(-1)
        if self.A.shape[:-2] == j.shape:  # one gather on the flattened clients (the engine's case)
            flat = self.A.reshape((-1,) + self.A.shape[-2:])
            return flat[np.arange(flat.shape[0]), j.reshape(-1)].reshape(j.shape + (self.p,))
        return np.take_along_axis(np.broadcast_to(self.A, j.shape + self.A.shape[-2:]), j[..., None, None],
                                  axis=-2)[..., 0, :]

    def smoothness(self):
        return self._inf()

    def lipschitz(self) -> tuple[np.ndarray, bool, str]:
        return np.linalg.norm(self.A, axis=-1).max(-1), True, "exact: max_j ||a_ij||"

    def cvx(self, k, i, x):
        import cvxpy as cp
        return cp.max(self._client("A", k, i) @ x + self._client("b", k, i))


LOSSES["lad"] = LAD
LOSSES["hinge"] = Hinge
LOSSES["max_affine"] = MaxAffine
__all__ += ["LAD", "Hinge", "MaxAffine", "MAX_PATTERN_ROWS"]


# ---------------------------------------------------------------------------------------------
# Convex, Lipschitz client functions of constrained problems (objectives and constraints
# g(x) <= 0).  Levels are subtracted (``||x - c|| - r``, ``loss - kappa``), offsets added (``a^T x + b``).
def _sigmoid_tanh(z):
    """``1 / (1 + exp(-z))`` as ``(1 + tanh(z / 2)) / 2`` (stable; :class:`WeightedLogistic`'s numbers)."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class L2Residual(Loss):
    """``f_i(x) = ||A_i x - b_i||_2 / sqrt(m)``; subgradient ``A_i^T u / sqrt(m)`` with ``u`` the unit
    residual (``u = 0`` at a zero residual).  ``Lip(f_i) = ||A_i||_2 / sqrt(m)`` exactly."""

    name = "l2_residual"
    smooth = False

    def residual(self, X):
        return np.einsum("...mp,...p->...m", self.A, X) - self.b

    def value(self, X):
        return np.linalg.norm(self.residual(X), axis=-1) / math.sqrt(self.m)

    def grad(self, X):
        r = self.residual(X)
        nr = np.linalg.norm(r, axis=-1, keepdims=True)
        u = np.divide(r, nr, out=np.zeros_like(r), where=nr > 0)
        return np.einsum("...mp,...m->...p", self.A, u) / math.sqrt(self.m)

    def smoothness(self):
        return self._inf()

    def lipschitz(self):
        return (np.linalg.svd(self.A, compute_uv=False)[..., 0] / math.sqrt(self.m), True,
                "spectral norm ||A_j||_2 / sqrt(m) (exact)")

    def cvx(self, k, i, x):
        import cvxpy as cp
        return cp.norm(self._client("A", k, i) @ x - self._client("b", k, i), 2) / math.sqrt(self.m)


class Distance(Loss):
    """``f_i(x) = ||x - c_i||_2 - r_i`` (as a constraint: the ball of radius ``r_i`` about ``c_i``);
    subgradient the unit vector ``(x - c_i) / ||x - c_i||`` (0 at the centre).  Lipschitz constant 1."""

    name = "distance"
    smooth = False
    keys, dims = ("c", "r"), ("p", "")

    def value(self, X):
        return np.linalg.norm(X - self.c, axis=-1) - self.r

    def grad(self, X):
        v = X - self.c
        nv = np.linalg.norm(v, axis=-1, keepdims=True)
        return np.divide(v, nv, out=np.zeros_like(v), where=nv > 0)

    def smoothness(self):
        return self._inf()

    def lipschitz(self):
        return np.ones(self.lead_shape), True, "1 (a Euclidean distance)"

    def cvx(self, k, i, x):
        import cvxpy as cp
        return cp.norm(x - self._client("c", k, i), 2) - self._client("r", k, i)


class WeightedLogistic(Loss):
    """Weighted binary logistic loss minus a level (Neyman-Pearson objectives and constraints):
    ``f_i(x) = sum_j v_ij phi(x; x_ij, y_ij) - kappa_i`` with
    ``phi(x; a, y) = -y log s(a^T x) - (1 - y) log(1 - s(a^T x))``, labels ``y_ij in {0, 1}`` and
    weights ``v_ij`` (``1/m_i`` on a client's samples, 0 on padding rows).  :class:`Logistic` is the
    case ``v = 1/m``, ``kappa = 0``, ``y = (b + 1) / 2`` (with its own evaluation order).

    Gradient ``-sum_j v_ij s_ij s(-s_ij z_ij) x_ij`` (``s_ij = 2 y_ij - 1``, ``z = X x``).
    ``smoothness()``: ``lambda_max(X_i^T diag(v_i) X_i) / 4``, exact (attained at ``x = 0``).
    ``lipschitz()``: the upper bound ``sum_j v_ij ||x_ij||``."""

    name = "weighted_logistic"
    keys, dims = ("X", "y", "v", "kappa"), ("mp", "m", "m", "")

    def __init__(self, *arrays, **kwargs):
        super().__init__(*arrays, **kwargs)
        if not np.all(np.isin(self.y, (0.0, 1.0))):
            raise ValueError("weighted logistic labels y must be 0 or 1")

    def margins(self, X):
        return np.einsum("...mp,...p->...m", self.X, X)

    def value(self, X):
        s = 2 * self.y - 1
        return (self.v * _log1pexp(-s * self.margins(X))).sum(-1) - self.kappa

    def grad(self, X):
        s = 2 * self.y - 1
        coef = -s * _sigmoid_tanh(-s * self.margins(X)) * self.v
        return np.einsum("...mp,...m->...p", self.X, coef)

    def smoothness(self):
        H = np.einsum("...mp,...m,...mq->...pq", self.X, self.v, self.X) / 4
        return np.linalg.eigvalsh(H)[..., -1]

    def lipschitz(self):
        return ((self.v * np.linalg.norm(self.X, axis=-1)).sum(-1), False,
                "upper bound sum_i v_ji ||x_ji|| (the sigmoid weights are below 1)")

    def cvx(self, k, i, x):
        import cvxpy as cp
        s = 2 * self._client("y", k, i) - 1
        v = self._client("v", k, i)
        keep = v > 0
        X = self._client("X", k, i)[keep]
        return cp.sum(cp.multiply(v[keep], cp.logistic(cp.multiply(-s[keep], X @ x)))) - self._client("kappa", k, i)


class Huber(Loss):
    """``f_i(x) = (1/m) sum_j huber(a_ij^T x - b_ij; M_i)`` with cvxpy's convention
    ``huber(r; M) = r^2`` for ``|r| <= M``, ``2M|r| - M^2`` otherwise (slope at most 2M).

    Gradient ``(2/m) A_i^T clip(A_i x - b_i, -M_i, M_i)``.  ``smoothness()``: ``2 lambda_max(A_i^T A_i) / m``,
    an upper bound (exact when some point has every residual strictly inside ``[-M_i, M_i]``).
    ``lipschitz()``: the upper bound ``2 M_i (1/m) sum_j ||a_ij||``."""

    name = "huber"
    keys, dims = ("A", "b", "M"), ("mp", "m", "")

    def residual(self, X):
        return np.einsum("...mp,...p->...m", self.A, X) - self.b

    def value(self, X):
        r, M = self.residual(X), self.M[..., None]
        a = np.abs(r)
        return np.where(a <= M, r * r, 2 * M * a - M * M).mean(-1)

    def grad(self, X):
        r, M = self.residual(X), self.M[..., None]
        return np.einsum("...mp,...m->...p", self.A, 2 * np.clip(r, -M, M)) / self.m

    def smoothness(self):
        return 2 * lam_max_gram(self.A) / self.m

    def lipschitz(self):
        return (2 * self.M * np.linalg.norm(self.A, axis=-1).mean(-1), False,
                "upper bound 2M (1/m) sum_i ||a_ji||")

    def cvx(self, k, i, x):
        import cvxpy as cp
        return cp.sum(cp.huber(self._client("A", k, i) @ x - self._client("b", k, i),
                               float(self._client("M", k, i)))) / self.m


class Affine(Loss):
    """``f_i(x) = a_i^T x + b_i`` (``a = 0, b = 0`` is the zero function); gradient ``a_i``,
    ``smoothness`` 0, Lipschitz constant ``||a_i||`` exactly.  The constrained problems' ``affine`` ``a^T w - e`` is
    ``b = -e``."""

    name = "affine"
    keys, dims = ("a", "b"), ("p", "")

    def value(self, X):
        return np.einsum("...p,...p->...", np.broadcast_to(self.a, X.shape), X) + self.b

    def grad(self, X):
        return np.broadcast_to(self.a, X.shape).copy()

    def smoothness(self):
        return np.zeros(self.lead_shape)

    def lipschitz(self):
        return np.linalg.norm(self.a, axis=-1), True, "||a_j|| (exact)"

    def cvx(self, k, i, x):
        return self._client("a", k, i) @ x + self._client("b", k, i)


__all__ += ["L2Residual", "Distance", "WeightedLogistic", "Huber", "Affine"]
