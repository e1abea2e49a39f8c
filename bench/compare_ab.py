#!/usr/bin/env python3
"""Same-run A/B of kernel_bench JSON files: device us per case, the median over each build's
runs, and each build's change against the first one named (median, min and max over cases).

    python3 bench/compare_ab.py [--metric host_us] BASE_1.json BASE_2.json -- NEW_1.json NEW_2.json [-- OTHER...]

--metric: the counter compared (default device_us; host_us: the build() call's host time, for
trials of the launch path).

(A file may be gzipped, NAME.json.gz: the trials under bench/results keep theirs that way.)
"""
import gzip
import json
import statistics
import sys


def per_case(path, metric="device_us"):
    """`metric` per case: the median aggregate where the file has repetitions, else the run."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        runs = json.load(f)["benchmarks"]
    timed = [b for b in runs if metric in b and b.get("aggregate_name", "median") == "median"]
    if any("aggregate_name" in b for b in timed):
        timed = [b for b in timed if "aggregate_name" in b]
    return {b["name"].split("/iterations")[0].split("/min_time")[0]: b[metric] for b in timed}


def main(argv):
    metric = "device_us"
    if argv[:1] == ["--metric"] and len(argv) > 1:
        metric, argv = argv[1], argv[2:]
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
    runs = [[per_case(p, metric) for p in group] for group in groups]
    cases = sorted(set.intersection(*[set(r) for group in runs for r in group]))
    median = [{c: statistics.median(r[c] for r in group) for c in cases} for group in runs]
    def label(group):  # the values are medians over the group's runs, not its first file's
        return group[0] if len(group) == 1 else f"{group[0]} (+{len(group) - 1} more runs)"

    for g in range(1, len(groups)):
        change = [median[g][c] / median[0][c] - 1 for c in cases]
        print(f"{metric}: {label(groups[g])} vs {label(groups[0])}: median {100 * statistics.median(change):+.1f} %, "
              f"min {100 * min(change):+.1f} %, max {100 * max(change):+.1f} % over {len(cases)} cases")
    for c in cases:
        print(f"{c:56s}" + "".join(f"{m[c]:9.2f}" for m in median))


if __name__ == "__main__":
    main(sys.argv[1:])
