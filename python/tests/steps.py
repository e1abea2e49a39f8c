"""Steps for the tests: a case worked by hand from SPEC §3, and seeded random engine steps
shaped as SPEC §2/§6 describe (decode requests first, speculative and padding decode tokens,
chunked prefills after context, paged caches of shuffled physical blocks), with each layer's
build arguments as an engine passes them."""
import numpy as np

from dsv4_indices import reference

I32 = np.int32


def hand_case():
    """SPEC §3 by hand: W=4, ratio 4, topk 2, block size 4; request 0 decodes one token
    (global form, 2 compressed slots), request 1 prefills 2 tokens at positions 7 and 8."""
    kwargs = dict(
        window=4, ratio=4, topk=2,
        decode_swa_indices=np.array([[12, 13, -1, -1]], I32),
        decode_compressed=np.array([[40, 41]], I32),
        prefill_topk=np.array([[1, 0], [2, -1]], I32),
        query_start_loc=np.array([0, 1, 3], I32),
        seq_lens=np.array([6, 9], I32),
        token_to_req=np.array([0, 1, 1], I32),
        swa_block_table=np.array([[3, 1, -1], [0, 2, 5]], I32),
        swa_block_size=4,
    )
    # P = round_up(max(2, 2), 4) = 4. Decode row: copy, then 40, 41, pad. Prefill pos 7: window
    # positions 4..7 in block 1 (physical 2) -> 8..11; top-k 1, 0 in block 0 (physical 0) -> 1, 0.
    # Pos 8: positions 5..8 -> 9, 10, 11, then block 2 (physical 5) -> 20; top-k 2 -> 2, -1.
    indices = np.array([[12, 13, -1, -1, 40, 41, -1, -1],
                        [8, 9, 10, 11, 1, 0, -1, -1],
                        [9, 10, 11, 20, 2, -1, -1, -1]], I32)
    lens = np.array([6, 6, 6], I32)
    return kwargs, indices, lens


def _block_table(rng, lengths, block_size, spare_blocks=2, corrupt=False):
    """[R, NB] physical block ids: each request's logical blocks on distinct, shuffled physical
    blocks; NB fits the longest request plus a few spare columns (-1). corrupt: some entries
    are -1 (content errors where they are looked up)."""
    need = [(n + block_size - 1) // block_size for n in lengths]
    width = max(need, default=0) + int(rng.integers(0, spare_blocks + 1))
    physical = rng.permutation(sum(need) + 8).astype(I32)
    table = np.full((len(lengths), width), -1, I32)
    used = 0
    for r, n in enumerate(need):
        table[r, :n] = physical[used:used + n]
        used += n
    if corrupt and table.size:
        table.flat[rng.integers(0, table.size, size=max(1, table.size // 8))] = -1
    return table


def random_step(rng, *, window=128, main_block_size=256, swa_block_size=64, max_requests=6,
                max_prefill=40, max_context=600, corrupt=False, max_model_len=1 << 20):
    """One engine step (host numpy arrays) and its per-step metadata (SPEC §6)."""
    num_requests = int(rng.integers(1, max_requests + 1))
    num_decode_reqs = int(rng.integers(0, num_requests + 1))
    q_lens, seq_lens = [], []
    for r in range(num_requests):
        if r < num_decode_reqs:  # decode, speculative up to 3 tokens
            q = int(rng.integers(1, 4))
        else:
            q = int(rng.integers(1, max_prefill + 1))
        q_lens.append(q)
        seq_lens.append(q + int(rng.integers(0, max_context + 1)))
    qsl = np.concatenate([[0], np.cumsum(q_lens)]).astype(I32)
    T = int(qsl[-1])
    D = int(qsl[num_decode_reqs])
    c4a_bs, c128a_bs = main_block_size // 4, main_block_size // 128
    step = dict(
        window=window,
        query_start_loc=qsl,
        seq_lens=np.array(seq_lens, I32),
        token_to_req=np.repeat(np.arange(num_requests), q_lens).astype(I32),
        decode_valid=(rng.random(D) > 0.15),
        swa_block_table=_block_table(rng, seq_lens, swa_block_size, corrupt=corrupt),
        swa_block_size=swa_block_size,
        c4a_block_table=_block_table(rng, [n // 4 for n in seq_lens], c4a_bs, corrupt=corrupt),
        c4a_block_size=c4a_bs,
        c128a_block_table=_block_table(rng, [n // 128 for n in seq_lens], c128a_bs, corrupt=corrupt),
        c128a_block_size=c128a_bs,
    )
    meta = reference.step_metadata(
        num_decode_tokens=D, window=window, max_model_len=max_model_len,
        **{k: step[k] for k in ("query_start_loc", "seq_lens", "token_to_req", "decode_valid",
                                "swa_block_table", "swa_block_size", "c128a_block_table",
                                "c128a_block_size")})
    step.update(meta)
    return step


def positions(step):
    """pos(t) of SPEC §2 for every token."""
    qsl, seq_lens, owner = step["query_start_loc"], step["seq_lens"], step["token_to_req"]
    t = np.arange(len(owner))
    q_len = qsl[owner + 1] - qsl[owner]
    return seq_lens[owner] - q_len + (t - qsl[owner])


def random_indexer_output(rng, step, width):
    """A C4A layer's indexer output [T, width]: per token up to `width` distinct local compressed
    indices in [0, (pos + 1) / 4), -1 padded (SPEC §6)."""
    pos = positions(step)
    out = np.full((len(pos), width), -1, I32)
    for t, p in enumerate(pos):
        n = (int(p) + 1) // 4
        k = min(n, width)
        if k:
            out[t, :k] = rng.choice(n, size=k, replace=False)
    return out


STEP_KEYS = ("query_start_loc", "seq_lens", "token_to_req", "swa_block_table", "swa_block_size",
             "decode_swa_indices", "decode_valid", "c4a_block_table", "c4a_block_size",
             "c128a_block_table", "c128a_block_size", "c128a_topk", "c128a_decode_global",
             "c128a_decode_lens", "c128a_prefill_local")


def begin_step_args(step):
    """The StepIndexer.begin_step() keyword arguments of a step."""
    return {k: step[k] for k in STEP_KEYS}


def layer_build_args(step, ratio, c4a_topk=None, c4a_count=512):
    """The build()/reference.build() keyword arguments of one layer (SPEC §6): SWA-only ratio 1,
    topk 0; C128A the step's metadata (global decode form with lens, topk E); C4A the layer's
    indexer output (local decode form with decode_valid)."""
    D = step["decode_swa_indices"].shape[0]
    common = {k: step[k] for k in ("window", "decode_swa_indices", "query_start_loc", "seq_lens",
                                   "token_to_req", "swa_block_table", "swa_block_size")}
    if ratio in (0, 1):
        return dict(common, ratio=1, topk=0)
    if ratio == 128:
        return dict(common, ratio=128, topk=step["c128a_topk"],
                    decode_compressed=step["c128a_decode_global"], decode_local=False,
                    decode_compressed_lens=step["c128a_decode_lens"],
                    prefill_topk=step["c128a_prefill_local"],
                    compressed_block_table=step["c128a_block_table"],
                    compressed_block_size=step["c128a_block_size"])
    assert ratio == 4
    return dict(common, ratio=4, topk=c4a_count, decode_compressed=c4a_topk[:D], decode_local=True,
                decode_valid=step["decode_valid"], prefill_topk=c4a_topk[D:],
                compressed_block_table=step["c4a_block_table"],
                compressed_block_size=step["c4a_block_size"])
