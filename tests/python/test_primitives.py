"""The primitives study's findings on synthetic entries: rates and effective bandwidth per series, the
crossovers per primitive with the library named, what Thrust's allocation and synchronisation cost,
reduce against the device's memory bandwidth (the stream study's copy, the run's memory roof, or
nothing), the sort of 2^28 keys; the summary's sections, the plots and the registry record."""
import tempfile
import unittest

import support

from gpubench_driver import studies
from gpubench_driver.lib import charts, stats
from gpubench_driver.lib.document import to_markdown
from gpubench_driver.studies import primitives
from gpubench_driver.stages import across, options

# Bytes one call reads and writes per element (reduce writes one sum of 4 bytes).
TRAFFIC = {"reduce": (4, 0), "inclusive_scan": (4, 4), "sort_u32": (4, 4), "sort_pairs": (8, 8), "sort_u64": (8, 8),
           "transform": (4, 4)}


def spread_samples(seconds, spread):
    return [seconds * (1 + spread * k / 10) for k in range(-10, 11)]


def entry(primitive, library, mode, n, seconds, spread=0.01, latency=None, **counters):
    device = "cpu" if mode == "host" else "gpu"
    found = support.blank_entry(f"primitives/{primitive}/{device}/{mode}/{library}/n:{n}")
    samples = spread_samples(seconds, spread)
    read, written = TRAFFIC[primitive]
    found.update(status="ok", repetitions=1, iterations=len(samples), time_s=stats.summarize(samples),
                 memory_read_bytes=read * n, memory_written_bytes=written * n if written else 4, elements=n,
                 protocol="cpu" if device == "cpu" else "throughput" if mode == "resident" else "latency", **counters)
    if latency is not None:
        found["latency_s"] = stats.summarize(spread_samples(latency, 0.01))
    return found


SMALL, LARGE = 1 << 10, 1 << 26
# reduce: the CPU wins at 1 Ki, the GPU at 64 Mi; thrust pays for allocation and synchronisation.
REDUCE = [
    entry("reduce", "std_seq", "host", SMALL, 0.2e-6), entry("reduce", "std_par", "host", SMALL, 2e-6),
    entry("reduce", "thrust", "resident", SMALL, 30e-6, latency=40e-6),
    entry("reduce", "thrust_cached", "resident", SMALL, 15e-6, latency=20e-6, temporary_bytes=4096.0,
          temporary_requests=1.0, temporary_device_allocations=0.0),
    entry("reduce", "cub", "resident", SMALL, 3e-6, latency=9e-6, temporary_bytes=768.0, temporary_requests=1.0,
          temporary_device_allocations=0.0),
    entry("reduce", "std_seq", "host", LARGE, 20e-3), entry("reduce", "std_par", "host", LARGE, 5e-3),
    entry("reduce", "thrust", "resident", LARGE, 200e-6, latency=230e-6),
    entry("reduce", "thrust_cached", "resident", LARGE, 110e-6, latency=130e-6, temporary_bytes=8192.0,
          temporary_requests=1.0, temporary_device_allocations=0.0),
    entry("reduce", "cub", "resident", LARGE, 95e-6, latency=110e-6),
    entry("reduce", "cub", "transfer_pinned", LARGE, 5.5e-3),
]
# transform has no thrust_cached: the difference to cub is both costs at once.
TRANSFORM = [entry("transform", "std_par", "host", LARGE, 30e-3),
             entry("transform", "thrust", "resident", LARGE, 250e-6),
             entry("transform", "cub", "resident", LARGE, 190e-6)]
SORT = [entry("sort_u32", "std_par", "host", 1 << 28, 3.0), entry("sort_u32", "cub", "resident", 1 << 28, 30e-3),
        entry("sort_u32", "thrust", "resident", 1 << 28, 40e-3),
        entry("sort_u32", "cub", "transfer_pinned", 1 << 28, 60e-3)]


def transfer_study(copy_s):
    """A transfer study whose only entry is a device-to-device copy of 256 MiB taking copy_s."""
    copy = support.blank_entry("transfer/copy_engine/gpu/device/d2d/n:268435456")
    copy.update(status="ok", time_s=stats.summarize(spread_samples(copy_s, 0.01)), bytes_transferred=float(1 << 28))
    return {"entries": [copy], "axis_names": {"precision": "direction"}}


