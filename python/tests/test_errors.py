"""Bad arguments of every kind raise a Python exception naming the argument (or, for SPEC §4
structural errors, the C++ message naming field, row and value); none crashes the interpreter."""
import re

import numpy as np
import pytest

import dsv4_indices
from dsv4_indices import reference
from conftest import needs_torch
from steps import begin_step_args, hand_case, random_indexer_output, random_step

BOTH = [dsv4_indices.build, reference.build]


def case(**changes):
    kwargs, _, _ = hand_case()
    kwargs.update(changes)
    return kwargs


# ---- SPEC §4 structural errors: ValueError with the field, the row and the value ----

STRUCTURAL = [
    # (changes, the optimized path's message, the reference's message), both from the C++
    (dict(seq_lens=np.array([6, 1], np.int32)),
     "seq_lens[1] = 1 is below its query length 2", "seq_lens[1] = 1: below its query length 2"),
    (dict(query_start_loc=np.array([1, 1, 3], np.int32)),
     "query_start_loc[0] = 1 must be 0", "query_start_loc[0] = 1: must be 0"),
    (dict(query_start_loc=np.array([0, 2, 1], np.int32)),
     "query_start_loc[2] = 1 is below query_start_loc[1] = 2", "query_start_loc[2] = 1: below query_start_loc[1] = 2"),
    (dict(token_to_req=np.array([0, 0, 1], np.int32)),
     "token_to_req[1] = 0 disagrees with query_start_loc", "token_to_req[1] = 0: token 1 is outside request 0's range"),
    (dict(token_to_req=np.array([0, 1, 7], np.int32)),
     "token_to_req[2] = 7 is out of range [0, R = 2)", "token_to_req[2] = 7: outside [0, R = 2)"),
    (dict(seq_lens=np.array([6, 13], np.int32)),
     "seq_lens[1] = 13 exceeds the SWA block table's capacity 12", "seq_lens[1] = 13: above the 12 tokens"),
    (dict(swa_block_table=np.array([[3, 1], [0, 2]], np.int32)),
     "seq_lens[1] = 9 exceeds the SWA block table's capacity 8", "seq_lens[1] = 9: above the 8 tokens"),
    (dict(window=0), "window = 0 must be >= 1", "window = 0: must be >= 1"),
    (dict(ratio=0), "ratio = 0 must be >= 1", "ratio = 0: must be >= 1"),
    (dict(swa_block_size=0), "swa.block_size = 0 must be >= 1", "swa.block_size = 0: must be >= 1"),
    (dict(decode_swa_indices=np.zeros((2, 4), np.int32), decode_compressed=np.zeros((2, 2), np.int32),
          prefill_topk=np.zeros((1, 2), np.int32)),
     "num_decode_tokens D = 2 (the rows of decode_swa_indices) is not a request boundary",
     "decode_swa_indices rows: D = 2 is not a request boundary"),
    (dict(decode_swa_indices=np.zeros((1, 3), np.int32)),
     "decode_swa_indices has 3 columns, expected window = 4", "decode_swa_indices has 3 columns, expected window = 4"),
    (dict(decode_valid=np.array([True])),
     "decode_valid is given with decode_local = false", "decode_valid is given with decode_local = false"),
    (dict(prefill_topk=np.zeros((3, 2), np.int32)),
     "prefill_topk has 3 rows, expected T - D = 2", "prefill_topk has 3 rows, expected T - D = 2"),
]


@pytest.mark.parametrize("changes,optimized,oracle", STRUCTURAL)
def test_structural_errors_are_value_errors_with_the_cpp_message(changes, optimized, oracle):
    with pytest.raises(ValueError, match=re.escape(optimized)):
        dsv4_indices.build(**case(**changes))
    with pytest.raises(ValueError, match=re.escape(oracle)):
        reference.build(**case(**changes))


# ---- arrays of the wrong kind: TypeError (dtype, not an array) or ValueError (rank, layout,
# size, device), naming the argument ----

