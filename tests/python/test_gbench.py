import os
import tempfile
import unittest

import support
from support import fixture

from gpubench_driver.lib import gbench, migrate


def entries_by_name(path):
    return {entry["name"]: entry for entry in support.entries_of(gbench.load_file(path))}


class Version17Test(unittest.TestCase):
    def setUp(self):
        self.entries = entries_by_name(fixture("gbench_1.7.json"))

    def test_ok_entry_from_repetitions(self):
        entry = self.entries["matmul/openblas/cpu/host/fp32/n:64"]
        self.assertEqual(entry["status"], "ok")
        self.assertEqual((entry["impl"], entry["device"], entry["mode"], entry["precision"], entry["n"]),
                         ("openblas", "cpu", "host", "fp32", 64))
        self.assertEqual(entry["repetitions"], 3)
        self.assertEqual(entry["iterations"], 1000)
        self.assertAlmostEqual(entry["time_s"]["median"], 5e-6)
        for sample, expected in zip(sorted(entry["time_s"]["samples"]), [4e-6, 5e-6, 6e-6]):
            self.assertAlmostEqual(sample, expected, delta=1e-15)
        self.assertAlmostEqual(entry["flop_per_s"] / (524288 / 5e-6), 1.0)
        self.assertEqual(entry["threads"], 2)

    def test_nan_counter_becomes_none(self):
        self.assertIsNone(self.entries["matmul/openblas/cpu/host/fp32/n:64"]["max_rel_error"])

    def test_wrong_result_is_an_error(self):
        entry = self.entries["matmul/naive_loop/cpu/host/fp32/n:64"]
        self.assertEqual(entry["status"], "error")
        self.assertTrue(entry["message"].startswith("wrong result: "))
        self.assertIsNone(entry["time_s"])

    def test_skip_message_is_a_skip(self):
        entry = self.entries["matmul/cublas/gpu/resident/fp32/n:8192"]
        self.assertEqual(entry["status"], "skipped")
        self.assertEqual(entry["n"], 8192)

    def test_gpu_entry_has_no_threads(self):
        entry = self.entries["matmul/cublas/gpu/resident/fp32/n:64"]
        self.assertIsNone(entry["threads"])  # Google Benchmark's own "threads": 1 is not ours
        self.assertAlmostEqual(entry["time_s"]["median"], 11e-6)


class Version18Test(unittest.TestCase):
    def setUp(self):
        self.entries = entries_by_name(fixture("gbench_1.8.json"))

    def test_milliseconds_and_infinity(self):
        entry = self.entries["matmul/cublas/gpu/transfer_pinned/fp32/n:256"]
        self.assertEqual(entry["status"], "ok")
        self.assertAlmostEqual(entry["time_s"]["median"], 3e-5)
        self.assertIsNone(entry["max_rel_error"])
        self.assertEqual(entry["bytes_transferred"], 786432)

    def test_skipped_with_message(self):
        entry = self.entries["matmul/tiled_kernel/gpu/resident/fp32/n:256"]
        self.assertEqual(entry["status"], "skipped")
        self.assertIn("tensor cores", entry["message"])

    def test_error(self):
        entry = self.entries["matmul/naive_kernel/gpu/resident/fp32/n:256"]
        self.assertEqual(entry["status"], "error")
        self.assertIn("cudaErrorLaunchFailure", entry["message"])


