"""build() and reference.build() on the host backend: a case worked by hand, then seeded random
layers of every kind, element for element (integer indices: exact equality)."""
import numpy as np
import pytest

import dsv4_indices
from dsv4_indices import reference
from conftest import needs_torch
from steps import hand_case, layer_build_args, random_indexer_output, random_step


def assert_same(got, want):
    gi, gl, ge = got
    wi, wl, we = want
    np.testing.assert_array_equal(np.asarray(gi), np.asarray(wi))
    np.testing.assert_array_equal(np.asarray(gl), np.asarray(wl))
    assert ge == we


def test_hand_case_reference():
    kwargs, indices, lens = hand_case()
    got = reference.build(**kwargs)
    np.testing.assert_array_equal(got[0], indices)
    np.testing.assert_array_equal(got[1], lens)
    assert got[2] == 0


def test_hand_case_build():
    kwargs, indices, lens = hand_case()
    got_indices, got_lens, errors = dsv4_indices.build(**kwargs)
    assert isinstance(got_indices, np.ndarray) and got_indices.dtype == np.int32
    assert got_indices.shape == (3, 8) and got_lens.shape == (3,)
    np.testing.assert_array_equal(got_indices, indices)
    np.testing.assert_array_equal(got_lens, lens)
    assert errors == 0


def test_hand_case_content_error_counted():
    kwargs, indices, _ = hand_case()
    kwargs["swa_block_table"] = np.array([[3, 1, -1], [0, -1, 5]], np.int32)  # block 1 unassigned
    got = dsv4_indices.build(**kwargs)
    want = reference.build(**kwargs)
    assert_same(got, want)
    assert got[2] == 7  # positions 4..7 (4 lookups) and 5..7 (3 lookups) hit the -1 entry


def test_empty_step():
    kwargs, _, _ = hand_case()
    kwargs.update(decode_swa_indices=None, decode_compressed=None, prefill_topk=None,
                  query_start_loc=np.array([0], np.int32), seq_lens=np.zeros(0, np.int32),
                  token_to_req=np.zeros(0, np.int32), swa_block_table=np.zeros((0, 3), np.int32))
    got = dsv4_indices.build(**kwargs)
    assert got[0].shape == (0, 8) and got[1].shape == (0,) and got[2] == 0
    assert_same(got, reference.build(**kwargs))


@pytest.mark.parametrize("seed", range(40))
def test_random_layers_equal_reference(seed):
    rng = np.random.default_rng(seed)
    step = random_step(rng, window=int(rng.choice([8, 64, 128])),
                       main_block_size=int(rng.choice([128, 256])),
                       swa_block_size=int(rng.choice([16, 48, 64])), corrupt=seed % 5 == 4)
    topk = int(rng.choice([8, 16, 30]))
    c4a = random_indexer_output(rng, step, int(rng.integers(1, topk + 4)))
    for ratio in (1, 128, 4):
        kwargs = layer_build_args(step, ratio, c4a, topk)
        assert_same(dsv4_indices.build(**kwargs), reference.build(**kwargs))


def test_strided_rows_read_in_place():
    """Matrices with a row stride above their width (views into wider buffers) are read as they
    are, no copy: the same result as their compact copies."""
    rng = np.random.default_rng(7)
    step = random_step(rng, max_requests=4)
    c4a = random_indexer_output(rng, step, 16)
    wide = np.full((c4a.shape[0], 40), 99, np.int32)
    wide[:, 5:21] = c4a
    kwargs = layer_build_args(step, 4, wide[:, 5:21], 16)
    assert_same(dsv4_indices.build(**kwargs), reference.build(**layer_build_args(step, 4, c4a, 16)))


def test_outputs_are_fresh_per_live_result():
    """Two results alive at once never share memory; a dropped result's memory is reused."""
    kwargs, indices, _ = hand_case()
    a = dsv4_indices.build(**kwargs)
    b = dsv4_indices.build(**kwargs)
    assert not np.shares_memory(a[0], b[0])
    address = b[0].__array_interface__["data"][0]
    del b
    c = dsv4_indices.build(**kwargs)
    assert c[0].__array_interface__["data"][0] == address  # the builder came back to the pool
    np.testing.assert_array_equal(a[0], indices)


@needs_torch
def test_torch_cpu_in_torch_out():
    import torch
    kwargs, indices, lens = hand_case()
    tkw = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    got_indices, got_lens, errors = dsv4_indices.build(**tkw)
    assert isinstance(got_indices, torch.Tensor) and got_indices.dtype == torch.int32
    assert got_indices.device.type == "cpu"
    assert torch.equal(got_indices, torch.from_numpy(indices))
    assert torch.equal(got_lens, torch.from_numpy(lens))
    assert errors == 0
    want = reference.build(**tkw)
    assert isinstance(want[0], torch.Tensor)
    assert torch.equal(want[0], got_indices)


@needs_torch
@pytest.mark.parametrize("seed", range(5))
def test_torch_cpu_random_layers(seed):
    import torch
    rng = np.random.default_rng(100 + seed)
    step = random_step(rng)
    c4a = random_indexer_output(rng, step, 24)
    for ratio in (1, 128, 4):
        kwargs = layer_build_args(step, ratio, c4a, 32)
        tkw = {k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
               for k, v in kwargs.items()}
        assert_same(dsv4_indices.build(**tkw), reference.build(**kwargs))
