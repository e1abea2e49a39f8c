#!/usr/bin/env python3
"""Write a dsv4 step capture (manifest.json + .npy files) that `dsv4 replay DIR` checks.

An engine calls write_capture() once per step it wants to check, with its per-step metadata
as numpy arrays (for torch tensors: t.cpu().numpy()). The format is documented at the top of
harness/capture.cpp.

Run as a script, it (re)writes the example captures shipped in tests/data and loads every
file back with numpy.load:

    /usr/bin/python3 harness/python/write_capture.py tests/data
"""
import argparse
import json
import os

import numpy as np

STEP_FILES = ("query_start_loc", "seq_lens", "token_to_req", "decode_valid",
              "swa_block_table", "c4a_block_table", "c128a_block_table")
STEP_SCALARS = ("num_decode_tokens", "max_model_len", "swa_block_size", "c4a_block_size",
                "c128a_block_size")


def write_capture(out_dir, schedule, step, c4a_layers):
    """schedule: {name, compress_ratios, window, c4a_topk, main_block_size};
    step: the STEP_FILES arrays and STEP_SCALARS ints;
    c4a_layers: {layer: (decode_local [D, K], prefill_topk [T-D, K])} for the C4A layers."""
    os.makedirs(out_dir, exist_ok=True)
    files = {}
    for name in STEP_FILES:
        dtype = np.bool_ if name == "decode_valid" else np.int32
        np.save(os.path.join(out_dir, name + ".npy"), np.ascontiguousarray(step[name], dtype=dtype))
        files[name] = name + ".npy"
    layers = []
    for layer, (decode_local, prefill_topk) in sorted(c4a_layers.items()):
        entry = {"layer": int(layer)}
        for key, array in (("decode_local", decode_local), ("prefill_topk", prefill_topk)):
            entry[key] = f"c4a_layer{layer:02d}_{key}.npy"
            np.save(os.path.join(out_dir, entry[key]), np.ascontiguousarray(array, dtype=np.int32))
        layers.append(entry)
    manifest = {"format": "dsv4-step-capture", "version": 1, "schedule": schedule,
                "step": {k: int(step[k]) for k in STEP_SCALARS}, "files": files,
                "c4a_layers": layers}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


# ---- the shipped example captures -----------------------------------------------------------

def flash_schedule():
    # 2 SWA-only layers, then C4A / C128A alternating from C4A: 43 layers (21 C4A, 20 C128A).
    return {"name": "DeepSeek-V4-Flash", "compress_ratios": [0, 0] + [4, 128] * 20 + [4],
            "window": 128, "c4a_topk": 512, "main_block_size": 256}


def pro_schedule():
    # 2 C128A layers, then C4A / C128A alternating from C4A: 61 layers (30 C4A, 31 C128A).
    return {"name": "DeepSeek-V4-Pro", "compress_ratios": [128, 128] + [4, 128] * 29 + [4],
            "window": 128, "c4a_topk": 1024, "main_block_size": 256}


def block_table(blocks_needed, rng, tail=2):
    """Rows of physical blocks drawn from one shuffled pool; `tail` unused entries = block 0."""
    pool = rng.permutation(sum(blocks_needed))
    table = np.zeros((len(blocks_needed), max(blocks_needed, default=0) + tail), dtype=np.int32)
    start = 0
    for r, n in enumerate(blocks_needed):
        table[r, :n] = pool[start:start + n]
        start += n
    return table


