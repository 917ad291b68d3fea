"""fedcheck against the peer a performance-minded user would write: JAX on CPU.

    python benchmarks/peers.py                         # every family, 5 interleaved repeats, minima
    python benchmarks/peers.py --only fedfw fedavg --repeat 7
    python benchmarks/peers.py --no-loop               # skip the (slow) per-client loops

For every family, on the same instances in one process pinned to one core (``os.sched_setaffinity``):

* ``loop``     -- Python loops over instances, rounds, (local steps,) clients, one client's numpy update at a
                  time (``benchmarks/families.py``'s loops; run on fewer rounds where marked and scaled);
* ``floor``    -- the family's batched gradient oracle alone, called as often as the method calls it;
* ``jax``      -- a straightforward JAX implementation of the same method: ``jit`` + ``lax.scan`` over the
                  rounds + ``vmap`` over the instances, float64, ``F`` (or the family's objective) at every
                  round;
* ``fedcheck`` -- the engine the catalog calls, with ``F`` at every round as well (FedFW: the every-round
                  stream of ``verify``; the others: the recorder on every round).

Iterates are checked equal (the JAX peer against fedcheck: final iterates and the recorded objective,
``max |diff| <= TOL * (1 + max |x|)``, TOL = 1e-9; the composite family's peer is checked with the very
normals fedcheck draws, and timed with its own ``jax.random`` stream).  Times are minima of ``--repeat``
interleaved repeats of the whole run, wall clock on one core; JAX's compile time is **excluded** (each jitted
function runs once before the repeats; its compile time is printed apart).  The load average is printed with
the table.  Last line: ``jax_time_over_fedcheck_min=X fedfw=Y`` -- JAX time / fedcheck time, the smallest
over the families, and FedFW's (Theorem 1's family).  JAX is a benchmark dependency only (the ``bench``
extra): without it the script says so and exits 2.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

# one core for both sides: BLAS's worker threads are started when numpy is imported, before the process pins
# itself (a pinned process with two BLAS threads on one core spins them against each other: the MLP's gradient
# took 5x longer); XLA's pool is started after the pinning and one thread is asked of it (:func:`_jax`)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def _families():
    """``benchmarks/families.py`` (its loops), loaded by path: ``benchmarks/`` is not put on ``sys.path``."""
    import importlib.util
    name = "fedcheck_bench_families"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "families.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]

TOL = 1e-9


def _pin() -> int | None:
    """Pin this process (and the threads it starts later: XLA's pool) to the idler core."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))

    def busy():
        with open("/proc/stat") as fh:
            rows = [ln.split() for ln in fh if ln.startswith("cpu") and ln[3].isdigit()]
        return {int(r[0][3:]): (sum(map(int, r[1:])), int(r[4]) + int(r[5])) for r in rows}
    a = busy()
    time.sleep(0.5)
    b = busy()
    idle = {c: (b[c][1] - a[c][1]) / max(b[c][0] - a[c][0], 1) for c in cores if c in a and c in b}
    core = max(idle, key=idle.get) if idle else cores[-1]
    os.sched_setaffinity(0, {core})
    return core


def _jax():
    # one XLA thread (the process is pinned to one core anyway): ``--xla_cpu_multi_thread_eigen=false`` is the
    # one flag of today's jaxlib for it (``--intra_op_parallelism_threads`` is TensorFlow's: XLA rejects it)
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    import jax
    jax.config.update("jax_enable_x64", True)
    return jax


@dataclass
class Case:
    name: str
    shape: str
    rounds: int
    fedcheck: Callable[[], dict]             # -> compared outputs (numpy)
    jax_run: Callable[[], dict]              # the timed peer (compiled at the first call)
    jax_check: Callable[[], dict] | None     # the peer on fedcheck's random numbers (None: jax_run)
    loop: Callable[[], object] | None
    loop_rounds: int
    floor: Callable[[], None]
    compare: tuple[str, ...] = ()
    notes: str = ""
    extra: dict = field(default_factory=dict)
    alts: dict = field(default_factory=dict)      # other JAX peers of the same work: name -> run (the best is timed)


def _np(tree) -> dict:
    return {k: np.asarray(v) for k, v in tree.items()}


def max_rel_diff(a: dict, b: dict, keys) -> float:
    worst = 0.0
    for k in keys:
        x, y = np.asarray(a[k], dtype=float), np.asarray(b[k], dtype=float)
        if x.shape != y.shape or not np.array_equal(np.isnan(x), np.isnan(y)):
            return float("inf")             # a NaN on one side only is a difference, not a pass
        x, y = np.nan_to_num(x, nan=0.0), np.nan_to_num(y, nan=0.0)
        scale = 1.0 + float(np.max(np.abs(x))) if x.size else 1.0
        worst = max(worst, float(np.max(np.abs(x - y))) / scale if x.size else 0.0)
    return worst


class _Stream:
    """Collects the every-round stream of one metric into a ``(T+1, B)`` array."""

    def __init__(self, T, B, name="F"):
        self.out, self.name = np.empty((T + 1, B)), name

    def __call__(self, k, values):
        self.out[k - 1] = values[self.name]


# ------------------------------------------------------------------------------------------------ FedFW
def _fedfw_batch(B, p=None, n=None):
    from dataclasses import replace
    from fedcheck.problems.instances import InstanceBatch
    from theorems.fedfw import theorem1
    fam = theorem1.evidence.experiment.family
    if p is not None or n is not None:
        fam = replace(fam, p=p or fam.p, n=n or fam.n)
    return InstanceBatch([fam.draw(s) for s in range(B)]), theorem1


def _fedfw_sched(batch, theorem1, T):
    from fedcheck.core.schedules import evaluate_schedule
    tt = np.arange(1, T + 1)
    values = {k: np.full(batch.B, float(v)) for k, v in theorem1.params.items()}
    values["n"] = np.full(batch.B, float(batch.n))
    return {k: evaluate_schedule(e, tt, values, batch.B) for k, e in theorem1.evidence.experiment.schedules.items()}


def jax_fedfw(jax, factored: bool, incremental: bool, refresh: int = 64, m: float = 1.0):
    """FedFW on least squares over the l1 ball: per instance ``(A or H/n, c/n, ...)``, vmapped; F of the
    server point after every round from the stacked QR ``(R, q, rho)``."""
    jnp, lax = jax.numpy, jax.lax

    def one(data, X0, eta, lam, r, R, q, rho, scale):
        n, p = X0.shape

        def grad_of(X, aux):
            if factored:
                A, b = data
                res = aux if incremental else jnp.einsum("imp,ip->im", A, X)
                return jnp.einsum("imp,im->ip", A, res - b) / (m * n)
            Hn, cn = data
            hx = aux if incremental else jnp.einsum("ipq,iq->ip", Hn, X)
            return hx - cn

        def exact_aux(X):
            if factored:
                return jnp.einsum("imp,ip->im", data[0], X)
            return jnp.einsum("ipq,iq->ip", data[0], X)

        def body(carry, el):
            X, xbar, aux, t = carry
            e, l = el
            if incremental:
                aux = lax.cond(t % refresh == 0, exact_aux, lambda X_: aux, X)
            G = grad_of(X, aux) + l * (X - xbar)
            j = jnp.argmax(jnp.abs(G), axis=-1)
            gj = jnp.take_along_axis(G, j[:, None], -1)[:, 0]
            val = jnp.where(gj < 0, r, -r)
            S = jax.nn.one_hot(j, p, dtype=X.dtype) * val[:, None]
            X = (1.0 - e) * X + e * S
            xbar = (1.0 - e) * xbar + e * S.mean(0)
            if incremental:     # the aux (H x or A x) of the new iterate: one column per client
                if factored:
                    col = jnp.take_along_axis(data[0], j[:, None, None], -1)[..., 0]      # (n, m)
                else:
                    col = jnp.take_along_axis(data[0], j[:, None, None], -1)[..., 0]      # (n, p): H[:, :, j]
                aux = (1.0 - e) * aux + (e * val)[:, None] * col
            res = R @ xbar - q
            F = (res @ res + rho) * scale
            return (X, xbar, aux, t + 1), F
        aux0 = exact_aux(X0)
        (X, xbar, _, _), F = lax.scan(body, (X0, X0.mean(0), aux0, 0), (eta, lam))
        res = R @ X0.mean(0) - q
        F0 = (res @ res + rho) * scale
        return X, xbar, jnp.concatenate([F0[None], F])

    vm = jax.vmap(one, in_axes=(0, 0, None, None, 0, 0, 0, 0, None))
    return jax.jit(vm)


def case_fedfw(B=64, T=5000, p=None, loop_rounds=40, incremental_peer=False) -> Case:
    jax = _jax()
    from fedcheck.algorithms import default_recorder, fedfw, record_grid
    batch, th1 = _fedfw_batch(B, p=p)
    sched = _fedfw_sched(batch, th1, T)
    loss = batch.loss
    n, p_ = batch.n, batch.p
    R, q, rho = (np.asarray(a) for a in loss._stacked_qr())
    scale = 1.0 / (2 * loss.m * loss.n)
    r = np.broadcast_to(np.asarray(batch.set.radius, dtype=float), (B,)).copy()
    X0 = np.array(batch.x0(), dtype=float)
    eta, lam = sched["eta"][:, 0].copy(), sched["lam"][:, 0].copy()
    factored = bool(loss.factored)
    data = (loss.A, loss.b) if factored else (loss.H / n, loss.c / n)
    fn = jax_fedfw(jax, factored, incremental_peer, m=float(loss.m))
    if True:
        def run_jax():
            X, xb, F = fn(data, X0, eta, lam, r, R, q, rho, scale)
            return {"X": X, "xbar": xb, "F": np.asarray(F).T}

    def run_fedcheck():
        st = _Stream(T, B)
        tr = fedfw(batch, rounds=T, grid=record_grid(T + 1), recorder=default_recorder(batch), stream=st, **sched)
        return {"X": tr.final["X"], "xbar": tr.final["xbar"], "F": st.out}

    if factored:
        from fedcheck.algorithms.reference import fedfw_loop
        short = {k: v[:loop_rounds] for k, v in sched.items()}

        def loop():
            fedfw_loop(batch, short["eta"], short["lam"], loop_rounds)
    else:
        from fedcheck.algorithms.reference import fedfw_loop_least_squares_l1
        short = {k: v[:loop_rounds] for k, v in sched.items()}

        def loop():
            fedfw_loop_least_squares_l1(batch, short["eta"], short["lam"], loop_rounds)

    grad = loss.grad
    Xf = np.zeros((B, n, p_))

    def floor():
        for _ in range(T):
            grad(Xf)
    name = "FedFW (factored LS)" if factored else "FedFW"
    if not incremental_peer:
        name += " [JAX recomputes]"
    return Case(name, f"{B}x{n}x{p_}" + (f" m={loss.m}" if factored else ""), T, run_fedcheck, run_jax, None,
                loop, loop_rounds, floor, ("X", "xbar", "F"))


# ------------------------------------------------------------------------------------------------ FedAvg
def jax_fedavg(jax, E, variant="einsum"):
    """FedAvg, least squares, E local gradient steps: records at every round what fedcheck's recorder records
    (``F`` at the server point, the consensus distance ``||X - xbar 1^T||_F`` of the clients' points, the
    infeasibility ``max(||xbar|| - r, 0)`` of the l2 ball) -- the same outputs on both sides, all compared.

    ``variant``: ``"einsum"`` (the fastest found with jax 0.10: a batched ``einsum``, the local steps in a
    ``fori_loop``), ``"unrolled"`` (``H_i w_i`` as an unrolled sum of ``p`` columns, fused by XLA into one
    elementwise loop, and the ``E`` local steps unrolled: 1.7-1.8x the einsum's time here), ``"fori"`` (the same
    sum, local steps in a ``fori_loop``: 1.6x)."""
    jnp, lax = jax.numpy, jax.lax

    def hw(H, W):
        if variant == "einsum":
            return jnp.einsum("ipq,iq->ip", H, W)
        out = H[:, :, 0] * W[:, 0:1]
        for q in range(1, H.shape[-1]):
            out = out + H[:, :, q] * W[:, q:q + 1]
        return out

    def one(H, c, x0, eta, R, q, rho, scale, rad):
        n = H.shape[0]

        def metrics(W, x):
            res = R @ x - q
            return ((res @ res + rho) * scale, jnp.sqrt(((W - x) ** 2).sum()),
                    jnp.maximum(jnp.sqrt(x @ x) - rad, 0.0))

        def body(x, e):
            W = jnp.broadcast_to(x, (n,) + x.shape)
            if variant == "unrolled":
                for _ in range(E):
                    W = W - e * (hw(H, W) - c)
            else:
                W = lax.fori_loop(0, E, lambda _, W: W - e * (hw(H, W) - c), W)
            x = W.mean(0)
            return x, metrics(W, x)
        x, rec = lax.scan(body, x0, eta)
        first = metrics(jnp.broadcast_to(x0, (n,) + x0.shape), x0)
        return x, tuple(jnp.concatenate([a[None], b]) for a, b in zip(first, rec))
    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 1, 0, 0, 0, None, 0)))


