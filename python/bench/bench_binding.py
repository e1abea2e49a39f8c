#!/usr/bin/env python3
"""Python host time of the binding: us per build() call (numpy / torch CPU on the host backend,
torch CUDA on the CUDA backend), without and with out= (caller-owned outputs), per
StepIndexer.layer() cache hit and C4A build, and per whole DeepSeek-V4-Flash step. Prints a table and writes JSON.

Host time is the wall time of the Python loop of calls (CUDA: launches only, the GPU is not
waited for); each case is rounds of N calls, median and minimum per call over the rounds
reported, beside the thread's CPU time per call (equal to the wall time on an idle machine; the
one to read on a shared one). The rounds of all cases of a framework are interleaved (measure),
so that a slow stretch of the host falls on every case alike. On CUDA the launching cases are
also timed with the GPU held busy while the loop launches (GpuGate: no call can wait for the
device, so the loop is host time alone) and the queued work's device time per call is reported
beside it. Issue 13's targets on an H200: build() with torch CUDA tensors <= 8 us (with out=
too), a cache hit <= 2 us.

    python3 python/bench/bench_binding.py [--json OUT.json] [--calls 2000] [--repeats 7]
"""
import argparse
import functools
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import dsv4_indices  # noqa: E402
from dsv4_indices import reference  # noqa: E402
from step_arrays import make_step  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

TARGETS = {("build", "torch", "cuda"): 8.0, ("build out=", "torch", "cuda"): 8.0, ("layer hit", "torch", "cuda"): 2.0}


class Case:
    """One reported row: its fields and a timed round, `run()` -> (wall us, CPU us) per call, this
    thread's CPU time beside the wall time (what the wall time would be on an idle machine, for
    a loop that never blocks). `launch` (CUDA): the call a held round repeats (gated_round)."""

    def __init__(self, fields, run, launch=None):
        self.fields, self.run, self.launch = fields, run, launch
        self.wall, self.cpu, self.held, self.device = [], [], [], []
        self.hold_us = None
        self.held_attempts = 0  # held rounds it may still run, counted or not (measure sets it)

    def result(self):
        r = dict(self.fields, us_median=float(np.median(self.wall)), us_min=float(min(self.wall)),
                 cpu_us_median=float(np.median(self.cpu)), cpu_us_min=float(min(self.cpu)))
        if self.held:
            r.update(gated_us_median=float(np.median(self.held)), gated_us_min=float(min(self.held)),
                     gpu_us_median=float(np.median(self.device)), gated_calls=min(self.fields["calls"], GATED_CALLS))
        return r


def calls_loop(fn, calls):
    """A round of `calls` calls of fn, timed whole."""
    def run():
        start, start_cpu = time.perf_counter_ns(), time.thread_time_ns()
        for _ in range(calls):
            fn()
        return (time.perf_counter_ns() - start) / calls / 1e3, (time.thread_time_ns() - start_cpu) / calls / 1e3
    return run


def measure(cases, repeats, sync=None, gate=None):
    """Every case's rounds interleaved: one warm-up round each, then `repeats` rounds in which
    every case runs once, in the order given and reversed every other round, and as many held
    rounds of the launching cases (with a gate). A slow stretch of the host (they last seconds
    on the shared H200 hosts, longer than one case's rounds) then falls on every case alike
    instead of on the cases that happen to run in it; the torch floors, measured in the same
    rounds, show it. The GPU drains before each round (`sync`), outside its timing."""
    for case in cases:
        if sync:
            sync()
        case.run()
    for round_ in range(repeats):
        for case in cases if round_ % 2 == 0 else cases[::-1]:
            if sync:
                sync()
            wall, cpu = case.run()
            case.wall.append(wall)
            case.cpu.append(cpu)
    if gate is None:
        return
    launching = [c for c in cases if c.launch is not None]
    for case in launching:
        case.held_attempts = 3 * repeats
    for round_ in range(repeats):
        for case in launching if round_ % 2 == 0 else launching[::-1]:
            gated_round(case, gate, sync)


class GpuGate:
    """Holds the GPU busy (torch.cuda._sleep on the current stream) while a timed loop launches,
    so that no call in the loop waits for the device: the loop's wall time is host time alone.
    Once released, the work the loop queued runs back to back: its device time per call."""

    def __init__(self):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        torch.cuda._sleep(1_000_000)
        end.record()
        end.synchronize()
        self.cycles_per_us = 1e6 / (start.elapsed_time(end) * 1e3)
        self.released = None

    def hold(self, us):
        torch.cuda._sleep(max(1, int(us * self.cycles_per_us)))
        self.released = torch.cuda.Event(enable_timing=True)
        self.released.record()

    def still_held(self):
        return not self.released.query()

    def device_us_per_call(self, calls):
        done = torch.cuda.Event(enable_timing=True)
        done.record()
        done.synchronize()
        return self.released.elapsed_time(done) * 1e3 / calls


