"""Run the server as a child process in its own process group.

The child leads a new session so that SIGTERM/SIGKILL reach its whole tree (SGLang forks scheduler
and detokenizer processes); on Linux it also gets PR_SET_PDEATHSIG so it dies with us even when we
are killed with SIGKILL (an xdist worker crash), where no cleanup code can run.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from typing import Any

from pytest_llmbench import redact
from pytest_llmbench.launchers.base import Handle, LaunchRequest, track, untrack
from pytest_llmbench.launchers.identity import program_identity

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except OSError:
            pass


class ProcessHandle:
    def __init__(self, proc: subprocess.Popen, description: str):
        self.proc = proc
        self.description = description
        self.pgid = proc.pid  # leader of its own session
        self.identity: dict[str, str] = {}  # the program's build (launchers/identity.py)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def pids(self) -> list[int]:
        return _group_members(self.pgid)

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM the whole group, wait up to ``grace`` s, then SIGKILL whatever is left."""
        try:
            if self.pids() or self.alive():
                _signal_group(self.pgid, signal.SIGTERM)
                _signal_group(self.pgid, signal.SIGCONT)  # a paused (hung) server handles SIGTERM only once resumed
                deadline = time.monotonic() + grace
                while time.monotonic() < deadline and (self.alive() or self.pids()):
                    self.proc.poll()
                    time.sleep(0.05)
                if self.alive() or self.pids():
                    _signal_group(self.pgid, signal.SIGKILL)
                    self.proc.wait(timeout=10)
                    end = time.monotonic() + 5
                    while self.pids() and time.monotonic() < end:
                        time.sleep(0.05)
            self.proc.poll()
        finally:
            untrack(self)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    out = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


class SubprocessLauncher:
    name = "subprocess"
    runs_images = False

    def validate(self, cfg: Any) -> tuple[str, str] | None:
        return None  # any engine with a command line runs as a process

    def start(self, req: LaunchRequest) -> Handle:
        cmd = req.engine.command(req.config, req.host, req.port)
        env = {**os.environ, **req.engine.child_env(req.config), **req.config.env, **req.env}
        if req.gpu_ids:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(req.gpu_ids)
        log = open(req.log_path, "ab")
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except FileNotFoundError as e:
            raise RuntimeError(f"cannot start {cmd[0]}: {e.strerror}") from e
        finally:
            log.close()
        handle = ProcessHandle(proc, f"pid {proc.pid}: {' '.join(redact.args(cmd))}")
        track(handle)
        handle.identity = program_identity(cmd[0])
        return handle
