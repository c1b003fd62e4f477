"""The fixtures users touch: ``llm_server`` (one server per config per session) and ``bench``.

``bench`` is the one place a test's measurements go: ``bench.run(scenario)`` runs a serving workload
against the test's server and records its metrics; ``bench.record(name, value)`` records anything
else; ``bench.check(metric, observed, noise=…)`` compares with the stored baseline (the gate). At the
end of the test everything recorded is written to results.jsonl and the JUnit XML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from pytest_llmbench import stash
from pytest_llmbench.launchers.gpus import GPUAssignmentError
from pytest_llmbench.scheduling import find_name, param_tokens, without_group_suffix
from pytest_llmbench.server import LLMServer, ServerStartError, start_server
from pytest_llmbench.workload.scenario import WorkloadError


def _gpu_ids_for(config: pytest.Config, cfg) -> tuple[str, ...]:
    from pytest_llmbench.launchers.gpus import assign_gpus

    return assign_gpus(config, cfg)


@pytest.fixture(scope="session")
def llm_server(request: pytest.FixtureRequest):
    """The running server of the config this test is parameterized with.

    Session-scoped and parameterized over the selected configs (see plugin.pytest_generate_tests):
    pytest groups a config's tests together, starts its server once, and stops it before the next
    config's server starts.
    """
    name = getattr(request, "param", None)
    if name is None:
        pytest.fail("llm_server is parameterized by the llmbench plugin; no server config was selected")
    config = request.config
    cfg = config.stash[stash.CONFIGS][name]
    results = config.stash[stash.RESULTS]
    try:
        server = start_server(cfg, results.server_dir(name), gpu_ids=_gpu_ids_for(config, cfg),
                              image=config.getoption("llmbench_image", None))
    except (ServerStartError, GPUAssignmentError) as e:
        pytest.fail(str(e), pytrace=False)  # the message and the log tail, not the plugin's source
    results.log_server_start(server)
    try:
        yield server
    finally:
        try:
            results.write_facts(server)
        finally:
            server.stop()


def test_key(item: pytest.Item, config_name: str | None) -> str:
    """The node id without the config's part of the parametrization (and without an xdist group
    suffix), so one test has one baseline key however it was run."""
    nodeid = without_group_suffix(item.nodeid)
    parts = param_tokens(nodeid)
    at = find_name(parts, config_name) if config_name else None
    if at is None:
        return nodeid
    parts = parts[:at] + parts[at + len(config_name.split("-")):]
    base = nodeid[: nodeid.rindex("[")]
    return f"{base}[{'-'.join(parts)}]" if parts else base


@dataclass
class Bench:
    """Per-test measurement sink and gate entry point."""

    item: pytest.Item
    server: LLMServer | None
    measurements: dict[str, Any] = field(default_factory=dict)
    scenarios: list[Any] = field(default_factory=list)
    verdicts: list[Any] = field(default_factory=list)

    @property
    def config_name(self) -> str | None:
        return self.server.name if self.server else None

    @property
    def nodeid(self) -> str:
        return self.item.nodeid

    @property
    def test_key(self) -> str:
        return test_key(self.item, self.config_name)

    def run(self, scenario, *, prompts=None):
        """Run a serving scenario against this test's server; its metrics are recorded here.

        Whatever finished is written to results.jsonl even when the run is interrupted; a server that
        exited or stopped responding fails the test naming it, with its log tail."""
        from pytest_llmbench.workload.scenario import run_scenario

        if self.server is None:
            raise RuntimeError("bench.run needs the test to use the llm_server fixture")
        compare = _comparison(self)  # issue 12 seam: a compared config runs the scenario on both arms
        if compare is not None:
            return compare.run(self, scenario, prompts=prompts)
        reporter = self.item.config.pluginmanager.get_plugin("terminalreporter")
        try:
            result = run_scenario(self.server, scenario, prompts=prompts, reporter=reporter)
        except BaseException as e:
            partial = getattr(e, "llmbench_partial", None)
            if partial is not None:
                self._keep(partial)
            if isinstance(e, (httpx.TransportError, WorkloadError)) and self.server.problem():
                pytest.fail(self.server.gone_message(f"during scenario {scenario.name}"), pytrace=False)
            raise
        self._keep(result)
        if result.metrics.get("failed") and not self.server.settled_alive():
            pytest.fail(self._gone(result), pytrace=False)
        hung = next((r.error for r in result.records if (r.error or "").startswith("server not responding")), None)
        if hung:
            self.server.not_responding = hung.removeprefix("server ")
            pytest.fail(self._gone(result), pytrace=False)
        return result

    def _keep(self, result) -> None:
        self.scenarios.append(result)
        for k, v in result.metrics.items():
            self.measurements[f"{result.scenario.name}.{k}" if len(self.scenarios) > 1 else k] = v
        self.item.config.stash[stash.RESULTS].write_scenario(self, result)

    def _gone(self, result) -> str:
        m = result.metrics
        return self.server.gone_message(
            f"during scenario {result.scenario.name}: {m.get('completed', 0)} of {len(result.records)} requests "
            f"finished and were written to results.jsonl")

    def record(self, name: str, value: Any) -> None:
        """Record a measurement that is not part of a serving scenario (an eval score, a count)."""
        self.measurements[name] = value
        self.item.user_properties.append((f"llmbench.{name}", value))

    def check(self, metric: str, observed: Any, **kwargs: Any):
        """Gate ``observed`` against the baseline of this config/test/metric; see gate.session."""
        gate = self.item.config.stash.get(stash.GATE, None)
        compare = _comparison(self)  # issue 12 seam: a serving metric of a compared config is a comparison
        if compare is not None and compare.judges(self, metric):
            verdict = compare.check(self, metric)
            self.verdicts.append(verdict)
            return verdict
        if gate is None:
            raise RuntimeError("the llmbench gate is not active in this session")
        verdict = gate.check(self, metric, observed, **kwargs)
        self.verdicts.append(verdict)
        return verdict


def _comparison(bench: Bench):
    """The comparison session when this bench's config runs as reference vs candidate (issue 12)."""
    from pytest_llmbench.compare.session import active_for

    return active_for(bench)


@pytest.fixture(autouse=True)
def _llmbench_server_usable(request: pytest.FixtureRequest) -> None:
    """A test whose server died or hung in an earlier test fails at once, naming it (instead of a
    connection-refused traceback, or waiting out the stall budget again)."""
    if "llm_server" not in request.fixturenames or _server_param(request) is None:
        return
    server = request.getfixturevalue("llm_server")
    if server.problem():
        pytest.fail(server.gone_message("before this test started"), pytrace=False)


def _server_param(request: pytest.FixtureRequest) -> str | None:
    callspec = getattr(request.node, "callspec", None)
    name = callspec.params.get("llm_server") if callspec else None
    return name if isinstance(name, str) else None


@pytest.fixture
def bench(request: pytest.FixtureRequest) -> Bench:
    """Measurement sink for one test; uses ``llm_server`` when the test does."""
    server = request.getfixturevalue("llm_server") if "llm_server" in request.fixturenames else None
    b = Bench(item=request.node, server=server)
    yield b
    results = request.config.stash[stash.RESULTS]
    results.write_test(b)
