#!/usr/bin/env bash
# Unchanged reruns of the GPU smoke suite (llama.cpp CUDA + SmolLM2, two configs) gated against baselines
# recorded the way the README tells a user to: RECORD runs with --update-baselines=all (History needs 3
# accepted values before it learns a spread), then RUNS unchanged runs. Every run's results folder is kept
# under OUT; their verdict records, kept as experiments/data/stored/gpu_reruns/{record,rerun}-N.jsonl, are what
# rejudge_gpu_reruns.py (the false-REGRESSED table) and history_minimum.py read.
#
#   LLAMA_CPP_BIN_DIR=/path/to/cuda/build/bin LLMBENCH_SHAREGPT=sharegpt.json \
#     bash experiments/stored/gpu_reruns.sh OUT [RECORD=3] [RUNS=10] [pytest args…]
set -uo pipefail
out=${1:?results folder}; record=${2:-3}; runs=${3:-10}; shift 3 2>/dev/null || shift $#
mkdir -p "$out"
common=(-p pytest_llmbench.plugin benches/gpu/test_llamacpp_gpu.py -m gpu_smoke -q -p no:cacheprovider
        --baselines-dir "$out/baselines" "$@")
for i in $(seq 1 "$record"); do
  python3 -m pytest "${common[@]}" --results-dir "$out/record-$i" --update-baselines=all > "$out/record-$i.log" 2>&1
  echo "record $i: exit $? ($(tail -1 "$out/record-$i.log"))"
done
for i in $(seq 1 "$runs"); do
  python3 -m pytest "${common[@]}" --results-dir "$out/rerun-$i" > "$out/rerun-$i.log" 2>&1
  echo "rerun $i: exit $? ($(tail -1 "$out/rerun-$i.log"))"
done
