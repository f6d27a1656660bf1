"""Findings across the studies (stages/across.py): the measured peak and each entry's fraction of it, the
device-memory traffic model, the bandwidth from the transfer study's device-to-device copies, the
roofline, energy per GEMM and the clock-limited entries; their sections in the summary, the chart,
and files without (or with damaged) per-entry telemetry."""
import copy
import json
import os
import tempfile
import unittest

import support
from support import fixture, load_fixture

from gpubench_driver.lib import charts, findings, gbench, results, stats
from gpubench_driver.stages import across, analyse, render
from gpubench_driver.commands import report

HOSTILE = "<script>alert(1)</script>"
GIB = 1 << 30


# (input, output) bytes of one element, as the precision fixture describes them
ELEMENT_BYTES = {"fp32": (4, 4), "tf32": (4, 4), "fp16": (2, 4), "int8": (1, 4)}


def entry(study, impl, device, mode, precision, n, median_s, batch=None, flop=None, **fields):
    """An ok entry as the driver writes it; flop defaults to a GEMM's (times the batch), and so does the
    device memory traffic the binary reports (A and B read once, C written once), with flop=None."""
    name = f"{study}/{impl}/{device}/{mode}/{precision}/n:{n}" + (f"/batch:{batch}" if batch else "")
    made = support.blank_entry(name)
    made.update(repetitions=1, iterations=1, time_s=stats.summarize([median_s]))
    if study == "transfer":
        made.update(bytes_transferred=float(n), memory_read_bytes=float(n), memory_written_bytes=float(n))
    else:
        if flop is None and precision in ELEMENT_BYTES:
            inputs, output = ELEMENT_BYTES[precision]
            made.update(memory_read_bytes=2.0 * n * n * inputs * (batch or 1),
                        memory_written_bytes=1.0 * n * n * output * (batch or 1))
        made["flop"] = flop if flop is not None else 2.0 * n ** 3 * (batch or 1)
        made["flop_per_s"] = made["flop"] / median_s
    made.update(fields)
    return made


def document(studies):
    """A results document of the given {study: (description, entries)}."""
    made = results.new_document({"id": "findings", "started": "2026-11-23T00:00:00+00:00", "finished": None,
                                 "status": "complete", "command_line": [], "options": {}})
    made["gpu"] = {"available": True, "reason": None}
    for name, (description, entries) in studies.items():
        made["studies"][name] = results.new_study(description, sorted({e["n"] for e in entries}))
        made["studies"][name]["entries"] = entries
    return made


def precision_description():
    return load_fixture("precision_describe.json")


def matmul_entries():
    return [entry("matmul", "openblas", "cpu", "host", "fp32", 4096, 0.125),
            entry("matmul", "cublas", "gpu", "resident", "fp32", 4096, 2.75e-3),
            entry("matmul", "cublas", "gpu", "transfer_pinned", "fp32", 4096, 4.0e-3),
            entry("matmul", "tiled_kernel", "gpu", "resident", "fp32", 4096, 11.0e-3)]


def precision_entries():
    return [entry("precision", "cublas", "gpu", "resident", "fp32", 4096, 5.5e-3),
            entry("precision", "cublas", "gpu", "resident", "fp16", 4096, 0.5e-3),
            entry("precision", "wmma_kernel", "gpu", "resident", "fp16", 4096, 1.0e-3),
            entry("precision", "cublas", "gpu", "resident", "int8", 4096, 0.25e-3),
            entry("precision", "cublas", "gpu", "transfer_pinned", "fp16", 4096, 2.0e-3)]


def transfer_entries():
    return [entry("transfer", "copy_engine", "gpu", "device", "d2d", 1 << 20, (1 << 20) / 1.6e12),  # fastest, small
            entry("transfer", "copy_engine", "gpu", "device", "d2d", GIB, GIB / 1.4e12),
            entry("transfer", "sm_copy", "gpu", "device", "d2d", GIB, GIB / 1.45e12),
            entry("transfer", "copy_engine", "gpu", "pinned", "h2d", GIB, GIB / 50e9)]


