"""The precision study's outputs on a hand-written fixture (an A100-like GPU: FP8 skipped, one
wrong result, a NaN counter, CPU and GPU entries): parsing, findings, summary and plots."""
import copy
import math
import os
import tempfile
import unittest

import support
from support import fixture

from gpubench_driver.lib import charts, gbench, results
from gpubench_driver.studies import precision
from gpubench_driver.stages import analyse, plots, render

FP8_SKIP = "skipped: FP8 needs compute capability 8.9 or newer (this GPU: 8.0)"


def has_matplotlib():
    return charts.load_pyplot() is not None


class ParsingTest(unittest.TestCase):
    def setUp(self):
        output = gbench.load_file(fixture("gbench_precision.json"))
        self.entries = {entry["name"]: entry for entry in support.entries_of(output)}

    def test_axes_and_new_counters(self):
        entry = self.entries["precision/cublas/gpu/resident/bf16/n:8192"]
        self.assertEqual((entry["impl"], entry["device"], entry["mode"], entry["precision"], entry["n"]),
                         ("cublas", "gpu", "resident", "bf16", 8192))
        self.assertEqual(entry["rel_fro_error"], 2.3e-3)
        self.assertEqual(entry["rel_fro_error_normal"], 2.4e-3)
        self.assertEqual(entry["max_rel_error_normal"], 9.8e-3)
        self.assertAlmostEqual(entry["tolerance"], 4 * 2 ** -8 + 16 * 2 ** -24 * math.sqrt(8192))
        self.assertIsNone(entry["threads"])

    def test_median_of_repetitions(self):
        entry = self.entries["precision/cublas/gpu/resident/fp16/n:8192"]
        self.assertEqual(entry["repetitions"], 3)
        self.assertAlmostEqual(entry["time_s"]["median"], 4.20e-3)
        self.assertAlmostEqual(entry["flop_per_s"] / (2 * 8192 ** 3 / 4.20e-3), 1.0)

    def test_nan_counter_becomes_none(self):
        entry = self.entries["precision/cublas/gpu/resident/int8/n:8192"]
        self.assertEqual(entry["status"], "ok")
        self.assertIsNone(entry["max_rel_error_normal"])
        self.assertEqual(entry["rel_fro_error_normal"], 5.6e-3)

    def test_skipped_and_wrong_result(self):
        skipped = self.entries["precision/cublas/gpu/resident/fp8_e4m3/n:4096"]
        self.assertEqual((skipped["status"], skipped["message"]), ("skipped", FP8_SKIP))
        wrong = self.entries["precision/wmma_kernel/gpu/transfer_pinned/fp16/n:8192"]
        self.assertEqual(wrong["status"], "error")
        self.assertTrue(wrong["message"].startswith("wrong result: "))
        self.assertIsNone(wrong["time_s"])

    def test_cpu_entry(self):
        entry = self.entries["precision/openblas/cpu/host/fp64/n:4096"]
        self.assertEqual(entry["threads"], 16)
        self.assertEqual(entry["rel_fro_error"], 0.0)

    def test_new_counters_are_validated(self):
        document = support.precision_document()
        results.validate(document)
        document["studies"]["precision"]["entries"][0]["tolerance"] = "small"
        with self.assertRaises(results.ResultsError) as caught:
            results.validate(document)
        self.assertIn("tolerance", str(caught.exception))