def stream_point(operation, bytes_per_s):
    return {"impl": f"{operation}_grid_stride", "operation": operation, "kernel": "grid_stride", "device": "gpu",
            "mode": "resident", "precision": "fp32", "n": 1 << 26, "working_set_bytes": 8.0 * (1 << 26),
            "median_s": 8.0 * (1 << 26) / bytes_per_s, "bytes_per_s": bytes_per_s,
            "interval_s": {"low": None, "high": None, "basis": "x"}}


def stream_study(*points):
    """A stream study already derived, its HBM points those given (the fastest its memory roof)."""
    return {"entries": [], "derived": {"device_memory": [{"operation": point["operation"], "hbm": point}
                                                         for point in points],
                                       "hbm": max(points, key=lambda point: point["bytes_per_s"]),
                                       "theoretical": None, "beyond_cache": 4}}


def document_of(found, **others):
    study = {"entries": found, "invocations": [], "implementations": [], "libraries": []}
    document = {"studies": {**others, "primitives": study}, "machine": {"gpus": []}}
    study["derived"] = primitives.derive(study)
    # reduce is held against the run's memory roof, found across the studies (stream's, or transfer's copies)
    document["findings"] = {"roofline": dict(zip(("bandwidth", "memory_roof_note"),
                                                 across.device_bandwidth(document["studies"])))}
    study["derived"].update(primitives.derive_across(study, document))
    return document


class CurvesTest(unittest.TestCase):
    def test_rates_and_effective_bandwidth_per_series(self):
        rows = primitives.curves(REDUCE)
        cub = next(row for row in rows if (row["library"], row["mode"]) == ("cub", "resident"))
        self.assertEqual([point["n"] for point in cub["points"]], [SMALL, LARGE])
        self.assertAlmostEqual(cub["points"][1]["elements_per_s"], LARGE / 95e-6)
        self.assertAlmostEqual(cub["points"][1]["bytes_per_s"], (4 * LARGE + 4) / 95e-6)
        self.assertAlmostEqual(cub["points"][1]["latency_s"], 110e-6)
        # GPU libraries first in their order, then the CPU's.
        self.assertEqual([row["library"] for row in rows if row["mode"] != "transfer_pinned"],
                         ["thrust", "thrust_cached", "cub", "std_seq", "std_par"])


class CrossoverTest(unittest.TestCase):
    def test_per_primitive_and_mode_with_the_library_named(self):
        found = primitives.crossovers(REDUCE + TRANSFORM)
        resident = next(row for row in found if (row["primitive"], row["mode"], row["measure"])
                        == ("reduce", "resident", "time"))
        self.assertEqual((resident["lower"], resident["upper"]), (SMALL, LARGE))
        self.assertEqual(resident["gpu_library"], "cub")
        self.assertNotIn("gpu_impl", resident)
        self.assertTrue(any(row["measure"] == "latency" for row in found if row["primitive"] == "reduce"))
        transform = next(row for row in found if row["primitive"] == "transform" and row["measure"] == "time")
        self.assertEqual(transform["upper"], LARGE)  # the GPU wins at the only size compared
        self.assertIsNone(transform["lower"])