def run_document(with_transfer=True):
    studies = {"matmul": ({"precision": "fp32", "implementations": []}, matmul_entries()),
               "precision": (precision_description(), precision_entries())}
    if with_transfer:
        studies["transfer"] = ({"implementations": []}, transfer_entries())
    made = document(studies)
    analyse.derive_findings(made, 0)
    return made


def named(made, name):
    return next(e for study in made["studies"].values() for e in study["entries"] if e["name"] == name)


class TrafficTest(unittest.TestCase):
    """The roofline's bytes are what the binary reports (memory_read_bytes + memory_written_bytes); a
    study's precision slot holds a number format where its axis_names say so."""

    def test_traffic_is_the_reported_reads_and_writes(self):
        made = entry("precision", "cublas", "gpu", "resident", "int8", 64, 1e-3)
        self.assertEqual(findings.memory_traffic(made), 2 * 64 * 64 + 4 * 64 * 64)
        made["memory_written_bytes"] = None
        self.assertIsNone(findings.memory_traffic(made))
        made["memory_written_bytes"] = float("nan")
        self.assertIsNone(findings.memory_traffic(made))

    def test_an_entry_without_traffic_is_not_placed(self):
        made = run_document()
        for study in made["studies"].values():
            for made_entry in study["entries"]:
                made_entry.pop("memory_read_bytes", None)  # a file written before the counters
        analyse.derive_findings(made, 0)
        roof = made["findings"]["roofline"]
        self.assertEqual(roof["points"], [])
        self.assertEqual(roof["traffic_models"], {})
        reasons = {(row["study"], row["mode"]): row["reason"] for row in roof["not_placed"]}
        # matmul's description names no axes: a file from before axis_names and the traffic counters
        self.assertEqual(reasons[("matmul", "resident")], across.NO_TRAFFIC_YET)
        self.assertIn("written before the binaries reported device-memory traffic", reasons[("matmul", "resident")])
        self.assertEqual(reasons[("precision", "resident")], across.NO_TRAFFIC)
        self.assertEqual(len(roof["peaks"]), 3)  # the peaks do not need traffic

    def test_a_study_without_a_traffic_model_gives_its_own_reason(self):
        made = run_document()
        made["studies"]["precision"]["memory_traffic_note"] = "no traffic model for this"
        for made_entry in made["studies"]["precision"]["entries"]:
            made_entry.pop("memory_read_bytes", None)
        analyse.derive_findings(made, 0)
        reasons = {(row["study"], row["mode"]): row["reason"] for row in made["findings"]["roofline"]["not_placed"]}
        self.assertEqual(reasons[("precision", "resident")], "no traffic model for this")

    def test_the_rule_is_named_for_each_study_with_points(self):
        roof = run_document()["findings"]["roofline"]
        self.assertEqual(roof["traffic_models"], {"matmul": across.TRAFFIC_RULE,
                                                  "precision": across.TRAFFIC_RULE})

    def test_no_number_format_from_the_axis_names(self):
        made = run_document()
        made["studies"]["precision"]["axis_names"] = {"impl": "impl", "mode": "mode", "precision": "workload",
                                                      "n": "n", "batch": None}
        analyse.derive_findings(made, 0)
        findings = made["findings"]
        self.assertEqual({row["precision"] for row in findings["roofline"]["peaks"]}, {"fp32"})
        self.assertIsNone(named(made, "precision/cublas/gpu/resident/int8/n:4096")["fraction_of_peak"])
        reasons = {row["reason"] for row in findings["roofline"]["not_placed"] if row["study"] == "precision"}
        self.assertEqual(reasons, {"its precision axis is the workload, not a number format"})

    def test_files_without_axis_names_use_the_registry(self):
        made = run_document()  # the transfer study's description names no axes: the registry's direction
        self.assertIsNone(made["studies"]["transfer"]["axis_names"])
        self.assertNotIn("d2d", {row["precision"] for row in made["findings"]["roofline"]["peaks"]})
        overlap = entry("overlap", "streams4", "gpu", "pinned", "matmul", 1024, 1e-3, batch=4)
        made = document({"overlap": ({"implementations": []}, [overlap])})
        analyse.derive_findings(made, 0)
        self.assertEqual(made["findings"]["roofline"]["peaks"], [])
        self.assertEqual(made["findings"]["roofline"]["not_placed"][0]["reason"],
                         "its precision axis is the workload, not a number format")


