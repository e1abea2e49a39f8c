#!/usr/bin/env python3
"""Turns a benchmark run's JSON (kernel_bench.json, step_bench.json, ttft.json in DIR) into
DIR/summary.md: the tables the README shows and the targets met or missed, with margins.
When the Triton peer's results are there too (peer_kernel.json, peer_step.json from
bench/peer/run_peer.py), the kernel table gets the peer's device us and the ratio, and the
step section a table of our cached wall time beside the peer's eager and CUDA-graph ones.

usage: summarize.py DIR [--out FILE] [--require a.json,b.json]
Standard library only. Missing inputs are skipped (unless --require names them).
"""
import argparse
import gzip
import json
import os
import statistics
import sys

BUILD_HOST_TARGET_US = 5.0
CACHE_HIT_TARGET_US = 0.2
# Step time definitions the targets are judged on, each listed separately.
STEP_DEFINITIONS = [("dev_plus_host_us", "device + host (sum, conservative)"),
                    ("wall_us", "end-to-end wall (overlapped)")]
# Builds compared with the empty kernel's device floor (the smallest builds).
FLOOR_CASES = [("SWA-only", "decode64_ctx8K"), ("SWA-only", "prefill8K")]

# Issue 8's device-time targets per build (H200), keyed model/kind/case.
KERNEL_TARGETS_US = {"flash/SWA-only/prefill8K": 4.5, "flash/SWA-only/decode64_ctx8K": 3.2,
                     "flash/C4A/prefill8K": 11.6, "flash/C4A/prefill8K_ctx120K": 12.3,
                     "pro/C4A/prefill8K": 18.6, "flash/C4A/decode64_ctx8K": 3.6,
                     "flash/C128A/prefill8K": 6.0, "flash/C128A/prefill8K_ctx120K": 21.5}
# Issue 8: builds whose byte floor takes at least COPY_TARGET_MIN_FLOOR_US move their bytes at
# COPY_TARGET_SHARE or more of the run's copy bandwidth.
COPY_TARGET_SHARE = 0.8
COPY_TARGET_MIN_FLOOR_US = 10.0

# Issue 8's whole-step targets (cached prefill 8K, wall us, H200): at most these, and faster than
# the peer's step captured in a CUDA graph in the same run; judged on our eager step and on our
# step graph (graph_section).
STEP_WALL_TARGETS_US = {"flash": 230.0, "pro": 560.0}
STEP_TARGET_CASE = "prefill8K"

KIND_ORDER = {"SWA-only": 0, "C4A": 1, "C128A": 2}
CASE_ORDER = ["decode64_ctx8K", "decode64_ctx32K", "decode256_ctx8K", "decode256_ctx32K", "prefill1K", "prefill8K",
              "prefill8K_ctx120K", "decode32_prefill8K"]


def case_rank(case):
    """Sort key of a bench case: CASE_ORDER's order, unknown cases last."""
    return CASE_ORDER.index(case) if case in CASE_ORDER else 99
COUNTERS = ["device_us", "host_us", "bytes", "GBps", "pct_of_copy_bw", "copy_GBps",
            "dev_plus_host_us", "builder_calls", "layers", "gpu_waited_on_host",
            "startup_median_GBps", "tokens", "width", "wall_us", "arg_bytes", "target_us",
            "wall_target_us", "host_target_us", "launches", "floor_bytes", "floor_us", "read_bytes",
            "us_words1", "us_words2", "us_words4",  # the streaming floors' shapes, before 2026-12-04 and since
            "us_w1t256", "us_w2t256", "us_w4t256", "us_w1t32", "us_w2t32", "us_w4t32"]


def found(directory, fname):
    """The path of fname in directory, or of fname.gz (older runs keep large JSON gzipped), or None."""
    for path in (os.path.join(directory, fname), os.path.join(directory, fname + ".gz")):
        if os.path.exists(path):
            return path
    return None


def load(path):
    """The parsed JSON, or None (with a message) when a killed run left it truncated."""
    try:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"summarize.py: cannot read {path}: {e}", file=sys.stderr)
        return None


def unreadable(path):
    """Why load(path) returned None: an empty file is a stage that ran no benchmark (a filter that
    matched nothing: Google Benchmark's names end in /iterations:N/..., so a "$" after the
    variant matches none), anything else most likely a run killed while writing."""
    try:
        empty = os.path.getsize(path) == 0
    except OSError:
        empty = False
    return ("empty (no benchmark ran: a --benchmark_filter that matched nothing?)" if empty
            else "unreadable (truncated by a killed run?)")


def base_name(name):
    """Drops Google Benchmark's suffixes: cpu/x/y/iterations:3/manual_time -> cpu/x/y."""
    return "/".join(p for p in name.split("/")
                    if ":" not in p and p not in ("manual_time", "real_time", "process_time"))


def collapse(doc):
    """name -> {counter: value, 'label', 'error'}: the median aggregate where repetitions ran,
    else the median over the iteration rows."""
    rows, medians, errors = {}, {}, {}
    for b in doc.get("benchmarks", []):
        name = base_name(b.get("run_name", b["name"]))
        if b.get("error_occurred"):
            errors[name] = b.get("error_message", "error")
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = b
            continue
        rows.setdefault(name, []).append(b)
    out = {}
    for name in list(rows) + [n for n in medians if n not in rows]:
        reps = rows.get(name, [])
        entry = {"label": (reps[0].get("label", "") if reps else medians[name].get("label", "")),
                 "repetitions": len(reps)}
        for c in COUNTERS:
            if name in medians and c in medians[name]:
                entry[c] = medians[name][c]
            elif reps and c in reps[0]:
                entry[c] = statistics.median(r[c] for r in reps if c in r)
        out[name] = entry
    for name, msg in errors.items():
        out.setdefault(name, {})["error"] = msg
    return out


def fmt(v, digits=1):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}"


def verdict(value, target):
    """'MET (62 us margin)' / 'MISSED (by 12 us)'."""
    if value is None:
        return "not measured"
    if value <= target:
        return f"MET ({fmt(target - value, 2)} us margin, {fmt(100 * (target - value) / target)} %)"
    return f"MISSED (by {fmt(value - target, 2)} us, {fmt(100 * (value - target) / target)} %)"


def timing_note(prefix):
    return "CUDA device timings" if prefix == "cuda" else "CPU timings (host backend; targets are for the H200)"


def launch_floors(runs):
    """{'empty_kernel': row, 'empty_kernel_args': row} of the cuda/launch_floor benchmarks."""
    floors = {}
    for name, r in runs.items():
        parts = name.split("/")
        if len(parts) == 3 and parts[0] == "cuda" and parts[1] == "launch_floor" and "error" not in r:
            floors[parts[2]] = r
    return floors


def arg_bytes_lines(runs):
    """The empty kernel by argument size (cuda/launch_floor/arg_bytes/<bytes>) as one line."""
    sized = []
    for name, r in runs.items():
        parts = name.split("/")
        if len(parts) == 4 and parts[:3] == ["cuda", "launch_floor", "arg_bytes"] and "error" not in r:
            sized.append((int(parts[3]), r))
    if not sized:
        return []
    points = ", ".join(f"{b} B {fmt(r.get('device_us'), 2)} / {fmt(r.get('host_us'), 2)}" for b, r in sorted(sized))
    return [f"- launch floor by argument size, empty kernel launched through the runtime, programmatic (device / host us): "
            f"{points}"]


