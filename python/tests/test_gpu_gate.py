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


def launching_case(calls, wall_us, launch):
    """A case measured at wall_us per call, whose held rounds call `launch`."""
    return bench_binding.Case(dict(case="build", calls=calls), lambda: (wall_us, wall_us), launch=launch)


def test_rounds_whose_gate_opened_early_are_repeated_with_a_longer_hold():
    gate, syncs, calls = FakeGate(needed_us=9000.0), [], []
    case = launching_case(500, 1.0, lambda: calls.append(1))
    bench_binding.measure([case], 3, sync=lambda: syncs.append(1), gate=gate)
    # 200 calls a round (GATED_CALLS), first hold max(2000, 4 * 1.0 * 200) = 2000 us: too short
    # twice (2000, 4000), then 8000 too, then 16000 holds for the 3 rounds counted.
    assert gate.holds == [2000.0, 4000.0, 8000.0, 16000.0, 16000.0, 16000.0]
    assert len(calls) == 6 * bench_binding.GATED_CALLS
    assert len(syncs) == 4 + 6  # before the warm-up and 3 timed rounds, and before every held round
    r = case.result()
    assert r["gated_calls"] == bench_binding.GATED_CALLS and r["gpu_us_median"] == 3.0
    assert 0 < r["gated_us_min"] <= r["gated_us_median"]


def test_held_rounds_of_several_cases_are_interleaved_too():
    gate, log = FakeGate(needed_us=0.0), []
    made = [launching_case(10, 1.0, lambda name=name: log.append(name)) for name in "ab"]
    bench_binding.measure(made, 2, sync=lambda: None, gate=gate)
    assert log == ["a"] * 10 + ["b"] * 10 + ["b"] * 10 + ["a"] * 10  # 10 calls a held round here


def test_a_gate_that_never_holds_is_an_error_not_a_number():
    with pytest.raises(RuntimeError, match="never held"):
        bench_binding.measure([launching_case(10, 1.0, lambda: None)], 2, sync=lambda: None,
                              gate=FakeGate(needed_us=float("inf")))
