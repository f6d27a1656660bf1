"""The stream study's findings on synthetic entries (studies/stream.py): bandwidth curves, HBM past the
L2 cache against the theoretical peak, the L2 plateau, host DRAM, where cache levels end, Thrust
against our kernels, the copies; the memory roof and the headline figure it sets (across,
headline), its sections and charts, and the default suite's subset of its implementations."""
import os
import tempfile
import unittest

import support

from gpubench_driver.lib import charts, results, stats
from gpubench_driver.studies import stream
from gpubench_driver.stages import across, analyse, options, plots, render

MIB = 1 << 20
L2 = 50 * MIB
PEAK = 3.35e12
ARRAYS = {"copy": (1, 1), "scale": (1, 1), "add": (2, 1), "triad": (2, 1), "dot": (2, 0)}  # read, written
FLOP = {"copy": 0, "scale": 1, "add": 1, "triad": 2, "dot": 2}  # per element
ELEMENT = {"fp32": 4, "fp64": 8}
KERNELS = {"grid_stride": "gpu", "one_per_thread": "gpu", "thrust": "gpu", "openmp": "cpu"}


def stream_entry(operation, kernel, mode, precision, n, bytes_per_s, protocol="throughput", cold_bytes_per_s=None):
    """An ok entry whose STREAM bytes over its median time are bytes_per_s."""
    device = KERNELS[kernel]
    made = support.blank_entry(f"stream/{operation}_{kernel}/{device}/{mode}/{precision}/n:{n}")
    read, written = ARRAYS[operation]
    array = float(n * ELEMENT[precision])
    seconds = (read + written) * array / bytes_per_s
    made.update(repetitions=1, iterations=3, time_s=stats.summarize([seconds * 0.99, seconds, seconds * 1.01]),
                memory_read_bytes=read * array, memory_written_bytes=written * array, array_bytes=array,
                protocol=protocol, flop=float(FLOP[operation] * n))
    made["flop_per_s"] = made["flop"] / seconds if made["flop"] else None
    if cold_bytes_per_s:
        made["cold_l2_s"] = stats.summarize([(read + written) * array / cold_bytes_per_s])
    return made


# The suite's and --quick's implementations, as the binary's points name them (bench/stream.cpp).
SUITE_IMPLS = ("triad_one_per_thread", "dot_grid_stride", "triad_thrust", "triad_openmp")


def description(l2_bytes=L2, peak=PEAK):
    impls = [{"id": f"{operation}_{kernel}", "device": device, "operation": operation, "kernel": kernel,
              "modes": ["host"] if device == "cpu" else ["resident", "transfer_pinned"], "precisions": ["fp32", "fp64"]}
             for operation in ARRAYS for kernel, device in KERNELS.items()]
    available = {"available": True, "reason": None}
    gpu = {"available": True, "reason": None, "l2_bytes": l2_bytes, "peak_bytes_per_s": peak,
           "max_memory_clock_mhz": 2619, "bus_width_bits": 5120, "transfers_per_clock": 2}
    host = {"l1d_bytes": 48 << 10, "l2_bytes": 2 * MIB, "l3_bytes": 105 * MIB, "threads": 16}
    suite = {"sizes": [1 << 20, 1 << 25], "impls": list(SUITE_IMPLS), "modes": ["resident", "host"]}
    return {"implementations": impls, "memory_hierarchy": {"gpu": gpu, "host": host}, "gpu": available,
            "axis_names": {"impl": "impl", "mode": "mode", "precision": "precision", "n": "elements", "batch": None},
            "points": {"quick": {**suite, "sizes": [1 << 25]}, "suite": suite, "full": {"sizes": [1 << 10, 1 << 30]}}}


# n elements -> GB/s of the resident grid-stride triad in FP32: launch-bound, the L2 plateau to 48 MiB
# (2^22 elements: 3 arrays of 16 MiB), then HBM.
TRIAD = {1 << 12: 0.4e12, 1 << 16: 4.0e12, 1 << 20: 6.0e12, 1 << 22: 5.8e12, 1 << 23: 3.1e12, 1 << 26: 3.0e12}


