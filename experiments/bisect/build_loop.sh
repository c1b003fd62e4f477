#!/bin/sh
# The H200 build farm's loop (gpu_versions.sh STEP=build starts it, setsid, in /tmp/w/versions): one CUDA build
# at a time, each the first version that has a carried source (src-<version>.tgz) and no folder yet, taken from
# `wanted`: what the bisect says its next steps may compare (device_builds.py writes it before every step, through
# the pytest_llmbench_bisect_ahead hook: Pinpoint's look-ahead), so a lease never compiles a build the search has
# walked past; until the bisect has written it, from ORDER (the caller's guess). A source neither names is not built.
# The first FREE builds (nothing to measure yet) and a build a step already waits for (device_builds.py's
# waiting-<version>) get all 16 cores; the others compile on cores 4-15, niced, beside the comparisons pinned to
# cores 0-3. The first build also makes llama-quantize (the GPU config prepares its model with it). Each build
# leaves <version>/build.done (cmake's exit status) and build.time; `all.done` stands while nothing is left to
# build (a later call may carry more; ONCE=1: the loop ends then).
# SPARE=<folder> (gpu_versions.sh REBUILD=1): while nothing wanted is left to build, the loop compiles the wanted
# versions once more from source into that folder, one at a time, niced below any wanted build: the builds the
# current step compares come first in `wanted`, so by the time the bisect names its culprit pair the check
# "build the neighbours once more" has mostly been compiled on cores that would have idled.
# JOBS (default 16) and CMAKE_EXTRA (more cmake options) let another machine run the same recipe: gpu_versions.sh
# STEP=hostbuild builds here, on 2 cores without a GPU, with the device's nvcc (13.0.88) and a portable CPU backend.
n=0
next_version() {
  if [ -f wanted ]; then candidates=$(cat wanted); else candidates=$ORDER; fi
  for v in $candidates; do
    if [ -f "src-$v.tgz" ] && [ ! -e "$v" ]; then echo "$v"; return; fi
  done
}
next_spare() {  # the first wanted version built here and not yet in $SPARE
  [ -f wanted ] || return
  for v in $(cat wanted); do
    if [ -f "$v/build.done" ] && [ -f "src-$v.tgz" ] && [ ! -e "$SPARE/$v" ]; then echo "$v"; return; fi
  done
}
spare() {  # one rebuild at a time, in the background, so that a newly wanted build never waits for it
  [ -n "${SPARE:-}" ] || return
  if [ -n "${spare_pid:-}" ] && kill -0 "$spare_pid" 2>/dev/null; then return; fi
  s=$(next_spare); [ -n "$s" ] || return
  mkdir -p "$SPARE" && cp "src-$s.tgz" "$0" "$SPARE/" || return
  echo "$(date +%s) $s again, into $SPARE (nothing wanted is left to build)" >> loop.log
  (cd "$SPARE" && ORDER="$s" FREE=0 ONCE=1 NICE=19 SPARE= sh "$(basename "$0")" >> spare.out 2>&1) &
  spare_pid=$!
}
while :; do
  v=$(next_version)
  if [ -z "$v" ]; then touch all.done; [ "${ONCE:-0}" = 1 ] && exit 0; spare; sleep 5; continue; fi
  rm -f all.done
  if [ $n = 0 ]; then t="llama-server llama-quantize"; else t=llama-server; fi
  if [ $n -lt "${FREE:-1}" ] || [ -f "waiting-$v" ]; then cores=all; else cores=4-15; fi
  mkdir -p "$v" && echo "$(date +%s) $v on $cores cores (wanted: $(cat wanted 2>/dev/null | tr '\n' ' '))" >> loop.log \
    && tar xzf "src-$v.tgz" -C "$v" \
    && cmake -S "$v/llama.cpp" -B "$v/build" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_TESTS=OFF \
       -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_NUMBER="${v%%.*}" ${CMAKE_EXTRA:-} \
       > "$v/cmake.log" 2>&1 \
    && if [ $cores = all ]; then cmake --build "$v/build" --target $t -j "${JOBS:-16}"; \
       else taskset -c 4-15 nice -n "${NICE:-10}" cmake --build "$v/build" --target $t -j 12; fi > "$v/build.log" 2>&1
  echo $? > "$v/build.done"; date +%s > "$v/build.time"; n=$((n + 1))
done
