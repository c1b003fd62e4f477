"""start_server and LLMServer against the vLLM protocol double (tests/engines/protocol_double.py) run by the
real subprocess launcher: readiness polling, a start that exits, one that never gets ready, a port lost
to another process between pick and bind, and what a test says when its server is gone."""

from __future__ import annotations

import dataclasses
import stat
import sys
import time
from pathlib import Path

import pytest

from pytest_llmbench import redact
from pytest_llmbench.records.results import server_line
from pytest_llmbench.server import PORT_ATTEMPTS, ServerStartError, log_tail, start_server
from tests.engines.adapter_helpers import gone, make_config

DOUBLE = Path(__file__).parent / "engines"


def script(tmp_path: Path, name: str, body: str) -> str:
    """An executable Python script standing in for the engine's binary (it gets the real argv)."""
    exe = tmp_path / name
    exe.write_text(f"#!{sys.executable}\nimport os, sys, time\nsys.path.insert(0, {str(DOUBLE)!r})\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def vllm_double(tmp_path: Path) -> str:
    return script(tmp_path, "vllm", "from protocol_double import main\nmain(['vllm', *sys.argv[1:]])")


def test_a_server_that_loads_slowly_is_ready_once_its_health_route_says_so(tmp_path):
    cfg = make_config(
        "vllm", model="Qwen/Qwen3-8B", engine_options={"binary": vllm_double(tmp_path)}, args=["--load-seconds", "0.6"]
    )
    server = start_server(cfg, tmp_path / "srv", poll_interval=0.05)
    try:
        assert server.startup_s >= 0.6 and server.alive() and server.problem() is None
        assert server.info["model"] == "Qwen/Qwen3-8B"  # what the engine says about itself, at start
        assert server.base_url == f"http://127.0.0.1:{server.port}"
        assert server.facts()["startup_s"] == round(server.startup_s, 3)
        # the launcher names the build: a loose script is its hash (launchers/identity.py), on the server record
        assert server.build["binary"] == str(tmp_path) and server.build["build"].startswith("sha256:")
        assert server_line(server)["build"] == server.build
        log = (tmp_path / "srv" / "server.log").read_text()
        assert log.startswith("[llmbench] starting config double (vllm/subprocess)") and "double argv" in log
        pids = server.handle.pids()
        assert pids
    finally:
        server.stop(grace=5.0)
    assert gone(pids) and not server.alive()
    assert server.problem().startswith("exited (code")


def test_a_server_that_exits_at_start_is_one_error_with_its_own_complaint(tmp_path):
    exe = script(tmp_path, "vllm", "print('error: unrecognized arguments: --bogus', flush=True)\nsys.exit(2)")
    cfg = make_config("vllm", engine_options={"binary": exe}, args=["--bogus"])
    with pytest.raises(ServerStartError) as e:
        start_server(cfg, tmp_path / "srv", poll_interval=0.05)
    msg = str(e.value)
    assert msg.startswith("config double: server exited (code 2) before becoming ready")
    assert "unrecognized arguments: --bogus" in msg and "--- last 40 lines of" in msg


def test_a_server_that_never_gets_ready_is_stopped_after_its_startup_timeout(tmp_path):
    pid_file = tmp_path / "pid"
    exe = script(tmp_path, "vllm", f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)")
    cfg = dataclasses.replace(make_config("vllm", engine_options={"binary": exe}), startup_timeout=1.0)
    t0 = time.monotonic()
    with pytest.raises(
        ServerStartError, match=r"config double: not ready after 1 s \(startup_timeout\) polling /health"
    ):
        start_server(cfg, tmp_path / "srv", poll_interval=0.05)
    assert time.monotonic() - t0 < 10
    assert gone([int(pid_file.read_text())])  # nothing left running


def test_a_port_taken_before_the_server_binds_it_is_retried_on_another_port(tmp_path):
    """The first launch loses its port (the engine says so and exits); the second one serves."""
    count = tmp_path / "launches"
    exe = script(
        tmp_path,
        "vllm",
        f"""
n = int(open({str(count)!r}).read()) + 1 if os.path.exists({str(count)!r}) else 1
open({str(count)!r}, 'w').write(str(n))
if n == 1:
    print('ERROR: [Errno 98] error while attempting to bind on address: address already in use', flush=True)
    sys.exit(1)
from protocol_double import main
main(['vllm', *sys.argv[1:]])""",
    )
    server = start_server(make_config("vllm", engine_options={"binary": exe}), tmp_path / "srv", poll_interval=0.05)
    try:
        assert count.read_text() == "2" and server.alive()
        assert "was taken before the server bound it: retrying on another port" in server.log_tail()
    finally:
        server.stop(grace=5.0)


def test_a_port_lost_every_time_is_one_clear_error(tmp_path):
    exe = script(tmp_path, "vllm", "print('OSError: [Errno 98] Address already in use', flush=True)\nsys.exit(1)")
    with pytest.raises(
        ServerStartError, match=f"was taken before the server could bind it, {PORT_ATTEMPTS} times in a row"
    ):
        start_server(make_config("vllm", engine_options={"binary": exe}), tmp_path / "srv", poll_interval=0.05)


def test_gone_message_names_the_problem_and_scrubs_secrets(tmp_path):
    secret = "sk-llmbench-test-0123456789"
    redact.register([secret])
    exe = script(
        tmp_path,
        "vllm",
        f"print('loading with key {secret}', flush=True)\n"
        "from protocol_double import main\nmain(['vllm', *sys.argv[1:]])",
    )
    server = start_server(make_config("vllm", engine_options={"binary": exe}), tmp_path / "srv", poll_interval=0.05)
    try:
        server.not_responding = "not responding: no data on any connection for 120.0 s"
        msg = server.gone_message("during scenario s")
        assert msg.startswith("server double not responding: no data on any connection for 120.0 s during scenario s")
        assert "loading with key ***" in msg and secret not in msg
    finally:
        server.stop(grace=5.0)
    assert not server.settled_alive(wait_s=0.1)
    assert server.gone_message("before this test started").startswith("server double exited (code")


def test_log_tail_of_a_missing_log():
    assert log_tail(Path("/nonexistent/server.log")) == "(no server log)"
