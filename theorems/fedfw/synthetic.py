"""MCLR over clients of unequal sizes without padding: the synthetic data of [52] at the paper's sizes.

The generator of [52] (:func:`fedcheck.problems.datasets.synthetic_li`) gives each source (client) a power-law
number of samples (``floor(lognormal(4, 2)) + 50``): padding 100 such clients to the largest, as
:class:`~theorems.fedfw.measurements.MCLR` does, takes gigabytes.  :class:`SegmentMCLR` keeps the samples
flattened and sorted by client (``A`` ``(N, d+1)``, ``y`` ``(N,)``, ``client`` ``(N,)``) and sums per client with
``np.add.reduceat`` over the client boundaries, in chunks of samples (a loop over fixed-size chunks, never over
clients); a batch of models over one data set has the arrays once.
"""
from __future__ import annotations

import numpy as np

from fedcheck.problems import Loss, instance_rng, synthetic_li

__all__ = ["SegmentMCLR", "synthetic_clients", "label_clients"]


class SegmentMCLR(Loss):
    """Multinomial logistic regression of ``n`` clients with ``m_i`` samples each, the samples flattened:
    ``f_i(W) = -(1/m_i) sum_{j in client i} log softmax(A_j W)_{y_j}``, a model ``W`` ``(d+1, K)`` stored as a
    vector of ``P = (d+1) K`` entries (as :class:`~theorems.fedfw.measurements.MCLR`).  ``value(X)`` /
    ``grad(X)`` at ``X`` ``(..., n, P)`` (one model per client, any batch of models over this data), ``grad(X,
    rows)`` the minibatch gradient on ``rows`` ``(..., n, bs)`` (indices into the flattened samples, each row of
    its client), ``smoothness()`` ``lambda_max(A_i^T diag(w_i) A_i) / 2`` per client."""

    name = "mclr_segments"
    keys = ("A", "y", "client")
    dims = ("mp", "m", "m")

    def __init__(self, A, y, client, n: int, K: int, chunk: int = 4096):
        A = np.asarray(A, dtype=float)
        client = np.asarray(client).astype(np.int64)
        if A.ndim != 2 or len(A) != len(y) or len(y) != len(client):
            raise ValueError(f"SegmentMCLR: A (N, d+1), y (N,), client (N,); got {A.shape}, {np.shape(y)}, "
                             f"{client.shape}")
        if len(client) and (client.min() < 0 or client.max() >= n):
            raise ValueError(f"SegmentMCLR: client indices outside [0, {n})")
        order = np.argsort(client, kind="stable")
        self.A = np.ascontiguousarray(A[order])
        self.y = np.asarray(y).astype(int)[order]
        self.client = client[order]
        self.counts = np.bincount(self.client, minlength=n)
        if np.any(self.counts == 0):
            raise ValueError("SegmentMCLR: every client needs a sample")
        self.starts = np.r_[0, np.cumsum(self.counts)[:-1]]
        self.w = 1.0 / self.counts[self.client]           # 1/m_i on client i's samples
        self.K, self.d1, self.chunk = int(K), self.A.shape[1], int(chunk)
        self.opts, self.lead_shape, self.m, self._p = {}, (int(n),), None, self.d1 * self.K

    @property
    def p(self) -> int:
        return self._p

    def map(self, fn):
        raise TypeError("SegmentMCLR holds one data set for any batch of models: index the models, not the data")

    def _W(self, X):
        return X.reshape(X.shape[:-1] + (self.d1, self.K))

    @staticmethod
    def _log_softmax(Z):
        Z = Z - Z.max(-1, keepdims=True)
        return Z - np.log(np.exp(Z).sum(-1, keepdims=True))

    def _segments(self, fn, X, tail: tuple):
        """``out[..., i, *tail] = sum_{j in client i} fn(slice, W_gathered)`` over chunks of samples: ``fn``
        returns per-sample terms ``(..., c, *tail)``; the per-client sums are ``np.add.reduceat`` over the client
        boundaries inside the chunk."""
        W = self._W(X)
        out = np.zeros(X.shape[:-2] + (self.n,) + tail)
        models = int(np.prod(X.shape[:-2], dtype=np.int64))       # the gathered models stay within ~64 MB
        step = max(1, min(self.chunk, (1 << 23) // max(1, models * self.d1 * self.K)))
        for lo in range(0, len(self.y), step):
            sl = slice(lo, min(lo + step, len(self.y)))
            cl = self.client[sl]
            first = np.r_[0, np.flatnonzero(np.diff(cl)) + 1]
            terms = fn(sl, W[..., cl, :, :])
            out[(Ellipsis, cl[first]) + (slice(None),) * len(tail)] += np.add.reduceat(terms, first, axis=X.ndim - 2)
        return out

    def _logits(self, sl, Wg):
        return np.einsum("jd,...jdk->...jk", self.A[sl], Wg)

    def value(self, X):
        def terms(sl, Wg):
            lp = self._log_softmax(self._logits(sl, Wg))
            return -self.w[sl] * np.take_along_axis(lp, np.broadcast_to(self.y[sl][:, None], lp.shape[:-1] + (1,)),
                                                    -1)[..., 0]
        return self._segments(terms, np.asarray(X, dtype=float), ())

    def grad(self, X, rows=None):
        X = np.asarray(X, dtype=float)
        if rows is not None:              # a minibatch: every client's rows, equal weights
            Ab = self.A[rows]             # (..., n, bs, d+1)
            P = np.exp(self._log_softmax(np.matmul(Ab, self._W(X))))
            P -= np.eye(self.K)[self.y[rows]]
            P /= rows.shape[-1]
            G = np.matmul(np.swapaxes(Ab, -1, -2), P)
            return G.reshape(G.shape[:-2] + (self.p,))

        def terms(sl, Wg):
            P = np.exp(self._log_softmax(self._logits(sl, Wg)))
            P -= np.eye(self.K)[self.y[sl]]
            P *= self.w[sl][:, None]
            return np.einsum("jd,...jk->...jdk", self.A[sl], P)
        G = self._segments(terms, X, (self.d1, self.K))
        return G.reshape(G.shape[:-2] + (self.p,))

    def smoothness(self):
        """``lambda_max(A_i^T diag(1/m_i) A_i) / 2`` per client ``(n,)`` (the softmax Hessian is at most half the
        identity in the class directions), the Gram matrices summed per client as the gradients are."""
        Gm = np.zeros((self.n, self.d1, self.d1))
        for lo in range(0, len(self.y), self.chunk):
            sl = slice(lo, min(lo + self.chunk, len(self.y)))
            cl = self.client[sl]
            first = np.r_[0, np.flatnonzero(np.diff(cl)) + 1]
            outer = np.einsum("j,jd,je->jde", self.w[sl], self.A[sl], self.A[sl])
            Gm[cl[first]] += np.add.reduceat(outer, first, axis=0)
        return np.linalg.eigvalsh(Gm)[..., -1] / 2

    def minibatch_rows(self, u: np.ndarray) -> np.ndarray:
        """Rows of a minibatch from uniforms ``u`` ``(..., n, bs)``: client ``i``'s sample ``floor(u m_i)``."""
        m = self.counts[:, None]
        return self.starts[:, None] + np.minimum((u * m).astype(int), m - 1)

    def accuracy(self, xbar, At, yt):
        Z = np.einsum("md,bdk->bmk", At, self._W(xbar))
        return (Z.argmax(-1) == yt[None, :]).mean(-1)

    def padded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The samples padded per client to the largest client, as :class:`~theorems.fedfw.measurements.MCLR`
        holds them: ``A`` ``(n, M, d+1)``, ``y`` ``(n, M)``, ``w`` ``(n, M)`` (``1/m_i`` on client i's rows, 0 on
        padding) -- for few clients, where the padding is cheap and one matmul per client is faster than the
        segment sums."""
        M = int(self.counts.max())
        pos = np.arange(len(self.y)) - self.starts[self.client]      # the rank of each sample inside its client
        A = np.zeros((self.n, M, self.d1))
        y = np.zeros((self.n, M), dtype=int)
        w = np.zeros((self.n, M))
        A[self.client, pos] = self.A
        y[self.client, pos] = self.y
        w[self.client, pos] = self.w
        return A, y, w


def label_clients(y: np.ndarray, clients: int, labels_per_client: int, rng, classes: int = 10) -> np.ndarray:
    """The client of each sample under the non-IID rule of the FedFW paper ("each user has data from only 3
    labels"), as for its images (:func:`~theorems.fedfw.measurements.images_federated`): client ``i`` holds the
    labels ``i, i+1, ..., i+labels_per_client-1`` mod ``classes``, and each label's samples, in a random order, are
    shared in equal consecutive parts by the clients holding it.  Vectorized over samples."""
    y = np.asarray(y).astype(int)
    holders = [[i for i in range(clients) if c in {(i + j) % classes for j in range(labels_per_client)}]
               for c in range(classes)]
    if any(not h for h in holders):
        raise ValueError(f"label_clients: with {clients} clients and {labels_per_client} labels each, a label has "
                         "no client")
    H = np.array([len(h) for h in holders])
    table = np.full((classes, int(H.max())), -1)
    for c, h in enumerate(holders):
        table[c, :len(h)] = h
    order = np.lexsort((rng.random(len(y)), y))               # by label, random inside each label
    count = np.bincount(y, minlength=classes)
    start = np.r_[0, np.cumsum(count)[:-1]]
    rank = np.empty(len(y), dtype=np.int64)
    rank[order] = np.arange(len(y)) - start[y[order]]          # the rank of each sample inside its label
    # np.array_split's parts: the first count % H parts have one more sample
    q, r = count[y] // H[y], count[y] % H[y]
    big = rank < r * (q + 1)
    part = np.where(big, rank // np.maximum(q + 1, 1), r + (rank - r * (q + 1)) // np.maximum(q, 1))
    return table[y, part]


def synthetic_clients(seed: int, clients: int, *, iid: bool = False, test_fraction: float = 0.25,
                      alpha: float = 0.5, beta: float = 0.5, labels_per_client: int | None = None):
    """The synthetic(alpha, beta) data of [52] with one source per client and the generator's power-law sizes,
    each client's samples split into train and test (a random ``1 - test_fraction`` of each, as pFedMe's script
    does), vectorized over samples: ``(SegmentMCLR of the training samples, test features with a bias column,
    test labels)``.  ``iid``: the generator's IID mode (one softmax model for every source).  With
    ``labels_per_client`` the generator's samples (one source per client, its sizes) are pooled and dealt out by
    the paper's non-IID rule (:func:`label_clients`: client ``i`` holds ``labels_per_client`` labels)."""
    X, y, src = synthetic_li(seed, sources=clients, alpha=alpha, beta=beta, iid=iid)
    if labels_per_client is not None:
        src = label_clients(y, clients, int(labels_per_client),
                            instance_rng(seed, f"synthetic-labels:{clients}:{int(iid)}:{labels_per_client}"))
    rng = instance_rng(seed, f"synthetic-clients:{clients}:{int(iid)}:{test_fraction}")
    order = np.lexsort((rng.random(len(y)), src))       # by client, random inside each client
    counts = np.bincount(src, minlength=clients)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    pos = np.empty(len(y), dtype=np.int64)
    pos[order] = np.arange(len(y)) - starts[src[order]]  # the rank of each sample inside its client
    train = pos < np.round(counts * (1.0 - test_fraction)).astype(int)[src]
    A = np.concatenate([X, np.ones((len(X), 1))], 1)
    return SegmentMCLR(A[train], y[train], src[train], clients, 10), A[~train], y[~train]
