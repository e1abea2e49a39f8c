"""The CUDA backend from Python with torch CUDA tensors: equal to the reference, zero-copy, on the
caller's stream. Skipped, with the reason, where torch, CUDA support or a device is missing."""
import re

import numpy as np
import pytest

import dsv4_indices
from dsv4_indices import reference
from conftest import cuda_skip_reason
from steps import begin_step_args, hand_case, layer_build_args, random_indexer_output, random_step
from test_step_indexer import SCHEDULES, check_against_reference, random_c4a

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(cuda_skip_reason() is not None, reason=f"GPU test: {cuda_skip_reason()}")]

HOST_COPIES = {"query_start_loc": "query_start_loc_cpu", "seq_lens": "seq_lens_cpu", "token_to_req": "token_to_req_cpu"}


def to_cuda(kwargs):
    """CUDA tensors of every array argument, plus the host copies of the structural three."""
    import torch
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            out[k] = torch.from_numpy(np.ascontiguousarray(v)).cuda()
            if k in HOST_COPIES:
                out[HOST_COPIES[k]] = torch.from_numpy(v)
        else:
            out[k] = v
    return out


def host(t):
    return t.cpu().numpy()


def test_hand_case():
    import torch
    kwargs, indices, lens = hand_case()
    got_indices, got_lens, errors = dsv4_indices.build(**to_cuda(kwargs), count_content_errors=True)
    assert got_indices.is_cuda and got_indices.dtype == torch.int32
    np.testing.assert_array_equal(host(got_indices), indices)
    np.testing.assert_array_equal(host(got_lens), lens)
    assert errors == 0
    assert dsv4_indices.build(**to_cuda(kwargs))[2] is None  # not counted unless asked: no sync


@pytest.mark.parametrize("seed", range(20))
def test_random_layers_equal_reference(seed):
    rng = np.random.default_rng(seed)
    step = random_step(rng, window=int(rng.choice([8, 64, 128])), main_block_size=int(rng.choice([128, 256])),
                       swa_block_size=int(rng.choice([16, 48, 64])), corrupt=seed % 5 == 4,
                       max_prefill=int(rng.choice([40, 600])))
    c4a = random_indexer_output(rng, step, int(rng.integers(1, 40)))
    for ratio in (1, 128, 4):
        kwargs = layer_build_args(step, ratio, c4a, 32)
        got = dsv4_indices.build(**to_cuda(kwargs), count_content_errors=True)
        want = reference.build(**kwargs)
        np.testing.assert_array_equal(host(got[0]), want[0])
        np.testing.assert_array_equal(host(got[1]), want[1])
        assert got[2] == want[2]


@pytest.mark.parametrize("name", ["flash", "pro"])
@pytest.mark.parametrize("seed", range(4))
def test_schedule_steps_equal_reference(name, seed):
    schedule = SCHEDULES[name]
    rng = np.random.default_rng(2000 + seed)
    indexer = dsv4_indices.StepIndexer(schedule["compress_ratios"], c4a_topk=schedule["c4a_topk"])
    for s in range(2):
        step = random_step(rng, corrupt=(seed + s) % 2 == 1, max_prefill=300)
        c4a = random_c4a(rng, schedule, step, width=int(rng.integers(1, 64)))
        indexer.begin_step(**to_cuda(begin_step_args(step)))
        outputs = []
        for i, ratio in enumerate(schedule["compress_ratios"]):
            indices, lens = indexer.layer(i, to_cuda({"t": c4a[i]})["t"] if ratio == 4 else None)
            assert indices.is_cuda and indices.data_ptr() == indexer.last_output_addresses[0]
            outputs.append((indices, lens))
        errors = indexer.content_errors()
        indexer.end_step()
        assert indexer.backend == "cuda"
        assert indexer.builder_calls == {"flash": 23, "pro": 31}[name]
        hits = [i for i, r in enumerate(schedule["compress_ratios"]) if r == 128]
        first = outputs[hits[0]]
        assert all(outputs[i][0] is first[0] and outputs[i][1] is first[1] for i in hits)  # the very same tensors
        check_against_reference(schedule, step, c4a, [(host(a), host(b)) for a, b in outputs], errors)


def test_side_stream_and_graph_capture():
    """Builds run on the caller's stream: captured into a CUDA graph on a side stream, replayed."""
    import torch
    kwargs, indices, lens = hand_case()
    args = to_cuda(kwargs)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # stream=None: torch's current stream
        got = dsv4_indices.build(**args)
    side.synchronize()
    np.testing.assert_array_equal(host(got[0]), indices)
    for stream in (side, side.cuda_stream):
        got = dsv4_indices.build(**args, stream=stream)
        side.synchronize()
        np.testing.assert_array_equal(host(got[0]), indices)
    del got  # the side stream's builder is idle and warm: capture allocates nothing
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        captured = dsv4_indices.build(**args)
    captured[0].fill_(7)
    graph.replay()
    torch.cuda.synchronize()
    np.testing.assert_array_equal(host(captured[0]), indices)
    np.testing.assert_array_equal(host(captured[1]), lens)


