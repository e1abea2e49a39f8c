#!/usr/bin/env python3
"""An engine's step loop with dsv4_indices: DeepSeek-V4-Flash, torch tensors, one
StepIndexer.layer() call per layer, builder calls and time per step, cached and uncached.

Runs on CUDA when a device is present (the CUDA backend on torch's current stream), else on
torch CPU tensors (the host backend) and says so. The step: a decode batch plus one chunked
prefill, the way an engine with chunked prefill mixes them; its metadata (decode SWA indices,
C128A metadata) is computed here by the package's reference, an engine computes its own.

    python3 python/examples/engine_step.py [--steps 10] [--decodes 32] [--context 8192]
                                            [--prefill 2048] [--check]
"""
import argparse
import time

import numpy as np
import torch

import dsv4_indices
from dsv4_indices import reference
from step_arrays import make_step


def indexer_outputs(step, schedule, device, seed):
    """One [T, top-k] local-index tensor per C4A layer, as each layer's indexer would produce:
    picks in [0, (pos + 1) / 4), -1 where a token has fewer compressed tokens than top-k."""
    qsl, seq_lens, owner = (torch.from_numpy(step[k]).long() for k in ("query_start_loc", "seq_lens", "token_to_req"))
    t = torch.arange(len(owner))
    pos = seq_lens[owner] - (qsl[owner + 1] - qsl[owner]) + (t - qsl[owner])
    n = ((pos + 1) // 4).unsqueeze(1)
    k = schedule["c4a_topk"]
    generator = torch.Generator().manual_seed(seed)
    out = {}
    for i, ratio in enumerate(schedule["compress_ratios"]):
        if ratio == 4:
            picks = (torch.rand(len(owner), k, generator=generator) * n).long()
            picks[torch.arange(k).unsqueeze(0) >= n] = -1
            out[i] = picks.int().to(device)
    return out


def to_device(step, device):
    """The step's tensors on `device`, with the host copies the structure is validated on."""
    args = {}
    for key in ("query_start_loc", "seq_lens", "token_to_req", "swa_block_table", "swa_block_size",
                "decode_swa_indices", "decode_valid", "c4a_block_table", "c4a_block_size", "c128a_block_table",
                "c128a_block_size", "c128a_topk", "c128a_decode_global", "c128a_decode_lens", "c128a_prefill_local"):
        value = step[key]
        args[key] = torch.from_numpy(value).to(device) if isinstance(value, np.ndarray) else value
    if device.type == "cuda":
        for key in ("query_start_loc", "seq_lens", "token_to_req"):
            args[key + "_cpu"] = torch.from_numpy(step[key])
    return args


def run_step(indexer, schedule, args, c4a, sync):
    """The engine's per-step loop; returns (builder calls, host us, wall us)."""
    start = time.perf_counter()
    indexer.begin_step(**args)
    for i, ratio in enumerate(schedule["compress_ratios"]):
        indices, lens = indexer.layer(i, c4a[i] if ratio == 4 else None)
        # ... the layer's sparse attention would read `indices` / `lens` here, on the same stream
    indexer.end_step()
    host_us = (time.perf_counter() - start) * 1e6
    sync()
    return indexer.builder_calls, host_us, (time.perf_counter() - start) * 1e6


def check(indexer, schedule, step, args, c4a):
    """Every layer of one step equals the reference's build of that layer (SPEC §3, §6)."""
    indexer.begin_step(**args)
    D = step["decode_swa_indices"].shape[0]
    common = {k: step[k] for k in ("decode_swa_indices", "query_start_loc", "seq_lens", "token_to_req",
                                   "swa_block_table", "swa_block_size")}
    for i, ratio in enumerate(schedule["compress_ratios"]):
        got = indexer.layer(i, c4a[i] if ratio == 4 else None)
        if ratio in (0, 1):
            kw = dict(common, ratio=1, topk=0)
        elif ratio == 128:
            kw = dict(common, ratio=128, topk=step["c128a_topk"], decode_compressed=step["c128a_decode_global"],
                      decode_compressed_lens=step["c128a_decode_lens"], prefill_topk=step["c128a_prefill_local"],
                      compressed_block_table=step["c128a_block_table"], compressed_block_size=step["c128a_block_size"])
        else:
            topk = c4a[i].cpu().numpy()
            kw = dict(common, ratio=4, topk=schedule["c4a_topk"], decode_compressed=topk[:D], decode_local=True,
                      decode_valid=step["decode_valid"], prefill_topk=topk[D:],
                      compressed_block_table=step["c4a_block_table"], compressed_block_size=step["c4a_block_size"])
        want = reference.build(window=schedule["window"], **kw)
        assert np.array_equal(got[0].cpu().numpy(), want[0]), f"layer {i}: indices differ from the reference"
        assert np.array_equal(got[1].cpu().numpy(), want[1]), f"layer {i}: lens differ from the reference"
    assert indexer.content_errors() == 0
    indexer.end_step()
    print(f"check: all {len(schedule['compress_ratios'])} layers equal the reference, 0 content errors")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--decodes", type=int, default=32, help="decode requests (1 token each)")
    parser.add_argument("--context", type=int, default=8192, help="decode requests' context (tokens)")
    parser.add_argument("--prefill", type=int, default=2048, help="prefill chunk (tokens)")
    parser.add_argument("--prefill-context", type=int, default=4096, help="tokens before the chunk")
    parser.add_argument("--check", action="store_true", help="compare one step's 43 layers with the reference")
    args = parser.parse_args()

    schedule = reference.deepseek_v4_flash()
    if torch.cuda.is_available() and dsv4_indices.cuda_available():
        device = torch.device("cuda", torch.cuda.current_device())
        sync = torch.cuda.synchronize
        where = f"{device} ({torch.cuda.get_device_name(device)}), CUDA backend on torch's current stream"
    else:
        device, sync = torch.device("cpu"), (lambda: None)
        reason = "built without CUDA" if not dsv4_indices.cuda_compiled else "no CUDA device"
        where = f"cpu: {reason}, so the host backend on torch CPU tensors (times are CPU build times)"
    step = make_step(args.decodes, args.context, args.prefill, args.prefill_context, schedule["window"], schedule)
    T = len(step["token_to_req"])
    print(f"{schedule['name']}: {len(schedule['compress_ratios'])} layers; step of {T} tokens "
          f"({args.decodes} decodes after {args.context} tokens, a {args.prefill}-token prefill chunk after "
          f"{args.prefill_context}); {where}")
    tensors = to_device(step, device)
    c4a = indexer_outputs(step, schedule, device, seed=1)
    cached = dsv4_indices.StepIndexer(schedule["compress_ratios"], window=schedule["window"],
                                      c4a_topk=schedule["c4a_topk"])
    uncached = dsv4_indices.StepIndexer(schedule["compress_ratios"], window=schedule["window"],
                                        c4a_topk=schedule["c4a_topk"], cache=False)
    if args.check:
        check(cached, schedule, step, tensors, c4a)
    print(f"{'step':>4}  {'cached: builds':>14} {'host us':>9} {'wall us':>9}   {'uncached: builds':>16} "
          f"{'host us':>9} {'wall us':>9}")
    rows = []
    for s in range(args.steps):
        a = run_step(cached, schedule, tensors, c4a, sync)
        b = run_step(uncached, schedule, tensors, c4a, sync)
        rows.append(a + b)
        print(f"{s:>4}  {a[0]:>14} {a[1]:>9.1f} {a[2]:>9.1f}   {b[0]:>16} {b[1]:>9.1f} {b[2]:>9.1f}")
    if len(rows) > 1:
        med = np.median(np.array(rows[1:]), axis=0)  # step 0 warms the workspaces up
        print(f"median of steps 1..{len(rows) - 1}: cached {int(med[0])} builds, {med[1]:.1f} us host, "
              f"{med[2]:.1f} us wall; uncached {int(med[3])} builds, {med[4]:.1f} us host, {med[5]:.1f} us wall")


if __name__ == "__main__":
    main()
