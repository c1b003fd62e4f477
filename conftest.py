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

    class FewTestsFirst(LoadScopeScheduling):
        """Modules with the fewest tests first: here those are the slow ones (a real comparison, bisect or
        fault session per test), and one of them left to the end would keep a worker busy alone; xdist's
        own order (most tests first) does exactly that."""

        ordered = False

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:
                self.ordered = True
                units = sorted(self.workqueue.items(), key=lambda unit: len(unit[1]))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return FewTestsFirst(config, log)
