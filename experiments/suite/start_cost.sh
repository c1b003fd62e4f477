#!/usr/bin/env bash
# How long a SmolLM2 llama-server takes from exec to /health 200 at cpu.yaml's flags, by context size: the
# suite's comparison, plan and recording sessions start ~60 servers (issue 36). Alternating, N rounds.
#   bash experiments/suite/start_cost.sh [N] > experiments/suite/start_cost.out.md
set -euo pipefail
N=${1:-5}
# shellcheck source=../_lib/smol.sh
source "$(dirname "$0")/../_lib/smol.sh"  # PY, BIN, MODEL
PORT=18999
ready_s() {  # seconds from exec to /health 200, then stop it
    local t0 t1 pid
    t0=$(date +%s.%N)
    "$BIN" -m "$MODEL" -c "$1" -np 4 -t 2 --cache-ram 0 --jinja --no-webui --host 127.0.0.1 --port $PORT >/dev/null 2>&1 &
    pid=$!
    until curl -sf "http://127.0.0.1:$PORT/health" >/dev/null; do sleep 0.01; done
    t1=$(date +%s.%N)
    kill $pid; wait $pid 2>/dev/null || true
    echo "$t1 - $t0" | bc
}
echo "# llama-server start cost by context size ($(date -u +%F), $(nproc) cores, $N alternating rounds)"
echo
echo "Command: \`bash experiments/suite/start_cost.sh $N\`; flags: \`-c C -np 4 -t 2 --cache-ram 0 --jinja --no-webui\`"
echo
echo "| round | -c 16384 s | -c 8192 s | -c 4096 s |"
echo "|---:|---:|---:|---:|"
for i in $(seq 1 "$N"); do
    echo "| $i | $(ready_s 16384) | $(ready_s 8192) | $(ready_s 4096) |"
done