def floor_lines(floors):
    """The floors as bullet lines (none when the run had no CUDA launch floor)."""
    out = []
    plain, args = floors.get("empty_kernel"), floors.get("empty_kernel_args")
    if plain:
        out.append(f"- launch floor, empty kernel (1 CTA x 32 threads, timed like a build): device "
                   f"{fmt(plain.get('device_us'), 2)} us, host (cudaLaunchKernel + cudaGetLastError) "
                   f"{fmt(plain.get('host_us'), 2)} us")
    programmatic = floors.get("empty_kernel_programmatic")
    if programmatic:
        out.append(f"- launch floor, empty kernel launched with programmatic dependent launch through the runtime "
                   f"(cudaLaunchKernelEx, the builder's launch before ea831b8): device {fmt(programmatic.get('device_us'), 2)} us, host "
                   f"{fmt(programmatic.get('host_us'), 2)} us")
    driver = floors.get("empty_kernel_driver_programmatic")
    if driver:
        versus = ""
        if programmatic and None not in (driver.get("host_us"), programmatic.get("host_us")):
            versus = f" ({fmt(driver['host_us'] - programmatic['host_us'], 2)} us host against cudaLaunchKernelEx)"
        out.append(f"- launch floor, the same through the driver API (cuLaunchKernelEx, looked up once; the builder's launch "
                   f"since ea831b8): device "
                   f"{fmt(driver.get('device_us'), 2)} us, host {fmt(driver.get('host_us'), 2)} us{versus}")
    if args:
        extra = ""
        if plain and None not in (args.get("host_us"), plain.get("host_us")):
            extra = (f" (parameter copy: {fmt(args['host_us'] - plain['host_us'], 2)} us host, "
                     f"{fmt(args['device_us'] - plain['device_us'], 2)} us device)")
        out.append(f"- launch floor, empty kernel with a {fmt(args.get('arg_bytes'), 0)}-byte by-value "
                   f"argument (sizeof MixedSparseIndicesArgs): device {fmt(args.get('device_us'), 2)} us, "
                   f"host {fmt(args.get('host_us'), 2)} us{extra}")
    return out


def floor_comparisons(kernels, floors):
    """Targets-section lines: build() host time and the smallest builds' device time next to
    the empty kernel's floors."""
    plain, args = floors.get("empty_kernel"), floors.get("empty_kernel_args")
    if not plain:
        return []
    cuda = [k for k in kernels if k[0] == "cuda" and "error" not in k[4]]
    out = []
    hosts = [k[4]["host_us"] for k in cuda if "host_us" in k[4]]
    if hosts:
        args_note = (f" ({fmt(args.get('host_us'), 2)} us with a {fmt(args.get('arg_bytes'), 0)}-byte argument)"
                     if args else "")
        out.append(f"- build() host {fmt(statistics.median(hosts), 2)} us median, {fmt(max(hosts), 2)} us "
                   f"worst over {len(hosts)} builds; empty-kernel launch floor "
                   f"{fmt(plain.get('host_us'), 2)} us on this host{args_note}")
    floor_dev = plain.get("device_us")
    for prefix, model, kind, case, r in cuda:
        if (kind, case) in FLOOR_CASES and r.get("device_us") is not None and floor_dev is not None:
            out.append(f"- {model} {kind} {case} {fmt(r['device_us'], 2)} us device; empty-kernel device "
                       f"floor {fmt(floor_dev, 2)} us ({fmt(r['device_us'] - floor_dev, 2)} us above it)")
    return out


def load_peer(path, errors):
    """{key: result} of a run_peer.py JSON and its context, or (None, None) when absent."""
    if path is None:
        return None, None
    doc = load(path)
    if doc is None:
        errors.append((os.path.basename(path), unreadable(path)))
        return None, None
    results = {r["key"]: r for r in doc.get("results", [])}
    for key, r in results.items():
        if not r.get("matches_reference", False):
            errors.append((f"peer {key}", r.get("mismatch", "does not match the reference")))
        if r.get("ours_matches_reference") is False:
            errors.append((f"ours in the peer's loop {key}", r.get("ours_mismatch", "does not match the reference")))
    return results, doc.get("context", {})


def same_loop_lines(peer, peer_ctx, runs):
    """Ours through the Python package and the peer, timed in run_peer.py's one loop (--ours):
    the comparison no difference between two harnesses can bias, beside kernel_bench's time of
    the same build and both harnesses' empty-kernel floors. No lines without such rows."""
    rows = sorted((key, r) for key, r in (peer or {}).items() if r.get("ours_device_us") is not None)
    if not rows:
        return []
    ctx = peer_ctx or {}
    ours_floor = runs.get("cuda/launch_floor/empty_kernel", {}).get("device_us")
    lines = ["### Kernel: ours and the peer timed in one loop\n",
             f"- run_peer.py --ours: each build after the same L2 flush and head start, CUDA events, median of "
             f"{ctx.get('reps', '?')}; ours through dsv4_indices.build (torch CUDA tensors); same-loop ratio = "
             "peer us / ours (> 1: ours is faster); kernel_bench us: the same build timed in C++",
             f"- floors: the loop's empty Triton kernel {fmt(ctx.get('empty_kernel_device_us'), 2)} us, "
             f"kernel_bench's empty kernel {fmt(ours_floor, 2)} us\n",
             "| model | kind | case | ours us (same loop) | peer us | same-loop ratio | ours us (kernel_bench) |",
             "|---|---|---|---:|---:|---:|---:|"]
    for key, r in rows:
        model, kind, case = key.split("/")
        bench = runs.get(f"cuda/kernel/{key}", {}).get("device_us")
        lines.append(f"| {model} | {kind} | {case} | {fmt(r['ours_device_us'], 2)} | {fmt(r.get('device_us'), 2)} | "
                     f"{fmt(ratio(r.get('device_us'), r['ours_device_us']), 2)} | {fmt(bench, 2)} |")
    lines.append("")
    return lines


