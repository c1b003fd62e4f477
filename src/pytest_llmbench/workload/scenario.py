"""A serving scenario — the benchmark posts' ``sglang.benchmark.serving`` runs — and how one is run.

Order of a run, as bench_serving does it: build prompts; warmup requests (copies of the first prompt,
at most 32 output tokens; all failing is an error); flush the prefix cache; snapshot the server's
speculative counters; send the prompts at the scenario's concurrency; snapshot again; compute metrics.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_llmbench import host_load
from pytest_llmbench.capacity.probe import run_capacity
from pytest_llmbench.capacity.search import CapacitySpec
from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.datasets.sharegpt import sharegpt_prompts
from pytest_llmbench.engines.base import SpecStats
from pytest_llmbench.host_load import HostLoad
from pytest_llmbench.launchers.base import describe_exit
from pytest_llmbench.metrics import scenario_metrics
from pytest_llmbench.slo_spec import parse_slo
from pytest_llmbench.telemetry.scraper import for_server
from pytest_llmbench.telemetry.timeline import Timeline
from pytest_llmbench.workload.arrivals import lag_metrics, lag_note, schedule
from pytest_llmbench.workload.progress import Progress
from pytest_llmbench.workload.prompts import exact_length_prompts
from pytest_llmbench.workload.records import RequestRecord
from pytest_llmbench.workload.requests import run_requests
from pytest_llmbench.workload.slo import slo_metrics

if TYPE_CHECKING:
    import httpx

    from pytest_llmbench.server import LLMServer

DATASETS = ("sharegpt", "random", "prompts")
WARMUP_MAX_TOKENS = 32


class WorkloadError(Exception):
    """The scenario could not run at all (not: some requests failed)."""


@dataclass(frozen=True)
class Scenario:
    """What to send. ``dataset``: "sharegpt" (real first turns), "random" (one ShareGPT prompt
    repeated to exactly ``input_len`` tokens), or "prompts" (the caller passes them to run_scenario).

    ``timeout_s`` bounds one request. ``stall_timeout_s`` is the scenario's stall budget: when no byte
    arrives on any of its connections for that long, the server is "not responding" and the whole
    scenario ends (requests in flight and not yet sent are recorded with that reason); set it above
    the longest expected time to first token (a 120k-token prefill at 4 users)."""

    name: str
    dataset: str = "sharegpt"
    input_len: int | None = None
    output_len: int = 256
    num_prompts: int = 8
    concurrency: int = 1
    warmup: int = 2
    seed: int = 1
    ignore_eos: bool = True
    flush_cache: bool = True
    temperature: float | None = 0.0
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = 600.0
    stall_timeout_s: float = 120.0
    # The server's /metrics (and the GPUs') read every this many seconds during the measured requests
    # (telemetry/); 0 reads nothing. Its cost on TPOT is not measured yet (docs/TELEMETRY.md).
    scrape_interval_s: float = 1.0
    # SLOs in ms by key (workload/slo.py: ttft, tpot, itl, e2el); "ttft:500,tpot:50" is read too.
    slo: Mapping[str, float] | str | None = None
    # Open loop (workload/arrivals.py): requests per second, gamma gaps of shape ``burstiness`` (1 =
    # Poisson) from ``seed``, the rate ramping up linearly over ``ramp_up_s``; ``concurrency`` then caps
    # the requests in flight (bench_serving's --max-concurrency). None: closed loop at ``concurrency``.
    request_rate: float | None = None
    burstiness: float = 1.0
    ramp_up_s: float = 0.0
    # Capacity under the SLO (capacity/): probe open-loop rates for the highest whose attainment's lower
    # bound clears the target; a mapping of capacity/search.py's CapacitySpec keys (target, start_rps, …).
    capacity: CapacitySpec | Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ValueError(f"scenario {self.name!r}: dataset must be one of {DATASETS}, got {self.dataset!r}")
        if self.dataset == "random" and not self.input_len:
            raise ValueError(f"scenario {self.name!r}: dataset 'random' needs input_len")
        for key in ("num_prompts", "concurrency", "output_len"):
            if getattr(self, key) < 1:
                raise ValueError(f"scenario {self.name!r}: {key} must be ≥ 1")
        if self.request_rate is not None and not self.request_rate > 0:
            raise ValueError(f"scenario {self.name!r}: request_rate must be > 0, got {self.request_rate!r}")
        if not self.burstiness > 0 or self.ramp_up_s < 0:
            raise ValueError(f"scenario {self.name!r}: burstiness must be > 0 and ramp_up_s ≥ 0")
        if self.slo is not None:  # a frozen field normalised once: an SLO spec error names the scenario
            object.__setattr__(self, "slo", parse_slo(self.slo, f"scenario {self.name!r}, key 'slo'"))
        if self.capacity is not None:
            object.__setattr__(
                self, "capacity", CapacitySpec.of(self.capacity, f"scenario {self.name!r}, key 'capacity'")
            )

    def send_times(self, n: int) -> list[float] | None:
        """The open-loop schedule for ``n`` requests (the same for every arm and round), or None."""
        if self.request_rate is None:
            return None
        return schedule(n, self.request_rate, burstiness=self.burstiness, seed=self.seed, ramp_up_s=self.ramp_up_s)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["extra_body"] = dict(self.extra_body)
        d["slo"] = dict(self.slo) if isinstance(self.slo, Mapping) else self.slo
        return d

    def body(self, prompt: Prompt, max_tokens: int | None = None) -> dict[str, Any]:
        b: dict[str, Any] = {
            "messages": prompt.chat(),  # the user's text, after the history a shared-prefix prompt resends
            "max_tokens": max_tokens or self.output_len,
        }
        if self.temperature is not None:
            b["temperature"] = self.temperature
        if self.ignore_eos:
            b["ignore_eos"] = True
        b.update(self.extra_body)
        return b


@dataclass
class ScenarioResult:
    scenario: Scenario
    records: list[RequestRecord]
    metrics: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    server_info: dict[str, Any] = field(default_factory=dict)
    spec_server: SpecStats | None = None
    host_load: HostLoad | None = None  # other processes over the measured requests
    telemetry: Timeline | None = None  # the server's /metrics (and GPUs) over the measured requests

    @property
    def errors(self) -> list[str]:
        return [f"request {r.index}: {r.error}" for r in self.records if not r.ok]


def build_prompts(server: LLMServer, sc: Scenario) -> list[Prompt]:
    if sc.dataset == "sharegpt":
        max_chars = 4 * sc.input_len if sc.input_len else 4000
        return sharegpt_prompts(sc.num_prompts, sc.seed, max_chars=max_chars)
    if sc.dataset == "random":
        return exact_length_prompts(server, sc.num_prompts, int(sc.input_len), sc.seed)  # type: ignore[arg-type]
    raise WorkloadError(f"scenario {sc.name!r}: dataset 'prompts' needs prompts=… passed to run_scenario")


def _key_hint(server: LLMServer, status: int) -> str:
    if status not in (401, 403):
        return ""
    if getattr(server.config, "api_key", None):
        return f"\nThe server refused the API key from ${server.config.api_key_env} (config {server.name!r})."
    return (
        "\nThe server wants an API key: name the environment variable that holds it with api_key_env "
        f"in config {server.name!r} ({server.config.source}); requests send it as a bearer token."
    )


def warmup_failed(server: LLMServer, sc: Scenario, error: str) -> str:
    """Why a scenario could not start: the config, the URL and the server's answer (HTTP status and body),
    and for a refused key what to set."""
    status = int(error[5:8]) if error.startswith("HTTP ") and error[5:8].isdigit() else 0
    return (
        f"config {server.name}: all {sc.warmup} warm-up requests of scenario {sc.name!r} to "
        f"{server.base_url}{server.engine.chat_path} failed: {error}{_key_hint(server, status)}\n"
        f"--- last 20 lines of {server.log_path} ---\n{server.log_tail(20)}"
    )


def refused(server: LLMServer, exc: httpx.HTTPStatusError) -> str:
    """A control call (tokenize, flush, …) the server answered with an HTTP error, in one message."""
    status = exc.response.status_code
    body = exc.response.text[:200].strip()
    return (
        f"config {server.name}: {exc.request.method} {exc.request.url} answered HTTP {status}: {body}"
        f"{_key_hint(server, status)}"
    )


def run_scenario(
    server: LLMServer, sc: Scenario, *, prompts: Sequence[Prompt | str] | None = None, reporter: Any = None
) -> ScenarioResult:
    """Run ``sc`` against ``server``; failed requests are recorded, never raised.

    Interrupted (Ctrl-C, a failing control-plane call), the exception carries the requests that did
    finish as ``exc.llmbench_partial`` (a ScenarioResult), so the caller can still write them.
    """
    if sc.capacity is not None:  # a search: each probe is this scenario at one rate (capacity/probe.py)
        if not sc.slo:
            raise WorkloadError(
                f"scenario {sc.name!r}: a capacity search needs an SLO (Scenario slo=, the config's slo key "
                "or --llmbench-slo)"
            )
        return run_capacity(sc, lambda probe: run_scenario(server, probe, prompts=prompts, reporter=reporter))
    notes: list[str] = []
    plist = (
        [p if isinstance(p, Prompt) else Prompt(p) for p in prompts]
        if prompts is not None
        else build_prompts(server, sc)
    )
    if not plist:
        raise WorkloadError(f"scenario {sc.name!r}: no prompts")
    plist = plist[: sc.num_prompts]

    if sc.warmup:
        warm = run_requests(
            server,
            [sc.body(plist[0], min(WARMUP_MAX_TOKENS, sc.output_len))] * sc.warmup,
            concurrency=1,
            timeout_s=sc.timeout_s,
            stall_timeout_s=sc.stall_timeout_s,
        )
        if not any(r.ok for r in warm):
            raise WorkloadError(warmup_failed(server, sc, warm[0].error or "no reason recorded"))
    if sc.flush_cache:
        note = server.flush_cache()
        if note:
            notes.append(note)

    before = server.spec_counters()
    progress = Progress(reporter, sc.name, len(plist))
    done: list[RequestRecord] = []

    def on_done(rec: RequestRecord) -> None:
        done.append(rec)
        progress.update(rec)

    scrape = for_server(server, sc.scrape_interval_s).start()
    load_before = host_load.snapshot()
    t0 = time.perf_counter()
    try:
        records = run_requests(
            server,
            [sc.body(p) for p in plist],
            concurrency=sc.concurrency,
            timeout_s=sc.timeout_s,
            stall_timeout_s=sc.stall_timeout_s,
            on_done=on_done,
            send_at=sc.send_times(len(plist)),
        )
    except BaseException as exc:
        progress.close()
        scrape.stop()
        kept = sorted(done, key=lambda r: r.index)
        partial = _result(
            sc,
            kept,
            plist,
            time.perf_counter() - t0,
            None,
            [*notes, f"interrupted ({type(exc).__name__}) after {len(kept)} of {len(plist)} requests"],
            {},
        )
        # An attribute BaseException does not declare (the caller reads it with getattr): setattr, for mypy.
        setattr(exc, "llmbench_partial", partial)  # noqa: B010
        raise
    duration = time.perf_counter() - t0
    progress.close()
    timeline = scrape.stop()
    load = host_load.between(load_before, host_load.snapshot(), server_pids(server))
    # A dying process resets its sockets before it can be reaped: failed requests wait for it to settle.
    alive = server.settled_alive() if any(not r.ok for r in records) else server.alive()
    hung = alive and any(
        (r.error or "").startswith(("server not responding", "not sent: server not responding")) for r in records
    )
    if not alive:
        notes.append(f"server exited during the scenario ({describe_exit(server.handle.exit_code())})")
    elif hung:
        notes.append("server stopped responding during the scenario")
    responding = alive and not hung  # a hung server would hang each control-plane call too
    spec_server = server.spec_between(before, server.spec_counters()) if responding else None
    result = _result(sc, records, plist, duration, spec_server, notes, server.server_info() if responding else {})
    result.host_load, result.telemetry = load, timeline if sc.scrape_interval_s > 0 else None
    read = getattr(server.engine, "cached_tokens", lambda final: None)
    cached = [c for c in (read(r.final) for r in records if r.ok) if c is not None]
    if cached and sum(t for _, t in cached):  # the share of prompt tokens the server did not compute again
        result.metrics["prefix_cache_hit_rate"] = sum(c for c, _ in cached) / sum(t for _, t in cached)
    return result


def server_pids(server: LLMServer) -> list[int]:
    """The server's own processes (a container's are not pytest's children), for the host load."""
    try:
        return list(server.handle.pids())
    except Exception:  # a handle that cannot list them: pytest's descendants still count as ours
        return []


def _result(
    sc: Scenario,
    records: list[RequestRecord],
    plist: list[Prompt],
    duration: float,
    spec_server: SpecStats | None,
    notes: list[str],
    info: dict[str, Any],
) -> ScenarioResult:
    for r in records:
        p = plist[r.index] if r.index < len(plist) else None
        if r.prompt_tokens is None and p is not None and p.input_tokens is not None:
            r.prompt_tokens = p.input_tokens
    metrics: dict[str, Any] = {**scenario_metrics(records, duration, spec_server)}  # open to more keys
    if sc.slo:
        metrics.update(slo_metrics(records, duration, sc.slo))  # type: ignore[arg-type]  # parsed in __post_init__
    if sc.request_rate is not None:
        metrics["request_rate"] = sc.request_rate
        metrics.update(lag_metrics(records, sc.request_rate))
        note = lag_note(metrics, sc.request_rate)
        if note:
            notes = [*notes, note]
    return ScenarioResult(sc, records, metrics, notes, info, spec_server)
