"""The ``fedcheck`` command line (front end): ``main`` parses and dispatches; ``errors`` holds the exit codes."""
from fedcheck.cli.main import main

__all__ = ["main"]
