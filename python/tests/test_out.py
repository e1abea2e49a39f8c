"""build(out=(sparse_indices, sparse_lens)): the SPEC §7 caller-owned outputs. The build writes
into the caller's arrays (no copy: the returned arrays are the given objects, their memory
unmoved) every element: rows [0, T) as SPEC §3, columns [W + P, W + P_cap) and rows
[T, T_cap) -1 with length 0. Every bad `out` raises naming out[0] or out[1]."""
import re

import numpy as np
import pytest

import dsv4_indices
from dsv4_indices import reference
from backends import BACKENDS, convert, to_numpy
from conftest import needs_torch
from steps import hand_case, layer_build_args, random_indexer_output, random_step

I32 = np.int32


class Arrays:
    """int32 arrays of one backend's framework and device, their data `offset_bytes` past a
    64-byte boundary, filled with `fill` (what the build must overwrite, or leave alone)."""

    def __init__(self, backend):
        self.torch = backend != "numpy"
        self.device = "cuda" if backend == "cuda" else "cpu"

    def aligned(self, shape, fill=99, offset_bytes=0, dtype="int32"):
        shape = tuple(shape)
        size = int(np.prod(shape))
        if self.torch:
            import torch
            raw = torch.full((size + 32,), fill, dtype=torch.int32, device=self.device)
            start = ((-raw.data_ptr()) % 64 + offset_bytes) // 4
            a = raw[start:start + size].view(shape)
            return a if dtype == "int32" else a.to(getattr(torch, dtype))
        raw = np.empty(size * 4 + 128, np.uint8)
        start = (-raw.__array_interface__["data"][0]) % 64 + offset_bytes
        a = raw[start:start + size * 4].view(I32).reshape(shape)
        a[...] = fill
        return a if dtype == "int32" else a.astype(dtype)

    def overlapping(self, rows, cols, row_stride):
        """rows x cols whose rows start row_stride < cols elements apart."""
        base = self.aligned((rows * row_stride + cols,))
        if self.torch:
            return base.as_strided((rows, cols), (row_stride, 1))
        return np.lib.stride_tricks.as_strided(base, (rows, cols), (row_stride * 4, 4))


def address(a):
    return a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else a.data_ptr()


def check_written(got, want, rows, width):
    """got (T_cap x W + P_cap, T_cap) holds want (T x W + P) and -1 / 0 everywhere else."""
    indices, lens = to_numpy(got[0]), to_numpy(got[1])
    want_indices, want_lens = np.asarray(want[0]), np.asarray(want[1])
    T, used = want_indices.shape
    assert indices.shape == (rows, width) and lens.shape == (rows,)
    np.testing.assert_array_equal(indices[:T, :used], want_indices)
    np.testing.assert_array_equal(lens[:T], want_lens)
    assert (indices[:T, used:] == -1).all() and (indices[T:] == -1).all() and (lens[T:] == 0).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_hand_case_into_the_callers_arrays(backend):
    kwargs, indices, lens = hand_case()
    arrays = Arrays(backend)
    out = (arrays.aligned((3, 8)), arrays.aligned((3,)))
    addresses = (address(out[0]), address(out[1]))
    got = dsv4_indices.build(**convert(kwargs, backend), out=out, count_content_errors=True)
    assert got[0] is out[0] and got[1] is out[1]  # the very arrays, not copies or new views
    assert (address(got[0]), address(got[1])) == addresses
    np.testing.assert_array_equal(to_numpy(got[0]), indices)
    np.testing.assert_array_equal(to_numpy(got[1]), lens)
    assert got[2] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_capacities_are_padded(backend):
    """More rows than T and more columns than W + P: SPEC §7's T_cap and P_cap, padded."""
    kwargs, indices, lens = hand_case()
    arrays = Arrays(backend)
    out = (arrays.aligned((6, 16)), arrays.aligned((6,)))
    got = dsv4_indices.build(**convert(kwargs, backend), out=out)
    check_written(got, (indices, lens), 6, 16)


