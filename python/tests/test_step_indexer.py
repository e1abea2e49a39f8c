"""StepIndexer (the per-step cache) on the host backend: every layer of DeepSeek-V4-Flash and -Pro
steps equals the reference's build of that layer, the builder-call counts of SPEC §5, identity of
cache hits, and the step's lifetime rules."""
import numpy as np
import pytest

import dsv4_indices
from dsv4_indices import reference
from conftest import needs_torch
from steps import begin_step_args, layer_build_args, random_indexer_output, random_step

SCHEDULES = {"flash": reference.deepseek_v4_flash(), "pro": reference.deepseek_v4_pro()}


def run_step(indexer, schedule, step, c4a, to_framework=lambda a: a):
    """One engine step: begin_step, layer(i) for every layer in order, end_step. Returns the
    per-layer outputs and the step's content errors."""
    args = {k: to_framework(v) for k, v in begin_step_args(step).items()}
    indexer.begin_step(**args)
    outputs = []
    for i, ratio in enumerate(schedule["compress_ratios"]):
        outputs.append(indexer.layer(i, to_framework(c4a[i]) if ratio == 4 else None))
    errors = indexer.content_errors()
    indexer.end_step()
    return outputs, errors


def check_against_reference(schedule, step, c4a, outputs, errors):
    """Every layer equals the reference; the step's content errors are those of its distinct builds."""
    want_errors, counted = 0, set()
    for i, ratio in enumerate(schedule["compress_ratios"]):
        kwargs = layer_build_args(step, ratio, c4a.get(i), schedule["c4a_topk"])
        want = reference.build(**kwargs)
        got = outputs[i]
        np.testing.assert_array_equal(np.asarray(got[0]), want[0], err_msg=f"layer {i} (ratio {ratio})")
        np.testing.assert_array_equal(np.asarray(got[1]), want[1], err_msg=f"layer {i} lens")
        kind = 4 if ratio == 4 else (128 if ratio == 128 else 1)
        if kind == 4 or kind not in counted:  # a hit adds no content errors (SPEC §4)
            want_errors += want[2]
            counted.add(kind)
    assert errors == want_errors


def random_c4a(rng, schedule, step, width=None):
    width = width or schedule["c4a_topk"]
    return {i: random_indexer_output(rng, step, width)
            for i, r in enumerate(schedule["compress_ratios"]) if r == 4}


@pytest.mark.parametrize("name", ["flash", "pro"])
@pytest.mark.parametrize("seed", range(6))
def test_schedule_steps_equal_reference(name, seed):
    schedule = SCHEDULES[name]
    rng = np.random.default_rng(1000 + seed)
    indexer = dsv4_indices.StepIndexer(schedule["compress_ratios"], window=schedule["window"],
                                       c4a_topk=schedule["c4a_topk"])
    for s in range(2):  # consecutive steps: no stale hit from the previous one
        step = random_step(rng, window=schedule["window"], corrupt=(seed + s) % 3 == 2)
        c4a = random_c4a(rng, schedule, step, width=int(rng.integers(1, 40)))
        outputs, errors = run_step(indexer, schedule, step, c4a)
        check_against_reference(schedule, step, c4a, outputs, errors)
        layers = len(schedule["compress_ratios"])
        c4a_layers = schedule["compress_ratios"].count(4)
        cacheable_keys = len({r if r == 128 else 1 for r in schedule["compress_ratios"] if r != 4})
        assert indexer.builder_calls == c4a_layers + cacheable_keys  # Flash 23, Pro 31
        assert indexer.cache_hits == layers - indexer.builder_calls
    assert indexer.builder_calls == {"flash": 23, "pro": 31}[name]


@pytest.mark.parametrize("name", ["flash", "pro"])
def test_uncached_verified_and_unplanned_steps_equal_reference(name):
    schedule = SCHEDULES[name]
    rng = np.random.default_rng(5)
    step = random_step(rng)
    c4a = random_c4a(rng, schedule, step, width=20)
    uncached = dsv4_indices.StepIndexer(schedule["compress_ratios"], cache=False, c4a_topk=schedule["c4a_topk"])
    verified = dsv4_indices.StepIndexer(schedule["compress_ratios"], verify_on_hit=True,
                                        c4a_topk=schedule["c4a_topk"])
    # Without the per-step token plan: the same outputs and builds.
    unplanned = dsv4_indices.StepIndexer(schedule["compress_ratios"], token_plan=False, c4a_topk=schedule["c4a_topk"])
    cached = {"flash": 23, "pro": 31}[name]
    for indexer, calls in ((uncached, {"flash": 43, "pro": 61}[name]), (verified, cached), (unplanned, cached)):
        outputs, errors = run_step(indexer, schedule, step, c4a)
        assert indexer.builder_calls == calls
        check_against_reference(schedule, step, c4a, outputs, errors)