class TruncatedTest(unittest.TestCase):
    def test_recovers_complete_objects(self):
        output = gbench.load_file(fixture("gbench_truncated.json"))
        self.assertTrue(output.truncated)
        names = {entry["name"] for entry in support.entries_of(output)}
        self.assertEqual(names, {"matmul/openblas/cpu/host/fp32/n:64", "matmul/naive_loop/cpu/host/fp32/n:64",
                                 "matmul/cublas/gpu/resident/fp32/n:8192"})
        self.assertEqual(output.context.get("host_name"), "fixture")

    def test_every_cut_point_is_safe(self):
        with open(fixture("gbench_1.7.json"), encoding="utf-8") as stream:
            text = stream.read()
        previous = 0
        for cut in range(0, len(text), 97):
            if not text[:cut].strip():
                continue
            count = len(gbench.group_runs(gbench.load_text(text[:cut]).benchmarks))
            self.assertGreaterEqual(count, previous)
            previous = count

    def test_missing_and_empty_files(self):
        with tempfile.TemporaryDirectory() as directory:
            self.assertEqual(gbench.load_file(os.path.join(directory, "absent.json")).benchmarks, [])
            empty = os.path.join(directory, "empty.json")
            open(empty, "w").close()
            self.assertEqual(gbench.load_file(empty).benchmarks, [])

    def test_foreign_input_is_rejected(self):
        for text in ('{"results": []}', "[1, 2]", "hello"):
            with self.assertRaises(gbench.GbenchError):
                gbench.load_text(text)


