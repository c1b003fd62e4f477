"""Repository-level pytest setup: the pytester fixture for the plugin's own tests, and how ``pytest tests/
-n 2`` shares them between two xdist workers on two cores.

In two phases, not as two equal workers. Two 2-thread llama-servers on two cores stall each other at their
thread barriers (a busy core took one server's TPOT from 13 to 92 ms), and even a worker in the kernel's idle
class beside the servers made the server modules 22-25% slower on this 2-vCPU VM (some 2-3x) and widened an
A/A comparison's interval past what its test allows (experiments/suite/durations_after.out.md). So first both
workers run the modules that start no server; then one worker runs the modules that do (marked
``integration``), one at a time, with the host to itself, as a serial run would.
"""

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

_STARTS_SERVERS = re.compile(r"pytest\.mark\.integration\b")  # the plugin's marker: "starts a real server"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Whole modules per worker (xdist's ``loadscope``): a module's tests share its module-scoped real
    llama-server and rendered reports, which a test-by-test split would make each worker build again. The
    plugin's own scheduler (one scope per server config, scheduling.py) is for bench suites: this suite's
    tests start their servers themselves, and ``pytest benches/ -n 2`` here gets the plugin's."""
    tests = Path(config.rootpath, "tests")
    if not all(
        Path(config.invocation_params.dir, arg.split("::")[0]).resolve().is_relative_to(tests) for arg in config.args
    ):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ServersLast(LoadScopeScheduling):
        """Server-free modules on every worker first; then the server modules on one worker, each started
        only when no other worker is running a test, the other workers shut down. xdist's own order within
        a phase (most tests first): the small modules left for the end of the first phase even out the two
        workers' finishing times, which the server phase waits for."""

        def __init__(self, config: pytest.Config, log=None) -> None:
            super().__init__(config, log)
            self._starts: dict[str, bool] = {}

        def _starts_servers(self, scope: str) -> bool:
            module = scope.split("::", 1)[0]
            if module not in self._starts:
                path = Path(config.rootpath, module)
                self._starts[module] = path.is_file() and bool(_STARTS_SERVERS.search(path.read_text()))
            return self._starts[module]

        def _running(self, node) -> bool:
            """A worker holds its last test until it gets more work or is told to shut down (xdist runs a
            test once it knows the next one), so one pending test is a worker waiting, not running."""
            return self._pending_of(self.assigned_work.get(node, {})) >= (1 if node.shutting_down else 2)

        def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
            super().mark_test_complete(node, item_index, duration)
            if not self._running(node):  # a worker waiting for the host may start the server phase now
                for other in self.nodes:
                    if other is not node and not other.shutting_down and not self._running(other):
                        self._reschedule(other)

        def _assign_work_unit(self, node) -> None:
            free = [scope for scope in self.workqueue if not self._starts_servers(scope)]
            if free:
                scope = free[0]
            elif node is not self.nodes[0]:
                node.shutdown()  # the server phase is one worker's: this one ends once its tests have run
                return
            elif any(self._running(other) for other in self.nodes if other is not node):
                return  # the server phase waits for the host to be its own
            else:
                scope = next(iter(self.workqueue))
            self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return ServersLast(config, log)
