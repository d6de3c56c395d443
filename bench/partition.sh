#!/usr/bin/env bash
# One pod split across MPI ranks: host time at 1 and at 2 (or more) ranks, on the 1,024-GPU pod
# and on helios-72 under 50% Poisson load as shipped, and on pod-1024 with direct setup and a
# ten times longer access phase (2,000 accesses per GPU), with what each rank did (kernel
# events, windows, MPI messages). Checks that every rank count wrote the same stats.json. A benchmark: compare
# runs made one after the other on the same machine; never assert its times in tests. Each
# case runs ROUNDS times (default 3), the rank counts taking turns within a round, and each row
# is the run with the median whole-command time (its range beside it): one run of a VM that
# varies by up to 40% says little.
#   [ROUNDS=n] bench/partition.sh [RANKS...]          (default: 1 2)
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ranks=("$@")
rounds=${ROUNDS:-3}
[[ ${#ranks[@]} -gt 0 ]] || ranks=(1 2)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# "command s" is the whole command (podsim run, or mpirun) as a user waits for it (start, build, run, outputs,
# exit); "host s" is run.json's host_seconds (build and run, not writing the outputs).
echo "| config | ranks | command s (range) | host s | setup s | access s | teardown s (gather) | x one rank (command / host / access) | lookahead ns (pod / GPU / switch) | windows (setup / access / teardown) | per rank: GPUs built, serves, MPI messages, MB sent, sync s, peak RSS MiB, peak packets |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for case in pod-1024 helios-72 pod-1024-direct-long; do
  config=configs/${case%-direct-long}.json
  extra=()
  [[ $case == *-direct-long ]] && extra=(--set workload.setup=direct --set workload.traffic.accesses=2000)
  for ((round = 1; round <= rounds; ++round)); do
    for r in "${ranks[@]}"; do
      # One rank is `podsim run` as a user runs it (no MPI); more are mpirun on this host, with
      # Open MPI's ob1 messaging layer (what it picks here anyway, named so that it does not
      # first probe the cluster ones: 0.2 s of every launch on this VM).
      launch=(mpirun --oversubscribe --mca pml ob1 -n "$r")
      [[ $r == 1 ]] && launch=()
      start=$(date +%s.%N)
      "${launch[@]}" build/release/podsim run "$config" --quiet --out "$out/$case-$r-$round" \
        --set workload.traffic.injection=poisson --set workload.traffic.offered_load=0.5 "${extra[@]}"
      echo "$start $(date +%s.%N)" > "$out/$case-$r-$round.seconds"
    done
  done
  python3 - "$out" "$case" "$rounds" "${ranks[@]}" <<'PY'
import json, sys, filecmp
out, name, rounds, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def seconds(r, k):
    start, end = map(float, open(f"{out}/{name}-{r}-{k}.seconds").read().split())
    return end - start
# Per rank count, the round whose whole command took the median time.
median = {r: sorted(range(1, rounds + 1), key=lambda k: seconds(r, k))[(rounds - 1) // 2] for r in ranks}
span = {r: (min(seconds(r, k) for k in range(1, rounds + 1)), max(seconds(r, k) for k in range(1, rounds + 1))) for r in ranks}
def run(r): return json.load(open(f"{out}/{name}-{r}-{median[r]}/run.json"))
def wall(r): return seconds(r, median[r])
base = run(ranks[0])
first = f"{out}/{name}-{ranks[0]}-1/stats.json"
for r in ranks:
    for k in range(1, rounds + 1):
        if not filecmp.cmp(first, f"{out}/{name}-{r}-{k}/stats.json", shallow=False):
            sys.exit(f"{name}: stats.json at {r} ranks (round {k}) differs from {ranks[0]} rank(s)")
for r in ranks:
    j = run(r); h = j['host']; p = j.get('partition')
    gather = max(x['gather_seconds'] for x in p['per_rank']) if p else 0
    per = "; ".join(f"{x['gpus_built']}, {x['serves']}, {x['messages_sent']}, {x['bytes_sent']/1e6:.0f}, {x['sync_seconds']:.2f}, {x['peak_rss_bytes']/2**20:.0f}, {x['packets_peak']}" for x in p['per_rank']) if p else f"all, {j['kernel']['serves']}, 0, 0, 0, {h['peak_rss_bytes']/2**20:.0f}, {j['kernel']['packets_peak']}"
    la = f"{p['lookahead_ns']:g} / {p['gpu_lookahead_ns']:g} / {p['switch_lookahead_ns']:g}" if p else ''
    # Rank 0's windows, and in which of its host phases they fell.
    ph = p['per_rank'][0]['phases'] if p else None
    windows = f"{p['per_rank'][0]['windows']} ({' / '.join(str(ph[k]['windows']) for k in ('setup', 'access', 'teardown'))})" if p else ''
    print(f"| {name} | {r} | {wall(r):.2f} ({span[r][0]:.2f}-{span[r][1]:.2f}) | {j['host_seconds']:.2f} | {h['setup_seconds']:.2f} | {h['access_seconds']:.2f} | "
          f"{h['teardown_seconds']:.2f} ({gather:.2f}) | {wall(ranks[0])/wall(r):.2f} / "
          f"{base['host_seconds']/j['host_seconds']:.2f} / "
          f"{base['host']['access_seconds']/h['access_seconds']:.2f} | {la} | "
          f"{windows} | {per} |")
PY
done
