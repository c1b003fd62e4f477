#!/usr/bin/env bash
# Issue 38 on the CPU: an engine that starts S seconds late (a wrapper folder whose llama-server sleeps S s,
# then executes the real one: slow_start_bin.sh), compared through pytest as a user runs it, one session
# per call. LABEL=aa: the same wrapper on both arms; LABEL=topk: the candidate's wrapper adds --top-k 0 (a
# ~6.5% tok/s sampler cost on 2 cores, compare_cpu.out.md). The session budget is the whole session's; the
# plan table it prints before the first full unit is in session.log.
#   LABEL=aa S=20 BUDGET=9m flock /tmp/llmbench-heavy.lock bash experiments/compare/slow_start_cpu.sh
#   LABEL=topk S=20 BUDGET=9m flock /tmp/llmbench-heavy.lock bash experiments/compare/slow_start_cpu.sh
# Output: experiments/data/compare/slow_start_cpu/$LABEL/{session.log,results.jsonl,command.txt}
set -uo pipefail
S=${S:-20}; BUDGET=${BUDGET:-9m}; LABEL=${LABEL:-aa}; ALPHA=${ALPHA:-0.05}
NOISE=${NOISE:-offset=2% round=9%}
DATA=${DATA:-experiments/data/compare/slow_start_cpu}
here=$(cd "$(dirname "$0")" && pwd)
wrap=$(mktemp -d /tmp/slow-start-XXXXXX)
trap 'rm -rf "$wrap"' EXIT
bash "$here/slow_start_bin.sh" "$wrap/reference" "$S" >/dev/null
cand="$wrap/reference"
if [ "$LABEL" = topk ]; then
  bash "$here/slow_start_bin.sh" "$wrap/candidate" "$S" "" --top-k 0 >/dev/null
  cand="$wrap/candidate"
fi
out="$DATA/$LABEL"; rm -rf "$out"; mkdir -p "$out"
cmd=(python -m pytest benches/test_serving_cpu.py -p no:cacheprovider -k "test_serving and smol-nospec and chat-1u"
     --llmbench-reference-bin "$wrap/reference" --llmbench-candidate-bin "$cand"
     --llmbench-compare-budget "$BUDGET" --llmbench-compare-alpha "$ALPHA" -o "llmbench_compare_noise=$NOISE"
     --results-dir "$wrap/out" --baselines-dir "$wrap/baselines")
{ echo "# $(date -u +%FT%TZ) LABEL=$LABEL S=$S BUDGET=$BUDGET"; printf '%q ' "${cmd[@]}"; echo; } > "$out/command.txt"
start=$(date +%s)
"${cmd[@]}" > "$out/session.log" 2>&1
rc=$?
echo "# pytest exit $rc, wall $(( $(date +%s) - start )) s" >> "$out/command.txt"
cat "$wrap"/out/results*.jsonl > "$out/results.jsonl" 2>/dev/null
exit 0
