#!/usr/bin/env bash
# What one remote access costs the host, counted rather than timed: instructions, and misses in
# a simulated cache (L1D as the host's, last level 2 MiB, 16-way), per remote access, from
# valgrind's cachegrind. Setup cancels out: the counts of a run of 1 access per GPU are taken
# from those of a run of ACCESSES per GPU.
#
# Usage: scripts/hot-path-counts.sh [GPUS [ACCESSES [--set key=value ...]]]
#   (default 8 GPUs, 1000 accesses per GPU; closed loop, 32 outstanding, 7 peers each,
#   functional data off). PODSIM=path/to/podsim overrides the binary (build/release/podsim);
#   HOT_PATH_LL=bytes the last-level cache's size (2097152: a core's L2; 134217728 stands for
#   the host's L3); HOT_PATH_KEEP=dir keeps both runs' cachegrind files there (cg.1, cg.N: for
#   `cg_diff dir/cg.1 dir/cg.N > d; cg_annotate d`, per function).
# The figures in docs/architecture.md ("What a remote access costs the host") come from here.
set -euo pipefail
cd "$(dirname "$0")/.."
podsim=${PODSIM:-build/release/podsim}
gpus=${1:-8}
accesses=${2:-1000}
shift $(($# < 2 ? $# : 2))
command -v valgrind >/dev/null || { echo "hot-path-counts: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
[ -x "$podsim" ] || { echo "hot-path-counts: no $podsim (build first: cmake --preset release && cmake --build --preset release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ll=${HOT_PATH_LL:-2097152}
ports=$((gpus > 64 ? gpus : 64))

# Prints "instructions D1-misses LL-misses" for a run of $1 accesses per GPU.
counts() {
  valgrind --tool=cachegrind --cache-sim=yes --LL="$ll",16,64 \
    --cachegrind-out-file="$work/cg.$1" \
    "$podsim" run --quiet --out "$work/out.$1" --set pod.gpus="$gpus" \
    --set fabric.switch.ports="$ports" --set gpu.driver.accel_max=1024 --set workload.peers=7 \
    --set workload.traffic.accesses="$1" --set workload.traffic.outstanding=32 \
    --set gpu.vram.functional_data=false "${@:2}" 2>&1 |
    awk -F: '/I *refs|D1  misses|LL misses/ { gsub(/,/, "", $2); split($2, a, " "); printf "%s ", a[1] }'
}
read -r i1 d1 l1 <<<"$(counts 1 "$@")"
read -r iN dN lN <<<"$(counts "$accesses" "$@")"
if [ -n "${HOT_PATH_KEEP:-}" ]; then
  mkdir -p "$HOT_PATH_KEEP"
  cp "$work/cg.1" "$HOT_PATH_KEEP/cg.1"
  cp "$work/cg.$accesses" "$HOT_PATH_KEEP/cg.N"
fi
python3 - "$ll" "$gpus" "$accesses" "$i1" "$d1" "$l1" "$iN" "$dN" "$lN" <<'PY'
import sys
ll, g, n, i1, d1, l1, iN, dN, lN = map(int, sys.argv[1:])
per = g * (n - 1)
print(f"{g} GPUs, per remote access: instructions {(iN - i1) / per:.0f}, "
      f"L1D misses {(dN - d1) / per:.1f}, last-level ({ll / 2**20:g} MiB) misses {(lN - l1) / per:.1f}")
PY