RECORDED = ("F", "consensus", "infeasibility")      # what fedcheck's default recorder records at every round


def case_fedavg(B=64, n=10, m=20, p=20, T=1000, E=5, loop_rounds=20, variant="einsum") -> Case:
    jax = _jax()
    from fedcheck.problems.instances import InstanceBatch, RandomFamily
    from theorems.fedmls.methods import fedavg
    fam = RandomFamily(loss="least_squares", set="l2", n=n, m=m, p=p, radius=1.0, heterogeneity=1.0)
    batch = InstanceBatch([fam.draw(s) for s in range(B)])
    loss = batch.loss
    L = np.asarray(loss.smoothness()).max(-1)
    eta = np.broadcast_to(0.5 / L, (T, B)).copy()
    R, q, rho = (np.asarray(a) for a in loss._stacked_qr())
    scale = 1.0 / (2 * loss.m * loss.n)
    x0 = batch.x0()[:, 0, :].copy()
    fn = jax_fedavg(jax, E, variant)

    rad = np.broadcast_to(np.asarray(batch.set.radius, dtype=float), (B,)).copy()

    def run_jax():
        x, rec = fn(loss.H, loss.c, x0, eta, R, q, rho, scale, rad)
        return {"xbar": x, **{k: np.asarray(v).T for k, v in zip(RECORDED, rec)}}

    def run_fedcheck():
        tr = fedavg(batch, rounds=T, T=E, eta=eta, grid=np.arange(T + 1))
        return {"xbar": tr.final["xbar"], **{k: tr.metrics[k] for k in RECORDED}}

    H, c = loss.H, loss.c

    def loop():
        for b in range(B):
            x = x0[b].copy()
            for k in range(loop_rounds):
                e = eta[k, b]
                acc = np.zeros(p)
                for i in range(n):
                    w = x.copy()
                    for _ in range(E):
                        g = H[b, i] @ w
                        g -= c[b, i]
                        w = w - e * g
                    acc += w
                x = acc / n

    Xf = np.zeros((B, n, p))
    grad = loss.grad

    def floor():
        for _ in range(T * E):
            grad(Xf)
    return Case("FedAvg (least squares)" + ("" if variant == "einsum" else f" [JAX {variant}]"),
                f"{B}x{n}x{p} m={m} E={E}", T, run_fedcheck, run_jax, None, loop,
                loop_rounds, floor, ("xbar",) + RECORDED)


