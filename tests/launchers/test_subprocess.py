"""The subprocess launcher with real processes: what the child gets, and that stop() ends its whole
process group — children included, a child that ignores SIGTERM too."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_llmbench.launchers.base import LaunchRequest, describe_exit, live_handles
from pytest_llmbench.launchers.subprocess import SubprocessLauncher
from tests.conftest import process_alive


class ScriptEngine:
    """An engine whose server is a Python snippet (run with the launch host and port as argv)."""

    def __init__(self, code: str, env: dict[str, str] | None = None):
        self.code, self.env = code, env or {}

    def command(self, cfg, host, port):
        return [sys.executable, "-c", self.code, host, str(port), *cfg.args]

    def child_env(self, cfg):
        return dict(self.env)


def request(tmp_path: Path, code: str, *, args=(), env=None, engine_env=None, gpu_ids=()) -> LaunchRequest:
    cfg = SimpleNamespace(env=dict(env or {}), args=tuple(args))
    return LaunchRequest(
        config=cfg,
        engine=ScriptEngine(code, engine_env),
        host="127.0.0.1",
        port=1234,
        log_path=tmp_path / "server.log",
        gpu_ids=tuple(gpu_ids),
    )


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


def test_the_child_gets_its_argv_environment_and_gpus_and_writes_the_log(tmp_path):
    code = (
        "import os, sys; print('argv', sys.argv[1:], flush=True); "
        "print('env', os.environ['FROM_CONFIG'], os.environ['FROM_ENGINE'], os.environ['CUDA_VISIBLE_DEVICES'])"
    )
    req = request(
        tmp_path,
        code,
        args=["--api-key", "sk-abcdef123"],
        env={"FROM_CONFIG": "c"},
        engine_env={"FROM_ENGINE": "e"},
        gpu_ids=("2", "3"),
    )
    handle = SubprocessLauncher().start(req)
    try:
        wait_for(lambda: not handle.alive())
    finally:
        handle.stop(grace=1.0)
    assert handle.exit_code() == 0
    log = req.log_path.read_text()
    assert "argv ['127.0.0.1', '1234', '--api-key', 'sk-abcdef123']" in log
    assert "env c e 2,3" in log
    assert handle.description.startswith(f"pid {handle.proc.pid}: ")
    assert "--api-key ***" in handle.description and "sk-abcdef123" not in handle.description


def test_stop_ends_the_whole_process_group_and_untracks_the_handle(tmp_path):
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time; "
        f"c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(pid_file)!r}, 'w').write(str(c.pid)); time.sleep(60)"
    )
    handle = SubprocessLauncher().start(request(tmp_path, code))
    assert handle in live_handles()
    wait_for(pid_file.exists)
    wait_for(lambda: pid_file.read_text() != "")
    child = int(pid_file.read_text())
    assert set(handle.pids()) >= {handle.proc.pid, child}  # the server and what it forked, one group
    assert os.getpgid(child) == handle.pgid == handle.proc.pid != os.getpgid(0)
    handle.stop(grace=5.0)
    assert not handle.alive() and not process_alive(child) and handle.pids() == []
    assert handle.exit_code() == -signal.SIGTERM
    assert handle not in live_handles()


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    ready = tmp_path / "ready"
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(ready)!r}, 'w').close(); time.sleep(60)"
    )
    handle = SubprocessLauncher().start(request(tmp_path, code))
    wait_for(ready.exists)
    t0 = time.monotonic()
    handle.stop(grace=0.5)
    assert 0.5 <= time.monotonic() - t0 < 8
    assert handle.exit_code() == -signal.SIGKILL and not handle.alive()
    assert describe_exit(handle.exit_code()).startswith("code -9, SIGKILL: killed from outside")


def test_a_missing_binary_is_one_clear_error(tmp_path):
    class Missing(ScriptEngine):
        def command(self, cfg, host, port):
            return [str(tmp_path / "no-such-server"), "--port", str(port)]

    req = request(tmp_path, "")
    req.engine = Missing("")
    with pytest.raises(RuntimeError, match=r"cannot start .*no-such-server: No such file or directory"):
        SubprocessLauncher().start(req)
