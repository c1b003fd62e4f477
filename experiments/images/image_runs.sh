#!/usr/bin/env bash
# Issue 53: the real-image runs through the README's own commands ("Local images", "Bisect a regression").
#   bash experiments/images/image_runs.sh slower   # reference image vs a candidate with `-t 1` baked in
#   bash experiments/images/image_runs.sh bisect   # bisect over 8 local tags n-01..n-08
#   bash experiments/images/image_runs.sh clean    # remove the n-01..n-08 tags this script made
# Why `-t 1`: the config serves with `-t 2` on a 2-core host; one thread roughly halves decode speed, a change
# far beyond the ~10-100% per-pair noise that other engineers' runs put on this shared host, so the verdict
# does not hinge on a small effect (`--top-k 0`, ~x1.1-1.17 TPOT, needs a quiet host).
# Bisect tags: n-01..n-05 the installed build; n-04 broken (`--version` baked in: it prints and exits, so it
# never serves); n-06..n-08 `-t 1` (the first slower tag is n-06).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/images53}
REPO=llmbench-local/llama-server
BENCH=(benches/test_serving_cpu.py --llmbench-configs benches/docker/cpu-docker.yaml -k chat-1u)

case "${1:-}" in
slower)
    python -m pytest_llmbench image build --tag "$REPO:cpu"
    python -m pytest_llmbench image build --tag "$REPO:t1" --args='-t 1'
    python -m pytest "${BENCH[@]}" --no-pull \
        --llmbench-reference-image "$REPO:cpu" --llmbench-candidate-image "$REPO:t1" \
        --llmbench-compare-budget "${BUDGET:-240}" -p no:cacheprovider --results-dir "$OUT/slower"
    ;;
bisect)
    # a label per tag gives each tag its own image id, as real nightlies have (the steps run ids, not tags)
    for n in 01 02 03 05; do python -m pytest_llmbench image build --tag "$REPO:n-$n" --label "night=$n"; done
    python -m pytest_llmbench image build --tag "$REPO:n-04" --label night=04 --args='--version'
    for n in 06 07 08; do python -m pytest_llmbench image build --tag "$REPO:n-$n" --label "night=$n" --args='-t 1'; done
    python -m pytest_llmbench bisect --good "image:$REPO:n-01" --bad "image:$REPO:n-08" \
        --candidates "image:$REPO:n-02" "image:$REPO:n-03" "image:$REPO:n-04" "image:$REPO:n-05" \
        "image:$REPO:n-06" "image:$REPO:n-07" \
        --compare-budget "${BUDGET:-120}" --out "$OUT/bisect" -- "${BENCH[@]}" --no-pull
    ;;
clean)
    for n in 01 02 03 04 05 06 07 08; do docker rmi "$REPO:n-$n" || true; done
    ;;
*)
    echo "usage: $0 slower|bisect|clean" >&2
    exit 2
    ;;
esac
