"""The capacity comparison on the GPU (issue 58): the chat scenario's capacity under configs_gpu.yaml's SLO, one
search per block, judged reference vs candidate (``capacity_rps``, as test_capacity_bench.py on the CPU).

    cd experiments/capacity/bench && python -m pytest test_capacity_gpu.py --llmbench-configs configs_gpu.yaml \
        --llmbench-block-prompts 32 --llmbench-reference-bin B10752 --llmbench-candidate-bin B11434 \
        --llmbench-compare-budget 12m -o llmbench_compare_restart_rounds=0

experiments/capacity/gpu_capacity.sh runs it on the lent machine.
"""

from pytest_llmbench import Scenario

#: the GPU smoke set's chat answers (256 tokens of ShareGPT), sent open-loop at the probed rate; 32 requests a
#: probe (~4 s at the expected ~7 req/s), the bracket narrowed to 10%, and the crossing interpolated inside it
SC = Scenario(
    "chat-capacity",
    dataset="sharegpt",
    output_len=256,
    num_prompts=32,
    concurrency=64,
    warmup=2,
    seed=1,
    scrape_interval_s=0.0,
    capacity={"target": 0.9, "confidence": 0.75, "start_rps": 4.0, "resolution": 1.1, "max_probes": 6, "repeats": 0},
)


def test_capacity_chat(llm_server, bench):
    result = bench.run(SC)
    assert result.notes, "the capacity search said nothing"
    bench.check("capacity_rps", result.metrics.get("capacity_rps", 0.0))