# ------------------------------------------------------------------------------------------------ composite
def _soft(jnp, x, t):
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - t, 0.0)


def jax_composite(jax, method, K, variant="unrolled"):
    """FedDualAvg (Algorithm 3, with the (4.4) average and the discrepancy) or FedMiD (Algorithm 2) on
    shared-Hessian quadratics, l1 regularizer, Gaussian gradient noise, written batched over the instances (no
    ``vmap``): ``lax.scan`` over the rounds with the round's normals ``(K, B, M, d)`` as the scanned input, the
    ``K`` local steps unrolled.

    The normals: fedcheck draws them from numpy's generator (``SeedSequence(7)``); the peer draws the very same
    numbers from the same generator, in one call per run, inside its timed region (numpy draws 1.5 M normals in
    ~15 ms; ``jax.random`` inside the scan takes ~5x that on CPU: ``variant="jax.random"``, printed with
    ``--extra``, its own stream, not compared).  ``variant``: ``"unrolled"`` (the fastest found: ``W Q^T`` as an
    unrolled sum of ``d`` columns, fused by XLA into the step's elementwise loop), ``"matmul"`` (a batched
    ``matmul``)."""
    jnp, lax = jax.numpy, jax.lax

    def run(QT, c, sd, lam, Qbar, cbar, ebar, w0, ec, es, noise):
        B, M, d = c.shape
        lam3, ec3 = lam[:, None, None], ec[:, None, None]

        def Phi(w):
            return (0.5 * jnp.einsum("bi,bij,bj->b", w, Qbar, w) + (cbar * w).sum(-1) + ebar
                    + lam * jnp.abs(w).sum(-1))

        def wq(W):
            if variant == "matmul":
                return jnp.matmul(W, QT)
            out = W[..., 0:1] * QT[:, None, 0, :]
            for j in range(1, d):
                out = out + W[..., j:j + 1] * QT[:, None, j, :]
            return out

        def body(carry, el):
            z, w_sum, hat_sum, disc = carry
            r, xr = el
            if variant == "jax.random":
                key = jax.random.fold_in(noise, r)
                xr = jax.random.normal(key, (K, B, M, d))
            Z = jnp.broadcast_to(z[:, None, :], (B, M, d))
            for k in range(K):
                g_noise = xr[k] * sd
                if method == "feddualavg":
                    a = es * ec * r * K + ec * k
                    W = _soft(jnp, Z, (a * lam)[:, None, None])
                    zbar = Z.mean(1)
                    disc = disc + ((Z - zbar[:, None, :]) ** 2).sum((1, 2))
                    Z = Z - ec3 * (wq(W) + c + g_noise)
                    hat_sum = hat_sum + _soft(jnp, Z.mean(1), ((a + ec) * lam)[:, None])
                else:
                    Z = _soft(jnp, Z - ec3 * (wq(Z) + c + g_noise), ec3 * lam3)
            z = z + es[:, None] * (Z.mean(1) - z)
            if method == "feddualavg":
                w = _soft(jnp, z, (es * ec * (r + 1) * K * lam)[:, None])
            else:
                z = _soft(jnp, z, (es * ec * K * lam)[:, None])
                w = z
            w_sum = w_sum + w
            rec = (Phi(w), Phi(w_sum / (r + 1)))
            if method == "feddualavg":
                rec = rec + (Phi(hat_sum / (K * (r + 1))), disc)
            return (z, w_sum, hat_sum, disc), rec
        zero = jnp.zeros_like(w0)
        R = noise.shape[0] if variant != "jax.random" else ROUNDS_COMPOSITE
        xs = (jnp.arange(R), noise if variant != "jax.random" else jnp.zeros((R,)))
        (z, w_sum, hat_sum, disc), rec = lax.scan(body, (w0, zero, zero, jnp.zeros(w0.shape[0])), xs)
        return (z, w_sum / R) + rec
    return jax.jit(run)


ROUNDS_COMPOSITE = 200


def case_composite(method="feddualavg", B=64, T=ROUNDS_COMPOSITE, variant="unrolled") -> Case:
    jax = _jax()
    FAM = _families()
    from fedcheck.algorithms import composite as E
    prob = FAM._composite_batch(B)
    K, M, d = prob.K, prob.M, prob.d
    ec = np.full(B, 0.05) * np.linspace(0.5, 1.5, B)
    es = np.full(B, 1.0)
    alg = {"feddualavg": E.feddualavg, "fedmid": E.fedmid}[method]
    lam = np.broadcast_to(np.asarray(prob.reg.lam, dtype=float), (B,)).copy()
    QT = np.ascontiguousarray(prob.Q[:, 0].swapaxes(-1, -2))
    sdv = np.broadcast_to(prob.noise_scale[:, None, None], (B, M, d)).copy()
    args = (QT, prob.c, sdv, lam, prob.Qbar, prob.cbar, prob.ebar, prob.x0(), ec, es)
    fn = jax_composite(jax, method, K, variant)

    def unpack(out):
        res = {"z": out[0], "w_avg": out[1], "Phi": np.asarray(out[2]), "Phi_avg": np.asarray(out[3])}
        if method == "feddualavg":
            res.update(Phi_hat=np.asarray(out[4]), disc=np.asarray(out[5]))
        return res

    def run_jax():          # the same generator as fedcheck's, the same numbers, drawn inside the timed region
        if variant == "jax.random":
            return unpack(fn(*args, jax.random.PRNGKey(7)))
        rng = np.random.default_rng(np.random.SeedSequence(7))
        return unpack(fn(*args, rng.standard_normal((T, K, B, M, d))))

    def run_fedcheck():
        rng = np.random.default_rng(np.random.SeedSequence(7))
        tr = alg(prob, rounds=T, eta_c=ec, eta_s=es, grid=np.arange(T + 1), rng=rng)
        res = {"z": tr.final.get("z", tr.final["w"]), "Phi": tr.metrics["Phi"][1:],
               "Phi_avg": tr.metrics["Phi_avg"][1:]}
        if method == "feddualavg":
            res.update(Phi_hat=tr.metrics["Phi_hat"][1:], disc=tr.metrics["disc"][1:])
        return res

    def loop():
        FAM.loop_composite(prob, 20, ec, es, method, 7)

    W = np.zeros((B, M, d))

    def floor():
        rng = np.random.default_rng(0)
        for _ in range(T * K):
            prob.grad(W, None, 0, rng)
    cmp = () if variant == "jax.random" else (
        ("z", "Phi", "Phi_avg") + (("Phi_hat", "disc") if method == "feddualavg" else ()))
    label = {"feddualavg": "FedDualAvg", "fedmid": "FedMiD"}[method]
    label += "" if variant == "unrolled" else f" [JAX {variant}]"
    return Case(label, f"{B}x{M}x{d} K={K}", T, run_fedcheck, run_jax, None, loop, 20, floor, cmp,
                notes="the normals: one numpy generator, the same numbers on both sides, drawn inside both timed regions")


