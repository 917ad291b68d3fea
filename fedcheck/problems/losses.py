"""Client losses, batched over instances and clients.

A loss object holds the data of a whole batch: ``A`` of shape ``(..., n, m, p)`` and
``b`` of shape ``(..., n, m)`` (leading axes: instances).  Its oracles take the
clients' points ``X`` of shape ``(..., n, p)`` and return per-client values
``(..., n)`` and gradients ``(..., n, p)``; no Python loop over clients or instances.

Interface:

``value(X)``, ``grad(X)``
    per-client value and gradient (a subgradient for non-smooth losses).
``smoothness()``
    the exact per-client smoothness constant ``L_i`` (``inf`` for non-smooth losses).
``cvx(k, i, x)``
    the cvxpy expression of client ``i`` of instance ``k`` at the cvxpy variable ``x``.
``take(k)``
    the loss of one instance (no batch axis).
"""
from __future__ import annotations

import numpy as np

__all__ = ["Loss", "LeastSquares", "Logistic", "LOSSES", "make_loss"]


class Loss:
    name = "loss"
    smooth = True

    def __init__(self, A: np.ndarray, b: np.ndarray):
        A = np.asarray(A, dtype=float)
        b = np.asarray(b, dtype=float)
        if A.ndim < 3 or b.shape != A.shape[:-1]:
            raise ValueError(f"A must be (..., n, m, p) and b (..., n, m); got A {A.shape}, b {b.shape}")
        self.A, self.b = A, b
        self.m = A.shape[-2]

    @property
    def n(self) -> int:
        return self.A.shape[-3]

    @property
    def p(self) -> int:
        return self.A.shape[-1]

    def take(self, k: int) -> "Loss":
        return type(self)(self.A[k], self.b[k])

    def full_value(self, x: np.ndarray) -> np.ndarray:
        """``F(x) = (1/n) sum_i f_i(x)`` at one point per instance, ``x`` of shape ``(..., p)``."""
        return self.value(np.broadcast_to(x[..., None, :], x.shape[:-1] + (self.n, x.shape[-1]))).mean(-1)

    def full_grad(self, x: np.ndarray) -> np.ndarray:
        return self.grad(np.broadcast_to(x[..., None, :], x.shape[:-1] + (self.n, x.shape[-1]))).mean(-2)

    def value(self, X):
        raise NotImplementedError

    def grad(self, X):
        raise NotImplementedError

    def smoothness(self) -> np.ndarray:
        raise NotImplementedError

    def cvx(self, k, i, x):
        raise NotImplementedError


def _lam_max_gram(A: np.ndarray) -> np.ndarray:
    """Largest eigenvalue of ``A^T A`` for a stack of matrices (exact, via the SVD)."""
    return np.linalg.svd(A, compute_uv=False)[..., 0] ** 2