def traced_loop_lines(peer, peer_ctx):
    """run_peer.py --ours --kernel-trace: the same loop again under torch.profiler, each call's
    kernel timed by its own CUPTI start and end beside the events, so that a difference inside
    the kernel can be told from one in the launch. No lines without traced rows."""
    def traced(t):
        return t is not None and t.get("kernel_us") is not None

    rows = sorted((key, r) for key, r in (peer or {}).items()
                  if traced(r.get("ours_trace")) and traced(r.get("trace_engine")))
    if not rows:
        return []
    empty = (peer_ctx or {}).get("empty_kernel_trace") or {}
    lines = ["### Kernel: in one loop, each kernel's own time (run_peer.py --kernel-trace)\n",
             "- kernel us: the call's kernels from the first's start to the last's end (CUPTI, "
             "torch.profiler), median of the calls; gap us: from the head start's end to the first "
             "kernel's start (the event record and the launch); events us: the same traced calls' CUDA "
             "events; kernel ratio = peer kernel us / ours (> 1: ours is faster)",
             f"- the loop's empty Triton kernel: kernel {fmt(empty.get('kernel_us'), 2)} us, "
             f"gap {fmt(empty.get('gap_us'), 2)} us\n",
             "| model | kind | case | ours kernel us | peer kernel us | kernel ratio | ours gap us | peer gap us | "
             "ours events us | peer events us |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, r in rows:
        model, kind, case = key.split("/")
        o, p = r["ours_trace"], r["trace_engine"]
        lines.append(f"| {model} | {kind} | {case} | {fmt(o['kernel_us'], 2)} | {fmt(p['kernel_us'], 2)} | "
                     f"{fmt(ratio(p['kernel_us'], o['kernel_us']), 2)} | {fmt(o.get('gap_us'), 2)} | "
                     f"{fmt(p.get('gap_us'), 2)} | {fmt(o.get('event_us'), 2)} | {fmt(p.get('event_us'), 2)} |")
    lines.append("")
    return lines


def peer_line(ctx, what):
    return (f"- peer: {what}; Triton builder of SPEC §3 (bench/peer/triton_builder.py), "
            f"{ctx.get('gpu', '?')}, torch {ctx.get('torch', '?')}, triton {ctx.get('triton', '?')}")


def ratio(peer_us, ours_us):
    """peer / ours (> 1: ours is faster), or None."""
    return peer_us / ours_us if None not in (peer_us, ours_us) and ours_us > 0 else None


TRANSLATED = 3  # chain_floor_rows' key of cuda/translated_floor/... (StreamingBytes::kTranslated)
LOOKUPS = 4  # ... and of cuda/lookup_floor/... (StreamingBytes::kLookups)
FLOOR_NAMES = {1: "1-read floor", 2: "2-read floor", TRANSLATED: "translated floor", LOOKUPS: "lookup floor"}


def cuda_device_us(runs, what, key):
    """Device us of cuda/<what>/<key> (key: <model>/<kind>/<case>), or None where it was not
    measured or failed."""
    r = runs.get(f"cuda/{what}/{key}", {})
    return None if "error" in r else r.get("device_us")


def chain_floor_rows(runs):
    """A row per CUDA case with a chain floor (cuda/chain_floor/<hops>/<model>/<kind>/<case>, and
    cuda/translated_floor/<model>/<kind>/<case> as hops TRANSLATED, cuda/lookup_floor/... as
    LOOKUPS): its byte floor, chain floors
    by hops, our build and planned build, issue 8's target and where the target sits: below the
    1-read floor (no build can reach it as timed), below the 2-read floor (only a build whose
    columns need no table entry could), below the translated floor (only a build that knew a
    table entry before reading the input that names it could), below the lookup floor (only a
    build that read fewer table entries than its picks name could), or above every floor."""
    rows = {}
    for name, r in runs.items():
        parts = name.split("/")
        if parts[0] != "cuda" or "error" in r or "device_us" not in r:
            continue
        if len(parts) == 6 and parts[1] == "chain_floor":
            rows.setdefault("/".join(parts[3:]), {})[int(parts[2])] = r["device_us"]
        elif len(parts) == 5 and parts[1] in ("translated_floor", "lookup_floor"):
            hops = TRANSLATED if parts[1] == "translated_floor" else LOOKUPS
            rows.setdefault("/".join(parts[2:]), {})[hops] = r["device_us"]

    out = []
    for key, hops in rows.items():
        target = KERNEL_TARGETS_US.get(key)
        where = ""
        if target is not None:
            below = [h for h in sorted(hops) if target < hops[h]]
            where = f"below the {FLOOR_NAMES[below[0]]}" if below else "above every floor"
        out.append({"key": key, "byte_us": cuda_device_us(runs, "byte_floor", key), "hops_us": hops,
                    "ours_us": cuda_device_us(runs, "kernel", key),
                    "planned_us": cuda_device_us(runs, "kernel_planned", key),
                    "target_us": target, "target_vs_floors": where})
    out.sort(key=lambda r: (r["key"].split("/")[0], KIND_ORDER.get(r["key"].split("/")[1], 9),
                            case_rank(r["key"].split("/")[2])))
    return out


def kernel_floor_targets(rows, targets):
    """For each chain_floor_rows row with a kernel target: its highest measured floor against
    the target, as a target line of its own. A floor that misses its target shows the target
    out of reach as timed: no build of those bytes and dependencies can beat the floor."""
    for r in rows:
        if r["target_us"] is None or not r["hops_us"]:
            continue
        hops, floor_us = max(r["hops_us"].items(), key=lambda h: h[1])
        model, kind, case = r["key"].split("/")
        targets.append((f"{model} {kind} {case} build: its {FLOOR_NAMES[hops]}, device (a build can meet "
                        "the target only if this does)", "cuda", floor_us, r["target_us"]))


def copy_bandwidth_targets(runs, targets):
    """Issue 8's bandwidth target as device-us target lines: each CUDA build whose measured byte
    floor (cuda/byte_floor/...) takes >= COPY_TARGET_MIN_FLOOR_US must move its bytes at
    COPY_TARGET_SHARE of the run's copy bandwidth or more, i.e. take at most bytes / (share x
    copy). Judged on the build, on its planned form, and on its byte floor: a floor that misses
    shows the target out of reach as timed."""
    for name, r in runs.items():
        parts = name.split("/")
        if len(parts) != 5 or parts[:2] != ["cuda", "kernel"] or "error" in r:
            continue
        key = "/".join(parts[2:])
        floor_us = cuda_device_us(runs, "byte_floor", key)
        copy_gbps, nbytes = r.get("copy_GBps"), r.get("bytes")
        if floor_us is None or floor_us < COPY_TARGET_MIN_FLOOR_US or not copy_gbps or not nbytes:
            continue
        target_us = nbytes / (COPY_TARGET_SHARE * copy_gbps * 1e3)
        share = (f"at >= {fmt(100 * COPY_TARGET_SHARE, 0)} % of the run's copy bandwidth ({fmt(copy_gbps)} GB/s), "
                 "device")
        model, kind, case = parts[2:]
        targets.append((f"{model} {kind} {case} build {share}", "cuda", r.get("device_us"), target_us))
        planned_us = cuda_device_us(runs, "kernel_planned", key)
        if planned_us is not None:
            targets.append((f"{model} {kind} {case} build reading the token plan {share}", "cuda",
                            planned_us, target_us))
        targets.append((f"{model} {kind} {case} build: its byte floor {share} (a build can meet the target only "
                        "if this does)", "cuda", floor_us, target_us))


def chain_floor_lines(rows):
    """chain_floor_rows as a table (nothing when there are none)."""
    if not rows:
        return []
    translated = any(TRANSLATED in r["hops_us"] for r in rows)
    lookups = any(LOOKUPS in r["hops_us"] for r in rows)
    lines = ["- chain floors: the byte floor's kernel with each thread's writes after 1 or 2 dependent reads "
             "(the 8-byte plan entry of its row, rows as wide as the build's, read before its other reads, then a "
             "table entry it names), as a planned prefill row's outputs wait on plan -> block table and a "
             "local-form decode row's on input -> block table: 1 read is a floor of every build (no output word "
             "is known before a read), 2 of every translated column (the -1 padding, the lengths and copied "
             "columns need only one)"]
    if translated:
        lines.append("- translated floor (cuda/translated_floor/...): the 2-read chain floor with each 16-byte word "
                     "of the build's translated inputs (its top-k, a local-form decode row's indices) written only "
                     "after a table entry named by the word's own value, as a translated column knows its block "
                     "only once its input is read (one entry a word: four indices may share a block)")
    if lookups:
        lines.append("- lookup floor (cuda/lookup_floor/..., C4A): the translated floor with a table entry for each "
                     "translated value instead of each word, from a table of the build's block-table row, the "
                     "inputs' values spread over it, as a C4A row's picks (rarely four in one block) need")
    lines += ["", "| model | kind | case | byte floor us | 1-read floor us | 2-read floor us | "
              + ("translated floor us | " if translated else "") + ("lookup floor us | " if lookups else "")
              + "ours us | planned us | target us | target |",
              "|---|---|---|---:|---:|---:|" + ("---:|" if translated else "") + ("---:|" if lookups else "")
              + "---:|---:|---:|---|"]
    for r in rows:
        model, kind, case = r["key"].split("/")
        lines.append(f"| {model} | {kind} | {case} | {fmt(r['byte_us'], 2)} | {fmt(r['hops_us'].get(1), 2)} | "
                     f"{fmt(r['hops_us'].get(2), 2)} | "
                     + (f"{fmt(r['hops_us'].get(TRANSLATED), 2)} | " if translated else "")
                     + (f"{fmt(r['hops_us'].get(LOOKUPS), 2)} | " if lookups else "")
                     + f"{fmt(r['ours_us'], 2)} | {fmt(r['planned_us'], 2)} | "
                     f"{fmt(r['target_us'], 1)} | {r['target_vs_floors']} |")
    lines.append("")
    return lines


def kernel_section(doc, lines, targets, floor_notes, peer=None, peer_ctx=None):
    ctx = doc.get("context", {})
    runs = collapse(doc)
    copy_bw = None
    for name, r in runs.items():
        if "/copy_bw/" in name and "GBps" in r:
            copy_bw = r["GBps"]
    startup_bw = ctx.get("dsv4_copy_bw_GBps")
    lines.append("## Kernel: one build per layer kind\n")
    if "dsv4_device" in ctx:
        lines.append(f"- {ctx['dsv4_device']}")
    if copy_bw is not None or startup_bw is not None:
        lines.append(f"- device-to-device copy bandwidth (bytes read + written): "
                     f"{fmt(copy_bw)} GB/s (copy_bw benchmark), "
                     f"{fmt(float(startup_bw)) if startup_bw else '–'} GB/s at start-up "
                     f"(the denominator of % copy BW)")
    lines.append("- device us: CUDA events around one build() after an L2 flush (CPU timings: "
                 "wall time); host us: the build() call alone, launch included, no sync")
    lines += floor_lines(launch_floors(runs))
    lines += arg_bytes_lines(runs)
    if peer is not None:
        lines.append(peer_line(peer_ctx, f"device us median of {peer_ctx.get('reps', '?')} builds, "
                                         "CUDA events, L2 flushed by a 512 MiB read; same inputs "
                                         "(bench_inputs), output checked equal to the reference; "
                                         "ratio = peer us / ours (> 1: ours is faster)"))
    lines.append("")
    kernels, byte_floors, planned = [], {}, {}
    for name, r in runs.items():
        parts = name.split("/")
        if len(parts) == 5 and parts[1] == "kernel":
            kernels.append((parts[0], parts[2], parts[3], parts[4], r))
        if len(parts) == 5 and parts[1] == "kernel_planned" and "error" not in r:
            planned["/".join(parts[2:])] = r
        if len(parts) == 5 and parts[1] == "byte_floor" and "error" not in r:
            byte_floors["/".join(parts[2:])] = r
    if byte_floors:
        lines.append("- byte floor: a streaming kernel moving exactly the build's bytes (16-byte words, "
                     "the fastest of 1, 2 or 4 per thread in CTAs of 256 threads or, since 2026-12-04, of 32), "
                     "timed like a build: what those bytes take at best "
                     "as measured; of floor = floor us / ours (1.00: at the floor)")
    if planned:
        lines.append("- planned: the same build reading the step's token plan (request, position per prefill "
                     "token; kernels/token_plan.h), as every build of a cached step after its first does; "
                     "its inputs are 4 bytes per prefill token more than the byte floor counts")
    # The peer columns only where there are peer results: the table is unchanged otherwise.
    peer_cols = peer is not None
    floor_cols = bool(byte_floors)
    planned_cols = bool(planned)
    if kernels:
        lines.append("| timing | model | kind | case | device us | GB/s | % copy BW | host us |"
                     + (" floor us | of floor |" if floor_cols else "")
                     + (" peer us | ratio |" if peer_cols else "")
                     + (" planned us | planned ratio |" if planned_cols else ""))
        lines.append("|---|---|---|---|---:|---:|---:|---:|" + ("---:|---:|" if floor_cols else "")
                     + ("---:|---:|" if peer_cols else "") + ("---:|---:|" if planned_cols else ""))
        kernels.sort(key=lambda k: (k[0], k[1], KIND_ORDER.get(k[2], 9),
                                    case_rank(k[3])))
        for prefix, model, kind, case, r in kernels:
            extra = ""
            if floor_cols:
                f_us = byte_floors.get(f"{model}/{kind}/{case}", {}).get("device_us") if prefix == "cuda" else None
                extra += f" {fmt(f_us, 2)} | {fmt(ratio(f_us, r.get('device_us')), 2)} |"
            if peer_cols:
                # The peer ran on the GPU: a ratio against CPU timings would mean nothing.
                p = peer.get(f"{model}/{kind}/{case}", {}) if prefix == "cuda" else {}
                p_us = p.get("device_us") if p.get("matches_reference") else None
                extra += f" {fmt(p_us, 2)} | {fmt(ratio(p_us, r.get('device_us')), 2)} |"
            if planned_cols:
                # planned ratio: the peer's us over the planned build's where the peer ran, else
                # the plain build's over it.
                pl_us = planned.get(f"{model}/{kind}/{case}", {}).get("device_us") if prefix == "cuda" else None
                over = p_us if peer_cols else r.get("device_us")
                extra += f" {fmt(pl_us, 2)} | {fmt(ratio(over, pl_us), 2)} |"
            if "error" in r:
                lines.append(f"| {prefix} | {model} | {kind} | {case} | ERROR: {r['error']} | | | |"
                             + (" | |" if floor_cols else "") + (" | |" if peer_cols else "")
                             + (" | |" if planned_cols else ""))
                continue
            lines.append(f"| {prefix} | {model} | {kind} | {case} | {fmt(r.get('device_us'), 2)} | "
                         f"{fmt(r.get('GBps'))} | {fmt(r.get('pct_of_copy_bw'))} | "
                         f"{fmt(r.get('host_us'), 2)} |" + extra)
        lines.append("")
        floor_rows = chain_floor_rows(runs)
        lines += chain_floor_lines(floor_rows)
        kernel_floor_targets(floor_rows, targets)
        copy_bandwidth_targets(runs, targets)
        lines += same_loop_lines(peer, peer_ctx, runs)
        lines += traced_loop_lines(peer, peer_ctx)
        floor_notes += floor_comparisons(kernels, launch_floors(runs))
        for prefix, model, kind, case, r in kernels:
            key = f"{model}/{kind}/{case}"
            if prefix == "cuda" and key in KERNEL_TARGETS_US and "error" not in r:
                f_us = byte_floors.get(key, {}).get("device_us")
                floor_note = f", byte floor {fmt(f_us, 2)} us" if f_us is not None else ""
                targets.append((f"{model} {kind} {case} build, device{floor_note}", prefix,
                                r.get("device_us"), KERNEL_TARGETS_US[key]))
                if key in planned:
                    targets.append((f"{model} {kind} {case} build reading the token plan, device{floor_note}",
                                    prefix, planned[key].get("device_us"), KERNEL_TARGETS_US[key]))
        # The host backend's build() is the whole build: the launch-cost target is CUDA's.
        for prefix in sorted({k[0] for k in kernels} & {"cuda"}):
            hosts = [(k[4].get("host_us"), k) for k in kernels if k[0] == prefix and "host_us" in k[4]]
            if hosts:
                worst, k = max(hosts, key=lambda h: h[0])
                targets.append((f"build() call host time, worst case ({k[1]} {k[2]} {k[3]})",
                                prefix, worst, BUILD_HOST_TARGET_US))
    hits, checks = [], []
    for name, r in runs.items():
        parts = name.split("/")
        if len(parts) == 3 and parts[1] in ("cache_hit", "indexer_hit"):
            hits.append((parts[0], parts[1], parts[2], r))
        elif len(parts) == 3 and parts[1] == "step_check":
            checks.append((parts[0], parts[2], r))
    if hits:
        lines.append("| timing | lookup | kind | host us per hit |")
        lines.append("|---|---|---|---:|")
        for prefix, what, kind, r in sorted(hits, key=lambda h: (h[0], h[1], KIND_ORDER.get(h[2], 9))):
            lines.append(f"| {prefix} | {what} | {kind} | {fmt(r.get('host_us'), 3)} |")
            if what == "cache_hit":
                targets.append((f"StepIndexCache hit host time ({kind})", prefix,
                                r.get("host_us"), CACHE_HIT_TARGET_US))
        lines.append("")
    if checks:
        lines.append("- step check: the step's structural check (SPEC §4) on the host copies of its metadata, "
                     "once per step before its first launch (StepIndexer's constructor); host us per call\n")
        lines.append("| timing | case | tokens | host us |")
        lines.append("|---|---|---:|---:|")
        for prefix, case, r in sorted(checks, key=lambda c: (c[0], case_rank(c[1]))):
            lines.append(f"| {prefix} | {case} | {fmt(r.get('tokens'), 0)} | {fmt(r.get('host_us'), 2)} |")
        lines.append("")
    errors = [(n, r["error"]) for n, r in runs.items() if "error" in r]
    return errors


def saved_pct(uncached, cached):
    return 100 * (uncached - cached) / uncached if None not in (uncached, cached) and uncached > 0 else None


def peer_step_table(steps, peer, peer_ctx, lines):
    """Our cached step wall time beside the peer's eager and CUDA-graph ones, per model/case."""
    lines.append("### Step: ours (cached) vs the Triton peer\n")
    lines.append(peer_line(peer_ctx, f"median of {peer_ctx.get('reps', '?')} steps; every layer through "
                                     "the same per-step cache (SWA-only and C128A built once, each C4A "
                                     "layer from its own top-k copy), outputs checked equal to the reference"))
    lines.append("- ours: step_bench's cached wall us (StepIndexer + every layer, stream idle at the start, "
                 "until the host has seen the last build); peer eager: the same, Python layer loop until "
                 "torch.cuda.synchronize() returns; peer graph: one CUDAGraph replay + synchronize; "
                 "device us by CUDA events; ratio = peer wall / ours (> 1: ours is faster)\n")
    lines.append("| model | case | builds ours | builds peer | ours wall us | peer eager wall us | "
                 "peer eager device us | peer graph wall us | peer graph device us | ratio eager | "
                 "ratio graph |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    keys = sorted({(m, c) for (_, m, c) in steps} | {(p["model"], p["case"]) for p in peer.values()},
                  key=lambda k: (k[0], case_rank(k[1])))
    for model, case in keys:
        ours = steps.get(("cuda", model, case), {}).get("cached", {})
        p = peer.get(f"step/{model}/{case}", {})
        ok = p.get("matches_reference", False)
        ow = ours.get("wall_us") if "error" not in ours else None
        ew, gw = (p.get("eager_wall_us"), p.get("graph_wall_us")) if ok else (None, None)
        ed, gd = (p.get("eager_device_us"), p.get("graph_device_us")) if ok else (None, None)
        lines.append(f"| {model} | {case} | {fmt(ours.get('builder_calls'), 0)} | "
                     f"{fmt(p.get('builds'), 0)} | {fmt(ow)} | {fmt(ew)} | {fmt(ed)} | {fmt(gw)} | "
                     f"{fmt(gd)} | {fmt(ratio(ew, ow), 2)} | {fmt(ratio(gw, ow), 2)} |")
    lines.append("")


def step_runs(runs, what="step"):
    """step_bench's <timing>/<what>/<model>/<case>/<variant> runs (what: step, or step_floor for
    the measured floors) as {(timing, model, case): {variant: run}}."""
    steps = {}
    for name, r in runs.items():
        parts = name.split("/")
        if len(parts) == 5 and parts[1] == what:
            steps.setdefault((parts[0], parts[2], parts[3]), {})[parts[4]] = r
    return steps


def step_section(doc, lines, targets, floor_notes, peer=None, peer_ctx=None):
    runs = collapse(doc)
    steps = step_runs(runs)
    lines.append("## Step: every layer of the schedule, uncached vs cached\n")
    ctx = doc.get("context", {})
    if "dsv4_device" in ctx:
        lines.append(f"- {ctx['dsv4_device']}")
    lines.append("- device us: CUDA events around StepIndexer construction + all layer calls, host "
                 "given a head start (CPU timings: wall time); host us: wall time of those calls without "
                 "the final sync; total = device + host (sum, conservative; CPU timings: the wall time); "
                 "wall = end to end as an engine sees it, host and device overlapped (stream idle at the "
                 "start, host clock until the host has seen the last build complete; CPU timings: the "
                 "wall time); saved = the reduction, by total and by wall\n")
    if steps:
        lines.append("| timing | model | case | builds | device us uncached | device us cached | "
                     "host us uncached | host us cached | total uncached | total cached | "
                     "wall us uncached | wall us cached | saved (total) | saved (wall) |")
        lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        keys = sorted(steps, key=lambda k: (k[0], k[1], case_rank(k[2])))
        for key in keys:
            u, c = steps[key].get("uncached", {}), steps[key].get("cached", {})
            if "error" in u or "error" in c:
                lines.append(f"| {key[0]} | {key[1]} | {key[2]} | ERROR: {u.get('error', c.get('error'))} "
                             "| | | | | | | | | |")
                continue
            ud, cd = u.get("device_us"), c.get("device_us")
            uh, ch = u.get("host_us"), c.get("host_us")
            ut, ct = u.get("dev_plus_host_us"), c.get("dev_plus_host_us")
            uw, cw = u.get("wall_us"), c.get("wall_us")
            builds = f"{fmt(u.get('builder_calls'), 0)} -> {fmt(c.get('builder_calls'), 0)}"
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {builds} | {fmt(ud, 1)} | {fmt(cd, 1)} | "
                         f"{fmt(uh, 1)} | {fmt(ch, 1)} | {fmt(ut, 1)} | {fmt(ct, 1)} | "
                         f"{fmt(uw, 1)} | {fmt(cw, 1)} | {fmt(saved_pct(ut, ct))} % | "
                         f"{fmt(saved_pct(uw, cw))} % |")
            target = c.get("target_us")  # step_bench's target of this step, if it has one
            if target:
                # The target is the cached path's; the uncached path is judged too, to show
                # what the cache buys on each definition.
                path_note = {"cached": "cached", "uncached": "uncached (for comparison)"}
                for path, r in (("cached", c), ("uncached", u)):
                    for counter, definition in STEP_DEFINITIONS:
                        targets.append((f"{key[1]} prefill 8K step, {path_note[path]}, {definition}", key[0],
                                        r.get(counter), target))
        lines.append("")
    modes_section(steps, lines, targets, step_runs(runs, "step_floor"), step_runs(runs, "step_chain_floor"),
                  step_runs(runs, "step_translated_floor"))
    graph_section(runs, lines, targets, steps, peer)
    if peer is not None:
        peer_step_table(steps, peer, peer_ctx, lines)
    return [(n, r["error"]) for n, r in runs.items() if "error" in r]