GATED_CALLS = 200  # calls a gated round queues: well within the driver's queue of pending launches


def gated_round(case, gate, sync):
    """One counted held round of case.launch: GATED_CALLS calls with the GPU held (GpuGate) for
    the whole loop, then the device us per call of the queued work run back to back. A round
    whose gate opened before the loop ended (the loop outlasted the hold) is not counted and
    runs again with a hold twice as long (from then on), within case.held_attempts."""
    calls = min(case.fields["calls"], GATED_CALLS)
    if case.hold_us is None:
        case.hold_us = max(2000.0, 4 * float(np.median(case.wall)) * calls)
    while case.held_attempts > 0:
        case.held_attempts -= 1
        sync()
        gate.hold(case.hold_us)
        start = time.perf_counter_ns()
        for _ in range(calls):
            case.launch()
        us = (time.perf_counter_ns() - start) / calls / 1e3
        held = gate.still_held()
        device_us = gate.device_us_per_call(calls)
        if held:
            case.held.append(us)
            case.device.append(device_us)
            return
        case.hold_us *= 2
    raise RuntimeError(f"the GPU gate never held a whole loop of {case.fields['case']}")


def layer_kwargs(step, ratio, c4a_topk=None, topk=512):
    """build() arguments of one layer (SPEC §6)."""
    D = step["decode_swa_indices"].shape[0]
    kw = {k: step[k] for k in ("decode_swa_indices", "query_start_loc", "seq_lens", "token_to_req",
                               "swa_block_table", "swa_block_size")}
    kw["window"] = 128
    if ratio == 1:
        return dict(kw, ratio=1, topk=0)
    if ratio == 128:
        return dict(kw, ratio=128, topk=step["c128a_topk"], decode_compressed=step["c128a_decode_global"],
                    decode_compressed_lens=step["c128a_decode_lens"], prefill_topk=step["c128a_prefill_local"],
                    compressed_block_table=step["c128a_block_table"], compressed_block_size=step["c128a_block_size"])
    return dict(kw, ratio=4, topk=topk, decode_compressed=c4a_topk[:D], decode_local=True,
                decode_valid=step["decode_valid"], prefill_topk=c4a_topk[D:],
                compressed_block_table=step["c4a_block_table"], compressed_block_size=step["c4a_block_size"])


def convert(kwargs, framework, device):
    """The same arguments as numpy, torch CPU or torch CUDA tensors (+ host copies for CUDA)."""
    if framework == "numpy":
        return dict(kwargs)
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            out[k] = torch.from_numpy(np.ascontiguousarray(v)).to(device)
            if device.type == "cuda" and k in ("query_start_loc", "seq_lens", "token_to_req"):
                out[k + "_cpu"] = torch.from_numpy(v)
        else:
            out[k] = v
    return out


def output_pair(rows, width, framework, device):
    """build(out=...) arrays: int32 [rows, width] with 16-byte aligned rows (width is a
    multiple of 4 here) and [rows]."""
    if framework == "numpy":
        raw = np.empty(rows * width * 4 + 64, np.uint8)
        start = (-raw.__array_interface__["data"][0]) % 64
        return raw[start:start + rows * width * 4].view(np.int32).reshape(rows, width), np.empty(rows, np.int32)
    return (torch.empty((rows, width), dtype=torch.int32, device=device),  # the allocator aligns to 512 bytes
            torch.empty(rows, dtype=torch.int32, device=device))


STEP_KEYS = ("query_start_loc", "seq_lens", "token_to_req", "swa_block_table", "swa_block_size",
             "decode_swa_indices", "decode_valid", "c4a_block_table", "c4a_block_size", "c128a_block_table",
             "c128a_block_size", "c128a_topk", "c128a_decode_global", "c128a_decode_lens", "c128a_prefill_local")


