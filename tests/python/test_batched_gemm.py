"""The batched GEMM study in the driver: entry names with a batch axis, the hand-written fixture
(gbench_batched_gemm.json: made-up times of a GPU machine, one wrong result, skips of a batch
that does not fit), the findings along the batch, summary, plots, --batches, and runs of a
stand-in study binary through scripts/gpubench."""
import json
import os
import tempfile
import unittest

import support
from support import make_entry

from gpubench_driver import studies
from gpubench_driver.lib import batch_study, charts, gbench, results, stats
from gpubench_driver.stages import analyse, options, plots, render, runner
from test_run_studies import FakeMachine, read

STRIDED = "batched_gemm/cublas_strided/gpu/resident/fp32/n:64/batch:1024"
GEMM = studies.BY_NAME["batched_gemm"].batch


def batch_entries(times, n=64):
    """Entries at one size from {(impl, device, mode): {batch: median seconds}}."""
    return [make_entry(impl, device, mode, n, seconds, batch=batch)
            for (impl, device, mode), by_batch in times.items() for batch, seconds in by_batch.items()]


def points(rates, spread=None):
    """Throughput points from {batch: products/s}, as batch_study.throughput makes them: one sample
    each (no interval), or with `spread` 21 samples evenly within +-spread of each median time."""
    def interval(median_s):
        samples = [median_s] if spread is None else [median_s * (1 + spread * k / 10) for k in range(-10, 11)]
        return stats.median_interval(stats.summarize(samples)).record()
    return [{"batch": batch, "median_s": batch / rate, "products_per_s": rate, "interval_s": interval(batch / rate)}
            for batch, rate in sorted(rates.items())]


class NamesTest(unittest.TestCase):
    """The naming contract of a journal line of layout 1 (lib/migrate.py, the only reader of names)."""

    def test_batch_axis(self):
        key = gbench.entry_key(STRIDED + "/manual_time")
        self.assertEqual(key, STRIDED)
        self.assertEqual(support.axis_fields(key), {
            "impl": "cublas_strided", "device": "gpu", "mode": "resident", "precision": "fp32", "n": 64, "batch": 1024,
            "axes": {"impl": "cublas_strided", "device": "gpu", "mode": "resident", "precision": "fp32", "n": 64,
                     "batch": 1024}})

    def test_names_without_a_batch_are_unchanged(self):
        fields = support.axis_fields("matmul/cublas/gpu/transfer_pinned/fp32/n:4096")
        self.assertEqual({slot: fields[slot] for slot in gbench.AXES},
                         {"impl": "cublas", "device": "gpu", "mode": "transfer_pinned", "precision": "fp32", "n": 4096,
                          "batch": None})
        self.assertEqual(support.axis_fields("precision/cublas/gpu/resident/bf16/n:8192")["precision"], "bf16")
        entry = support.blank_entry("matmul/openblas/cpu/host/fp32/n:64")
        self.assertIsNone(entry["batch"])
        self.assertIsNone(entry["products"])

    def test_malformed_batch_axes(self):
        for name in ("batched_gemm/a/gpu/resident/fp32/n:64/batch:", "batched_gemm/a/gpu/resident/fp32/n:64/batch:x",
                     "batched_gemm/a/gpu/resident/fp32/n:64/b:8", "batched_gemm/a/gpu/resident/fp32/batch:8"):
            self.assertIsNone(support.axis_fields(name), name)

    def test_progress_rate_counts_every_product(self):
        line = support.outcome(gbench.ConsoleResult(STRIDED, median_s=32.6e-6, counters={"flop": 2.0 * 64 ** 3 * 1024}))
        self.assertIn(f"{2 * 64 ** 3 * 1024 / 32.6e-6 / 1e12:.2f} TFLOP/s", line)

    def test_entries_sort_by_size_then_batch(self):
        names = [STRIDED, "batched_gemm/cublas_strided/gpu/resident/fp32/n:64/batch:8",
                 "batched_gemm/openblas_loop/cpu/host/fp32/n:32/batch:4096"]
        ordered = sorted((support.blank_entry(name) for name in names), key=gbench.entry_order)
        self.assertEqual([(e["n"], e["batch"]) for e in ordered], [(32, 4096), (64, 8), (64, 1024)])


