#!/usr/bin/env python3
"""Summarises a model run's model.csv by node name (the id up to its first "."): when the
first such node started and the last ended (from the run's first start), the mean time of one,
and the longest with its GPU, as a Markdown table (docs/model-helios-layer.md).

    python3 scripts/model-phases.py OUT_DIR/model.csv
"""
import csv,sys,collections
rows=list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#')))
ph=collections.OrderedDict()
for r in rows:
    ph.setdefault(r['id'].split('.')[0],[]).append((float(r['start_ns']),float(r['end_ns']),int(r['gpu'])))
t0=min(s for v in ph.values() for s,e,g in v)
print("| node | first start | last end | mean time | longest (GPU) |")
print("|---|---|---|---|---|")
for k,v in ph.items():
    lg=max(v,key=lambda x:x[1]-x[0])
    print(f"| {k} | {(min(s for s,e,g in v)-t0)/1000:.1f} us | {(max(e for s,e,g in v)-t0)/1000:.1f} us | {sum(e-s for s,e,g in v)/len(v)/1000:.1f} us | {(lg[1]-lg[0])/1000:.1f} us ({lg[2]}) |")
