"""Federated instances: seeded random families, user files, and batches.

An :class:`Instance` is one federated problem ``min_{x in D} (1/n) sum_i f_i(x)``:
client data ``A`` (n x m x p) and ``b`` (n x m), a loss name and a feasible set.
An :class:`InstanceBatch` stacks instances of the same shape so that the engine
runs them all at once.

File format (``.npz``, loaded without pickle), version ``fedcheck.instance/2``::

    A        float array (n, m, p)
    b        float array (n, m)      labels +1/-1 for the logistic loss
    loss     string: least_squares | logistic
    set      string: l1 | l2 | box | simplex | rp
    radius   float > 0 (inf for rp)
    x0       optional float array (p,), a starting point in the set
    weights  optional float array (n,), the client weights p_k = n_k / N (positive, summing to 1);
             without it every client weighs 1/n.  F = sum_k p_k f_k.
    format   optional string ``fedcheck.instance/2`` (written with ``weights``; a file without it is version 1,
             the format before client weights, and is read as it always was)
"""
from __future__ import annotations

import hashlib
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from fedcheck.problems.losses import LOSSES, Loss, make_loss
from fedcheck.problems.sets import SET_NAMES, FeasibleSet, make_set, stack_sets

__all__ = [
    "Instance", "InstanceBatch", "InstanceError", "RandomFamily", "load_instance", "save_instance",
    "instance_rng", "memoized_by_content", "FORMAT", "check_weights",
]

#: The instance file format written when an instance has client weights (older files carry no ``format`` key).
FORMAT = "fedcheck.instance/2"


def check_weights(weights, n: int, where: str = "weights") -> np.ndarray:
    """Client weights as a float array ``(n,)``: finite, positive, summing to 1 (to ``1e-9``);
    :class:`InstanceError` names what is wrong.  ``p_k = n_k / N`` from sample counts: ``counts / counts.sum()``."""
    w = np.asarray(weights)
    if w.dtype.kind not in "fiu":
        raise InstanceError(f"{where} must be numeric, got dtype {w.dtype}")
    w = w.astype(float)
    if w.shape != (n,):
        raise InstanceError(f"{where} must have shape (n,) = ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or not np.all(w > 0):
        raise InstanceError(f"{where} must be finite and positive (a client of weight 0 is no client)")
    if abs(float(w.sum()) - 1.0) > 1e-9:
        raise InstanceError(f"{where} must sum to 1 (p_k = n_k / N), not {float(w.sum()):.12g}")
    return w


class InstanceError(ValueError):
    """A user instance that cannot be used; the message names the problem."""


def memoized_by_content(compute, name: str, doc: str):
    """A ``solver(inst, use_cache=True)`` returning ``compute(inst)``, computed once per process for each instance
    content (``inst.content_hash()``); ``use_cache=False`` computes again (and keeps the new value)."""
    cache: dict = {}

    def solver(inst, use_cache: bool = True):
        key = inst.content_hash()
        if use_cache and key in cache:
            return cache[key]
        cache[key] = sol = compute(inst)
        return sol
    solver.__name__ = solver.__qualname__ = name
    solver.__doc__ = doc
    return solver


def instance_rng(seed: int, key: str) -> np.random.Generator:
    """The generator of seed ``seed`` for the stream named ``key`` (SeedSequence based)."""
    return np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=(zlib.crc32(key.encode()),)))