class FixtureParsingTest(unittest.TestCase):
    def setUp(self):
        output = gbench.load_file(support.fixture("gbench_batched_gemm.json"))
        self.assertEqual(output.context["host_name"], "fixture: hand-written, not a measurement")
        self.entries = {entry["name"]: entry for entry in support.entries_of(output)}

    def test_gpu_entry(self):
        entry = self.entries[STRIDED]
        self.assertEqual((entry["status"], entry["n"], entry["batch"], entry["products"]), ("ok", 64, 1024, 1024))
        self.assertAlmostEqual(entry["time_s"]["median"], 32.6e-6)
        self.assertEqual(entry["flop"], 2.0 * 64 ** 3 * 1024)
        self.assertEqual(entry["device_bytes"], 48 * 2 ** 20)
        self.assertIsNone(entry["threads"])

    def test_cpu_entry(self):
        entry = self.entries["batched_gemm/threads_over_batch/cpu/host/fp32/n:256/batch:512"]
        self.assertEqual((entry["threads"], entry["device_bytes"], entry["bytes_transferred"]), (16, None, 0))

    def test_skipped_and_wrong_result(self):
        skipped = self.entries["batched_gemm/cublas_loop/gpu/transfer_pinned/fp32/n:256/batch:1024"]
        self.assertEqual((skipped["status"], skipped["n"], skipped["batch"]), ("skipped", 256, 1024))
        self.assertEqual(skipped["message"], "skipped: does not fit: needs about 1.25 GiB of GPU memory, 0.94 GiB free")
        wrong = self.entries["batched_gemm/threads_over_batch/cpu/host/fp32/n:64/batch:8"]
        self.assertEqual(wrong["status"], "error")
        self.assertTrue(wrong["message"].startswith("wrong result: "))
        self.assertIsNone(wrong["time_s"])

    def test_document_is_valid(self):
        document = support.batched_document()
        results.validate(document)
        study = document["studies"]["batched_gemm"]
        self.assertEqual((study["default_batches"][-1], study["batches"]), (4096, [1, 8, 64, 512, 1024]))
        study["entries"][0]["batch"] = "8"
        with self.assertRaises(results.ResultsError) as caught:
            results.validate(document)
        self.assertIn("entries[0].batch", str(caught.exception))