# ------------------------------------------------------------------------------------------------ FedMLS
def jax_fedmls(jax, n, R):
    jnp, lax = jax.numpy, jax.lax

    def one(A, b, lam, T, Rr):
        m = A.shape[1]
        p = A.shape[2]

        def sub(U):       # LAD subgradient (matmul order): (sign(A u - b) / m)^T A
            r = jnp.einsum("imp,ip->im", A, U) - b
            return jnp.einsum("im,imp->ip", jnp.sign(r) / m, A)

        def F(x):
            return jnp.abs(jnp.einsum("imp,p->im", A, x) - b).mean(-1).mean()

        def body(carry, k):
            x, y, z, xi, yi, zi = carry
            kf = k.astype(float)
            g, g1 = 2.0 / (kf + 1.0), 2.0 / (kf + 2.0)
            sc = lam[k - 1] * kf / (4.0 * n)
            V = zi - (kf / 4.0) * (yi - y)

            def inner(t, st):
                U, Ut = st
                tf = t.astype(float)
                a = 2.0 / (tf + 2.0)
                G = sub(U) * (a * sc)
                Uh = (1.0 - a) * U + a * V - G
                nrm = jnp.sqrt((Uh * Uh).sum(-1))[:, None]
                Uh = Uh * (Rr / jnp.maximum(nrm, Rr))
                th = 2.0 * (tf + 1.0) / (tf * (tf + 3.0))
                return Uh, Ut + th * (Uh - Ut)
            zn, zt = lax.fori_loop(1, T[k - 1] + 1, inner, (zi, zi))
            xi = (1.0 - g) * xi + g * zt
            yi = (1.0 - g1) * xi + g1 * zn
            zi = zn
            x = (1.0 - g) * x + g * z
            y = (1.0 - g1) * x + g1 * z
            z = z - ((kf + 1.0) / 4.0) * (y - yi.mean(0))
            return (x, y, z, xi, yi, zi), F(x)
        zp, zc = jnp.zeros(p), jnp.zeros((n, p))
        (x, _, _, xi, _, _), Fs = lax.scan(body, (zp, zp, zp, zc, zc, zc), jnp.arange(1, lam.shape[0] + 1))
        return x, xi, Fs
    return jax.jit(jax.vmap(one, in_axes=(0, 0, 1, 1, None)))


def case_fedmls(B=64, T=100, n=32) -> Case:
    jax = _jax()
    FAM = _families()
    from fedcheck.algorithms import mls as M
    from theorems.fedmls.problems import LADFamily
    from fedcheck.problems.instances import InstanceBatch
    fam = LADFamily(n=n, m=12, p=3, heterogeneity=0.5)
    batch = InstanceBatch([fam.draw(s) for s in range(B)])
    A, bb = FAM._lad_arrays(batch)
    k = np.arange(1, T + 1, dtype=float)[:, None]
    lam = np.broadcast_to(1.0 / k, (T, B)).copy()
    Tk = np.broadcast_to(np.minimum(np.ceil(k / 3.0), 8.0), (T, B)).copy()
    R = 10.0
    fn = jax_fedmls(jax, n, R)
    Ti = Tk.astype(np.int64)

    def run_jax():
        x, xi, F = fn(A, bb, lam, Ti, R)
        return {"xbar": x, "xi": xi, "F": np.asarray(F).T}

    def run_fedcheck():
        tr = M.fedmls(batch, rounds=T, lam=lam, T=Tk, R=R, grid=np.arange(T + 1))
        return {"xbar": tr.final["xbar"], "xi": tr.final["xi"], "F": tr.metrics["F"][1:]}

    def loop():
        FAM.loop_fedmls(A, bb, 20, lam, Tk, R)

    U = np.zeros((B, n, batch.p))
    grad = batch.loss.grad
    calls = int(Ti[:, 0].sum())

    def floor():
        for _ in range(calls):
            grad(U)
    return Case("FedMLS", f"{B}x{n}x{batch.p} m=12 T<=8", T, run_fedcheck, run_jax, None, loop, 20, floor,
                ("xbar", "xi", "F"), notes="loop: 20 of the rounds (T_k grows: the loop is scaled per subgradient call)",
                extra={"loop_scale": calls / int(Ti[:20, 0].sum())})


# ------------------------------------------------------------------------------------------------ FedSGM
def jax_fedsgm(jax, E, eps):
    """FedSGM, hard switching, identity uplink, with a comparator ``u``: every quantity fedcheck's ``fedsgm``
    records per round (``f g sigma dist2 h`` at ``w_0..w_T``; ``in_A weight drift_step drift_sq max_dir agg_sq
    agg_sq_cond cond_dist2`` for rounds ``0..T-1``) and ``wbar``, ``w_T`` -- the same outputs on both sides,
    all compared."""
    jnp, lax = jax.numpy, jax.lax

    def one(A, b, C, e, w0, eta, u, T):
        n, m, d = A.shape

        def f_val(W):     # LAD, einsum order: mean |A w - b|
            return jnp.abs(jnp.einsum("jmd,jd->jm", A, W) - b).mean(-1)

        def f_sub(W):
            s = jnp.sign(jnp.einsum("jmd,jd->jm", A, W) - b)
            return jnp.einsum("jmd,jm->jd", A, s) / m

        def g_pieces(W):
            return jnp.einsum("jkd,jd->jk", C, W) + e

        def g_sub(W):
            j = jnp.argmax(g_pieces(W), -1)
            return jnp.take_along_axis(C, j[:, None, None], 1)[:, 0]

        def full(w):
            Wb = jnp.broadcast_to(w, (n, d))
            return f_val(Wb).mean(), g_pieces(Wb).max(-1).mean()
        fu, gu = full(u)

        def at(w):          # what is recorded at w_k (k = 0..T)
            fw, gw = full(w)
            sig = (gw - eps > 0).astype(float)
            return fw, gw, sig, ((w - u) ** 2).sum(), (1 - sig) * (fw - fu) + sig * (gw - gu)

        def body(carry, _):
            w, S_w, S_weight = carry
            fw, gw, sig, dist2, h = at(w)
            inA = gw <= eps
            wt = jnp.where(inA, 1.0, 0.0)
            S_w, S_weight = S_w + wt * w, S_weight + wt
            Wb = jnp.broadcast_to(w, (n, d))

            def local(tau, st):
                W, X, mdir, dstep, dsq = st
                V = (1 - sig) * f_sub(W) + sig * g_sub(W)
                mdir = jnp.maximum(mdir, jnp.sqrt((V * V).sum(-1)).max())
                W = W - eta * V
                dist = jnp.sqrt(((W - w) ** 2).sum(-1))
                dstep = jnp.maximum(dstep, (dist / ((tau + 1.0) * eta)).max())
                dsq = dsq + jnp.where(tau + 1 < E, dist ** 2, 0.0)
                return W, X + V, mdir, dstep, dsq
            _, X, mdir, dstep, dsq = lax.fori_loop(0, E, local, (Wb, jnp.zeros((n, d)), 0.0, 0.0, jnp.zeros(n)))
            Xbar = X.mean(0)
            agg = (Xbar ** 2).sum()
            cond = ((w - eta * Xbar - u) ** 2).sum()
            w = w - eta * Xbar
            return (w, S_w, S_weight), (fw, gw, sig, dist2, h, inA.astype(float), wt, dstep, dsq.max(), mdir,
                                        agg, agg, cond)
        (w, S_w, S_weight), rec = lax.scan(body, (w0, jnp.zeros_like(w0), 0.0), None, length=T)
        last = at(w)
        return w, jnp.where(S_weight > 0, S_w / S_weight, jnp.nan), rec, last
    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 0, 0, 0, 0, None)), static_argnums=(7,))


