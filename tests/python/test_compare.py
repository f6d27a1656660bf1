"""The compare command: the price table, reports on built results files (verdicts: test_verdicts)."""
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

import support
from support import ENTRY

from gpubench_driver import studies
from gpubench_driver.lib import noise_model, noise_verdicts, results, stats
from gpubench_driver.lib.noise_model import KindModel, Model
from gpubench_driver.stages import options as opts, prices
from gpubench_driver.commands import cli, compare


def entry(name, samples, status="ok", flop=None, batch=None):
    record = support.blank_entry(name)
    record.update(status=status, repetitions=len(samples), iterations=1)
    if status == "ok":
        record["time_s"] = stats.summarize(samples)
        record["flop"] = flop
        record["flop_per_s"] = flop / record["time_s"]["median"] if flop else None
        record["samples"] = batch
    else:
        record["message"] = "does not fit"
    return record


def document(run_id, gpu_name, studies):
    """A results document holding `studies` ({name: [entries]}), as results.write checks it."""
    doc = results.new_document({"id": run_id, "started": "2026-11-22T23:00:00+00:00", "finished": None,
                                "status": "complete", "command_line": [], "options": {}})
    doc["machine"]["gpus"] = [{"name": gpu_name}]
    for name, entries in studies.items():
        study = results.new_study({"epoch_samples": 60000} if name == "mlp_training" else {}, [64])
        study["entries"] = entries
        doc["studies"][name] = study
    return doc


GEMM = "matmul/cublas/gpu/resident/fp32/n:1024"
SLOW = [0.020, 0.021, 0.022, 0.023, 0.024]
FAST = [0.010, 0.011, 0.012, 0.013, 0.014]


class CompareFilesTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)

    def path(self, name):
        return os.path.join(self.directory.name, name)

    def write(self, name, doc):
        results.write(doc, self.path(name))
        return self.path(name)

    def write_text(self, name, text):
        with open(self.path(name), "w", encoding="utf-8") as stream:
            stream.write(text)
        return self.path(name)

    def main(self, *args):
        """cli.main on compare: (exit status, stderr, compare.md or None)."""
        out = self.path("out")
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(["compare", *args, "--out", out])
        report = os.path.join(out, "compare.md")
        if not os.path.exists(report):
            return status, stderr.getvalue(), None
        with open(report, encoding="utf-8") as stream:
            return status, stderr.getvalue(), stream.read()

    def two_files(self):
        first = self.write("a.json", document("run-a", "GPU A", {"matmul": [entry(GEMM, SLOW, flop=2e9)]}))
        second = self.write("b.json", document("run-b", "GPU B", {"matmul": [entry(GEMM, FAST, flop=2e9)]}))
        return first, second

    def test_an_entry_without_a_protocol_is_held_to_the_widest_kind(self):
        status, _, report = self.main(*self.two_files())
        self.assertEqual(status, 0)
        widest, own = noise_verdicts.kind_in(noise_model.load(), None, 0.016)
        self.assertFalse(own)
        # One trial each side: the interval is the model's, and the page says what it can detect.
        self.assertRegex(report, rf"\| {GEMM} \| 22\.00 ms \| 12\.00 ms \| 0\.55x \(0\.\d\dx–0\.\d\dx\) \| "
                                 rf"#2 faster \| \d+\.\d% \(1 vs 1 trials\) \|")
        self.assertIn("1 of 1 entries have one trial on a side", report)
        self.assertIn("run-a GPU A", report)
        with open(self.path("out/compare.json"), encoding="utf-8") as stream:
            record = json.load(stream)
        self.assertEqual(record["comparisons"][0]["counts"], {"same": 0, "faster": 1, "slower": 0, "unclear": 0})
        judged = record["comparisons"][0]["entries"][0]
        self.assertEqual((judged["kind"], judged["kind_known"], judged["trials"]), (widest, False, [1, 1]))
        self.assertGreater(judged["min_detectable_effect"], 0)
        self.assertEqual(record["noise_model"]["file"], "scripts/noise_model.json")

    def test_headline_entries_are_the_studies_reference_comparisons(self):
        status, _, report = self.main(*self.two_files())  # GEMM: cuBLAS SGEMM resident, but at n = 1024
        self.assertEqual(status, 0)
        self.assertIn("Headline entries (those each study compares with PyTorch or numpy):\n\nNone shared.", report)
        cublas_4096 = {"impl": "cublas", "mode": "resident", "precision": "fp32", "n": 4096, "batch": None}
        self.assertTrue(studies.is_headline("matmul", cublas_4096))
        self.assertFalse(studies.is_headline("matmul", {**cublas_4096, "n": 1024}))
        self.assertFalse(studies.is_headline("unknown", cublas_4096))

    def test_files_measured_in_trials_get_a_tested_verdict(self):
        def in_trials(medians):
            record = entry(GEMM, medians, flop=2e9)
            record["time_s"]["over"] = "trials"
            record["protocol"] = "throughput"
            return record
        first = self.write("a.json", document("a", "A", {"matmul": [in_trials([0.0220, 0.0221, 0.0219])]}))
        second = self.write("b.json", document("b", "B", {"matmul": [in_trials([0.0120, 0.0121, 0.0119])]}))
        status, _, report = self.main(first, second)
        self.assertEqual(status, 0)
        self.assertRegex(report, r"\| 0\.55x \(0\.5\dx–0\.5\dx\) \| #2 faster \| \d+\.\d% \(3 vs 3 trials\) \|")
        self.assertIn("| #2 | 0 | 1 | 0 | 0 |", report)  # the counts open the page

    def test_hostile_strings_are_escaped(self):
        hostile = "<script>alert(1)</script> | *x*"
        first = self.write("a.json", document("run|a", hostile, {"matmul": [entry(GEMM, SLOW)]}))
        second = self.write("b.json", document("run-b", "GPU B", {"matmul": [entry(GEMM, FAST)],
                                                                   "x|<b>": [entry("x|<b>/i/gpu/m/p/n:1", FAST)]}))
        status, _, report = self.main(first, second, "--label", "[a](javascript:x)", "--label", "b|c")
        self.assertEqual(status, 0)
        self.assertNotIn("<script>", report)
        self.assertNotIn("<b>", report)
        self.assertIn(r"\<script\>alert(1)\</script\> \| \*x\*", report)
        self.assertIn(r"run\|a", report)
        self.assertIn(r"\[a\](javascript:x)", report)
        self.assertIn(r"b\|c", report)
        self.assertIn(r"study x\|\<b\>: only in #2", report)
        with open(self.path("out/compare.html"), encoding="utf-8") as stream:  # the same page in HTML
            page = stream.read()
        self.assertNotIn("<script>", page)
        self.assertNotIn("<b>", page)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", page)
        self.assertIn("<table>", page)

    def test_different_studies_and_versions_compare_on_what_they_share(self):
        mlp = "mlp_training/cublas_kernels/gpu/resident/fp32/n:1024/batch:256"
        skipped = "matmul/cublas/gpu/resident/fp32/n:16384"
        only_first = "matmul/openblas/cpu/host/fp32/n:64"
        newer = document("new", "H100", {"matmul": [entry(GEMM, SLOW), entry(skipped, SLOW), entry(only_first, SLOW)],
                                          "mlp_training": [entry(mlp, FAST, batch=256)]})
        older = document("old", "V100", {"matmul": [entry(GEMM, FAST), entry(skipped, [], status="skipped")],
                                          "precision": [entry("precision/cublas/gpu/resident/fp16/n:64", FAST)]})
        for key in results.DESCRIBED:  # a file from before the batch studies
            del older["studies"]["matmul"][key]
        status, _, report = self.main(self.write("new.json", newer), self.write("old.json", older))
        self.assertEqual(status, 0)
        self.assertIn("## matmul", report)
        self.assertNotIn("## precision", report)
        self.assertNotIn("## mlp\\_training", report)
        self.assertIn("- study mlp\\_training: only in #1", report)
        self.assertIn("- study precision: only in #2", report)
        self.assertIn("- matmul/cublas/gpu/resident/fp32/n:16384: #1 ok, #2 skipped", report)
        self.assertIn("- matmul/openblas/cpu/host/fp32/n:64: #1 ok, #2 absent", report)

    def test_files_without_repetition_times_still_get_a_ratio(self):
        first, second = (entry(GEMM, SLOW), entry(GEMM, FAST))
        second["time_s"]["samples"] = []  # Google Benchmark aggregates only
        status, _, report = self.main(self.write("a.json", document("a", "A", {"matmul": [first]})),
                                      self.write("b.json", document("b", "B", {"matmul": [second]})))
        self.assertEqual(status, 0)
        self.assertRegex(report, r"\| 0\.55x \(0\.\d\dx–0\.\d\dx\) \| #2 faster \| \d+\.\d% \(1 vs 1 trials\) \|")

    def test_cost_columns_with_a_price_per_file(self):
        first, second = self.two_files()
        status, _, report = self.main(first, second, "--price", f"{first}=3.6", "--price", f"{second}=p5.48xlarge")
        self.assertEqual(status, 0)
        # 22 ms a product at 3.6 USD/h: 0.022 USD per 1000; 2 GFLOP / 22 ms = 0.0909 TFLOP/s over 3.6 USD/h.
        self.assertIn("| 0.022 USD | 0.0253 |", report)
        # One of p5.48xlarge's eight GPUs: 55.04 / 8 = 6.88 USD/h.
        self.assertIn("6.88 USD/h (p5.48xlarge: 55.04 USD/h for 8 H100; the run used 1 of its 8 GPUs)", report)
        self.assertIn("retrieved 2026-01-21", report)

    def test_a_price_for_some_files_only_is_named(self):
        first, second = self.two_files()
        status, _, report = self.main(first, second, "--price", f"{first}=2")
        self.assertEqual(status, 0)
        self.assertIn("only #1 had one", report)
        self.assertNotIn("USD per 1000 GEMMs", report)

    def test_damaged_and_foreign_files_are_clear_errors(self):
        good = self.two_files()[0]
        with open(good, encoding="utf-8") as stream:
            text = stream.read()
        nan, newer, missing = (json.loads(text) for _ in range(3))
        nan["studies"]["matmul"]["entries"][0]["time_s"]["samples"][0] = "NAN"
        newer["schema_version"] = 2
        first = missing["studies"]["matmul"]["entries"][0]
        first["time_s_renamed"] = first.pop("time_s")
        cases = {
            "truncated.json": (text[: len(text) // 2], "damaged or truncated"),
            "foreign.json": ('{"name": "not ours", "version": 3}', "not a gpubench results file"),
            "nan.json": (json.dumps(nan).replace('"NAN"', "NaN"), "NaN is not allowed"),
            "newer.json": (json.dumps(newer), "schema_version"),
            "missing.json": (json.dumps(missing), "time_s"),
        }
        for name, (content, message) in cases.items():
            with self.subTest(name):
                status, error, report = self.main(good, self.write_text(name, content))
                self.assertEqual(status, 1)
                self.assertIn(message, error)
                self.assertIsNone(report)

    def test_an_unreadable_noise_model_is_a_message(self):
        first, second = self.two_files()
        damaged = noise_model.NoiseModelError("cannot read the noise model scripts/noise_model.json: kinds: "
                                              "expected an object")
        with unittest.mock.patch.object(noise_model, "load", side_effect=damaged):
            status, error, report = self.main(first, second)
        self.assertEqual(status, 1)
        self.assertIn("cannot read the noise model", error)
        self.assertIsNone(report)

    def test_usage_errors(self):
        first, second = self.two_files()
        cases = {"one file": ([first], "at least two"),
                 "labels": ([first, second, "--label", "x"], "one per file"),
                 "unknown instance": ([first, second, "--price", f"{first}=p9.huge"], "unknown instance type"),
                 "negative": ([first, second, "--price", f"{first}=-3"], "positive"),
                 "nan": ([first, second, "--price", f"{first}=nan"], "positive"),
                 "not a file compared": ([first, second, "--price", "other.json=3"], "not one of the files"),
                 "no value": ([first, second, "--price", first], "FILE=INSTANCE")}
        for name, (args, message) in cases.items():
            with self.subTest(name):
                status, error, _ = self.main(*args)
                self.assertEqual(status, 2)
                self.assertIn(message, error)

    def test_bash_entry_reports_a_bad_file_without_a_traceback(self):
        good = self.two_files()[0]
        completed = subprocess.run(["bash", ENTRY, "compare", good, self.write_text("bad.json", "{"), "--out",
                                    self.path("out")], capture_output=True, text=True, timeout=120,
                                   env=dict(os.environ, GPUBENCH_PYTHON=sys.executable))
        self.assertEqual(completed.returncode, 1)
        self.assertIn("not valid JSON", completed.stderr)
        self.assertNotIn("Traceback", completed.stderr)


def in_trials(name, medians, protocol="throughput"):
    record = entry(name, list(medians))
    if len(medians) > 1:
        record["time_s"]["over"] = "trials"
    record["protocol"] = protocol
    return record


HEADLINE = "matmul/cublas/gpu/resident/fp32/n:4096"  # a headline entry (studies.is_headline)
# A model of known widths: device-timed entries of 100 us or more steady to 0.5% between trials and 0.3%
# between runs, CPU entries to 5%.
MODEL = Model({"throughput-long": KindModel(0.005, math.inf, 0.003, 0.0),
               "cpu-long": KindModel(0.05, math.inf, 0.0, 0.0)}, {}, {"runs": [{"id": "aa-1"}, {"id": "aa-2"}]})


class ModelVerdictTest(unittest.TestCase):
    """compare.all_verdicts with a model of known widths."""

    def judged(self, first, second):
        sources = [compare.Source(str(n), str(n), document(str(n), "G", {"matmul": entries}))
                   for n, entries in ((1, first), (2, second))]
        return compare.all_verdicts(sources, MODEL)[2]

    def test_one_trial_each_side_is_decided_where_the_model_allows_it(self):
        found = self.judged([in_trials(GEMM, [1e-3]), in_trials(HEADLINE, [2e-3])],
                            [in_trials(GEMM, [1e-3]), in_trials(HEADLINE, [2.2e-3])])
        same, slower = found[("matmul", GEMM)], found[("matmul", HEADLINE)]
        self.assertEqual((same.verdict.verdict, slower.verdict.verdict), (noise_verdicts.SAME, noise_verdicts.SLOWER))
        self.assertEqual((same.trials, same.family, slower.family), ((1, 1), "matmul", compare.HEADLINE_FAMILY))
        # sd of the log ratio: sqrt(2 * (0.005^2 + 0.003^2)) = 0.83%; t quantiles of infinite df.
        self.assertAlmostEqual(same.verdict.comparison.mde, math.expm1(math.log(1.02) + (1.6449 + 0.8416) * 0.008246),
                               places=4)

    def test_more_trials_detect_less(self):
        one = self.judged([in_trials(GEMM, [1e-3])], [in_trials(GEMM, [1e-3])])[("matmul", GEMM)]
        three = self.judged([in_trials(GEMM, [1e-3] * 3)], [in_trials(GEMM, [1e-3] * 3)])[("matmul", GEMM)]
        self.assertLess(three.verdict.comparison.mde, one.verdict.comparison.mde)
        self.assertEqual(three.trials, (3, 3))

    def test_the_headline_family_is_not_changed_by_a_study(self):
        # The headline entry's verdict holds whatever many changed entries its study has.
        headline = [in_trials(HEADLINE, [2e-3])], [in_trials(HEADLINE, [2.1e-3])]
        alone = self.judged(*headline)[("matmul", HEADLINE)]
        others = [in_trials(f"matmul/cublas/gpu/resident/fp32/n:{n}", [1e-3]) for n in range(100, 140)]
        crowded = self.judged(headline[0] + others, headline[1] + others)[("matmul", HEADLINE)]
        self.assertEqual(alone.verdict.verdict, crowded.verdict.verdict)
        self.assertEqual(alone.verdict.comparison.p_beyond, crowded.verdict.comparison.p_beyond)

    def test_unclear_says_what_would_decide_it(self):
        # CPU entries, 5% noise between trials: 12% slower in three trials is not yet told from the 5% band.
        found = self.judged([in_trials("matmul/openblas/cpu/host/fp32/n:64", [1.0, 1.0, 1.0], "cpu")],
                            [in_trials("matmul/openblas/cpu/host/fp32/n:64", [1.12, 1.12, 1.12], "cpu")])
        (judged,) = found.values()
        self.assertEqual(judged.verdict.verdict, noise_verdicts.UNCLEAR)
        self.assertEqual(judged.verdict.advice, "1 more trial of each side")  # the median of 4: 0.298 of sigma_w^2
        self.assertIn(f"unclear: {judged.verdict.advice}", compare._verdict_text(judged, 2))


class PriceTableTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)

    def table(self, text):
        path = os.path.join(self.directory.name, "prices.json")
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return path

    def test_shipped_table_is_dated_and_sourced_per_instance(self):
        table = prices.load_price_table(prices.DEFAULT_PRICES)
        self.assertIn("check current prices", table["note"])
        for name, record in table["instances"].items():
            self.assertTrue(record["retrieved"] and record["source"] and record["gpu_model"], name)
        # A one-GPU run on an 8-GPU instance costs an eighth of it; a per-GPU-hour quote is taken as it is.
        self.assertAlmostEqual(prices.instance_gpu_price(table["instances"]["p5.48xlarge"]), 55.04 / 8)
        self.assertAlmostEqual(prices.instance_gpu_price(table["instances"]["runpod-h200"]), 4.59)

    def assert_refused(self, text, message):
        with self.assertRaises(prices.PriceTableError) as caught:
            prices.load_price_table(self.table(text))
        self.assertIn(message, str(caught.exception))

    def test_errors(self):
        def instances(body):
            return json.dumps({"schema": "gpubench-prices", "instances": body})
        self.assert_refused("{", "not valid JSON")
        self.assert_refused('{"schema": "other"}', "not a price table")
        self.assert_refused(instances([]), "instances")
        dated = {"gpus": 8, "gpu_model": "H100", "source": "a page", "retrieved": "2026-01"}
        self.assert_refused(instances({"x": {**dated, "usd_per_hour": -1}}), "instances.x.usd_per_hour")
        self.assert_refused(instances({"x": {**dated, "usd_per_hour": "3"}}), "positive number")
        self.assert_refused(instances({"x": 3}), "instances.x")
        self.assert_refused(instances({"x": {**dated, "usd_per_hour": 1, "usd_per_gpu_hour": 1}}), "exactly one of")
        self.assert_refused(instances({"x": {**dated, "usd_per_hour": 1, "gpus": 0}}), "instances.x.gpus")
        self.assert_refused(instances({"x": {**dated, "usd_per_hour": 1, "source": ""}}), "instances.x.source")
        self.assert_refused(instances({"x": {**dated, "usd_per_hour": 1}}).replace(": 1}", ": NaN}"), "not valid JSON")
        with self.assertRaises(prices.PriceTableError):
            prices.load_price_table(os.path.join(self.directory.name, "absent.json"))

    def test_a_broken_table_is_only_read_when_an_instance_is_named(self):
        sources = [compare.Source("a.json", "a", {}), compare.Source("b.json", "b", {})]
        broken = self.table("{")
        prices.apply_prices(sources, ["a.json=1.5", "b.json=2"], broken)
        self.assertEqual([s.usd_per_hour for s in sources], [1.5, 2.0])
        with self.assertRaises(prices.PriceTableError):
            prices.apply_prices(sources, ["a.json=p5.48xlarge"], broken)
        with self.assertRaises(opts.UsageError):
            prices.apply_prices(sources, ["a.json=0"], broken)


class CostTest(unittest.TestCase):
    def test_formulas(self):
        gemm = entry(GEMM, [0.01], flop=1e11)  # 10 TFLOP/s
        self.assertAlmostEqual(prices.usd_per_1000_products(gemm, 3.6), 0.01)
        self.assertAlmostEqual(prices.tflops_per_usd_hour(gemm, 2.0), 5.0)
        mlp = entry("mlp_training/k/gpu/resident/fp32/n:1024/batch:1000", [0.1], batch=1000)  # 10k samples/s
        self.assertAlmostEqual(prices.usd_per_epoch(mlp, 60000, 3.6), 0.006)
        self.assertIsNone(prices.usd_per_epoch(mlp, None, 3.6))



if __name__ == "__main__":
    unittest.main()


def _source(medians):
    """A compare.Source of one study whose entries have the given {name: (device, median s)}."""
    entries = [{"name": name, "device": device, "status": "ok", "time_s": {"median": median}}
               for name, (device, median) in medians.items()]
    return compare.Source("p", "l", {"studies": {"matmul": {"entries": entries}}})


class AgreementTest(unittest.TestCase):
    def test_offsets_per_group_and_band(self):
        first = _source({"a": ("cpu", 1.0), "b": ("gpu", 1e-5), "c": ("gpu", 1e-3), "d": ("gpu", 2e-3)})
        other = _source({"a": ("cpu", 1.5), "b": ("gpu", 1.01e-5), "c": ("gpu", 1.04e-3), "e": ("gpu", 1.0)})
        rows = {row["group"]: row for row in compare.agreement([first, other])}
        self.assertEqual(rows["every entry"]["entries"], 3)  # d and e are not in both
        self.assertAlmostEqual(rows["every entry"]["median_offset"], 0.04)
        self.assertAlmostEqual(rows["every entry"]["within"][0.02], 1 / 3)
        self.assertAlmostEqual(rows["every entry"]["within"][0.05], 2 / 3)
        self.assertEqual(rows["CPU"]["entries"], 1)
        self.assertEqual(rows["GPU, 100 us or more"]["entries"], 1)
        self.assertAlmostEqual(rows["GPU, 100 us or more"]["median_offset"], 0.04)

    def test_an_entry_not_ok_in_either_file_is_left_out(self):
        first = _source({"a": ("gpu", 1.0)})
        other = _source({"a": ("gpu", 2.0)})
        other.document["studies"]["matmul"]["entries"][0]["status"] = "error"
        rows = compare.agreement([first, other])
        self.assertEqual([row["entries"] for row in rows], [0, 0, 0, 0])
        self.assertIsNone(rows[0]["median_offset"])
