"""The terminal fits: ``fedcheck verify`` prints within 100 columns when its output is not a terminal (the
terminal's width when it is one), a check's headline on a line of its own, long commands broken with shell
continuations that still run as printed; ``--wide`` prints every row on one line."""
import shlex
import subprocess

import pytest

from fedcheck.api import attach_reruns
from fedcheck.catalog.registry import default_registry
from fedcheck.cli.main import main
from fedcheck.cli.tables import DEFAULT_WIDTH, command_lines, summary_table, verdict_lines
from fedcheck.core.results import run_options

REG = default_registry()


def unbreakable(line: str) -> bool:
    """A line that cannot be shorter: one word (a path longer than the width), or an option with its value."""
    words = line.rstrip(" \\").split()
    return len(words) == 1 or (len(words) == 2 and words[0].startswith("--"))


@pytest.fixture(scope="module")
def paper_runs(catalog_run):
    """The quick results of every claim of the four papers, with their rerun commands (as ``verify`` prints them)."""
    dicts = [catalog_run(c).to_dict() for c in REG.checks.values()]
    attach_reruns(dicts, list(REG.checks.values()), run_options())
    return dicts


@pytest.mark.xdist_group("catalog")
@pytest.mark.parametrize("paper", sorted(REG.papers))
def test_every_line_verify_prints_for_a_paper_fits_100_columns(paper, paper_runs):
    res = [r for r in paper_runs if r["id"].startswith(paper + ".")]
    text = verdict_lines(res, width=DEFAULT_WIDTH)
    # a line may pass the width only when it is one word that cannot be broken (a path longer than the width)
    too_long = [ln for ln in text.splitlines() if len(ln) > DEFAULT_WIDTH and not unbreakable(ln)]
    assert not too_long, too_long[:5]
    lines = text.splitlines()
    for r in res:       # the headline, where it says more than the verdict, on a line of its own under the check
        head = r.get("headline")
        if head and head != r["verdict"]:
            first = head.split()[0]
            assert any(ln.strip().startswith(first) and r["id"] not in ln for ln in lines), (r["id"], head)
    wide = verdict_lines(res, wide=True)
    for r in res:       # --wide: one row per check with its headline in a column
        head = r.get("headline") or r["verdict"]
        shown = head.upper() if head == "violated" else head
        assert any(ln.startswith(r["id"] + " ") and shown in ln for ln in wide.splitlines()), r["id"]


@pytest.mark.xdist_group("catalog")
def test_the_wrapped_commands_run_as_printed(paper_runs):
    """A command broken over lines with `` \\`` continuations is, to a shell, the command itself."""
    commands = [e["command"] for r in paper_runs for e in r.get("rerun") or []]
    assert commands
    for cmd in commands:
        printed = command_lines(cmd, DEFAULT_WIDTH, first="  ", indent="      ")
        assert all(len(ln) <= DEFAULT_WIDTH or unbreakable(ln) for ln in printed.splitlines()), printed
        # what a POSIX shell makes of the printed lines (continuations included): the command's own arguments
        argv = subprocess.run(["sh", "-c", "printf '%s\\0' " + printed.strip()], capture_output=True,
                              check=True).stdout.decode().split("\0")[:-1]
        assert argv == shlex.split(cmd)


def test_verify_prints_within_100_columns_and_wide_does_not_wrap(capsys):
    rc = main(["verify", "fedfw.lemma2", "fedfw.partial_consensus", "--no-report"])
    out = capsys.readouterr().out
    assert rc == 1
    assert max(len(ln) for ln in out.splitlines()) <= DEFAULT_WIDTH
    rc = main(["verify", "fedfw.lemma2", "fedfw.partial_consensus", "--no-report", "--wide"])
    wide = capsys.readouterr().out
    assert max(len(ln) for ln in wide.splitlines()) > DEFAULT_WIDTH       # its reasons are long, on one line
    assert len(wide.splitlines()) < len(out.splitlines())


def test_a_narrow_table_keeps_every_cell():
    row = {"id": "mine.a_rather_long_claim_identifier_that_does_not_fit_a_narrow_column", "verdict": "violated",
           "headline": "partly holds: 3 of 6 paper findings refuted", "max_ratio": 2.5, "max_excess": 0.1,
           "seconds": 1.0, "readings": {}}
    text = summary_table([row], width=60)
    assert all(len(ln) <= 60 for ln in text.splitlines())
    joined = "".join(ln.split()[0] for ln in text.splitlines()[2:] if not ln.startswith("    "))
    assert row["id"] in joined.replace(" ", "")
    assert "    partly holds: 3 of 6 paper findings refuted" in text.splitlines()
