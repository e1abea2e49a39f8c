"""bench_binding's gated timing (GpuGate), with a stand-in gate: a round counts only if the
gate held through the whole loop, and a gate that opened early is held twice as long next."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import bench_binding  # noqa: E402


class FakeGate:
    """Holds for `holds[i]` us in round i (a round held iff its hold is >= `needed_us`)."""

    def __init__(self, needed_us, device_us=3.0):
        self.needed_us, self.device_us = needed_us, device_us
        self.holds = []

    def hold(self, us):
        self.holds.append(us)

    def still_held(self):
        return self.holds[-1] >= self.needed_us

    def device_us_per_call(self, calls):
        return self.device_us


def test_rounds_whose_gate_opened_early_are_repeated_with_a_longer_hold():
    gate, syncs, calls = FakeGate(needed_us=9000.0), [], []
    r = bench_binding.gated_per_call_us(lambda: calls.append(1), 500, 3, gate, 1.0, lambda: syncs.append(1))
    # 200 calls a round (GATED_CALLS), first hold max(2000, 4 * 1.0 * 200) = 2000 us: too short
    # twice (2000, 4000), then 8000 too, then 16000 holds for the 3 rounds counted.
    assert gate.holds == [2000.0, 4000.0, 8000.0, 16000.0, 16000.0, 16000.0]
    assert len(calls) == 6 * bench_binding.GATED_CALLS and len(syncs) == 6
    assert r["gated_calls"] == bench_binding.GATED_CALLS and r["gpu_us_median"] == 3.0
    assert 0 < r["gated_us_min"] <= r["gated_us_median"]


def test_a_gate_that_never_holds_is_an_error_not_a_number():
    with pytest.raises(RuntimeError, match="never held"):
        bench_binding.gated_per_call_us(lambda: None, 10, 2, FakeGate(needed_us=float("inf")), 1.0, lambda: None)
