"""One place interprets ``--rounds``, ``--seeds`` and ``--full``: :class:`~fedcheck.core.results.RunConfig`
(``horizon``, ``horizons``, ``seed_list``/``seed_count``, and ``size`` for a size that is neither rounds nor seeds).
No measurement picks a number of rounds or seeds from ``--full`` alone; what remains (a mode label, the scheduler's
time guess, data sizes and grids of the FedFW network and PEP experiments) is listed here with the reason."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from fedcheck.core.results import RunConfig

ROOT = Path(__file__).resolve().parents[1]
FULL = re.compile(r"\b(config|ctx)\.full\b|\bif full\b|\bfull else\b|\(full and")

# file -> (occurrences, why they are not rounds or seeds)
ALLOWED = {
    "fedcheck/core/evidence.py": (1, "MeasureContext.full, the flag itself"),
    "fedcheck/api.py": (1, "the --full flag passed on"),
    "fedcheck/experiments.py": (1, "the evidence's mode label"),
    "fedcheck/catalog/parallel.py": (4, "the scheduler's duration table and time guess per mode"),
    "fedcheck/algorithms/fedavg_jit.py": (2, "a local variable named full (a full tile of rows)"),
    "theorems/fedfw/pep.py": (1, "the PEP grid of (T, parameters): SDP sizes, neither rounds run nor seeds"),
    "theorems/fedfw/networks.py": (11, "network experiments: data samples per source, the data set, tuning grids, "
                                       "replicates per seeded instance, the mode label (rounds via _rounds, seeds "
                                       "via _seeds)"),
    "theorems/fedfw/measurements.py": (6, "the naive-averaging families (a grid of sets, n and starts), MNIST "
                                          "images per class and the tuning grids (values, not rounds or seeds)"),
}


def _occurrences() -> dict[str, int]:
    out: dict[str, int] = {}
    for top in ("fedcheck", "theorems"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "fedcheck/core/results.py":      # RunConfig: the one place
                continue
            n = sum(1 for line in path.read_text().splitlines() if FULL.search(line))
            if n:
                out[rel] = n
    return out


def test_no_size_is_chosen_by_full_alone_outside_runconfig():
    found = _occurrences()
    extra = {f: n for f, n in found.items() if n > ALLOWED.get(f, (0, ""))[0]}
    assert not extra, (f"--full read outside RunConfig in {extra}: a number of rounds goes through "
                       "config.horizon/horizons, seeds through config.seed_list/seed_count, any other size through "
                       "config.size (with a comment saying what it is)")


def test_runconfig_sizes():
    quick, full = RunConfig(), RunConfig(full=True)
    assert (quick.horizon(25, 60), full.horizon(25, 60), RunConfig(rounds=7, full=True).horizon(25, 60)) == (25, 60, 7)
    assert RunConfig(rounds=100).horizons((16, 64, 256), (16, 64, 256, 1024)) == [16, 64]
    assert RunConfig(seeds=[5, 9], full=True).seed_list(2, 4) == [5, 9]
    assert RunConfig(seeds=[5, 9], full=True).seed_count(3, 20) == 2
    # size: neither --rounds nor --seeds changes it; --full picks the full value when there is one
    assert (quick.size(24, 64), full.size(24, 64), full.size(24, None)) == (24, 64, 24)
    assert RunConfig(rounds=3, seeds=[0]).size((1, 2), (1, 2, 4)) == (1, 2)


# ---- behaviour: --rounds and --seeds change what runs at sites that once read --full alone --------------------
def test_feddualavg_lemma_c3_runs_the_given_rounds_and_seeds():
    from theorems.feddualavg.measurements import lemma_c3_cases
    cases = lemma_c3_cases(RunConfig(rounds=3, seeds=[1]), {})
    runs = [c for c in cases if "seed" in c.label]
    assert [c.label.split(" (")[0] for c in runs] == ["F2 l2-ball seed 1"]
    assert runs[0].instance["rounds"] == 3


def test_feddualavg_claim_d5_runs_the_given_rounds():
    """One comparison per local step of the run and client pair: 2 rounds give 2/3 of the points of 3 rounds."""
    from theorems.feddualavg.measurements import claim_d5_cases

    def points(rounds):
        cases = claim_d5_cases(RunConfig(rounds=rounds, seeds=[0]), {})
        along = [c for c in cases if "along a run" in c.label]
        assert len(along) == 2                       # two families, one seed each
        return [next(iter(c.inequalities.values())).lhs_lo.size for c in along]
    assert [3 * a for a in points(2)] == [2 * b for b in points(3)]


@pytest.mark.parametrize("seeds", [[0, 1], [3, 4, 5]])
def test_fedsgm_seed_variance_runs_the_given_uplink_seeds(seeds):
    from theorems.fedsgm.claims import VAR_READINGS
    from theorems.fedsgm.measurements import seed_variance_cases
    (case,) = seed_variance_cases(RunConfig(rounds=3, seeds=seeds), {}, readings=VAR_READINGS,
                                  fractions=(0.25,), etas=(0.1,))
    assert case.evidence["seeds_per_configuration"] == len(seeds)
    assert f"{len(seeds)} uplink seeds" in case.label