@pytest.mark.parametrize("backend", BACKENDS)
def test_view_of_a_persistent_buffer(backend):
    """A view [:T_cap, :W + P_cap] of a wider buffer: written at the buffer's row stride, the
    buffer's columns past the view untouched."""
    kwargs, indices, lens = hand_case()
    arrays = Arrays(backend)
    buffer, lens_buffer = arrays.aligned((8, 20)), arrays.aligned((8,))
    out = (buffer[:4, :12], lens_buffer[:4])
    got = dsv4_indices.build(**convert(kwargs, backend), out=out)
    assert got[0] is out[0]
    check_written(got, (indices, lens), 4, 12)
    buffer, lens_buffer = to_numpy(buffer), to_numpy(lens_buffer)
    assert (buffer[:4, 12:] == 99).all() and (buffer[4:] == 99).all() and (lens_buffer[4:] == 99).all()


@pytest.mark.parametrize("seed", range(12))
def test_random_layers_into_caller_arrays_equal_reference(seed):
    rng = np.random.default_rng(300 + seed)
    step = random_step(rng, window=int(rng.choice([8, 64, 128])), swa_block_size=int(rng.choice([16, 64])),
                       corrupt=seed % 4 == 3)
    c4a = random_indexer_output(rng, step, int(rng.integers(1, 24)))
    for ratio in (1, 128, 4):
        kwargs = layer_build_args(step, ratio, c4a, 16)
        want = reference.build(**kwargs)
        T, width = want[0].shape
        rows = T + int(rng.integers(0, 3))
        cols = width + 4 * int(rng.integers(0, 3))
        arrays = Arrays("numpy")
        got = dsv4_indices.build(**kwargs, out=(arrays.aligned((rows, cols), fill=7), arrays.aligned((rows,), fill=7)))
        check_written(got, want, rows, cols)
        assert got[2] == want[2]


def test_empty_step_into_empty_arrays():
    kwargs, _, _ = hand_case()
    kwargs.update(decode_swa_indices=None, decode_compressed=None, prefill_topk=None,
                  query_start_loc=np.array([0], I32), seq_lens=np.zeros(0, I32),
                  token_to_req=np.zeros(0, I32), swa_block_table=np.zeros((0, 3), I32))
    out = (np.zeros((0, 8), I32), np.zeros(0, I32))
    got = dsv4_indices.build(**kwargs, out=out)
    assert got[0] is out[0] and got[1] is out[1] and got[2] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_step_into_padding_rows(backend):
    """T = 0 with T_cap = 2 rows: both are padding (-1, length 0), as a padded graph step's."""
    kwargs, _, _ = hand_case()
    kwargs.update(decode_swa_indices=None, decode_compressed=None, prefill_topk=None,
                  query_start_loc=np.array([0], I32), seq_lens=np.zeros(0, I32),
                  token_to_req=np.zeros(0, I32), swa_block_table=np.zeros((0, 3), I32))
    arrays = Arrays(backend)
    out = (arrays.aligned((2, 8)), arrays.aligned((2,)))
    got = dsv4_indices.build(**convert(kwargs, backend), out=out)
    assert got[0] is out[0]
    assert (to_numpy(out[0]) == -1).all() and (to_numpy(out[1]) == 0).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_nothing_is_written_on_an_error(backend):
    kwargs, _, _ = hand_case()
    arrays = Arrays(backend)
    out = (arrays.aligned((3, 8)), arrays.aligned((3,)))
    with pytest.raises(ValueError, match=re.escape("seq_lens[1] = 1 is below its query length 2")):
        dsv4_indices.build(**convert(dict(kwargs, seq_lens=np.array([6, 1], I32)), backend), out=out)
    assert (to_numpy(out[0]) == 99).all() and (to_numpy(out[1]) == 99).all()


# ---- bad out: TypeError for what is not an int32 array of the inputs' framework, ValueError
# for the rest, each naming out[0] (sparse_indices) or out[1] (sparse_lens) ----

def read_only(a):
    a.flags.writeable = False
    return a


