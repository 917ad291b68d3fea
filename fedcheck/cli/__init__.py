"""The ``fedcheck`` command line (front end): ``main`` parses and dispatches; ``errors`` holds the exit codes."""
from fedcheck.cli.main import build_parser, main, parse_seeds, summary_table

__all__ = ["main", "parse_seeds", "summary_table", "build_parser"]