def entries():
    found = [stream_entry("triad", "grid_stride", "resident", "fp32", n, rate) for n, rate in TRIAD.items()]
    found += [stream_entry("dot", "grid_stride", "resident", "fp32", 1 << 20, 6.5e12, cold_bytes_per_s=2e12),
              stream_entry("dot", "grid_stride", "resident", "fp32", 1 << 26, 3.1e12),
              stream_entry("dot", "grid_stride", "resident", "fp64", 1 << 26, 3.05e12),
              stream_entry("triad", "thrust", "resident", "fp32", 1 << 26, 2.7e12),
              stream_entry("triad", "thrust", "resident", "fp32", 1 << 20, 5.0e12),
              stream_entry("dot", "thrust", "resident", "fp32", 1 << 26, 1.5e12, protocol="latency"),
              stream_entry("triad", "grid_stride", "transfer_pinned", "fp32", 1 << 26, 0.03e12, protocol="latency"),
              # the CPU: fork-bound, caches, then DRAM past 105 MiB of L3
              stream_entry("triad", "openmp", "host", "fp32", 1 << 12, 0.05e12),
              stream_entry("triad", "openmp", "host", "fp32", 1 << 16, 0.8e12),
              stream_entry("triad", "openmp", "host", "fp32", 1 << 20, 0.5e12),
              stream_entry("triad", "openmp", "host", "fp32", 1 << 26, 0.2e12)]
    skipped = stream_entry("copy", "grid_stride", "resident", "fp64", 1 << 30, 1e12)
    skipped.update(status="skipped", message="skipped: does not fit: needs about 24 GiB of GPU memory", time_s=None)
    return found + [skipped]


def stream_document(study_entries=None, describe=None):
    made = results.new_document({"id": "stream", "started": "2026-11-24T00:00:00+00:00", "finished": None,
                                 "status": "complete", "command_line": [], "options": {}})
    made["gpu"] = {"available": True, "reason": None}
    study_entries = entries() if study_entries is None else study_entries
    made["studies"]["stream"] = results.new_study(describe or description(), sorted({e["n"] for e in study_entries}))
    made["studies"]["stream"]["entries"] = study_entries
    analyse.derive_findings(made, 0)
    return made


class CurvesTest(unittest.TestCase):
    def setUp(self):
        self.derived = stream_document()["studies"]["stream"]["derived"]

    def row(self, operation, kernel, mode, precision):
        return next(row for row in self.derived["curves"] if (row["operation"], row["kernel"], row["mode"],
                                                              row["precision"]) == (operation, kernel, mode, precision))

    def test_bandwidth_is_streams_bytes_over_the_median(self):
        triad = self.row("triad", "grid_stride", "resident", "fp32")
        self.assertEqual([point["n"] for point in triad["points"]], sorted(TRIAD))
        for point in triad["points"]:
            self.assertAlmostEqual(point["bytes_per_s"] / TRIAD[point["n"]], 1)
            self.assertEqual(point["working_set_bytes"], 12 * point["n"])
        dot = self.row("dot", "grid_stride", "resident", "fp32")
        self.assertEqual(dot["points"][0]["working_set_bytes"], 8 * (1 << 20))  # two arrays read, none written
        self.assertAlmostEqual(dot["points"][0]["cold_l2_bytes_per_s"] / 2e12, 1)

    def test_the_skipped_entry_is_a_failure_not_a_point(self):
        self.assertNotIn(1 << 30, [point["n"] for row in self.derived["curves"] for point in row["points"]])
        self.assertIn("does not fit", self.derived["failures"][0]["reason"])

    def test_hbm_is_the_fastest_past_four_times_the_l2(self):
        hbm = self.derived["hbm"]
        # 2^23 elements (96 MiB of triad) is past the L2 but not four times past it: not HBM however fast
        self.assertEqual((hbm["operation"], hbm["kernel"], hbm["precision"], hbm["n"]), ("dot", "grid_stride", "fp32",
                                                                                        1 << 26))
        self.assertAlmostEqual(hbm["fraction_of_peak"], 3.1e12 / PEAK)
        per_kernel = {(row["operation"], row["kernel"]): row for row in self.derived["device_memory"]}
        triad = per_kernel[("triad", "grid_stride")]
        self.assertAlmostEqual(triad["hbm"]["bytes_per_s"] / 3.0e12, 1)
        self.assertAlmostEqual(triad["hbm_fraction_of_peak"], 3.0e12 / PEAK)
        self.assertEqual(triad["l2"]["n"], 1 << 20)  # the L2 plateau
        self.assertAlmostEqual(triad["l2_over_hbm"], 2)
        self.assertAlmostEqual(per_kernel[("triad", "thrust")]["hbm"]["bytes_per_s"] / 2.7e12, 1)
        self.assertAlmostEqual(self.derived["theoretical"]["bytes_per_s"], PEAK)

    def test_host_dram_is_past_the_last_cache(self):
        dram = self.derived["host_dram"]
        self.assertEqual((dram["kernel"], dram["n"]), ("openmp", 1 << 26))  # not the cached 0.8 TB/s
        self.assertAlmostEqual(dram["bytes_per_s"] / 0.2e12, 1)

    def test_levels_end_where_the_rate_falls_by_a_quarter(self):
        gpu = next(row for row in self.derived["cache_edges"] if (row["device"], row["operation"], row["precision"])
                   == ("gpu", "triad", "fp32"))
        self.assertEqual([level["from_bytes"] for level in gpu["levels"]], [12 * (1 << 20), 12 * (1 << 23)])
        edge = gpu["edges"][0]
        self.assertEqual((edge["last_bytes"], edge["next_bytes"], edge["cache"]), (48 * MIB, 96 * MIB, "L2"))
        cpu = next(row for row in self.derived["cache_edges"] if row["device"] == "cpu")
        self.assertEqual(len(cpu["edges"]), 2)  # 0.8 -> 0.5 TB/s, then -> 0.2 TB/s
        self.assertEqual(cpu["edges"][-1]["cache"], "L3")  # between 12 and 768 MiB, near 96 MiB

    def test_thrust_against_ours_and_the_copies(self):
        thrust = {(row["operation"], row["precision"]): row for row in self.derived["thrust_over_own"]}
        self.assertAlmostEqual(thrust[("triad", "fp32")]["ratio"], 2.7 / 3.0)
        self.assertEqual(thrust[("triad", "fp32")]["n"], 1 << 26)  # the largest size both measured
        self.assertEqual(thrust[("dot", "fp32")]["thrust_protocol"], "latency")
        copies = self.derived["transfer_cost"]
        self.assertEqual(len(copies), 1)
        self.assertAlmostEqual(copies[0]["time_ratio"], 100)


