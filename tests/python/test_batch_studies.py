"""The MLP training and convolution studies in the driver, beside batched GEMM. Hand-written
fixtures (made-up times of a GPU machine, not measurements): gbench_mlp_training.json in Google
Benchmark 1.7 style and gbench_conv2d.json in 1.8 style, each with utilization counters per
repetition (often without readings), unquoted NaN counters, a skip, an error or a wrong result;
reference_torch_*.json, what the PyTorch reference scripts print. Covered: utilization combined
over repetitions, the findings along the batch, the PyTorch comparison, summary, plots, options and
runs of stand-in study binaries through scripts/gpubench."""
import copy
import os
import tempfile
import unittest

import support
from support import run_options

from gpubench_driver import studies
from gpubench_driver.lib import batch_study, charts, gbench, results
from gpubench_driver.studies import conv2d
from gpubench_driver.stages import analyse, options, plots, reference, render
from test_run_studies import FakeMachine, read

MLP = "mlp_training/cublas_kernels/gpu/resident/{precision}/n:1024/batch:{batch}"
CONV = "conv2d/{impl}/gpu/{mode}/{precision}/n:{n}/batch:{batch}"


def fixture_entries(name):
    return {entry["name"]: entry for entry in support.entries_of(gbench.load_file(support.fixture(name)))}


def with_references():
    return {"torch_mlp": support.reference_run("reference_torch_mlp.json"),
            "torch_conv2d": support.reference_run("reference_torch_conv2d.json")}


def by_series(rows):
    return {(row["n"], row["impl"], row["mode"], row["precision"]): row for row in rows}


class CombineUtilizationTest(unittest.TestCase):
    def test_weighted_by_readings(self):
        combined = gbench.combine_utilization([
            {"gpu_util_samples": 2.0, "gpu_util_mean": 96.0, "gpu_util_max": 100.0, "mem_util_mean": 41.0},
            {"gpu_util_samples": 1.0, "gpu_util_mean": 99.0, "gpu_util_max": float("nan"), "mem_util_mean": 44.0}])
        self.assertEqual(combined, {"gpu_util_samples": 3.0, "gpu_util_mean": 97.0, "mem_util_mean": 42.0,
                                    "gpu_util_max": 100.0})

    def test_repetitions_without_readings(self):
        combined = gbench.combine_utilization([{"gpu_util_samples": 0.0}, {"gpu_util_samples": 1.0,
                                                                            "gpu_util_mean": 20.0,
                                                                            "gpu_util_max": 20.0,
                                                                            "mem_util_mean": 5.0}])
        self.assertEqual((combined["gpu_util_samples"], combined["gpu_util_mean"]), (1.0, 20.0))
        self.assertEqual(gbench.combine_utilization([{"gpu_util_samples": 0.0}] * 3),
                         {"gpu_util_samples": 0.0, "gpu_util_mean": None, "mem_util_mean": None,
                          "gpu_util_max": None})

    def test_not_reported(self):
        for runs in ([], [{"flop": 1.0}], [{"gpu_util_samples": float("nan")}]):
            self.assertEqual(set(gbench.combine_utilization(runs).values()), {None}, runs)

    def test_only_aggregates_give_no_utilization(self):
        group = {"iterations": [], "aggregates": {"median": {
            "run_type": "aggregate", "aggregate_name": "median", "real_time": 1.0, "time_unit": "us",
            "gpu_util_samples": 1.5, "gpu_util_mean": 50.0}}}
        entry = gbench._entry(MLP.format(precision="fp32", batch=1) + "/manual_time", group, {})
        self.assertEqual((entry["status"], entry["gpu_util_samples"], entry["gpu_util_mean"]), ("ok", None, None))


