"""A running server: config + engine + launcher + a control-plane client, started once per config.

``start_server`` picks a free port on 127.0.0.1, launches, and polls the engine's health endpoint
until ready; a failed or timed-out start raises :class:`ServerStartError` with the last 40 lines of
the server log, which stays in ``<results>/<config>/server.log``.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from pytest_llmbench.config import ServerConfig
from pytest_llmbench.engines import Engine, SpecStats, get_engine
from pytest_llmbench.launchers import LAUNCHERS, Handle, LaunchRequest

HOST = "127.0.0.1"
LOG_TAIL_LINES = 40


class ServerStartError(RuntimeError):
    """The server did not become ready; the message carries the log tail."""


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            return b"".join(deque(f, maxlen=lines)).decode("utf-8", "replace")
    except OSError:
        return "(no server log)"


@dataclass
class LLMServer:
    """What a bench test gets from the ``llm_server`` fixture."""

    config: ServerConfig
    engine: Engine
    handle: Handle
    port: int
    log_path: Path
    startup_s: float = 0.0
    gpu_ids: tuple[str, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)
    _client: httpx.Client | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def client(self) -> httpx.Client:
        """A control-plane client (health, tokenize, flush, metrics); not for the load itself."""
        if self._client is None:
            self._client = httpx.Client(base_url=self.base_url, timeout=60.0)
        return self._client

    def alive(self) -> bool:
        return self.handle.alive()

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return log_tail(self.log_path, lines)

    # Engine operations bound to this server --------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        return self.engine.tokenize(self.client, text)

    def detokenize(self, ids: list[int]) -> str:
        return self.engine.detokenize(self.client, ids)

    def flush_cache(self) -> str | None:
        return self.engine.flush_cache(self.client)

    def spec_counters(self) -> dict[str, float] | None:
        return self.engine.spec_counters(self.client)

    def spec_between(self, before: dict[str, float] | None, after: dict[str, float] | None) -> SpecStats | None:
        if before is None or after is None:
            return None
        return self.engine.spec_from_counters(before, after)

    def server_info(self) -> dict[str, Any]:
        return self.engine.server_info(self.client)

    def facts(self) -> dict[str, Any]:
        """Startup time and the sizes the server chose (resources.json)."""
        facts = {"startup_s": round(self.startup_s, 3)}
        facts.update(self.engine.server_facts(self.client, self.log_path.read_text(errors="replace")))
        return facts

    def stop(self, grace: float = 15.0) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self.handle.stop(grace)


def start_server(cfg: ServerConfig, server_dir: Path, *, gpu_ids: tuple[str, ...] = (),
                 image: str | None = None, poll_interval: float = 0.25) -> LLMServer:
    """Start ``cfg`` and wait until its health endpoint says ready."""
    server_dir.mkdir(parents=True, exist_ok=True)
    log_path = server_dir / "server.log"
    engine = get_engine(cfg.engine)
    engine.configure(cfg)
    launcher = LAUNCHERS[cfg.launcher]()
    t0 = time.monotonic()
    with open(log_path, "a") as log:
        log.write(f"[llmbench] starting config {cfg.name} ({cfg.engine}/{cfg.launcher})\n")
        try:
            engine.prepare(cfg, log)
        except Exception as e:
            raise ServerStartError(f"config {cfg.name}: preparing failed: {e}\n--- last lines of {log_path} ---\n"
                                   f"{log_tail(log_path)}") from e
    port = free_port()
    req = LaunchRequest(config=cfg, engine=engine, host=HOST, port=port, log_path=log_path,
                        gpu_ids=gpu_ids, image=image or cfg.image)
    try:
        handle = launcher.start(req)
    except Exception as e:
        raise ServerStartError(f"config {cfg.name}: could not launch: {e}\n--- last lines of {log_path} ---\n"
                               f"{log_tail(log_path)}") from e
    server = LLMServer(config=cfg, engine=engine, handle=handle, port=port, log_path=log_path, gpu_ids=gpu_ids)
    deadline = t0 + cfg.startup_timeout
    try:
        while True:
            if not handle.alive():
                raise ServerStartError(
                    f"config {cfg.name}: server exited with code {handle.exit_code()} before becoming ready "
                    f"({handle.description})\n--- last {LOG_TAIL_LINES} lines of {log_path} ---\n{log_tail(log_path)}")
            if engine.is_ready(server.client):
                break
            if time.monotonic() > deadline:
                raise ServerStartError(
                    f"config {cfg.name}: not ready after {cfg.startup_timeout:.0f} s (startup_timeout) "
                    f"polling {engine.health_path}\n--- last {LOG_TAIL_LINES} lines of {log_path} ---\n"
                    f"{log_tail(log_path)}")
            time.sleep(poll_interval)
    except BaseException:
        server.stop(grace=5.0)
        raise
    server.startup_s = time.monotonic() - t0
    server.info = engine.server_info(server.client)
    return server
