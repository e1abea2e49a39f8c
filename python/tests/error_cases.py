"""SPEC §4 structural errors, one per check, as changes to the hand case (steps.hand_case) and the
messages they raise: the optimized path's (optimized/validation.cpp) and the reference's
(reference/). Shared by test_errors.py and error_probe.py."""
import numpy as np
from numpy.lib.stride_tricks import as_strided

I32 = np.int32

# (id, changes, the optimized path's message, the reference's message)
STRUCTURAL = [
    ("window-below-1", dict(window=0), "window = 0 must be >= 1", "window = 0: must be >= 1"),
    ("ratio-below-1", dict(ratio=0), "ratio = 0 must be >= 1", "ratio = 0: must be >= 1"),
    ("topk-below-0", dict(topk=-1), "topk = -1 must be >= 0", "topk = -1: must be >= 0"),
    ("width-exceeds-int32", dict(topk=2**31 - 1),
     "topk = 2147483647 with decode width Kd = 2 and window = 4: the output width W + P exceeds int32",
     "topk = 2147483647: output width W + P = 2147483652 (Kd = 2) does not fit int32"),
    ("swa-block-size-below-1", dict(swa_block_size=0), "swa.block_size = 0 must be >= 1",
     "swa.block_size = 0: must be >= 1"),
    ("compressed-block-size-below-1",
     dict(compressed_block_table=np.array([[0, 1], [2, 3]], I32), compressed_block_size=0),
     "compressed.block_size = 0 must be >= 1", "compressed.block_size = 0: must be >= 1"),
    ("swa-table-rows-below-R", dict(swa_block_table=np.array([[3, 1, -1]], I32)),
     "swa.block_table has 1 rows, fewer than R = 2", "swa.block_table has 1 rows, fewer than R = 2"),
    ("compressed-table-rows-below-R",
     dict(compressed_block_table=np.array([[0, 1]], I32), compressed_block_size=4),
     "compressed.block_table has 1 rows, fewer than R = 2", "compressed.block_table has 1 rows, fewer than R = 2"),
    ("decode-swa-columns", dict(decode_swa_indices=np.zeros((1, 3), I32)),
     "decode_swa_indices has 3 columns, expected window = 4", "decode_swa_indices has 3 columns, expected window = 4"),
    ("decode-compressed-rows", dict(decode_compressed=np.zeros((2, 2), I32)),
     "decode_compressed has 2 rows, expected D = 1", "decode_compressed has 2 rows, expected D = 1"),
    ("prefill-topk-rows", dict(prefill_topk=np.zeros((3, 2), I32)),
     "prefill_topk has 3 rows, expected T - D = 2", "prefill_topk has 3 rows, expected T - D = 2"),
    ("decode-tokens-exceed-T",
     dict(decode_swa_indices=np.zeros((4, 4), I32), decode_compressed=np.zeros((4, 2), I32),
          prefill_topk=np.zeros((0, 2), I32)),
     "num_decode_tokens D = 4 (the rows of decode_swa_indices) exceeds T = 3",
     "decode_swa_indices rows: D = 4 exceeds T = 3"),
    ("decode-tokens-not-at-a-request-boundary",
     dict(decode_swa_indices=np.zeros((2, 4), I32), decode_compressed=np.zeros((2, 2), I32),
          prefill_topk=np.zeros((1, 2), I32)),
     "num_decode_tokens D = 2 (the rows of decode_swa_indices) is not a request boundary",
     "decode_swa_indices rows: D = 2 is not a request boundary"),
    ("lens-with-local-form", dict(decode_local=True, decode_compressed_lens=np.array([2], I32)),
     "decode_compressed_lens is given with decode_local = true",
     "decode_compressed_lens is given with decode_local = true"),
    ("valid-with-global-form", dict(decode_valid=np.array([True])),
     "decode_valid is given with decode_local = false", "decode_valid is given with decode_local = false"),
    ("query-start-not-0", dict(query_start_loc=np.array([1, 1, 3], I32)),
     "query_start_loc[0] = 1 must be 0", "query_start_loc[0] = 1: must be 0"),
    ("query-start-decreases", dict(query_start_loc=np.array([0, 2, 1], I32)),
     "query_start_loc[2] = 1 is below query_start_loc[1] = 2", "query_start_loc[2] = 1: below query_start_loc[1] = 2"),
    ("query-start-ends-past-T", dict(query_start_loc=np.array([0, 1, 4], I32)),
     "query_start_loc[2] = 4 must equal T = 3", "query_start_loc[2] = 4: must end at T = 3"),
    ("query-start-ends-before-T", dict(query_start_loc=np.array([0, 1, 2], I32)),
     "query_start_loc[2] = 2 must equal T = 3", "query_start_loc[2] = 2: must end at T = 3"),
    ("token-owner-above-R", dict(token_to_req=np.array([0, 1, 7], I32)),
     "token_to_req[2] = 7 is out of range [0, R = 2)", "token_to_req[2] = 7: outside [0, R = 2)"),
    ("token-owner-negative", dict(token_to_req=np.array([0, 1, -1], I32)),
     "token_to_req[2] = -1 is out of range [0, R = 2)", "token_to_req[2] = -1: outside [0, R = 2)"),
    ("token-owner-disagrees", dict(token_to_req=np.array([0, 0, 1], I32)),
     "token_to_req[1] = 0 disagrees with query_start_loc",
     "token_to_req[1] = 0: token 1 is outside request 0's range"),
    ("seq-len-below-query-length", dict(seq_lens=np.array([6, 1], I32)),
     "seq_lens[1] = 1 is below its query length 2", "seq_lens[1] = 1: below its query length 2"),
    ("seq-len-above-table-capacity", dict(seq_lens=np.array([6, 13], I32)),
     "seq_lens[1] = 13 exceeds the SWA block table's capacity 12", "seq_lens[1] = 13: above the 12 tokens"),
    ("table-too-narrow-for-seq-len", dict(swa_block_table=np.array([[3, 1], [0, 2]], I32)),
     "seq_lens[1] = 9 exceeds the SWA block table's capacity 8", "seq_lens[1] = 9: above the 8 tokens"),
]

# Checks only the optimized path makes: it reads matrices in place (the reference copies them),
# so rows that overlap (row stride below the column count) are a shape error there.
OPTIMIZED_ONLY = [
    ("overlapping-rows", dict(prefill_topk=as_strided(np.zeros(8, I32), (2, 2), (4, 4))),
     "prefill_topk.row_stride = 1 is below its 2 columns"),
]