def test_hits_are_the_same_arrays_and_c4a_layers_are_not():
    schedule = SCHEDULES["flash"]
    rng = np.random.default_rng(11)
    step = random_step(rng)
    c4a = random_c4a(rng, schedule, step, width=8)
    indexer = dsv4_indices.StepIndexer(schedule["compress_ratios"])
    indexer.begin_step(**begin_step_args(step))
    swa0, swa1 = indexer.layer(0), indexer.layer(1)
    assert swa0 is swa1  # SWA-only: one build, the very same arrays
    c4a2, c4a4 = indexer.layer(2, c4a[2]), indexer.layer(4, c4a[4])
    assert not np.shares_memory(c4a2[0], c4a4[0])
    c128a3, c128a5 = indexer.layer(3), indexer.layer(5)
    assert c128a3 is c128a5
    assert c128a3[0].__array_interface__["data"][0] == c128a5[0].__array_interface__["data"][0]
    assert indexer.builder_calls == 4 and indexer.cache_hits == 2
    indexer.end_step()


def test_zero_copy_outputs_are_the_buffers_the_builder_wrote():
    schedule = SCHEDULES["flash"]
    rng = np.random.default_rng(12)
    step = random_step(rng)
    c4a = random_c4a(rng, schedule, step, width=8)
    indexer = dsv4_indices.StepIndexer(schedule["compress_ratios"])
    indexer.begin_step(**begin_step_args(step))
    for i, ratio in enumerate(schedule["compress_ratios"][:6]):
        indices, lens = indexer.layer(i, c4a[i] if ratio == 4 else None)
        assert (indices.__array_interface__["data"][0], lens.__array_interface__["data"][0]) == \
            indexer.last_output_addresses
    indexer.end_step()


def test_c4a_topk_as_a_pair():
    schedule = SCHEDULES["flash"]
    rng = np.random.default_rng(13)
    step = random_step(rng)
    topk = random_indexer_output(rng, step, 12)
    D = step["decode_swa_indices"].shape[0]
    indexer = dsv4_indices.StepIndexer(schedule["compress_ratios"])
    indexer.begin_step(**begin_step_args(step))
    one = indexer.layer(2, topk)
    pair = indexer.layer(4, (topk[:D].copy(), topk[D:].copy()))
    np.testing.assert_array_equal(one[0], pair[0])
    np.testing.assert_array_equal(one[1], pair[1])


def test_layer_outside_a_step_raises():
    indexer = dsv4_indices.StepIndexer([0, 128])
    with pytest.raises(RuntimeError, match="no step is open"):
        indexer.layer(0)
    step = random_step(np.random.default_rng(3))
    indexer.begin_step(**begin_step_args(step))
    indexer.layer(0)
    indexer.end_step()
    assert not indexer.step_open
    with pytest.raises(RuntimeError, match="no step is open"):
        indexer.layer(0)  # never a stale hit after the step ended
    with pytest.raises(RuntimeError, match="no step is open"):
        indexer.content_errors()
    indexer.end_step()  # ending twice is harmless


def test_begin_step_ends_an_open_step():
    indexer = dsv4_indices.StepIndexer([0, 128])
    rng = np.random.default_rng(4)
    first = random_step(rng)
    indexer.begin_step(**begin_step_args(first))
    a = indexer.layer(1)
    second = random_step(rng)
    indexer.begin_step(**begin_step_args(second))
    b = indexer.layer(1)
    assert indexer.builder_calls == 1 and b is not a
    np.testing.assert_array_equal(b[0], reference.build(**layer_build_args(second, 128))[0])
    np.testing.assert_array_equal(a[0], reference.build(**layer_build_args(first, 128))[0])


@needs_torch
def test_torch_cpu_step():
    import torch
    schedule = SCHEDULES["pro"]
    rng = np.random.default_rng(21)
    step = random_step(rng)
    c4a = random_c4a(rng, schedule, step, width=30)
    indexer = dsv4_indices.StepIndexer(schedule["compress_ratios"], c4a_topk=schedule["c4a_topk"])

    def to_torch(a):
        return torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a

    outputs, errors = run_step(indexer, schedule, step, c4a, to_torch)
    assert all(isinstance(o[0], torch.Tensor) for o in outputs)
    assert outputs[0][0].data_ptr() == outputs[3][0].data_ptr()  # C128A layers 0 and 3: one build
    check_against_reference(schedule, step, c4a, [(o[0].numpy(), o[1].numpy()) for o in outputs], errors)
    assert indexer.builder_calls == 31