class MlpFixtureTest(unittest.TestCase):
    """Google Benchmark 1.7 style: no aggregate_unit, NaN unquoted."""

    def setUp(self):
        self.entries = fixture_entries("gbench_mlp_training.json")

    def test_gpu_entry(self):
        entry = self.entries[MLP.format(precision="fp32", batch=8192)]
        self.assertEqual((entry["status"], entry["n"], entry["batch"], entry["samples"]), ("ok", 1024, 8192, 8192))
        self.assertEqual(entry["device_bytes"], 270 * 2 ** 20)
        self.assertIsNone(entry["threads"])
        # Both repetitions' readings, not the median aggregate's (1.5 readings, mean 97.5); the NaN maximum is left out.
        self.assertEqual((entry["gpu_util_samples"], entry["gpu_util_mean"], entry["gpu_util_max"],
                          entry["mem_util_mean"]), (3, 97.0, 100.0, 42.0))

    def test_small_batch_with_one_reading(self):
        entry = self.entries[MLP.format(precision="bf16_mixed", batch=1)]
        self.assertEqual((entry["gpu_util_samples"], entry["gpu_util_mean"]), (1, 14.0))

    def test_cpu_entry(self):
        entry = self.entries["mlp_training/openblas_loops/cpu/host/fp32/n:1024/batch:1"]
        self.assertEqual((entry["threads"], entry["samples"], entry["gpu_util_samples"]), (16, 1, None))
        self.assertIsNone(entry["max_rel_error"])  # NaN in the file

    def test_error(self):
        entry = self.entries["mlp_training/cublas_kernels/gpu/transfer_pinned/fp32/n:1024/batch:8192"]
        self.assertEqual(entry["status"], "error")
        self.assertTrue(entry["message"].startswith("cudaErrorIllegalAddress"))


class ConvFixtureTest(unittest.TestCase):
    """Google Benchmark 1.8 style: aggregate_unit, json_schema_version, NaN unquoted."""

    def setUp(self):
        self.entries = fixture_entries("gbench_conv2d.json")

    def test_algorithm_and_workspace(self):
        entry = self.entries[CONV.format(impl="cudnn_nhwc", mode="resident", precision="fp32", n=56, batch=32)]
        self.assertEqual((entry["algorithm"], entry["workspace_bytes"], entry["samples"]), (7, 12 * 2 ** 20, 32))
        self.assertAlmostEqual(entry["gpu_util_mean"], (36.0 * 1 + 39.0 * 2) / 3)  # one and two readings
        self.assertEqual(entry["gpu_util_max"], 42.0)

    def test_no_reading_in_any_repetition(self):
        entry = self.entries[CONV.format(impl="cudnn_nhwc", mode="resident", precision="fp16", n=56, batch=1)]
        self.assertEqual((entry["gpu_util_samples"], entry["gpu_util_mean"], entry["gpu_util_max"]), (0, None, None))
        self.assertIsNone(entry["max_rel_error"])  # NaN in the file
        self.assertEqual(entry["algorithm"], 1)

    def test_skip_and_wrong_result(self):
        skipped = self.entries[CONV.format(impl="cudnn_nchw", mode="transfer_pinned", precision="fp16", n=56,
                                           batch=256)]
        self.assertEqual(skipped["status"], "skipped")
        self.assertIn("(CUDNN_STATUS_NOT_SUPPORTED)", skipped["message"])
        wrong = self.entries["conv2d/im2col_openblas_nchw/cpu/host/fp32/n:7/batch:32"]
        self.assertEqual(wrong["status"], "error")
        self.assertTrue(wrong["message"].startswith("wrong result: "))

    def test_document_keeps_what_describe_said(self):
        document = support.conv_document()
        results.validate(document)
        study = document["studies"]["conv2d"]
        self.assertEqual([layer["n"] for layer in study["layers"]], [7, 14, 28, 56])
        self.assertEqual(study["algorithms"]["7"], "WINOGRAD_NONFUSED")
        self.assertEqual((study["cudnn"]["version"], study["utilization"]["available"]), ("9.5.1", True))
        self.assertIsNone(support.batched_document()["studies"]["batched_gemm"]["layers"])
        study["utilization"] = "yes"
        with self.assertRaises(results.ResultsError) as caught:
            results.validate(document)
        self.assertIn("studies.conv2d.utilization", str(caught.exception))

    def test_round_trip(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "results.json")
            results.write(support.conv_document(with_references()), path)
            study = results.load(path)["studies"]["conv2d"]
        self.assertEqual(len(study["entries"]), 60)
        self.assertTrue(study["derived"]["chosen_algorithms"])


class FindingsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mlp = support.mlp_document()["studies"]["mlp_training"]["derived"]
        cls.conv = support.conv_document()["studies"]["conv2d"]["derived"]

    def test_each_study_has_its_own_findings(self):
        common = {"crossovers", "throughput", "device_memory", "utilization",
                  # what the summary's tables group
                  "series_axes", "device_memory_series", "failures", "cpu_precisions"}
        self.assertEqual(set(self.mlp), common | {"epoch_times"})
        self.assertEqual(set(self.conv), common | {"chosen_algorithms", "algorithm_cells"})
        self.assertEqual(set(support.batched_document()["studies"]["batched_gemm"]["derived"]),
                         common | {"loop_ratios"})

    def test_crossover_per_precision_and_mode(self):
        found = {(c["n"], c["precision"], c["mode"]): c for c in self.mlp["crossovers"]}
        self.assertEqual(set(found), {(1024, p, m) for p in ("fp32", "bf16_mixed")
                                      for m in ("resident", "transfer_pinned")})
        resident = found[(1024, "fp32", "resident")]
        self.assertEqual((resident["lower"], resident["upper"], resident["gpu_impl"]), (2, 256, "cublas_kernels"))
        conv = {(c["n"], c["precision"], c["mode"]): c for c in self.conv["crossovers"]}
        self.assertEqual(len(conv), 8)  # 2 layers x fp32, fp16 x 2 modes
        self.assertEqual(conv[(56, "fp16", "resident")]["gpu_impl"], "cudnn_nhwc")
        self.assertEqual(conv[(7, "fp32", "resident")]["batches_compared"], [1, 32])

    def test_throughput_in_samples(self):
        rows = by_series(self.mlp["throughput"])
        cpu = rows[(1024, "openblas_loops", "host", "fp32")]
        self.assertEqual(cpu["saturation_batch"], 256)  # 512 gains 0.4%
        gpu = rows[(1024, "cublas_kernels", "resident", "bf16_mixed")]
        self.assertEqual((gpu["best_batch"], gpu["saturation_batch"]), (8192, None))
        point = gpu["points"][-1]
        self.assertAlmostEqual(point["samples_per_s"], 8192 / point["median_s"])
        self.assertEqual(gpu["best_samples_per_s"], point["samples_per_s"])
        self.assertNotIn("products_per_s", point)

    def test_epoch_times(self):
        found = self.mlp["epoch_times"]
        self.assertEqual(found["samples"], 60000)
        throughput = by_series(self.mlp["throughput"])
        for row in found["rows"]:
            rates = throughput[(row["n"], row["impl"], row["mode"], row["precision"])]["points"]
            self.assertEqual([p["batch"] for p in row["points"]], [p["batch"] for p in rates])
            for epoch, measured in zip(row["points"], rates):
                self.assertAlmostEqual(epoch["epoch_s"], 60000 * measured["median_s"] / measured["batch"])

    def test_memory_per_sample(self):
        rows = [row for row in self.conv["device_memory"] if (row["n"], row["impl"], row["mode"], row["precision"])
                == (56, "cudnn_nhwc", "resident", "fp16")]
        self.assertEqual([row["batch"] for row in rows], [1, 32, 64, 256])
        self.assertEqual(rows[-1]["bytes_per_sample"], rows[-1]["device_bytes"] / 256)
        self.assertNotIn("operand_bytes_per_sample", rows[-1])

    def test_utilization_rows(self):
        found = self.mlp["utilization"]
        self.assertEqual((found["available"], found["reason"]), (True, None))
        self.assertTrue(all(row["device"] == "gpu" for row in found["rows"]))
        row = by_series(found["rows"])[(1024, "cublas_kernels", "resident", "fp32")]
        self.assertEqual([p["batch"] for p in row["points"]], [1, 2, 256, 512, 1024, 8192])
        self.assertEqual(row["points"][-1], {"batch": 8192, "gpu_util_samples": 3, "gpu_util_mean": 97.0,
                                             "mem_util_mean": 42.0, "gpu_util_max": 100.0})

    def test_utilization_not_available(self):
        record = copy.deepcopy(support.conv_document()["studies"]["conv2d"])
        record["utilization"] = {"available": False, "reason": "NVML not loaded: libnvidia-ml.so.1 not found"}
        found = batch_study.derive(conv2d.CONV2D, record)["utilization"]
        self.assertEqual((found["available"], found["reason"]), (False, "NVML not loaded: libnvidia-ml.so.1 not found"))
        record["utilization"] = None  # a binary that does not say
        self.assertIn("does not say", batch_study.derive(conv2d.CONV2D, record)["utilization"]["reason"])

    def test_chosen_algorithms(self):
        rows = {(r["n"], r["impl"], r["mode"], r["precision"], r["batch"]): r for r in self.conv["chosen_algorithms"]}
        self.assertEqual(len(rows), 6 * 8 - 2)  # every ok GPU entry: 6 (n, batch) x 8 series, 2 skipped
        row = rows[(56, "cudnn_nchw", "transfer_pinned", "fp32", 64)]
        self.assertEqual((row["algorithm"], row["algorithm_name"], row["workspace_bytes"]),
                         (7, "WINOGRAD_NONFUSED", 12 * 2 ** 20))
        entry = support.conv_document()["studies"]["conv2d"]["entries"][-1]
        self.assertEqual(entry["device"], "gpu")
        [unnamed] = batch_study.chosen_algorithms([entry], None)  # the graph API: engines have no names
        self.assertEqual((unnamed["algorithm"], unnamed["algorithm_name"]),
                         (entry["algorithm"], f"engine {entry['algorithm']:.0f}"))
        [engine] = batch_study.chosen_algorithms([dict(entry, tensor_cores=1)], None)
        self.assertEqual(engine["algorithm_name"], f"engine {entry['algorithm']:.0f} (tensor cores)")

    def test_size_text(self):
        layers = support.load_fixture("conv2d_describe.json")["layers"]
        self.assertEqual(batch_study.size_text(studies.BY_NAME["conv2d"].batch, layers, 56),
                         "layer n = 56 (ResNet-50 conv2_x 3x3: 64 -> 64 channels, 3x3 kernel, 56x56)")
        self.assertEqual(batch_study.size_text(studies.BY_NAME["mlp_training"].batch, None, 1024),
                         "hidden width n = 1024")