class PeakTest(unittest.TestCase):
    def setUp(self):
        self.document = run_document()
        self.findings = self.document["findings"]

    def test_peak_of_each_precision_over_every_study(self):
        peaks = {row["precision"]: row for row in self.findings["roofline"]["peaks"]}
        self.assertEqual(set(peaks), {"fp32", "fp16", "int8"})  # transfer's directions are no precision
        self.assertEqual((peaks["fp32"]["study"], peaks["fp32"]["impl"]), ("matmul", "cublas"))
        self.assertAlmostEqual(peaks["fp32"]["flop_per_s"], 2 * 4096 ** 3 / 2.75e-3)
        self.assertAlmostEqual(peaks["fp16"]["flop_per_s"], 2 * 4096 ** 3 / 0.5e-3)

    def test_fraction_of_peak_on_each_gpu_entry(self):
        cases = {"precision/cublas/gpu/resident/fp32/n:4096": 2.75 / 5.5,
                 "matmul/tiled_kernel/gpu/resident/fp32/n:4096": 2.75 / 11.0,
                 "matmul/cublas/gpu/transfer_pinned/fp32/n:4096": 2.75 / 4.0,
                 "precision/wmma_kernel/gpu/resident/fp16/n:4096": 0.5,
                 "precision/cublas/gpu/resident/int8/n:4096": 1.0}
        for name, expected in cases.items():
            self.assertAlmostEqual(named(self.document, name)["fraction_of_peak"], expected, msg=name)
        self.assertIsNone(named(self.document, "matmul/openblas/cpu/host/fp32/n:4096")["fraction_of_peak"])
        self.assertIsNone(named(self.document, f"transfer/copy_engine/gpu/device/d2d/n:{GIB}")["fraction_of_peak"])
        # the per-study fraction of the best rate is left as it was
        self.assertAlmostEqual(named(self.document, "precision/cublas/gpu/resident/fp32/n:4096")[
            "fraction_of_best_rate"], 0.25 / 5.5)

    def test_table_rows_are_each_studys_best_per_precision(self):
        rows = [(row["study"], row["precision"], row["impl"], round(row["fraction_of_peak"], 3))
                for row in self.findings["fraction_of_peak"]]
        self.assertEqual(rows, [("matmul", "fp32", "cublas", 1.0), ("precision", "int8", "cublas", 1.0),
                                ("precision", "fp16", "cublas", 1.0), ("precision", "fp32", "cublas", 0.5)])
        text = render.render(self.document, [], tempfile.gettempdir())
        self.assertIn("| precision | fp32 | cublas resident n=4096 | 24.99 TFLOP/s | 50.0% | 49.98 TFLOP/s: matmul: "
                      "cublas resident n=4096 |", text)


class NominalFlopPeakTest(unittest.TestCase):
    """A convolution counts the direct algorithm's FLOP: it exceeds a GEMM-set peak rather than setting it."""

    def test_a_convolution_does_not_set_a_peak_a_gemm_measured(self):
        conv = entry("conv2d", "cudnn_nhwc", "gpu", "resident", "fp32", 56, 1e-3, batch=256, flop=1e11)  # 100 TFLOP/s
        conv16 = entry("conv2d", "cudnn_nhwc", "gpu", "resident", "fp16", 56, 1e-3, batch=256, flop=3e11)
        made = document({"matmul": ({"implementations": []}, matmul_entries()),
                         "conv2d": ({"implementations": []}, [conv, conv16])})
        peaks = {row["precision"]: row for row in across.peak_rates(made["studies"])}
        self.assertEqual(peaks["fp32"]["study"], "matmul")  # 50 TFLOP/s, below the convolution's nominal 100
        self.assertEqual(peaks["fp16"]["study"], "conv2d")  # no GEMM measured FP16: the convolution sets it
        across.set_fraction_of_peak(made["studies"], list(peaks.values()))
        self.assertAlmostEqual(conv["fraction_of_peak"], 1e14 / (2 * 4096 ** 3 / 2.75e-3))  # above 1, and said why
        text = render.render({**made, "findings": across.derive(made["studies"])}, [], "/tmp")
        self.assertIn("cuDNN may choose Winograd", text)


