#!/bin/sh
# Issue 59's done-when: a comparison session (an A/A: the installed llama-server on both arms) with a busy
# neighbour, a CPU-bound process started beside it outside the session's process tree, names the host in
# every affected comparison_block record, in the terminal, and in the report (summary.md, report.html).
#
#   sh experiments/telemetry/busy_neighbour.sh > experiments/telemetry/busy_neighbour.out.md
set -e
PY=${PY:-python}
OUT=${LLMBENCH_OUT:-experiments/data/telemetry/busy_neighbour}
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
NB=$(mktemp -d)/busy-neighbour
BIN=$(dirname "$($PY -c 'from pytest_llmbench.engines.llamacpp import llamacpp_binary; print(llamacpp_binary())')")
ln -s "$(command -v $PY)" "$NB"
echo '# A comparison session beside a busy neighbour (a CPU-bound process on the same 2 cores)'
echo
echo "Command: \`sh experiments/telemetry/busy_neighbour.sh > experiments/telemetry/busy_neighbour.out.md\` ($(date -u '+%Y-%m-%d %H:%M UTC'), 2-core CPU shared with other engineers' work)"
echo
echo '```'
echo "\$ $NB -c 'while True: pass' &   # the neighbour, a child of init"
echo "\$ pytest experiments/telemetry/bench -k decode --llmbench-configs benches/configs/cpu.yaml --llmbench-reference-bin $BIN --llmbench-candidate-bin $BIN --llmbench-max-rounds 4 --llmbench-compare-budget 120 --results-dir $OUT"
set +e
# the neighbour starts only once the heavy lock is held (it would load the shared host while waiting), and
# is killed by its pid when the session ends
flock /tmp/llmbench-heavy.lock sh -c '
  PID=$(sh -c "\"$1\" -c \"while True: pass\" >/dev/null 2>&1 & echo \$!")
  nice -n 5 "$2" -m pytest experiments/telemetry/bench -k decode -p no:cacheprovider \
    --llmbench-configs benches/configs/cpu.yaml --llmbench-reference-bin "$3" --llmbench-candidate-bin "$3" \
    --llmbench-max-rounds 4 --llmbench-compare-budget 120 --results-dir "$4" > "$4.log" 2>&1
  STATUS=$?
  kill "$PID"
  exit $STATUS' neighbour "$NB" "$PY" "$BIN" "$OUT"
STATUS=$?
grep 'host busy' "$OUT.log"
sed -n '/llmbench comparisons/,$p' "$OUT.log"
echo "(pytest exit status $STATUS)"
$PY -m pytest_llmbench report "$OUT" --no-step-summary > /dev/null
echo "\$ python -m pytest_llmbench report $OUT --no-step-summary   # exit status $?"
set -e
rm -f "$OUT.log" "$NB"
echo '```'
echo
echo "Every comparison_block's host_load (contended, others' cores, the busiest others):"
echo
echo '```'
$PY - "$OUT" <<'PY'
import json, sys, pathlib
rows = [json.loads(l) for f in pathlib.Path(sys.argv[1]).glob("results*.jsonl") for l in f.read_text().splitlines()]
blocks = [b for b in rows if b.get("record") == "comparison_block"]
for b in blocks:
    h = b.get("host_load") or {}
    print(f"round {b['round']:>2} {b['role']:<9} contended={h.get('contended')} others={h.get('others')} of {h.get('cores')} top={h.get('top')}")
print(f"{sum(bool((b.get('host_load') or {}).get('contended')) for b in blocks)} of {len(blocks)} blocks contended")
PY
echo '```'
echo
echo "report.html names it: $(grep -c 'busy-neighbour' "$OUT/report.html") mention(s) of busy-neighbour"
echo
echo "## $OUT/summary.md"
echo
sed 's/^/    /' "$OUT/summary.md"