class CrossoverTest(unittest.TestCase):
    CPU, GPU = ("openblas_loop", "cpu", "host"), ("cublas_strided", "gpu", "resident")

    def test_bracket_along_the_batch(self):
        entries = batch_entries({self.CPU: {1: 1.0, 2: 2.0, 4: 4.0}, self.GPU: {1: 2.0, 2: 1.0, 4: 1.0}})
        [found] = batch_study.crossovers(entries)
        self.assertEqual((found["n"], found["mode"], found["lower"], found["upper"]), (64, "resident", 1, 2))
        # speedup 0.5 at batch 1 and 2 at batch 2: log-log interpolation puts 1.0 at sqrt(1 * 2).
        self.assertEqual(found["estimate_batch"], 1)
        self.assertEqual(found["batches_compared"], [1, 2, 4])
        self.assertIn("bracket of measured batches", found["method"])

    def test_one_crossover_per_size_and_mode(self):
        entries = batch_entries({self.CPU: {1: 1.0, 8: 8.0}, self.GPU: {1: 0.5, 8: 9.0},
                                 ("cublas_loop", "gpu", "transfer_pinned"): {1: 2.0, 8: 4.0}})
        entries += batch_entries({self.CPU: {1: 1.0}, self.GPU: {1: 0.5}}, n=256)
        found = {(c["n"], c["mode"]): c for c in batch_study.crossovers(entries)}
        self.assertEqual(set(found), {(64, "resident"), (64, "transfer_pinned"), (256, "resident")})
        self.assertIn("no crossover: the CPU is at least as fast at the largest measured batch (batch=8)",
                      found[(64, "resident")]["method"])
        self.assertEqual((found[(64, "transfer_pinned")]["lower"], found[(64, "transfer_pinned")]["upper"]), (1, 8))
        self.assertIn("at or below batch=1", found[(256, "resident")]["method"])

    def test_best_cpu_is_the_fastest_at_each_batch(self):
        entries = batch_entries({self.CPU: {1: 1.0, 64: 64.0}, ("threads_over_batch", "cpu", "host"): {1: 5.0, 64: 4.0},
                                 self.GPU: {1: 2.0, 64: 5.0}})
        [found] = batch_study.crossovers(entries)
        self.assertIsNone(found["upper"])  # the threads over the batch beat the GPU at 64

    def test_a_batch_measured_on_one_side_only_is_ignored(self):
        entries = batch_entries({self.CPU: {1: 1.0, 8: 8.0, 64: 64.0}, self.GPU: {1: 2.0, 8: 1.0}})
        entries.append(make_entry("cublas_strided", "gpu", "resident", 64, None, status="skipped", batch=64))
        [found] = batch_study.crossovers(entries)
        self.assertEqual((found["upper"], found["batches_compared"]), (8, [1, 8]))

    def test_fixture(self):
        found = {(c["n"], c["mode"]): c for c in support.batched_document()["studies"]["batched_gemm"]["derived"][
            "crossovers"]}
        resident = found[(64, "resident")]
        self.assertEqual((resident["lower"], resident["upper"], resident["gpu_impl"]), (1, 8, "cublas_strided"))
        self.assertEqual(resident["estimate_batch"], 2)  # speedup 3/5 at batch 1, 24/6.21 at batch 8
        self.assertIsNone(found[(64, "transfer_pinned")]["upper"])
        self.assertEqual(found[(256, "transfer_pinned")]["batches_compared"], [1, 8, 64, 512])  # 1024 did not fit