class BandwidthTest(unittest.TestCase):
    def test_best_d2d_copy_at_the_largest_size_counted_twice(self):
        found = run_document()["findings"]["roofline"]["bandwidth"]
        self.assertEqual((found["impl"], found["n"]), ("sm_copy", GIB))  # not the faster 1 MiB copy
        self.assertAlmostEqual(found["copy_bytes_per_s"], 1.45e12)
        self.assertAlmostEqual(found["bytes_per_s"], 2.9e12)

    def test_no_d2d_entry(self):
        studies = {"transfer": {"entries": [e for e in transfer_entries() if e["precision"] != "d2d"]}}
        self.assertEqual(across.device_bandwidth(studies),
                         (None, "the transfer study measured no device-to-device (d2d) copy"))

    def test_failed_d2d_copies_do_not_count(self):
        copies = transfer_entries()
        for made in copies:
            if made["n"] == GIB:
                made.update(status="error", message="cudaErrorMemoryAllocation")
        found, _ = across.device_bandwidth({"transfer": {"entries": copies}})
        self.assertEqual(found["n"], 1 << 20)


class RooflineTest(unittest.TestCase):
    def test_points_are_resident_gpu_entries_with_their_intensity(self):
        roof = run_document()["findings"]["roofline"]
        points = {(p["study"], p["impl"], p["precision"]): p for p in roof["points"]}
        self.assertEqual(set(points), {("matmul", "cublas", "fp32"), ("matmul", "tiled_kernel", "fp32"),
                                       ("precision", "cublas", "fp32"), ("precision", "cublas", "fp16"),
                                       ("precision", "wmma_kernel", "fp16"), ("precision", "cublas", "int8")})
        n = 4096
        self.assertAlmostEqual(points[("matmul", "cublas", "fp32")]["intensity"], 2 * n ** 3 / (12 * n * n))
        self.assertAlmostEqual(points[("precision", "cublas", "int8")]["intensity"], 2 * n ** 3 / (6 * n * n))
        not_placed = {(row["study"], row["mode"]): row for row in roof["not_placed"]}
        self.assertEqual(set(not_placed), {("matmul", "transfer_pinned"), ("precision", "transfer_pinned")})
        self.assertIn("times host-device copies", not_placed[("matmul", "transfer_pinned")]["reason"])

    def test_studies_without_a_model_are_listed_not_guessed(self):
        described = {"axis_names": {"impl": "impl", "mode": "mode", "precision": "precision", "n": "hidden",
                                    "batch": "batch"}}
        made = document({"mlp_training": (described, [entry("mlp_training", "cublas_kernels", "gpu", "resident",
                                                            "fp32", 1024, 1e-3, batch=256, flop=1e9)])})
        analyse.derive_findings(made, 0)
        roof = made["findings"]["roofline"]
        self.assertEqual(roof["points"], [])
        self.assertEqual(roof["not_placed"][0]["reason"], across.NO_TRAFFIC)

    def test_without_a_transfer_study_only_the_compute_roofs(self):
        made = run_document(with_transfer=False)
        roof = made["findings"]["roofline"]
        self.assertIsNone(roof["bandwidth"])
        self.assertIn("nor a transfer study", roof["memory_roof_note"])
        text = render.render(made, [], tempfile.gettempdir())
        self.assertIn("- No memory roof: the run has neither a stream study past the L2 cache nor a transfer "
                      "study", text)
        self.assertIn("only the compute roofs are drawn", text)
        self.assertNotIn("ridge at", text)

    def test_with_the_memory_roof(self):
        made = run_document()
        text = render.render(made, [], tempfile.gettempdir())
        self.assertIn("- Memory roof: 2900 GB/s of device memory traffic, twice the 1450 GB/s", text)
        self.assertIn("a copy of B bytes reads B and writes B bytes of device memory", text)
        fp32_peak = 2 * 4096 ** 3 / 2.75e-3
        self.assertIn(f"fp32 49.98 TFLOP/s, ridge at {fp32_peak / 2.9e12:.1f} FLOP/B", text)
        roof = made["findings"]["roofline"]
        self.assertAlmostEqual(across.attainable(roof, "fp32", 1.0), 2.9e12)
        self.assertAlmostEqual(across.attainable(roof, "fp32", 1e6), fp32_peak)

    def test_recorded_in_the_results_file(self):
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "results.json")
            results.write(run_document(), path)
            loaded = results.load(path)
        self.assertEqual(len(loaded["findings"]["roofline"]["points"]), 6)
        self.assertAlmostEqual(loaded["findings"]["roofline"]["bandwidth"]["bytes_per_s"], 2.9e12)

    @unittest.skipUnless(charts.load_pyplot() is not None, "matplotlib is not installed for this Python")
    def test_chart_is_a_png_in_the_report(self):
        for with_transfer in (True, False):
            with self.subTest(with_transfer=with_transfer), tempfile.TemporaryDirectory() as out:
                made = run_document(with_transfer)
                made["studies"]["precision"]["entries"][0]["precision"] = "$\\frac{x}$"  # no mathtext
                analyse.derive_findings(made, 0)
                summary_path = render.write_outputs(made, out)
                with open(os.path.join(out, "plots", "roofline.png"), "rb") as stream:
                    self.assertEqual(stream.read(8), b"\x89PNG\r\n\x1a\n")
                with open(summary_path, encoding="utf-8") as stream:
                    self.assertIn("- `plots/roofline.png`", stream.read())  # the chart beside the roofline table
                with open(os.path.join(out, "summary.html"), encoding="utf-8") as stream:
                    self.assertIn('alt="plots/roofline.png"', stream.read())


