"""Ctrl-C and SIGTERM in the session's own process: one interrupt, then an orderly end.

SIGTERM is how CI systems cancel a job, so it is handled as Ctrl-C is: the first one raises
:class:`Terminated` (a ``KeyboardInterrupt``) where the session is, so the scenario in flight keeps its
finished requests, pytest stops collecting and running, the servers are stopped and the summary is
written; the process then exits 143 (128 + SIGTERM), as a shell reports a job that died of it.

Once the session is interrupted or ending, a second signal no longer raises: it cannot cut the servers'
stop or the summary in half (a second Ctrl-C used to escape as a traceback, with the records saying
"exit status 0"). A third Ctrl-C gives up on the orderly end. Only the controller's main thread installs
these (an xdist worker keeps launchers/base.py's stop-and-die), and only over Python's default Ctrl-C
handler: a session started with SIGINT ignored (a background job) keeps ignoring it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: 128 + SIGTERM: the exit status of a session cancelled with SIGTERM.
TERMINATED_EXIT = 128 + signal.SIGTERM
#: 128 + SIGINT: a command (nightly, bisect) stopped with Ctrl-C, as a shell reports it.
INTERRUPTED_EXIT = 128 + signal.SIGINT
GIVE_UP_AFTER = 3  # Ctrl-C presses


class Terminated(KeyboardInterrupt):
    """The session received SIGTERM."""


@dataclass
class State:
    """What this process has received; ``finishing`` once the session's end is under way."""

    received: list[str] = field(default_factory=list)
    finishing: bool = False
    previous: dict[int, Any] = field(default_factory=dict)

    @property
    def terminated(self) -> bool:
        return "SIGTERM" in self.received


state = State()


def _say(text: str) -> None:
    """Straight to fd 2 (no Python-level lock to deadlock on inside a handler); the terminal summary says
    it again, since pytest may be capturing fd 2 at this moment."""
    try:
        os.write(2, f"\n[llmbench] {text}\n".encode())
    except OSError:
        pass


def _on_signal(signum: int, frame: Any) -> None:
    name = signal.Signals(signum).name
    state.received.append(name)
    if len(state.received) == 1 and not state.finishing:
        state.finishing = True
        raise Terminated("SIGTERM") if name == "SIGTERM" else KeyboardInterrupt
    presses = state.received.count("SIGINT")
    if name == "SIGINT" and presses >= GIVE_UP_AFTER:
        uninstall()
        raise KeyboardInterrupt
    _say(
        f"{name} received while the session ends: stopping its servers and writing its summary"
        + (f" (Ctrl-C {GIVE_UP_AFTER - presses} more time(s) to abandon that)" if name == "SIGINT" else "")
    )


def install() -> None:
    """Handle SIGTERM (and Ctrl-C, unless ignored) in this process; the main thread only."""
    if threading.current_thread() is not threading.main_thread() or state.previous:
        return
    state.received.clear()
    state.finishing = False
    state.previous[signal.SIGTERM] = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _on_signal)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        state.previous[signal.SIGINT] = signal.default_int_handler
        signal.signal(signal.SIGINT, _on_signal)


def ending() -> None:
    """The session's end has begun (interrupted or not): a signal from now on does not raise."""
    state.finishing = True


def uninstall() -> None:
    """Put back the handlers :func:`install` replaced (an in-process pytester run ends)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, handler in state.previous.items():
        signal.signal(signum, handler)
    state.previous.clear()


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """:func:`install` for a command that runs pytest sessions as children (nightly, bisect), and put the
    handlers back after; a no-op where they are installed already (the command run inside a session)."""
    mine = threading.current_thread() is threading.main_thread() and not state.previous
    if mine:
        install()
    try:
        yield
    finally:
        if mine:
            uninstall()


def forward(child: subprocess.Popen[Any], error: BaseException) -> None:
    """The parent of a running pytest session was interrupted: pass SIGTERM on to the session. A CI cancel or
    a pod's stop signals the parent alone, and a session left behind would run its servers on to its end (or
    die with the pod, its containers left); a Ctrl-C at a terminal reached the whole process group already."""
    if isinstance(error, Terminated) and child.poll() is None:
        child.send_signal(signal.SIGTERM)


def exit_status(error: BaseException) -> int:
    """A command's exit status after ``error`` (an interrupt): 143 for SIGTERM, 130 for Ctrl-C."""
    return TERMINATED_EXIT if isinstance(error, Terminated) else INTERRUPTED_EXIT


def reraise_received() -> None:
    """A step that caught the interrupt itself (bisect's ``main`` keeps its steps and returns) has ended:
    raise it again for the command around it, which must not carry on as if the step had finished."""
    if state.received:
        raise Terminated("SIGTERM") if state.terminated else KeyboardInterrupt