class StorageCostTest(unittest.TestCase):
    def setUp(self):
        self.rows = primitives.storage_costs(REDUCE + TRANSFORM)

    def row(self, primitive, n):
        return next(row for row in self.rows if (row["primitive"], row["n"], row["mode"]) == (primitive, n, "resident"))

    def test_allocation_and_synchronisation_told_apart(self):
        row = self.row("reduce", LARGE)
        self.assertAlmostEqual(row["allocation_s"], 90e-6)
        self.assertTrue(row["allocation_beyond_noise"])
        self.assertAlmostEqual(row["synchronisation_s"], 15e-6)
        self.assertTrue(row["synchronisation_beyond_noise"])
        self.assertAlmostEqual(row["thrust_over_cub"], 200 / 95)
        self.assertEqual((row["temporary_bytes"], row["temporary_requests"], row["cached_device_allocations"]),
                         (8192.0, 1.0, 0.0))
        self.assertFalse(row["synchronisation_includes_allocation"])

    def test_without_a_cached_entry_the_difference_holds_both(self):
        row = self.row("transform", LARGE)
        self.assertIsNone(row["allocation_s"])
        self.assertAlmostEqual(row["synchronisation_s"], 60e-6)
        self.assertTrue(row["synchronisation_includes_allocation"])

    def test_a_difference_within_the_noise_says_so(self):
        close = [entry("reduce", "thrust", "resident", LARGE, 100e-6, spread=0.05),
                 entry("reduce", "thrust_cached", "resident", LARGE, 101e-6, spread=0.05),
                 entry("reduce", "cub", "resident", LARGE, 99e-6, spread=0.05)]
        row = primitives.storage_costs(close)[0]
        self.assertFalse(row["allocation_beyond_noise"])
        self.assertFalse(row["synchronisation_beyond_noise"])

    def test_no_row_without_thrust_and_cub(self):
        self.assertEqual(primitives.storage_costs([e for e in REDUCE if e["precision"] != "cub"]), [])


class ReduceBandwidthTest(unittest.TestCase):
    def test_against_the_stream_studys_copy(self):
        document = document_of(REDUCE, stream=stream_study(stream_point("copy", 3.0e12), stream_point("triad", 3.1e12)))
        found = document["studies"]["primitives"]["derived"]["reduce_bandwidth"]
        self.assertEqual(found["reference"]["study"], "stream")
        self.assertIn("copy", found["reference"]["what"])
        self.assertEqual(found["reference"]["bytes_per_s"], 3.0e12)
        self.assertEqual([row["library"] for row in found["rows"]], ["thrust", "thrust_cached", "cub"])
        cub = found["rows"][2]
        self.assertAlmostEqual(cub["fraction"], (4 * LARGE + 4) / 95e-6 / 3.0e12)
        self.assertEqual(found["target"], 0.85)

    def test_against_the_run_memory_roof_where_stream_measured_no_copy(self):
        document = document_of(REDUCE, stream=stream_study(stream_point("triad", 3.1e12)))
        reference = document["studies"]["primitives"]["derived"]["reduce_bandwidth"]["reference"]
        self.assertEqual(reference["bytes_per_s"], 3.1e12)
        self.assertIn("memory roof", reference["source"])
        self.assertIn("triad", reference["what"])

    def test_against_twice_the_transfer_studys_device_copy(self):
        document = document_of(REDUCE, transfer=transfer_study(180e-6))
        reference = document["studies"]["primitives"]["derived"]["reduce_bandwidth"]["reference"]
        self.assertEqual(reference["study"], "transfer")
        self.assertAlmostEqual(reference["bytes_per_s"], 2 * (1 << 28) / 180e-6)

    def test_nothing_to_hold_it_against(self):
        found = document_of(REDUCE)["studies"]["primitives"]["derived"]["reduce_bandwidth"]
        self.assertIsNone(found["reference"])
        self.assertTrue(found["note"])
        self.assertIsNone(found["rows"][0]["fraction"])

    def test_only_from_256_mib(self):
        found = document_of(REDUCE)["studies"]["primitives"]["derived"]["reduce_bandwidth"]
        self.assertEqual({row["n"] for row in found["rows"]}, {LARGE})


class SortTargetTest(unittest.TestCase):
    def test_speedup_with_and_without_copies(self):
        found = primitives.sort_target(SORT)
        resident, pinned = found["rows"]
        self.assertEqual((resident["mode"], resident["gpu_library"]), ("resident", "cub"))
        self.assertAlmostEqual(resident["speedup"], 3.0 / 30e-3)
        self.assertAlmostEqual(pinned["speedup"], 3.0 / 60e-3)
        self.assertIsNone(found["note"])

    def test_not_measured_says_how_to_measure_it(self):
        found = primitives.sort_target(REDUCE)
        self.assertEqual(found["rows"], [])
        self.assertIn("--full", found["note"])

    def test_the_faster_parallel_cpu_sort_is_the_cpu_side(self):
        gnu = entry("sort_u32", "gnu_parallel", "host", 1 << 28, 1.5)
        found = primitives.sort_target(SORT + [gnu])
        self.assertEqual(found["cpu_library"], "gnu_parallel")
        self.assertAlmostEqual(found["cpu_median_s"], 1.5)
        without_tbb = primitives.sort_target([e for e in SORT if e["precision"] != "std_par"] + [gnu])
        self.assertEqual(without_tbb["cpu_library"], "gnu_parallel")
        self.assertIsNotNone(without_tbb["rows"][0]["speedup"])

    def test_without_the_parallel_cpu_sort(self):
        found = primitives.sort_target([e for e in SORT if e["device"] == "gpu"])
        self.assertIsNone(found["rows"][0]["speedup"])
        self.assertIn("std_par", found["note"])