def jax_fedsgm_lean(jax, E, eps):
    """:func:`jax_fedsgm` as the fastest peer found: the residuals ``A_j w - b_j`` and pieces ``C_j w + e_j`` at
    ``w_t`` computed once and reused for ``f(w_t)``, ``g(w_t)`` and the first local step (every client starts
    there), the ``E`` local steps unrolled, and the 13 recorded quantities of a round stacked into one row (one
    output array of the scan instead of 13).  The same outputs (``rows`` in :data:`FEDSGM_EVERY` +
    :data:`FEDSGM_ROUNDS` order)."""
    jnp, lax = jax.numpy, jax.lax

    def one(A, b, C, e, w0, eta, u, T):
        n, m, d = A.shape

        def at(w):          # residuals and pieces at one point, for every client
            Rw = jnp.einsum("jmd,d->jm", A, w) - b
            Pw = jnp.einsum("jkd,d->jk", C, w) + e
            return Rw, Pw, jnp.abs(Rw).mean(-1).mean(), Pw.max(-1).mean()
        _, _, fu, gu = at(u)

        def record(w, fw, gw):
            sig = (gw - eps > 0).astype(float)
            return sig, ((w - u) ** 2).sum(), (1 - sig) * (fw - fu) + sig * (gw - gu)

        def body(carry, _):
            w, S_w, S_weight = carry
            Rw, Pw, fw, gw = at(w)
            sig, dist2, h = record(w, fw, gw)
            inA = gw <= eps
            wt = jnp.where(inA, 1.0, 0.0)
            S_w, S_weight = S_w + wt * w, S_weight + wt
            W = jnp.broadcast_to(w, (n, d))
            X = jnp.zeros((n, d))
            mdir = dstep = 0.0
            dsq = jnp.zeros(n)
            for tau in range(E):
                if tau == 0:
                    R_, P_ = Rw, Pw
                else:
                    R_ = jnp.einsum("jmd,jd->jm", A, W) - b
                    P_ = jnp.einsum("jkd,jd->jk", C, W) + e
                j = jnp.argmax(P_, -1)
                V = (1 - sig) * (jnp.einsum("jmd,jm->jd", A, jnp.sign(R_)) / m) + \
                    sig * jnp.take_along_axis(C, j[:, None, None], 1)[:, 0]
                mdir = jnp.maximum(mdir, jnp.sqrt((V * V).sum(-1)).max())
                W = W - eta * V
                dist = jnp.sqrt(((W - w) ** 2).sum(-1))
                dstep = jnp.maximum(dstep, (dist / ((tau + 1.0) * eta)).max())
                if tau + 1 < E:
                    dsq = dsq + dist ** 2
                X = X + V
            Xbar = X.mean(0)
            agg = (Xbar ** 2).sum()
            cond = ((w - eta * Xbar - u) ** 2).sum()
            w = w - eta * Xbar
            row = jnp.stack([fw, gw, sig, dist2, h, inA.astype(float), wt, dstep, dsq.max(), mdir, agg, agg, cond])
            return (w, S_w, S_weight), row
        (w, S_w, S_weight), rows = lax.scan(body, (w0, jnp.zeros_like(w0), 0.0), None, length=T)
        _, _, fw, gw = at(w)
        sig, dist2, h = record(w, fw, gw)
        return w, jnp.where(S_weight > 0, S_w / S_weight, jnp.nan), rows, jnp.stack([fw, gw, sig, dist2, h])
    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 0, 0, 0, 0, None)), static_argnums=(7,))


FEDSGM_EVERY = ("f", "g", "sigma", "dist2", "h")               # recorded at w_0..w_T
FEDSGM_ROUNDS = ("in_A", "weight", "drift_step", "drift_sq", "max_dir", "agg_sq", "agg_sq_cond", "cond_dist2")


def case_fedsgm(B=64, T=300, E=3, n=5, lean=True) -> Case:
    jax = _jax()
    FAM = _families()
    from fedcheck.algorithms.switching import fedsgm
    from fedcheck.problems import constrained as P
    from theorems.fedsgm.problems import ConstrainedFamily
    fam = ConstrainedFamily(kind="pl", n=n, m=10, d=5, start="infeasible")
    batch = P.ConstrainedBatch([fam.draw(s) for s in range(B)])
    eta = np.full(B, 0.02) * np.linspace(0.5, 1.5, B)
    eps = 0.05
    u = np.zeros((B, batch.d))
    fn = (jax_fedsgm_lean if lean else jax_fedsgm)(jax, E, eps)
    A, b, C, e = batch.f.A, batch.f.b, batch.g.A, batch.g.b
    w0 = np.asarray(batch.w0, dtype=float)

    def run_jax():
        w, wbar, rec, last = fn(A, b, C, e, w0, eta, u, T)
        out = {"w_T": w, "wbar": wbar}
        if lean:
            rows, last = np.asarray(rec), np.asarray(last)       # (B, T, 13), (B, 5)
            for q, k in enumerate(FEDSGM_EVERY):
                out[k] = np.concatenate([rows[:, :, q].T, last[:, q][None]])
            for q, k in enumerate(FEDSGM_ROUNDS):
                out[k] = rows[:, :, len(FEDSGM_EVERY) + q].T
            return out
        for q, k in enumerate(FEDSGM_EVERY):
            out[k] = np.concatenate([np.asarray(rec[q]).T, np.asarray(last[q])[None]])
        for q, k in enumerate(FEDSGM_ROUNDS):
            out[k] = np.asarray(rec[len(FEDSGM_EVERY) + q]).T
        return out

    def run_fedcheck():
        tr = fedsgm(batch, rounds=T, eta=eta, eps=np.full(B, eps), rule="hard", local_steps=E, comparator=u)
        out = {"w_T": tr.final["w_T"], "wbar": tr.final["wbar"]}
        out.update({k: tr.metrics[k] for k in FEDSGM_EVERY})
        out.update({k: tr.metrics[k][:-1] for k in FEDSGM_ROUNDS})
        return out

    def loop():
        FAM.loop_fedsgm(batch, 30, eta, np.full(B, eps), E)

    W = np.zeros((B, n, batch.d))

    def floor():
        for _ in range(T * E):
            batch.f.subgrad(W)
            batch.g.subgrad(W)
    return Case("FedSGM (pl)" + ("" if lean else " [JAX plain]"), f"{B}x{n}x{batch.d} m=10 E={E}", T, run_fedcheck, run_jax, None, loop, 30, floor,
                ("w_T", "wbar") + FEDSGM_EVERY + FEDSGM_ROUNDS,
                notes="both sides record every quantity fedcheck's fedsgm records (13 per round), all compared")


# ------------------------------------------------------------------------------------------------ networks
def _network_loss(model: str, small: bool = False):
    """The networks of FedFW's Table 2 at the paper's size (``theorems/fedfw/networks.py``): the DNN (two hidden
    layers of 20, ReLU) on the synthetic data of [52] at the generator's own sample sizes, and the CNN (8 channels
    of 3 x 3, 2 x 2 max pooling, 32 hidden, ReLU) on 28 x 28 images, 375 per client (MNIST's share under
    ``--full``; random pixels standardized here: the time depends on the shapes only), 10 clients; the start
    ``x^1`` of the family and ``G`` further points of the l2 ball (one per parameter of a grid)."""
    from fedcheck.problems import CNN
    from theorems.fedfw.networks import CNN_FAMILY, _dnn_family
    if model == "mlp":
        inst = _dnn_family(samples=5 if small else None).draw(0)
        return inst.make_loss(), inst.start(), inst.n
    rng = np.random.default_rng(np.random.SeedSequence(11))
    n, m, side = (3, 4, 8) if small else (10, 375, 28)
    A = rng.standard_normal((n, m, side * side))
    y = rng.integers(0, 10, (n, m))
    w = np.full((n, m), 1.0 / m)
    arch = dict(CNN_FAMILY.arch(), image=(side, side, 1))
    loss = CNN(A, y, w, **arch)
    x = rng.standard_normal(loss.p) * 0.05
    return loss, x, n