def test_outputs_outlive_the_step():
    import torch
    indexer = dsv4_indices.StepIndexer([0, 128])
    step = random_step(np.random.default_rng(3))
    indexer.begin_step(**to_cuda(begin_step_args(step)))
    kept = indexer.layer(1)[0]
    indexer.end_step()
    del indexer
    for seed in range(4, 8):
        other = dsv4_indices.StepIndexer([0, 128])
        other.begin_step(**to_cuda(begin_step_args(random_step(np.random.default_rng(seed)))))
        assert other.layer(1)[0].data_ptr() != kept.data_ptr()
        other.end_step()
    torch.cuda.synchronize()
    np.testing.assert_array_equal(host(kept), reference.build(**layer_build_args(step, 128))[0])


def test_cuda_argument_errors():
    import torch
    args = to_cuda(hand_case()[0])
    with pytest.raises(ValueError, match=re.escape("seq_lens: on cpu, but the step's tensors are on cuda:0")):
        dsv4_indices.build(**dict(args, seq_lens=args["seq_lens"].cpu()))
    with pytest.raises(ValueError, match=re.escape("swa_block_table: on cuda:0, but the step's tensors are on cpu")):
        dsv4_indices.build(**dict(hand_case()[0], swa_block_table=args["swa_block_table"]))
    with pytest.raises(ValueError, match="seq_lens_cpu: required with CUDA tensors"):
        dsv4_indices.build(**dict(args, seq_lens_cpu=None))
    with pytest.raises(ValueError, match="token_to_req_cpu: must be in host memory"):
        dsv4_indices.build(**dict(args, token_to_req_cpu=args["token_to_req"]))
    with pytest.raises(TypeError, match="query_start_loc_cpu: expected dtype int32, got int64"):
        dsv4_indices.build(**dict(args, query_start_loc_cpu=args["query_start_loc_cpu"].long()))
    with pytest.raises(ValueError, match=re.escape("seq_lens_cpu has size 3, expected R = 2")):
        dsv4_indices.build(**dict(args, seq_lens_cpu=torch.zeros(3, dtype=torch.int32)))
    with pytest.raises(TypeError, match="stream: expected an int"):
        dsv4_indices.build(**args, stream="default")
    with pytest.raises(ValueError, match="stream: not a cudaStream_t"):
        dsv4_indices.build(**args, stream=-1)
    with pytest.raises(ValueError, match="the reference runs on the CPU"):
        reference.build(**hand_case()[0] | {"query_start_loc": args["query_start_loc"]})
    bad = dict(args, seq_lens_cpu=torch.tensor([6, 1], dtype=torch.int32))
    with pytest.raises(ValueError, match=re.escape("seq_lens[1] = 1 is below its query length 2")):
        dsv4_indices.build(**bad)  # SPEC §4 is checked on the host copies


def test_out_on_the_callers_stream_and_in_a_graph():
    """build(out=...) with torch CUDA tensors: written on the caller's stream into the given
    tensors (returned as they are); captured into a CUDA graph, every replay writes them."""
    import torch
    kwargs, indices, lens = hand_case()  # T = 3, W + P = 8
    args = to_cuda(kwargs)
    out = (torch.full((4, 12), 99, dtype=torch.int32, device="cuda"),
           torch.full((4,), 99, dtype=torch.int32, device="cuda"))
    pointers = (out[0].data_ptr(), out[1].data_ptr())

    def check():
        got_indices, got_lens = host(out[0]), host(out[1])
        np.testing.assert_array_equal(got_indices[:3, :8], indices)
        np.testing.assert_array_equal(got_lens[:3], lens)
        assert (got_indices[:3, 8:] == -1).all() and (got_indices[3] == -1).all() and got_lens[3] == 0

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())  # the fills
    with torch.cuda.stream(side):  # stream=None: torch's current stream
        got = dsv4_indices.build(**args, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    assert (got[0].data_ptr(), got[1].data_ptr()) == pointers
    side.synchronize()
    check()
    graph = torch.cuda.CUDAGraph()  # the side stream's builder is idle and warm: nothing allocated
    with torch.cuda.graph(graph, stream=side):
        captured = dsv4_indices.build(**args, out=out)
    assert captured[0] is out[0] and captured[1] is out[1]
    out[0].fill_(7)
    out[1].fill_(7)
    graph.replay()
    torch.cuda.synchronize()
    check()


def test_out_on_another_device_or_framework():
    import torch
    args = to_cuda(hand_case()[0])
    cpu_out = (torch.zeros((3, 8), dtype=torch.int32), torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError, match=re.escape(
            "out[0] (sparse_indices): on cpu, but the step's tensors are on cuda:0 (query_start_loc decides)")):
        dsv4_indices.build(**args, out=cpu_out)
    with pytest.raises(TypeError, match=re.escape(
            "out[0] (sparse_indices): a numpy.ndarray, but the inputs are torch.Tensor")):
        dsv4_indices.build(**args, out=(cpu_out[0].numpy(), cpu_out[1].numpy()))
