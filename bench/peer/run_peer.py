#!/usr/bin/env python3
"""Checks and times the Triton peer (triton_builder.py) on the inputs bench_inputs exported:
the same builds kernel_bench and step_bench time, compared with the reference exactly.

usage: run_peer.py --inputs DIR --out OUTDIR [--filter REGEX] [--reps 50] [--step]
                   [--step-reps 20] [--device cuda|cpu] [--ours] [--side-stream]
                   [--l2-flush-mib 512] [--kernel-trace] [--touch-pages]

Kernel configs (DIR/<model>_<kind>_<case>/): the peer's output must equal the reference's
(ref_sparse_indices.npy, ref_sparse_lens.npy) element for element, and its content-error
count meta.json's; a mismatch prints the first (row, column, got, want) and the config is
not timed. Timing, as kernel_bench's: before each call a read-only L2 flush (a reduction
over a 512 MiB buffer, --l2-flush-mib; kernel_bench reads max(2 x L2, 64 MiB) unless given
its --l2_flush_mib), then a spin kernel as head start, long enough for the host to enqueue
the call before the GPU reaches it (twice the previous call's host time plus 50 us: the
peer's Python path takes 50-150 us, more than the flush alone covers), CUDA events around
build(); median device us and median host us of the call (no sync) over --reps calls.
-> OUTDIR/peer_kernel.json

--step (DIR/step_<model>_<case>/): the whole step, layer by layer, with the seed's per-step
cache (SPEC §5): SWA-only and C128A built once and reused by later layers of that kind,
every C4A layer built from its own copy of the top-k tensors (as step_bench stages them).
eager: wall us from the first layer call until torch.cuda.synchronize() returns (L2
flushed, stream idle before), device us by events (the host given a head start by a
spin kernel, so launch gaps stay out); graph: the step captured once in a CUDA graph and
replayed, the same two timings. Medians over --step-reps. -> OUTDIR/peer_step.json

--ours: this project's builder too, through its Python package (dsv4_indices.build, torch
tensors, the caller's stream), on the same inputs, checked against the same reference and
timed in the same loop as the peer (ours_device_us, ours_host_us): a comparison in which the
two harnesses' differences cannot hide (kernel_bench times our builds in C++, with its own
flush and events). The package must be importable (scripts/install_python.sh, or
PYTHONPATH=<build>/python of a DSV4_PYTHON=ON build). On CUDA the loop's own floor, an empty
Triton kernel timed the same way, goes into the JSON's context (empty_kernel_device_us).

--side-stream: everything (flush, head start, events, the peer's and our launches) on one
torch.cuda.Stream made for the run instead of torch's default (legacy) stream, which is what
an engine's side stream or graph capture gives; the JSON's context says which (stream).

--kernel-trace (CUDA): each config's calls (the peer's engine form, ours with --ours, the empty
kernel) timed once more in the same loop under torch.profiler, whose CUPTI records give each
kernel's own start and end: per call the events' us, the kernels' us and the gap from the head
start's end to the first kernel (trace_engine, ours_trace, empty_kernel_trace: medians). For
telling time inside a kernel from time around it, in one loop for both builders.

--touch-pages (CUDA, a diagnostic): after each flush, one word of every 2 MiB page of the
call's inputs and of the previous call's outputs is read, so that the timed call finds its
pages' address translations warm and its data still cold (context: touch_pages).

--device cpu: correctness only, under the Triton interpreter (TRITON_INTERPRET=1), no
timing and no JSON. Without torch, triton, numpy or (for cuda) a CUDA device: prints
"SKIPPED: <why>" and exits 0 without writing results.
"""
import argparse
import contextlib
import functools
import json
import os
import re
import statistics
import sys
import tempfile
import time

