import os

import pytest
from hypothesis import settings

from fedcheck.core.allocator import tune_allocator

tune_allocator()    # the suite's processes allocate as the CLI's do (speed only: fedcheck.core.allocator)

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


@pytest.fixture(scope="session")
def catalog_run(tmp_path_factory):
    """``catalog_run(claim)``: the claim's Result at its default (quick) configuration, run once per test
    session and shared: tests/test_catalog.py compares its verdict with the declaration, tests/test_docs.py its
    headline with the README's, tests/test_report_all.py renders its reports."""
    from fedcheck.core.claim import RunConfig
    done = {}
    base = tmp_path_factory.mktemp("catalog-run")

    def run(claim):
        if claim.id not in done:
            done[claim.id] = claim.run(RunConfig(save_dir=str(base / claim.id)))
        return done[claim.id]
    return run


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``-n 2 --dist loadgroup``, the default of pyproject.toml): the tests of one file run
    on one worker (their module fixtures -- a verify run, a Dask cluster -- are made once), and the tests
    marked ``xdist_group("catalog")`` in several files share one worker and so one run of the catalog."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
