"""The fixtures users touch: ``llm_server`` (one server per config per session) and ``bench``.

``bench`` is the one place a test's measurements go: ``bench.run(scenario)`` runs a serving workload
against the test's server and records its metrics; ``bench.record(name, value)`` records anything
else; ``bench.check(metric, observed, noise=…)`` compares with the stored baseline (the gate);
``bench.emit(record)`` sends any other results line (an eval's details) to the sinks and
``bench.artifact_dir(name)`` is the folder for files beside them. Every line goes through
:func:`pytest_llmbench.sink.emit`, so results.jsonl, JUnit and third-party sinks see the same records.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from pytest_llmbench import host_load, sink
from pytest_llmbench.config import CONFIGS
from pytest_llmbench.gate.types import Check
from pytest_llmbench.launchers.gpus import GPUAssignmentError
from pytest_llmbench.records.results import RESULTS, end_of_test_line, facts_line, scenario_line, server_line
from pytest_llmbench.registry import REGISTRY
from pytest_llmbench.report import junit
from pytest_llmbench.scheduling import (
    config_of_param,
    server_config_name,
    test_key,
)
from pytest_llmbench.server import LLMServer, ServerNotResponding, ServerStartError, start_server
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult, WorkloadError, refused

if TYPE_CHECKING:
    from pytest_llmbench.gate.noise.base import NoiseModel
    from pytest_llmbench.gate.types import Verdict
    from pytest_llmbench.workload.prompts import Prompt


def _gpu_ids_for(config: pytest.Config, cfg) -> tuple[str, ...]:
    from pytest_llmbench.launchers.gpus import assign_gpus

    return assign_gpus(config, cfg)


@pytest.fixture(scope="session")
def llm_server(request: pytest.FixtureRequest) -> Iterator[LLMServer]:
    """The running server of the config this test is parameterized with.

    Session-scoped and parameterized over the selected configs (see plugin.pytest_generate_tests):
    pytest groups a config's tests together, starts its server once, and stops it before the next
    config's server starts.
    """
    param = getattr(request, "param", None)
    name = config_of_param(param) if isinstance(param, str) else None
    if name is None:
        pytest.fail("llm_server is parameterized by the llmbench plugin; no server config was selected")
    config = request.config
    cfg = config.stash[CONFIGS][name]
    results = config.stash[RESULTS]
    try:
        server = start_server(
            cfg, results.server_dir(name), gpu_ids=_gpu_ids_for(config, cfg), registry=config.stash[REGISTRY]
        )
    except (ServerStartError, GPUAssignmentError) as e:
        # the message and the log tail, once: no plugin source, no "During handling of the above exception"
        raise pytest.fail.Exception(str(e), pytrace=False) from None
    sink.emit(config, server_line(server))
    try:
        yield server
    finally:
        try:
            _write_facts(config, server)
        finally:
            server.stop()


def _write_facts(config: pytest.Config, server: LLMServer) -> None:
    from pytest_llmbench.server_facts import collect_facts

    try:
        facts = collect_facts(server)
    except Exception as e:  # facts are informative; never fail a teardown over them
        facts = {"error": f"{type(e).__name__}: {e}"}
    config.stash[RESULTS].write_resources(server.name, facts)
    sink.emit(config, facts_line(server.name, facts))


@dataclass
class Bench:
    """One test's measurements: run scenarios, record values, gate them, and emit results lines."""

    item: pytest.Item
    server: LLMServer | None
    #: every value recorded: ``bench.record`` names as given, scenario metrics as ``<scenario>.<metric>``
    measurements: dict[str, Any] = field(default_factory=dict)
    scenarios: list[ScenarioResult] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def config_name(self) -> str | None:
        return self.server.name if self.server else None

    @property
    def nodeid(self) -> str:
        return self.item.nodeid

    @property
    def test_key(self) -> str:
        return test_key(self.item, self.config_name)

    # ---- the sink ------------------------------------------------------------------------------
    def emit(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Send one results line (``{"record": kind, ...}``) to every sink, stamped with this test's
        config, node id and baseline key; returns the line as written."""
        stamped = {"config": self.config_name, "test": self.nodeid, "test_key": self.test_key, **record}
        return sink.emit(self.item.config, stamped, self.item)

    def artifact_dir(self, name: str, *, config: str | None = None) -> Path:
        """``<results>/<config>/<name>/`` for files beside the results, created for this test's config (the
        results root when the test has no server). ``config=`` names another config's folder, to read what
        it wrote earlier in this session; that one is never created."""
        results = self.item.config.stash[RESULTS]
        if config is not None and config != self.config_name:
            return results.dir / config / name
        d = (results.server_dir(self.config_name) if self.config_name else results.dir) / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    # ---- measuring -----------------------------------------------------------------------------
    def run(self, scenario: Scenario, *, prompts: Sequence[Prompt | str] | None = None) -> ScenarioResult:
        """Run a serving scenario against this test's server; its metrics are recorded here.

        Whatever finished is written to results.jsonl even when the run is interrupted; a server that
        exited or stopped responding fails the test naming it, with its log tail."""
        from pytest_llmbench.workload.scenario import run_scenario

        if self.server is None:
            raise RuntimeError("bench.run needs the test to use the llm_server fixture")
        scenario = _with_slo(scenario, self.item.config.getoption("llmbench_slo", None), self.server)
        compare = _comparison(self)  # a compared config runs the scenario on both arms, interleaved
        if compare is not None:
            return compare.run(self, scenario, prompts=prompts)
        reporter = self.item.config.pluginmanager.get_plugin("terminalreporter")
        before = host_load.snapshot()
        try:
            with self.server.stall_budget(scenario.stall_timeout_s):  # tokenize/flush hang: one budget too
                result = run_scenario(self.server, scenario, prompts=prompts, reporter=reporter)
            result.host_load = host_load.between(before, host_load.snapshot(), _server_pids(self.server))
        except BaseException as e:
            partial = getattr(e, "llmbench_partial", None)
            if partial is not None:
                self._keep(partial)
            if isinstance(e, (httpx.TransportError, WorkloadError, ServerNotResponding)) and self.server.problem():
                gone = self.server.gone_message(f"during scenario {scenario.name}")
                raise pytest.fail.Exception(gone, pytrace=False) from None  # said once: no "During handling"
            if isinstance(e, WorkloadError):  # could not run at all (every warm-up refused): the message alone
                raise pytest.fail.Exception(str(e), pytrace=False) from None
            if isinstance(e, httpx.HTTPStatusError):  # a control call refused (HTTP 401 without the key)
                raise pytest.fail.Exception(refused(self.server, e), pytrace=False) from None
            raise
        self._keep(result)
        if self.server.not_responding:  # a control call after the requests hung: they are kept, the test fails
            pytest.fail(self.server.gone_message(f"after scenario {scenario.name}"), pytrace=False)
        if result.metrics.get("failed") and not self.server.settled_alive():
            pytest.fail(self._gone(result), pytrace=False)
        hung = next((r.error for r in result.records if (r.error or "").startswith("server not responding")), None)
        if hung:
            self.server.not_responding = hung.removeprefix("server ")
            pytest.fail(self._gone(result), pytrace=False)
        return result

    def arms(self) -> Iterator[tuple[str, LLMServer]]:
        """``(role, server)`` to evaluate on: this test's server alone (``"candidate"``), or in a comparison
        the reference arm's first, then the candidate's. Measure the same cases on each and pass the
        reference's to ``check(..., cases=..., reference_cases=...)``::

            by_arm = {role: bfcl.run_bfcl(server, cases, ...) for role, server in bench.arms()}
        """
        compare = _comparison(self)
        if self.server is None:
            raise RuntimeError("bench.arms needs the test to use the llm_server fixture")
        if compare is None:
            yield "candidate", self.server
        else:
            yield from compare.arm_servers(self)

    def _keep(self, result: ScenarioResult) -> None:
        """Every scenario's metrics under ``<scenario>.<metric>``, whichever scenario of the test it is."""
        self.scenarios.append(result)
        for k, v in result.metrics.items():
            self.measurements[f"{result.scenario.name}.{k}"] = v
        self.emit(scenario_line(result, self.server.config if self.server else None))

    def _gone(self, result: ScenarioResult) -> str:
        m = result.metrics
        return self.server.gone_message(  # type: ignore[union-attr]
            f"during scenario {result.scenario.name}: {m.get('completed', 0)} of {len(result.records)} requests "
            f"finished and were written to results.jsonl"
        )

    def host_busy(self) -> str | None:
        """Why this test's timing is not the engine's: a scenario measured while other processes
        contended for the host's cores (``host_load``), or None."""
        for result in self.scenarios:
            load = result.host_load
            if load is not None and load.contended:
                return f"host busy during {result.scenario.name}: {load.describe()}"
        return None

    def record(self, name: str, value: Any) -> None:
        """Record a measurement that is not part of a serving scenario (an eval score, a count)."""
        self.measurements[name] = value
        junit.add_property(self.item, name, value)

    def check(
        self,
        metric: str,
        observed: float | Sequence[float] | None = None,
        *,
        noise: NoiseModel | None = None,
        n: int | None = None,
        direction: str | None = None,
        hardware_bound: bool | None = None,
        se: float | None = None,
        family: str | None = None,
        reference: float | None = None,
        cases: Mapping[str, float] | None = None,
        reference_cases: Mapping[str, float] | None = None,
        detect: float | str | None = None,
        ignore: float | str | None = None,
    ) -> Verdict:
        """Gate ``observed`` against the baseline of this config/test/metric (a regression fails the test
        at its end, never here); see :meth:`pytest_llmbench.gate.session.GateSession.check`.

        In a comparison, a serving metric of the last ``bench.run`` is judged reference vs candidate, and
        so are ``cases`` given with ``reference_cases`` (the reference arm's, from :meth:`arms`).
        ``detect``/``ignore`` (``"5%"``, ``0.1``) are this check's sizes in a comparison, over the ini's
        (compare/margins.py); the stored-baseline gate has its own noise models and does not read them."""
        check = Check(
            metric, observed, noise, n, direction, hardware_bound, se, family, reference, cases, reference_cases,
            detect, ignore,
        )  # fmt: skip
        verdict = self.item.config.hook.pytest_llmbench_check(bench=self, check=check)
        if verdict is None:
            raise RuntimeError(f"bench.check({metric!r}): no checker judged it (the llmbench gate is not active)")
        self.verdicts.append(verdict)
        return verdict