L2_FLUSH_MIB = 512  # the read flush issue 8 states its method with (--l2-flush-mib)
KIND_OF_RATIO = {0: "SWA-only", 1: "SWA-only", 4: "C4A", 128: "C128A"}
INT_INPUTS = ["decode_swa_indices", "decode_compressed", "decode_compressed_lens", "prefill_topk",
              "query_start_loc", "seq_lens", "token_to_req", "swa_block_table",
              "compressed_block_table"]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", required=True, help="bench_inputs --out DIR")
    ap.add_argument("--out", required=True, help="folder for peer_kernel.json / peer_step.json")
    ap.add_argument("--filter", default="", help="regex searched in <model>/<kind>/<case> "
                                                  "and step/<model>/<case>")
    ap.add_argument("--reps", type=int, default=50, help="timed calls per kernel config")
    ap.add_argument("--step", action="store_true", help="also run the exported steps")
    ap.add_argument("--step-reps", type=int, default=20, help="timed steps / replays per step")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="cpu: Triton interpreter, correctness only")
    ap.add_argument("--ours", action="store_true",
                    help="also check and time dsv4_indices.build (this project) in the same loop")
    ap.add_argument("--side-stream", action="store_true",
                    help="run everything on a stream made for the run, not torch's default stream")
    ap.add_argument("--kernel-trace", action="store_true",
                    help="CUDA: time each config's calls once more under torch.profiler, beside "
                         "their kernels' own start and end (trace_engine, ours_trace)")
    ap.add_argument("--touch-pages", action="store_true",
                    help="CUDA, a diagnostic: after each flush read one word of every 2 MiB page "
                         "of the call's inputs and outputs (address translations warm, data cold)")
    ap.add_argument("--l2-flush-mib", type=int, default=L2_FLUSH_MIB,
                    help="MiB the read-only L2 flush reads before each timed call (default 512)")
    args = ap.parse_args()
    if not 1 <= args.l2_flush_mib <= 1 << 16:
        ap.error(f"--l2-flush-mib {args.l2_flush_mib}: expected a whole number in [1, 65536]")
    return args


def import_or_skip(device):
    """(torch, numpy, builder module), or None after printing SKIPPED."""
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # read when triton is imported
    try:
        import numpy
        import torch
        import triton  # noqa: F401  (imported here so that its absence is a clean skip)
    except ImportError as e:
        print(f"SKIPPED: {e} (run_peer.py needs numpy, torch and triton)")
        return None
    if device == "cuda" and not torch.cuda.is_available():
        print("SKIPPED: no CUDA device (torch.cuda.is_available() is False)")
        return None
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import triton_builder
    return torch, numpy, triton_builder