MODE_VARIANTS = ("cached", "cached_one_launch", "split", "split_one_launch", "tail", "tail_one_launch")


def modes_section(steps, lines, targets, measured_floors=None, chain_floors=None, translated_floors=None):
    """step_bench's SPEC §8 modes (issue 12) beside the seed's cached step: wall us, the byte
    floor at the run's copy bandwidth and as measured (a streaming kernel per build of the mode),
    with chain_floors the same with every build's writes after its plan and table entries, with
    translated_floors (cuda/step_translated_floor/...) those and each translated input word's
    own table entry, builds and launches per step."""
    keys = [k for k in steps if any(v in steps[k] for v in MODE_VARIANTS[1:])]
    if not keys:
        return
    measured_floors = measured_floors or {}
    chain_floors = chain_floors or {}
    translated_floors = translated_floors or {}
    chain_col = bool(chain_floors)
    translated_col = bool(translated_floors)

    def wall_and_device(m):
        return (f"{fmt(m.get('wall_us'), 1)} ({fmt(m.get('device_us'), 1)})" if m.get("wall_us") is not None
                else "ERROR" if "error" in m else "–")

    lines.append("## Step: SPEC §8 sharing modes against the seed (cached)\n")
    lines.append("- wall us as above; floor = the bytes the mode's builds must move (each build's part) at the "
                 "run's D2D copy bandwidth (CUDA only); measured floor = those bytes streamed as the mode launches "
                 "them (step_bench's cuda/step_floor/...: a streaming kernel per build, each moving that build's "
                 "bytes, programmatic dependent launch, timed like the step: wall, and device in parentheses; – "
                 "where not measured); builds / launches per step"
                 + ("; chain floor = the measured floor with each build's writes after 2 dependent reads, its "
                    "row's plan entry then a table entry (cuda/step_chain_floor/...), as a planned build's "
                    "translated columns wait" if chain_col else "")
                 + ("; translated floor = the chain floor with each 16-byte word of each build's translated inputs "
                    "(its top-k) written only after a table entry its own value names "
                    "(cuda/step_translated_floor/...)" if translated_col else "") + "\n")
    lines.append("| timing | model | case | mode | builds / launches | wall us | floor us | measured floor us | "
                 + ("chain floor us | " if chain_col else "") + ("translated floor us | " if translated_col else "")
                 + "floor MB | saved vs seed (wall) |")
    lines.append("|---|---|---|---|---:|---:|---:|---:|" + ("---:|" if chain_col else "")
                 + ("---:|" if translated_col else "") + "---:|---:|")
    for key in sorted(keys, key=lambda k: (k[0], k[1], case_rank(k[2]))):
        seed_wall = steps[key].get("cached", {}).get("wall_us")
        for variant in MODE_VARIANTS:
            r = steps[key].get(variant)
            if r is None:
                continue
            if "error" in r:
                lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {variant} | ERROR: {r['error']} | | | |"
                             + (" |" if chain_col else "") + (" |" if translated_col else "") + " | |")
                continue
            m = measured_floors.get(key, {}).get(variant, {})
            chain = chain_floors.get(key, {}).get(variant, {})
            translated = translated_floors.get(key, {}).get(variant, {})
            floor_mb = r.get("floor_bytes")
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {variant} | {fmt(r.get('builder_calls'), 0)} / "
                         f"{fmt(r.get('launches'), 0)} | {fmt(r.get('wall_us'), 1)} | {fmt(r.get('floor_us'), 1)} | "
                         f"{wall_and_device(m)} | " + (f"{wall_and_device(chain)} | " if chain_col else "")
                         + (f"{wall_and_device(translated)} | " if translated_col else "")
                         + f"{fmt(floor_mb / 1e6 if floor_mb else None, 1)} | "
                         f"{fmt(saved_pct(seed_wall, r.get('wall_us')))} % |")
            # The seed's eager step is judged on issue 8's wall target (graph_section), the modes
            # on their own; each beside what its floors allow.
            if variant == "cached":
                target = STEP_WALL_TARGETS_US.get(key[1]) if key[2] == STEP_TARGET_CASE else None
            else:
                target = r.get("target_us")
            if variant != "cached" and target:
                targets.append((f"{key[1]} prefill 8K step, {variant}, wall", key[0], r.get("wall_us"), target))
                if m.get("wall_us") is not None:
                    targets.append((f"{key[1]} prefill 8K step, {variant}: its measured byte floor (streamed as "
                                    "launched), wall: a step can meet the target only if this does", key[0],
                                    m.get("wall_us"), target))
            if target and chain.get("wall_us") is not None:
                targets.append((f"{key[1]} prefill 8K step, {variant}: its 2-read chain floor (streamed as launched, "
                                "each build's writes after its plan and table entries), wall: a step launched so "
                                "can meet the target only if this does", key[0], chain.get("wall_us"), target))
            if target and translated.get("wall_us") is not None:
                targets.append((f"{key[1]} prefill 8K step, {variant}: its translated floor (the chain floor with "
                                "each build's translated inputs written after a table entry each), wall: a step "
                                "launched so can meet the target only if this does", key[0],
                                translated.get("wall_us"), target))
    lines.append("")