def make_step(requests, decode_valid, rng, main_block_size=256, swa_block_size=64):
    """requests: [(query_len, seq_len)], decode requests first; decode_valid: one per decode token."""
    query_lens = np.array([q for q, _ in requests], dtype=np.int32)
    seq_lens = np.array([s for _, s in requests], dtype=np.int32)
    ceil_div = lambda a, b: -(-a // b)
    c4a_bs, c128a_bs = main_block_size // 4, main_block_size // 128
    return {
        "query_start_loc": np.concatenate([[0], np.cumsum(query_lens)]),
        "seq_lens": seq_lens,
        "token_to_req": np.repeat(np.arange(len(requests)), query_lens),
        "decode_valid": np.array(decode_valid, dtype=np.bool_),
        "num_decode_tokens": len(decode_valid),
        "max_model_len": 1 << 20,
        "swa_block_table": block_table([ceil_div(s, swa_block_size) for s in seq_lens], rng),
        "c4a_block_table": block_table([ceil_div(s // 4, c4a_bs) for s in seq_lens], rng),
        "c128a_block_table": block_table([ceil_div(s // 128, c128a_bs) for s in seq_lens], rng),
        "swa_block_size": swa_block_size, "c4a_block_size": c4a_bs, "c128a_block_size": c128a_bs,
    }


def indexer_outputs(step, schedule, width, rng):
    """Per C4A layer and token, min(topk, (pos + 1) // 4) distinct local compressed indices in
    indexer (not index) order, -1 padded to `width` columns; padding tokens get all -1.
    `width` below c4a_topk keeps the files small: the builder pads the rest with -1."""
    qsl, seq_lens, token_to_req = step["query_start_loc"], step["seq_lens"], step["token_to_req"]
    num_decode = step["num_decode_tokens"]
    r = token_to_req
    positions = seq_lens[r] - (qsl[r + 1] - qsl[r]) + (np.arange(len(r)) - qsl[r])
    layers = {}
    for layer, ratio in enumerate(schedule["compress_ratios"]):
        if ratio != 4:
            continue
        out = np.full((len(r), width), -1, dtype=np.int32)
        for t, pos in enumerate(positions):
            if t < num_decode and not step["decode_valid"][t]:
                continue
            n = (pos + 1) // 4
            k = min(schedule["c4a_topk"], n)
            assert k <= width, f"width {width} cannot hold {k} picks"
            out[t, :k] = rng.permutation(n)[:k]
        layers[layer] = (out[:num_decode], out[num_decode:])
    return layers


def examples():
    rng = np.random.default_rng(20260601)
    # Flash, mixed: decode request 0 (1 token), speculative decode request 1 (3 tokens, the
    # last one a padding token), then a 20-token prefill chunk after 200 tokens of context.
    flash = flash_schedule()
    mixed = make_step([(1, 250), (3, 131), (20, 220)], [1, 1, 1, 0], rng)
    yield "capture_flash_mixed", flash, mixed, indexer_outputs(mixed, flash, 64, rng)
    # Flash, decode only: every prefill_topk has 0 rows.
    decode = make_step([(1, 64), (1, 129), (1, 300)], [1, 1, 1], rng)
    yield "capture_flash_decode", flash, decode, indexer_outputs(decode, flash, 76, rng)
    # Pro, prefill only: a fresh 16-token prompt and a 12-token chunk after 116 tokens.
    pro = pro_schedule()
    prefill = make_step([(16, 16), (12, 128)], [], rng)
    yield "capture_pro_prefill", pro, prefill, indexer_outputs(prefill, pro, 32, rng)


def check_with_numpy_load(out_dir, step, c4a_layers):
    """Every file loads with numpy.load and equals what was written."""
    with open(os.path.join(out_dir, "manifest.json")) as f:
        manifest = json.load(f)
    for name, file in manifest["files"].items():
        loaded = np.load(os.path.join(out_dir, file))
        assert np.array_equal(loaded, step[name]), name
        print(f"  {file:32} {str(loaded.dtype):6} {loaded.shape}")
    for entry in manifest["c4a_layers"]:
        decode_local, prefill_topk = c4a_layers[entry["layer"]]
        assert np.array_equal(np.load(os.path.join(out_dir, entry["decode_local"])), decode_local)
        assert np.array_equal(np.load(os.path.join(out_dir, entry["prefill_topk"])), prefill_topk)
    print(f"  {len(manifest['c4a_layers'])} C4A layers, e.g. decode_local {decode_local.shape}, "
          f"prefill_topk {prefill_topk.shape}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_root", help="directory that receives the example capture folders")
    args = parser.parse_args()
    for name, schedule, step, c4a_layers in examples():
        out_dir = os.path.join(args.out_root, name)
        write_capture(out_dir, schedule, step, c4a_layers)
        print(out_dir)
        check_with_numpy_load(out_dir, step, c4a_layers)


if __name__ == "__main__":
    main()