class SaturationTest(unittest.TestCase):
    def test_first_doubling_that_gains_under_5_percent(self):
        self.assertEqual(batch_study.saturation(points({1: 1.0, 2: 1.9, 4: 3.0, 8: 3.1, 16: 3.2}), GEMM), (
            4, "from batch 4 to 8 (2x, 1 doubling): +3.3% per doubling (one sample: no interval: the medians alone)"))

    def test_a_longer_step_counts_per_doubling(self):
        # 1 -> 8 is three doublings of 2x each; 8 -> 16 gains 6%; 16 -> 64 gains 8% over two doublings: 3.9% each.
        batch, note = batch_study.saturation(points({1: 1.0, 8: 8.0, 16: 8.48, 64: 9.16, 128: 9.2}), GEMM)
        self.assertEqual(batch, 16)
        self.assertIn("from batch 16 to 64 (4x, 2 doublings): +3.9% per doubling", note)

    def test_never_reached(self):
        batch, note = batch_study.saturation(points({1: 1.0, 2: 1.9, 4: 3.7}, spread=0.01), GEMM)
        self.assertIsNone(batch)
        self.assertEqual(note, "every measured step gained beyond noise (last step: from batch 2 to 4 (2x, "
                               "1 doubling): +94.7% per doubling)")

    def test_a_gain_within_noise_is_no_gain(self):
        # 20% per doubling, but each time spreads by 30%: the two rates' intervals overlap.
        batch, note = batch_study.saturation(points({1: 1.0, 2: 1.2, 4: 2.4}, spread=0.3), GEMM)
        self.assertEqual(batch, 1)
        self.assertEqual(note, "from batch 1 to 2 (2x, 1 doubling): +20.0% per doubling, within noise")

    def test_the_same_gain_beyond_noise_is_growth(self):
        self.assertEqual(batch_study.saturation(points({1: 1.0, 2: 1.2, 4: 2.4}, spread=0.01), GEMM)[0], None)

    def test_a_small_gain_beyond_noise_saturates(self):
        # 16x for 4.9% in all: 1.2% per doubling; the times spread by 0.1%, so the gain is real but under 5%.
        batch, note = batch_study.saturation(points({256: 1.0, 4096: 1.049, 8192: 3.0}, spread=0.001), GEMM)
        self.assertEqual(batch, 256)
        self.assertRegex(note, r"^from batch 256 to 4096 \(16x, 4 doublings\): \+1\.2% per doubling, below 5% beyond "
                               r"noise \(at most \+1\.2%\)$")

    def test_a_small_gain_within_noise(self):
        batch, note = batch_study.saturation(points({256: 1.0, 4096: 1.049}, spread=0.1), GEMM)
        self.assertEqual(batch, 256)
        self.assertEqual(note, "from batch 256 to 4096 (16x, 4 doublings): +1.2% per doubling, within noise")

    def test_one_batch_has_no_saturation(self):
        self.assertEqual(batch_study.saturation(points({8: 1.0}), GEMM),
                         (None, "fewer than two batches were measured"))

    def test_throughput_rows(self):
        entries = batch_entries({("cublas_strided", "gpu", "resident"): {1: 1e-5, 2: 1.05e-5, 4: 2.05e-5}})
        [row] = batch_study.throughput(entries, GEMM)
        self.assertEqual((row["n"], row["impl"], row["device"], row["mode"]), (64, "cublas_strided", "gpu", "resident"))
        self.assertEqual([point["batch"] for point in row["points"]], [1, 2, 4])
        self.assertAlmostEqual(row["points"][1]["products_per_s"], 2 / 1.05e-5)
        self.assertAlmostEqual(row["points"][1]["flop_per_s"], 2 * 2 * 64 ** 3 / 1.05e-5)
        self.assertEqual((row["saturation_batch"], row["best_batch"]), (2, 4))  # 4 / 2.05e-5 gains 2.4%

    def test_fixture(self):
        rows = {(r["n"], r["impl"], r["mode"]): r
                for r in support.batched_document()["studies"]["batched_gemm"]["derived"]["throughput"]}
        self.assertEqual(rows[(64, "cublas_strided", "transfer_pinned")]["saturation_batch"], 512)
        self.assertIsNone(rows[(64, "cublas_strided", "resident")]["saturation_batch"])
        self.assertEqual(rows[(256, "cublas_strided", "resident")]["saturation_batch"], 64)
        self.assertAlmostEqual(rows[(64, "cublas_strided", "resident")]["best_products_per_s"], 1024 / 32.6e-6)


class LoopRatioTest(unittest.TestCase):
    def test_throughput_over_the_loop(self):
        entries = batch_entries({("cublas_loop", "gpu", "resident"): {1: 5.0, 64: 320.0},
                                 ("cublas_strided", "gpu", "resident"): {1: 6.0, 64: 8.0},
                                 ("cublas_graph", "gpu", "resident"): {64: 80.0},
                                 ("cublas_strided", "gpu", "transfer_pinned"): {64: 10.0}})
        found = batch_study.loop_ratios(entries, GEMM)
        self.assertEqual(found["baseline"], "cublas_loop")
        self.assertEqual([(r["impl"], r["batch"], r["ratio"]) for r in found["rows"]],
                         [("cublas_strided", 1, 5.0 / 6.0), ("cublas_graph", 64, 4.0), ("cublas_strided", 64, 40.0)])
        self.assertEqual(found["largest"], [
            {"n": 64, "mode": "resident", "batch": 64, "impl": "cublas_strided", "ratio": 40.0},
            {"n": 64, "mode": "resident", "batch": 64, "impl": "cublas_graph", "ratio": 4.0}])

    def test_fixture(self):
        found = support.batched_document()["studies"]["batched_gemm"]["derived"]["loop_ratios"]
        largest = {(r["impl"], r["mode"]): r for r in found["largest"]}
        strided = largest[("cublas_strided", "resident")]
        self.assertEqual((strided["n"], strided["batch"]), (64, 1024))
        self.assertAlmostEqual(strided["ratio"], 5120 / 32.6)


