"""FedFW's network claims (theorems/fedfw/networks.py): registration, provenance, the decision rules, Theorem 2's
interval logic on the DNN, and a user's MLP theorem file.  (Each claim's quick verdict against its declared one is
tests/test_catalog.py's.)"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fedcheck.core import verdict as V
from fedcheck.core.claim import RunConfig
from fedcheck.core.evidence import Finding
from fedcheck.core.readings import Deviation
from fedcheck.catalog.registry import default_registry
from fedcheck.problems.nonconvex import Interval
from fedcheck.problems.networks import NetworkFamily, network_constants

import theorems.fedfw as F
from theorems.fedfw import networks as N

ROOT = Path(__file__).resolve().parents[1]
NEW = ("fedfw.table2_dnn", "fedfw.table2_cnn", "fedfw.figure3", "fedfw.figure4_dnn", "fedfw.theorem2_dnn")


def test_network_claims_are_fedfw_claims():
    reg = default_registry()
    assert set(NEW) <= set(reg.papers["fedfw"])
    assert all(c in F.CLAIMS for c in N.NETWORK_CLAIMS)
    assert N.FEDFW is F.FEDFW
    assert all(c.paper == F.FEDFW and c.expected is not None for c in N.NETWORK_CLAIMS)


def _paper_text():
    for base in (ROOT.parent / "shared", ROOT / "shared", Path("/work/shared")):
        p = base / "papers" / "fedfw-federated-frank-wolfe.md"
        if p.is_file():
            return p.read_text()
    pytest.skip("the paper's text (shared/papers) is not beside the repository")


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def test_quotes_are_the_papers_words():
    text = _norm(_paper_text())
    sources = [N.SOURCE_T2_DNN, N.SOURCE_T2_CNN, N.SOURCE_FIG3, N.SOURCE_FIG4_GAP, N.SOURCE_FIG4_FIRST,
               N.SOURCE_FIG4_CONV, N.THEOREM2_SOURCE]
    for src in sources:
        assert _norm(src.quote) in text, src.quote
    for cells in N._PRINTED.values():
        for cell in cells:
            assert cell in text, cell
    # the numbers used are the printed ones (std in fractions -> points)
    for (kind, method), cells in N._PRINTED.items():
        for (split, data), col in N._COLUMN.items():
            acc, sd = N.PAPER_TABLE2[(kind, method)][(split, data)]
            m = re.match(r"([\d.]+)\s*\(\\pm\s*([\d.]+)\)", cells[col])
            assert float(m.group(1)) == acc and float(m.group(2)) * 100 == pytest.approx(sd)


def test_either_reading_refutes_only_when_both_readings_refute():
    def f(v):
        return Finding("x", v, False, "", evidence="e")
    combos = {(V.VIOLATED, V.VIOLATED): V.VIOLATED, (V.VIOLATED, V.HOLDS): V.INCONCLUSIVE,
              (V.VIOLATED, V.INCONCLUSIVE): V.INCONCLUSIVE, (V.HOLDS, V.INCONCLUSIVE): V.HOLDS,
              (V.HOLDS, V.HOLDS): V.HOLDS, (V.INCONCLUSIVE, V.INCONCLUSIVE): V.INCONCLUSIVE}
    for (a, b), want in combos.items():
        got = N.either_reading({"tensor": f(a), "whole": f(b)}, "s", "d", N.SOURCE_T2_DNN, ())
        assert got.verdict == want, (a, b)
        assert got.paper is True and got.source is N.SOURCE_T2_DNN
    rounds = (Deviation("rounds", paper=100, run=50),)
    dev = N.either_reading({"tensor": f(V.HOLDS), "whole": f(V.HOLDS)}, "s", "d", N.SOURCE_T2_DNN, rounds)
    assert dev.paper is False and dev.deviations == rounds
    size = (Deviation("images", paper=60000, run=5000),)         # a deviation of size only: still the paper's
    assert N.either_reading({"tensor": f(V.HOLDS), "whole": f(V.HOLDS)}, "s", "d", N.SOURCE_T2_DNN, size).paper


def _res(acc_by_param, tuned=0):
    acc = np.asarray(acc_by_param, dtype=float)            # (G, I)
    sd = acc.std(1, ddof=1)
    return {"FedFW": {"acc": acc[:, :, None], "tuned": tuned, "acc_tuned": acc[tuned], "acc_mean": float(acc[tuned].mean()),
                      "acc_sd": float(sd[tuned]), "param": (1e-3, 1e-2), "param_name": "lambda_0",
                      "band": (float(np.min(acc.mean(1) - 3 * sd)), float(np.max(acc.mean(1) + 3 * sd)))}}


def test_accuracy_rule_needs_every_configuration_to_miss_before_it_refutes():
    # paper: IID, l2, Synthetic, FedFW = 81.70 (sd 0.8)
    near = _res([[81.0, 82.0, 81.5, 81.2, 81.8], [60.0, 61.0, 62.0, 61.0, 60.5]])
    assert N._accuracy_finding(near, "IID", "l2", "FedFW", "Synthetic", N.SOURCE_T2_DNN, "").verdict == V.HOLDS
    near3 = _res([[81.0, 82.0, 81.5], [60.0, 61.0, 62.0]])      # three draws: too few to hold (V.MIN_DRAWS)
    assert N._accuracy_finding(near3, "IID", "l2", "FedFW", "Synthetic", N.SOURCE_T2_DNN, "").verdict == V.INCONCLUSIVE
    other = _res([[60.0, 61.0, 62.0], [79.0, 80.0, 81.0]])      # tuned far off, another parameter reaches it
    assert N._accuracy_finding(other, "IID", "l2", "FedFW", "Synthetic", N.SOURCE_T2_DNN, "").verdict == V.INCONCLUSIVE
    far = _res([[30.0, 31.0, 32.0], [40.0, 41.0, 42.0]])
    assert N._accuracy_finding(far, "IID", "l2", "FedFW", "Synthetic", N.SOURCE_T2_DNN, "").verdict == V.VIOLATED
    # the printed value inside a wide interval (draws 10 points apart: +-40 points) is not agreement
    wide = _res([[65.0, 75.0, 85.0, 95.0, 70.0], [60.0, 61.0, 62.0, 61.0, 60.5]])
    f = N._accuracy_finding(wide, "IID", "l2", "FedFW", "Synthetic", N.SOURCE_T2_DNN, "")
    assert f.verdict == V.INCONCLUSIVE and abs(81.70 - 78.0) < f.extra["power"]["half_width"]
    # the paper's setting at a smaller size (5,000 of 60,000 images): a printed accuracy above every configuration
    # is not refuted (the size may explain it); one below every configuration still is
    size = (Deviation("images", paper=60000, run=5000),)
    f = N._accuracy_finding(far, "IID", "l2", "FedFW", "Synthetic", N.SOURCE_T2_DNN, size)
    assert f.verdict == V.INCONCLUSIVE and f.paper
    high = _res([[95.0, 96.0, 97.0], [94.0, 95.0, 96.0]])
    assert N._accuracy_finding(high, "IID", "l2", "FedFW", "Synthetic", N.SOURCE_T2_DNN, size).verdict == V.VIOLATED


def test_ordering_rule_is_paired_over_draws():
    res = {"FedFW": {"acc_tuned": np.array([80.0, 70.0, 90.0, 75.0, 85.0])},
           "FedDR": {"acc_tuned": np.array([79.0, 69.0, 89.1, 74.0, 84.05])}}
    f = N._order_finding(res, "IID", "l2", "FedFW", "FedDR", "Synthetic", N.SOURCE_T2_DNN, "")
    assert f.verdict == V.HOLDS                     # +1, +1, +0.9, ...: far above the t interval although the draws differ by 20
    res["FedDR"]["acc_tuned"] = np.array([81.0, 71.0, 91.2, 76.0, 85.95])
    assert N._order_finding(res, "IID", "l2", "FedFW", "FedDR", "Synthetic", N.SOURCE_T2_DNN, "").verdict == V.VIOLATED
    res["FedDR"]["acc_tuned"] = np.array([81.0, 69.0, 90.0, 76.0, 84.0])
    assert N._order_finding(res, "IID", "l2", "FedFW", "FedDR", "Synthetic", N.SOURCE_T2_DNN, "").verdict == V.INCONCLUSIVE


TINY = NetworkFamily(data="synthetic", model="mlp", hidden=(5,), activation="tanh", n=3, features=6, classes=3,
                     samples=12, set="l2", radius=2.0)


def _tiny_claim(**kw):
    from dataclasses import replace
    return replace(N.theorem2_dnn, evidence=replace(N.theorem2_dnn.evidence, experiment=N.EveryHorizon(TINY, **kw)))


def test_theorem2_on_a_network_is_checked_at_every_horizon():
    res = _tiny_claim(seeds=1, horizon=12).run(RunConfig())
    assert res.verdict == V.HOLDS, res.reason
    rec = res.instances[0]
    assert len(rec["rounds"]) == 12                        # T = 1..12, one run each
    for name in ("E_init", "G_nc", "L"):
        c = rec["constants"][name]
        assert c["lo"] <= c["hi"]
    assert res.readings["(12)"]["verdict"] == V.HOLDS


def test_theorem2_holds_only_below_the_bound_at_the_constants_lower_ends(monkeypatch):
    """With the lower ends of E, G, L at 0 and a tiny lambda_0 the bound at the lower ends is below the measured gap
    while the bound at the upper ends is far above it: neither 'holds' nor 'violated' can be said."""
    def weak(inst, use_cache=True):
        sol = network_constants(inst)
        info = dict(sol.info)
        for k in ("E", "G", "L"):
            info[k] = Interval(0.0, info[k].hi, "test: lower end 0")
        return type(sol)(**{**sol.__dict__, "info": info})
    monkeypatch.setattr(N, "network_solver", weak)
    res = _tiny_claim(seeds=1, horizon=6).run(RunConfig(params={"lambda_0": 1e-9}))
    assert res.readings["(12)"]["verdict"] == V.INCONCLUSIVE
    assert res.verdict == V.INCONCLUSIVE


def test_a_user_declares_an_mlp_problem_in_a_theorem_file(tmp_path):
    env = {**os.environ, "FEDCHECK_PROGRESS": "0"}
    out = subprocess.run([sys.executable, "-m", "fedcheck", "verify", "--theorem-file",
                          str(ROOT / "examples" / "mlp_claims.py"), "mlpdemo", "-j", "1",
                          "--json", str(tmp_path / "r.json"), "--no-report"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "mlpdemo.theorem2_gap" in out.stdout and "holds" in out.stdout
