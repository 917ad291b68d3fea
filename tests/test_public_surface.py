"""The user's surface: every import the README and examples/ show works (old paths included, re-exported), and the
five public modules export what docs/DESIGN.md lists."""
import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imports_of(source: str):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("fedcheck", "theorems"):
            for a in node.names:
                yield node.module, a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ("fedcheck", "theorems"):
                    yield a.name, None


def _documented():
    out = set()
    for block in re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S):
        out |= set(_imports_of(block))
    for ex in sorted((ROOT / "examples").glob("*.py")):
        out |= set(_imports_of(ex.read_text()))
    # paths users' theorem files used before the layout of paper folders (they keep working)
    out |= {("fedcheck.problems.instances", "RandomFamily"), ("fedcheck.problems.solve", "solve_consensus"),
            ("fedcheck.experiments", "algorithm_runner"), ("fedcheck.tools.audit", "ProofStep"),
            ("fedcheck.algorithms.compression", "RandK"), ("fedcheck.core.claim", "RunConfig")}
    return sorted(out, key=str)


@pytest.mark.parametrize("module, name", _documented(), ids=lambda x: str(x))
def test_every_documented_import_works(module, name):
    mod = importlib.import_module(module)
    if name is not None and name != "*":
        assert hasattr(mod, name) or importlib.util.find_spec(f"{module}.{name}") is not None, f"{module}.{name}"


PUBLIC = {
    "fedcheck": ["Claim", "Paper", "Reading", "Source", "Domain", "BoundTest", "Bound", "Measurement", "Proof", "Fact",
                 "Rounds", "Horizons", "HorizonCase", "Cases", "Case", "Metric", "RunConfig", "MEAN", "PATHWISE",
                 "fraction", "ProofStep", "algorithm_runner", "verify", "Results", "BadInput"],
    "fedcheck.algorithms": ["federated", "Round", "fedfw", "frank_wolfe", "feddr", "record_grid"],
    "fedcheck.problems": ["RandomFamily", "Instance", "load_instance", "save_instance", "solve_consensus",
                          "L1Ball", "L2Ball", "Box", "Simplex", "Loss", "LeastSquares", "register_constant"],
    "fedcheck.symbols": ["t", "T", "L", "D", "n", "p", "lambda_0", "sigma"],
    "fedcheck.testing": ["instances", "claim_instances", "assert_not_refuted", "check_on"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_the_public_modules_export_their_names(module):
    mod = importlib.import_module(module)
    missing = [n for n in PUBLIC[module] if not hasattr(mod, n)]
    assert not missing, f"{module} lacks {missing}"
    import fedcheck.algorithms.pieces  # noqa: F401  (the round function's building blocks are public too)


def _modules_with_all():
    """Every module of the two packages whose source declares ``__all__`` (found without importing them)."""
    out = []
    for pkg in ("fedcheck", "theorems"):
        for f in sorted((ROOT / pkg).rglob("*.py")):
            if "__all__" in f.read_text(encoding="utf-8"):
                rel = f.relative_to(ROOT).with_suffix("")
                parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
                out.append(".".join(parts))
    return out


@pytest.mark.parametrize("module", _modules_with_all())
def test_every_name_a_module_exports_exists(module):
    """``from <module> import *`` works: every name of ``__all__`` is defined (four stale names were found once --
    the report's ``write_reports``, search's ``cmd_search``, the PEP module's CLI functions, a compiled round --
    left in ``__all__`` after they moved)."""
    if module.endswith("__main__"):
        pytest.skip("runs the command")
    mod = importlib.import_module(module)
    missing = [n for n in getattr(mod, "__all__", ()) if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"


def test_a_user_round_function_and_defaults_need_no_internals(tmp_path):
    """A claim over horizons needs no solver (the consensus solve is the default), replicates get independent streams
    without run_kwargs, and a claim may run on given instances only (no family)."""
    import fedcheck
    from fedcheck import Bound, BoundTest, Claim, HorizonCase, Horizons, Paper, Rounds
    from fedcheck.algorithms import federated
    from fedcheck.problems import RandomFamily, solve_consensus
    from fedcheck.symbols import D, L, t

    def gd_round(X, x, ctx, *, eta):
        Y = ctx.project(ctx.broadcast(x) - ctx.col(eta) * ctx.grad(ctx.broadcast(x)))
        return Y, Y.mean(1)

    gd = federated(gd_round, name="GD")
    fam = RandomFamily(loss="least_squares", set="l2", n=3, m=5, p=3, heterogeneity=0.0, noise=0.0, outside=0.5)
    P = Paper(key="surf", title="surface", authors="me")
    h = Horizons(algorithm=gd, schedules={"eta": 1 / L}, cases=(HorizonCase("c", fam, seeds=2, horizons=(5, 10)),))
    assert h.solver is solve_consensus and callable(h.runner)
    only_given = Claim(id="surf.given", paper=P, reference="r", statement="s",
                       evidence=BoundTest(Rounds(algorithm=gd, schedules={"eta": 1 / L}, rounds=20, valid_from=2),
                                          bounds=(Bound("b", L * D**2 / (2 * (t - 1))),)))
    with pytest.raises(fedcheck.BadInput, match="--instance"):
        only_given.run()
    inst = fam.draw(0)
    assert only_given.run(fedcheck.RunConfig(instances=[inst])).verdict == "holds"


def test_replicates_get_independent_streams_without_run_kwargs():
    """``replicates=R`` hands a method that takes ``seeds=`` one stream seed per (instance, replicate), the same seeds
    ``run_kwargs=lambda values, seeds: {"seeds": seeds}`` gave (the boilerplate it replaces)."""
    from fedcheck import MEAN, Bound, BoundTest, Claim, Paper, Rounds, RunConfig
    from fedcheck.algorithms import federated
    from fedcheck.core.streams import replicate_seeds
    from fedcheck.problems import RandomFamily
    from fedcheck.symbols import D, L, t

    seen = []

    def noisy_round(X, x, ctx, *, eta):
        Y = ctx.project(ctx.broadcast(x) - ctx.col(eta) * (ctx.grad(ctx.broadcast(x)) + 0.1 * ctx.normal((ctx.n, ctx.p))))
        return Y, Y.mean(1)

    base = federated(noisy_round, name="noisy")

    def method(batch, *, seeds=None, **kw):
        seen.append(None if seeds is None else list(seeds))
        return base(batch, seeds=seeds, **kw)

    fam = RandomFamily(loss="least_squares", set="l2", n=3, m=5, p=3)
    P = Paper(key="rep", title="replicates", authors="me")

    def claim(**extra):
        return Claim(id="rep.c", paper=P, reference="r", statement="s", expected=None,
                     evidence=BoundTest(Rounds(family=fam, algorithm=method, schedules={"eta": 1 / L}, seeds=2,
                                               rounds=10, replicates=4, valid_from=2, **extra),
                                        bounds=(Bound("b", 10 * L * D**2 / (t - 1)),), statistic=MEAN))
    a = claim().run(RunConfig()).to_dict()
    b = claim(run_kwargs=lambda values, seeds: {"seeds": seeds}).run(RunConfig()).to_dict()
    assert seen[0] == seen[1] == [int(s) for s in replicate_seeds([0, 1], 4)]
    assert len(set(seen[0])) == 8
    assert a["readings"] == b["readings"]