class DerivationTest(unittest.TestCase):
    def setUp(self):
        self.document = support.precision_document()
        self.derived = self.document["studies"]["precision"]["derived"]
        self.rows = {(r["impl"], r["mode"], r["precision"], r["n"]): r for r in self.derived["speedups_over_fp32"]}

    def test_speedup_over_cublas_fp32_same_mode_and_size(self):
        row = self.rows[("cublas", "resident", "bf16", 4096)]
        self.assertAlmostEqual(row["speedup_over_fp32"], 7.60 / 0.58)
        self.assertEqual(row["fp32_impl"], "cublas")
        self.assertEqual((row["rel_fro_error"], row["rel_fro_error_normal"]), (2.3e-3, 2.4e-3))
        pinned = self.rows[("cublas", "transfer_pinned", "fp16", 4096)]
        self.assertAlmostEqual(pinned["speedup_over_fp32"], 9.10 / 1.95)
        self.assertAlmostEqual(self.rows[("cublas", "resident", "fp32", 8192)]["speedup_over_fp32"], 1.0)

    def test_cpu_is_compared_with_openblas_fp32(self):
        self.assertAlmostEqual(self.rows[("openblas", "host", "fp64", 4096)]["speedup_over_fp32"], 0.5)
        self.assertEqual(self.rows[("openblas", "host", "fp64", 4096)]["fp32_impl"], "openblas")
        self.assertIsNone(self.rows[("openblas", "host", "fp32", 4096)]["fraction_of_cublas_rate"])

    def test_wmma_against_cublas_fp32_and_cublas_fp16(self):
        row = self.rows[("wmma_kernel", "resident", "fp16", 4096)]
        self.assertAlmostEqual(row["speedup_over_fp32"], 7.60 / 1.12)
        self.assertAlmostEqual(row["fraction_of_cublas_rate"], 0.56 / 1.12)
        self.assertAlmostEqual(self.rows[("wmma_kernel", "transfer_pinned", "fp16", 4096)]["fraction_of_cublas_rate"],
                               1.95 / 2.60)
        self.assertIsNone(self.rows[("cublas", "resident", "fp16", 4096)]["fraction_of_cublas_rate"])

    def test_failed_entries_have_no_row(self):
        self.assertNotIn(("cublas", "resident", "fp8_e4m3", 4096), self.rows)
        self.assertNotIn(("wmma_kernel", "transfer_pinned", "fp16", 8192), self.rows)

    def test_no_fp32_baseline_no_speedup(self):
        entries = [e for e in self.document["studies"]["precision"]["entries"]
                   if not (e["precision"] == "fp32" and e["n"] == 8192)]
        rows = precision.speedups_over_fp32(entries)
        row = next(r for r in rows if (r["impl"], r["precision"], r["n"]) == ("cublas", "fp16", 8192))
        self.assertIsNone(row["speedup_over_fp32"])
        self.assertIsNone(row["fp32_impl"])

    def test_the_8x_claim_gets_the_largest_measured_speedup(self):
        claim = self.derived["tensor_core_claim"]
        self.assertEqual((claim["impl"], claim["mode"]), ("cublas", "resident"))
        fp16, bf16 = claim["results"]
        self.assertEqual((fp16["precision"], fp16["n"], fp16["sizes_compared"]), ("fp16", 8192, [4096, 8192]))
        self.assertAlmostEqual(fp16["max_speedup"], 58.0 / 4.20)
        self.assertEqual(bf16["n"], 8192)
        self.assertAlmostEqual(bf16["max_speedup"], 58.0 / 4.30)

    def test_claim_without_measurements(self):
        claim = precision.tensor_core_claim([])
        self.assertEqual([r["max_speedup"] for r in claim["results"]], [None, None])

    def test_best_rate_per_precision_and_fraction_of_best(self):
        best = {(r["precision"], r["impl"], r["mode"]): r for r in self.derived["best_rates"]}
        self.assertEqual(best[("int8", "cublas", "resident")]["n"], 8192)
        self.assertAlmostEqual(best[("fp32", "openblas", "host")]["flop_per_s"], 2 * 4096 ** 3 / 0.125)
        entries = {e["name"]: e for e in self.document["studies"]["precision"]["entries"]}
        self.assertAlmostEqual(entries["precision/cublas/gpu/resident/int8/n:8192"]["fraction_of_best_rate"], 1.0)
        self.assertAlmostEqual(entries["precision/cublas/gpu/resident/fp32/n:8192"]["fraction_of_best_rate"],
                               2.25 / 58.0)
        self.assertAlmostEqual(entries["precision/openblas/cpu/host/fp32/n:4096"]["fraction_of_best_rate"], 1.0)
        self.assertIsNone(entries["precision/cublas/gpu/resident/fp8_e4m3/n:4096"]["fraction_of_best_rate"])


