#!/usr/bin/env bash
# Builds the libFuzzer targets (the fuzz preset: clang, ASan + UBSan, build/fuzz) and runs
# each for SECONDS (default 60) from its seeds in fuzz/corpus/<target>. What a run finds is
# kept in a scratch directory (printed); the repo's corpus is read, never grown, unless
# --merge is given (then the inputs that add coverage are merged into it).
#
#   scripts/fuzz.sh [SECONDS] [--jobs N] [--merge] [--keep] [TARGET ...]
#
# --jobs N runs N targets at once (default 1). --keep keeps the scratch directory even when
# nothing was found. Exit 0 when no target found anything; 1 on any crash, sanitizer report,
# uncaught exception, leak, timeout or out-of-memory; 2 on a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '7,11p' "$0" | sed 's/^# \{0,1\}//'; }
seconds=60 jobs=1 merge=0 keep=0 targets=()
all=(fuzz_config fuzz_set fuzz_trace fuzz_model fuzz_report)
while (($#)); do
  case $1 in
    --merge) merge=1 ;;
    --keep) keep=1 ;;
    --jobs) shift; jobs=${1:-} ;;
    -h | --help) usage; exit 0 ;;
    fuzz_*) targets+=("$1") ;;
    *)
      if [[ $1 =~ ^[0-9]+$ && $1 -gt 0 ]]; then seconds=$1; else usage >&2; exit 2; fi ;;
  esac
  shift
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
((${#targets[@]})) || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: no target $t (${all[*]})" >&2; exit 2; }
done

# Longest input per target: the largest seed with room to grow, small enough to stay fast.
declare -A max_len=([fuzz_config]=16384 [fuzz_set]=1024 [fuzz_trace]=4096 [fuzz_model]=4096
                    [fuzz_report]=65536)
declare -A dict=([fuzz_config]=fuzz/config.dict [fuzz_set]=fuzz/set.dict)

scripts/install-deps.sh clang libclang-rt-14-dev
start=$SECONDS
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
echo "fuzz.sh: build took $((SECONDS - start)) s"

work=$(mktemp -d "${TMPDIR:-/tmp}/podsim-fuzz.XXXXXX")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local t=$1 d=$work/$1
  mkdir -p "$d/new" "$d/findings" "$d/tmp"
  local args=(-max_total_time="$seconds" -max_len="${max_len[$t]}" -timeout=10
              -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$d/findings/")
  [[ -n ${dict[$t]:-} ]] && args+=(-dict="${dict[$t]}")
  # New inputs go to the scratch corpus (the first directory); the repo's is only read.
  local rc=0
  TMPDIR=$d/tmp "build/fuzz/fuzz/$t" "${args[@]}" "$d/new" "fuzz/corpus/$t" >"$d/log" 2>&1 || rc=$?
  echo "$rc" >"$d/rc"
}

pids=()
for t in "${targets[@]}"; do
  echo "fuzz.sh: $t for ${seconds} s"
  run_one "$t" &
  pids+=($!)
  if ((${#pids[@]} >= jobs)); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done

failed=0
printf '\n%-12s %12s %8s %s\n' target executions corpus findings
for t in "${targets[@]}"; do
  d=$work/$t
  rc=$(cat "$d/rc")
  # (a timeout or crash may leave no stats: "?")
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$d/log" | awk '{print $2}' | tail -n1 || true)
  corpus=$(grep -o 'corp: [0-9]*' "$d/log" | awk '{print $2}' | tail -n1 || true)
  findings=$(find "$d/findings" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
             -o -name 'oom-*' \) | sort)
  if [[ $rc != 0 || -n $findings ]]; then
    failed=1
    printf '%-12s %12s %8s exit %s: %s\n' "$t" "${execs:-?}" "${corpus:-?}" "$rc" \
      "$(echo "${findings:-none}" | tr '\n' ' ')"
    echo "  log: $d/log"
    grep -m3 -E '^==[0-9]+==ERROR|runtime error|^fuzz|deadly signal|ALARM|out-of-memory' "$d/log" |
      sed 's/^/  /' || true
  else
    printf '%-12s %12s %8s none\n' "$t" "${execs:-?}" "${corpus:-?}"
  fi
  if ((merge)); then
    "build/fuzz/fuzz/$t" -merge=1 -max_len="${max_len[$t]}" "fuzz/corpus/$t" "$d/new" >"$d/merge.log" 2>&1 ||
      { echo "fuzz.sh: merging $t failed: $d/merge.log" >&2; failed=1; }
  fi
done

if ((failed || keep)); then
  echo "fuzz.sh: logs, findings and new inputs are in $work"
else
  rm -rf "$work"
fi
exit "$failed"