def jax_network(jax, loss):
    """``value(x_i)`` of one client of the library's MLP / CNN (the same flat parameter layout: per layer ``W``
    row-major ``(in, out)`` then ``b``; convolutions as ``lax.conv_general_dilated`` in NHWC / HWIO with the
    library's kernel rows ``(c, a, b)``, ``lax.reduce_window`` max pooling, then the activation)."""
    jnp, lax = jax.numpy, jax.lax
    spec = loss.spec
    act = (lambda z: jnp.maximum(z, 0.0)) if spec["activation"] == "relu" else jnp.tanh
    shapes = loss.param_shapes
    offs = [o.start for o in loss.param_slices()]

    def tensor(x, k):
        size = int(np.prod(shapes[k]))
        return x[offs[k]:offs[k] + size].reshape(shapes[k])

    def value(x, A, onehot, w):
        k = 0
        if loss.name == "cnn":
            H, W, C = spec["image"]
            U = A.reshape((A.shape[0], H, W, C))
            ker, q = spec["kernel"], spec["pool"]
            for _ in spec["channels"]:
                Wk = tensor(x, k)
                c_in = U.shape[-1]
                Wk = Wk.reshape((c_in, ker, ker, -1)).transpose(1, 2, 0, 3)            # HWIO
                Z = lax.conv_general_dilated(U, Wk, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
                Z = Z + tensor(x, k + 1)
                if q > 1:
                    Z = lax.reduce_window(Z, -jnp.inf, lax.max, (1, q, q, 1), (1, q, q, 1), "VALID")
                U = act(Z)
                k += 2
            Hd = U.reshape((U.shape[0], -1))
        else:
            Hd = A
        layers = (len(shapes) - k) // 2
        for j in range(layers):
            Hd = Hd @ tensor(x, k) + tensor(x, k + 1)
            if j < layers - 1:
                Hd = act(Hd)
            k += 2
        lp = jax.nn.log_softmax(Hd, -1)
        return -(w * (onehot * lp).sum(-1)).sum()
    return value


def case_network_grad(model: str, G: int = 2, small: bool = False) -> Case:
    """The clients' gradients of a network at ``G`` points each: fedcheck's ``loss.grad(X)`` (``X`` ``(G, n, p)``)
    against ``jax.jit(vmap(vmap(jax.grad(value))))`` on the same arrays."""
    jax = _jax()
    loss, x, n = _network_loss(model, small)
    rng = np.random.default_rng(np.random.SeedSequence(5))
    X = x + 0.01 * rng.standard_normal((G, n, loss.p))
    value = jax_network(jax, loss)
    g = jax.vmap(jax.vmap(jax.grad(value), in_axes=(0, 0, 0, 0)), in_axes=(0, None, None, None))
    fn = jax.jit(g)
    # the data on the device once, outside the timed region (as the FedFW peer closes over them): passed as numpy
    # arrays, every call copied them in (the MLP: 7 MB, ~1 ms of a ~6 ms gradient)
    A, oh, w = (jax.device_put(a) for a in (loss.A, loss.onehot, loss.w))

    def run_jax():
        return {"G": fn(X, A, oh, w)}

    def run_fedcheck():
        return {"G": loss.grad(X)}

    def floor():
        pass
    shape = f"{G}x{n}x{loss.p} m<={loss.A.shape[-2]}"
    return Case(f"{model.upper()} gradient", shape, 1, run_fedcheck, run_jax, None, None, 1, floor, ("G",))


def case_network_fedfw(model: str = "mlp", T: int = 20, G: int = 2, variant: str = "scan", small: bool = False) -> Case:
    """FedFW on a network (Table 2's method: the l2 ball of radius 10 on the whole vector, ``eta_t = 2/(t+1)``,
    ``lambda_t = lambda_0 sqrt(t+1)``, ``G`` values of ``lambda_0``), ``T`` rounds, ``F(xbar)`` at the end:
    fedcheck's ``fedfw_variant`` against a JAX round (``jax.grad`` of the clients, the penalty, the l2 LMO, the
    client and server updates) in a ``lax.scan`` (``variant="vmap-grad"``: only the gradient jitted, the round in
    numpy -- slower)."""
    jax = _jax()
    jnp, lax = jax.numpy, jax.lax
    from fedcheck.algorithms import ProblemBatch, fedfw_variant
    from fedcheck.problems import L2Ball
    loss, x, n = _network_loss(model, small)
    p = loss.p
    S = L2Ball(10.0, p)
    x1 = S.project(x)
    X0 = np.broadcast_to(x1, (G, n, p)).copy()
    tt = np.arange(1, T + 1, dtype=float)[:, None]
    lam0 = np.array([0.01, 0.1, 1.0, 10.0])[:G]
    eta = np.broadcast_to(2.0 / (tt + 1), (T, G)).copy()
    lam = lam0[None, :] * np.sqrt(tt + 1)
    prob = ProblemBatch(loss=loss, set=S, B=G, n=n, p=p, X0=X0)
    value = jax_network(jax, loss)
    grad = jax.vmap(jax.vmap(jax.grad(value), in_axes=(0, 0, 0, 0)), in_axes=(0, None, None, None))
    A, oh, w = loss.A, loss.onehot, loss.w

    def full(xb):           # F(xbar) = (1/n) sum_i f_i(xbar), every client's value at the server point
        return jax.vmap(lambda v: jax.vmap(value, in_axes=(None, 0, 0, 0))(v, A, oh, w).mean())(xb)

    def rnd(X, xbar, e, l):
        g = grad(X, A, oh, w) * (1.0 / n)
        g = g + l[:, None, None] * (X - xbar[:, None, :])
        s_ = -10.0 * g / jnp.sqrt((g * g).sum(-1, keepdims=True))
        X = X + e[:, None, None] * (s_ - X)
        xbar = xbar + e[:, None] * (s_.mean(1) - xbar)
        return X, xbar

    @jax.jit
    def run(X, eta, lam):
        (X, xbar), _ = lax.scan(lambda c, el: (rnd(*c, *el), None), (X, X.mean(1)), (eta, lam))
        return X, xbar, full(xbar)
    step = jax.jit(rnd)

    def run_jax():
        if variant == "vmap-grad":
            Xj, xb = jnp.asarray(X0), jnp.asarray(X0.mean(1))
            for t in range(T):
                Xj, xb = step(Xj, xb, eta[t], lam[t])
            return {"X": Xj, "xbar": xb}
        X, xb, F = run(X0, eta, lam)
        return {"X": X, "xbar": xb, "F": F}

    def run_fedcheck():
        tr = fedfw_variant(prob, eta, lam, T, grid=np.array([T + 1]),
                           recorder=lambda k, X, xb: {"F": loss.value(np.broadcast_to(xb[:, None, :], X.shape)).mean(-1)})
        out = {"X": tr.final["X"], "xbar": tr.final["xbar"]}
        if variant != "vmap-grad":
            out["F"] = tr.metrics["F"][-1]
        return out

    def floor():
        for _ in range(T):
            loss.grad(X0)
    name = f"FedFW on the {model.upper()}" + ("" if variant == "scan" else f" [JAX {variant}]")
    return Case(name, f"{G}x{n}x{p}", T, run_fedcheck, run_jax, None, None, 1, floor,
                ("X", "xbar") + (("F",) if variant != "vmap-grad" else ()))


# ------------------------------------------------------------------------------------------------ FedProx
def jax_fedprox(jax, E):
    """The FedProx example's round function (examples/fedprox_claims.py), recording what ``federated`` records
    at every round (:data:`RECORDED`) and the last round's client points."""
    jnp, lax = jax.numpy, jax.lax

    def one(H, c, X0, eta, mu, rad, R, q, rho, scale):
        n = H.shape[0]

        def metrics(Y, x):
            res = R @ x - q
            return ((res @ res + rho) * scale, jnp.sqrt(((Y - x) ** 2).sum()),
                    jnp.maximum(jnp.sqrt(x @ x) - rad, 0.0))

        def body(carry, el):
            x, _ = carry
            e, mu_ = el

            def local(_, Y):
                G = jnp.einsum("ipq,iq->ip", H, Y) - c + mu_ * (Y - x)
                Y = Y - e * G
                nrm = jnp.sqrt((Y * Y).sum(-1))[:, None]
                return Y * jnp.where(nrm > rad, rad / jnp.where(nrm > 0, nrm, 1.0), 1.0)
            Y = lax.fori_loop(0, E, local, jnp.broadcast_to(x, (n,) + x.shape))
            x = Y.mean(0)
            return (x, Y), metrics(Y, x)
        x0 = X0.mean(0)
        (x, Y), rec = lax.scan(body, (x0, X0), (eta, mu))
        first = metrics(X0, x0)
        return x, Y, tuple(jnp.concatenate([a[None], b]) for a, b in zip(first, rec))
    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 1, 1, 0, 0, 0, 0, None)))