GRAPH_VARIANTS = ("_split_nostatus", "_nostatus", "_split", "_chains1", "_chains2", "_chains8", "_chains64")


def graph_variant(name):
    """(key, variant) of a step_bench <prefix>/step_graph/<model>/<case><variant> name, key =
    (prefix, model, case), variant one of GRAPH_VARIANTS without its "_" or "" (the default
    graph); None for any other name."""
    parts = name.split("/")
    if len(parts) != 4 or parts[1] != "step_graph":
        return None
    for suffix in GRAPH_VARIANTS:
        if parts[3].endswith(suffix):
            return (parts[0], parts[2], parts[3][:-len(suffix)]), suffix[1:]
    return (parts[0], parts[2], parts[3]), ""


def graph_section(runs, lines, targets, steps=None, peer=None):
    """step_bench's <prefix>/step_graph/<model>/<case>: a cached step recorded once as a
    StepGraph and replayed (issue 10 items 3 and 6), beside our eager cached step of the same
    case and the peer's eager and graph-replayed step when the run has them."""
    # variant -> key -> run: "" the default graph, "split" (SPEC §8), "chains1" (builds one after
    # another), "chains64" (every build a chain of its own), "nostatus" / "split_nostatus"
    # (without the status words)
    variants = {}
    floors = {}
    for name, r in runs.items():
        parsed = graph_variant(name)
        if parsed:
            variants.setdefault(parsed[1], {})[parsed[0]] = r
        parts = name.split("/")
        if len(parts) == 4 and parts[1:3] == ["launch_floor", "graph"] and "error" not in r:
            floors[parts[3]] = r
    graphs = variants.get("", {})
    split_graphs = variants.get("split", {})
    chained = variants.get("chains1", {})
    at_once = variants.get("chains64", {})
    no_status = variants.get("nostatus", {})
    split_no_status = variants.get("split_nostatus", {})
    if not graphs:
        return
    steps = steps or {}
    peer = peer or {}
    lines.append("## Step graph: a cached step replayed as one CUDA graph\n")
    lines.append("- decode steps: drawn into buffers of their capacities; steps with prefill rows: the "
                 "bench case's step in persistent buffers of its own sizes (SPEC §7 builds: run-time sizes, "
                 "each row's metadata checked), as an engine that captures its prefill metadata builds runs them\n")
    lines.append("- wall us: host clock from the replay call (stream idle, L2 flushed) until the host has "
                 "seen the graph complete, the step's builds running as StepGraphSpec's default number of "
                 "chains at once (they read only inputs written before the replay); 1 chain: the same builds "
                 "one after another in layer order, each waiting for the one before (programmatic launch), as "
                 "in an engine graph that interleaves them with its layers; 64 chains: every build at once "
                 "(wall, host); split: the same step as a split graph (SPEC §8: the SWA segment built once, "
                 "then each layer's compressed segment; one build more), wall; no status words: the "
                 "default graph and the split graph recorded without SPEC §7's status words (their checks "
                 "run beside the builds' chains), wall; "
                 "host us: the replay call alone (CPU timings: the host backend "
                 "re-running the recorded builds); ours eager: step_bench's cached step of the same case "
                 "(wall, host); peer: the Triton peer's cached step of the same case, eager (Python layer "
                 "loop) and replayed as a CUDA graph (wall)\n")
    lines.append("| timing | model | case | builds | graph wall us | graph host us | 1 chain wall us | "
                 "64 chains wall / host us | split graph wall us | no status words: graph / split wall us | "
                 "ours eager wall us | ours eager host us | peer eager wall us | peer graph wall us |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    keys = sorted(graphs, key=lambda k: (k[0], k[1], case_rank(k[2])))
    for key in keys:
        r = graphs[key]
        if "error" in r:
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | ERROR: {r['error']} | | | | | | | | | | |")
            continue
        eager = steps.get(key, {}).get("cached", {})
        split = split_graphs.get(key, {})
        p = peer.get(f"step/{key[1]}/{key[2]}", {}) if key[0] == "cuda" else {}
        ok = p.get("matches_reference", False)
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {fmt(r.get('builder_calls'), 0)} | "
                     f"{fmt(r.get('wall_us'), 1)} | {fmt(r.get('host_us'), 1)} | "
                     f"{fmt(chained.get(key, {}).get('wall_us'), 1)} | "
                     f"{fmt(at_once.get(key, {}).get('wall_us'), 1)} / {fmt(at_once.get(key, {}).get('host_us'), 1)} | "
                     f"{'ERROR' if 'error' in split else fmt(split.get('wall_us'), 1)} | "
                     f"{fmt(no_status.get(key, {}).get('wall_us'), 1)} / "
                     f"{fmt(split_no_status.get(key, {}).get('wall_us'), 1)} | "
                     f"{fmt(eager.get('wall_us'), 1)} | {fmt(eager.get('host_us'), 1)} | "
                     f"{fmt(p.get('eager_wall_us') if ok else None, 1)} | "
                     f"{fmt(p.get('graph_wall_us') if ok else None, 1)} |")
        for counter, target_counter in (("wall_us", "wall_target_us"), ("host_us", "host_target_us")):
            if r.get(target_counter):
                targets.append((f"{key[1]} {key[2]} graph replay, {counter}", key[0], r.get(counter),
                                r.get(target_counter)))
        step_wall_targets(key, r, chained.get(key, {}), eager, p if ok else {}, targets)
        split_graph_target(key, split, targets)
    lines.append("")
    if floors:
        lines.append("### Graph launch floor\n")
        lines.append("- a graph of N launches of a kernel of 64 CTAs that only waits for its predecessor "
                     "(griddepcontrol), follows h dependent reads (h = 2: one from a page of its own, a DRAM "
                     "round trip after the flush, then one from a page all share) and stores; timed like the "
                     "step graph. _pdl: captured with programmatic dependent launch, as the builds are\n")
        lines.append("| graph | wall us | host us |")
        lines.append("|---|---:|---:|")
        for name in sorted(floors, key=lambda n: (int(n.split("x")[0]), n)):
            lines.append(f"| {name} | {fmt(floors[name].get('wall_us'), 1)} | {fmt(floors[name].get('host_us'), 1)} |")
        lines.append("")