class ReferenceComparisonTest(unittest.TestCase):
    def rows(self, document, name):
        return {(r["study"], r["precision"], r["n"], r["batch"]): r
                for r in document["studies"][name]["derived"]["reference_comparison"]}

    def test_convolution_same_layer_dtype_layout_and_batch(self):
        document = support.conv_document(with_references())
        rows = self.rows(document, "conv2d")
        # layouts x precisions x layers x batches, less the one point neither side measured (nchw fp16 at
        # n = 56, batch 256: the study skipped it and torch did not run it)
        self.assertEqual(len(rows), 2 * 3 * 4 * 3 - 1)
        row = rows[("cudnn_nhwc/resident", "fp16", 56, 32)]
        study = next(e for e in document["studies"]["conv2d"]["entries"]
                     if e["name"] == CONV.format(impl="cudnn_nhwc", mode="resident", precision="fp16", n=56, batch=32))
        torch = next(r for r in support.load_fixture("reference_torch_conv2d.json")["results"]
                     if (r["n"], r["batch"], r["dtype"], r["layout"]) == (56, 32, "float16", "nhwc"))
        self.assertAlmostEqual(row["time_ratio"], study["time_s"]["median"] / torch["time_s"]["median"])
        self.assertEqual((row["reference"], row["reference_dtype"], row["reference_layout"]),
                         ("torch.nn.functional.conv2d", "float16", "nhwc"))
        self.assertIn("within 5%", row["target"])
        self.assertNotIn(("cudnn_nchw/resident", "fp16", 56, 256), rows)

    def test_mlp_from_batch_256(self):
        rows = self.rows(support.mlp_document(with_references()), "mlp_training")
        self.assertEqual(set(rows), {("cublas_kernels/resident", p, 1024, b) for p in ("fp32", "bf16_mixed")
                                     for b in (256, 1024, 8192)})
        self.assertAlmostEqual(rows[("cublas_kernels/resident", "fp32", 1024, 256)]["time_ratio"], 1 / 1.2)
        self.assertEqual(rows[("cublas_kernels/resident", "bf16_mixed", 1024, 8192)]["note"],
                         "no torch eager step bf16_mixed reference at n=1024, batch=8192")
        self.assertIn("within 10%", rows[("cublas_kernels/resident", "fp32", 1024, 256)]["target"])

    def test_matmul_rows_have_no_batch(self):
        [row] = reference.compare({}, [support.make_entry("cublas", "gpu", "resident", 4096, 1e-3)], "matmul")
        self.assertEqual((row["batch"], row["reference_layout"]), (None, None))
        self.assertIn("a time ratio within 0.98-1.02", row["target"])
        self.assertEqual(row["note"], "no torch float32 reference at n=4096")


class SummaryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        document = support.mlp_document(with_references())
        document["studies"].update(support.conv_document(with_references())["studies"])
        cls.text = render.render(document, [], tempfile.gettempdir())

    def test_sections(self):
        for study in ("MLP training", "Convolution"):
            for part in ("crossover batch (GPU faster than the best CPU)", "throughput and saturation",
                         "device memory per sample", "GPU utilization against batch (NVML)", "PyTorch reference",
                         "skipped and failed entries"):
                self.assertIn(f"## {study}: {part}\n", self.text)
        self.assertIn("## MLP training: time per epoch of 60,000 samples\n", self.text)
        self.assertIn("## Convolution: algorithm chosen and its workspace\n", self.text)
        self.assertNotIn("## Convolution: time per epoch", self.text)
        self.assertNotIn("against a loop", self.text)

    def test_crossovers(self):
        self.assertIn("Swept hidden width n = 1024 and batches 1, 2, 256, 512, 1024, 8192 (samples per SGD step "
                      "of the MLP 784 -> n -> n -> 10",
                      self.text)
        self.assertIn("| hidden width n | precision | GPU mode | GPU timed as | crossover batch | bracket | GPU impl | how |",
                      self.text)
        self.assertIn("| 1024 | fp32 | resident | each entry's headline time | 2 | 2 .. 256 | cublas\\_kernels |", self.text)
        self.assertIn("Swept layer n = 56, 7 and batches 1, 32, 64, 256", self.text)
        self.assertIn("- layer n = 56 (ResNet-50 conv2\\_x 3x3: 64 -\\> 64 channels, 3x3 kernel, 56x56)\n", self.text)
        self.assertNotIn("layer n = 14", self.text)  # not swept

    def test_throughput_and_epochs(self):
        self.assertIn("| 1024 | openblas\\_loops | host | fp32 | 35.76 k samples/s | 399.90 GFLOP/s | 8192 | 256: from "
                      "batch 256 to 512 (2x, 1 doubling): +0.4% per doubling, within noise |", self.text)
        self.assertRegex(self.text, r"\| 1024 \| cublas\\_kernels \| transfer\\_pinned \| fp32 \| 7\.83 s \| 3\.93 s "
                                    r"\| [^\n]* \| – \|\n")  # batch 8192 failed

    def test_memory(self):
        self.assertIn("| 56 | cudnn\\_nhwc | resident | fp16 | 2.0 MiB (batch 1) | 800.0 KiB (batch 256) | 200.0 MiB |",
                      self.text)

    def test_utilization(self):
        self.assertIn("| 1024 | cublas\\_kernels | resident | fp32 | 14% (1) | 14% (1) | 62% (2) |", self.text)
        self.assertIn("| 56 | cudnn\\_nchw | resident | fp16 | no reading | 38% (3) | 54% (3) | – |", self.text)

    def test_utilization_not_sampled(self):
        document = support.conv_document()
        document["studies"]["conv2d"]["utilization"] = {"available": False,
                                                        "reason": "NVML not loaded: libnvidia-ml.so.1 not found"}
        analyse.derive_findings(document, 0)
        text = render.render(document, [], tempfile.gettempdir())
        self.assertIn("## Convolution: GPU utilization against batch (NVML)\n\nNot sampled: NVML not loaded: "
                      "libnvidia-ml.so.1 not found.\n", text)
        batched = render.render(support.batched_document(), [], tempfile.gettempdir())
        self.assertIn("Not sampled: the study binary does not say whether it samples GPU utilization.", batched)

    def test_algorithms(self):
        self.assertIn("cuDNN 9.5.1.", self.text)
        self.assertIn("| 56 | cudnn\\_nchw | fp32 | IMPLICIT\\_PRECOMP\\_GEMM, 0 B | WINOGRAD\\_NONFUSED, 12.0 MiB | "
                      "WINOGRAD\\_NONFUSED, 12.0 MiB | WINOGRAD\\_NONFUSED, 12.0 MiB |", self.text)

    def test_references(self):
        self.assertIn("- torch\\_mlp: bf16\\_mixed at batch 8192: not run: fixture note", self.text)
        self.assertIn("| 1024 | 8192 | 0.95 (2.41 ms vs 2.53 ms) | no reference |", self.text)
        self.assertIn("Target (stated, not checked): within 10% of an equivalent eager PyTorch training step",
                      self.text)
        self.assertIn("| 56 | 256 | 1.03 (3.96 ms vs 3.85 ms) | no study entry | – |", self.text)
        self.assertNotIn("| 28 | 1 |", self.text)  # a layer the study did not sweep
        self.assertIn("Target (stated, not checked): within 5% of torch.nn.functional.conv2d (cudnn.benchmark=True)",
                      self.text)

    def test_references_not_run(self):
        text = render.render(support.mlp_document(), [], tempfile.gettempdir())
        self.assertIn("## MLP training: PyTorch reference\n\nNot run (--no-reference, --cpu-only or --quick).", text)

    def test_failures(self):
        self.assertIn("- cudnn\\_nchw fp16 (resident, transfer\\_pinned; n = 56 (batch 256)): skipped: cuDNN has no "
                      "forward algorithm", self.text)
        self.assertIn("- cublas\\_kernels fp32 (transfer\\_pinned; n = 1024 (batch 8192)): error: "
                      "cudaErrorIllegalAddress", self.text)

    def test_batched_gemm_results_written_before_precision_was_kept(self):
        document = support.batched_document()
        derived = document["studies"]["batched_gemm"]["derived"]
        for row in derived["throughput"] + derived["device_memory"] + derived["crossovers"]:
            del row["precision"]
        del derived["utilization"]
        text = render.render(document, [], tempfile.gettempdir())
        self.assertIn("| 64 | cublas\\_strided | resident | 6.0 MiB (batch 1) | 48.0 KiB (batch 1024) |", text)
        self.assertNotIn("GPU utilization", text)
        if charts.load_pyplot() is not None:
            with tempfile.TemporaryDirectory() as out:
                self.assertEqual(len(plots.write_plots(document["studies"], out)["batched_gemm"]), 2)

    def test_text_from_files_is_escaped(self):
        document = support.conv_document()
        study = document["studies"]["conv2d"]
        study["layers"][3]["role"] = "conv_x *bold* <b>"
        study["algorithms"]["7"] = "WINO|GRAD"
        analyse.derive_findings(document, 0)
        text = render.render(document, [], tempfile.gettempdir())
        self.assertIn("(conv\\_x \\*bold\\* \\<b\\>: 64", text)
        self.assertIn("WINO\\|GRAD, 12.0 MiB", text)