def with_telemetry(made):
    """Per-entry telemetry on the GPU entries: energy, power, clocks; two entries clock-limited."""
    for study in made["studies"].values():
        for made_entry in study["entries"]:
            if made_entry["device"] == "gpu":
                made_entry.update(energy_j_per_op=made_entry["time_s"]["median"] * 500.0, power_w=300.0,
                                  sm_clock_mhz=1980.0, mem_clock_mhz=2619.0, temperature_c_max=60.0,
                                  power_limited_fraction=0.0, thermal_limited_fraction=0.0, telemetry_samples=12,
                                  clock_limited=False)
    named(made, "precision/cublas/gpu/resident/fp16/n:4096").update(
        clock_limited=True, power_limited_fraction=0.75, sm_clock_mhz=1755.0)
    named(made, "matmul/tiled_kernel/gpu/resident/fp32/n:4096").update(
        clock_limited=True, thermal_limited_fraction=0.25)
    analyse.derive_findings(made, 0)
    return made


class EnergyTest(unittest.TestCase):
    def test_energy_per_gemm_and_gflop_per_joule(self):
        made = with_telemetry(run_document())
        rows = {(r["study"], r["impl"], r["mode"], r["precision"]): r for r in made["findings"]["energy"]}
        fp16 = rows[("precision", "cublas", "resident", "fp16")]
        self.assertAlmostEqual(fp16["energy_j_per_op"], 0.25)  # 0.5 ms at 500 W
        self.assertAlmostEqual(fp16["flop_per_joule"], 2 * 4096 ** 3 / 0.25)
        copy_row = rows[("transfer", "copy_engine", "device", "d2d")]
        self.assertIsNone(copy_row["flop_per_joule"])
        text = render.render(made, [], tempfile.gettempdir())
        self.assertIn("## Across the studies: energy per GEMM (NVML)", text)
        self.assertIn(f"| precision | fp16 | cublas | resident | 4096 | 250.00 mJ | n/a | {2 * 4096 ** 3 / 0.25 / 1e9:.1f} | "
                      "500 W | 1755 MHz |", text)  # energy over time, not the 300 W power reading
        self.assertAlmostEqual(fp16["call_power_w"], 500.0)
        self.assertIn("| matmul | fp32 | cublas | transfer\\_pinned | 4096 | 2.00 J |", text)
        self.assertIn("## Across the studies: energy per call (NVML)", text)
        self.assertIn(f"| transfer | copy\\_engine | device | d2d | {GIB} | n/a | ", text)

    def test_a_large_table_keeps_the_largest_size_of_each_series(self):
        made = run_document()
        made["studies"]["precision"]["entries"] += [entry("precision", "cublas", "gpu", "resident", "fp16", n, 1e-3)
                                                    for n in range(100, 100 + 40)]
        text = render.render(with_telemetry(made), [], tempfile.gettempdir())
        self.assertIn("Each series at its largest size with an energy reading", text)
        self.assertNotIn("| precision | fp16 | cublas | resident | 100 |", text)
        self.assertIn("| precision | fp16 | cublas | resident | 4096 |", text)


