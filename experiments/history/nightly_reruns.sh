#!/usr/bin/env bash
# Nights simulated by reruns (issue 40): each "night" is one real pytest session of the CPU suite's
# smol-nospec chat-1u scenario, in its own results folder; nights SLOW_FROM..SLOW_TO start llama-server
# with -t 1 instead of -t 2 (a real, known slowdown), the others with -t 2.
#
#   LAST=30 SLOW_FROM=11 SLOW_TO=20 bash experiments/history/nightly_reruns.sh
#
# Other engineers share the 2 cores and the lock: each hold of /tmp/llmbench-heavy.lock runs nights until
# BUDGET_S (default 480 s) is spent, then lets go; the nights done so far are committed, and the next hold
# goes on from the first night not yet in tests/history/data/ (so a rerun of this command resumes).
set -euo pipefail
cd "$(dirname "$0")/../.."
LAST=${LAST:-30} SLOW_FROM=${SLOW_FROM:-11} SLOW_TO=${SLOW_TO:-20} BUDGET_S=${BUDGET_S:-480}
PY=${PY:-/work/main/.venv/bin/python}
WORK=${WORK:-/tmp/llmbench-history-nights}
DATA=tests/history/data
mkdir -p "$WORK/baselines" "$DATA"
cp baselines/smol-nospec.yaml "$WORK/baselines/"  # the stored gate judges each night as it would in CI
export PYTHONPATH=$PWD/src
hold() {
  local began=$SECONDS
  for n in $(seq 1 "$LAST"); do
    night=$(printf 'night-%02d' "$n")
    [ -f "$DATA/$night/results.jsonl" ] && continue
    [ $((SECONDS - began)) -ge "$BUDGET_S" ] && break
    threads=2
    if [ "$n" -ge "$SLOW_FROM" ] && [ "$n" -le "$SLOW_TO" ]; then threads=1; fi
    rm -rf "${WORK:?}/$night"
    start=$SECONDS
    LLMBENCH_NIGHT_THREADS=$threads "$PY" -m pytest benches/test_serving_cpu.py -p no:cacheprovider -q \
      --llmbench-configs experiments/history/night.yaml -m cpu -k "test_serving and nospec and chat-1u" \
      --baselines-dir "$WORK/baselines" --results-dir "$WORK/$night" >"$WORK/$night.log" 2>&1 || true
    echo "$night threads=$threads wall_s=$((SECONDS - start)) $(date -u +%T) $(tail -1 "$WORK/$night.log")"
    mkdir -p "$DATA/$night/smol-nospec"
    cp "$WORK/$night/smol-nospec/resources.json" "$DATA/$night/smol-nospec/" 2>/dev/null || true
    cp "$WORK/$night/results.jsonl" "$DATA/$night/"
  done
}
export -f hold
export LAST SLOW_FROM SLOW_TO BUDGET_S PY WORK DATA
while [ "$(ls "$DATA"/night-*/results.jsonl 2>/dev/null | wc -l)" -lt "$LAST" ]; do
  flock /tmp/llmbench-heavy.lock bash -c hold
  for i in 1 2 3 4 5; do
    git add "$DATA" && git commit -q --only "$DATA" -m "issue 40: nightly-history campaign, $(ls "$DATA" | grep -c night-) of $LAST nights (threads 1 for nights $SLOW_FROM-$SLOW_TO)" && break
    sleep 3
  done
  sleep 20  # let the others take the lock
done