@unittest.skipUnless(charts.load_pyplot() is not None, "matplotlib is not installed for this Python")
class PlotsTest(unittest.TestCase):
    def test_one_chart_per_size(self):
        studies = {**support.mlp_document()["studies"], **support.conv_document()["studies"]}
        with tempfile.TemporaryDirectory() as out:
            found = plots.write_plots(studies, out)
            # conv2d's 10 series a size split by precision, the CPU on each chart
            self.assertEqual({study: [os.path.basename(p) for p in paths] for study, paths in found.items()},
                             {"mlp_training": ["mlp_training_throughput_n1024.png"],
                              "conv2d": [f"conv2d_throughput_n{n}_{precision}.png" for n in (7, 56)
                                         for precision in ("fp16", "fp32")]})
            for path in [path for paths in found.values() for path in paths]:
                with open(path, "rb") as stream:
                    self.assertEqual(stream.read(8), b"\x89PNG\r\n\x1a\n")


class OptionsTest(unittest.TestCase):
    def test_batch_studies(self):
        # overlap's, mandelbrot's, roofline's and occupancy's batch axes (chunks, the iteration limit, FMAs per
        # element, blocks in the grid) are no batch of items: batch studies without the batch studies' findings
        self.assertEqual(set(studies.BATCH_NAMES) - {"overlap", "mandelbrot", "roofline", "occupancy"},
                         {study.name for study in studies.STUDIES if study.batch})
        self.assertTrue({"mlp_training", "conv2d"} <= set(studies.NAMES))

    def test_sizes_of_a_study_with_layers(self):
        description = support.load_fixture("conv2d_describe.json")
        self.assertEqual(options.for_study(run_options(sizes=[7, 64, 56]), "conv2d", description).sizes, [7, 56])
        self.assertEqual(options.for_study(run_options(quick=True), "conv2d", description).sizes, [56])
        self.assertEqual(options.for_study(run_options(), "conv2d", description).sizes, [7, 56])  # the suite's
        self.assertEqual(options.for_study(run_options(full=True), "conv2d", description).sizes, [7, 14, 28, 56])
        with self.assertRaises(options.NothingToRun) as caught:
            options.for_study(run_options(sizes=[64]), "conv2d", description)
        self.assertEqual(str(caught.exception), "none of --sizes is one of its layers (n = 7, 14, 28, 56)")
        mlp = support.load_fixture("mlp_training_describe.json")
        self.assertEqual(options.for_study(run_options(sizes=[64]), "mlp_training", mlp).sizes, [64])

    def test_progress_in_samples_per_second(self):
        line = support.outcome(gbench.ConsoleResult(
            CONV.format(impl="cudnn_nhwc", mode="resident", precision="fp16", n=56, batch=32), median_s=64e-6))
        self.assertEqual(line, "median 64.00 us  500.00 k samples/s")
        line = support.outcome(gbench.ConsoleResult(MLP.format(precision="fp32", batch=8192), median_s=2e-3))
        self.assertEqual(line, "median 2.00 ms  4.10 M samples/s")
        line = support.outcome(gbench.ConsoleResult(
            "batched_gemm/cublas_strided/gpu/resident/fp32/n:64/batch:1024", median_s=1e-3,
            counters={"flop": 2 * 64 ** 3 * 1024}))
        self.assertEqual(line, f"median 1.00 ms  {2 * 64 ** 3 * 1024 / 1e-3 / 1e9:.2f} GFLOP/s  1.02 M products/s")