class SummaryTest(unittest.TestCase):
    def render(self, document):
        return render.render(document, [], tempfile.gettempdir())

    def test_sections(self):
        text = self.render(support.precision_document())
        self.assertIn("## Precision: is 16-bit tensor-core math up to 8x faster than FP32?", text)
        self.assertIn(f"fp16 up to {58.0 / 4.20:.2f}x (n=8192), bf16 up to {58.0 / 4.30:.2f}x (n=8192)", text)
        self.assertIn("## Precision: speed and accuracy at n = 4096\n", text)
        self.assertIn("## Precision: speed and accuracy at n = 8192 (largest measured)", text)
        self.assertIn("| bf16 | cublas | resident | 580.00 us | 236.96 TFLOP/s | 13.10x | 2.30e-03 | 2.40e-03 | "
                      "1.57e-02 |", text)
        self.assertIn("wmma\\_kernel fp16 (resident) runs at 50% of cublas fp16's rate", text)
        self.assertIn("- cublas fp8\\_e4m3 (resident, transfer\\_pinned; n = 4096, 8192): " + FP8_SKIP, text)
        self.assertIn("- wmma\\_kernel fp16 (transfer\\_pinned; n = 8192): wrong result: relative Frobenius", text)
        self.assertIn("## Precision: best rates", text)
        self.assertIn("Not run (--no-reference, --cpu-only or --quick).", text)
        self.assertNotIn("## Crossover", text)  # the matmul part only with a matmul study

    def test_rows_follow_the_order_of_precisions_gpu_first(self):
        text = self.render(support.precision_document())
        section = text.split("## Precision: speed and accuracy at n = 4096")[1]
        table = next(part for part in section.split("\n\n") if part.startswith("| precision"))
        firsts = [line.split(" | ")[0:2] for line in table.splitlines()[2:]]
        self.assertEqual(firsts[:6], [["| fp32", "cublas"], ["| tf32", "cublas"], ["| fp16", "cublas"],
                                      ["| fp16\\_acc16", "cublas"], ["| bf16", "cublas"], ["| int8", "cublas"]])
        self.assertEqual(firsts[-3:], [["| fp64", "openblas"], ["| fp32", "openblas"], ["| bf16", "openblas"]])

    def test_cpu_bf16_note(self):
        document = support.precision_document()
        self.assertIn("- bf16: this CPU has no BF16 instructions (avx512\\_bf16 or amx\\_bf16)", self.render(document))
        for entry in document["studies"]["precision"]["entries"]:
            if entry["device"] == "cpu" and entry["precision"] == "bf16":
                entry.update(status="skipped", message="skipped: this OpenBLAS build has no BF16 GEMM")
        analyse.derive_findings(document, 0)  # the summary shows what is derived from the entries
        self.assertIn("## Precision: on the CPU\n\n- bf16: skipped: this OpenBLAS build has no BF16 GEMM",
                      self.render(document))
        document["studies"]["precision"]["entries"] = [
            e for e in document["studies"]["precision"]["entries"] if e["precision"] != "bf16"]
        analyse.derive_findings(document, 0)
        self.assertNotIn("## Precision: on the CPU", self.render(document))

    def test_reference_comparison_table(self):
        references = {"torch_precision": {
            "python": "python3", "notes": ["float8_e4m3fn at n=8192: not run: no FP8 here"],
            "results": [{"library": "torch", "version": "2.11.0", "device": "a GPU", "n": 8192, "dtype": "float16",
                         "op": "torch.matmul", "time_s": {"median": 4.0e-3}, "measurement": {"settled": False}},
                        {"library": "torch", "version": "2.11.0", "device": "a GPU", "n": 8192, "dtype": "bfloat16",
                         "op": "torch.matmul", "blas_library": "cublas", "time_s": {"median": 4.3e-3},
                         "measurement": {"settled": True}}]}}
        text = self.render(support.precision_document(references))
        self.assertIn("- torch\\_precision: float8\\_e4m3fn at n=8192: not run: no FP8 here", text)
        self.assertIn("- torch\\_precision: torch 2.11.0 on a GPU, float16 through torch.matmul\n", text)
        self.assertIn("- torch\\_precision: torch 2.11.0 on a GPU, bfloat16 through torch.matmul (cublas)\n", text)
        self.assertIn("| fp16 | 8192 | cublas/resident 4.20 ms | torch float16 4.00 ms | "
                      "1.050 (reference not settled) |", text)
        self.assertIn("| bf16 | 8192 | cublas/resident 4.30 ms | torch bfloat16 4.30 ms | 1.000 |", text)
        self.assertIn("both the sustained device time per call", text)
        self.assertIn("Target (stated, not checked): the same cuBLAS GEMM as PyTorch's", text)
        self.assertNotIn("| fp8\\_e4m3 | 8192 |", text)  # neither the study nor torch measured it
        self.assertNotIn("## Reference libraries", text)  # the matmul part's

    def test_a_comparison_size_the_run_left_out_is_named(self):
        references = {"torch_precision": {"python": "python3", "notes": [], "results": [
            {"library": "torch", "n": 4096, "dtype": "float16", "op": "torch.matmul", "time_s": {"median": 1.0e-3}}]}}
        document = support.precision_document(references)
        study = document["studies"]["precision"]
        study["entries"] = [entry for entry in study["entries"] if entry["n"] == 4096]
        analyse.derive_findings(document, 0)
        text = self.render(document)
        self.assertIn("| fp16 | 4096 |", text)
        self.assertIn("Not compared at n = 8192: this run measured no format there "
                      "(`gpubench run --studies precision --sizes 4096,8192`", text)
        both = self.render(support.precision_document(references))  # 4096 and 8192 measured
        self.assertNotIn("Not compared at", both)

    def test_only_the_largest_size_when_4096_was_not_measured(self):
        document = support.precision_document()
        study = document["studies"]["precision"]
        study["entries"] = [entry for entry in study["entries"] if entry["n"] != 4096]
        analyse.derive_findings(document, 0)
        self.assertEqual([(table["n"], table["largest_measured"]) for table in study["derived"]["tables"]],
                         [(8192, True)])
        text = self.render(document)
        self.assertNotIn("at n = 4096", text)
        self.assertIn("at n = 8192 (largest measured)", text)


