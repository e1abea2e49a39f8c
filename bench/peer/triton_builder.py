"""A Triton builder of DeepSeek-V4's mixed sparse indices, written from SPEC.md §3 alone.

The peer that bench/peer/run_peer.py times beside the project's CUDA builder. It is written
the straightforward way an inference engine writes such a kernel: one program per token row,
the whole row as two masked power-of-two vectors (SWA columns, compressed columns), block
sizes and widths as runtime integers, and a thin Python wrapper that allocates the outputs
with torch.empty on every call.

    build(inputs, meta, errors=None) -> (sparse_indices [T, W+P] int32, sparse_lens [T] int32)

inputs: torch tensors on one device, named as bench_inputs writes them: decode_swa_indices
[D, W], decode_compressed [D, Kd] (optional), decode_compressed_lens [D] (optional, global
form), decode_valid [D] uint8 (optional, local form), prefill_topk [T-D, Kp],
query_start_loc [R+1], seq_lens [R], token_to_req [T], swa_block_table [R, NBs],
compressed_block_table [R, NBc] (optional: absent means the SWA table and block size).
meta: window, ratio, topk, decode_local, swa_block_size, compressed_block_size.
errors: an int32 tensor of one element; each content error (SPEC §4: a lookup past the
table's width, a negative table entry, a slot beyond int32) adds one to it. Rows without an
error never touch it, so a persistent zeroed counter costs nothing per call.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _paged_slot(table_ptr, table_stride, r, i, block_size, num_blocks, active,
                CHECKED: tl.constexpr):
    """slot(r, i) = table[r][i / B] * B + i % B for the lanes where `active` and i >= 0, else -1.
    Returns (slots, errors): errors marks the active lanes the cache cannot answer (-1 too).
    CHECKED: the slot in 64 bits, a slot past int32 an error (SPEC §4); else int32 arithmetic,
    as an engine that trusts its cache writes it (equal on every valid input)."""
    block = i // block_size
    looked_up = active & (i >= 0) & (block < num_blocks)
    physical = tl.load(table_ptr + r.to(tl.int64) * table_stride + block, mask=looked_up, other=-1)
    if CHECKED:
        slot = physical.to(tl.int64) * block_size + i % block_size
        ok = looked_up & (physical >= 0) & (slot <= 2147483647)
        return tl.where(ok, slot, -1).to(tl.int32), active & (i >= 0) & ~ok
    else:
        ok = looked_up & (physical >= 0)
        return tl.where(ok, physical * block_size + i % block_size, -1), active & (i >= 0) & ~ok


@triton.jit
def _count_errors(errors_ptr, errors, COUNT_ERRORS: tl.constexpr):
    if COUNT_ERRORS:
        n = tl.sum(errors.to(tl.int32), axis=0)
        if n > 0:  # error-free rows leave the counter alone (no contended atomics)
            tl.atomic_add(errors_ptr, n)


@triton.jit
def _mixed_sparse_indices_kernel(
        out_ptr, lens_ptr, errors_ptr,
        decode_swa_ptr, decode_swa_stride,
        decode_comp_ptr, decode_comp_stride, decode_lens_ptr, decode_valid_ptr,
        prefill_topk_ptr, prefill_topk_stride,
        query_start_loc_ptr, seq_lens_ptr, token_to_req_ptr,
        swa_table_ptr, swa_table_stride, swa_block_size, swa_num_blocks,
        comp_table_ptr, comp_table_stride, comp_block_size, comp_num_blocks,
        D, W, P, Kd, Kp, ratio, topk,
        HAS_DECODE_COMP: tl.constexpr, DECODE_LOCAL: tl.constexpr,
        HAS_DECODE_LENS: tl.constexpr, HAS_DECODE_VALID: tl.constexpr,
        COUNT_ERRORS: tl.constexpr, BLOCK_W: tl.constexpr, BLOCK_P: tl.constexpr):
    """One program writes one token row t: columns [0, W) (SWA) and [W, W+P) (compressed)
    of sparse_indices, and sparse_lens[t]."""
    t = tl.program_id(0)
    r = tl.load(token_to_req_ptr + t)
    out_row = out_ptr + t.to(tl.int64) * (W + P)
    cols_w = tl.arange(0, BLOCK_W)
    cols_p = tl.arange(0, BLOCK_P)
    in_w = cols_w < W
    in_p = cols_p < P
    if t < D:
        # Decode row: SWA columns copied, compressed columns copied or translated.
        swa = tl.load(decode_swa_ptr + t.to(tl.int64) * decode_swa_stride + cols_w, mask=in_w)
        tl.store(out_row + cols_w, swa, mask=in_w)
        if HAS_DECODE_COMP:
            v = tl.load(decode_comp_ptr + t.to(tl.int64) * decode_comp_stride + cols_p,
                        mask=cols_p < Kd, other=-1)
            if DECODE_LOCAL:
                slots, errors = _paged_slot(comp_table_ptr, comp_table_stride, r, v,
                                            comp_block_size, comp_num_blocks, in_p, COUNT_ERRORS)
                tl.store(out_row + W + cols_p, slots, mask=in_p)
                _count_errors(errors_ptr, errors, COUNT_ERRORS)
                comp_len = tl.sum((v >= 0).to(tl.int32), axis=0)
                if HAS_DECODE_VALID:
                    comp_len = tl.where(tl.load(decode_valid_ptr + t) != 0, comp_len, 0)
            else:
                tl.store(out_row + W + cols_p, v, mask=in_p)
                if HAS_DECODE_LENS:
                    comp_len = tl.load(decode_lens_ptr + t)
                else:
                    comp_len = Kd
        else:
            tl.store(out_row + W + cols_p, tl.full([BLOCK_P], -1, tl.int32), mask=in_p)
            comp_len = 0
        tl.store(lens_ptr + t, W + comp_len)
    else:
        # Prefill row: the window ending at the token's position, then its top-k translated.
        q_start = tl.load(query_start_loc_ptr + r)
        q_end = tl.load(query_start_loc_ptr + r + 1)
        pos = tl.load(seq_lens_ptr + r) - (q_end - q_start) + (t - q_start)
        swa_len = tl.minimum(pos + 1, W)
        swa_slots, swa_errors = _paged_slot(swa_table_ptr, swa_table_stride, r,
                                            pos - swa_len + 1 + cols_w, swa_block_size,
                                            swa_num_blocks, cols_w < swa_len, COUNT_ERRORS)
        tl.store(out_row + cols_w, swa_slots, mask=in_w)
        topk_len = tl.minimum((pos + 1) // ratio, topk)
        v = tl.load(prefill_topk_ptr + (t - D).to(tl.int64) * prefill_topk_stride + cols_p,
                    mask=(cols_p < topk_len) & (cols_p < Kp), other=-1)
        comp_slots, comp_errors = _paged_slot(comp_table_ptr, comp_table_stride, r, v,
                                              comp_block_size, comp_num_blocks, in_p, COUNT_ERRORS)
        tl.store(out_row + W + cols_p, comp_slots, mask=in_p)
        _count_errors(errors_ptr, swa_errors, COUNT_ERRORS)
        _count_errors(errors_ptr, comp_errors, COUNT_ERRORS)
        tl.store(lens_ptr + t, W + topk_len)


def build(inputs, meta, errors=None):
    """SPEC §3 for one layer: returns (sparse_indices [T, W+P], sparse_lens [T]), int32.
    With `errors`, content errors are counted and slots checked in 64 bits (what this project's
    builder does); without, the kernel is the plain engine one (int32 slots, nothing counted)."""
    W = int(meta["window"])
    topk = int(meta["topk"])
    decode_swa = inputs["decode_swa_indices"]
    token_to_req = inputs["token_to_req"]
    decode_comp = inputs.get("decode_compressed")
    T = token_to_req.shape[0]
    D = decode_swa.shape[0]
    Kd = decode_comp.shape[1] if decode_comp is not None else 0
    P = (max(topk, Kd) + 3) // 4 * 4
    device = token_to_req.device
    out = torch.empty((T, W + P), dtype=torch.int32, device=device)
    lens = torch.empty((T,), dtype=torch.int32, device=device)
    if T == 0:
        return out, lens

    prefill_topk = inputs["prefill_topk"]
    swa_table = inputs["swa_block_table"]
    comp_table = inputs.get("compressed_block_table")
    comp_block_size = meta.get("compressed_block_size")
    if comp_table is None:  # SPEC §2: without a compressed table, the SWA one serves
        comp_table, comp_block_size = swa_table, meta["swa_block_size"]
    decode_lens = inputs.get("decode_compressed_lens")
    decode_valid = inputs.get("decode_valid")
    # Absent optional inputs: any valid pointer; the constexpr flags keep it unread.
    decode_comp_arg = decode_comp if decode_comp is not None else lens
    block_w = triton.next_power_of_2(W)
    block_p = triton.next_power_of_2(max(P, 1))
    _mixed_sparse_indices_kernel[(T,)](
        out, lens, errors if errors is not None else lens,
        decode_swa, decode_swa.stride(0),
        decode_comp_arg, decode_comp.stride(0) if decode_comp is not None else 0,
        decode_lens if decode_lens is not None else lens,
        decode_valid if decode_valid is not None else lens,
        prefill_topk, prefill_topk.stride(0),
        inputs["query_start_loc"], inputs["seq_lens"], token_to_req,
        swa_table, swa_table.stride(0), int(meta["swa_block_size"]), swa_table.shape[1],
        comp_table, comp_table.stride(0), int(comp_block_size), comp_table.shape[1],
        D, W, P, Kd, prefill_topk.shape[1], int(meta["ratio"]), topk,
        HAS_DECODE_COMP=Kd > 0, DECODE_LOCAL=bool(meta["decode_local"]),
        HAS_DECODE_LENS=decode_lens is not None, HAS_DECODE_VALID=decode_valid is not None,
        COUNT_ERRORS=errors is not None, BLOCK_W=block_w, BLOCK_P=block_p,
        num_warps=4 if block_w + block_p >= 256 else 1)
    return out, lens