class RunTest(unittest.TestCase):
    """scripts/gpubench run on stand-in gpubench_mlp_training and gpubench_conv2d that replay the fixtures."""

    @classmethod
    def setUpClass(cls):
        cls.machine = FakeMachine(studies=("matmul", "mlp_training", "conv2d"))
        cls.process, cls.out = cls.machine.run("--studies", "mlp_training,conv2d", "--sizes", "56,1024",
                                               "--batches", "1,32,256,512")
        cls.summary = read(os.path.join(cls.out, "summary.md")) if cls.process.returncode == 0 else ""

    @classmethod
    def tearDownClass(cls):
        cls.machine.close()

    def test_progress(self):
        self.assertEqual(self.process.returncode, 0, self.process.stdout + self.process.stderr)
        self.assertIn("mlp_training: 15 entries at 2 sizes and 4 batches", self.process.stdout)  # none at n=56
        self.assertIn("conv2d: 30 entries at 1 sizes and 4 batches", self.process.stdout)  # only the layer n=56
        self.assertRegex(self.process.stdout, r"\] mlp_training/openblas_loops/cpu/host/fp32/n:1024/batch:256  "
                                              r"median [0-9.]+ ms  [0-9.]+ k samples/s\n")

    def test_results(self):
        document = results.load(self.out)
        self.assertEqual(document["run"]["status"], "complete")
        mlp, conv = document["studies"]["mlp_training"], document["studies"]["conv2d"]
        self.assertEqual((mlp["sizes"], conv["sizes"]), ([56, 1024], [56]))
        self.assertEqual({(e["n"], e["batch"]) for e in conv["entries"]}, {(56, b) for b in (1, 32, 256)})
        entry = next(e for e in mlp["entries"] if e["name"] == MLP.format(precision="fp32", batch=512))
        self.assertEqual(entry["gpu_util_samples"], 2)
        self.assertEqual(conv["algorithms"]["6"], "WINOGRAD")
        self.assertEqual(entry["samples"], 512)

    def test_summary_and_plots(self):
        self.assertIn("## Convolution: algorithm chosen and its workspace", self.summary)
        self.assertIn("## MLP training: time per epoch of 60,000 samples", self.summary)
        if charts.load_pyplot() is not None:
            for name in ("mlp_training_throughput_n1024", "conv2d_throughput_n56_fp16", "conv2d_throughput_n56_fp32"):
                self.assertIn(f"`plots/{name}.png`", self.summary)

    def test_sizes_no_layer_has(self):
        process, _ = self.machine.run("--studies", "conv2d", "--sizes", "1024",
                                      "--out", os.path.join(self.machine.directory.name, "no-layer"))
        self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
        self.assertIn("study conv2d not run: none of --sizes is one of its layers (n = 7, 14, 28, 56)", process.stderr)


if __name__ == "__main__":
    unittest.main()