class ClockLimitedTest(unittest.TestCase):
    def test_flagged_entries_are_listed(self):
        made = with_telemetry(run_document())
        names = [row["name"] for row in made["findings"]["clock_limited"]]
        self.assertEqual(names, ["matmul/tiled_kernel/gpu/resident/fp32/n:4096",
                                 "precision/cublas/gpu/resident/fp16/n:4096"])
        text = render.render(made, [], tempfile.gettempdir())
        self.assertIn("- precision/cublas/gpu/resident/fp16/n:4096: power cap in 75.0% and thermal slowdown in 0.0% "
                      "of its samples, median SM clock 1755 MHz", text)
        self.assertIn("2 of 12 entries with per-entry telemetry", text)

    def test_a_sentence_when_none_was(self):
        made = with_telemetry(run_document())
        for study in made["studies"].values():
            for made_entry in study["entries"]:
                if made_entry.get("clock_limited"):
                    made_entry["clock_limited"] = False
        analyse.derive_findings(made, 0)
        text = render.render(made, [], tempfile.gettempdir())
        self.assertIn("No entry ran with its clock held below 97% of the maximum by a power cap or a thermal "
                      "slowdown (12 entries with per-entry telemetry).", text)

    def test_many_flagged_entries_are_cut_short(self):
        made = run_document()
        made["studies"]["precision"]["entries"] += [
            entry("precision", "cublas", "gpu", "resident", "fp16", n, 1e-3, clock_limited=True)
            for n in range(100, 130)]
        analyse.derive_findings(made, 0)
        text = render.render(made, [], tempfile.gettempdir())
        self.assertIn("- and 5 more (`clock_limited` in results.json)", text)


class OldFilesTest(unittest.TestCase):
    def test_results_v1_renders_without_per_entry_telemetry(self):
        with tempfile.TemporaryDirectory() as out:
            with open(report.regenerate(fixture("results_v1.json"), out), encoding="utf-8") as stream:
                text = stream.read()
        self.assertIn("## Per-entry telemetry\n\nNo per-entry telemetry in this file", text)
        self.assertIn("## Across the studies: roofline (GPU, resident)", text)
        self.assertNotIn("energy per GEMM", text)

    def test_a_cpu_only_run_has_no_sections_across_the_studies(self):
        made = document({"matmul": ({"precision": "fp32"}, [entry("matmul", "openblas", "cpu", "host", "fp32",
                                                                  4096, 0.125)])})
        analyse.derive_findings(made, 0)
        self.assertEqual(made["findings"]["roofline"]["peaks"], [])
        text = render.render(made, [], tempfile.gettempdir())
        self.assertNotIn("Across the studies", text)
        self.assertNotIn("Per-entry telemetry", text)

    def test_the_telemetry_records_note_says_why(self):
        made = run_document()
        made["studies"]["matmul"]["telemetry"] = {"note": f"NVML not available {HOSTILE}"}
        analyse.derive_findings(made, 0)
        text = render.render(made, [], tempfile.gettempdir())
        self.assertIn("- matmul: NVML not available \\<script\\>alert(1)\\</script\\>", text)

    def test_absent_and_null_fields_are_the_same(self):
        made = run_document()
        absent = copy.deepcopy(made)
        for study in absent["studies"].values():
            for made_entry in study["entries"]:
                for key in (*results.ENTRY_TELEMETRY, results.CLOCK_LIMITED, "fraction_of_peak"):
                    made_entry.pop(key, None)
        analyse.derive_findings(absent, 0)
        self.assertEqual(absent["findings"], made["findings"])


class HostileTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.directory.name, "results.json")

    def tearDown(self):
        self.directory.cleanup()

    def refused(self, made, field):
        with open(self.path, "w", encoding="utf-8") as stream:
            json.dump(made, stream)
        with self.assertRaises(results.ResultsError) as caught:
            results.load(self.path)
        self.assertIn(field, str(caught.exception))

    def test_damaged_telemetry_fields_are_refused_by_name(self):
        for key, value in (("energy_j_per_op", HOSTILE), ("power_w", [1]), ("sm_clock_mhz", True),
                           ("power_limited_fraction", {}), ("clock_limited", 1), ("clock_limited", "yes"),
                           ("fraction_of_peak", "1")):
            with self.subTest(key=key, value=value):
                made = with_telemetry(run_document())
                made["studies"]["matmul"]["entries"][1][key] = value
                self.refused(made, f"studies.matmul.entries[1].{key}")

    def test_damaged_samples_layers_precisions_and_findings_are_refused_by_name(self):
        changes = (
            (lambda d: d["studies"]["matmul"].update(telemetry={"interval_s": 0.1, "source": 3, "samples": []}),
             "studies.matmul.telemetry.source"),
            (lambda d: d["studies"]["matmul"].update(telemetry={"samples": [{"t_s": 0, "energy_j": HOSTILE}]}),
             "studies.matmul.telemetry.samples[0].energy_j"),
            (lambda d: d["studies"]["precision"]["precisions"][0].update(output=4), "precisions[0].output"),
            (lambda d: d["studies"]["precision"].update(layers=[{"n": 7, "in_channels": HOSTILE}]),
             "studies.precision.layers[0].in_channels"),
            (lambda d: d["studies"]["precision"]["axis_names"].update(precision=3),
             "studies.precision.axis_names.precision"),
            (lambda d: d["studies"]["precision"].update(axis_names=["impl"]), "studies.precision.axis_names"),
            (lambda d: d["studies"]["precision"]["implementations"][1].update(precisions=["fp16", 16]),
             "studies.precision.implementations[1].precisions[1]"),
            (lambda d: d["studies"]["precision"]["precisions"][0].update(input_bytes="8"),
             "studies.precision.precisions[0].input_bytes"),
            (lambda d: d["studies"]["matmul"]["entries"][1].update(memory_read_bytes=HOSTILE),
             "studies.matmul.entries[1].memory_read_bytes"),
            (lambda d: d["studies"]["matmul"]["entries"][1].update(h2d_bytes=True),
             "studies.matmul.entries[1].h2d_bytes"),
            (lambda d: d["studies"]["matmul"]["entries"][1].update(axes=[4096]), "studies.matmul.entries[1].axes"),
            (lambda d: d["studies"]["matmul"]["entries"][1].update(axes={"n": {"x": 1}}),
             "studies.matmul.entries[1].axes.n"),
            (lambda d: d.update(findings=[]), "findings"),
            (lambda d: d["findings"]["roofline"]["points"][0].update(intensity=HOSTILE),
             "findings.roofline.points[0].intensity"),
            (lambda d: d["findings"]["roofline"]["bandwidth"].update(bytes_per_s=None),
             "findings.roofline.bandwidth.bytes_per_s"),
            (lambda d: d["findings"]["roofline"].update(peaks=None), "findings.roofline.peaks"),
            (lambda d: d["findings"]["energy"].append(None), "findings.energy[12]"),
        )
        for change, field in changes:
            with self.subTest(field=field):
                made = with_telemetry(run_document())
                change(made)
                self.refused(made, field)

    def test_nan_in_memory_is_missing_and_written_as_null(self):
        made = run_document()
        fp16 = named(made, "precision/cublas/gpu/resident/fp16/n:4096")
        fp16.update(energy_j_per_op=float("nan"), power_w=float("inf"), sm_clock_mhz=float("nan"))
        analyse.derive_findings(made, 0)
        self.assertEqual(made["findings"]["energy"], [])
        self.assertEqual(made["findings"]["telemetry"]["entries"], 0)
        results.write(made, self.path)
        loaded = results.load(self.path)
        self.assertIsNone(named(loaded, "precision/cublas/gpu/resident/fp16/n:4096")["energy_j_per_op"])

    def test_nan_literal_is_refused(self):
        made = with_telemetry(run_document())
        made["studies"]["matmul"]["entries"][1]["power_w"] = "NaN here"
        with open(self.path, "w", encoding="utf-8") as stream:
            stream.write(json.dumps(made).replace('"NaN here"', "NaN"))
        with self.assertRaises(results.ResultsError):
            results.load(self.path)

    def test_hostile_names_stay_text(self):
        made = run_document()
        for made_entry in made["studies"]["precision"]["entries"]:
            made_entry.update(impl=HOSTILE, name=f"precision/{HOSTILE}|x/gpu", energy_j_per_op=0.1, clock_limited=True)
        made["studies"]["precision"]["axis_names"] = {"precision": HOSTILE}
        analyse.derive_findings(made, 0)
        text = render.render(made, [], tempfile.gettempdir())
        self.assertNotIn("<script>", text)
        self.assertIn("\\<script\\>alert(1)\\</script\\>\\|x/gpu", text)
        self.assertIn("its precision axis is the \\<script\\>alert(1)\\</script\\>, not a number format", text)

    def test_every_new_field_replaced(self):
        """The fuzz of test_results.HostileFileTest over the fields this module reads and writes: each
        refused with a ResultsError or rendered without markup from the file."""
        original = with_telemetry(run_document())
        original["studies"]["matmul"]["telemetry"] = {
            "interval_s": 0.1, "source": "nvml", "summary": None,
            "samples": [{"t_s": 0.0, "energy_j": 1.0, "gpu_util": 90, "mem_util": 10, "memory_used_mib": 900}]}
        original = json.loads(json.dumps(results.without_non_finite(original)))
        targets = [("findings",), ("studies", "matmul", "telemetry"), ("studies", "precision", "precisions", 2)]
        targets += [("studies", "matmul", "entries", 1, key) for key in (*results.ENTRY_TELEMETRY,
                                                                          results.CLOCK_LIMITED, "fraction_of_peak")]
        targets += [("studies", "transfer", "entries", 1, key) for key in ("bytes_transferred", "precision", "n")]
        original["studies"]["precision"]["entries"][0]["axes"] = {"impl": "cublas", "n": 4096}
        targets += [("studies", "precision", "entries", 0, key) for key in (*gbench.TRAFFIC_COUNTERS, "axes")]
        targets += [("studies", "precision", "axis_names"), ("studies", "precision", "implementations", 1)]
        paths = []
        for target in targets:
            node = original
            for key in target:
                node = node[key]
            paths += [target] + [target + rest for rest in _paths(node)]
        for where in paths:
            for value in (HOSTILE, 7, -1, [], {}, None, True):
                made = copy.deepcopy(original)
                node = made
                for key in where[:-1]:
                    node = node[key]
                node[where[-1]] = value
                with open(self.path, "w", encoding="utf-8") as stream:
                    json.dump(made, stream)
                try:
                    loaded = results.load(self.path)
                    analyse.derive_findings(loaded, 0)
                    text = render.render(loaded, [], self.directory.name)
                except results.ResultsError:
                    continue
                self.assertNotIn("<script>", text, where)


def _paths(node, prefix=()):
    """Every path below a JSON node (the first two items of each list)."""
    items = node.items() if isinstance(node, dict) else enumerate(node[:2]) if isinstance(node, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from _paths(value, prefix + (key,))


if __name__ == "__main__":
    unittest.main()