class Peer:
    def __init__(self, torch, np, builder, device, flush_mib=L2_FLUSH_MIB):
        self.torch, self.np, self.builder, self.device = torch, np, builder, device
        self.flush_bytes = flush_mib << 20
        self.kernel_trace = False  # --kernel-trace (CUDA)
        self.touch_pages = False  # --touch-pages (CUDA)
        self.cuda = device == "cuda"
        # One persistent counter: error-free builds never touch it (see triton_builder.py).
        self.errors = torch.zeros(1, dtype=torch.int32, device=device)
        self.launches = 0
        if self.cuda:
            self.flush_buffer = torch.zeros(self.flush_bytes // 4, dtype=torch.float32, device=device)
            self.cycles_per_us = self.calibrate_sleep()

    # --- loading ---
    def load_build(self, folder):
        """(inputs on the device, meta, reference indices, reference lens) of one build."""
        torch, np = self.torch, self.np
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
        inputs = {}
        for name in INT_INPUTS:
            path = os.path.join(folder, name + ".npy")
            if os.path.exists(path):
                inputs[name] = torch.from_numpy(np.load(path)).to(self.device).contiguous()
        path = os.path.join(folder, "decode_valid.npy")
        if os.path.exists(path):
            inputs["decode_valid"] = torch.from_numpy(np.load(path)).to(self.device)
        want = torch.from_numpy(np.load(os.path.join(folder, "ref_sparse_indices.npy")))
        want_lens = torch.from_numpy(np.load(os.path.join(folder, "ref_sparse_lens.npy")))
        return inputs, meta, want, want_lens

    # --- building ---
    def build(self, inputs, meta, checked=True):
        """checked: count content errors (64-bit slots), as this project's builder does; else
        the plain engine kernel (the faster peer; equal outputs on valid inputs)."""
        self.launches += 1
        return self.builder.build(inputs, meta, self.errors if checked else None)

    def take_errors(self):
        n = int(self.errors.item())
        self.errors.zero_()
        return n

    def first_mismatch(self, got, want, want_lens):
        """None, or 'row R column C: got G, want V' (column 'len' for sparse_lens)."""
        indices, lens = got[0].cpu(), got[1].cpu()
        if tuple(indices.shape) != tuple(want.shape):
            return f"shape {tuple(indices.shape)} != reference {tuple(want.shape)}"
        bad = (indices != want).flatten().nonzero()
        bad_len = (lens != want_lens).nonzero()
        width = want.shape[1] if want.dim() == 2 else 0
        first = int(bad[0]) // width if len(bad) else None
        if len(bad_len) and (first is None or int(bad_len[0]) <= first):
            t = int(bad_len[0])
            return f"row {t} column len: got {int(lens[t])}, want {int(want_lens[t])}"
        if first is not None:
            c = int(bad[0]) % width
            return f"row {first} column {c}: got {int(indices[first, c])}, want {int(want[first, c])}"
        return None

    # --- timing (CUDA only) ---
    def flush_l2(self):
        # Read-only: a written flush would leave dirty lines whose write-back the build pays.
        self.flush_buffer.sum()

    def calibrate_sleep(self):
        """Clock cycles per us of torch.cuda._sleep (the head-start spin kernel)."""
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for cycles in (1_000_000, 1_000_000, 2_000_000):
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            samples.append(cycles / (start.elapsed_time(end) * 1000.0))
        return statistics.median(samples)

    def head_start(self, us):
        self.torch.cuda._sleep(int(us * self.cycles_per_us))

    def touch(self, tensors):
        """--touch-pages: one element of every 2 MiB of each tensor read (a strided sum)."""
        for t in tensors:
            flat = t.reshape(-1)
            flat[::max(1, (2 << 20) // t.element_size())].sum()


def head_start_us(host_us):
    """The spin before a timed call, from the host time of the call before it: long enough
    that the host has enqueued the call when the GPU reaches it, so the events time the
    device work and not the host's launch path (a spin shorter than that path puts the gap
    between them into the device time)."""
    return min(max(2.0 * host_us + 50.0, 100.0), 20000.0)


class Results(list):
    """The results so far, rewritten to `path` (when given) after each one: a stage killed at
    its time cap still leaves every finished config, in a complete JSON file."""

    def __init__(self, path, context):
        super().__init__()
        self.path, self.context = path, context

    def add(self, entry):
        self.append(entry)
        if self.path:
            with open(self.path + ".tmp", "w") as f:
                json.dump({"context": self.context, "results": self}, f, indent=2)
            os.replace(self.path + ".tmp", self.path)


def gpu_context(torch, triton_version, cuda):
    ctx = {"torch": torch.__version__, "triton": triton_version}
    if cuda:
        p = torch.cuda.get_device_properties(0)
        ctx.update(gpu=torch.cuda.get_device_name(0), sm=f"{p.major}{p.minor}",
                   sms=p.multi_processor_count, cuda_runtime=torch.version.cuda)
    return ctx


def kernel_folders(root, pattern):
    """[(key, folder)] of the exported kernel configs whose key matches, by folder name."""
    found = []
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        meta = os.path.join(folder, "meta.json")
        if name.startswith("step_") or not os.path.exists(meta):
            continue
        with open(meta) as f:
            key = json.load(f)["key"]
        if re.search(pattern, key):
            found.append((key, folder))
    return found


def step_folders(root, pattern):
    found = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, "step.json")
        if name.startswith("step_") and os.path.exists(path):
            with open(path) as f:
                step = json.load(f)
            if re.search(pattern, step["key"]):
                found.append((step, os.path.join(root, name)))
    return found


def time_calls(peer, call, reps, touch=()):
    """(median device us, median host us) of call() over reps calls, each after a read-only L2
    flush and a head start long enough for the host to enqueue it; a few warm-up calls first."""
    device_us, host_us = timed_loop(peer, call, reps, touch)
    return statistics.median(device_us), statistics.median(host_us)


def timed_loop(peer, call, reps, touch=()):
    """time_calls' calls: (device us, host us) of each, after the warm-up calls. With
    --touch-pages, after each flush one word of every 2 MiB page of `touch` (the call's inputs)
    and of the previous call's outputs (where the next call's land: the caching allocator and
    our workspace hand back the same memory) is read: the pages' address translations are then
    warm, their data still cold."""
    torch = peer.torch
    for _ in range(3):  # warm-up: the first calls of a shape are not the steady state
        t0 = time.perf_counter()
        out = call()
        last_host_us = (time.perf_counter() - t0) * 1e6
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    device_us, host_us = [], []
    for _ in range(reps):
        peer.flush_l2()
        if peer.touch_pages:
            peer.touch(cuda_tensors(touch) + cuda_tensors(out))
        out = None  # the previous outputs go back to the allocator before the call
        peer.head_start(head_start_us(last_host_us))  # the host enqueues the call meanwhile
        start.record()
        t0 = time.perf_counter()
        out = call()
        last_host_us = (time.perf_counter() - t0) * 1e6
        host_us.append(last_host_us)
        end.record()
        end.synchronize()
        device_us.append(start.elapsed_time(end) * 1000.0)
    return device_us, host_us


def cuda_tensors(obj):
    """The CUDA tensors in obj (a tensor, or dicts, tuples and lists of them)."""
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in cuda_tensors(o)]
    return [obj] if getattr(obj, "is_cuda", False) else []


def trace_calls(peer, call, reps, touch=()):
    """--kernel-trace: time_calls' loop again under torch.profiler (CUPTI kernel records), so
    that each call's events can be set beside its kernels' own start and end: medians of the
    events' us (this loop's), the kernels' us (first start to last end), and the gap from the
    head start's end to the first kernel's start (the launch as the GPU sees it)."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            device_us, _ = timed_loop(peer, call, reps, touch)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            with open(path) as f:
                events = json.load(f).get("traceEvents", [])
    except Exception as e:  # a diagnostic: the run's timings stand without it
        return {"error": f"{type(e).__name__}: {e}"}
    kernels = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["name"])
                     for e in events if e.get("cat") == "kernel" and "dur" in e)
    calls = call_kernels(kernels)
    out = {"event_us": statistics.median(device_us), "calls_traced": len(calls)}
    if calls:
        out.update(kernel_us=statistics.median(c[0] for c in calls),
                   gap_us=statistics.median(c[1] for c in calls),
                   kernels=sorted({name for c in calls for name in c[2]}))
    else:  # say what the trace held instead of failing the run
        out["trace_kernel_names"] = sorted({k[2] for k in kernels})[:20]
    return out


def call_kernels(kernels):
    """The timed calls in a traced loop's kernels [(start us, end us, name)], in start order:
    per call (us from its first kernel's start to its last's end, us from the head start's end
    to its first kernel's start, its kernels' names). A call's kernels are those after a head
    start (torch.cuda._sleep's spin kernel) and before the next flush (a reduction)."""
    calls, spin_end, current = [], None, []

    def close():
        if spin_end is not None and current:
            calls.append((current[-1][1] - current[0][0], current[0][0] - spin_end,
                          [k[2] for k in current]))

    for k in kernels:
        if "spin_kernel" in k[2]:
            close()
            spin_end, current = k[1], []
        elif "reduce_kernel" in k[2]:
            close()
            spin_end, current = None, []
        elif spin_end is not None:
            current.append(k)
    close()
    return calls


def empty_kernel_floor(peer, reps):
    """Device us of an empty Triton kernel (one program) timed as the builds are: the loop's
    own floor, beside kernel_bench's empty-kernel floor."""
    import triton

    @triton.jit
    def _empty(x_ptr):
        pass

    x = peer.torch.empty(1, dtype=peer.torch.int32, device=peer.device)
    call = lambda: _empty[(1,)](x, num_warps=1)  # noqa: E731
    return time_calls(peer, call, reps)[0], (trace_calls(peer, call, reps) if peer.kernel_trace else None)


class Ours:
    """This project's builder through its Python package, called as an engine would: SPEC §3's
    keyword arguments as torch tensors on the peer's device (CUDA: the host copies of the
    step's structure beside them), outputs from the builder's workspace, on the current stream."""
    STRUCTURE = ("query_start_loc", "seq_lens", "token_to_req")

    def __init__(self, module):
        self.module = module

    def kwargs(self, inputs, meta):
        kw = dict(window=meta["window"], ratio=meta["ratio"], topk=meta["topk"],
                  decode_local=bool(meta["decode_local"]), swa_block_size=meta["swa_block_size"])
        kw.update(inputs)
        if "compressed_block_table" in inputs:
            kw["compressed_block_size"] = meta["compressed_block_size"]
        if inputs["query_start_loc"].is_cuda:
            for name in self.STRUCTURE:
                kw[name + "_cpu"] = inputs[name].cpu()
        return kw

    def build(self, kw, count_errors=False):
        """(indices, lens), and the content-error count when asked (which synchronizes)."""
        indices, lens, errors = self.module.build(**kw, count_content_errors=count_errors)
        return (indices, lens, errors) if count_errors else (indices, lens)


def check_and_time_ours(peer, ours, inputs, meta, want, want_lens, reps):
    """The entry fields of ours on one config: checked against the reference, then timed."""
    kw = ours.kwargs(inputs, meta)
    indices, lens, errors = ours.build(kw, count_errors=True)
    mismatch = peer.first_mismatch((indices, lens), want, want_lens)
    if mismatch is None and errors != meta["content_errors"]:
        mismatch = f"content errors {errors}, reference {meta['content_errors']}"
    del indices, lens
    if mismatch is not None:
        return {"ours_matches_reference": False, "ours_mismatch": mismatch}
    fields = {"ours_matches_reference": True}
    if peer.cuda:
        call = functools.partial(ours.build, kw)
        fields["ours_device_us"], fields["ours_host_us"] = time_calls(peer, call, reps, kw)
        if peer.kernel_trace:
            fields["ours_trace"] = trace_calls(peer, call, reps, kw)
    return fields


def run_kernels(peer, configs, reps, results, ours=None):
    """Checks every config; times the ones that match (CUDA). Returns the failure count."""
    failures = 0
    for key, folder in configs:
        inputs, meta, want, want_lens = peer.load_build(folder)
        peer.take_errors()
        got = peer.build(inputs, meta)
        mismatch = peer.first_mismatch(got, want, want_lens)
        errors = peer.take_errors()
        if mismatch is None and errors != meta["content_errors"]:
            mismatch = f"content errors {errors}, reference {meta['content_errors']}"
        entry = {"key": key, "tokens": meta["T"], "width": meta["width"], "bytes": meta["bytes"],
                 "matches_reference": mismatch is None}
        if mismatch is not None:
            print(f"run_peer: {key}: MISMATCH {mismatch} (not timed)")
            entry["mismatch"] = mismatch
            failures += 1
            results.add(entry)
            continue
        if ours is not None:
            entry.update(check_and_time_ours(peer, ours, inputs, meta, want, want_lens, reps))
            if not entry["ours_matches_reference"]:
                print(f"run_peer: {key}: ours (dsv4_indices) MISMATCH {entry['ours_mismatch']}")
                failures += 1
        if not peer.cuda:
            print(f"run_peer: {key}: matches the reference (T={meta['T']}, width {meta['width']})"
                  + (", and so does ours" if entry.get("ours_matches_reference") else ""))
            results.add(entry)
            continue
        del got
        unchecked = peer.build(inputs, meta, checked=False)  # the engine kernel: same outputs?
        mismatch = peer.first_mismatch(unchecked, want, want_lens)
        if mismatch is not None:
            print(f"run_peer: {key}: engine kernel MISMATCH {mismatch} (not timed)")
            entry.update(matches_reference=False, mismatch="engine kernel: " + mismatch)
            failures += 1
            results.add(entry)
            continue
        del unchecked
        calls = {checked: functools.partial(peer.build, inputs, meta, checked) for checked in (True, False)}
        timed = {checked: time_calls(peer, call, reps, inputs) for checked, call in calls.items()}
        errors = peer.take_errors()
        if errors != 0:
            print(f"run_peer: {key}: {errors} content errors while timing")
            entry.update(matches_reference=False, mismatch=f"{errors} content errors while timing")
            failures += 1
            results.add(entry)
            continue
        # The faster of the two is the peer (the claim is against the stronger one).
        entry.update(device_us_checked=timed[True][0], host_us_checked=timed[True][1],
                     device_us_engine=timed[False][0], host_us_engine=timed[False][1])
        d, h = timed[True] if timed[True][0] <= timed[False][0] else timed[False]  # the faster form
        entry.update(device_us=d, host_us=h, GBps=meta["bytes"] / (d * 1e-6) / 1e9, reps=reps)
        if peer.kernel_trace:
            entry["trace_engine"] = trace_calls(peer, calls[False], reps, inputs)
            for who, t in (("peer (engine)", entry["trace_engine"]), ("ours", entry.get("ours_trace"))):
                if t is not None:
                    print(f"run_peer: {key}: traced, {who}: " + json.dumps(t))
        print(f"run_peer: {key}: device {d:.2f} us, host {h:.2f} us, {entry['GBps']:.1f} GB/s"
              + (f"; ours in this loop: device {entry['ours_device_us']:.2f} us, host {entry['ours_host_us']:.2f} us"
                 if "ours_device_us" in entry else ""))
        results.add(entry)
        del inputs
    return failures


class StepLayers:
    """One exported step on the device: per kind its inputs and reference, and per layer the
    inputs it is built from (C4A layers: their own copies of the top-k tensors)."""

    def __init__(self, peer, step, folder):
        self.peer, self.step = peer, step
        kinds = {}
        for k in step["kinds"]:
            kinds[k["kind"]] = peer.load_build(os.path.join(folder, k["folder"])) + (k["cacheable"],)
        self.kinds = kinds
        self.layers = []  # (kind, inputs, meta, cacheable)
        for ratio in step["compress_ratios"]:
            kind = KIND_OF_RATIO[ratio]
            inputs, meta, _, _, cacheable = kinds[kind]
            if not cacheable:
                inputs = dict(inputs)
                for name in ("decode_compressed", "prefill_topk"):
                    if name in inputs:
                        inputs[name] = inputs[name].clone()
            self.layers.append((kind, inputs, meta, cacheable))

    def run(self):
        """Every layer's (indices, lens) through the per-step cache (keyed by kind: the
        layers of one kind share every shape parameter in these steps)."""
        cache, outputs = {}, []
        for kind, inputs, meta, cacheable in self.layers:
            if cacheable:
                if kind not in cache:
                    cache[kind] = self.peer.build(inputs, meta, checked=False)
                outputs.append(cache[kind])
            else:
                outputs.append(self.peer.build(inputs, meta, checked=False))
        return outputs

    def check(self, outputs):
        """None, or the first layer whose output differs from its kind's reference."""
        for layer, ((kind, _, _, _), got) in enumerate(zip(self.layers, outputs)):
            _, _, want, want_lens, _ = self.kinds[kind]
            mismatch = self.peer.first_mismatch(got, want, want_lens)
            if mismatch:
                return f"layer {layer} ({kind}): {mismatch}"
        errors = self.peer.take_errors()
        return f"{errors} content errors" if errors else None


def time_step(peer, fn, reps):
    """(median wall us, median device us, median host us) of fn() over reps runs."""
    torch = peer.torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    wall, device, host = [], [], []
    for _ in range(reps):
        # Wall: the stream idle at the start, the host clock until the sync returns.
        peer.flush_l2()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) * 1e6)
        host.append((t1 - t0) * 1e6)
        del out
        # Device: the host enqueues the whole step during the spin, so no launch gaps.
        peer.flush_l2()
        peer.head_start(head_start_us(host[-1]))
        start.record()
        out = fn()
        end.record()
        end.synchronize()
        device.append(start.elapsed_time(end) * 1000.0)
        del out
    return statistics.median(wall), statistics.median(device), statistics.median(host)