class DeviceMemoryTest(unittest.TestCase):
    def test_bytes_per_product(self):
        entries = [make_entry("cublas_strided", "gpu", "resident", 64, 1e-5, batch=8, device_bytes=6 * 2 ** 20),
                   make_entry("openblas_loop", "cpu", "host", 64, 1e-5, batch=8)]
        self.assertEqual(batch_study.device_memory(entries, GEMM), [
            {"n": 64, "batch": 8, "impl": "cublas_strided", "mode": "resident", "precision": "fp32",
             "device_bytes": 6 * 2 ** 20,
             "bytes_per_product": 6 * 2 ** 20 / 8, "operand_bytes_per_product": 12 * 64 ** 2}])


class SummaryTest(unittest.TestCase):
    def setUp(self):
        self.text = render.render(support.batched_document(), [], tempfile.gettempdir())

    def test_crossovers(self):
        self.assertIn("## Batched GEMM: crossover batch (GPU faster than the best CPU)\n\n"
                      "Swept n = 64, 256 and batches 1, 8, 64, 512, 1024", self.text)
        self.assertIn("| 64 | resident | each entry's headline time | 2 | 1 .. 8 | cublas\\_strided | bracket of measured batches; "
                      "estimate by log-log interpolation of the speedup to 1 (where an entry had one sample (no "
                      "interval) its median alone decided) |", self.text)
        self.assertIn("| 64 | transfer\\_pinned | each entry's headline time | none | n/a .. n/a | n/a | no crossover: the CPU is at "
                      "least as fast "
                      "at the largest measured batch (batch=1024) |", self.text)

    def test_loop_ratios(self):
        self.assertIn(f"- cublas\\_strided (resident): up to {5120 / 32.6:.2f}x the products/s of cublas\\_loop "
                      f"(n=64, batch=1024)", self.text)
        self.assertIn("| n | mode | cublas\\_strided / cublas\\_loop: largest | at the largest batch | "
                      "cublas\\_graph / cublas\\_loop: largest | at the largest batch |", self.text)
        self.assertIn(f"| 256 | resident | {5630 / 436:.2f}x (batch 512) |", self.text)  # loop 5.63 ms, strided 436 us

    def test_throughput_and_saturation(self):
        self.assertIn(f"| 64 | cublas\\_strided | resident | {1024 / 32.6e-6 / 1e6:.2f} M products/s | "
                      f"{2 * 64 ** 3 * 1024 / 32.6e-6 / 1e12:.2f} TFLOP/s | 1024 | none: every measured step gained "
                      f"beyond noise (last step: from batch 512 to 1024 (2x, 1 doubling): ", self.text)
        self.assertIn("| 64 | cublas\\_strided | transfer\\_pinned |", self.text)
        # the fixture's entries have one repetition each: no interval, and the summary says so
        self.assertRegex(self.text, r"\| 64 \| cublas\\_strided \| transfer\\_pinned \| [^\n]* \| 512: from batch 512 "
                                    r"to 1024 \(2x, 1 doubling\): \+1\.1% per doubling \(one sample: no interval: the "
                                    r"medians alone\) \|\n")

    def test_memory_per_product(self):
        self.assertIn("| 64 | cublas\\_strided | resident | 6.0 MiB (batch 1) | 48.0 KiB (batch 1024) | 48.0 KiB |",
                      self.text)

    def test_skipped_and_failed(self):
        self.assertIn("## Batched GEMM: skipped and failed entries", self.text)
        self.assertIn("- cublas\\_strided fp32 (resident, transfer\\_pinned; n = 256 (batch 1024)): skipped: does not "
                      "fit: needs about 1.25 GiB of GPU memory, 0.94 GiB free\n", self.text)
        self.assertIn("- threads\\_over\\_batch fp32 (host; n = 64 (batch 8)): wrong result: relative Frobenius error "
                      "0.031", self.text)
        self.assertNotIn("## Crossover (GPU faster", self.text)  # matmul's

    def test_no_reference_comparison(self):
        document = support.batched_document()
        document["references"] = {"numpy": {"note": "skipped"}}
        analyse.derive_findings(document, 0)
        self.assertNotIn("reference_comparison", document["studies"]["batched_gemm"]["derived"])


