"""DCS: decentralized communication sliding (Lan, Lee & Zhou, "Communication-efficient algorithms for
decentralized and stochastic optimization", Math. Program. 180, 2020; arXiv:1701.03961), run on the
federated (server) network, vectorized over instances and clients.

The FedMLS paper does not run or cite DCS (see ``theorems/fedmls/claims.py``, claim ``fedmls.dcs_prior_mls``); it
is the natural prior baseline with known non-smooth rates (``O(1/eps)`` communications, ``O(1/eps^2)``
subgradients).  The problem ``min_x F(x) = (1/n) sum_i f_i(x)`` is DCS's ``min sum_i phi_i(x_i)`` s.t.
``L X = 0`` with ``phi_i = f_i / n`` and ``L = n I - 1 1^T``, the Laplacian of the complete graph (a server
computing ``(L X)_i = n (x_i - xbar)`` is one exchange; ``||L|| = n``).  The saddle-point form is
``min_X max_Y sum_i phi_i(x_i) + <L X, Y>``.  One outer iteration ``k`` (two communications)::

    xt^k  = alpha_k (xh^{k-1} - x^{k-2}) + x^{k-1}              (extrapolation)
    y^k   = y^{k-1} + (1/tau_k) L xt^k                           (communication 1)
    w^k   = L y^k                                                (communication 2)
    (x^k, xh^k) = CS(x^{k-1}, w^k, eta_k, T_k)                   (no communication)

and the communication-sliding inner loop ``CS`` (``V(x, u) = ||x - u||^2/2``, ``X_i`` the ball of radius
``R``), ``u_0 = x``::

    u_t = argmin_{u in X_i} <w + phi_i'(u_{t-1}), u> + eta V(x, u) + eta beta_t V(u_{t-1}, u)
        = proj( (eta x + eta beta_t u_{t-1} - w - phi_i'(u_{t-1})) / (eta (1 + beta_t)) ),   t = 1..T
    xh    = sum_t lambda_t u_t / sum_t lambda_t ;   return (u_T, xh)

The output after ``N`` outer iterations is ``xbar^N = sum_k theta_k xh^k / sum_k theta_k`` per client; the server
point recorded here is its mean over the clients.  Parameters are inputs (per outer iteration, ``(rounds, B)``);
the general-convex choice of the DCS analysis as used in ``theorems/fedmls/claims.py`` is ``alpha_k = theta_k = 1``,
``eta_k = 2||L||``, ``tau_k = ||L||``, ``beta_t = (t+1)/2``, ``lambda_t = t+1`` and a constant ``T_k`` growing
linearly with the horizon ``N`` (``T ~ m M^2 N/(||L||^2 D~)``).  These constants are quoted from memory of that
paper (only its abstract is in the library used here), so they are named as a choice; the defaults below are
those.  Every trace records ``F`` at the server point, ``calls`` (subgradient calls per client) and ``comms``
(two per outer iteration), as :mod:`fedcheck.algorithms.mls` does.
"""
from __future__ import annotations

import numpy as np

from fedcheck.algorithms.core import Recorder, Trace, default_recorder
from fedcheck.algorithms.mls import (Oracle, Stop, ball_radii, drive_rounds, round_rows, snapshot_of, start_point,
                                     step_counts, stop_rule)
from fedcheck.algorithms.fedmls_jit import dcs_inner
from fedcheck.problems.instances import InstanceBatch

__all__ = ["dcs", "laplacian_apply"]


def laplacian_apply(X: np.ndarray) -> np.ndarray:
    """``L X`` for the complete graph ``L = n I - 1 1^T`` on the client axis: ``n (x_i - xbar)`` (``X`` ``(B, n, p)``)."""
    n = X.shape[1]
    return n * (X - X.mean(1, keepdims=True))


def _project(U: np.ndarray, R: np.ndarray) -> np.ndarray:
    nrm = np.sqrt(np.einsum("bnp,bnp->bn", U, U))[..., None]
    return U * (R[:, None, None] / np.maximum(nrm, R[:, None, None]))


