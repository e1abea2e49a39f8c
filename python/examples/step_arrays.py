"""The host arrays of one DeepSeek-V4 engine step (numpy): a decode batch plus one chunked
prefill, their paged-cache block tables and the step metadata the package's reference
computes. Shared by engine_step.py and python/bench/bench_binding.py; needs no torch."""
import numpy as np

from dsv4_indices import reference

I32 = np.int32


def block_table(lengths, block_size, first_block):
    """[R, NB] tables on distinct physical blocks, like a paged KV cache's allocator gives."""
    need = [(n + block_size - 1) // block_size for n in lengths]
    table = np.full((len(lengths), max(need, default=1)), -1, I32)
    next_block = first_block
    for r, n in enumerate(need):
        table[r, :n] = np.arange(next_block, next_block + n)
        next_block += n
    return table


def make_step(decodes, context, prefill, prefill_context, window, schedule):
    """Host arrays of one step: `decodes` decode requests (1 token each) after `context` tokens,
    then one prefill chunk of `prefill` tokens (if any) after `prefill_context` tokens."""
    q_lens = [1] * decodes + ([prefill] if prefill else [])
    seq_lens = [context + 1 + 37 * r for r in range(decodes)] + ([prefill_context + prefill] if prefill else [])
    qsl = np.concatenate([[0], np.cumsum(q_lens)]).astype(I32)
    main = schedule["main_block_size"]
    step = dict(
        query_start_loc=qsl, seq_lens=np.array(seq_lens, I32),
        token_to_req=np.repeat(np.arange(len(q_lens)), q_lens).astype(I32),
        decode_valid=np.ones(decodes, bool),
        swa_block_table=block_table(seq_lens, 64, 0), swa_block_size=64,
        c4a_block_table=block_table([n // 4 for n in seq_lens], main // 4, 0), c4a_block_size=main // 4,
        c128a_block_table=block_table([n // 128 for n in seq_lens], main // 128, 0),
        c128a_block_size=main // 128)
    step.update(reference.step_metadata(
        num_decode_tokens=decodes, window=window, **{k: step[k] for k in (
            "query_start_loc", "seq_lens", "token_to_req", "decode_valid", "swa_block_table", "swa_block_size",
            "c128a_block_table", "c128a_block_size")}))
    return step