def _with_slo(scenario: Scenario, cli: str | None, server: LLMServer) -> Scenario:
    """The scenario with the SLO it is judged by (workload/slo.py ``resolve_slo``: CLI, test, config)."""
    import dataclasses

    from pytest_llmbench.workload.slo import resolve_slo

    slo = resolve_slo(cli, scenario.slo if isinstance(scenario.slo, Mapping) else None, server.config)
    return dataclasses.replace(scenario, slo=slo or None) if slo != (scenario.slo or {}) else scenario


def _server_pids(server: LLMServer) -> list[int]:
    """The server's own processes (a container's are not pytest's children), for the host load."""
    try:
        return list(server.handle.pids())
    except Exception:  # a handle that cannot list them: pytest's descendants still count as ours
        return []


def _comparison(bench: Bench):
    """The comparison session when this bench's config runs as reference vs candidate (compare/session.py)."""
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
    return server_config_name(request.node)


@pytest.fixture
def bench(request: pytest.FixtureRequest) -> Iterator[Bench]:
    """Measurement sink for one test; uses ``llm_server`` when the test does."""
    server = request.getfixturevalue("llm_server") if "llm_server" in request.fixturenames else None
    b = Bench(item=request.node, server=server)
    yield b
    if b.measurements or b.verdicts:
        b.emit(end_of_test_line(b.measurements))