ARRAY_ERRORS = [
    (dict(seq_lens=[6, 9]), TypeError, "seq_lens: expected an array (numpy, torch or any DLPack tensor), got list"),
    (dict(swa_block_table=None), TypeError, "swa_block_table: NoneType"),  # nanobind's message
    (dict(seq_lens=np.array([6, 9], np.int64)), TypeError, "seq_lens: expected dtype int32, got int64"),
    (dict(prefill_topk=np.zeros((2, 2), np.float32)), TypeError, "prefill_topk: expected dtype int32, got float32"),
    (dict(swa_block_table=np.zeros((2, 3), np.uint32)), TypeError, "swa_block_table: expected dtype int32, got uint32"),
    (dict(decode_compressed=np.zeros((1, 2), np.int16)), TypeError, "decode_compressed: expected dtype int32, got int16"),
    (dict(decode_compressed_lens=np.array([2.0])), TypeError, "decode_compressed_lens: expected dtype int32, got float64"),
    (dict(decode_local=True, decode_valid=np.array([1], np.int32)), TypeError,
     "decode_valid: expected dtype bool or uint8, got int32"),
    (dict(seq_lens=np.array([[6, 9]], np.int32)), ValueError, "seq_lens: expected a 1-D array, got 2-D"),
    (dict(decode_swa_indices=np.array([12, 13, -1, -1], np.int32)), ValueError,
     "decode_swa_indices: expected a 2-D array, got 1-D with shape (4,)"),
    (dict(query_start_loc=np.array([0, 3], np.int32)), ValueError,
     "query_start_loc has size 2, expected R + 1 (R = len(seq_lens)) = 3"),
    (dict(decode_compressed_lens=np.array([2, 2], np.int32)), ValueError, "decode_compressed_lens has size 2, expected D = 1"),
    (dict(swa_block_table=np.asfortranarray(np.array([[3, 1, -1], [0, 2, 5]], np.int32))), ValueError,
     "swa_block_table: columns must be adjacent (column stride 1), got column stride 2"),
    (dict(prefill_topk=np.zeros((2, 4), np.int32)[:, ::2]), ValueError,
     "prefill_topk: columns must be adjacent (column stride 1), got column stride 2"),
    (dict(prefill_topk=np.zeros((2, 2), np.int32)[::-1]), ValueError, "prefill_topk: negative row stride -2"),
    (dict(token_to_req=np.array([0, 9, 1, 9, 1, 9], np.int32)[::2]), ValueError,
     "token_to_req: elements must be adjacent (stride 1), got stride 2"),
    (dict(compressed_block_size=4), ValueError, "compressed_block_size is given without compressed_block_table"),
]


@pytest.mark.parametrize("fn", BOTH, ids=["build", "reference"])
@pytest.mark.parametrize("changes,error,message", ARRAY_ERRORS)
def test_bad_arrays_name_the_argument(fn, changes, error, message):
    with pytest.raises(error, match=re.escape(message)):
        fn(**case(**changes))


def test_block_tables_must_be_dense_for_build():
    """The optimized path reads block tables as dense rows (SPEC §7's strided tables are not
    there yet); the reference copies its inputs, so it takes them."""
    table = np.zeros((2, 6), np.int32)
    table[:, :3] = [[3, 1, -1], [0, 2, 5]]
    with pytest.raises(ValueError, match=re.escape(
            "swa_block_table: rows must be dense (row stride = columns), got row stride 6 for 3 columns")):
        dsv4_indices.build(**case(swa_block_table=table[:, :3]))
    np.testing.assert_array_equal(reference.build(**case(swa_block_table=table[:, :3]))[0], hand_case()[1])


@pytest.mark.parametrize("fn", BOTH, ids=["build", "reference"])
def test_bad_scalars_are_type_errors(fn):
    with pytest.raises(TypeError):
        fn(**case(window="4"))
    with pytest.raises(TypeError):
        fn(**case(swa_block_size=2**40))
    with pytest.raises(TypeError):
        fn(**case(unknown_argument=1))
    with pytest.raises(TypeError):
        fn(*case().values())  # keyword-only


