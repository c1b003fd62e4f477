"""The real engine: llama-server with SmolLM2-135M, started, measured, killed and checked."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from pytest_llmbench.server import ServerStartError, start_server
from pytest_llmbench.workload.prompts import exact_length_prompts
from pytest_llmbench.workload.scenario import Scenario, run_scenario

from ..conftest import process_alive

pytestmark = pytest.mark.integration


def test_client_metrics_agree_with_the_servers_own_timings(smol_server):
    sc = Scenario("agree", dataset="random", input_len=32, output_len=48, num_prompts=3, warmup=1, seed=3)
    result = run_scenario(smol_server, sc)
    assert result.metrics["failed"] == 0, result.errors
    for rec in result.records:
        timings = rec.final["timings"]
        # Completion tokens: usage and the server's own count are the same number.
        assert rec.completion_tokens == timings["predicted_n"] == 48
        # Client TPOT spans first→last token as seen on the wire; the server times the same decode
        # steps. They differ by transport jitter only: within 25% (or 3 ms at these tiny TPOTs).
        server_tpot_ms = timings["predicted_ms"] / (timings["predicted_n"] - 1)
        client_tpot_ms = rec.tpot_s * 1000
        assert abs(client_tpot_ms - server_tpot_ms) <= max(0.25 * server_tpot_ms, 3.0), (client_tpot_ms, server_tpot_ms)
        assert rec.ttft_s * 1000 >= timings["prompt_ms"] * 0.9
    m = result.metrics
    assert m["completed"] == 3 and m["total_output_tokens"] == 144
    assert m["output_throughput"] == pytest.approx(144 / m["duration"])
    assert m["median_tpot_ms"] > 0 and m["p99_itl_ms"] >= m["median_itl_ms"]


def test_cache_flush_erases_the_slots(smol_server):
    """After a flush the next identical prompt is processed again, not served from the slot cache."""
    sc = Scenario("flush", output_len=4, num_prompts=1, warmup=1, seed=5)
    result = run_scenario(smol_server, sc)
    assert result.notes == []
    assert result.records[0].final["timings"]["cache_n"] == 0


def test_exact_length_prompts_have_exactly_the_requested_tokens(smol_server):
    prompts = exact_length_prompts(smol_server, 2, 300, seed=1)
    assert [p.input_tokens for p in prompts] == [300, 300]
    assert [len(smol_server.tokenize(p.text)) for p in prompts] == [300, 300]
    assert prompts[0].text != prompts[1].text  # rotated, so no shared prefix for the cache


def test_draft_model_config_reports_per_request_accept_length(cpu_configs, tmp_path):
    server = start_server(cpu_configs["smol-draft"], tmp_path / "draft")
    try:
        # 24 tokens: each costs several draft passes on 2 cores, and the counters need a handful of steps
        sc = Scenario(
            "spec", dataset="random", input_len=32, output_len=24, num_prompts=2, warmup=1, ignore_eos=False, seed=2
        )
        result = run_scenario(server, sc)
    finally:
        server.stop()
    assert result.metrics["failed"] == 0, result.errors
    specs = [r.spec for r in result.records]
    assert all(s is not None and s.source == "timings" for s in specs)
    for r in result.records:
        t = r.final["timings"]
        assert r.spec.drafted == t["draft_n"] and r.spec.accepted == t["draft_n_accepted"]
        assert r.spec.accept_length == pytest.approx(t["predicted_n"] / (t["predicted_n"] - t["draft_n_accepted"]))
    assert result.spec_server is not None and result.spec_server.source == "/metrics"
    assert 1.0 <= result.metrics["server_accept_length"] <= 9.0


def test_failed_start_shows_the_log_tail(cpu_configs, tmp_path):
    from dataclasses import replace

    bad = replace(cpu_configs["smol-nospec"], args=("--definitely-not-a-flag",))
    with pytest.raises(ServerStartError) as e:
        start_server(bad, tmp_path / "bad")
    msg = str(e.value)
    assert "exited (code " in msg and "last 40 lines of" in msg
    assert "--definitely-not-a-flag" in msg  # llama-server's own complaint, from the log
    assert (tmp_path / "bad" / "server.log").exists()


def test_server_killed_mid_scenario_fails_requests_and_leaves_no_process(cpu_configs, tmp_path):
    server = start_server(cpu_configs["smol-nospec"], tmp_path / "victim")
    pids = server.handle.pids()
    assert pids and all(process_alive(p) for p in pids)

    def kill_once_it_generates():
        """SIGKILL once the scenario's requests are generating (a few tokens out), not after a fixed wait."""
        import os
        import re
        import signal

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = httpx.get(f"{server.base_url}/metrics", timeout=10).text  # its own client: another thread
            m = re.search(r"^llamacpp:n_decode_total (\S+)", text, re.M)  # per step (tokens_predicted: per answer)
            if m and float(m.group(1)) >= 16:
                break
            time.sleep(0.05)
        os.killpg(server.handle.pgid, signal.SIGKILL)

    killer = threading.Thread(target=kill_once_it_generates)
    killer.start()
    try:
        sc = Scenario("killed", output_len=2000, num_prompts=4, concurrency=2, warmup=0, seed=1)
        result = run_scenario(server, sc)
    finally:
        killer.join()
        server.stop()
    m = result.metrics
    assert m["failed"] >= 1 and m["completed"] + m["failed"] == 4
    reasons = [r.error for r in result.records if not r.ok]
    assert all(reasons) and any("connect" in e or "closed" in e or "disconnected" in e for e in reasons), reasons
    assert any("server exited during the scenario" in n for n in result.notes)
    assert not any(process_alive(p) for p in pids)
    assert server.handle.pids() == []
