"""How a server process comes to life and dies, independent of which engine it is.

A launcher starts something that serves HTTP on 127.0.0.1:port and writes its log to a file, and can
stop it completely (every child included). Every live handle is tracked so that a session that ends
badly — Ctrl-C, an exception, SIGTERM from an xdist controller — still stops what it started.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pytest_llmbench.config import ServerConfig
    from pytest_llmbench.engines.base import Engine


@dataclass
class LaunchRequest:
    """Everything a launcher needs to start one server."""

    config: ServerConfig
    engine: Engine
    host: str
    port: int
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    gpu_ids: tuple[str, ...] = ()
    image: str | None = None


#: What a death by signal usually means for a serving process, said next to the exit code.
_SIGNAL_HINTS = {
    "SIGILL": "illegal instruction: the binary uses CPU instructions this machine cannot run; rebuild it here",
    "SIGKILL": "killed from outside, often by the kernel's out-of-memory killer (see dmesg)",
    "SIGSEGV": "the engine crashed",
    "SIGABRT": "the engine aborted (see the log tail)",
}


def describe_exit(code: int | None) -> str:
    """``code -9 (SIGKILL: killed from outside…)``: a process's exit as people read it."""
    if code is None:
        return "exit code unknown"
    if code >= 0:
        return f"code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"code {code}"
    hint = _SIGNAL_HINTS.get(name)
    return f"code {code}, {name}" + (f": {hint}" if hint else "")


class Handle(Protocol):
    """A started server. A handle may also carry ``identity``: a dict naming the build it runs
    (``binary``/``image``, ``build``; see launchers/identity.py), which the server record keeps."""

    description: str

    def alive(self) -> bool: ...

    def exit_code(self) -> int | None: ...

    def stop(self, grace: float = 15.0) -> None: ...

    def pids(self) -> list[int]: ...


class Launcher(Protocol):
    """Starts servers; registered as an instance (built with its options) by ``pytest_llmbench_launchers``."""

    name: str
    #: Runs a container image (``image:``, ``--llmbench-image``, ``--llmbench-reference-image``); a launcher
    #: without it runs a program on this host (``--llmbench-reference-bin`` swaps that program).
    runs_images: bool

    def validate(self, cfg: ServerConfig) -> tuple[str, str] | None:
        """(key, message) when this launcher cannot start ``cfg`` (checked before any server starts)."""
        ...

    def start(self, req: LaunchRequest) -> Handle: ...


_live: set[Handle] = set()
_lock = threading.Lock()


def track(handle: Handle) -> None:
    with _lock:
        _live.add(handle)


def untrack(handle: Handle) -> None:
    with _lock:
        _live.discard(handle)


def live_handles() -> list[Handle]:
    with _lock:
        return list(_live)


def stop_all(grace: float = 5.0) -> list[str]:
    """Stop every server this process started and has not stopped yet; one that cannot be stopped does
    not keep the others running. Returns what could not be stopped (also printed to stderr)."""
    errors = []
    for h in live_handles():
        try:
            h.stop(grace)
        except Exception as e:
            errors.append(f"{h.description}: {e}")
            print(f"pytest-llmbench: could not stop {h.description}: {e}", file=sys.stderr)
        finally:
            untrack(h)
    return errors


def _on_signal(signum, frame):  # pragma: no cover - exercised through subprocess tests
    """SIGTERM/SIGHUP: stop every server, then die of the signal as the sender asked. (Raising SystemExit
    here is not enough: pytest records it as the running test's error and goes on starting servers.)"""
    stop_all()
    previous = _previous.get(signum)
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


_previous: dict[int, object] = {}
_installed = False


def install_cleanup() -> None:
    """Stop live servers at interpreter exit and on SIGTERM/SIGHUP (xdist kills workers this way)."""
    global _installed
    if _installed:
        return
    _installed = True
    atexit.register(stop_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            _previous[sig] = signal.getsignal(sig)
            signal.signal(sig, _on_signal)