def cases(framework, device, shapes, calls, repeats):
    """Every measurement of one framework/device, measured together (measure: rounds
    interleaved); returns their result dicts in the order made."""
    schedule = reference.deepseek_v4_flash()
    sync = torch.cuda.synchronize if device is not None and device.type == "cuda" else None
    backend = "cuda" if sync else "host"
    gate = GpuGate() if sync else None  # CUDA: the launching cases get held rounds too (measure)
    made = []

    def add(fields, run, launch=None):
        made.append(Case(fields, run, launch))

    if framework == "torch":
        # torch's own calls on this host, the floor beside build(): one Python call into torch's
        # C++ that launches one kernel on CUDA (fill_ of one element), and the two tensors that
        # build() without out= makes (torch.empty x2).
        one = torch.empty(1, dtype=torch.int32, device=device)
        base = dict(framework=framework, backend=backend, shape="floor", tokens=0, layer="-", calls=calls)
        fill = lambda: one.fill_(0)  # noqa: E731
        add(dict(base, case="torch fill_"), calls_loop(fill, calls), fill)
        add(dict(base, case="torch empty x2"), calls_loop(
            lambda: (torch.empty((1, 640), dtype=torch.int32, device=device),
                     torch.empty(1, dtype=torch.int32, device=device)), calls))
    live_steps = []  # the cache-hit indexers, inside their step until every round is done
    for shape_name, step in shapes.items():
        rng = np.random.default_rng(0)
        T, D = len(step["token_to_req"]), step["decode_swa_indices"].shape[0]
        pos_n = np.maximum(1, (step["seq_lens"][step["token_to_req"]] + 1) // 4)
        c4a = np.where(np.arange(512)[None, :] < pos_n[:, None],
                       (rng.random((T, 512)) * pos_n[:, None]).astype(np.int32), -1).astype(np.int32)
        base = dict(framework=framework, backend=backend, shape=shape_name, tokens=T, calls=calls)
        # build(): one SWA-only build (the cheapest kernel) and one C4A build.
        for kind, ratio in (("SWA-only", 1), ("C4A", 4)):
            kwargs = convert(layer_kwargs(step, ratio, c4a), framework, device)
            call = functools.partial(dsv4_indices.build, **kwargs)
            add(dict(base, case="build", layer=kind), calls_loop(call, calls), call)
        # build(out=...): the same builds into caller-owned arrays (SPEC §7), two more arrays read.
        for kind, ratio in (("SWA-only", 1), ("C4A", 4)):
            kwargs = convert(layer_kwargs(step, ratio, c4a), framework, device)
            out = output_pair(T, 128 + (0 if ratio == 1 else 512), framework, device)
            call = functools.partial(dsv4_indices.build, **kwargs, out=out)
            add(dict(base, case="build out=", layer=kind), calls_loop(call, calls), call)
        # StepIndexer: a cache hit, a C4A layer build, and whole steps.
        args = convert({k: step[k] for k in STEP_KEYS}, framework, device)
        c4a_t = convert({"t": c4a}, framework, device)["t"]
        indexer = dsv4_indices.StepIndexer(schedule["compress_ratios"])
        indexer.begin_step(**args)
        indexer.layer(0)
        live_steps.append(indexer)
        add(dict(base, case="layer hit", layer="SWA-only"), calls_loop(functools.partial(indexer.layer, 1), calls))
        # C4A layer builds as a step makes them (21 per step, the workspace recycled per step): a
        # round times `steps` steps' 21 calls each; begin_step / end_step are outside the timing.
        c4a_layers = [i for i, r in enumerate(schedule["compress_ratios"]) if r == 4]
        steps = max(1, calls // len(c4a_layers))

        def c4a_layer_builds(ix=dsv4_indices.StepIndexer(schedule["compress_ratios"]), args=args, c4a_t=c4a_t,
                             steps=steps):
            wall = cpu = 0
            for _ in range(steps):
                ix.begin_step(**args)
                if sync:
                    sync()
                start, start_cpu = time.perf_counter_ns(), time.thread_time_ns()
                for i in c4a_layers:
                    ix.layer(i, c4a_t)
                wall += time.perf_counter_ns() - start
                cpu += time.thread_time_ns() - start_cpu
                ix.end_step()
            n = steps * len(c4a_layers)
            return wall / n / 1e3, cpu / n / 1e3

        add(dict(base, case="layer build", layer="C4A", calls=steps * len(c4a_layers)), c4a_layer_builds)
        for cached in (True, False):
            ix = dsv4_indices.StepIndexer(schedule["compress_ratios"], cache=cached)

            def one_step(ix=ix, args=args, c4a_t=c4a_t):
                ix.begin_step(**args)
                for i, ratio in enumerate(schedule["compress_ratios"]):
                    ix.layer(i, c4a_t if ratio == 4 else None)
                ix.end_step()

            one_step()  # builder_calls counts one step's builds
            add(dict(base, case="Flash step " + ("cached" if cached else "uncached"),
                     layer=f"{ix.builder_calls} builds", calls=max(5, calls // 100)),
                calls_loop(one_step, max(5, calls // 100)))
    measure(made, repeats, sync, gate)
    for indexer in live_steps:
        indexer.end_step()
    return [case.result() for case in made]


def add_over_fill(results):
    """Beside each build() row of a torch framework, its host time over torch's own one-element
    fill_ on the same tensors' device, measured in the same rounds (over_fill_us, wall medians;
    over_fill_held_us, held medians, CUDA): what the binding costs above the smallest launching
    call torch itself makes there, which a slow stretch of the host moves alike."""
    fills = {(r["framework"], r["backend"]): r for r in results if r["case"] == "torch fill_"}
    for r in results:
        fill = fills.get((r["framework"], r["backend"]))
        if fill is None or r["case"] not in ("build", "build out="):
            continue
        r["over_fill_us"] = r["us_median"] - fill["us_median"]
        if r.get("gated_us_median") is not None and fill.get("gated_us_median") is not None:
            r["over_fill_held_us"] = r["gated_us_median"] - fill["gated_us_median"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    shapes = {  # decode steps, where the per-call overhead matters most; 0 tokens: overhead alone
        "0 tokens": make_step(0, 8192, 0, 0, 128, reference.deepseek_v4_flash()),
        "1 decode": make_step(1, 8192, 0, 0, 128, reference.deepseek_v4_flash()),
        "64 decodes": make_step(64, 8192, 0, 0, 128, reference.deepseek_v4_flash()),
    }
    runs = [("numpy", None)]
    notes = []
    if torch is None:
        notes.append("torch is not installed: torch cases skipped")
    else:
        runs.append(("torch", torch.device("cpu")))
        if torch.cuda.is_available() and dsv4_indices.cuda_available():
            runs.append(("torch", torch.device("cuda", torch.cuda.current_device())))
        else:
            notes.append("no CUDA device (or the package was built without CUDA): torch CUDA cases skipped")

    results = []
    for framework, device in runs:
        for r in cases(framework, device, shapes, args.calls, args.repeats):
            target = TARGETS.get((r["case"], r["framework"], r["backend"]))
            r["target_us"] = target
            results.append(r)
    add_over_fill(results)

    print(f"{'case':<20} {'layer':<10} {'framework':<9} {'backend':<7} {'shape':<11} {'wall us/call':>12} "
          f"{'min':>8} {'cpu us':>8} {'cpu min':>8} {'held us':>8} {'gpu us':>8} {'-fill_':>7}  "
          "target (wall median; held median)")
    for r in results:
        target = "" if r["target_us"] is None else (
            f"<= {r['target_us']:g} us: {'met' if r['us_median'] <= r['target_us'] else 'MISSED'}")
        held = r.get("gated_us_median")
        if r["target_us"] is not None and held is not None:
            target += f"; {'met' if held <= r['target_us'] else 'MISSED'}"
        extra = (f" {held:>8.2f} {r['gpu_us_median']:>8.2f}" if held is not None else f" {'':>8} {'':>8}")
        over = r.get("over_fill_held_us", r.get("over_fill_us"))
        extra += f" {over:>7.2f}" if over is not None else f" {'':>7}"
        print(f"{r['case']:<20} {r['layer']:<10} {r['framework']:<9} {r['backend']:<7} {r['shape']:<11} "
              f"{r['us_median']:>12.2f} {r['us_min']:>8.2f} {r['cpu_us_median']:>8.2f} {r['cpu_us_min']:>8.2f}"
              f"{extra}  {target}")
    print("held us: the same calls with the GPU held busy (torch.cuda._sleep) until all are launched, so that "
          "none waits for the device: host time alone; gpu us: the queued calls' device time, back to back; "
          "-fill_: build() minus torch's one-element fill_ on the same device, same rounds (held where both are)")
    for note in notes:
        print("note:", note)
    env = dict(python=platform.python_version(), machine=platform.machine(), processor=platform.processor(),
               cpus=os.cpu_count(), load_average=os.getloadavg(), numpy=np.__version__,
               dsv4_indices=dsv4_indices.__version__,
               cuda_compiled=dsv4_indices.cuda_compiled,
               torch=None if torch is None else torch.__version__,
               gpu=torch.cuda.get_device_name() if torch is not None and torch.cuda.is_available() else None)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(dict(env=env, calls=args.calls, repeats=args.repeats, notes=notes, results=results), f, indent=1)
        print("wrote", args.json)


if __name__ == "__main__":
    main()