@dataclass
class Instance:
    A: np.ndarray
    b: np.ndarray
    loss: str
    set: FeasibleSet
    seed: int | None = None
    source: str = "user"
    x0: np.ndarray | None = None
    params: dict = field(default_factory=dict)
    weights: np.ndarray | None = None      # client weights p_k (n,), summing to 1; None: 1/n each

    def __post_init__(self):
        if self.weights is not None:
            self.weights = check_weights(self.weights, np.shape(self.A)[0])

    @property
    def n(self) -> int:
        return self.A.shape[0]

    @property
    def m(self) -> int:
        return self.A.shape[1]

    @property
    def p(self) -> int:
        return self.A.shape[2]

    def start(self) -> np.ndarray:
        """The clients' starting point: ``x0`` if given, else 0, or the projection of 0 onto the
        set when 0 is not in it (the probability simplex)."""
        if self.x0 is not None:
            return np.asarray(self.x0, dtype=float)
        z = np.zeros(self.p)
        return z if self.set.contains(z, 0.0) else self.set.project(z)

    def make_loss(self) -> Loss:
        loss = make_loss(self.loss, self.A, self.b)
        loss.weights = self.weights
        return loss

    def client_weights(self) -> np.ndarray:
        """The client weights ``p_k`` ``(n,)`` (``1/n`` each when the instance has none)."""
        return np.full(self.n, 1.0 / self.n) if self.weights is None else self.weights

    def content_hash(self) -> str:
        h = hashlib.sha256()
        for arr in (self.A, self.b) + (() if self.weights is None else (self.weights,)):
            a = np.ascontiguousarray(arr, dtype=np.float64)
            h.update(str(a.shape).encode())
            h.update(a.tobytes())
        h.update(repr((self.loss, self.set.spec())).encode())
        return h.hexdigest()

    def properties(self) -> dict:
        """What a claim's domain constrains: loss, set, clients, samples, dimension, radius (and ``weights: "p_k"``
        for an instance with client weights: a claim runs on one only when its domain says ``fixed={"weights":
        "p_k"}``, its statement being about ``F = sum_k p_k f_k``)."""
        out = {"loss": self.loss, "set": self.set.name, "n": self.n, "m": self.m, "p": self.p,
               "radius": float(np.max(self.set.radius))}
        if self.weights is not None:
            out["weights"] = "p_k"
        return out

    def save(self, stem: str) -> list:
        """Write this instance as ``stem.npz`` in the documented format; the paths written."""
        return [save_instance(self, f"{stem}.npz")]

    def describe(self) -> dict:
        out = {"source": self.source, "seed": self.seed, "loss": self.loss, "set": self.set.spec(),
               "n": self.n, "m": self.m, "p": self.p, "params": self.params, "hash": self.content_hash()[:16]}
        if self.weights is not None:
            out["weights"] = self.weights.tolist()
        return out


class InstanceBatch:
    """Instances of one shape, loss and set kind, stacked on a leading axis."""

    def __init__(self, instances: Sequence[Instance]):
        if not instances:
            raise ValueError("an empty batch")
        first = instances[0]
        for inst in instances:
            if inst.A.shape != first.A.shape or inst.loss != first.loss:
                raise ValueError("a batch needs instances of one shape and one loss")
        self.instances = list(instances)
        stack = getattr(type(first), "stack_loss", None)     # a problem class with its own loss (networks)
        self.loss: Loss = stack(self.instances) if stack is not None else \
            make_loss(first.loss, np.stack([i.A for i in instances]), np.stack([i.b for i in instances]))
        self.set: FeasibleSet = stack_sets([i.set for i in instances])
        self.B, self.n, self.p = len(instances), first.n, first.p
        if any(getattr(i, "weights", None) is not None for i in instances):     # F = sum_k p_k f_k per instance
            self.loss.weights = np.stack([i.client_weights() for i in instances])

    def x0(self) -> np.ndarray:
        """Starting points ``(B, n, p)``, all clients alike: each instance's :meth:`Instance.start` (the default
        start of every instance -- 0, or its projection where 0 is outside -- tested for all rows at once)."""
        insts = self.instances
        if all(type(i).start is Instance.start and i.x0 is None for i in insts):
            Z = np.zeros((self.B, self.p))
            inside = np.asarray(self.set.contains(Z, 0.0))
            if inside.shape == (self.B,):
                for b in np.flatnonzero(~inside):
                    Z[b] = insts[b].start()
                return np.repeat(Z[:, None, :], self.n, axis=1)
        return np.stack([np.broadcast_to(inst.start(), (self.n, self.p)) for inst in insts])


