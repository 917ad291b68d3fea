import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Every test session solves into its own cache directory."""
    old = os.environ.get("FEDCHECK_CACHE")
    os.environ["FEDCHECK_CACHE"] = str(tmp_path_factory.mktemp("fedcheck-cache"))
    yield
    if old is None:
        os.environ.pop("FEDCHECK_CACHE", None)
    else:
        os.environ["FEDCHECK_CACHE"] = old
