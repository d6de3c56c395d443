#!/usr/bin/env bash
# What putting the heap on huge pages from the start buys (sim/core/huge_pages.hpp,
# restart_with_huge_heap): each case run as shipped (podsim starts itself again with
# GLIBC_TUNABLES=glibc.malloc.hugetlb=1 where the kernel gives huge pages only when asked) and
# with the heap left on small pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=0, which podsim takes
# as the user's choice), the two taking turns ROUNDS times (default 3). Prints, per case and
# way, the median of run.json's setup and access-phase seconds with their ranges, and the page
# faults (a count: the same to a few percent from run to run). Checks that both ways wrote
# the same stats.json. A benchmark: never assert its times in tests.
#   [ROUNDS=n] bench/huge-heap.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# name | podsim run arguments (the `podsim bench` points of the same names)
cases=(
  "all-peers-8gpu|--set pod.gpus=8 --set fabric.switch.ports=128 --set workload.traffic.outstanding=32 --set workload.traffic.accesses=100000"
  "default-72gpu-poisson|--set pod.gpus=72 --set fabric.switch.ports=72 --set gpu.driver.accel_max=1024 --set workload.peers=7 --set workload.traffic.accesses=11112 --set workload.traffic.injection=poisson --set workload.traffic.offered_load=0.5"
  "default-1024gpu-closed|--set pod.gpus=1024 --set fabric.switch.ports=1024 --set gpu.driver.accel_max=1024 --set workload.peers=7 --set workload.traffic.accesses=782 --set workload.traffic.injection=closed_loop --set workload.traffic.outstanding=32"
  "pod-1024-poisson|configs/pod-1024.json --set workload.traffic.injection=poisson --set workload.traffic.offered_load=0.5"
)
echo "| case | heap | setup s (range) | access s (range) | page faults | peak RSS MiB |"
echo "|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  name=${c%%|*}
  read -r -a args <<< "${c#*|}"
  for ((k = 1; k <= rounds; ++k)); do
    build/release/podsim run "${args[@]}" --quiet --out "$out/$name-huge-$k"
    GLIBC_TUNABLES=glibc.malloc.hugetlb=0 build/release/podsim run "${args[@]}" --quiet --out "$out/$name-small-$k"
  done
  python3 - "$out" "$name" "$rounds" <<'PY'
import json, sys, filecmp, statistics
out, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
first = f"{out}/{name}-huge-1/stats.json"
for way in ("huge", "small"):
    runs = [json.load(open(f"{out}/{name}-{way}-{k}/run.json"))["host"] for k in range(1, rounds + 1)]
    for k in range(1, rounds + 1):
        if not filecmp.cmp(first, f"{out}/{name}-{way}-{k}/stats.json", shallow=False):
            sys.exit(f"{name}: stats.json differs ({way}, round {k})")
    def cell(key):
        v = [r[key] for r in runs]
        return f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
    label = "huge pages" if way == "huge" else "small pages"
    if way == "huge" and not all(r["huge_heap_asked"] for r in runs):
        label = "huge pages not asked here (see huge_heap_tunables)"
    faults = statistics.median(r["page_faults"] for r in runs)
    rss = statistics.median(r["peak_rss_bytes"] for r in runs) / 2**20
    print(f"| {name} | {label} | {cell('setup_seconds')} | {cell('access_seconds')} | {faults:.0f} | {rss:.0f} |")
PY
done
