#!/usr/bin/env bash
# What each rank of a split run does per remote access, counted rather than timed:
# instructions outside MPI's own code (its libraries, whose spinning while a rank waits counts
# as instructions too) and misses in a simulated 2 MiB last-level cache, per rank, from
# valgrind's cachegrind under mpirun. Setup cancels out: the counts of a run of 1 access per
# GPU are taken from those of a run of ACCESSES per GPU; both are divided by every remote
# access of the run (not the rank's own), so the ranks' figures add up to the whole work.
#
# Usage: scripts/split-counts.sh [GPUS [ACCESSES [RANKS [--set key=value ...]]]]
#   (default 72 GPUs, 300 accesses per GPU, 2 ranks; the default pod on one switch, direct
#   setup, closed loop with 32 outstanding, 7 peers each, functional data off; RANKS=1 gives
#   the one-rank figures). PODSIM=path/to/podsim overrides the binary (build/release/podsim).
# The per-rank figures in docs/parallel.md ("On 2026-12-02") come from here.
set -euo pipefail
cd "$(dirname "$0")/.."
podsim=${PODSIM:-build/release/podsim}
gpus=${1:-72}
accesses=${2:-300}
ranks=${3:-2}
shift $(($# < 3 ? $# : 3))
for tool in valgrind cg_annotate mpirun; do
  command -v $tool >/dev/null || { echo "split-counts: needs $tool" >&2; exit 2; }
done
[ -x "$podsim" ] || { echo "split-counts: no $podsim (build first)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ports=$((gpus > 64 ? gpus : 64))

# Writes $work/cg.$1.<rank> for a run of $1 accesses per GPU.
run() {
  mpirun --oversubscribe -n "$ranks" valgrind --tool=cachegrind --cache-sim=yes \
    --LL=2097152,16,64 --cachegrind-out-file="$work/cg.$1.%q{OMPI_COMM_WORLD_RANK}" \
    "$podsim" run --quiet --out "$work/out.$1" --set pod.gpus="$gpus" \
    --set fabric.switch.ports="$ports" --set gpu.driver.accel_max=1024 --set workload.peers=7 \
    --set workload.setup=direct --set workload.traffic.accesses="$1" \
    --set workload.traffic.outstanding=32 --set gpu.vram.functional_data=false "${@:2}" \
    >"$work/log.$1" 2>&1 || { cat "$work/log.$1" >&2; exit 1; }
}
run 1 "$@"
run "$accesses" "$@"
for ((r = 0; r < ranks; r++)); do
  for n in 1 "$accesses"; do
    f=$work/cg.$n.$r
    cg_annotate --auto=no --threshold=0 --show=Ir,DLmr,DLmw "$f" >"$work/an.$n.$r"
  done
done
python3 - "$work" "$gpus" "$accesses" "$ranks" <<'PY'
import re, sys
work, gpus, n, ranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
mpi = re.compile(r"opal|ompi|libnbc|mca_|pmix|MPI|^\?\?\?:\?\?\?$")
def counts(path):
    """Instructions outside MPI's code, and last-level misses (all code), in an annotation."""
    ir = ll = 0
    body = False
    for line in open(path):
        if "file:function" in line:
            body = True
            continue
        fields = re.sub(r"\([^)]*\)", " ", line).split()
        if not body or len(fields) < 4:
            continue
        i, r, w = (int(x.replace(",", "")) for x in fields[:3])
        ll += r + w
        if not mpi.search(fields[-1]):
            ir += i
    return ir, ll
per = gpus * (n - 1)
tot_ir = tot_ll = 0
for r in range(ranks):
    i1, l1 = counts(f"{work}/an.1.{r}")
    iN, lN = counts(f"{work}/an.{n}.{r}")
    tot_ir += iN - i1
    tot_ll += lN - l1
    print(f"rank {r}: instructions outside MPI {(iN - i1) / per:.0f} per remote access, "
          f"last-level (2 MiB) misses {(lN - l1) / per:.1f}")
print(f"all {ranks} rank(s): instructions outside MPI {tot_ir / per:.0f}, last-level misses {tot_ll / per:.1f}")
PY
