"""A running server: config + engine + launcher + a control-plane client, started once per config.

``start_server`` picks a free port on 127.0.0.1, launches, and polls the engine's health endpoint
until ready; a failed or timed-out start raises :class:`ServerStartError` with the last 40 lines of
the server log, which stays in ``<results>/<config>/server.log``.

Control-plane calls (tokenize, flush, metrics, props) that get no answer in time mark the server "not
responding" and raise :class:`ServerNotResponding` naming the server and the call, so later tests fail
at once instead of each waiting again; inside :meth:`LLMServer.stall_budget` they wait no longer than
the scenario's stall budget.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from pytest_llmbench import redact
from pytest_llmbench.config import ServerConfig
from pytest_llmbench.engines.base import Engine, SpecStats
from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.launchers.base import Handle, LaunchRequest, describe_exit
from pytest_llmbench.registry import Registry
from pytest_llmbench.transport.http import bearer

HOST = "127.0.0.1"
LOG_TAIL_LINES = 40
T = TypeVar("T")


class ServerStartError(LlmbenchError, RuntimeError):
    """The server did not become ready; the message carries the log tail (secrets scrubbed)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact.scrub(message))


class ServerNotResponding(LlmbenchError):
    """A control-plane call got no answer in time; the server is marked not responding."""


class _ControlClient(httpx.Client):
    """The control-plane client: waits at most ``cap_s`` for any byte (the scenario's stall budget, when
    one is running) and remembers the last call that timed out, even where an engine swallows the error."""

    cap_s: float | None = None
    timed_out: tuple[str, float] | None = None  # ("POST /tokenize", seconds waited)

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        limits = dict(request.extensions.get("timeout") or {})
        if self.cap_s is not None:
            limits = {k: self.cap_s if v is None else min(v, self.cap_s) for k, v in limits.items()}
            request.extensions["timeout"] = limits
        try:
            return super().send(request, **kwargs)
        except httpx.TimeoutException:
            waited = max((v for v in limits.values() if v is not None), default=0.0)
            self.timed_out = (f"{request.method} {request.url.path}", waited)
            raise


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
    #: Set when a scenario found the server alive but silent (paused, deadlocked): later tests fail fast.
    not_responding: str | None = None
    _client: _ControlClient | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def build(self) -> dict[str, Any]:
        """The build it runs, as its launcher named it (program folder or image, and a ``build`` that tells
        two builds apart: launchers/identity.py); empty for a launcher that names none."""
        return dict(getattr(self.handle, "identity", None) or {})

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def client(self) -> httpx.Client:
        """A control-plane client (health, tokenize, flush, metrics); not for the load itself."""
        return self._control_client()

    def _control_client(self) -> _ControlClient:
        if self._client is None:
            self._client = _ControlClient(base_url=self.base_url, timeout=60.0, headers=bearer(self.config.api_key))
        return self._client

    @contextlib.contextmanager
    def stall_budget(self, seconds: float) -> Iterator[None]:
        """Control calls made meanwhile wait no longer than ``seconds`` for a byte (a scenario's
        ``stall_timeout_s``: a paused server ends the scenario in one budget, tokenizing included)."""
        client = self._control_client()
        before, client.cap_s = client.cap_s, seconds
        try:
            yield
        finally:
            client.cap_s = before

    def _control(self, call: Callable[[httpx.Client], T], *, informative: bool = False) -> T:
        """Run one engine control call. A timeout in it (raised, or swallowed by the engine) marks this
        server not responding and raises ServerNotResponding naming the server and the call; for an
        ``informative`` call whose engine swallowed it, the engine's empty answer is returned instead
        (the scenario's records are kept and ``bench.run`` fails the test on the mark)."""
        if self.not_responding:  # hung earlier: do not wait out another timeout
            raise ServerNotResponding(f"server {self.name} {self.not_responding}")
        client = self._control_client()
        client.timed_out = None
        try:
            out = call(client)
        except httpx.TimeoutException:
            if client.timed_out is None:
                raise
            swallowed = False
        else:
            if client.timed_out is None:
                return out
            swallowed = True
        what, waited = client.timed_out
        budget = f" (stall_timeout_s={client.cap_s:g})" if client.cap_s is not None and waited >= client.cap_s else ""
        self.not_responding = f"not responding: {what} got no answer in {waited:g} s{budget}"
        if informative and swallowed:
            return out
        raise ServerNotResponding(f"server {self.name} {self.not_responding}")

    def alive(self) -> bool:
        return self.handle.alive()

    def settled_alive(self, wait_s: float = 1.0) -> bool:
        """``alive()`` after giving a process that is dying (its sockets already reset) time to exit."""
        deadline = time.monotonic() + wait_s
        while self.handle.alive():
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.05)
        return False

    def problem(self) -> str | None:
        """Why this server cannot serve a test (exited, or not responding), or None."""
        if not self.handle.alive():
            return f"exited ({describe_exit(self.handle.exit_code())})"
        return self.not_responding

    def gone_message(self, during: str, lines: int = 20) -> str:
        """What a test says when its server died or hung: which, when, and the log tail."""
        return redact.scrub(
            f"server {self.name} {self.problem() or 'failed'} {during}\n"
            f"--- last {lines} lines of {self.log_path} ---\n{self.log_tail(lines)}"
        )

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return log_tail(self.log_path, lines)

    # Engine operations bound to this server --------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        return self._control(lambda c: self.engine.tokenize(c, text))

    def detokenize(self, ids: list[int]) -> str:
        return self._control(lambda c: self.engine.detokenize(c, ids))

    def flush_cache(self) -> str | None:
        return self._control(self.engine.flush_cache)

    def spec_counters(self) -> dict[str, float] | None:
        return self._control(self.engine.spec_counters, informative=True)

    def spec_between(self, before: dict[str, float] | None, after: dict[str, float] | None) -> SpecStats | None:
        if before is None or after is None:
            return None
        return self.engine.spec_from_counters(before, after)

    def server_info(self) -> dict[str, Any]:
        return self._control(self.engine.server_info, informative=True)

    def facts(self) -> dict[str, Any]:
        """Startup time and the sizes the server chose (resources.json)."""
        facts = {"startup_s": round(self.startup_s, 3)}
        log_text = self.log_path.read_text(errors="replace")
        facts.update(self._control(lambda c: self.engine.server_facts(c, log_text)))
        return facts

    def stop(self, grace: float = 15.0) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self.handle.stop(grace)