@needs_torch
@pytest.mark.parametrize("fn", BOTH, ids=["build", "reference"])
def test_torch_arrays_of_the_wrong_kind(fn):
    import torch
    kwargs = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in case().items()}
    with pytest.raises(TypeError, match=re.escape("seq_lens: expected dtype int32, got int64")):
        fn(**dict(kwargs, seq_lens=kwargs["seq_lens"].long()))
    with pytest.raises(ValueError, match=re.escape("swa_block_table: columns must be adjacent")):
        fn(**dict(kwargs, swa_block_table=kwargs["swa_block_table"].t().contiguous().t()))
    with pytest.raises(TypeError, match="seq_lens: cannot be viewed through DLPack"):
        fn(**dict(kwargs, seq_lens=torch.empty(2, dtype=torch.int32, device="meta")))


def test_cpu_step_ignores_stream_and_host_copies():
    kwargs, indices, _ = hand_case()
    got = dsv4_indices.build(**kwargs, stream=12345, query_start_loc_cpu=np.zeros(1, np.int64))
    np.testing.assert_array_equal(got[0], indices)


# ---- StepIndexer ----

def flash_indexer():
    return dsv4_indices.StepIndexer(reference.deepseek_v4_flash()["compress_ratios"])


def test_unknown_ratio():
    with pytest.raises(ValueError, match="compress_ratio = 3"):
        dsv4_indices.StepIndexer([0, 4, 3])
    with pytest.raises(TypeError):
        dsv4_indices.StepIndexer("flash")


def test_layer_argument_errors():
    indexer = flash_indexer()
    rng = np.random.default_rng(2)
    step = random_step(rng)
    topk = random_indexer_output(rng, step, 8)
    T = topk.shape[0]
    indexer.begin_step(**begin_step_args(step))
    with pytest.raises(IndexError, match=re.escape("layer 43 is out of range [0, 43)")):
        indexer.layer(43)
    with pytest.raises(IndexError):
        indexer.layer(-1)
    with pytest.raises(ValueError, match=re.escape("layer 2 (C4A): c4a_topk (its indexer output) is required")):
        indexer.layer(2)
    with pytest.raises(ValueError, match=re.escape("layer 3 (C128A): c4a_topk is only for C4A layers")):
        indexer.layer(3, topk)
    with pytest.raises(ValueError, match=re.escape(f"c4a_topk has {T + 1} rows, expected T = {T}")):
        indexer.layer(2, np.zeros((T + 1, 8), np.int32))
    with pytest.raises(TypeError, match="c4a_topk: expected dtype int32, got int64"):
        indexer.layer(2, topk.astype(np.int64))
    with pytest.raises(ValueError, match="c4a_topk: expected one"):
        indexer.layer(2, (topk,))
    with pytest.raises(ValueError, match=re.escape("c4a_topk[1] (prefill)")):
        indexer.layer(2, (topk[:0], topk[:, :, None]))
    assert indexer.step_open  # a bad layer call leaves the step usable
    indexer.layer(2, topk)


def test_missing_caches_and_metadata():
    indexer = flash_indexer()
    step = random_step(np.random.default_rng(3))
    args = begin_step_args(step)
    args.update(c4a_block_table=None, c128a_block_table=None)
    indexer.begin_step(**args)
    indexer.layer(0)
    with pytest.raises(ValueError, match=re.escape("layer 3 (C128A): begin_step() was given no c128a_block_table")):
        indexer.layer(3)
    with pytest.raises(ValueError, match=re.escape("layer 2 (C4A): begin_step() was given no c4a_block_table")):
        indexer.layer(2, np.zeros((len(step["token_to_req"]), 4), np.int32))


def test_structurally_invalid_step_opens_no_step():
    indexer = flash_indexer()
    step = random_step(np.random.default_rng(4), max_requests=3)
    args = begin_step_args(step)
    bad = args["seq_lens"].copy()
    bad[0] = 0
    with pytest.raises(ValueError, match=re.escape("seq_lens[0] = 0 is below its query length")):
        indexer.begin_step(**dict(args, seq_lens=bad))
    assert not indexer.step_open
    with pytest.raises(ValueError, match=re.escape("decode_valid has size")):
        indexer.begin_step(**dict(args, decode_valid=np.ones(args["decode_swa_indices"].shape[0] + 1, bool)))
    with pytest.raises(TypeError, match="c128a_decode_lens: expected dtype int32"):
        indexer.begin_step(**dict(args, c128a_decode_lens=args["c128a_decode_lens"].astype(np.int64)))
    indexer.begin_step(**args)  # the good step still opens
    indexer.layer(0)
