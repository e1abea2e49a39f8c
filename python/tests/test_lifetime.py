"""Lifetimes across the boundary: outputs are views of builder memory that stays valid (never
reused) while any array or view references it, also after end_step() and after the StepIndexer
itself is gone; steady state recycles that memory (no growth); inputs are not leaked."""
import gc
import sys

import numpy as np

import dsv4_indices
from dsv4_indices import reference
from conftest import needs_torch
from steps import begin_step_args, hand_case, layer_build_args, random_step

RATIOS = [0, 128, 0, 128]


def address(a):
    return a.__array_interface__["data"][0]


def open_step(indexer, seed):
    step = random_step(np.random.default_rng(seed))
    indexer.begin_step(**begin_step_args(step))
    return step


def test_outputs_outlive_the_step_and_the_indexer():
    indexer = dsv4_indices.StepIndexer(RATIOS)
    step = open_step(indexer, 1)
    view = indexer.layer(1)[0][1:]  # a numpy view of the C128A output
    want = reference.build(**layer_build_args(step, 128))[0][1:]
    indexer.end_step()
    del indexer
    gc.collect()
    # Other builders and steps run meanwhile; none may write into the memory `view` shows.
    other = dsv4_indices.StepIndexer(RATIOS)
    for seed in range(2, 6):
        open_step(other, seed)
        other.layer(1)
        other.end_step()
        dsv4_indices.build(**hand_case()[0])
    np.testing.assert_array_equal(view, want)


def test_live_outputs_are_never_reused_and_dead_ones_are():
    indexer = dsv4_indices.StepIndexer(RATIOS)
    open_step(indexer, 1)
    kept = indexer.layer(1)
    first = address(kept[0])
    indexer.end_step()
    addresses = []
    for seed in range(2, 6):  # `kept` alive: steps use another builder, then alternate two
        open_step(indexer, seed)
        out = indexer.layer(1)
        addresses.append(address(out[0]))
        indexer.end_step()
        del out
    assert first not in addresses
    assert len(set(addresses)) == 1  # dropped each step: that builder's memory is recycled
    del kept
    open_step(indexer, 7)
    seen = {address(indexer.layer(1)[0])}
    indexer.end_step()
    open_step(indexer, 8)
    seen.add(address(indexer.layer(1)[0]))
    indexer.end_step()
    assert first in seen  # the first builder came back to the pool once `kept` was gone


def test_steady_state_build_reuses_one_workspace():
    kwargs, indices, _ = hand_case()
    first = address(dsv4_indices.build(**kwargs)[0])
    for _ in range(200):
        out = dsv4_indices.build(**kwargs)[0]
        assert address(out) == first
        del out


def test_inputs_are_released():
    step = random_step(np.random.default_rng(9))
    args = begin_step_args(step)
    kwargs = layer_build_args(step, 128)
    before = {k: sys.getrefcount(v) for k, v in args.items() if isinstance(v, np.ndarray)}
    indexer = dsv4_indices.StepIndexer(RATIOS)
    for _ in range(3):
        indexer.begin_step(**args)
        assert sys.getrefcount(args["seq_lens"]) > before["seq_lens"]  # held during the step
        indexer.layer(0)
        indexer.layer(1)
        indexer.end_step()
    for _ in range(3):
        dsv4_indices.build(**kwargs)
        reference.build(**kwargs)
    assert {k: sys.getrefcount(v) for k, v in args.items() if isinstance(v, np.ndarray)} == before


def test_no_growth_over_many_steps():
    indexer = dsv4_indices.StepIndexer(RATIOS)
    step = random_step(np.random.default_rng(10))
    args = begin_step_args(step)

    def steps(n):
        for _ in range(n):
            indexer.begin_step(**args)
            for i in range(len(RATIOS)):
                indexer.layer(i)
            indexer.end_step()

    steps(50)
    gc.collect()
    objects = len(gc.get_objects())
    steps(500)
    gc.collect()
    assert len(gc.get_objects()) <= objects + 10


@needs_torch
def test_torch_outputs_hold_their_memory():
    import torch
    indexer = dsv4_indices.StepIndexer(RATIOS)
    step = random_step(np.random.default_rng(11))
    indexer.begin_step(**{k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
                          for k, v in begin_step_args(step).items()})
    indices, lens = indexer.layer(1)
    assert indices.data_ptr() == indexer.last_output_addresses[0]
    tail = indices[2:]  # a view shares the storage (and the lease)
    want = reference.build(**layer_build_args(step, 128))[0][2:]
    indexer.end_step()
    del indices, lens, indexer
    gc.collect()
    for _ in range(3):
        dsv4_indices.build(**{k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
                              for k, v in hand_case()[0].items()})
    assert torch.equal(tail, torch.from_numpy(want))
