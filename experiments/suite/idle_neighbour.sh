#!/usr/bin/env bash
# Does a busy process beside a 2-thread llama-server on 2 cores slow its decoding, by scheduling class? TPOT
# (llama-server's own predicted_per_token_ms) of 5 requests for 64 tokens alone, beside a busy loop at nice 0,
# in SCHED_IDLE (chrt -i 0) and at nice 19. Issue 36: why the suite's server modules run alone under -n 2.
#   bash experiments/suite/idle_neighbour.sh > experiments/suite/idle_neighbour.out.md
set -euo pipefail
# shellcheck source=../_lib/smol.sh
source "$(dirname "$0")/../_lib/smol.sh"  # PY, BIN, MODEL
PORT=18998
"$BIN" -m "$MODEL" -c 16384 -np 4 -t 2 --cache-ram 0 --jinja --no-webui --host 127.0.0.1 --port $PORT >/dev/null 2>&1 &
SERVER=$!
BUSY=""
trap 'kill $SERVER ${BUSY:-} 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$PORT/health" >/dev/null; do sleep 0.05; done
tpots() {
    for _ in 1 2 3 4 5; do
        curl -s "http://127.0.0.1:$PORT/completion" -d '{"prompt":"Once upon a time","n_predict":64,"cache_prompt":false}' \
            | $PY -c "import json, sys; print(round(json.load(sys.stdin)['timings']['predicted_per_token_ms'], 1), end=' ')"
    done
}
row() {  # label, then the command that starts the neighbour (empty: none)
    BUSY=""
    if [ -n "$2" ]; then $2 python3 -c "while True: pass" & BUSY=$!; sleep 0.2; fi
    echo "| $1 | $(tpots) |"
    if [ -n "$BUSY" ]; then kill "$BUSY"; wait "$BUSY" 2>/dev/null || true; fi
}
echo "# A busy neighbour beside a 2-thread llama-server, by scheduling class ($(date -u +%F), $(nproc) cores)"
echo
echo "Command: \`bash experiments/suite/idle_neighbour.sh\`; TPOT ms of 5 requests (64 tokens, cold prompt) each"
echo
echo "| neighbour | TPOT ms |"
echo "|---|---|"
row "none" ""
row "busy loop, nice 0" "env"
row "busy loop, SCHED_IDLE (chrt -i 0)" "chrt -i 0"
row "busy loop, nice 19" "nice -n 19"
row "none, again" ""
