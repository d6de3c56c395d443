#!/usr/bin/env bash
# Regenerates fuzz_report's seeds from a release build (build/release/podsim): fuzz/seed-run (the
# run directory every input starts from) and fuzz/corpus/fuzz_report (one file per input kind),
# and the access log among fuzz_trace's seeds. Needs python3 (to trim the JSON).
#
# The run is the default pod with 20 accesses per GPU. seed-run keeps the files the report reads;
# its stats.json keeps only the stats the report looks at (the headline, the breakdowns, the
# switch-port utilisations) and timeseries.csv only the rows around the traffic: the whole
# files (208 KB, 18 KB) made each input 2.5 times slower to read. The sweep is 2 x 2 points.
set -euo pipefail
cd "$(dirname "$0")/.."
podsim=build/release/podsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$podsim" run --quiet --set workload.traffic.accesses=20 -o "$tmp/run" \
  --access-log fuzz/corpus/fuzz_trace/access-log.trace
"$podsim" sweep --vary workload.traffic.accesses=10,20 --vary pod.gpus=2,3 -j 2 \
  --out "$tmp/sweep" >/dev/null

python3 - "$tmp" <<'PY'
import json, os, re, sys
tmp = sys.argv[1]
run, seed, corpus = f"{tmp}/run", "fuzz/seed-run", "fuzz/corpus/fuzz_report"
os.makedirs(seed, exist_ok=True)
os.makedirs(corpus, exist_ok=True)
for f in os.listdir(corpus):
    os.remove(f"{corpus}/{f}")
keep = re.compile(r"pod\.summary\.(remote_accesses|achieved_bandwidth|access_phase_time|faults|"
                  r"retries|payload_efficiency|remote_breakdown)$|pod\.gpu\d+\.agent\.remote_breakdown$"
                  r"|pod\.fabric\..*port\d+\.utilisation$")
stats = json.load(open(f"{run}/stats.json"))
stats["stats"] = {k: v for k, v in stats["stats"].items() if keep.search(k)}
files = {"stats.json": (json.dumps(stats, indent=1) + "\n").encode()}
lines = open(f"{run}/timeseries.csv", "rb").read().split(b"\n")
busy = [i for i, l in enumerate(lines[1:], 1) if re.search(rb",[1-9]", l)]
files["timeseries.csv"] = b"\n".join([lines[0]] + lines[max(1, busy[0] - 3):busy[-1] + 4]) + b"\n"
for f in ["run.json", "latency.csv", "latency_histogram.csv", "breakdown.csv"]:
    files[f] = open(f"{run}/{f}", "rb").read()
files["sweep.json"] = open(f"{tmp}/sweep/sweep.json", "rb").read()
names = ["stats.json", "run.json", "latency.csv", "latency_histogram.csv", "timeseries.csv",
         "breakdown.csv", "sweep.json"]
for i, f in enumerate(names):
    if f != "sweep.json":
        open(f"{seed}/{f}", "wb").write(files[f])
    open(f"{corpus}/{i}-{f}", "wb").write(bytes([i]) + files[f])
for i in (0, 1, 4):  # stats.json, run.json, timeseries.csv removed
    open(f"{corpus}/{i}-removed-{names[i]}", "wb").write(bytes([0x80 | i]))
PY
