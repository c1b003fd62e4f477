"""llama.cpp + SmolLM2 on CUDA: serving scenarios, GPU isolation per xdist worker, and NVML memory.

Each config asks for one GPU; under ``-n 2 --dist loadgroup`` each worker gets its own, the server
sees only that one (CUDA_VISIBLE_DEVICES), and NVML shows the server's process on that GPU alone.
"""

import os

import pytest

from pytest_llmbench.gate import History
from pytest_llmbench.workload.scenario import Scenario

# Timing on one H200 moves up to ±13% between server starts (draft config at 4 users, two modes ~13%
# apart at prompt4k; experiments/stored/history_minimum.out.md): a fixed band false-alarms. The spread is
# learned from recorded starts; until History's minimum is recorded the checks are "learning".
GPU_TIMING = History(k=3)

SCENARIOS = [
    Scenario("chat-1u", dataset="sharegpt", output_len=256, num_prompts=16, concurrency=1, warmup=2, seed=1),
    Scenario("chat-4u", dataset="sharegpt", output_len=256, num_prompts=32, concurrency=4, warmup=2, seed=1),
    Scenario(
        "prompt4k-1u", dataset="random", input_len=4000, output_len=256, num_prompts=4, concurrency=1, warmup=1, seed=1
    ),
]


@pytest.mark.llm_configs("gpu_smoke")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_serving(llm_server, bench, scenario):
    result = bench.run(scenario)
    m = result.metrics
    assert m["failed"] == 0, result.errors[:3]
    bench.check("output_throughput", m["output_throughput"], noise=GPU_TIMING)
    bench.check("median_tpot_ms", m["median_tpot_ms"], noise=GPU_TIMING)
    if "spec" in llm_server.config.marks:
        bench.check("accept_length", [r.spec.accept_length for r in result.records if r.spec])


def _server_env(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [p.split(b"=", 1) for p in f.read().split(b"\0") if b"=" in p]
    return {k.decode(): v.decode() for k, v in pairs}


@pytest.mark.llm_configs("gpu_smoke")
def test_gpu_isolation_and_memory(llm_server, bench):
    """The server runs on exactly its assigned GPU; NVML sees its process there and nowhere else."""
    pynvml = pytest.importorskip("pynvml")
    from pytest_llmbench.server_facts import collect_facts

    [gpu] = llm_server.gpu_ids
    server_pid = llm_server.handle.pids()[0]
    assert _server_env(server_pid)["CUDA_VISIBLE_DEVICES"] == gpu
    pynvml.nvmlInit()
    on = {}
    for i in range(pynvml.nvmlDeviceGetCount()):
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(pynvml.nvmlDeviceGetHandleByIndex(i))
        on[str(i)] = {p.pid for p in procs}
    holders = [i for i, pids in on.items() if server_pid in pids]
    # In containers NVML may report no per-process pids; the device memory reading still applies.
    if any(on.values()):
        assert holders == [gpu], f"server pid {server_pid} on GPUs {holders}, assigned {gpu}"
    facts = collect_facts(llm_server)
    bench.record("worker", os.environ.get("PYTEST_XDIST_WORKER", "main"))
    bench.record("gpu", gpu)
    bench.record("gpu_memory_used_gb", facts.get("gpu_memory_used_gb"))
    assert facts.get("gpu_memory_used_gb"), facts
    bench.check("gpu_memory_used_gb", facts["gpu_memory_used_gb"], direction="lower")
