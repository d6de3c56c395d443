#!/usr/bin/env python3
"""Writes configs/traces/helios-layer.json, the model trace of configs/model-helios-layer.json
(docs/model-traces.md, "The shipped example"): on a 72-GPU Helios-class pod, one dense
transformer layer and one mixture-of-experts layer of a forward pass, tensor parallel over 8
GPUs (9 groups) and expert parallel over all 72 (one expert per GPU).

    python3 scripts/gen-helios-layer-trace.py > configs/traces/helios-layer.json

Everything below is a stated assumption, not a measurement; change it and regenerate.
--algorithm sets the tensor-parallel all-reduces' (ring, one_shot, two_shot); --tokens the
batch.
"""
import argparse
import json

args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
args.add_argument("--algorithm", default="ring", choices=["ring", "one_shot", "two_shot"])
args.add_argument("--tokens", type=int, default=64)
args = args.parse_args()

GPUS = 72
TP = 8                  # tensor-parallel group size: GPUs [8k, 8k+8) are group tp<k>
HIDDEN = 8192           # model width
FFN = 28672             # dense MLP width
EXPERT_FFN = 2048       # each expert's MLP width
TOKENS = args.tokens    # tokens in flight per tensor-parallel group (64: a decode-sized batch)
TOP_K = 4               # experts per token
BYTES = 2               # bf16 activations and weights
# Expert popularity: two hot experts (GPUs 5 and 41) get 4x the tokens of the others.
WEIGHT = [4 if e in (5, 41) else 1 for e in range(GPUS)]

activation = TOKENS * HIDDEN * BYTES  # what a tensor-parallel all-reduce sums: 2 MiB


def attention():
    params = 4 * HIDDEN * HIDDEN // TP  # Q, K, V and output projections, this GPU's slice
    return {"flops": 2.0 * TOKENS * params, "bytes": f"{params * BYTES}B"}


def mlp():
    params = 3 * HIDDEN * FFN // TP  # gate, up and down projections, this GPU's slice
    return {"flops": 2.0 * TOKENS * params, "bytes": f"{params * BYTES}B"}


def dispatch_counts(sender):
    """Token copies `sender` sends to each expert: its TOKENS / TP tokens x TOP_K, spread by
    popularity (largest remainder; ties go to the experts after the sender, so that cold
    experts share the remainder evenly across senders)."""
    copies = TOKENS // TP * TOP_K
    total = sum(WEIGHT)
    exact = [copies * w / total for w in WEIGHT]
    counts = [int(x) for x in exact]
    order = sorted(range(GPUS), key=lambda e: (-(exact[e] - counts[e]), (e - sender) % GPUS))
    for e in order[: copies - sum(counts)]:
        counts[e] += 1
    return counts


token = HIDDEN * BYTES  # one token's activation: 16 KiB
counts = [dispatch_counts(g) for g in range(GPUS)]
groups = {f"tp{k}": list(range(k * TP, (k + 1) * TP)) for k in range(GPUS // TP)}
groups["ep"] = list(range(GPUS))
nodes = []
for g in range(GPUS):
    tp = f"tp{g // TP}"

    def node(name, kind, deps, **fields):
        nodes.append({"id": f"{name}{g}", "gpu": g, "type": kind,
                      **fields, **({"deps": [f"{d}{g}" for d in deps]} if deps else {})})

    # Layer 0, dense: attention, all-reduce, MLP, all-reduce.
    node("attn0.", "compute", [], **attention())
    node("ar_attn0.", "collective", ["attn0."], op="all_reduce", group=tp, bytes=f"{activation}B",
         **({} if args.algorithm == "ring" else {"algorithm": args.algorithm}))
    node("mlp0.", "compute", ["ar_attn0."], **mlp())
    node("ar_mlp0.", "collective", ["mlp0."], op="all_reduce", group=tp, bytes=f"{activation}B",
         **({} if args.algorithm == "ring" else {"algorithm": args.algorithm}))
    # Layer 1, mixture of experts: attention, all-reduce, router, dispatch, expert, combine.
    node("attn1.", "compute", ["ar_mlp0."], **attention())
    node("ar_attn1.", "collective", ["attn1."], op="all_reduce", group=tp, bytes=f"{activation}B",
         **({} if args.algorithm == "ring" else {"algorithm": args.algorithm}))
    node("router1.", "compute", ["ar_attn1."], duration="2us")
    node("dispatch1.", "collective", ["router1."], op="all_to_all_v", group="ep",
         send_bytes=[f"{counts[g][e] * token}B" for e in range(GPUS)])
    received = sum(counts[s][g] for s in range(GPUS))
    expert_params = 3 * HIDDEN * EXPERT_FFN
    node("expert1.", "compute", ["dispatch1."], flops=2.0 * received * expert_params,
         bytes=f"{expert_params * BYTES}B")
    node("combine1.", "collective", ["expert1."], op="all_to_all_v", group="ep",
         send_bytes=[f"{counts[e][g] * token}B" for e in range(GPUS)])

print(json.dumps({"groups": groups, "nodes": nodes}, indent=None, separators=(",", ":"))
      .replace('{"id"', '\n{"id"'))