def levels_of(rates):
    return stream.levels([{"working_set_bytes": size, "bytes_per_s": rate} for size, rate in rates.items()])


class LevelsTest(unittest.TestCase):
    def test_a_gradual_decline_ends_a_level_once_it_has_fallen_a_quarter(self):
        found, edges = levels_of({1: 100.0, 2: 90.0, 4: 80.0, 8: 70.0, 16: 69.0})
        self.assertEqual(len(edges), 1)
        self.assertEqual((edges[0]["last_bytes"], edges[0]["next_bytes"]), (4, 8))
        self.assertEqual([level["bytes_per_s"] for level in found], [100.0, 70.0])

    def test_one_flat_level_has_no_edge(self):
        found, edges = levels_of({1: 10.0, 2: 100.0, 4: 99.0, 8: 101.0})
        self.assertEqual(edges, [])
        self.assertEqual(found[0]["from_bytes"], 2)  # the launch-bound point before the fastest is no level


class MemoryRoofTest(unittest.TestCase):
    def test_the_stream_studys_hbm_is_the_memory_roof_and_the_headline(self):
        made = stream_document()
        roof = made["findings"]["roofline"]["bandwidth"]
        self.assertEqual((roof["study"], roof["impl"], roof["precision"], roof["n"]),
                         ("stream", "dot_grid_stride", "fp32", 1 << 26))
        self.assertEqual(roof["bytes_per_call"], 8 * (1 << 26))
        figure = {row["key"]: row for row in made["findings"]["headline"]["figures"]}["memory_bandwidth"]
        self.assertAlmostEqual(figure["value"] / 3.1e12, 1)
        self.assertEqual(figure["label"], "Device memory bandwidth (stream dot, grid_stride kernel, FP32)")
        self.assertEqual(figure["where"], "stream: dot_grid_stride resident fp32 n=67108864")
        self.assertEqual(figure["reference"]["what"], stream.THEORETICAL_MEMORY)
        self.assertAlmostEqual(figure["fraction_of_reference"], 3.1e12 / PEAK)
        self.assertLess(figure["low"], figure["value"])
        self.assertLess(figure["value"], figure["high"])

    def test_without_an_hbm_point_the_transfer_studys_copies_stay_the_roof(self):
        cached = [e for e in entries() if e["n"] <= 1 << 20]
        made = stream_document(cached)
        self.assertIsNone(made["studies"]["stream"]["derived"]["hbm"])
        self.assertIn("sizes measured are the caches'", made["studies"]["stream"]["derived"]["hbm_note"])
        copy = support.blank_entry("transfer/copy_engine/gpu/device/d2d/n:67108864")
        copy.update(repetitions=1, iterations=1, time_s=stats.summarize([64 * MIB / 1.4e12]),
                    bytes_transferred=float(64 * MIB))
        found, note = across.device_bandwidth({**made["studies"], "transfer": {"entries": [copy]}})
        self.assertEqual(found["study"], "transfer")
        self.assertAlmostEqual(found["bytes_per_s"], 2.8e12)
        self.assertEqual(found["bytes_per_call"], 2 * 64 * MIB)

    def test_recorded_in_the_results_file(self):
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "results.json")
            results.write(stream_document(), path)
            loaded = results.load(path)
        self.assertEqual(loaded["findings"]["roofline"]["bandwidth"]["study"], "stream")
        self.assertEqual(loaded["studies"]["stream"]["memory_hierarchy"]["gpu"]["l2_bytes"], L2)


