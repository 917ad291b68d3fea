"""The command line and the pytest plugin are front ends on the public API: ``fedcheck.api.prepare`` resolves and
checks a request (a Plan), ``fedcheck.api.run`` runs it; they parse their arguments and print, nothing else."""
import ast
from pathlib import Path

import pytest

from fedcheck import api
from fedcheck.cli.main import main
from fedcheck.core.errors import BadInput

ROOT = Path(__file__).resolve().parent.parent

# what resolving, validating and running a verify request takes, outside fedcheck.api (``fedcheck list`` reads the
# registry and ``fedcheck report`` plans its pages itself: neither is a request to verify)
_RUN_LOGIC = {"validate_inputs", "option_notes", "run_checks", "auto_jobs", "default_jobs", "check_scheduler",
              "load_problem", "attach_reruns", "UnknownCheck", "parse_params", "check_writable", "prestart"}


@pytest.mark.parametrize("path", ["fedcheck/cli/main.py", "fedcheck/pytest_plugin.py"])
def test_front_ends_have_no_run_logic_of_their_own(path):
    imported = {(node.module, a.name) for node in ast.walk(ast.parse((ROOT / path).read_text()))
                if isinstance(node, ast.ImportFrom) for a in node.names}
    own = sorted(f"{m}.{n}" for m, n in imported if m != "fedcheck.api"
                 and (n in _RUN_LOGIC or (n.startswith("_") and not n.startswith("__"))))
    assert not own, f"{path} resolves, validates or runs by itself (use fedcheck.api): {own}"


def test_prepare_resolves_and_checks_without_running():
    plan = api.prepare("theorem1", seeds="0-2", rounds=40, params=["lambda_0=0.5"])
    assert [c.id for c in plan.claims] == ["fedfw.theorem1"] and plan.seeds == [0, 1, 2] and plan.rounds == 40
    assert plan.params == {"lambda_0": 0.5} and plan.jobs == 1 and plan.theorem_files == []
    assert plan.argv() == ["verify", "fedfw.theorem1", "--seeds", "0,1,2", "--rounds", "40", "--param",
                           "lambda_0=0.5"]
    cfg = plan.config(save_dir="x")
    assert (cfg.seeds, cfg.rounds, cfg.params, cfg.save_dir, cfg.progress) == ([0, 1, 2], 40, {"lambda_0": 0.5},
                                                                               "x", False)
    assert plan.run_options()["seeds"] == [0, 1, 2]


@pytest.mark.parametrize("kwargs, message", [
    (dict(rounds=0), "--rounds must be >= 1"),
    (dict(jobs=-1), "--jobs must be >= 0"),
    (dict(scheduler="not an address"), "--scheduler"),
    (dict(seeds="x"), "--seeds 'x'"),
    (dict(params={"nope": 1.0}), "--param nope"),
])
def test_prepare_refuses_bad_input_with_the_command_lines_message(kwargs, message):
    with pytest.raises(BadInput, match=message.replace("(", r"\(")):
        api.prepare("theorem1", **kwargs)


def test_ids_only_reads_a_py_name_as_an_id_as_the_command_line_does(capsys):
    with pytest.raises(BadInput, match="unknown check 'mine.py'"):
        api.prepare("mine.py", ids_only=True)
    assert main(["verify", "mine.py", "--no-report"]) == 2
    assert "unknown check 'mine.py'" in capsys.readouterr().err


def test_public_parsers():
    assert api.parse_seeds(3) == [0, 1, 2] and api.parse_seeds("5,5,2") == [5, 2] and api.parse_seeds(None) is None
    assert api.parse_params({"mu": 1}) == {"mu": 1.0} and api.parse_params("mu=2") == {"mu": 2.0}
    with pytest.raises(BadInput):
        api.parse_seeds([1, -1])


def test_run_calls_its_hooks_and_gives_results_with_provenance():
    plan = api.prepare("theorem1", seeds=1, rounds=20)
    done, placed = [], []
    res = api.run(plan, on_done=done.append, place_instances=placed.append, argv=["verify", "theorem1"])
    assert done == plan.claims and placed == [res.dicts]
    assert res.provenance["command"] == "fedcheck verify theorem1" and res.ids == ["fedfw.theorem1"]


def test_the_pep_command_finds_the_papers_pep_models():
    from fedcheck.catalog.registry import pep_models
    from theorems.fedfw import pep
    assert pep_models() == [pep]