# (make(arrays) -> out, exception, message); the hand case has T = 3, W + P = 8
BAD_OUT = [
    pytest.param(lambda a: a.aligned((3, 8)), TypeError,
                 "out: expected a pair (sparse_indices, sparse_lens) of arrays, got ", id="not-a-pair"),
    pytest.param(lambda a: (a.aligned((3, 8)),), TypeError,
                 "out: expected a pair (sparse_indices, sparse_lens) of arrays, got a tuple of 1", id="one-array"),
    pytest.param(lambda a: ([[0] * 8] * 3, a.aligned((3,))), TypeError,
                 "out[0] (sparse_indices): expected an array (numpy, torch or any DLPack tensor), got list",
                 id="not-an-array"),
    pytest.param(lambda a: (a.aligned((3, 8), dtype="int64"), a.aligned((3,))), TypeError,
                 "out[0] (sparse_indices): expected dtype int32, got int64", id="indices-dtype"),
    pytest.param(lambda a: (a.aligned((3, 8)), a.aligned((3,), dtype="uint8")), TypeError,
                 "out[1] (sparse_lens): expected dtype int32, got uint8", id="lens-dtype"),
    pytest.param(lambda a: (a.aligned((24,)), a.aligned((3,))), ValueError,
                 "out[0] (sparse_indices): expected a 2-D array, got 1-D", id="indices-rank"),
    pytest.param(lambda a: (a.aligned((3, 8)), a.aligned((3, 1))), ValueError,
                 "out[1] (sparse_lens): expected a 1-D array, got 2-D", id="lens-rank"),
    pytest.param(lambda a: (a.aligned((2, 8)), a.aligned((2,))), ValueError,
                 "out[0] (sparse_indices) has 2 rows, expected at least T = 3", id="too-few-rows"),
    pytest.param(lambda a: (a.aligned((3, 4)), a.aligned((3,))), ValueError,
                 "out[0] (sparse_indices) has 4 columns, expected at least W + P = 8", id="too-few-columns"),
    pytest.param(lambda a: (a.aligned((3, 8)), a.aligned((4,))), ValueError,
                 "out[1] (sparse_lens) has size 4, expected T_cap = 3 (the rows of out[0])", id="lens-size"),
    pytest.param(lambda a: (a.aligned((3, 16))[:, ::2], a.aligned((3,))), ValueError,
                 "out[0] (sparse_indices): columns must be adjacent (column stride 1), got column stride 2",
                 id="column-stride"),
    pytest.param(lambda a: (a.aligned((3, 10))[:, :8], a.aligned((3,))), ValueError,
                 "out[0] (sparse_indices): row stride 10 is not a multiple of 4 (rows must start 16-byte aligned, "
                 "SPEC §7)", id="row-stride-not-16-bytes"),
    pytest.param(lambda a: (a.overlapping(3, 8, 4), a.aligned((3,))), ValueError,
                 "out[0] (sparse_indices): row stride 4 is below its 8 columns (rows overlap)", id="rows-overlap"),
    pytest.param(lambda a: (a.aligned((3, 8), offset_bytes=4), a.aligned((3,))), ValueError,
                 "out[0] (sparse_indices): data is not 16-byte aligned (SPEC §7)", id="misaligned"),
    pytest.param(lambda a: (a.aligned((3, 8)), a.aligned((6,))[::2]), ValueError,
                 "out[1] (sparse_lens): elements must be adjacent (stride 1), got stride 2", id="lens-stride"),
    pytest.param(lambda a: (lambda buffer: (buffer[:3, :8], buffer[1, 6:9]))(a.aligned((4, 12))), ValueError,
                 "out[1] (sparse_lens) overlaps out[0] (sparse_indices)", id="lens-overlaps-a-row"),
    pytest.param(lambda a: (lambda buffer: (buffer[:3, :8], buffer.reshape(-1)[22:25]))(a.aligned((4, 12))),
                 ValueError, "out[1] (sparse_lens) overlaps out[0] (sparse_indices)", id="lens-reaches-the-next-row"),
    pytest.param(lambda a: (lambda buffer: (buffer[1:4, :8], buffer.reshape(-1)[10:13]))(a.aligned((4, 12))),
                 ValueError, "out[1] (sparse_lens) overlaps out[0] (sparse_indices)", id="lens-ends-in-the-first-row"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("make,error,message", BAD_OUT)
def test_bad_out_names_the_argument(backend, make, error, message):
    with pytest.raises(error, match=re.escape(message)):
        dsv4_indices.build(**convert(hand_case()[0], backend), out=make(Arrays(backend)))


@pytest.mark.parametrize("which", [0, 1])
def test_read_only_out(which):
    arrays = Arrays("numpy")
    out = [arrays.aligned((3, 8)), arrays.aligned((3,))]
    out[which] = read_only(out[which])
    name = ["out[0] (sparse_indices)", "out[1] (sparse_lens)"][which]
    with pytest.raises(ValueError, match=re.escape(f"{name}: read-only; pass a writable array")):
        dsv4_indices.build(**hand_case()[0], out=tuple(out))


@needs_torch
def test_out_of_another_framework():
    import torch
    kwargs = hand_case()[0]
    arrays = Arrays("numpy")
    numpy_out = (arrays.aligned((3, 8)), arrays.aligned((3,)))
    torch_out = (torch.from_numpy(numpy_out[0]), torch.from_numpy(numpy_out[1]))
    with pytest.raises(TypeError, match=re.escape(
            "out[0] (sparse_indices): a torch.Tensor, but the inputs are numpy.ndarray (query_start_loc decides): "
            "pass arrays of the inputs' framework")):
        dsv4_indices.build(**kwargs, out=torch_out)
    with pytest.raises(TypeError, match=re.escape(
            "out[1] (sparse_lens): a numpy.ndarray, but the inputs are torch.Tensor (query_start_loc decides)")):
        dsv4_indices.build(**convert(kwargs, "torch-cpu"), out=(torch_out[0], numpy_out[1]))


def test_out_is_keyword_only_and_optional():
    kwargs, indices, _ = hand_case()
    np.testing.assert_array_equal(dsv4_indices.build(**kwargs, out=None)[0], indices)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("extra", [1, 2, 3, 5])
def test_capacity_columns_not_a_multiple_of_4(backend, extra):
    """P_cap need not be a multiple of 4 (SPEC §7: P_cap >= P): the columns up to W + P_cap
    are written, none past them, on rows of a wider buffer. The inputs' rows are 16-byte
    aligned, as the 16-byte (vector) path needs."""
    kwargs, indices, lens = hand_case()  # W = 4, P = 4
    arrays = Arrays(backend)
    kwargs.update(decode_compressed=np.array([[40, 41, -1, -1]], I32), decode_compressed_lens=np.array([2], I32))
    for name in ("decode_swa_indices", "decode_compressed", "prefill_topk"):  # rows 16 bytes apart
        rows = np.full((kwargs[name].shape[0], 4), -1, I32)
        rows[:, :kwargs[name].shape[1]] = kwargs[name]
        matrix = arrays.aligned(rows.shape)
        matrix[...] = rows if backend == "numpy" else convert({"m": rows}, backend)["m"]
        kwargs[name] = matrix[:, :kwargs[name].shape[1]]
    kwargs = convert(kwargs, backend)
    cols = 8 + extra
    buffer = arrays.aligned((5, 16))
    got = dsv4_indices.build(**kwargs, out=(buffer[:4, :cols], arrays.aligned((4,))))
    check_written(got, (indices, lens), 4, cols)
    assert (to_numpy(buffer)[:, cols:] == 99).all() and (to_numpy(buffer)[4:] == 99).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_lens_between_the_rows_of_indices(backend):
    """lens in the columns a view of a wider buffer leaves alone share nothing with it: valid."""
    kwargs, indices, lens = hand_case()
    buffer = Arrays(backend).aligned((4, 12))
    got = dsv4_indices.build(**convert(kwargs, backend), out=(buffer[:3, :8], buffer[1, 8:11]))
    check_written(got, (indices, lens), 3, 8)
    assert (to_numpy(buffer)[[0, 2], 8:] == 99).all() and (to_numpy(buffer)[1, 11:] == 99).all()


def test_out_refcounts_are_restored():
    """The returned pair holds the caller's arrays once each; nothing else keeps them."""
    import gc
    import sys
    kwargs = hand_case()[0]
    arrays = Arrays("numpy")
    out = (arrays.aligned((3, 8)), arrays.aligned((3,)))
    before = [sys.getrefcount(a) for a in out]
    for _ in range(200):
        got = dsv4_indices.build(**kwargs, out=out)
    assert [sys.getrefcount(a) for a in out] == [n + 1 for n in before]  # `got` holds each once
    del got
    gc.collect()
    assert [sys.getrefcount(a) for a in out] == before