@dataclass(frozen=True)
class RandomFamily:
    """Seeded heterogeneous federated family.

    Each client ``i`` has its own model ``w_i = w_0 + heterogeneity * u_i`` (so client
    optima differ); ``w_0`` is scaled to lie ``outside`` times the radius away in the
    set's gauge, which puts the optimum on the boundary of the set.  Least squares:
    ``b_i = A_i w_i + noise``; logistic: ``b_i = sign(A_i w_i + noise)``."""

    loss: str = "least_squares"
    set: str = "l1"
    n: int = 10
    m: int = 20
    p: int = 20
    radius: float = 1.0
    heterogeneity: float = 1.0
    noise: float = 0.1
    outside: float = 2.0

    def __post_init__(self):
        from fedcheck.core.errors import BadValue
        if not isinstance(self.loss, str) or self.loss not in LOSSES:
            raise BadValue(f"unknown loss {self.loss!r}")
        if not isinstance(self.set, str) or self.set not in SET_NAMES:
            raise BadValue(f"unknown set {self.set!r}")
        import math
        for name in ("n", "m", "p"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise BadValue(f"RandomFamily: {name} must be an integer >= 1, not {v!r}")
        for name, lo, strict in (("radius", 0.0, True), ("outside", 0.0, True), ("heterogeneity", 0.0, False),
                                 ("noise", 0.0, False)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(float(v)) or (v <= lo if strict else v < lo):
                raise BadValue(f"RandomFamily: {name} must be a finite number {'>' if strict else '>='} {lo:g}, "
                               f"not {v!r}")

    @property
    def key(self) -> str:
        return f"random:{self.loss}:{self.set}:{self.n}x{self.m}x{self.p}:r={self.radius}:h={self.heterogeneity}:s={self.noise}:o={self.outside}"

    def draw(self, seed: int) -> Instance:
        rng = instance_rng(seed, self.key)
        n, m, p = self.n, self.m, self.p
        S = make_set(self.set, self.radius, p)
        w0 = rng.standard_normal(p)
        if self.set == "simplex":
            w0 = np.abs(w0)
        # scale w0 so that it sits `outside` times the radius from the origin in the set's own size
        scale = {"l1": np.abs(w0).sum(), "l2": np.linalg.norm(w0), "box": np.abs(w0).max(),
                 "simplex": np.abs(w0).sum()}[self.set]
        w0 = w0 * (self.outside * self.radius / scale)
        W = w0 + self.heterogeneity * self.radius * rng.standard_normal((n, p)) / np.sqrt(p)
        A = rng.standard_normal((n, m, p))
        z = np.einsum("nmp,np->nm", A, W) + self.noise * rng.standard_normal((n, m))
        if self.loss == "logistic":
            b = np.where(z >= 0, 1.0, -1.0)
        else:
            b = z
        return Instance(A=A, b=b, loss=self.loss, set=S, seed=int(seed), source=self.key,
                        params={k: getattr(self, k) for k in ("loss", "set", "n", "m", "p", "radius",
                                                               "heterogeneity", "noise", "outside")})


# ---------------------------------------------------------------------------------------------
# files
_REQUIRED = ("A", "b", "loss", "set", "radius")


def _string(z, key, path) -> str:
    try:
        v = z[key]
    except ValueError as e:      # an object array (a pickle): refused
        raise InstanceError(f"{path}: '{key}' must be a string, not an object array (no pickle): {e}") from None
    if v.dtype.kind not in "US" or v.ndim != 0:
        raise InstanceError(f"{path}: '{key}' must be a string (a 0-d string array), got dtype {v.dtype} shape {v.shape}")
    return str(v)


def load_instance(path: str | os.PathLike) -> Instance:
    """Load and validate a user instance file; :class:`InstanceError` names what is wrong."""
    path = Path(path)
    if not path.exists():
        raise InstanceError(f"{path}: no such file")
    if not zipfile.is_zipfile(path):
        raise InstanceError(f"{path}: cannot be read as .npz (not a zip archive of arrays)")
    try:
        z = np.load(path, allow_pickle=False)
    except ValueError as e:
        raise InstanceError(f"{path}: not a plain .npz file (object arrays and pickles are refused): {e}") from None
    except Exception as e:  # zipfile.BadZipFile, OSError, ...
        raise InstanceError(f"{path}: cannot be read as .npz: {e}") from None
    if not hasattr(z, "files"):
        raise InstanceError(f"{path}: a single array, not an .npz archive with keys {list(_REQUIRED)}")
    try:
        with z:
            missing = [k for k in _REQUIRED if k not in z.files]
            if missing:
                raise InstanceError(f"{path}: missing key(s) {missing}; an instance needs {list(_REQUIRED)}")
            try:
                A = np.asarray(z["A"])
                b = np.asarray(z["b"])
                x0 = np.asarray(z["x0"]) if "x0" in z.files else None
                weights = np.asarray(z["weights"]) if "weights" in z.files else None
            except ValueError as e:
                raise InstanceError(f"{path}: object arrays are refused (no pickle): {e}") from None
            loss = _string(z, "loss", path)
            set_name = _string(z, "set", path)
            radius_arr = np.asarray(z["radius"])
            version = _string(z, "format", path) if "format" in z.files else "fedcheck.instance/1"
    except InstanceError:
        raise
    if version not in ("fedcheck.instance/1", FORMAT):
        raise InstanceError(f"{path}: unknown format {version!r}; this fedcheck reads fedcheck.instance/1 and {FORMAT}")
    if loss not in LOSSES:
        raise InstanceError(f"{path}: unknown loss {loss!r}; expected one of {sorted(LOSSES)}")
    if set_name not in SET_NAMES:
        raise InstanceError(f"{path}: unknown set {set_name!r}; expected one of {sorted(SET_NAMES)}")
    for key, arr in (("A", A), ("b", b), ("radius", radius_arr)) + ((("x0", x0),) if x0 is not None else ()):
        if arr.dtype.kind not in "fiu":
            raise InstanceError(f"{path}: '{key}' must be numeric, got dtype {arr.dtype}")
    if A.ndim != 3:
        raise InstanceError(f"{path}: 'A' must have shape (n, m, p), got {A.shape}")
    n, m, p = A.shape
    if min(n, m, p) < 1:
        raise InstanceError(f"{path}: 'A' has an empty axis: {A.shape}")
    if b.shape != (n, m):
        raise InstanceError(f"{path}: 'b' must have shape (n, m) = {(n, m)} to match 'A' {A.shape}, got {b.shape}")
    if radius_arr.size != 1:
        raise InstanceError(f"{path}: 'radius' must be a single float, got shape {radius_arr.shape}")
    radius = float(radius_arr.reshape(()))
    for key, arr in (("A", A), ("b", b), ("radius", radius_arr)) + ((("x0", x0),) if x0 is not None else ()):
        if key == "radius" and set_name == "rp" and np.all(radius_arr == np.inf):     # R^p: radius inf
            continue
        if not np.all(np.isfinite(arr)):
            bad = int(np.size(arr) - np.isfinite(arr).sum())
            raise InstanceError(f"{path}: '{key}' contains {bad} NaN or infinite value(s)")
    if radius <= 0:
        raise InstanceError(f"{path}: 'radius' must be > 0, got {radius}")
    if loss == "logistic" and not np.all(np.isin(b, (-1, 1))):
        raise InstanceError(f"{path}: logistic labels 'b' must all be +1 or -1")
    S = make_set(set_name, radius, p)
    if weights is not None:
        weights = check_weights(weights, n, f"{path}: 'weights'")
    if x0 is not None:
        if x0.shape != (p,):
            raise InstanceError(f"{path}: 'x0' must have shape (p,) = ({p},), got {x0.shape}")
        if not S.contains(x0.astype(float), 1e-9):
            raise InstanceError(f"{path}: 'x0' is not in the {set_name} set of radius {radius}")
        x0 = x0.astype(float)
    return Instance(A=A.astype(float), b=b.astype(float), loss=loss, set=S, seed=None,
                    source=f"file:{path}", x0=x0, weights=weights)


def save_instance(inst: Instance, path: str | os.PathLike) -> Path:
    """Write an instance in the documented format, atomically (no half-written file)."""
    if inst.set.name not in SET_NAMES:
        raise ValueError(f"only the sets {sorted(SET_NAMES)} have a file format")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = dict(A=inst.A, b=inst.b, loss=np.array(inst.loss), set=np.array(inst.set.name),
                  radius=np.array(float(inst.set.radius)))
    if inst.x0 is not None:
        arrays["x0"] = inst.x0
    if getattr(inst, "weights", None) is not None:      # version 2; an unweighted instance writes version 1's keys
        arrays.update(weights=np.asarray(inst.weights, dtype=float), format=np.array(FORMAT))
    from fedcheck.core.results import atomic_write  # results imports nothing from here; lazy keeps the layers apart
    atomic_write(path, lambda fh: np.savez(fh, **arrays))
    return path
