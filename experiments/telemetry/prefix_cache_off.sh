#!/bin/sh
# Issue 59's done-when: a candidate with prefix reuse switched off (llama-server --no-cache-prompt: "whether
# to enable prompt caching (default: enabled)"; our requests send no cache_prompt field, so the server's
# default decides) against the same build with it on, in the shared-prefix multi-turn scenario
# (experiments/telemetry/bench/). Expected: TTFT REGRESSED and the "what changed" table ranking the
# prefix-cache hit rate first. Then the report of that folder (summary.md, report.html).
#
#   sh experiments/telemetry/prefix_cache_off.sh > experiments/telemetry/prefix_cache_off.out.md
set -e
PY=${PY:-python}
OUT=${LLMBENCH_OUT:-experiments/data/telemetry/prefix_cache_off}
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
echo '# A candidate with prefix reuse off (--no-cache-prompt) in the shared-prefix multi-turn scenario'
echo
echo "Command: \`sh experiments/telemetry/prefix_cache_off.sh > experiments/telemetry/prefix_cache_off.out.md\` ($(date -u '+%Y-%m-%d %H:%M UTC'), 2-core CPU shared with other engineers' work)"
echo
echo '```'
echo "\$ pytest experiments/telemetry/bench --llmbench-configs benches/configs/cpu.yaml --llmbench-candidate-args=--no-cache-prompt -k shared_prefix --llmbench-block-prompts 12 --llmbench-max-rounds 8 --llmbench-compare-budget 720 --results-dir $OUT"
set +e
flock /tmp/llmbench-heavy.lock nice -n 5 $PY -m pytest experiments/telemetry/bench -p no:cacheprovider \
  --llmbench-configs benches/configs/cpu.yaml --llmbench-candidate-args=--no-cache-prompt \
  -k shared_prefix --llmbench-block-prompts 12 --llmbench-max-rounds 8 --llmbench-compare-budget 720 \
  --results-dir "$OUT" > "$OUT.log" 2>&1
STATUS=$?
sed -n '/llmbench comparisons/,$p' "$OUT.log"
echo "(pytest exit status $STATUS)"
echo
echo "\$ python -m pytest_llmbench report $OUT --no-step-summary"
$PY -m pytest_llmbench report "$OUT" --no-step-summary > /dev/null
echo "(exit status $?)"
set -e
rm -f "$OUT.log"
echo '```'
echo
echo "Per block, the candidate's prefix-cache hit rate (llama-server's timings.cache_n over cache_n + prompt_n):"
echo
echo '```'
$PY - "$OUT" <<'PY'
import json, sys, pathlib
rows = [json.loads(l) for f in pathlib.Path(sys.argv[1]).glob("results*.jsonl") for l in f.read_text().splitlines()]
for b in rows:
    if b.get("record") == "comparison_block":
        m = b.get("metrics") or {}
        print(f"round {b['round']:>2} {b['role']:<9} {'warm-up' if b.get('warmup') else '       '} hit rate {m.get('prefix_cache_hit_rate', float('nan')):.3f}  median TTFT {m.get('median_ttft_ms', float('nan')):8.1f} ms  prompt tokens computed {((b.get('telemetry') or {}).get('summary') or {}).get('prompt_tokens_total', '-')}")
PY
echo '```'
echo
echo "## $OUT/summary.md"
echo
sed 's/^/    /' "$OUT/summary.md"
