#!/bin/sh
# Issue 58: the bench_serving JSONL export of two real CPU results folders read back by `compare` and `history`
# (commands as a user types them).   sh experiments/capacity/bench_serving_roundtrip.sh > experiments/capacity/bench_serving_roundtrip.out.md
set -e
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
echo "# bench_serving JSONL out and back in ($(date -u '+%Y-%m-%d %H:%M UTC'))"; echo; echo '```'
for d in poisson_cpu capacity_cpu; do
  echo "\$ python -m pytest_llmbench bench-serving experiments/data/capacity/$d $d.jsonl"
  python -m pytest_llmbench bench-serving experiments/data/capacity/$d "$T/$d.jsonl"
done
echo "\$ head -c 300 poisson_cpu.jsonl"; head -c 300 "$T/poisson_cpu.jsonl"; echo " …"
cp "$T/poisson_cpu.jsonl" "$T/again.jsonl"
echo "\$ python -m pytest_llmbench compare poisson_cpu.jsonl again.jsonl   (first 14 lines; exit status at the end)"
python -m pytest_llmbench compare "$T/poisson_cpu.jsonl" "$T/again.jsonl" > "$T/c.md"; rc=$?
sed -n 1,14p "$T/c.md" | sed "s|$T/||g"; echo "(exit status $rc)"
echo "\$ python -m pytest_llmbench history capacity_cpu.jsonl poisson_cpu.jsonl again.jsonl --out hist --no-html --no-step-summary"
python -m pytest_llmbench history "$T/capacity_cpu.jsonl" "$T/poisson_cpu.jsonl" "$T/again.jsonl" --out "$T/hist" --no-html --no-step-summary | sed "s|$T/||g"
echo "(exit status $?)"
echo '```'