@unittest.skipUnless(charts.load_pyplot() is not None, "matplotlib is not installed for this Python")
class PlotsTest(unittest.TestCase):
    def test_one_chart_per_size(self):
        with tempfile.TemporaryDirectory() as out:
            paths = plots.write_plots(support.batched_document()["studies"], out)["batched_gemm"]
            self.assertEqual([os.path.basename(p) for p in paths],
                             ["batched_gemm_throughput_n64.png", "batched_gemm_throughput_n256.png"])
            for path in paths:
                with open(path, "rb") as stream:
                    self.assertEqual(stream.read(8), b"\x89PNG\r\n\x1a\n")


class OptionsTest(unittest.TestCase):
    DESCRIPTION = {"implementations": [{"id": "cublas_strided", "modes": ["resident"]}], "default_sizes": [64],
                   "default_batches": [1, 2, 4],
                   "points": {"quick": {"sizes": [32], "batches": [1, 256]}, "suite": {"sizes": [32, 128],
                              "batches": [1, 64, 4096]}, "full": {"sizes": [64], "batches": [1, 2, 4]}}}

    def study_options(self, name="batched_gemm", **changes):
        return options.for_study(support.run_options(**changes), name, self.DESCRIPTION)

    def test_parse(self):
        self.assertEqual(options.parse_positive_list("64,8,1,8", "--batches"), [1, 8, 64])
        for text in ("0", "", "1,,2", "-4", "two"):
            with self.assertRaises(options.UsageError) as caught:
                options.parse_positive_list(text, "--batches")
            self.assertIn("--batches", str(caught.exception))

    def test_batches_of_each_study(self):
        self.assertEqual(self.study_options().batches, [1, 64, 4096])  # the binary's suite points
        self.assertEqual(self.study_options().sizes, [32, 128])
        self.assertEqual(self.study_options(full=True).batches, [1, 2, 4])  # the binary's own default
        self.assertEqual(self.study_options(full=True).sizes, [64])
        self.assertEqual(self.study_options(quick=True).batches, [1, 256])
        self.assertEqual(self.study_options(quick=True).sizes, [32])
        self.assertEqual(self.study_options(quick=True, batches=[3]).batches, [3])
        self.assertEqual(self.study_options().refine_rounds, 0)
        self.assertIsNone(self.study_options("matmul", batches=[3]).batches)

    def test_flags(self):
        flags = runner.study_flags(self.study_options(batches=[1, 8]), [64])
        self.assertEqual(flags[:2], ["--sizes=64", "--batches=1,8"])
        self.assertFalse(any(f.startswith("--batches") for f in runner.study_flags(
            self.study_options("matmul", batches=[1, 8]), [64])))


