#!/usr/bin/env python3
"""run_peer.py without a GPU: the trace segmentation (call_kernels) on hand-made kernel records, and
the timed loop's page touching (--touch-pages) on stand-ins for torch."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_peer  # noqa: E402  (imports nothing beyond the standard library at module level)

FLUSH = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >(...)"
SPIN = "at::cuda::(anonymous namespace)::spin_kernel(long)"


class CallKernelsTest(unittest.TestCase):
    def test_one_kernel_a_call(self):
        kernels = [(0, 30, FLUSH), (31, 131, SPIN), (132.5, 150, "_mixed_sparse_indices_kernel"),
                   (160, 190, FLUSH), (191, 291, SPIN), (292, 311, "_mixed_sparse_indices_kernel")]
        calls = run_peer.call_kernels(kernels)
        self.assertEqual([(c[0], c[1]) for c in calls], [(17.5, 1.5), (19, 1)])
        self.assertEqual(calls[0][2], ["_mixed_sparse_indices_kernel"])

    def test_a_call_of_two_kernels_spans_both(self):
        kernels = [(0, 30, FLUSH), (31, 131, SPIN), (132, 140, "check"), (141, 160, "build")]
        self.assertEqual(run_peer.call_kernels(kernels), [(28, 1, ["check", "build"])])

    def test_kernels_outside_a_call_are_not_calls(self):
        # Before any head start (warm-up), and a head start followed by the next flush only.
        kernels = [(0, 5, "warm-up build"), (10, 40, FLUSH), (41, 141, SPIN), (150, 180, FLUSH),
                   (181, 281, SPIN), (282, 290, "build"), (291, 320, FLUSH)]
        self.assertEqual(run_peer.call_kernels(kernels), [(8, 1, ["build"])])

    def test_no_head_start_no_calls(self):
        self.assertEqual(run_peer.call_kernels([(0, 30, FLUSH), (31, 40, "build")]), [])


class FakeTensor:
    def __init__(self, cuda):
        self.is_cuda = cuda


class CudaTensorsTest(unittest.TestCase):
    def test_finds_the_cuda_tensors_in_nested_arguments(self):
        a, b, host = FakeTensor(True), FakeTensor(True), FakeTensor(False)
        got = run_peer.cuda_tensors({"x": a, "x_cpu": host, "window": 128, "pair": (b, None)})
        self.assertEqual(got, [a, b])
        self.assertEqual(run_peer.cuda_tensors(None), [])


class FakeEvent:
    def __init__(self, enable_timing=True):
        pass

    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.010  # ms


class FakeTorch:
    class cuda:
        Event = FakeEvent


class Touchable(FakeTensor):
    def __init__(self):
        super().__init__(True)
        self.touched = 0

    def reshape(self, *shape):
        return self

    def element_size(self):
        return 4

    def __getitem__(self, index):
        return self

    def sum(self):
        self.touched += 1


class FakePeer:
    torch = FakeTorch

    def __init__(self, touch_pages):
        self.touch_pages = touch_pages

    def flush_l2(self):
        pass

    def head_start(self, us):
        pass

    def touch(self, tensors):
        run_peer.Peer.touch(self, tensors)


class TimedLoopTest(unittest.TestCase):
    def run_loop(self, touch_pages):
        outputs, inputs = [], {"topk": Touchable(), "window": 128}

        def call():
            outputs.append((Touchable(), Touchable()))
            return outputs[-1]

        device_us, _ = run_peer.time_calls(FakePeer(touch_pages), call, 4, inputs)
        self.assertAlmostEqual(device_us, 10.0)
        return inputs["topk"].touched, [out[0].touched for out in outputs]

    def test_touch_pages_reads_the_inputs_and_the_last_outputs_before_each_timed_call(self):
        # 3 warm-up calls, then 4 timed: each timed call after a touch of the call before's outputs.
        self.assertEqual(self.run_loop(True), (4, [0, 0, 1, 1, 1, 1, 0]))

    def test_without_it_nothing_is_touched(self):
        self.assertEqual(self.run_loop(False), (0, [0] * 7))


if __name__ == "__main__":
    unittest.main()
