"""What the plugin needs to know about a serving engine, behind one small interface.

An engine adapter knows how to launch its server, when it is ready, how to flush its prefix cache,
tokenize, which request fields it needs, and where its speculative-decoding statistics live. It holds
no state about a running server: the server handle (:mod:`pytest_llmbench.server`) passes itself in.
Adding an engine = one module here + one line in ``engines/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import httpx

from pytest_llmbench.redact import CliOption

if TYPE_CHECKING:
    from pytest_llmbench.config import ServerConfig


@dataclass(frozen=True)
class SpecStats:
    """Speculative-decoding counts for one request or one window of the server's counters.

    ``accept_length`` is tokens per verify step (SGLang's definition: completion tokens / verify
    steps); ``drafted``/``accepted`` are draft tokens proposed and accepted where the engine says.
    """

    accept_length: float | None
    drafted: int | None = None
    accepted: int | None = None
    verify_steps: int | None = None
    source: str = ""


class Engine:
    """Base adapter: OpenAI-compatible routes; subclasses fill in the engine's specifics."""

    name: ClassVar[str] = ""
    health_path: ClassVar[str] = "/health"
    chat_path: ClassVar[str] = "/v1/chat/completions"
    completions_path: ClassVar[str] = "/v1/completions"
    #: The server program a local binary folder holds (``--llmbench-reference-bin``); None: not a local binary.
    binary_name: ClassVar[str | None] = None

    # ---- capabilities: what the rest of the plugin may rely on, declared, never probed ------------
    #: The engine's typed-decision route (a decision client of that shape answers through it); None:
    #: decisions fall back to first-token logprobs on ``chat_path``.
    decision_route: ClassVar[str | None] = None
    #: Request fields that make the engine compute the whole prompt afresh (no prefix reuse), and the
    #: fields that ask for reuse explicitly; empty where a cache flush is the only way.
    uncached_fields: ClassVar[Mapping[str, Any]] = {}
    cached_fields: ClassVar[Mapping[str, Any]] = {}
    #: The Docker launcher gives the container the host's IPC namespace (engines whose processes share
    #: tensors through /dev/shm) instead of a private /dev/shm of a fixed size.
    docker_host_ipc: ClassVar[bool] = False
    #: The engine's Prometheus names in the telemetry vocabulary (``telemetry/timeline.py`` VOCABULARY):
    #: word → (series name, "gauge" or "counter"). A new engine fills this in; nothing else changes.
    metric_names: ClassVar[Mapping[str, tuple[str, Literal["gauge", "counter"]]]] = {}

    # ---- configuration ----------------------------------------------------------------------
    #: Flags the plugin sets itself (model, host, port); a config that passes one is an error.
    reserved_flags: ClassVar[tuple[str, ...]] = ("--host", "--port")

    @classmethod
    def validate(cls, cfg: ServerConfig) -> tuple[str, str] | None:
        """Return (key, message) when the config cannot work with this engine."""
        for flag in cls.reserved_flags:
            if flag in cfg.args:
                return "args", f"{flag} is set by the plugin (model from 'model', a free port on 127.0.0.1); remove it"
        return None

    def command(self, cfg: ServerConfig, host: str, port: int) -> list[str]:
        """The server's command line (for launchers that run a process)."""
        raise NotImplementedError

    def configure(self, cfg: ServerConfig) -> None:
        """Bind the adapter to the config it serves (called once, before launch)."""

    def prepare(self, cfg: ServerConfig, log: Any) -> None:
        """Make anything the command line refers to that does not exist yet (derived models)."""

    def child_env(self, cfg: ServerConfig) -> dict[str, str]:
        """Environment the engine needs beyond the config's own ``env``."""
        return {}

    def cli_options(self, cfg: ServerConfig) -> list[CliOption]:
        """The server's options as its own CLI lists them (every spelling, whether a value follows), so a
        secret option is masked under its short form too (``-hft`` for ``--hf-token``) and a secret-named
        switch does not hide the next flag. Empty: the flags' own names decide."""
        return []

    @staticmethod
    def served_model_name(cfg: ServerConfig) -> str:
        """The model name an OpenAI-compatible server answers to (vLLM rejects any other)."""
        return flag_value(cfg.args, "--served-model-name") or cfg.model.placeholder()

    # ---- readiness and control plane --------------------------------------------------------
    def is_ready(self, client: httpx.Client) -> bool:
        """One poll of the health endpoint: True when ready, False while loading."""
        try:
            r = client.get(self.health_path, timeout=5.0)
        except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError, httpx.TimeoutException):
            return False
        return r.status_code == 200

    def flush_cache(self, client: httpx.Client) -> str | None:
        """Empty the prefix cache before a scenario. Returns a note when it could not be done."""
        return "this engine has no cache flush; requests disable prompt caching instead"

    def tokenize(self, client: httpx.Client, text: str) -> list[int]:
        raise NotImplementedError(f"{self.name} has no tokenize route")

    def detokenize(self, client: httpx.Client, ids: list[int]) -> str:
        raise NotImplementedError(f"{self.name} has no detokenize route")

    def server_info(self, client: httpx.Client) -> dict[str, Any]:
        """What the server says about itself, recorded with every result."""
        return {}

    def server_facts(self, client: httpx.Client, log_text: str) -> dict[str, Any]:
        """Sizes the server chose at startup (KV pool, slots, context) for resources.json."""
        return {}

    def log_cached_share(self, log_text: str) -> float | None:
        """Share of prompt tokens served from the prefix cache, read from the server's log (for routes
        that return no usage); None when this engine's log does not say."""
        return None

    # ---- requests ---------------------------------------------------------------------------
    def request_fields(self, cfg: ServerConfig) -> dict[str, Any]:
        """Fields every chat request to this engine carries (e.g. SGLang's return_meta_info)."""
        return {}

    def cached_tokens(self, final: dict[str, Any]) -> tuple[int, int] | None:
        """(prompt tokens served from the prefix cache, prompt tokens) of one request from its last
        chunk, or None where the response does not say (OpenAI ``usage.prompt_tokens_details``)."""
        usage = final.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        total = usage.get("prompt_tokens")
        if not isinstance(cached, int) or not isinstance(total, int) or total <= 0:
            return None
        return cached, total

    def request_spec(self, final: dict[str, Any], completion_tokens: int | None) -> SpecStats | None:
        """Per-request speculative stats from the last chunk(s) of a streamed response."""
        return None

    def spec_counters(self, client: httpx.Client) -> dict[str, float] | None:
        """A snapshot of the server's cumulative speculative counters, or None."""
        return None

    def spec_from_counters(self, before: dict[str, float], after: dict[str, float]) -> SpecStats | None:
        """Speculative stats for the window between two counter snapshots."""
        return None


