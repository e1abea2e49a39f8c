"""Unit tests of bench/summarize.py's target judgements (run by CTest: bench_summarize_test)."""
import json
import os
import sys
import tempfile
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


class LaunchFloorLines(unittest.TestCase):
    def test_the_driver_launch_beside_the_runtime_launch(self):
        lines = summarize.floor_lines({
            "empty_kernel_programmatic": {"device_us": 2.80, "host_us": 4.19},
            "empty_kernel_driver_programmatic": {"device_us": 2.81, "host_us": 3.70},
        })
        driver = [line for line in lines if "cuLaunchKernelEx" in line]
        self.assertEqual(len(driver), 1)
        self.assertIn("host 3.70 us", driver[0])
        self.assertIn("-0.49 us host against cudaLaunchKernelEx", driver[0])

    def test_no_driver_line_without_its_floor(self):
        lines = summarize.floor_lines({"empty_kernel_programmatic": {"device_us": 2.80, "host_us": 4.19}})
        self.assertFalse(any("cuLaunchKernelEx" in line for line in lines))


class TracedLoopTable(unittest.TestCase):
    TRACE = {"event_us": 24.86, "kernel_us": 22.22, "gap_us": 2.50, "calls_traced": 50}
    PEER = {
        "flash/C128A/prefill8K_ctx120K": {
            "device_us": 24.38, "ours_device_us": 24.64, "matches_reference": True,
            "trace_engine": {"event_us": 24.59, "kernel_us": 21.90, "gap_us": 2.53, "calls_traced": 50},
            "ours_trace": TRACE},
        "flash/C4A/prefill8K": {"device_us": 14.35, "ours_device_us": 13.9,
                                "trace_engine": {"error": "RuntimeError: no CUPTI"}, "ours_trace": TRACE},
    }

    def test_each_kernels_own_time_and_the_gap_before_it(self):
        ctx = {"empty_kernel_trace": {"event_us": 3.42, "kernel_us": 0.86, "gap_us": 2.53}}
        text = "\n".join(summarize.traced_loop_lines(self.PEER, ctx))
        self.assertIn("| flash | C128A | prefill8K_ctx120K | 22.22 | 21.90 | 0.99 | 2.50 | 2.53 | 24.86 | 24.59 |",
                      text)
        self.assertNotIn("C4A", text)  # a failed trace gives no row
        self.assertIn("empty Triton kernel: kernel 0.86 us, gap 2.53 us", text)

    def test_nothing_without_traces(self):
        self.assertEqual(summarize.traced_loop_lines(SameLoopTable.PEER, {}), [])
        self.assertEqual(summarize.traced_loop_lines(None, None), [])