class NamesAndConsoleTest(unittest.TestCase):
    def test_entry_key(self):
        key = gbench.entry_key("matmul/cublas/gpu/transfer_pageable/fp32/n:4096/manual_time")
        self.assertEqual(key, "matmul/cublas/gpu/transfer_pageable/fp32/n:4096")
        # One run of one iteration per entry: Google Benchmark's settings suffixes are not part of the key.
        self.assertEqual(gbench.entry_key("batched_gemm/cublas/gpu/resident/fp32/n:64/batch:8/iterations:1/repeats:1"
                                          "/manual_time"), "batched_gemm/cublas/gpu/resident/fp32/n:64/batch:8")
        self.assertEqual(gbench.entry_key("matmul/openblas/cpu/host/fp32/n:64/iterations:1/real_time"),
                         "matmul/openblas/cpu/host/fp32/n:64")

    def test_one_run_line(self):
        # Each entry is one run of one iteration; the name carries Google Benchmark's settings suffixes.
        line = ("matmul/cublas/gpu/resident/fp32/n:256/iterations:1/repeats:1/manual_time      8.10 us     5.00 us"
                "    1 flop=33.5M")
        result = gbench.parse_console_line(line)
        self.assertEqual(result.name, "matmul/cublas/gpu/resident/fp32/n:256")
        self.assertAlmostEqual(result.median_s, 8.1e-6)
        self.assertEqual(result.counters["flop"], 33.5e6)

    def test_aggregate_lines_are_ignored(self):
        # Runs from before the steady-state loop printed aggregates; none is a finished entry now.
        for aggregate in ("mean", "median"):
            line = f"matmul/openblas/cpu/host/fp32/n:64/real_time_{aggregate}   1.15 ns   1.15 ns   3"
            self.assertIsNone(gbench.parse_console_line(line))

    def test_line_without_settings_suffixes(self):
        line = "matmul/openblas/cpu/host/fp32/n:64/real_time   4.00 us   4.00 us   1000 flop=524.288k"
        result = gbench.parse_console_line(line)
        self.assertEqual(result.name, "matmul/openblas/cpu/host/fp32/n:64")
        self.assertAlmostEqual(result.median_s, 4e-6)

    def test_error_and_skip_lines(self):
        error = gbench.parse_console_line("matmul/naive_loop/cpu/host/fp32/n:64/iterations:1/repeats:1/real_time   "
                                          "ERROR OCCURRED: 'wrong result: x'")
        self.assertEqual((error.name, error.failure), ("matmul/naive_loop/cpu/host/fp32/n:64", "wrong result: x"))
        skip = gbench.parse_console_line("matmul/a/gpu/resident/fp32/n:64/iterations:1/repeats:1/manual_time  "
                                         "SKIPPED: 'skipped: no'")
        self.assertEqual((skip.name, skip.failure), ("matmul/a/gpu/resident/fp32/n:64", "skipped: no"))

    def test_counters_of_a_line(self):
        line = ("transfer/copy_engine/gpu/pinned/h2d/n:268435456/iterations:1/repeats:1/manual_time   5.30 ms   "
                "0.01 ms   1 bytes_transferred=268.435M d2h_bytes=0 flop=1.5Ki memory_written_bytes=2.5G rate=3.2G/s "
                "tiny=4.5m cv=1.20% broken=nan")
        counters = gbench.parse_console_line(line).counters
        self.assertEqual(counters["bytes_transferred"], 268.435e6)
        self.assertEqual(counters["d2h_bytes"], 0.0)
        self.assertEqual(counters["flop"], 1.5 * 1024)  # a binary prefix (Google Benchmark's kIs1024)
        self.assertEqual((counters["memory_written_bytes"], counters["rate"]), (2.5e9, 3.2e9))
        self.assertAlmostEqual(counters["tiny"], 4.5e-3)
        self.assertNotIn("broken", counters)
        plain = gbench.parse_console_line("matmul/a/cpu/host/fp32/n:64/iterations:1/repeats:1/real_time 4.00 us "
                                          "4.00 us 1")
        self.assertEqual(plain.counters, {})

    def test_axes_come_from_the_plan(self):
        """An entry's axes are those --describe's entries give its name (the name is never read), each also
        under its slot; an entry the plan lacks has none."""
        description = {"axes": [{"name": "engine", "slot": "impl"}, {"name": "device", "slot": "device"},
                                {"name": "host_memory", "slot": "mode"}, {"name": "direction", "slot": "precision"},
                                {"name": "bytes", "slot": "n"}],
                       "entries": [{"name": "transfer/copy_engine/gpu/pinned/h2d/n:4096",
                                    "axes": {"engine": "copy_engine", "device": "gpu", "host_memory": "pinned",
                                             "direction": "h2d", "bytes": 4096}}]}
        plan = gbench.planned_entries(description)
        run = {"name": "transfer/copy_engine/gpu/pinned/h2d/n:4096/iterations:1/repeats:1/manual_time",
               "run_type": "iteration", "iterations": 1, "real_time": 5.0, "time_unit": "us"}
        other = {**run, "name": "transfer/copy_engine/gpu/pinned/d2h/n:4096/manual_time"}
        entry, unplanned = gbench.entries_from_output(gbench.GbenchOutput({}, [run, other]), plan)
        self.assertEqual({slot: entry[slot] for slot in gbench.AXES},
                         {"impl": "copy_engine", "device": "gpu", "mode": "pinned", "precision": "h2d", "n": 4096,
                          "batch": None})
        self.assertEqual(entry["axes"], description["entries"][0]["axes"])
        self.assertEqual({slot: unplanned[slot] for slot in (*gbench.AXES, "axes")}, dict.fromkeys((*gbench.AXES, "axes")))

    def test_layout_1_names_are_read_only_by_the_migration(self):
        names = {"impl": "schedule", "mode": "host_memory", "precision": "workload", "n": "n", "batch": "chunks"}
        fields = migrate.axis_fields_of_name("overlap/streams4/gpu/pinned/matmul/n:8192/batch:16", names)
        self.assertEqual(fields["axes"], {"schedule": "streams4", "device": "gpu", "host_memory": "pinned",
                                          "workload": "matmul", "n": 8192, "chunks": 16})
        self.assertEqual((fields["impl"], fields["n"], fields["batch"]), ("streams4", 8192, 16))
        self.assertIsNone(migrate.axis_fields_of_name("BM_other/64", names))
        self.assertIsNone(migrate.journal_axis_fields({"layout": 2, "name": "overlap/x/gpu/a/b/n:1"}, names))

    def test_traffic_counters_land_in_the_entry(self):
        run = {"name": "matmul/cublas/gpu/transfer_pinned/fp32/n:64/manual_time", "run_type": "iteration",
               "iterations": 3, "real_time": 5.0, "time_unit": "us", "memory_read_bytes": 32768.0,
               "memory_written_bytes": 16384.0, "h2d_bytes": 32768.0, "d2h_bytes": 16384.0,
               "bytes_transferred": 49152.0}
        [entry] = support.entries_of(gbench.GbenchOutput({}, [run]))
        self.assertEqual({key: entry[key] for key in gbench.TRAFFIC_COUNTERS},
                         {"memory_read_bytes": 32768.0, "memory_written_bytes": 16384.0, "h2d_bytes": 32768.0,
                          "d2h_bytes": 16384.0})
        run.pop("memory_read_bytes")  # no model of it: null, not 0
        [entry] = support.entries_of(gbench.GbenchOutput({}, [run]))
        self.assertIsNone(entry["memory_read_bytes"])

    def test_every_counter_passes_through(self):
        # A counter no list in the driver names arrives in the entry; Google Benchmark's own keys do not.
        run = {"name": "matmul/cublas/gpu/resident/fp32/n:64/manual_time", "run_name": "matmul/cublas/gpu/resident/fp32/n:64/manual_time",
               "run_type": "iteration", "family_index": 0, "per_family_instance_index": 0, "repetitions": 1,
               "repetition_index": 0, "threads": 1, "iterations": 3, "real_time": 5.0, "cpu_time": 4.0,
               "time_unit": "us", "flop": 524288.0, "brand_new_counter": 42.0, "brand_new_nan": float("nan")}
        [entry] = support.entries_of(gbench.GbenchOutput({}, [run]))
        self.assertEqual(entry["brand_new_counter"], 42.0)
        self.assertIn("brand_new_nan", entry)
        self.assertIsNone(entry["brand_new_nan"])  # through stats.finite, as every counter
        self.assertEqual(entry["flop"], 524288.0)
        for own in ("real_time", "cpu_time", "time_unit", "family_index", "run_type", "repetition_index"):
            self.assertNotIn(own, entry)
        self.assertIsNone(entry["threads"])  # Google Benchmark's on a GPU entry
        self.assertIsNone(entry["rel_fro_error"])  # a counter the driver reads: present, None when not reported

    def test_a_counter_does_not_replace_the_drivers_fields(self):
        run = {"name": "matmul/cublas/gpu/resident/fp32/n:64/manual_time", "run_type": "iteration",
               "iterations": 3, "real_time": 5.0, "time_unit": "us", "n": 4096.0, "status": 7.0,
               "flop_per_s": 1.0, "time_s": 2.0, "gpu_util_mean": 55.0, "power_w": 300.0}
        [entry] = support.entries_of(gbench.GbenchOutput({}, [run]))
        self.assertEqual((entry["n"], entry["status"], entry["flop_per_s"]), (64, "ok", None))
        self.assertAlmostEqual(entry["time_s"]["median"], 5e-6)
        # Utilization and telemetry are combined over the repetitions, not taken as counters: without
        # their readings' counts (gpu_util_samples, telemetry_samples) they are None.
        self.assertIsNone(entry["gpu_util_mean"])
        self.assertIsNone(entry["power_w"])

    def test_the_label_is_kept_as_text_only(self):
        run = {"name": "gemm_ladder/sgemm_09_warptile/gpu/resident/fp32/n:64/manual_time", "run_type": "iteration",
               "iterations": 1, "real_time": 5.0, "time_unit": "us", "label": "block 128x128x16, thread 8x8"}
        [entry] = support.entries_of(gbench.GbenchOutput({}, [run]))
        self.assertEqual(entry["label"], "block 128x128x16, thread 8x8")
        for foreign in (7, "", ["x"]):
            run["label"] = foreign
            [entry] = support.entries_of(gbench.GbenchOutput({}, [run]))
            self.assertIsNone(entry["label"])

    def test_header_lines_are_ignored(self):
        for line in ("-----", "Benchmark   Time   CPU   Iterations UserCounters...", "Run on (16 X 2000 MHz CPU s)"):
            self.assertIsNone(gbench.parse_console_line(line))


if __name__ == "__main__":
    unittest.main()