def step_wall_targets(key, graph, chained, eager, peer, targets):
    """Issue 8's step targets for one (timing, model, case): our eager cached step and our step
    graph (default chains, and 1 chain: the builds one after another) against the wall target,
    and against the peer's graph-replayed step of the same run (the target there is its time)."""
    timing, model, case = key
    target = STEP_WALL_TARGETS_US.get(model)
    if case != STEP_TARGET_CASE or target is None:
        return
    for what, r in (("eager cached step", eager), ("step graph", graph), ("step graph, 1 chain", chained)):
        if r.get("wall_us") is None or "error" in r:
            continue
        targets.append((f"{model} prefill 8K {what}, wall (issue 8)", timing, r["wall_us"], target))
        if peer.get("graph_wall_us") is not None:
            targets.append((f"{model} prefill 8K {what}, wall, against the peer's graph-replayed step "
                            "(issue 8: faster than it)", timing, r["wall_us"], peer["graph_wall_us"]))


def split_graph_target(key, split, targets):
    """Issue 12's split-mode step target (step_bench's target_us counter) on the split step graph."""
    timing, model, case = key
    if "error" in split or split.get("wall_us") is None or not split.get("target_us"):
        return
    targets.append((f"{model} prefill 8K step, split, as a step graph, wall (issue 12)", timing, split["wall_us"],
                    split["target_us"]))