class SummaryTest(unittest.TestCase):
    def test_sections(self):
        text = render.render(stream_document(), {}, tempfile.gettempdir())
        self.assertIn("## Stream: device memory (HBM) and the L2 plateau", text)
        self.assertIn("Measured device memory bandwidth: **3100.0 GB/s** (dot by grid\\_stride, fp32, 512.0 MiB), "
                      "92.5% of the theoretical peak", text)
        self.assertIn("Theoretical peak: 3350.0 GB/s, NVML's maximum memory clock 2619 MHz x a 5120-bit bus", text)
        self.assertIn("## Stream: where each cache level ends", text)
        self.assertIn("between 48.0 MiB and 96.0 MiB (L2)", text)
        self.assertIn("## Stream: host memory", text)
        self.assertIn("## Stream: skipped and failed entries", text)
        self.assertIn("Memory roof: 3100 GB/s, the stream study's fastest kernel past the L2 cache", text)

    def test_without_a_gpu_in_describe(self):
        describe = description(l2_bytes=None, peak=None)
        describe["memory_hierarchy"]["gpu"] = {"available": False, "reason": "no GPU"}
        cpu = [e for e in entries() if e["device"] == "cpu"]
        made = stream_document(cpu, describe)
        derived = made["studies"]["stream"]["derived"]
        self.assertIsNone(derived["hbm"])
        self.assertEqual(derived["theoretical_note"], "no GPU")
        text = render.render(made, {}, tempfile.gettempdir())
        self.assertIn("No GPU entry was measured: no GPU.", text)


class SuiteSubsetTest(unittest.TestCase):
    """The default suite and --quick run the binary's subset (its points) of implementations and modes; --full, the
    user's own --impls/--modes and a build whose subset cannot run take others."""

    def test_the_suite_runs_the_records_subset(self):
        described = description()
        suite = options.for_study(support.run_options(), "stream", described)
        self.assertEqual(suite.impls, list(SUITE_IMPLS))
        self.assertEqual(suite.modes, ["resident", "host"])
        self.assertEqual(options.for_study(support.run_options(quick=True), "stream", described).impls,
                         list(SUITE_IMPLS))
        full = options.for_study(support.run_options(full=True), "stream", described)
        self.assertEqual((full.impls, full.modes), (None, None))
        mine = options.for_study(support.run_options(impls=["copy_thrust"]), "stream", described)
        self.assertEqual(mine.impls, ["copy_thrust"])
        self.assertEqual(options.for_study(support.run_options(cpu_only=True), "stream", described).impls,
                         ["triad_openmp"])

    def test_a_subset_that_cannot_run_here_is_no_subset(self):
        cpu_build = {"implementations": [{"id": "fma_loop", "device": "cpu", "modes": ["host"]}],
                     "default_sizes": [1 << 25], "default_batches": [1, 2],
                     "points": {"suite": {"sizes": [1 << 25], "batches": [1, 2], "impls": ["fma_kernel"]}}}
        self.assertIsNone(options.for_study(support.run_options(), "roofline", cpu_build).impls)
        no_gpu = {**cpu_build, "implementations": [{"id": "fma_kernel", "device": "gpu", "modes": ["resident"]},
                                                   *cpu_build["implementations"]],
                  "gpu": {"available": False, "reason": "no driver"}}
        self.assertIsNone(options.for_study(support.run_options(), "roofline", no_gpu).impls)
        no_gpu["gpu"]["available"] = True
        self.assertEqual(options.for_study(support.run_options(), "roofline", no_gpu).impls, ["fma_kernel"])


@unittest.skipUnless(charts.load_pyplot() is not None, "matplotlib is not installed for this Python")
class PlotsTest(unittest.TestCase):
    def test_one_chart_per_operation(self):
        with tempfile.TemporaryDirectory() as out:
            made = stream_document()
            paths = plots.write_plots(made["studies"], out)["stream"]
            self.assertEqual(sorted(os.path.basename(path) for path in paths), ["stream_dot.png", "stream_triad.png"])
            for path in paths:
                with open(path, "rb") as stream:
                    self.assertEqual(stream.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