def run_steps(peer, steps, reps, results):
    torch = peer.torch
    failures = 0
    for step, folder in steps:
        key = step["key"]
        layers = StepLayers(peer, step, folder)
        entry = {"key": key, "model": step["model"], "case": step["case"],
                 "layers": len(step["compress_ratios"])}
        peer.take_errors()
        peer.launches = 0
        outputs = layers.run()
        entry["builds"] = peer.launches
        mismatch = layers.check(outputs)
        if mismatch is None and peer.launches != step["builds_cached"]:
            mismatch = f"{peer.launches} builds, expected {step['builds_cached']}"
        del outputs
        if mismatch is None and peer.cuda:
            entry["eager_wall_us"], entry["eager_device_us"], entry["eager_host_us"] = \
                time_step(peer, layers.run, reps)
            # Capture: warm up on a side stream first (torch's rule), then capture once; the
            # outputs are allocated inside the capture, from the graph's private pool.
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    layers.run()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                graph_outputs = layers.run()
            graph.replay()
            torch.cuda.synchronize()
            mismatch = layers.check(graph_outputs)
            if mismatch is None:
                entry["graph_wall_us"], entry["graph_device_us"], _ = \
                    time_step(peer, graph.replay, reps)
                mismatch = layers.check(graph_outputs)  # the replays left the same outputs
            if mismatch:
                mismatch = "graph replay: " + mismatch
            del graph, graph_outputs
        entry["matches_reference"] = mismatch is None
        if mismatch:
            entry["mismatch"] = mismatch
            failures += 1
            print(f"run_peer: {key}: MISMATCH {mismatch}")
        elif peer.cuda:
            print(f"run_peer: {key}: {entry['builds']} builds; eager wall {entry['eager_wall_us']:.1f} us "
                  f"(device {entry['eager_device_us']:.1f}, host {entry['eager_host_us']:.1f}), graph wall "
                  f"{entry['graph_wall_us']:.1f} us (device {entry['graph_device_us']:.1f})")
        else:
            print(f"run_peer: {key}: {entry['builds']} builds, every layer matches the reference")
        results.add(entry)
        del layers
    return failures