def flag_value(args: tuple[str, ...] | list[str], flag: str, default: str | None = None) -> str | None:
    """The value after ``flag`` on a command line, or ``default``."""
    args = list(args)
    if flag in args[:-1]:
        return args[args.index(flag) + 1]
    return default


def parse_prometheus(text: str) -> dict[str, float]:
    """Prometheus text format → {"name{labels}": value}; comments skipped, labels kept verbatim."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        try:
            key, value = (
                line.rsplit(None, 1)
                if "}" not in line
                else (line[: line.rindex("}") + 1], line[line.rindex("}") + 1 :])
            )
            out[key.strip()] = float(value.split()[0])
        except (ValueError, IndexError):
            continue
    return out


def sum_series(metrics: dict[str, float], name: str) -> float | None:
    """Sum one Prometheus series over its label sets (one per model/engine); None if absent."""
    values = [v for k, v in metrics.items() if k == name or k.startswith(name + "{")]
    return sum(values) if values else None


def fetch_metrics(client: httpx.Client) -> dict[str, float] | None:
    """GET /metrics, parsed; None when the server has no metrics route (or it failed)."""
    try:
        r = client.get("/metrics", timeout=10.0)
    except httpx.HTTPError:
        return None
    return parse_prometheus(r.text) if r.status_code == 200 else None


def counter_delta(before: dict[str, float], after: dict[str, float], name: str) -> float | None:
    if name not in after:
        return None
    return after[name] - before.get(name, 0.0)
