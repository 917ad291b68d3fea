import os

import pytest
from hypothesis import settings

# CI runs the property suites derandomized (the same examples every run, so a green CI is reproducible);
# locally hypothesis explores new examples each run.  HYPOTHESIS_PROFILE=explore forces exploration.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "explore"))


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


@pytest.fixture(autouse=True)
def _outputs_in_tmp(tmp_path, monkeypatch):
    """Default outputs (reports/, refuting instances) go to each test's temporary directory, not the repo."""
    monkeypatch.chdir(tmp_path)