class SameLoopTable(unittest.TestCase):
    PEER = {
        "flash/SWA-only/decode64_ctx8K": {"device_us": 3.55, "ours_device_us": 3.40, "ours_host_us": 9.1,
                                          "matches_reference": True, "ours_matches_reference": True},
        "flash/C4A/prefill8K": {"device_us": 14.35, "matches_reference": True},  # ours not run
    }
    RUNS = {"cuda/kernel/flash/SWA-only/decode64_ctx8K": {"device_us": 3.85},
            "cuda/launch_floor/empty_kernel": {"device_us": 2.87}}

    def test_ours_and_the_peer_timed_in_one_loop_with_both_floors(self):
        lines = summarize.same_loop_lines(self.PEER, {"empty_kernel_device_us": 2.61}, self.RUNS)
        text = "\n".join(lines)
        self.assertIn("| flash | SWA-only | decode64_ctx8K | 3.40 | 3.55 | 1.04 | 3.85 |", text)
        self.assertNotIn("C4A", text)  # no row without ours
        self.assertIn("empty Triton kernel 2.61 us", text)
        self.assertIn("kernel_bench's empty kernel 2.87 us", text)

    def test_nothing_without_ours(self):
        self.assertEqual(summarize.same_loop_lines({"flash/C4A/prefill8K": {"device_us": 14.35}}, {}, {}), [])
        self.assertEqual(summarize.same_loop_lines(None, None, {}), [])

    def test_a_mismatch_of_ours_is_an_error(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_peer_test.json")
        with open(path, "w") as f:
            json.dump({"context": {}, "results": [{"key": "flash/C4A/prefill8K", "matches_reference": True,
                                                   "ours_matches_reference": False,
                                                   "ours_mismatch": "row 0 column 1: got 2, want 3"}]}, f)
        try:
            errors = []
            summarize.load_peer(path, errors)
        finally:
            os.remove(path)
        self.assertEqual(errors, [("ours in the peer's loop flash/C4A/prefill8K", "row 0 column 1: got 2, want 3")])


class Unreadable(unittest.TestCase):
    def test_an_empty_file_is_a_stage_that_ran_nothing_and_a_cut_one_a_killed_run(self):
        with tempfile.TemporaryDirectory() as d:
            empty, cut = os.path.join(d, "step_bench.json"), os.path.join(d, "kernel_bench.json")
            open(empty, "w").close()
            with open(cut, "w") as f:
                f.write('{"context": {')
            self.assertIsNone(summarize.load(empty))
            self.assertIn("matched nothing", summarize.unreadable(empty))
            self.assertIn("killed run", summarize.unreadable(cut))


class ChainFloors(unittest.TestCase):
    RUNS = {
        "cuda/kernel/flash/C4A/prefill8K": {"device_us": 12.6},
        "cuda/kernel_planned/flash/C4A/prefill8K": {"device_us": 12.0},
        "cuda/byte_floor/flash/C4A/prefill8K": {"device_us": 10.9},
        "cuda/chain_floor/1/flash/C4A/prefill8K": {"device_us": 11.3},
        "cuda/chain_floor/2/flash/C4A/prefill8K": {"device_us": 11.8},
        "cuda/kernel/flash/C128A/prefill8K": {"device_us": 7.4},
        "cuda/byte_floor/flash/C128A/prefill8K": {"device_us": 5.4},
        "cuda/chain_floor/1/flash/C128A/prefill8K": {"device_us": 6.2},
        "cuda/chain_floor/2/flash/C128A/prefill8K": {"error": "x"},
        "cuda/byte_floor/flash/SWA-only/decode64_ctx8K": {"device_us": 3.6},
        "cpu/chain_floor/1/flash/C4A/prefill1K": {"device_us": 1.0},
    }

    def test_one_row_per_case_with_a_chain_floor_and_where_the_target_sits(self):
        rows = summarize.chain_floor_rows(self.RUNS)
        self.assertEqual([r["key"] for r in rows], ["flash/C4A/prefill8K", "flash/C128A/prefill8K"])
        c4a, c128a = rows
        self.assertEqual((c4a["byte_us"], c4a["hops_us"], c4a["ours_us"], c4a["planned_us"], c4a["target_us"]),
                         (10.9, {1: 11.3, 2: 11.8}, 12.6, 12.0, 11.6))
        self.assertEqual(c4a["target_vs_floors"], "below the 2-read floor")
        self.assertEqual(c128a["hops_us"], {1: 6.2})  # the failed run is left out
        self.assertEqual(c128a["target_vs_floors"], "below the 1-read floor")
        self.assertIsNone(c128a["planned_us"])

    def test_a_target_above_both_floors_and_no_target(self):
        runs = {"cuda/chain_floor/1/flash/C4A/prefill8K_ctx120K": {"device_us": 11.8},
                "cuda/chain_floor/2/flash/C4A/prefill8K_ctx120K": {"device_us": 12.1},
                "cuda/chain_floor/2/flash/C4A/prefill1K": {"device_us": 5.0}}
        rows = {r["key"]: r for r in summarize.chain_floor_rows(runs)}
        self.assertEqual(rows["flash/C4A/prefill8K_ctx120K"]["target_vs_floors"], "above every floor")
        self.assertEqual(rows["flash/C4A/prefill1K"]["target_vs_floors"], "")
        lines = summarize.chain_floor_lines(list(rows.values()))
        self.assertEqual(sum(line.startswith("| flash | C4A |") for line in lines), 2)
        self.assertEqual(summarize.chain_floor_lines([]), [])

    def test_the_translated_floor_is_the_third_and_names_its_verdict(self):
        runs = {"cuda/chain_floor/1/flash/C4A/prefill8K": {"device_us": 11.1},
                "cuda/chain_floor/2/flash/C4A/prefill8K": {"device_us": 11.3},
                "cuda/translated_floor/flash/C4A/prefill8K": {"device_us": 11.7},
                "cuda/chain_floor/1/flash/C4A/prefill8K_ctx120K": {"device_us": 11.5},
                "cuda/chain_floor/2/flash/C4A/prefill8K_ctx120K": {"device_us": 11.6},
                "cuda/translated_floor/flash/C4A/prefill8K_ctx120K": {"device_us": 12.0},
                "cuda/translated_floor/flash/C128A/prefill8K": {"error": "x"},
                "cpu/translated_floor/flash/C4A/prefill1K": {"device_us": 1.0}}
        rows = {r["key"]: r for r in summarize.chain_floor_rows(runs)}
        self.assertEqual(set(rows), {"flash/C4A/prefill8K", "flash/C4A/prefill8K_ctx120K"})
        self.assertEqual(rows["flash/C4A/prefill8K"]["hops_us"], {1: 11.1, 2: 11.3, 3: 11.7})
        self.assertEqual(rows["flash/C4A/prefill8K"]["target_vs_floors"], "below the translated floor")  # 11.6
        self.assertEqual(rows["flash/C4A/prefill8K_ctx120K"]["target_vs_floors"], "above every floor")  # 12.3
        lines = summarize.chain_floor_lines(list(rows.values()))
        header = next(line for line in lines if line.startswith("| model |"))
        self.assertIn("| translated floor us |", header)
        row = next(line for line in lines if line.startswith("| flash | C4A | prefill8K |"))
        self.assertIn("| 11.30 | 11.70 |", row)

    def test_the_lookup_floor_is_the_fourth_and_names_its_verdict(self):
        runs = {"cuda/chain_floor/1/flash/C4A/prefill8K_ctx120K": {"device_us": 11.5},
                "cuda/chain_floor/2/flash/C4A/prefill8K_ctx120K": {"device_us": 11.6},
                "cuda/translated_floor/flash/C4A/prefill8K_ctx120K": {"device_us": 12.0},
                "cuda/lookup_floor/flash/C4A/prefill8K_ctx120K": {"device_us": 12.4},
                "cuda/translated_floor/flash/C4A/prefill8K": {"device_us": 11.3},
                "cuda/lookup_floor/flash/C4A/prefill8K": {"error": "x"}}
        rows = {r["key"]: r for r in summarize.chain_floor_rows(runs)}
        self.assertEqual(rows["flash/C4A/prefill8K_ctx120K"]["hops_us"], {1: 11.5, 2: 11.6, 3: 12.0, 4: 12.4})
        self.assertEqual(rows["flash/C4A/prefill8K_ctx120K"]["target_vs_floors"], "below the lookup floor")  # 12.3
        self.assertEqual(rows["flash/C4A/prefill8K"]["hops_us"], {3: 11.3})  # a failed run is left out
        self.assertEqual(rows["flash/C4A/prefill8K"]["target_vs_floors"], "above every floor")  # 11.6
        lines = summarize.chain_floor_lines(list(rows.values()))
        header = next(line for line in lines if line.startswith("| model |"))
        self.assertIn("| translated floor us | lookup floor us |", header)
        self.assertTrue(any(line.startswith("- lookup floor (cuda/lookup_floor/..., C4A)") for line in lines))
        row = next(line for line in lines if line.startswith("| flash | C4A | prefill8K_ctx120K |"))
        self.assertIn("| 12.00 | 12.40 |", row)
        row = next(line for line in lines if line.startswith("| flash | C4A | prefill8K |"))
        self.assertIn("| 11.30 | – |", row)

    def test_each_kernel_target_is_judged_against_its_highest_floor_too(self):
        runs = {"cuda/chain_floor/2/flash/C4A/prefill8K_ctx120K": {"device_us": 11.9},
                "cuda/translated_floor/flash/C4A/prefill8K_ctx120K": {"device_us": 11.8},
                "cuda/lookup_floor/flash/C4A/prefill8K_ctx120K": {"device_us": 12.57},
                "cuda/chain_floor/2/flash/C128A/prefill8K": {"device_us": 6.01},
                "cuda/chain_floor/2/flash/C4A/prefill1K": {"device_us": 5.0}}
        targets = []
        summarize.kernel_floor_targets(summarize.chain_floor_rows(runs), targets)
        got = {what: (value, target) for what, _, value, target in targets}
        self.assertEqual(got, {
            "flash C4A prefill8K_ctx120K build: its lookup floor, device (a build can meet the target "
            "only if this does)": (12.57, 12.3),
            "flash C128A prefill8K build: its 2-read floor, device (a build can meet the target "
            "only if this does)": (6.01, 6.0)})

    def test_without_translated_floors_the_table_has_no_such_column(self):
        lines = summarize.chain_floor_lines(summarize.chain_floor_rows(self.RUNS))
        self.assertFalse(any("translated floor" in line for line in lines))


class StepChainFloors(unittest.TestCase):
    KEY = ("cuda", "flash", "prefill8K")
    STEPS = {KEY: {"cached": {"wall_us": 254.0, "builder_calls": 23, "launches": 23},
                   "split": {"wall_us": 250.0, "builder_calls": 24, "launches": 24, "target_us": 200.0},
                   "tail": {"wall_us": 227.0, "builder_calls": 23, "launches": 23, "target_us": 240.0}}}
    FLOORS = {KEY: {"cached": {"wall_us": 212.0, "device_us": 205.0}, "split": {"wall_us": 198.0, "device_us": 190.0}}}
    CHAINS = {KEY: {"cached": {"wall_us": 231.0, "device_us": 224.0}, "split": {"error": "x"},
                    "tail": {"wall_us": 190.0, "device_us": 183.0}}}

    def test_the_chain_floor_column_and_what_each_step_target_needs(self):
        lines, targets = [], []
        summarize.modes_section(self.STEPS, lines, targets, self.FLOORS, self.CHAINS)
        got = {what: (value, target) for what, _, value, target in targets}
        chain = ("2-read chain floor (streamed as launched, each build's writes after its plan and table "
                 "entries), wall: a step launched so can meet the target only if this does")
        # the seed's eager step against issue 8's wall target, the modes against their own
        self.assertEqual(got[f"flash prefill 8K step, cached: its {chain}"], (231.0, 230.0))
        self.assertEqual(got[f"flash prefill 8K step, tail: its {chain}"], (190.0, 240.0))
        self.assertNotIn(f"flash prefill 8K step, split: its {chain}", got)  # its run failed
        self.assertIn("flash prefill 8K step, split: its measured byte floor (streamed as launched), wall: "
                      "a step can meet the target only if this does", got)
        header = next(line for line in lines if line.startswith("| timing |"))
        self.assertIn("chain floor us", header)
        cached_row = next(line for line in lines if "| cached |" in line)
        self.assertIn("231.0 (224.0)", cached_row)

    def test_the_translated_floor_column_and_what_each_step_target_needs(self):
        lines, targets = [], []
        translated = {self.KEY: {"cached": {"wall_us": 236.0, "device_us": 229.0},
                                 "tail": {"wall_us": 196.0, "device_us": 189.0}}}
        summarize.modes_section(self.STEPS, lines, targets, self.FLOORS, self.CHAINS, translated)
        got = {what: (value, target) for what, _, value, target in targets}
        floor = ("translated floor (the chain floor with each build's translated inputs written after a table "
                 "entry each), wall: a step launched so can meet the target only if this does")
        self.assertEqual(got[f"flash prefill 8K step, cached: its {floor}"], (236.0, 230.0))
        self.assertEqual(got[f"flash prefill 8K step, tail: its {floor}"], (196.0, 240.0))
        self.assertNotIn(f"flash prefill 8K step, split: its {floor}", got)  # not measured
        header = next(line for line in lines if line.startswith("| timing |"))
        self.assertIn("| chain floor us | translated floor us |", header)
        cached_row = next(line for line in lines if "| cached |" in line)
        self.assertIn("231.0 (224.0) | 236.0 (229.0) |", cached_row)
        split_row = next(line for line in lines if "| split |" in line)
        self.assertIn("| – |", split_row)

    def test_without_chain_floors_the_table_is_as_before(self):
        lines, targets = [], []
        summarize.modes_section(self.STEPS, lines, targets, self.FLOORS)
        self.assertFalse(any("chain floor" in what for what, _, _, _ in targets))
        self.assertFalse(any("chain floor" in line for line in lines))


class CopyBandwidthTargets(unittest.TestCase):
    # 80 % of 4,000 GB/s is 3,200 GB/s: 32,000,000 bytes in 10.0 us.
    RUNS = {
        "cuda/kernel/pro/C4A/prefill8K": {"device_us": 10.2, "bytes": 32e6, "copy_GBps": 4000.0},
        "cuda/kernel_planned/pro/C4A/prefill8K": {"device_us": 9.8, "bytes": 32e6, "copy_GBps": 4000.0},
        "cuda/byte_floor/pro/C4A/prefill8K": {"device_us": 10.0, "bytes": 32e6},
        # a byte floor under 10 us: no such target
        "cuda/kernel/flash/C128A/prefill8K": {"device_us": 7.0, "bytes": 9e6, "copy_GBps": 4000.0},
        "cuda/byte_floor/flash/C128A/prefill8K": {"device_us": 5.5, "bytes": 9e6},
        # its byte floor itself misses: out of reach as timed
        "cuda/kernel/flash/C4A/prefill8K": {"device_us": 12.6, "bytes": 32e6, "copy_GBps": 4000.0},
        "cuda/kernel_planned/flash/C4A/prefill8K": {"error": "x"},
        "cuda/byte_floor/flash/C4A/prefill8K": {"device_us": 10.9, "bytes": 32e6},
        # no byte floor measured, or no copy bandwidth: not judged
        "cuda/kernel/flash/C4A/prefill8K_ctx120K": {"device_us": 13.0, "bytes": 38e6, "copy_GBps": 4000.0},
        "cuda/kernel/pro/C128A/prefill8K_ctx120K": {"device_us": 21.0, "bytes": 70e6},
        "cuda/byte_floor/pro/C128A/prefill8K_ctx120K": {"device_us": 18.0, "bytes": 70e6},
        "cpu/kernel/pro/C4A/prefill8K": {"device_us": 900.0, "bytes": 32e6},
    }

    def test_builds_whose_byte_floor_is_10_us_or_more_plain_planned_and_the_floor(self):
        targets = []
        summarize.copy_bandwidth_targets(self.RUNS, targets)
        got = {what: (prefix, value, round(target, 6)) for what, prefix, value, target in targets}
        share = "at >= 80 % of the run's copy bandwidth (4,000.0 GB/s), device"
        self.assertEqual(got, {
            f"pro C4A prefill8K build {share}": ("cuda", 10.2, 10.0),
            f"pro C4A prefill8K build reading the token plan {share}": ("cuda", 9.8, 10.0),
            f"pro C4A prefill8K build: its byte floor {share} (a build can meet the target only if this does)":
                ("cuda", 10.0, 10.0),
            f"flash C4A prefill8K build {share}": ("cuda", 12.6, 10.0),
            f"flash C4A prefill8K build: its byte floor {share} (a build can meet the target only if this does)":
                ("cuda", 10.9, 10.0),
        })
        judged = {what: summarize.verdict(value, target) for what, _, value, target in targets}
        self.assertTrue(judged[f"pro C4A prefill8K build reading the token plan {share}"].startswith("MET"))
        self.assertTrue(judged[f"pro C4A prefill8K build {share}"].startswith("MISSED"))

    def test_nothing_without_kernels(self):
        targets = []
        summarize.copy_bandwidth_targets({}, targets)
        self.assertEqual(targets, [])


if __name__ == "__main__":
    unittest.main()
