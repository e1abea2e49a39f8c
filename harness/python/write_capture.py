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
# Version 2 (SPEC §7), each optional: per cache, its block span, base offset and the table's
# row stride in its persistent buffer.
STEP_V2_SCALARS = tuple(f"{cache}_{field}" for cache in ("swa", "c4a", "c128a")
                        for field in ("block_span", "base_offset", "table_row_stride"))
ENGINE_FIELDS = ("num_tokens", "num_requests", "decode_capacity", "prefill_capacity",
                 "c128a_capacity", "output_row_padding")


def write_capture(out_dir, schedule, step, c4a_layers, engine=None):
    """schedule: {name, compress_ratios, window, c4a_topk, main_block_size};
    step: the STEP_FILES arrays and STEP_SCALARS ints (and any STEP_V2_SCALARS);
    c4a_layers: {layer: (decode_local [D, K], prefill_topk [T-D, K])} for the C4A layers;
    engine: None, or the ENGINE_FIELDS ints when the arrays are an engine's persistent
    buffers (SPEC §7: capacity-shaped, the step at their head; C4A decode_local then has
    decode_capacity rows and prefill_topk prefill_capacity rows)."""
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
    v2 = {k: int(step[k]) for k in STEP_V2_SCALARS if k in step}
    manifest = {"format": "dsv4-step-capture", "version": 2 if v2 or engine else 1,
                "schedule": schedule, "step": {**{k: int(step[k]) for k in STEP_SCALARS}, **v2},
                "files": files, "c4a_layers": layers}
    if engine:
        manifest["engine"] = {k: int(engine[k]) for k in ENGINE_FIELDS if k in engine}
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


def persistent(step, layers, rng, capacities):
    """The step in an engine's persistent buffers (SPEC §7): every per-request and per-token array
    and each C4A layer's indexer output grown to its capacity with stale values past the step
    (sentinel request id -1 in the padded token rows), the tables grown by valid-looking rows."""
    t_cap, r_cap, d_cap, p_cap, table_rows = (capacities[k] for k in (
        "tokens", "requests", "decode", "prefill", "table_rows"))
    num_tokens, num_requests = len(step["token_to_req"]), len(step["seq_lens"])
    num_decode = step["num_decode_tokens"]
    stale = lambda n, lo, hi: rng.integers(lo, hi, size=n, dtype=np.int32)
    grow = lambda a, n, tail: np.concatenate([np.asarray(a, dtype=np.int32), tail])
    out = dict(step)
    out["token_to_req"] = grow(step["token_to_req"], 0, np.full(t_cap - num_tokens, -1, np.int32))
    out["seq_lens"] = grow(step["seq_lens"], 0, stale(r_cap - num_requests, 1, 100000))
    out["query_start_loc"] = grow(step["query_start_loc"], 0, stale(r_cap - num_requests, 0, t_cap + 8))
    out["decode_valid"] = np.concatenate([step["decode_valid"], rng.integers(0, 2, d_cap - num_decode) > 0])
    for name in ("swa_block_table", "c4a_block_table", "c128a_block_table"):
        table = step[name]
        rows = rng.integers(-1, max(int(table.max(initial=0)), 0) + 1, size=(table_rows - len(table), table.shape[1]))
        out[name] = np.concatenate([table, rows.astype(np.int32)])
    grown_layers = {}
    for layer, (decode_local, prefill_topk) in layers.items():
        k = decode_local.shape[1]
        grown_layers[layer] = (
            np.concatenate([decode_local, rng.integers(-2, 1000, (d_cap - len(decode_local), k), dtype=np.int32)]),
            np.concatenate([prefill_topk, rng.integers(-2, 1000, (p_cap - len(prefill_topk), k), dtype=np.int32)]))
    engine = {"num_tokens": num_tokens, "num_requests": num_requests, "decode_capacity": d_cap,
              "prefill_capacity": p_cap, "c128a_capacity": capacities["c128a"],
              "output_row_padding": capacities.get("output_row_padding", 0)}
    return out, grown_layers, engine


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
    # Flash in an engine's persistent buffers (SPEC §7, format version 2): a decode request, a
    # speculative one with a padding token and a 3-token prefill chunk after 200, at capacities
    # T_cap 10, D_cap 5, 6 prefill rows, R_cap 5, tables of 8 rows; packed pools (SWA span 80
    # and offset 4096, C4A span 96, C128A offset 2^31 - 1000: its largest slot stays int32);
    # the SWA table's rows 3 int32 apart; C128A recorded at P_cap = max_compressed = 8192;
    # output rows 8 wider.
    engine_step = make_step([(1, 300), (2, 190), (3, 203)], [1, 1, 0], rng)
    engine_step.update({"swa_block_span": 80, "swa_base_offset": 4096, "c4a_block_span": 96,
                        "c128a_base_offset": 2**31 - 1000,
                        "swa_table_row_stride": engine_step["swa_block_table"].shape[1] + 3})
    layers = indexer_outputs(engine_step, flash, 76, rng)
    buffers, grown_layers, engine = persistent(engine_step, layers, rng, {
        "tokens": 10, "requests": 5, "decode": 5, "prefill": 6, "table_rows": 8, "c128a": 8192,
        "output_row_padding": 8})
    yield "capture_flash_engine", flash, buffers, grown_layers, engine


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
    for name, schedule, step, c4a_layers, *engine in examples():
        out_dir = os.path.join(args.out_root, name)
        write_capture(out_dir, schedule, step, c4a_layers, *engine)
        print(out_dir)
        check_with_numpy_load(out_dir, step, c4a_layers)


if __name__ == "__main__":
    main()
