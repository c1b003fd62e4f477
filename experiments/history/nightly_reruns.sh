#!/usr/bin/env bash
# Nights simulated by reruns (issue 40): each "night" is one real pytest session of the CPU suite's
# smol-nospec chat-1u scenario, in its own results folder; runs SLOW_FROM..SLOW_TO start llama-server with
# -t 1 instead of -t 2 (a real, known slowdown), the others with -t 2.
#
#   FIRST=1 LAST=5 SLOW_FROM=11 SLOW_TO=20 bash experiments/history/nightly_reruns.sh
#
# One batch = one hold of the shared lock (other engineers share the 2 cores); each night's results.jsonl
# and resources.json are copied to tests/history/data/night-NN/ (the tests' real data) and committed after the batch.
set -euo pipefail
cd "$(dirname "$0")/../.."
FIRST=${FIRST:?} LAST=${LAST:?} SLOW_FROM=${SLOW_FROM:-11} SLOW_TO=${SLOW_TO:-20}
PY=${PY:-/work/main/.venv/bin/python}
WORK=${WORK:-/tmp/llmbench-history-nights}
DATA=tests/history/data
mkdir -p "$WORK/baselines" "$DATA"
cp baselines/smol-nospec.yaml "$WORK/baselines/"  # the stored gate judges each night as it would in CI
export PYTHONPATH=$PWD/src
batch() {
  for n in $(seq "$FIRST" "$LAST"); do
    night=$(printf 'night-%02d' "$n")
    threads=2
    if [ "$n" -ge "$SLOW_FROM" ] && [ "$n" -le "$SLOW_TO" ]; then threads=1; fi
    rm -rf "${WORK:?}/$night"
    start=$(date +%s)
    LLMBENCH_NIGHT_THREADS=$threads "$PY" -m pytest benches/test_serving_cpu.py -p no:cacheprovider -q \
      --llmbench-configs experiments/history/night.yaml -m cpu -k "test_serving and nospec and chat-1u" \
      --baselines-dir "$WORK/baselines" --results-dir "$WORK/$night" >"$WORK/$night.log" 2>&1 || true
    echo "$night threads=$threads wall_s=$(( $(date +%s) - start )) $(tail -1 "$WORK/$night.log")"
    mkdir -p "$DATA/$night/smol-nospec"
    cp "$WORK/$night/results.jsonl" "$DATA/$night/"
    cp "$WORK/$night/smol-nospec/resources.json" "$DATA/$night/smol-nospec/" 2>/dev/null || true
  done
}
export -f batch
export FIRST LAST SLOW_FROM SLOW_TO PY WORK DATA
flock /tmp/llmbench-heavy.lock bash -c batch
for i in 1 2 3 4 5; do
  git add "$DATA" && git commit -q --only "$DATA" -m "issue 40: nightly-history campaign, nights $FIRST-$LAST (threads 1 for nights $SLOW_FROM-$SLOW_TO)" && break
  sleep 3
done