def cached_steps(doc, paths, suffix=""):
    """{((timing, model, case), path): run} of step_bench's runs <path><suffix> without error."""
    return {(key, path): runs[path + suffix] for key, runs in step_runs(collapse(doc)).items()
            for path in paths if path + suffix in runs and "error" not in runs[path + suffix]}


def step_ab_section(on, off, lines, title, off_note):
    """Cached steps as step_bench runs them by default (on) against the same steps with one
    feature off, per step variant: on and off as cached_steps() gives them."""
    keys = sorted(set(on) & set(off), key=lambda k: (k[0][0], k[0][1], case_rank(k[0][2]), k[1]))
    if not keys:
        return
    lines.append(f"### Step: {title} on (default) vs off\n")
    lines.append(f"- {off_note}; device and wall us as above; gain = (off - on) / off\n")
    lines.append("| timing | model | case | step | device us off | device us on | gain (device) | wall us off | "
                 "wall us on | gain (wall) |")
    lines.append("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for key in keys:
        a, b = off[key], on[key]
        (prefix, model, case), path = key
        lines.append(f"| {prefix} | {model} | {case} | {path} | {fmt(a.get('device_us'))} | {fmt(b.get('device_us'))} | "
                     f"{fmt(saved_pct(a.get('device_us'), b.get('device_us')))} % | {fmt(a.get('wall_us'))} | "
                     f"{fmt(b.get('wall_us'))} | {fmt(saved_pct(a.get('wall_us'), b.get('wall_us')))} % |")
    lines.append("")


def ttft_stand_in(r):
    """A TTFT row's stand-in; JSON from before the column had only the busy-wait."""
    return r.get("stand_in", "none" if r["rest_of_layer_us"] == 0 else "busy-wait")


def ttft_mode(r):
    """A TTFT row's SPEC §8 sharing mode; JSON from before the column had the seed's cache only."""
    return r.get("mode", "seed")


def ttft_section(doc, lines):
    meta = doc.get("metadata", {})
    lines.append("## TTFT: chunked prefill through the whole schedule\n")
    lines.append(f"- {meta.get('timing', '')}; GPU {meta.get('gpu_name', '?')}, driver "
                 f"{meta.get('driver_version', '?')}, runtime {meta.get('cuda_runtime_version', '?')}, "
                 f"commit {meta.get('git_commit', '?')}, {meta.get('date', '')}")
    lines.append(f"- {meta.get('chunk_tokens', '?')} tokens per step; gain = (uncached - cached) / "
                 f"uncached, median of {meta.get('reps', '?')}; rest of layer 0 runs no stand-in")
    lines.append(f"- cached in each sharing mode ({', '.join(meta.get('modes', ['seed']))}); vs seed = "
                 "(seed - mode) / seed of the cached TTFTs")
    if meta.get("verify"):
        lines.append(f"- outputs checked against the reference: {meta.get('verified_steps', '?')} "
                     "(step, mode) pairs")
    stand_ins = meta.get("stand_ins")
    if stand_ins:
        for s in stand_ins:
            cal = s.get("calibration", {})
            extra = ""
            if "one_pass_us" in s:
                extra = (f"; one pass {fmt(s['one_pass_us'], 1)} us "
                         f"({fmt(s.get('one_pass_gbps'), 0)} GB/s read + written)")
            lines.append(f"- stand-in **{s['name']}**: {s.get('what', '?')}; calibration "
                         f"measured = {fmt(cal.get('offset_us'), 2)} us + {fmt(cal.get('slope'), 4)} x "
                         f"requested{extra}")
    else:
        lines.append(f"- rest of layer: {meta.get('rest_of_layer', '?')} (stand-in busy-wait)")
    if meta.get("measure_seconds") is not None:
        budget = f" of a {fmt(meta['max_seconds'], 0)} s budget" if meta.get("max_seconds") else ""
        lines.append(f"- staged and measured in {fmt(meta['measure_seconds'], 1)} s{budget}")
    for skipped in meta.get("skipped", []):
        lines.append(f"- NOT MEASURED (time budget): {skipped}")
    checks = meta.get("stand_in_check", [])
    if checks and stand_ins:
        names = [s["name"] for s in stand_ins]
        tol = meta.get("stand_in_match_tolerance_pct", 5)
        lines.append("\nStand-in durations, each measured alone (they should match within "
                     f"{fmt(tol, 0)} %):\n")
        lines.append("| rest of layer us | " + " | ".join(f"{n} us" for n in names) +
                     " | streaming vs busy-wait | note |")
        lines.append("|---:|" + "---:|" * len(names) + "---:|---|")
        for c in checks:
            measured = c.get("measured_us", {})
            pct = c.get("streaming_vs_busy_wait_pct")
            notes = []
            if c.get("matched") is False:
                notes.append("MISMATCH")
            if c.get("below_one_streaming_pass"):
                notes.append("shorter than one streaming pass")
            lines.append(f"| {fmt(c['requested_us'], 0)} | " +
                         " | ".join(fmt(measured.get(n), 1) for n in names) +
                         f" | {'–' if pct is None else fmt(pct, 1) + ' %'} | {'; '.join(notes)} |")
    lines.append("")
    lines.append("| model | prompt | background decodes | rest of layer us | stand-in | mode | TTFT uncached ms | "
                 "TTFT cached ms | gain % | vs seed % |")
    lines.append("|---|---:|---:|---:|---|---|---:|---:|---:|---:|")
    for r in doc.get("results", []):
        vs_seed = r.get("gain_vs_seed_pct") if ttft_mode(r) != "seed" else None
        lines.append(f"| {r['model']} | {r['prompt_tokens']} | {r['background_decodes']} | "
                     f"{fmt(r['rest_of_layer_us'], 0)} | {ttft_stand_in(r)} | {ttft_mode(r)} | "
                     f"{fmt(r['uncached_ms'], 3)} | {fmt(r['cached_ms'], 3)} | {fmt(r['gain_pct'], 2)} | "
                     f"{fmt(vs_seed, 2)} |")
    lines.append("")
    # The two stand-ins side by side: what evicting the L2 does to the gain.
    pairs = {}
    for r in doc.get("results", []):
        key = (r["model"], r["prompt_tokens"], r["background_decodes"], r["rest_of_layer_us"], ttft_mode(r))
        pairs.setdefault(key, {})[ttft_stand_in(r)] = r["gain_pct"]
    both = [(k, v) for k, v in pairs.items() if "busy-wait" in v and "streaming" in v]
    if both:
        lines.append("Gain with each stand-in of the same duration (streaming evicts the L2 between "
                     "layers; busy-wait leaves the builder's inputs cached):\n")
        lines.append("| model | prompt | background decodes | rest of layer us | mode | gain % busy-wait | "
                     "gain % streaming | difference (points) |")
        lines.append("|---|---:|---:|---:|---|---:|---:|---:|")
        for (model, prompt, bg, rest, mode), v in both:
            lines.append(f"| {model} | {prompt} | {bg} | {fmt(rest, 0)} | {mode} | {fmt(v['busy-wait'], 2)} | "
                         f"{fmt(v['streaming'], 2)} | {fmt(v['streaming'] - v['busy-wait'], 2)} |")
        lines.append("")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--out", help="default: DIR/summary.md")
    ap.add_argument("--require", default="", help="comma-separated inputs that must exist")
    args = ap.parse_args()
    missing = [f for f in args.require.split(",") if f and not os.path.exists(os.path.join(args.dir, f))]
    if missing:
        print(f"summarize.py: missing {', '.join(missing)} in {args.dir}", file=sys.stderr)
        return 1

    lines = ["# Benchmark summary\n"]
    targets, errors, floor_notes = [], [], []
    loaded = 0
    peers = {"kernel_bench.json": load_peer(found(args.dir, "peer_kernel.json"), errors),
             "step_bench.json": load_peer(found(args.dir, "peer_step.json"), errors)}
    for fname, section in (("kernel_bench.json", kernel_section), ("step_bench.json", step_section)):
        path = found(args.dir, fname)
        if path is not None:
            loaded += 1
            doc = load(path)
            if doc is None:
                errors.append((fname, unreadable(path)))
            else:
                errors += section(doc, lines, targets, floor_notes, *peers[fname])
    def optional_run(fname):
        path = found(args.dir, fname)
        return load(path) if path is not None else None
    on_doc = optional_run("step_bench.json")
    if on_doc is not None:
        off_doc = optional_run("step_bench_no_pdl.json")
        if off_doc is not None:
            step_ab_section(cached_steps(on_doc, ("cached",)), cached_steps(off_doc, ("cached",)), lines,
                            "programmatic dependent launch",
                            "off = step_bench --no_programmatic_launch in the same run")
        # The token plan's off steps: step_bench's own .../<step>_no_plan, or (results from
        # before those) a second step_bench run with --no_token_plan.
        plan_paths = ("cached", "split", "tail")
        off = cached_steps(on_doc, plan_paths, "_no_plan")
        note = ("off = the same steps without it (step_bench's .../<step>_no_plan, timed in the same process right "
                "after the case's other steps; every prefill row of every build reads its request's metadata)")
        off_doc = None if off else optional_run("step_bench_no_plan.json")
        if off_doc is not None:
            off = cached_steps(off_doc, plan_paths)
            note = ("off = step_bench --no_token_plan in the same run (every prefill row of every build reads its "
                    "request's metadata)")
        if off:
            step_ab_section(cached_steps(on_doc, plan_paths), off, lines, "per-step token plan", note)
    ttft_path = found(args.dir, "ttft.json")
    if ttft_path is not None:
        loaded += 1
        doc = load(ttft_path)
        if doc is None:
            errors.append(("ttft.json", "unreadable"))
        else:
            ttft_section(doc, lines)
    if loaded == 0:
        print(f"summarize.py: no kernel_bench.json, step_bench.json or ttft.json in {args.dir}",
              file=sys.stderr)
        return 1

    lines.append("## Targets\n")
    if targets:
        lines.append("| target | timing | measured us | target us | verdict |")
        lines.append("|---|---|---:|---:|---|")
        for what, prefix, value, target in targets:
            judged = verdict(value, target)
            if prefix == "cpu" and "hit" not in what:
                judged = "n/a: CPU timings, the target is for the H200"
            # (a target derived from bytes, such as the bandwidth target's, to the hundredth)
            digits = 1 if round(target, 1) == target else 2
            lines.append(f"| {what} | {timing_note(prefix)} | {fmt(value, 3)} | {fmt(target, digits)} | "
                         f"{judged} |")
    else:
        lines.append("(no targeted benchmark in these results)")
    lines.append("")
    if floor_notes:
        lines.append("Against the launch floor (an empty kernel timed like a build, same run):\n")
        lines += floor_notes
        lines.append("")
    if errors:
        lines.append("## Errors\n")
        for name, msg in errors:
            lines.append(f"- `{name}`: {msg}")
        lines.append("")

    out = args.out or os.path.join(args.dir, "summary.md")
    with open(out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    print(f"summarize.py: wrote {out}")
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