#: Log lines of a server that lost the race for its port (picked free, taken before it bound).
_PORT_TAKEN = ("couldn't bind", "address already in use", "port is already allocated", "errno 98")
PORT_ATTEMPTS = 3
#: Readiness is polled every FAST_POLL_S for the first FAST_POLL_WINDOW_S of a start, then every ``poll_interval``:
#: a small model is up in one to two seconds, where a fixed 0.25 s poll added ~0.1 s on average to every start
#: (a test suite starts dozens), while a long GPU start is not polled 20 times a second for minutes.
FAST_POLL_S = 0.05
FAST_POLL_WINDOW_S = 5.0


def start_server(
    cfg: ServerConfig,
    server_dir: Path,
    *,
    gpu_ids: tuple[str, ...] = (),
    image: str | None = None,
    poll_interval: float = 0.25,
    registry: Registry | None = None,
) -> LLMServer:
    """Start ``cfg`` and wait until its health endpoint says ready.

    The engine and launcher come from ``registry`` (the session's, filled by the hooks; the built-ins
    when None). A free port is picked on 127.0.0.1 and released for the server to bind; if another
    process takes it in between, the start is retried on a new port (noted in the log)."""
    registry = registry or Registry.builtin()
    try:
        registry.check(cfg)
    except LlmbenchError as e:
        raise ServerStartError(f"config {cfg.name}: {e}") from e
    server_dir.mkdir(parents=True, exist_ok=True)
    log_path = server_dir / "server.log"
    engine = registry.engine(cfg.engine)
    engine.configure(cfg)
    register_secrets(cfg, engine)  # before anything that may echo the command line
    launcher = registry.launcher(cfg.launcher)
    t0 = time.monotonic()
    with open(log_path, "a") as log:
        log.write(f"[llmbench] starting config {cfg.name} ({cfg.engine}/{cfg.launcher})\n")
        try:
            engine.prepare(cfg, log)
        except Exception as e:
            raise ServerStartError(
                f"config {cfg.name}: preparing failed: {e}\n--- last lines of {log_path} ---\n{log_tail(log_path)}"
            ) from e
    for attempt in range(1, PORT_ATTEMPTS + 1):
        port = free_port()
        try:
            server = _launch(cfg, engine, launcher, port, log_path, gpu_ids, image, t0, poll_interval)
        except _PortTaken:
            if attempt == PORT_ATTEMPTS:
                raise ServerStartError(
                    f"config {cfg.name}: port {port} was taken before the server could bind it, "
                    f"{PORT_ATTEMPTS} times in a row\n--- last lines of {log_path} ---\n"
                    f"{log_tail(log_path)}"
                ) from None
            with open(log_path, "a") as log:
                log.write(f"[llmbench] port {port} was taken before the server bound it: retrying on another port\n")
            continue
        server.startup_s = time.monotonic() - t0
        server.info = engine.server_info(server.client)
        return server
    raise AssertionError("unreachable")