def case_fedprox(B=64, T=200, E=5, n=8, p=10) -> Case:
    jax = _jax()
    FAM = _families()
    from examples.fedprox_claims import fedprox
    from fedcheck.problems.instances import InstanceBatch, RandomFamily
    fam = RandomFamily(loss="least_squares", set="l2", n=n, m=20, p=p, radius=1.0, heterogeneity=2.0)
    batch = InstanceBatch([fam.draw(s) for s in range(B)])
    loss = batch.loss
    L = np.asarray(loss.smoothness()).max(-1)
    eta = np.broadcast_to(1.0 / L, (T, B)).copy()
    mu = np.full((T, B), 0.1)
    R, q, rho = (np.asarray(a) for a in loss._stacked_qr())
    scale = 1.0 / (2 * loss.m * loss.n)
    rad = np.broadcast_to(np.asarray(batch.set.radius, dtype=float), (B,)).copy()
    X0 = np.array(batch.x0(), dtype=float)
    fn = jax_fedprox(jax, E)

    def run_jax():
        x, X, rec = fn(loss.H, loss.c, X0, eta, mu, rad, R, q, rho, scale)
        return {"x": x, "X": X, **{k: np.asarray(v).T for k, v in zip(RECORDED, rec)}}

    def run_fedcheck():
        tr = fedprox(batch, rounds=T, grid=np.arange(1, T + 2), eta=eta, mu=mu, local_steps=E)
        return {"x": tr.final["x"], "X": tr.final["X"], **{k: tr.metrics[k] for k in RECORDED}}

    def loop():
        FAM.loop_fedprox(batch, 20, eta, mu, E)

    Xf = np.zeros((B, n, p))
    grad = loss.grad

    def floor():
        for _ in range(T * E):
            grad(Xf)
    return Case("federated(FedProx)", f"{B}x{n}x{p} m=20 E={E}", T, run_fedcheck, run_jax, None, loop, 20, floor,
                ("x", "X") + RECORDED)


def user_round_options(repeat: int) -> None:
    """How a user's round function (the FedProx example) reaches compiled speed -- the
    numpy path (the reference, before), the compiled building blocks (what fedcheck does now, nothing to change
    in the user's file), (a) numba on the user's round function, (b) JAX (the peer above: jit per shape)."""
    import numba
    from examples import fedprox_claims as ex
    from fedcheck.algorithms import pieces
    case = case_fedprox()
    saved = pieces._compiled_local_steps
    before, now = [], []
    for _ in range(repeat):
        pieces._compiled_local_steps = lambda *a: None          # the numpy steps (FEDCHECK_JIT=0 does the same)
        try:
            before.append(_wall(case.fedcheck))
        finally:
            pieces._compiled_local_steps = saved
        now.append(_wall(case.fedcheck))
    print(f"# user round function, the FedProx example's ({case.shape}, {case.rounds} rounds, F every round): "
          f"numpy path {min(before):.4f} s, compiled building blocks {min(now):.4f} s: "
          f"user_round_speedup={min(before) / min(now):.2f}x (same iterates: tests/test_compiled_paths.py)")
    from fedcheck.algorithms.protocol import Round
    from fedcheck.problems.instances import InstanceBatch, RandomFamily
    small = InstanceBatch([RandomFamily(loss="least_squares", set="l2", n=3, m=5, p=4).draw(s) for s in range(2)])
    X = np.array(small.x0())
    try:
        numba.njit(ex.fedprox_round)(X, X.mean(1), Round(small), eta=np.ones(2), mu=np.ones(2), local_steps=1)
        print("#   (a) numba.njit(fedprox_round): compiled")
    except Exception as e:       # the round function calls ctx (a Python object) and pieces: not nopython code
        print(f"#   (a) numba.njit(fedprox_round) as the user wrote it: {type(e).__name__} (the round function calls "
              "a Python context and fedcheck's pieces; numba compiles only code written in its subset)")


def best_of(make, variants):
    """The case of ``make(variant=variants[0])`` with the other variants' JAX peers as alternatives: every peer is
    timed, interleaved with fedcheck, checked equal, and the fastest is the family's peer."""
    def build(**kw):
        case = make(variant=variants[0], **kw)
        for v in variants[1:]:
            other = make(variant=v, **kw)
            case.alts[v] = other.jax_run
        case.extra["variant"] = variants[0]
        return case
    return build


CASES = {
    "fedfw": lambda **kw: case_fedfw(incremental_peer=True, **kw),
    "fedfw_factored": lambda **kw: case_fedfw(p=200, T=2000, loop_rounds=2, incremental_peer=True, **kw),
    "fedavg": best_of(case_fedavg, ("einsum", "unrolled", "fori")),
    "feddualavg": best_of(lambda **kw: case_composite("feddualavg", **kw), ("unrolled", "matmul")),
    "fedmid": best_of(lambda **kw: case_composite("fedmid", **kw), ("unrolled", "matmul")),
    "fedmls": case_fedmls,
    "fedsgm": best_of(lambda variant, **kw: case_fedsgm(lean=variant == "lean", **kw), ("lean", "plain")),
    "fedprox": case_fedprox,
    "mlp_grad": lambda **kw: case_network_grad("mlp", **kw),
    "cnn_grad": lambda **kw: case_network_grad("cnn", **kw),
    "mlp_fedfw": best_of(lambda **kw: case_network_fedfw("mlp", **kw), ("scan", "vmap-grad")),
    "cnn_fedfw": lambda **kw: case_network_fedfw("cnn", T=3, **kw),
}
EXTRA = {   # the slower peers tried, printed for information (not in the closing line)
    "fedfw_jax_recompute": lambda: case_fedfw(),
    "fedfw_factored_jax_recompute": lambda: case_fedfw(p=200, T=2000, loop_rounds=2),
    "feddualavg_jax_random": lambda: case_composite("feddualavg", variant="jax.random"),
}


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}   # cpu: the process's CPU time, all its threads
_clock = time.perf_counter


def _wall(fn) -> float:
    """The time of ``fn()`` on the chosen clock (``--clock``; wall by default)."""
    gc.collect()
    t0 = _clock()
    fn()
    return _clock() - t0


def _block(out: dict) -> dict:
    return {k: np.asarray(v) for k, v in out.items()}