class RunTest(unittest.TestCase):
    """scripts/gpubench run on a stand-in gpubench_batched_gemm that replays the fixture."""

    @classmethod
    def setUpClass(cls):
        cls.machine = FakeMachine(studies=("matmul", "precision", "batched_gemm"))
        cls.log = os.path.join(cls.machine.directory.name, "invocations.jsonl")
        cls.machine.env["GPUBENCH_FAKE_LOG"] = cls.log
        cls.process, cls.out = cls.machine.run("--studies", "batched_gemm", "--sizes", "64,256",
                                               "--batches", "1,8,64,512")
        cls.summary = read(os.path.join(cls.out, "summary.md")) if cls.process.returncode == 0 else ""

    @classmethod
    def tearDownClass(cls):
        cls.machine.close()

    def test_progress(self):
        self.assertEqual(self.process.returncode, 0, self.process.stdout + self.process.stderr)
        self.assertIn("batched_gemm: 64 entries at 2 sizes and 4 batches", self.process.stdout)
        self.assertIn("[1/64] batched_gemm/openblas_loop/cpu/host/fp32/n:64/batch:1  median 3.00 us",
                      self.process.stdout)
        self.assertIn("batched_gemm/threads_over_batch/cpu/host/fp32/n:64/batch:8  ERROR: wrong result:",
                      self.process.stdout)
        self.assertIn("[64/64]", self.process.stdout)

    def test_one_invocation_per_size_with_every_batch(self):
        with open(self.log, encoding="utf-8") as stream:
            invocations = [json.loads(line) for line in stream]
        runs = [[a for a in args if a.startswith(("--sizes", "--batches"))]
                for args in invocations if any(a.startswith("--benchmark_out=") for a in args)]
        self.assertEqual(runs, [["--sizes=64", "--batches=1,8,64,512"], ["--sizes=256", "--batches=1,8,64,512"]])

    def test_results(self):
        document = results.load(self.out)
        self.assertEqual(document["run"]["status"], "complete")
        self.assertIsNone(document["references"])
        study = document["studies"]["batched_gemm"]
        self.assertEqual((study["sizes"], study["batches"]), ([64, 256], [1, 8, 64, 512]))
        self.assertEqual({(e["n"], e["batch"]) for e in study["entries"]},
                         {(n, b) for n in (64, 256) for b in (1, 8, 64, 512)})
        self.assertEqual(len(study["derived"]["crossovers"]), 4)
        for row in study["derived"]["throughput"]:  # steps of 8 = three doublings each
            self.assertTrue(row["saturation_batch"] in (1, 8, 64) or "per doubling" in row["saturation_note"], row)
        self.assertGreaterEqual(len(study["telemetry"]["samples"]), 1)

    def test_summary_and_plots(self):
        for title in ("Batched GEMM: crossover batch", "Batched GEMM: one batched call against a loop",
                      "Batched GEMM: throughput and saturation", "Batched GEMM: device memory per product",
                      "Batched GEMM: skipped and failed entries"):
            self.assertIn(f"## {title}", self.summary)
        self.assertIn("- batched\\_gemm: SM clock 1980–1980 MHz", self.summary)
        if charts.load_pyplot() is not None:
            for n in (64, 256):
                self.assertIn(f"`plots/batched_gemm_throughput_n{n}.png`", self.summary)
                self.assertTrue(os.path.exists(os.path.join(self.out, "plots", f"batched_gemm_throughput_n{n}.png")))


class BatchesOptionTest(unittest.TestCase):
    def setUp(self):
        self.machine = FakeMachine(studies=("matmul", "precision", "batched_gemm"))

    def tearDown(self):
        self.machine.close()

    def test_batches_go_to_the_batched_study_only(self):
        # The stand-in matmul and precision binaries exit 2 when given --batches.
        process, out = self.machine.run("--sizes", "64", "--batches", "8,1")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        document = results.load(out)
        self.assertEqual(document["run"]["options"]["batches"], [1, 8])
        self.assertEqual({e["batch"] for e in document["studies"]["batched_gemm"]["entries"]}, {1, 8})
        self.assertEqual({e["batch"] for e in document["studies"]["matmul"]["entries"]}, {None})

    def test_batches_without_a_batched_study(self):
        process, out = self.machine.run("--studies", "matmul", "--sizes", "64", "--batches", "8")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertIn(f"WARNING: --batches ignored: no study run has a batch axis ({', '.join(studies.BATCH_NAMES)})",
                      process.stdout)
        self.assertTrue({"batched_gemm", "mlp_training", "conv2d", "overlap"} <= set(studies.BATCH_NAMES))

    def test_bad_batches(self):
        process, _ = self.machine.run("--studies", "batched_gemm", "--batches", "1,0")
        self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
        self.assertIn("--batches: must be a positive integer, got 0", process.stderr)


if __name__ == "__main__":
    unittest.main()
