"""Unit tests of bench/summarize.py's target judgements (run by CTest: bench_summarize_test)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize  # noqa: E402


class StepWallTargets(unittest.TestCase):
    def judged(self, key, graph, chained, eager, peer):
        targets = []
        summarize.step_wall_targets(key, graph, chained, eager, peer, targets)
        return {what: (value, target) for what, _, value, target in targets}

    def test_each_step_form_against_the_wall_target_and_the_peers_graph(self):
        got = self.judged(("cuda", "flash", "prefill8K"), {"wall_us": 215.0}, {"wall_us": 270.0},
                          {"wall_us": 262.0}, {"graph_wall_us": 307.0})
        self.assertEqual(got["flash prefill 8K step graph, wall (issue 8)"], (215.0, 230.0))
        self.assertEqual(got["flash prefill 8K eager cached step, wall (issue 8)"], (262.0, 230.0))
        self.assertEqual(got["flash prefill 8K step graph, 1 chain, wall (issue 8)"], (270.0, 230.0))
        peer_key = ("flash prefill 8K step graph, wall, against the peer's graph-replayed step "
                    "(issue 8: faster than it)")
        self.assertEqual(got[peer_key], (215.0, 307.0))
        self.assertEqual(len(got), 6)
        self.assertTrue(summarize.verdict(215.0, 230.0).startswith("MET"))
        self.assertTrue(summarize.verdict(262.0, 230.0).startswith("MISSED"))

    def test_pro_target_and_no_peer_line_without_the_peer(self):
        got = self.judged(("cuda", "pro", "prefill8K"), {"wall_us": 494.0}, {}, {"wall_us": 580.0}, {})
        self.assertEqual(got, {"pro prefill 8K step graph, wall (issue 8)": (494.0, 560.0),
                               "pro prefill 8K eager cached step, wall (issue 8)": (580.0, 560.0)})

    def test_other_cases_errors_and_models_are_not_judged(self):
        self.assertEqual(self.judged(("cuda", "flash", "prefill1K"), {"wall_us": 1.0}, {}, {}, {}), {})
        self.assertEqual(self.judged(("cuda", "random", "prefill8K"), {"wall_us": 1.0}, {}, {}, {}), {})
        self.assertEqual(self.judged(("cuda", "flash", "prefill8K"), {"wall_us": 1.0, "error": "x"}, {}, {}, {}),
                         {})


class SplitGraphTargets(unittest.TestCase):
    def judged(self, key, split):
        targets = []
        summarize.split_graph_target(key, split, targets)
        return {what: (value, target) for what, _, value, target in targets}

    def test_the_split_graph_is_judged_against_its_own_target(self):
        got = self.judged(("cuda", "flash", "prefill8K"), {"wall_us": 190.5, "target_us": 200.0})
        self.assertEqual(got, {"flash prefill 8K step, split, as a step graph, wall (issue 12)": (190.5, 200.0)})

    def test_no_target_no_line_and_errors_are_not_judged(self):
        self.assertEqual(self.judged(("cuda", "flash", "decode64_ctx8K"), {"wall_us": 30.0}), {})
        self.assertEqual(self.judged(("cuda", "pro", "prefill8K"), {"error": "x", "target_us": 500.0}), {})
        self.assertEqual(self.judged(("cuda", "pro", "prefill8K"), {}), {})


class GraphVariants(unittest.TestCase):
    def test_each_suffix_names_its_variant_of_the_case(self):
        self.assertEqual(summarize.graph_variant("cuda/step_graph/flash/prefill8K"),
                         (("cuda", "flash", "prefill8K"), ""))
        for suffix in ("split", "chains1", "chains64", "nostatus", "split_nostatus"):
            self.assertEqual(summarize.graph_variant(f"cuda/step_graph/pro/prefill8K_{suffix}"),
                             (("cuda", "pro", "prefill8K"), suffix))
        self.assertEqual(summarize.graph_variant("cpu/step_graph/flash/decode64_ctx8K_split"),
                         (("cpu", "flash", "decode64_ctx8K"), "split"))

    def test_other_names_are_not_graphs(self):
        self.assertIsNone(summarize.graph_variant("cuda/step/flash/prefill8K"))
        self.assertIsNone(summarize.graph_variant("cuda/launch_floor/graph/23x64_hops0"))


if __name__ == "__main__":
    unittest.main()
