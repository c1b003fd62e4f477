#!/usr/bin/env bash
# Issue 57 on the CPU: disjoint placements with two 1-core llama-servers pinned to core 0 and core 1 (CPU
# sets standing in for GPU sets), compared through pytest as a user runs it, one session per call.
# LABEL=aa: the same build and flags on both arms; LABEL=topk: the candidate adds --top-k 0 (a sampler cost,
# compare_cpu.out.md). MODE: disjoint (blocks interleaved) or disjoint-parallel (both blocks at once).
# The arms swap cores between the two halves of every unit; the set effect is in session.log and in the
# comparison_set_effect record.
#   LABEL=aa MODE=disjoint N=1 BUDGET=150s flock /tmp/llmbench-heavy.lock nice -n 5 bash experiments/compare/placements_cpu.sh
# or several sessions under one hold of the lock (the shared host's lock queue is long):
#   SPECS="aa:disjoint:1 topk:disjoint:1" BUDGET=120s flock /tmp/llmbench-heavy.lock nice -n 5 bash experiments/compare/placements_cpu.sh
# Output: experiments/data/compare/placements/$LABEL-$MODE-$N/{session.log,results.jsonl,command.txt}
set -uo pipefail
if [ -n "${SPECS:-}" ]; then
  for spec in $SPECS; do
    IFS=: read -r l m n <<< "$spec"
    SPECS= LABEL=$l MODE=$m N=$n bash "$0"
  done
  exit 0
fi
LABEL=${LABEL:-aa}; MODE=${MODE:-disjoint}; N=${N:-1}; BUDGET=${BUDGET:-150s}; ALPHA=${ALPHA:-0.05}
SETS=${SETS:-cpu:0|1}
NOISE=${NOISE:-offset=2% round=9%}
DATA=${DATA:-experiments/data/compare/placements}
cand_args="--threads 1"  # the A/A: the same flag spelled otherwise (identical arms are refused)
[ "$LABEL" = topk ] && cand_args="-t 1 --top-k 0"
tmp=$(mktemp -d /tmp/placements-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
out="$DATA/$LABEL-$MODE-$N"; rm -rf "$out"; mkdir -p "$out"
cmd=(python -m pytest benches/test_serving_cpu.py -p no:cacheprovider -k "test_serving and smol-nospec and chat-1u"
     "--llmbench-reference-args=-t 1" "--llmbench-candidate-args=$cand_args"
     --llmbench-arm-servers "$MODE" --llmbench-compare-sets "$SETS"
     --llmbench-compare-budget "$BUDGET" --llmbench-compare-alpha "$ALPHA" -o "llmbench_compare_noise=$NOISE"
     --results-dir "$tmp/out" --baselines-dir "$tmp/baselines")
{ echo "# $(date -u +%FT%TZ) LABEL=$LABEL MODE=$MODE N=$N BUDGET=$BUDGET SETS=$SETS loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%q ' "${cmd[@]}"; echo; } > "$out/command.txt"
start=$(date +%s)
"${cmd[@]}" > "$out/session.log" 2>&1
rc=$?
echo "# pytest exit $rc, wall $(( $(date +%s) - start )) s, loadavg after $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/command.txt"
cat "$tmp"/out/results*.jsonl > "$out/results.jsonl" 2>/dev/null
exit 0