def register_secrets(cfg: ServerConfig, engine: Engine) -> None:
    """Every secret ``cfg`` carries — secret-named env values, the values of secret flags (short forms read
    from the engine's CLI), its API key — is scrubbed from every output from now on."""
    redact.register_options(engine.cli_options(cfg))
    redact.register(v for k, v in cfg.env.items() if redact.is_secret_name(k))
    redact.register(redact.secret_args(cfg.args))
    redact.register([cfg.api_key] if cfg.api_key else [])


class _PortTaken(Exception):
    pass


def _launch(
    cfg: ServerConfig,
    engine: Engine,
    launcher: Any,
    port: int,
    log_path: Path,
    gpu_ids: tuple[str, ...],
    image: str | None,
    t0: float,
    poll_interval: float,
) -> LLMServer:
    log_start = log_path.stat().st_size if log_path.exists() else 0
    req = LaunchRequest(
        config=cfg, engine=engine, host=HOST, port=port, log_path=log_path, gpu_ids=gpu_ids, image=image
    )  # image None: the config's (or --llmbench-image); an arm's explicit image is kept as given
    try:
        handle = launcher.start(req)
    except Exception as e:
        if any(m in str(e).lower() for m in _PORT_TAKEN):
            raise _PortTaken() from e
        raise ServerStartError(
            f"config {cfg.name}: could not launch: {e}\n--- last lines of {log_path} ---\n{log_tail(log_path)}"
        ) from e
    server = LLMServer(config=cfg, engine=engine, handle=handle, port=port, log_path=log_path, gpu_ids=gpu_ids)
    deadline = t0 + cfg.startup_timeout
    try:
        while True:
            if not handle.alive():
                with open(log_path, "rb") as f:
                    f.seek(log_start)
                    said = f.read().decode("utf-8", "replace").lower()  # read once, then look for each marker
                if any(m in said for m in _PORT_TAKEN):
                    raise _PortTaken()
                raise ServerStartError(
                    f"config {cfg.name}: server exited ({describe_exit(handle.exit_code())}) before becoming ready "
                    f"({handle.description})\n--- last {LOG_TAIL_LINES} lines of {log_path} ---\n{log_tail(log_path)}"
                )
            if engine.is_ready(server.client):
                return server
            if time.monotonic() > deadline:
                raise ServerStartError(
                    f"config {cfg.name}: not ready after {cfg.startup_timeout:g} s (startup_timeout) "
                    f"polling {engine.health_path}\n--- last {LOG_TAIL_LINES} lines of {log_path} ---\n"
                    f"{log_tail(log_path)}"
                )
            fast = time.monotonic() - t0 < FAST_POLL_WINDOW_S
            time.sleep(min(poll_interval, FAST_POLL_S) if fast else poll_interval)
    except BaseException:
        server.stop(grace=5.0)
        raise
