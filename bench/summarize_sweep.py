#!/usr/bin/env python3
"""Summarises kernel_bench --shape_sweep output: per target case, every launch shape's device
us (fastest first) beside the policy's choice (cuda/kernel/...) and the launch floors.

usage: summarize_sweep.py KERNEL_BENCH_JSON
"""
import json
import re
import sys
from collections import defaultdict


def main():
    data = json.load(open(sys.argv[1]))
    rows = defaultdict(dict)   # case -> shape -> device us
    policy = {}
    floors = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("error_occurred"):
            print("ERROR", b["name"], b.get("error_message", ""))
            continue
        name = b["name"].split("/iterations")[0]
        us = b.get("device_us")
        if us is None:
            continue
        m = re.match(r"cuda/shape/(\d+x\d+)/(.+)", name)
        if m:
            rows[m.group(2)][m.group(1)] = us
        elif name.startswith("cuda/kernel/"):
            policy[name[len("cuda/kernel/"):]] = us
        elif name.startswith("cuda/launch_floor/"):
            floors[name[len("cuda/launch_floor/"):]] = us
    for f, us in sorted(floors.items()):
        print(f"floor {f:22s} {us:7.2f} us")
    for case in sorted(set(rows) | set(policy)):
        shapes = sorted(rows[case].items(), key=lambda kv: kv[1])
        best = " ".join(f"{s}:{us:.2f}" for s, us in shapes[:6])
        pol = policy.get(case)
        pol_s = f"{pol:7.2f}" if pol is not None else "      -"
        print(f"{case:32s} policy {pol_s}  best {best}")


if __name__ == "__main__":
    main()