@unittest.skipUnless(has_matplotlib(), "matplotlib is not installed for this Python")
class PlotsTest(unittest.TestCase):
    def test_precision_plots_are_pngs(self):
        document = support.precision_document()
        with tempfile.TemporaryDirectory() as out:
            paths = plots.write_plots(document["studies"], out)["precision"]
            # 10 rate series split by input width, the CPU on each chart
            self.assertEqual([os.path.basename(p) for p in paths],
                             ["precision_pareto.png"] + [f"precision_rate_{bits}_bit.png" for bits in (16, 32, 8)])
            for path in paths:
                with open(path, "rb") as stream:
                    self.assertEqual(stream.read(8), b"\x89PNG\r\n\x1a\n")

    def test_pareto_points_are_resident_at_the_largest_size(self):
        rows = support.precision_document()["studies"]["precision"]["derived"]["speedups_over_fp32"]
        points = {(p["impl"], p["precision"]): p["n"] for p in precision.pareto_points(rows)}
        self.assertEqual(points, {("cublas", "fp32"): 8192, ("cublas", "tf32"): 8192, ("cublas", "fp16"): 8192,
                                  ("cublas", "fp16_acc16"): 8192, ("cublas", "bf16"): 8192, ("cublas", "int8"): 8192,
                                  ("wmma_kernel", "fp16"): 8192})

    def test_no_gpu_rows_no_pareto_plot(self):
        document = support.precision_document()
        study = document["studies"]["precision"]
        study["entries"] = [e for e in study["entries"] if e["device"] == "cpu"]
        study["derived"] = precision.derive(study["entries"])
        with tempfile.TemporaryDirectory() as out:
            paths = plots.write_plots(copy.deepcopy(document["studies"]), out)["precision"]
            self.assertEqual([os.path.basename(p) for p in paths], ["precision_rate.png"])


if __name__ == "__main__":
    unittest.main()
