#!/usr/bin/env python3
"""Summarises kernel_bench --shape_sweep output: per target case, every launch shape's device
us (fastest first) beside the policy's choice (cuda/kernel/...) and the launch floors.

usage: summarize_sweep.py KERNEL_BENCH_JSON
"""
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import collapse, load  # noqa: E402  (one reader of kernel_bench JSON)


def main():
    doc = load(sys.argv[1])
    if doc is None:
        return 1
    rows = defaultdict(dict)   # case -> shape -> device us
    policy, floors = {}, {}
    for name, entry in collapse(doc).items():
        if "error" in entry:
            print("ERROR", name, entry["error"])
            continue
        us = entry.get("device_us")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
