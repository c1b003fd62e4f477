"""Repository-level pytest setup: the pytester fixture for the plugin's own tests, and how ``pytest tests/
-n 2`` shares them between two xdist workers."""

import pytest

pytest_plugins = ["pytester"]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Whole modules per worker (xdist's ``loadscope``): a module's tests share its module-scoped real
    llama-server and rendered reports, which a test-by-test split would make each worker build again. The
    plugin's own scheduler (one scope per server config, scheduling.py) is for bench suites: this suite's
    tests start their servers themselves."""
    from xdist.scheduler import LoadScopeScheduling

    return LoadScopeScheduling(config, log)
