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
        return np.matmul(self.H, X[..., None])[..., 0] - self.c

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