class SummaryTest(unittest.TestCase):
    def render(self, found, **others):
        document = document_of(found, **others)
        study = document["studies"]["primitives"]
        study["libraries"] = [{"id": "std_par", "device": "cpu", "description": "TBB", "available": False,
                               "reason": "built *without* TBB"}]
        study["implementations"] = [{"id": primitive, "library": "std_seq", "primitive": primitive,
                                     "max_size": 4194304, "cap_reason": "slow"}
                                    for primitive in ("sort_u32", "sort_u64")]
        return to_markdown(primitives.sections(study, document))

    def test_sections(self):
        text = self.render(REDUCE + TRANSFORM + SORT, transfer=transfer_study(180e-6))
        for heading in ("elements per second", "where the GPU beats the CPU", "temporary storage and synchronisation",
                        "reduce against the memory bandwidth", "sorting 2^28 32-bit keys"):
            self.assertIn(heading, text)
        self.assertIn("Not run here: built \\*without\\* TBB", text)  # the reason escaped
        self.assertIn("cap: std\\_seq runs sort\\_u32, sort\\_u64 up to n = 4194304 (slow)", text)
        self.assertIn("100.00x", text)  # the resident sort's speedup
        self.assertIn("90.00 us", text)  # reduce's allocation cost at 64 Mi
        self.assertIn("GPU library", text)
        crossover = next(line for line in text.splitlines() if line.startswith("| reduce | resident | device time"))
        self.assertIn("| cub |", crossover)  # the library that crosses over, not the primitive

    def test_without_the_sort_the_note_says_how(self):
        text = self.render(REDUCE)
        self.assertIn("not measured in this run", text)
        self.assertIn("No memory bandwidth to hold it against", text)


class PlotsTest(unittest.TestCase):
    def test_one_chart_per_primitive_and_reduce_bandwidth(self):
        pyplot = charts.load_pyplot()
        if pyplot is None:
            self.skipTest("no matplotlib")
        study = document_of(REDUCE + TRANSFORM, transfer=transfer_study(180e-6))["studies"]["primitives"]
        with tempfile.TemporaryDirectory() as plot_dir:
            paths = primitives.plots(pyplot, study, plot_dir)
        names = sorted(path.rsplit("/", 1)[1] for path in paths)
        self.assertEqual(names, ["primitives_reduce.png", "primitives_reduce_bandwidth.png",
                                 "primitives_transform.png"])


class RegistryTest(unittest.TestCase):
    def test_the_suite_and_quick_run_reduce_the_full_sweep_every_primitive(self):
        """The binary's points name the suite's and --quick's primitive; --full runs every one."""
        description = {"implementations": [{"id": primitive, "device": "gpu", "modes": ["resident"]}
                                           for primitive in primitives.PRIMITIVES], "default_sizes": [1024],
                       "gpu": {"available": True},
                       "points": {"quick": {"sizes": [1 << 20], "impls": ["reduce"]},
                                  "suite": {"sizes": [1 << 26], "impls": ["reduce"]}, "full": {"sizes": [1024]}}}
        suite = options.for_study(support.run_options(), "primitives", description)
        quick = options.for_study(support.run_options(quick=True), "primitives", description)
        full = options.for_study(support.run_options(full=True), "primitives", description)
        self.assertEqual((suite.impls, suite.sizes), (["reduce"], [1 << 26]))
        self.assertEqual((quick.impls, quick.sizes), (["reduce"], [1 << 20]))
        self.assertEqual((full.impls, full.sizes), (None, [1024]))
        self.assertEqual(studies.axis_names("primitives")["precision"], "library")


if __name__ == "__main__":
    unittest.main()