class LeastSquares(Loss):
    """``f_i(x) = ||A_i x - b_i||^2 / (2m)``; ``L_i = lambda_max(A_i^T A_i) / m``.

    Gradients use the precomputed ``H_i = A_i^T A_i / m`` and ``c_i = A_i^T b_i / m``
    (``p x p`` instead of ``m x p`` work per client); values use residuals."""

    name = "least_squares"

    def __init__(self, A, b):
        super().__init__(A, b)
        self.H = np.einsum("...mp,...mq->...pq", self.A, self.A) / self.m
        self.c = np.einsum("...mp,...m->...p", self.A, self.b) / self.m
        self.b2 = np.einsum("...m,...m->...", self.b, self.b) / (2 * self.m)

    def value(self, X):
        r = np.einsum("...mp,...p->...m", self.A, X) - self.b
        return np.einsum("...m,...m->...", r, r) / (2 * self.m)

    def grad(self, X):
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
            if A.shape[-2] > A.shape[-1]:
                Q, R = np.linalg.qr(A)
                q = np.einsum("...kp,...k->...p", Q, b)
                res = b - np.einsum("...kp,...p->...k", Q, q)
                qr = (R, q, np.einsum("...k,...k->...", res, res))
            else:
                qr = (A, b, np.zeros(lead))
            self._qr = qr
        return qr

    def full_value(self, x):
        if type(self).value is not LeastSquares.value:  # a subclass with its own f_i
            return super().full_value(x)
        R, q, rho = self._stacked_qr()
        r = np.matmul(R, np.asarray(x, dtype=float)[..., None])[..., 0]
        r -= q
        return (np.einsum("...k,...k->...", r, r) + rho) / (2 * self.m * self.n)

    def full_grad(self, x):
        if type(self).grad is not LeastSquares.grad:
            return super().full_grad(x)
        Hc = self.__dict__.get("_mean_Hc")
        if Hc is None:
            Hc = self._mean_Hc = (self.H.mean(-3), self.c.mean(-2))
        g = np.matmul(Hc[0], np.asarray(x, dtype=float)[..., None])[..., 0]
        g -= Hc[1]
        return g

    def smoothness(self):
        return _lam_max_gram(self.A) / self.m

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
        return _lam_max_gram(self.A) / (4 * self.m)

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
        return _SIGMOID_CURV * _lam_max_gram(self.A) / self.m

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
    """Least absolute deviations ``f_i(x) = (1/m) sum_j |a_ij^T x - b_ij|``.

    Subgradient ``(1/m) A_i^T sign(A_i x - b_i)`` (``sign(0) = 0``, in the subdifferential).
    ``Lip(f_i) = max_{||d|| <= 1} (1/m) ||A_i d||_1 = max_{s in {-1,1}^m} ||A_i^T s|| / m`` (the
    l2 -> l1 norm of ``A_i / m``): exact by enumeration for ``m <= MAX_PATTERN_ROWS``, else the upper
    bound ``min((1/m) sum_j ||a_ij||, ||A_i||_2 / sqrt(m))``."""

    name = "lad"
    smooth = False

    def residual(self, X):
        r = np.matmul(self.A, X[..., None])[..., 0]
        r -= self.b
        return r

    def value(self, X):
        return np.abs(self.residual(X)).mean(-1)

    def grad(self, X, weights=None):
        """A subgradient; with ``weights`` (shape ``(..., n, m)``) the rows are weighted by them
        instead of ``1/m`` (minibatch oracles)."""
        s = np.sign(self.residual(X))
        s = s * weights if weights is not None else s / self.m
        return np.matmul(s[..., None, :], self.A)[..., 0, :]

    def smoothness(self):
        return np.full(self.A.shape[:-2], np.inf)

    def lipschitz(self) -> tuple[np.ndarray, bool, str]:
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
        A, b = (self.A[k], self.b[k]) if self.A.ndim == 4 else (self.A, self.b)
        return cp.sum(cp.abs(A[i] @ x - b[i])) / self.m


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
    offsets).  Subgradient ``a_{i, j*}`` at a maximizing piece ``j*`` (lowest index on ties).
    ``Lip(f_i) = max_j ||a_ij||`` exactly (the longest slope is active far along its own direction)."""

    name = "max_affine"
    smooth = False

    def pieces(self, X):
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
        return np.full(self.A.shape[:-2], np.inf)

    def lipschitz(self) -> tuple[np.ndarray, bool, str]:
        return np.linalg.norm(self.A, axis=-1).max(-1), True, "exact: max_j ||a_ij||"

    def cvx(self, k, i, x):
        import cvxpy as cp
        A, b = (self.A[k], self.b[k]) if self.A.ndim == 4 else (self.A, self.b)
        return cp.max(A[i] @ x + b[i])


LOSSES["lad"] = LAD
LOSSES["hinge"] = Hinge
LOSSES["max_affine"] = MaxAffine
__all__ += ["LAD", "Hinge", "MaxAffine", "MAX_PATTERN_ROWS"]
