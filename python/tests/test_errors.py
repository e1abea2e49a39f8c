"""Bad arguments of every kind raise a Python exception naming the argument (or, for SPEC §4
structural errors, the C++ message naming field, row and value); none crashes the interpreter."""
import re

import numpy as np
import pytest

import dsv4_indices
from dsv4_indices import reference
from backends import BACKENDS, convert
from conftest import needs_torch
from error_cases import OPTIMIZED_ONLY, STRUCTURAL
from steps import begin_step_args, hand_case, random_indexer_output, random_step

BOTH = [dsv4_indices.build, reference.build]


def case(**changes):
    kwargs, _, _ = hand_case()
    kwargs.update(changes)
    return kwargs


# ---- SPEC §4 structural errors: ValueError with the field, the row and the value, on every
# backend (CUDA: checked on the host copies) ----

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("changes,optimized,oracle", [pytest.param(*c[1:], id=c[0]) for c in STRUCTURAL])
def test_structural_errors_are_value_errors_with_the_cpp_message(backend, changes, optimized, oracle):
    kwargs = convert(case(**changes), backend)
    with pytest.raises(ValueError, match=re.escape(optimized)):
        dsv4_indices.build(**kwargs)
    if backend != "cuda":  # the reference reads host arrays
        with pytest.raises(ValueError, match=re.escape(oracle)):
            reference.build(**kwargs)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("changes,optimized", [pytest.param(*c[1:], id=c[0]) for c in OPTIMIZED_ONLY])
def test_optimized_only_shape_errors(backend, changes, optimized):
    with pytest.raises(ValueError, match=re.escape(optimized)):
        dsv4_indices.build(**convert(case(**changes), backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_structural_error_in_begin_step(backend):
    """StepIndexer.begin_step validates the step once, with the same messages; no step opens."""
    indexer = flash_indexer()
    step = random_step(np.random.default_rng(6), max_requests=3)  # with prefill tokens
    args = begin_step_args(step)
    bad = args["seq_lens"].copy()
    bad[-1] = 0
    q = len(bad) - 1
    query_length = int(args["query_start_loc"][q + 1] - args["query_start_loc"][q])
    with pytest.raises(ValueError, match=re.escape(f"seq_lens[{q}] = 0 is below its query length {query_length}")):
        indexer.begin_step(**convert(dict(args, seq_lens=bad), backend))
    assert not indexer.step_open
    bad_c128a = dict(args, c128a_prefill_local=args["c128a_prefill_local"][1:])
    rows = args["c128a_prefill_local"].shape[0]
    with pytest.raises(ValueError, match=re.escape(
            f"C128A layers (c128a_* arguments): prefill_topk has {rows - 1} rows, expected T - D = {rows}")):
        indexer.begin_step(**convert(bad_c128a, backend))  # the C128A layers' shapes: checked up front too
    assert not indexer.step_open


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


NUMPY_ONLY = {"prefill_topk: negative row stride -2"}  # torch has no negative strides


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", BOTH, ids=["build", "reference"])
@pytest.mark.parametrize("changes,error,message", ARRAY_ERRORS)
def test_bad_arrays_name_the_argument(backend, fn, changes, error, message):
    if backend != "numpy" and message in NUMPY_ONLY:
        pytest.skip("numpy only: torch has no negative strides")
    if backend == "cuda" and fn is reference.build:
        pytest.skip("the reference reads host arrays")
    with pytest.raises(error, match=re.escape(message)):
        fn(**convert(case(**changes), backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_block_tables_must_be_dense_for_build(backend):
    """The optimized path reads block tables as dense rows (SPEC §7's strided tables are not
    there yet); the reference copies its inputs, so it takes them."""
    table = np.zeros((2, 6), np.int32)
    table[:, :3] = [[3, 1, -1], [0, 2, 5]]
    with pytest.raises(ValueError, match=re.escape(
            "swa_block_table: rows must be dense (row stride = columns), got row stride 6 for 3 columns")):
        dsv4_indices.build(**convert(case(swa_block_table=table[:, :3]), backend))
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
    D = step["decode_swa_indices"].shape[0]
    with pytest.raises(ValueError, match=re.escape(
            f"layer 2 (C4A): prefill_topk has {T - D - 1} rows, expected T - D = {T - D}")):
        indexer.layer(2, (topk[:D], topk[D + 1:]))  # the pair form: shapes checked per layer
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