def main():
    sys.stdout.reconfigure(line_buffering=True)  # progress visible in logs, even if killed
    args = parse_args()
    loaded = import_or_skip(args.device)
    if loaded is None:
        return 0
    torch, np, builder = loaded
    import triton
    if not os.path.isdir(args.inputs):
        print(f"run_peer: error: {args.inputs} is not a folder (bench_inputs --out)", file=sys.stderr)
        return 1
    configs = kernel_folders(args.inputs, args.filter)
    steps = step_folders(args.inputs, args.filter) if args.step else []
    if not configs and not steps:
        print(f"run_peer: error: no exported config in {args.inputs} matches '{args.filter}'",
              file=sys.stderr)
        return 1
    ours = None
    if args.ours:
        try:
            import dsv4_indices
        except ImportError as e:
            print(f"run_peer: error: --ours needs the package dsv4_indices ({e})", file=sys.stderr)
            return 1
        ours = Ours(dsv4_indices)
    peer = Peer(torch, np, builder, args.device, args.l2_flush_mib)
    peer.kernel_trace = args.kernel_trace and peer.cuda
    peer.touch_pages = args.touch_pages and peer.cuda
    context = gpu_context(torch, triton.__version__, peer.cuda)
    context.update(reps=args.reps, l2_flush_bytes=peer.flush_bytes, inputs=os.path.abspath(args.inputs))
    if ours is not None:
        context["ours"] = f"dsv4_indices {dsv4_indices.__version__} ({dsv4_indices.__file__})"
    side = args.side_stream and peer.cuda
    if peer.cuda:
        context["stream"] = "side" if side else "default"
        context["touch_pages"] = peer.touch_pages
    with torch.cuda.stream(torch.cuda.Stream()) if side else contextlib.nullcontext():
        if peer.cuda:
            context["empty_kernel_device_us"], trace = empty_kernel_floor(peer, args.reps)
            if trace is not None:
                context["empty_kernel_trace"] = trace
                print("run_peer: empty kernel, traced: " + json.dumps(trace))
        print(f"run_peer: {context.get('gpu', 'CPU (Triton interpreter)')}, torch {torch.__version__}, "
              f"triton {triton.__version__}; {len(configs)} kernel configs, {len(steps)} steps"
              + (", on a side stream" if side else ""))
        os.makedirs(args.out, exist_ok=True)
        # The interpreter's results are not timings: no JSON for them.
        out = (lambda name: os.path.join(args.out, name)) if peer.cuda else (lambda name: None)
        failures = run_kernels(peer, configs, args.reps, Results(out("peer_kernel.json"), context), ours)
        if steps:
            step_context = dict(context, reps=args.step_reps)
            failures += run_steps(peer, steps, args.step_reps, Results(out("peer_step.json"), step_context))
    total = len(configs) + len(steps)
    if failures:
        print(f"run_peer: {failures} of {total} configs FAILED")
        return 1
    print(f"run_peer: all {total} configs match the reference"
          + ("" if peer.cuda else " (Triton interpreter, not timed)"))
    if peer.cuda:
        print(f"run_peer: wrote {os.path.join(args.out, 'peer_kernel.json')}"
              + (" and peer_step.json" if steps else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