class compiled_paths_off:
    """fedcheck without its compiled paths of the methods (the numpy reference paths they replace): least
    squares' local steps (one FedAvg and its fused round, ``pieces.local_steps``), FedMLS's approx-prox passes,
    its fused LAD steps, compiled round and LAD's compiled ``F`` (:mod:`fedcheck.algorithms.fedmls_jit`), FedFW's
    factored compiled round, the by-columns ``F`` of large least squares, FedSGM's compiled run
    (:mod:`fedcheck.algorithms.switching_jit`) and the composite family's l1 prox."""

    def __enter__(self):
        import importlib
        fedavg, fedfw, fedmls, fedmls_jit, jit, pieces, composite = (
            importlib.import_module(f"fedcheck.algorithms.{m}")
            for m in ("fedavg", "fedfw", "mls", "fedmls_jit", "jit", "pieces", "composite"))
        self.saved = [(pieces, "_compiled_local_steps", pieces._compiled_local_steps),
                      (fedavg, "ls_local_steps", fedavg.ls_local_steps), (fedavg, "ls_fedavg", fedavg.ls_fedavg),
                      (fedmls, "_compiled_prox_steps", fedmls._compiled_prox_steps),
                      (fedmls, "lad_prox_steps", fedmls.lad_prox_steps),
                      (fedmls, "round_kernels", fedmls.round_kernels),
                      (fedmls_jit, "lad_full_value", fedmls_jit.lad_full_value),
                      (fedfw, "_factored_ok", fedfw._factored_ok),
                      (jit, "COLUMNS_FROM", jit.COLUMNS_FROM), (composite, "prox_of", composite.prox_of)]
        sj = importlib.import_module("fedcheck.algorithms.switching_jit")
        self.saved.append((sj, "AVAILABLE", sj.AVAILABLE))
        sj.AVAILABLE = False
        pieces._compiled_local_steps = lambda *a: None
        fedavg.ls_local_steps = lambda *a, **k: None
        fedavg.ls_fedavg = lambda *a: None
        fedmls._compiled_prox_steps = fedmls.lad_prox_steps = fedmls.round_kernels = lambda *a: None
        fedmls_jit.lad_full_value = lambda loss: None
        fedfw._factored_ok = lambda *a: False
        jit.COLUMNS_FROM = 2**62
        composite.prox_of = lambda reg: reg.prox
        return self

    def __exit__(self, *exc):
        for mod, name, value in self.saved:
            setattr(mod, name, value)


def _before(case: Case) -> float:
    with compiled_paths_off():
        return _wall(case.fedcheck)


def measure(case: Case, repeat: int, with_loop: bool, before: bool = False) -> dict:
    t0 = time.perf_counter()
    jx = _block(case.jax_run())                      # compiles
    compile_s = time.perf_counter() - t0
    fc = case.fedcheck()                              # warms numba's cache, the solve-free setup
    ref = _block(case.jax_check()) if case.jax_check is not None else jx
    diff = max_rel_diff(fc, ref, case.compare)
    for run in case.alts.values():                    # every other peer compiled and checked too (on what it gives)
        out = _block(run())
        diff = max(diff, max_rel_diff(fc, out, [k for k in case.compare if k in out]))
    talt = {v: [] for v in case.alts}
    tf, tj, tl, tg, tb = [], [], [], [], []
    if before:
        with compiled_paths_off():
            case.fedcheck()                           # the recorder's F by rows, compiled once
    for _ in range(repeat):
        if before:
            tb.append(_before(case))
        tf.append(_wall(case.fedcheck))
        tj.append(_wall(lambda: _block(case.jax_run())))
        for v, run in case.alts.items():
            talt[v].append(_wall(lambda: _block(run())))
        tg.append(_wall(case.floor))
        if with_loop and case.loop is not None and len(tl) < 3:
            tl.append(_wall(case.loop) * case.extra.get("loop_scale", case.rounds / case.loop_rounds))
    runs = {case.extra.get("variant", "jax"): tj, **talt}
    peers = {v: min(t) for v, t in runs.items()}
    best = min(peers, key=peers.get)
    # the repeats of the peer that is timed (the fastest), paired with fedcheck's of the same repeat
    return {"fedcheck": min(tf), "jax": peers[best], "peer": best, "peers": peers, "floor": min(tg),
            "loop": min(tl) if tl else float("nan"),
            "before": min(tb) if tb else float("nan"),
            "compile": compile_s, "diff": diff, "runs_fedcheck": tf, "runs_jax": runs[best]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", choices=sorted(CASES) + sorted(EXTRA))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-loop", action="store_true")
    ap.add_argument("--extra", action="store_true", help="also the JAX peers with fedcheck's incremental gradient")
    ap.add_argument("--no-user-round", action="store_true", help="skip the user round function (the FedProx example before/after)")
    ap.add_argument("--before", action="store_true",
                    help="also time fedcheck without its compiled paths (column 'before s', same run)")
    ap.add_argument("--clock", choices=sorted(CLOCK), default="wall",
                    help="wall time (default), or the process's CPU time of all its threads (XLA's included): "
                         "steadier than wall time on a loaded machine")
    a = ap.parse_args(argv)
    global _clock
    _clock = CLOCK[a.clock]
    try:
        jax = _jax()
    except ImportError:
        print("JAX is not installed: pip install 'fedcheck[bench]' (or jax[cpu]) to run the peer benchmark")
        return 2
    core = _pin()
    names = a.only or (list(CASES) + (list(EXTRA) if a.extra else []))
    load = os.getloadavg()
    print(f"# {os.cpu_count()} cores, pinned to core {core}; numpy {np.__version__}, jax {jax.__version__}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"# {a.clock}-clock minima of {a.repeat} interleaved repeats; JAX compile time excluded (column 'jit s'); "
          f"equal: max|fedcheck - JAX| / (1 + max|x|) over the compared outputs (TOL {TOL:g})")
    print(f"{'family':34s} {'shape':22s} {'rounds':>6s} {'loop s':>8s} {'floor s':>8s} {'jax s':>8s} "
          f"{'fedcheck s':>10s} {'jax/fc':>7s} {'jit s':>6s} {'before s':>9s}  equal")
    res = {}
    ok = True
    for name in names:
        case = (CASES.get(name) or EXTRA[name])()
        r = measure(case, a.repeat, not a.no_loop, a.before)
        res[name] = r
        ratio = r["jax"] / r["fedcheck"]
        eq = r["diff"] <= TOL
        ok &= eq
        print(f"{case.name:34s} {case.shape:22s} {case.rounds:6d} {r['loop']:8.3f} {r['floor']:8.4f} "
              f"{r['jax']:8.4f} {r['fedcheck']:10.4f} {ratio:7.2f} {r['compile']:6.2f} {r['before']:9.4f}  "
              f"{'yes' if eq else 'NO'} ({r['diff']:.1e})", flush=True)
        paired = [j / f for j, f in zip(r["runs_jax"], r["runs_fedcheck"])]
        print(f"#   median over the {len(paired)} interleaved repeats: fedcheck {np.median(r['runs_fedcheck']):.4f} s, "
              f"jax {np.median(r['runs_jax']):.4f} s, paired jax/fc {np.median(paired):.2f}", flush=True)
        if len(r["peers"]) > 1:
            print(f"#   JAX peers tried (s): " + ", ".join(f"{v} {t:.4f}" for v, t in r["peers"].items())
                  + f"; timed: {r['peer']}", flush=True)
    if not a.no_user_round and (a.only is None or "fedprox" in a.only):
        user_round_options(a.repeat)
    main_names = [n for n in res if n in CASES]
    ratios = {n: res[n]["jax"] / res[n]["fedcheck"] for n in main_names}
    load = os.getloadavg()
    print(f"# load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; all equal: {ok}")
    if ratios:
        worst = min(ratios, key=ratios.get)
        print(f"# smallest: {worst}")
        print(f"jax_time_over_fedcheck_min={ratios[worst]:.2f} fedfw={ratios.get('fedfw', float('nan')):.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
