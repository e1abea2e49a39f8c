#!/usr/bin/env python3
"""Same-run A/B of kernel_bench JSON files: device us per case, the median over each build's
runs, and each build's change against the first one named (median, min and max over cases).

    python3 bench/compare_ab.py BASE_1.json BASE_2.json -- NEW_1.json NEW_2.json [-- OTHER...]

(A file may be gzipped, NAME.json.gz: the trials under bench/results keep theirs that way.)
"""
import gzip
import json
import statistics
import sys


def device_us(path):
    """Device us per case: the median aggregate where the file has repetitions, else the run."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        runs = json.load(f)["benchmarks"]
    timed = [b for b in runs if "device_us" in b and b.get("aggregate_name", "median") == "median"]
    if any("aggregate_name" in b for b in timed):
        timed = [b for b in timed if "aggregate_name" in b]
    return {b["name"].split("/iterations")[0].split("/min_time")[0]: b["device_us"] for b in timed}


def main(argv):
    groups, current = [], []
    for arg in argv:
        if arg == "--":
            groups.append(current)
            current = []
        else:
            current.append(arg)
    groups.append(current)
    if len(groups) < 2 or not all(groups):
        sys.exit(__doc__)
    runs = [[device_us(p) for p in group] for group in groups]
    cases = sorted(set.intersection(*[set(r) for group in runs for r in group]))
    median = [{c: statistics.median(r[c] for r in group) for c in cases} for group in runs]
    for g in range(1, len(groups)):
        change = [median[g][c] / median[0][c] - 1 for c in cases]
        print(f"{groups[g][0]} vs {groups[0][0]}: median {100 * statistics.median(change):+.1f} %, "
              f"min {100 * min(change):+.1f} %, max {100 * max(change):+.1f} % over {len(cases)} cases")
    for c in cases:
        print(f"{c:56s}" + "".join(f"{m[c]:9.2f}" for m in median))


if __name__ == "__main__":
    main(sys.argv[1:])