def _numpy_inner(oracle, x, ex, w, e, Rb, Tk, Tmax: int, n: int):
    """The inner loop ``CS`` of one outer iteration (see the module doc), all instances at once: ``(U, Uh,
    lam_sum)`` -- the last iterate, the weighted sum of the iterates and of the weights ``(B, 1, 1)``.  ``e``
    ``(B, 1, 1)`` is ``eta_k``, ``ex = e x``, ``Tk`` ``(B,)`` the steps of each instance (the reference of the
    compiled :func:`fedcheck.algorithms.fedmls_jit.dcs_inner`)."""
    U = x.copy()
    Uh = np.zeros_like(x)
    lam_sum = np.zeros((x.shape[0], 1, 1))
    everyone = bool(np.min(Tk, initial=0) >= Tmax)                  # every instance takes all Tmax steps
    for t in range(1, Tmax + 1):
        act = (t <= Tk)[:, None, None]
        beta = (t + 1.0) / 2.0
        H = oracle(U) / n                                            # phi_i' = f_i' / n
        Un = _project((ex + e * beta * U - w - H) / (e * (1.0 + beta)), Rb)
        U = Un if everyone else np.where(act, Un, U)
        lam = (t + 1.0) * act
        Uh += lam * U
        lam_sum += lam
    return U, Uh, lam_sum


def dcs(batch: InstanceBatch, *, rounds: int, T, R, eta=None, tau=None, alpha=1.0, grid=None,
        recorder: Recorder | None = None, oracle: Oracle | None = None, x0=None, stop: Stop | None = None) -> Trace:
    """DCS on the server network, all instances and clients at once (see the module doc).  ``rounds`` is the number
    of outer iterations ``N`` (``2N`` communications); ``T`` the inner steps per outer iteration, ``eta``, ``tau``
    (default ``2n`` and ``n``, i.e. ``2||L||`` and ``||L||``) and ``alpha`` per outer iteration; ``R`` the radius of
    the clients' balls ``X_i``.

    Reference: Lan, Lee and Zhou (2020), decentralized communication sliding, the FedMLS paper's Section 2 comparison.
    ``x0`` ``(B, p)`` the start.  Returns a :class:`Trace` (``start = 0``: row ``i`` after ``trace.rounds[i]`` outer
    iterations).  Example: ``dcs(batch, rounds=N, T=T, R=10.0).final["xbar"]``."""
    B, n = batch.B, batch.n
    Tk = step_counts(T, rounds, B)
    eta = round_rows(2.0 * n if eta is None else eta, rounds, B, "eta")
    tau = round_rows(float(n) if tau is None else tau, rounds, B, "tau")
    alpha = round_rows(alpha, rounds, B, "alpha")
    Rb = ball_radii(R, B)
    oracle = oracle or batch.loss.grad
    X0 = np.repeat(start_point(batch, x0)[:, None, :], n, 1)
    st = {"x": X0.copy(), "x_prev": X0.copy(), "xh": X0.copy(), "y": np.zeros_like(X0), "xbar_sum": np.zeros_like(X0),
          "k": 0}
    extra = {"calls": np.zeros(B), "comms": np.zeros(B)}

    def step(k):
        a = alpha[k - 1][:, None, None]
        xt = a * (st["xh"] - st["x_prev"]) + st["x"]
        y = st["y"] + laplacian_apply(xt) / tau[k - 1][:, None, None]
        w = laplacian_apply(y)
        x = st["x"]
        e = eta[k - 1][:, None, None]
        Tmax = int(Tk[k - 1].max(initial=0))
        ex = e * x                                                   # (the same product at every inner step)
        got = dcs_inner(oracle, x, ex, w, e, Rb, Tk[k - 1], Tmax, _numpy_inner)    # compiled, the same bits
        U, Uh, lam_sum = got if got is not None else _numpy_inner(oracle, x, ex, w, e, Rb, Tk[k - 1], Tmax, n)
        xh = np.where(lam_sum > 0, Uh / np.maximum(lam_sum, 1e-300), x)
        st["x_prev"], st["x"], st["xh"], st["y"] = x, U, xh, y
        st["xbar_sum"] += xh
        st["k"] = k
        extra["calls"] += Tk[k - 1]
        extra["comms"] += 2.0

    def server():
        return (st["xbar_sum"] / st["k"]).mean(1) if st["k"] > 0 else st["x"].mean(1)

    def clients():
        return st["xbar_sum"] / st["k"] if st["k"] > 0 else st["x"]

    rec = recorder or default_recorder(batch)
    trace = drive_rounds(rounds, grid, step, snapshot_of(rec, clients, server, extra), stop_rule(stop, server))
    trace.final = {"x": st["x"].copy(), "xh": st["xh"].copy(), "y": st["y"].copy(), "xbar": server().copy(),
                   "xbar_clients": clients().copy()}
    return trace
