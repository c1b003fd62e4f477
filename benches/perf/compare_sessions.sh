#!/bin/sh
# Comparison sessions on real llama-servers (issue 12): calibrate candidate settings, then A/A sessions
# and sessions with the setting whose output tok/s ratio is nearest 0.90 (a ~10% slower server).
#
#   GPU (one H200, llama.cpp CUDA in $LLAMA_CPP_BIN_DIR):
#     STEP=calibrate-aa sh benches/perf/compare_sessions.sh; STEP=injected sh benches/perf/compare_sessions.sh
#   CPU (the installed llama-cpp-bin; holds /tmp/llmbench-heavy.lock per run):
#     WHERE=cpu sh benches/perf/compare_sessions.sh
#
# Env: WHERE (gpu|cpu), AA / INJ (sessions), STEP (all | calibrate-aa | injected), CANDIDATES (the settings
# tried, one per line), OUT (results folder), ROUNDS (most rounds per session). Writes $OUT/sessions.jsonl
# (a line per session) and $OUT/calibrate.txt; report:
#     python benches/perf/compare_error_rates.py report $OUT/sessions.jsonl
set -eu
WHERE=${WHERE:-gpu}
OUT=${OUT:-/tmp/compare-$WHERE}
AA=${AA:-10}
INJ=${INJ:-10}
STEP=${STEP:-all}
mkdir -p "$OUT"
if [ "$WHERE" = gpu ]; then
  RATES="python3 benches/perf/compare_error_rates.py --no-lock"
  COMMON="--config gpu-smol-nospec --config-file benches/configs/gpu/llamacpp-smollm2.yaml --prompts 8 --output-len 64"
  ROUNDS=${ROUNDS:-10}
  CANDIDATES=${CANDIDATES:-"-ngl 29
-ngl 28
-b 16 -ub 16
-fa off"}
else
  RATES="python benches/perf/compare_error_rates.py"
  # 3 prompts x 48 tokens: a block takes ~4 s on 2 cores (6 x 64 took 13 s, 40 sessions would take 100 min)
  COMMON="--config smol-nospec --prompts 3 --output-len 48"
  ROUNDS=${ROUNDS:-6}
  CANDIDATES=${CANDIDATES:-"-fa off
--poll 0
-ctk q8_0 -ctv q8_0"}
fi

if [ "$STEP" != injected ]; then
  : > "$OUT/calibrate.txt"
  echo "$CANDIDATES" | while IFS= read -r setting; do
    $RATES calibrate $COMMON --max-rounds 4 --min-rounds 4 --args "$setting" | tee -a "$OUT/calibrate.txt"
  done
  $RATES run $COMMON --max-rounds "$ROUNDS" --min-rounds 3 --label "$WHERE-aa" --sessions "$AA" --out "$OUT/sessions.jsonl"
fi
if [ "$STEP" != calibrate-aa ]; then
  PICK=$(python3 -c "
import re
best=min(((abs(float(m.group(2))-0.90), m.group(1)) for l in open('$OUT/calibrate.txt')
          if (m:=re.match(r\"'(.*?)'\s+output_throughput\s+ratio ([0-9.]+)\", l))))
print(best[1])")
  echo "injected: --candidate-args '$PICK'"
  $RATES run $COMMON --max-rounds "$ROUNDS" --min-rounds 3 --label "$WHERE-injected" --candidate-args "$PICK" \
    --sessions "$INJ" --out "$OUT/sessions.jsonl"
fi
