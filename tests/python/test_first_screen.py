"""The report's first screen: headline figures with their intervals, the health check against
expected ranges, the claims registry, and the page that leads with them. Inputs: a committed H200
run of the default suite, trimmed into a fixture (fixtures/runs/README.md; read-only), and changed
copies of it."""
import copy
import math
import os
import statistics
import subprocess
import sys
import tempfile
import unittest

from support import ENTRY, fixture

from gpubench_driver.lib import document as document_blocks, expected, figures, html_report
from gpubench_driver.lib.document import Panel
from gpubench_driver.lib.noise_model import KindModel, Model
from gpubench_driver.stages import analyse, claims, headline, health, journal, render, render_first_screen
from gpubench_driver.commands.expected import model_records

H200_RUN = fixture("runs/aa-h200-20261124/h200-aa-a-20261124/results.json.gz")
SHEETS = figures.load_datasheets()


def derived(document):
    analyse.derive_findings(document, 0)
    return document


def h200():
    return derived(journal.load(H200_RUN))


def by_key(document):
    return {row["key"]: row for row in document["findings"]["headline"]["figures"]}


def twice_as_slow(document, memory):
    """The transfer study's copies from `memory`, every one of their times doubled."""
    for entry in document["studies"]["transfer"]["entries"]:
        if entry["mode"] == memory and entry["status"] == "ok":
            for times in [entry["time_s"]] + [trial["time_s"] for trial in entry.get("trials") or []]:
                for key in ("median", "min", "max", "q1", "q3", "mean"):
                    if times.get(key) is not None:
                        times[key] *= 2
                times["samples"] = [value * 2 for value in times.get("samples") or []]


class HeadlineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.document = h200()
        cls.figures = by_key(cls.document)

    def test_every_question_has_its_figure(self):
        for key in ("rate/fp32", "rate/tf32", "rate/fp16", "rate/bf16", "rate/fp8_e4m3", "rate/int8",
                    "memory_bandwidth", "link/h2d/pinned", "link/h2d/pageable", "link/d2h/pinned",
                    "link/d2h/pageable", "crossover/matmul/resident", "crossover/matmul/transfer_pinned",
                    "mlp_epoch/gpu", "mlp_epoch/cpu", "energy/fp32"):
            self.assertIn(key, self.figures)

    def test_the_peak_is_the_findings_peak_with_its_trials_interval(self):
        peak = next(row for row in self.document["findings"]["roofline"]["peaks"] if row["precision"] == "fp32")
        row = self.figures["rate/fp32"]
        self.assertEqual(row["value"], peak["flop_per_s"])
        self.assertLessEqual(row["low"], row["value"])
        self.assertGreaterEqual(row["high"], row["value"])
        self.assertLess(row["low"], row["high"])

    def test_fractions_are_of_the_datasheet_and_the_link(self):
        sheet = SHEETS["NVIDIA H200"]
        row = self.figures["rate/bf16"]
        self.assertAlmostEqual(row["fraction_of_reference"], row["value"] / sheet["peak_flop_per_s"]["bf16"])
        memory = self.figures["memory_bandwidth"]
        self.assertAlmostEqual(memory["fraction_of_reference"], memory["value"] / sheet["memory_bytes_per_s"])
        link = self.document["studies"]["transfer"]["derived"]["link"]["bytes_per_s"]
        row = self.figures["link/h2d/pinned"]
        self.assertAlmostEqual(row["fraction_of_reference"], row["value"] / link)
        self.assertLess(row["fraction_of_reference"], 1)

    def test_a_peak_on_the_cuda_cores_alone_is_held_to_the_rate_without_tensor_cores(self):
        document = h200()
        peak = next(row for row in document["findings"]["roofline"]["peaks"] if row["precision"] == "fp32")
        entry = figures.entry_of(document, peak)
        entry["tensor_cores"] = 0
        sheet = {**SHEETS["NVIDIA H200"], "peak_flop_per_s_without_tensor_cores": {"fp32": 50e12}}
        row = next(f for f in headline.peak_rates(document, sheet) if f["key"] == "rate/fp32")
        self.assertEqual(row["reference"]["what"], "datasheet, without tensor cores")
        self.assertAlmostEqual(row["fraction_of_reference"], row["value"] / 50e12)

    def test_an_unknown_model_has_no_datasheet_fraction(self):
        document = journal.load(H200_RUN)
        document["machine"]["gpus"][0]["name"] = "Some Other GPU"
        derived(document)
        self.assertIsNone(document["findings"]["headline"]["datasheet"])
        self.assertIsNone(by_key(document)["rate/fp32"]["fraction_of_reference"])
        self.assertEqual(document["findings"]["health"]["verdict"], health.NOT_JUDGED)

    def test_a_run_without_the_gpu_part_has_only_cpu_figures(self):
        document = journal.load(H200_RUN)
        for study in document["studies"].values():
            study["entries"] = [entry for entry in study["entries"] if entry["device"] == "cpu"]
        document["gpu"] = {"available": False, "reason": "no NVIDIA driver"}
        derived(document)
        devices = {row["device"] for row in document["findings"]["headline"]["figures"]}
        self.assertEqual(devices, {"cpu"})
        self.assertEqual(document["findings"]["health"]["verdict"], health.NOT_JUDGED)


def figure(value, low, high, better="higher", timed_as=figures.THROUGHPUT, key="rate/fp32", median_s=1e-3):
    row = figures.figure(key, "x", value, (low, high), "FLOP/s", better, timed_as)
    row["between_runs"] = {"protocol": timed_as.split(":")[0], "median_s": median_s, "trial_values": []}
    return row


# Runs that agree closely: the noise model's margin, not the range's own scatter, decides.
RANGE = {"values": [100.0, 100.2, 100.4], "runs": ["a", "b", "c"]}
SCATTERED = {"values": [90.0, 100.0, 110.0], "runs": ["a", "b", "c"]}
# A noise model of known widths: device-timed entries 0.5% between trials and 0.3% between runs, host-observed
# calls 3% and 2%. The margins beyond a range: 2% + 1.645 * sqrt(2 * (0.005^2 + 0.003^2)) = 3.36%; 5% + 8.4%.
MODEL = Model({"throughput-long": KindModel(0.005, math.inf, 0.003, 0.0),
               "latency-long": KindModel(0.03, math.inf, 0.02, 0.0)}, {}, {"runs": []})


def judge(row, found_range=RANGE, run_id=None):
    return health.judge(row, found_range, MODEL, run_id)


class JudgeTest(unittest.TestCase):
    def test_within_the_range_and_its_margin_is_as_expected(self):
        found = judge(figure(97.0, 96.8, 97.2))
        self.assertEqual(found["status"], health.AS_EXPECTED)
        self.assertEqual(found["kind"], "throughput-long")
        sd = math.sqrt(2 * 0.005 ** 2 + 2 * 0.003 ** 2)
        self.assertAlmostEqual(found["margin"], math.expm1(math.log(1.02) + 1.6449 * sd), places=4)

    def test_below_when_even_its_best_end_falls_short(self):
        found = judge(figure(90.0, 89.0, 91.0))
        self.assertEqual(found["status"], health.BELOW)
        self.assertAlmostEqual(found["by"], 1 - 90.0 / 100.2)

    def test_a_range_that_scatters_widens_the_margin_to_its_prediction_bound(self):
        # 90, 100, 110: log sd 0.1003; t(0.99, 2 df) = 6.9646; the bound exp(mean - 6.9646 * sd * sqrt(4/3))
        # is 44.6, 50.4% under the range's lowest run. The model's margin alone (3.4%) would call 80 below.
        logs = [math.log(value) for value in SCATTERED["values"]]
        bound = math.exp(statistics.fmean(logs) - 6.9646 * statistics.stdev(logs) * math.sqrt(4 / 3))
        found = judge(figure(80.0, 79.0, 81.0), SCATTERED)
        self.assertEqual(found["status"], health.AS_EXPECTED)
        self.assertAlmostEqual(found["margin"], 1 - bound / 90.0, places=3)
        self.assertEqual(judge(figure(40.0, 39.0, 41.0), SCATTERED)["status"], health.BELOW)
        # lower is better (a latency): the bound lies above the range's highest run
        slow = judge(figure(200.0, 199.0, 201.0, better="lower", timed_as=figures.LATENCY), SCATTERED)
        self.assertEqual(slow["status"], health.AS_EXPECTED)
        self.assertAlmostEqual(slow["margin"], math.exp(statistics.fmean(logs) + 6.9646 * statistics.stdev(logs)
                                                        * math.sqrt(4 / 3)) / 110.0 - 1, places=3)

    def test_a_wide_interval_reaching_the_range_is_not_below(self):
        self.assertEqual(judge(figure(90.0, 80.0, 99.0))["status"], health.AS_EXPECTED)

    def test_host_paced_figures_have_the_wider_margin_of_their_kind(self):
        self.assertEqual(judge(figure(93.0, 93.0, 93.0, timed_as=figures.LATENCY))["status"], health.AS_EXPECTED)
        self.assertEqual(judge(figure(93.0, 93.0, 93.0))["status"], health.BELOW)

    def test_lower_is_better_turns_the_test_round(self):
        self.assertEqual(judge(figure(120.0, 118.0, 122.0, better="lower"))["status"], health.BELOW)
        self.assertEqual(judge(figure(80.0, 79.0, 81.0, better="lower"))["status"], health.ABOVE)

    def test_a_figure_without_direction_or_range_is_not_judged(self):
        self.assertEqual(judge(figure(1.0, 1.0, 1.0, better=None))["status"], health.NOT_JUDGED)
        self.assertEqual(judge(figure(1.0, 1.0, 1.0), None)["status"], health.NOT_JUDGED)

    def test_the_run_judged_is_left_out_of_its_range(self):
        # The run "self" measured 60 and is one of the range's runs: with it the range reaches 60.
        with_itself = {"values": [100.0, 101.0, 102.0, 60.0], "runs": ["a", "b", "c", "self"]}
        self.assertEqual(judge(figure(60.0, 60.0, 60.0), with_itself)["status"], health.AS_EXPECTED)
        found = judge(figure(60.0, 60.0, 60.0), with_itself, run_id="self")
        self.assertEqual((found["status"], found["runs"], found["left_out"]), (health.BELOW, 3, True))
        self.assertEqual(found["expected"], {"min": 100.0, "median": 101.0, "max": 102.0})

    def test_fewer_than_three_other_runs_fall_back_to_the_datasheet(self):
        found = judge(figure(60.0, 60.0, 60.0), run_id="c")
        self.assertEqual((found["status"], found["runs"], found["left_out"]), (health.DATASHEET_ONLY, 2, True))
        self.assertEqual(judge(figure(60.0, 60.0, 60.0), {"values": [100.0], "runs": ["a"]})["status"],
                         health.DATASHEET_ONLY)
        self.assertEqual(render_first_screen.health_text(found), "no range (2 other run(s) at this point)")
        with_sheet = {**figure(60.0, 60.0, 60.0), "fraction_of_reference": 0.6}  # the headline's fraction stands in
        self.assertEqual(render_first_screen.health_text(judge(with_sheet, run_id="c")),
                         "datasheet only (2 other run(s) at this point)")


def as_other_runs(ranges, count=3):
    """The ranges with each value as measured by `count` runs other than the one it came from."""
    found = copy.deepcopy(ranges)
    for record in found.values():
        record["runs"] = [{"id": f"other-{index}"} for index in range(count)]
        for points in record["figures"].values():
            for point in points.values():
                point.update(values=point["values"] * count, runs=[f"other-{index}" for index in range(count)])
    return found


class HealthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.own = model_records([H200_RUN])
        cls.ranges = as_other_runs(cls.own)

    def test_a_run_that_is_its_ranges_only_source_is_not_judged_by_them(self):
        found = health.derive_health(h200(), self.own)
        self.assertEqual((found["verdict"], found["left_out"], found["runs"]),
                         (health.NOT_JUDGED, "h200-aa-a-20261124", []))
        self.assertIn("fewer than 3 committed runs of NVIDIA H200 other than this one", found["why"])
        self.assertTrue(found["figures"])
        self.assertTrue(all(row["status"] == health.DATASHEET_ONLY for row in found["figures"]))

    def test_a_figure_measured_at_another_point_is_not_judged(self):
        document = h200()
        row = by_key(document)["rate/fp32"]
        self.assertIsNotNone(expected.figure_range(self.own["NVIDIA H200"], row))
        self.assertIsNone(expected.figure_range(self.own["NVIDIA H200"], {**row, "where": "n=1024"}))

    def test_a_run_against_its_own_range_is_as_expected(self):
        found = health.derive_health(h200(), self.ranges)
        self.assertEqual(found["verdict"], health.AS_EXPECTED)
        self.assertTrue(found["figures"])
        self.assertTrue(all(row["status"] == health.AS_EXPECTED for row in found["figures"]))

    def test_slow_copies_on_a_gen4_link_are_below_with_the_link_as_cause(self):
        document = journal.load(H200_RUN)
        document["machine"]["gpus"][0]["pcie.link.gen.max"] = 4
        twice_as_slow(document, "pinned")
        found = health.derive_health(derived(document), self.ranges)
        self.assertEqual(found["verdict"], health.BELOW)
        below = {row["key"]: row for row in found["figures"] if row["status"] == health.BELOW}
        self.assertIn("link/h2d/pinned", below)
        self.assertTrue(any("Gen4" in cause for cause in below["link/h2d/pinned"]["causes"]))
        self.assertNotIn("rate/fp32", below)

    def test_slow_pageable_copies_are_the_hosts_and_leave_the_gpu_as_expected(self):
        document = journal.load(H200_RUN)
        twice_as_slow(document, "pageable")
        found = health.derive_health(derived(document), self.ranges)
        self.assertEqual(found["verdict"], health.AS_EXPECTED)
        below = {row["key"]: row for row in found["figures"] if row["status"] == health.BELOW}
        self.assertIn("link/h2d/pageable", below)
        self.assertEqual(below["link/h2d/pageable"]["bound"], "host")
        self.assertEqual(below["link/h2d/pageable"]["causes"], [health.HOST_CAUSE])
        self.assertEqual(found["host_below"], len(below))
        self.assertIn("host-bound figures below: link/h2d/pageable", health.verdict_line(found))
        page = document_blocks.to_markdown(render_first_screen.health_section({"findings": {"health": found}}))
        self.assertIn("**Health: as expected.**", page)
        self.assertIn("Host-bound figures below their range: link/h2d/pageable", page)

    def test_a_lowered_power_limit_and_other_processes_are_problems(self):
        document = h200()
        document["machine"]["gpus"][0]["power.limit"] = 400.0
        document["machine"]["gpu_processes"] = [{"pid": 1, "name": "x", "used_memory_mib": 10}]
        found = health.derive_health(document, self.ranges)
        failing = {check["check"] for check in found["checks"] if not check["ok"]}
        self.assertEqual(failing, {"power_limit", "processes"})
        self.assertEqual(found["verdict"], health.BELOW)
        # The page says the figures held and which check failed, not that none of them fell short.
        page = document_blocks.to_markdown(render_first_screen.health_section({"findings": {"health": found}}))
        self.assertIn("Every judged figure lies within the range", page)
        self.assertIn("other process(es) on the GPU", page)
        self.assertNotIn("fall short", page)

    def test_ecc_errors_are_a_problem(self):
        check = health.ecc_check({"ecc.mode.current": "Enabled", "ecc.errors.uncorrected.volatile.total": 3})
        self.assertFalse(check["ok"])
        self.assertTrue(health.ecc_check({"ecc.mode.current": "Enabled",
                                          "ecc.errors.uncorrected.volatile.total": 0})["ok"])

    def test_a_damaged_ranges_file_leaves_the_health_not_judged(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "ranges.json")
            with open(path, "w", encoding="utf-8") as stream:
                stream.write("[" * 100000)
            with self.assertRaises(expected.ExpectedError):
                expected.load(path)


class ExpectedCommandTest(unittest.TestCase):
    def gpubench(self, *args):
        return subprocess.run(["bash", ENTRY, *args], capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, GPUBENCH_PYTHON=sys.executable))

    def test_writes_the_models_ranges_from_the_runs(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "ranges.json")
            done = self.gpubench("expected", H200_RUN, "--file", path)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("NVIDIA H200 from 1 run(s)", done.stdout)
            model = expected.load(path)["NVIDIA H200"]
            self.assertEqual(model["runs"][0]["id"], "h200-aa-a-20261124")
            [(where, found)] = model["figures"]["rate/fp32"].items()
            self.assertEqual(where, "precision: cublas resident n=4096")
            self.assertEqual(found["values"], [found["median"]])

    def test_a_damaged_run_is_a_message_not_a_traceback(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "results.json")
            with open(path, "w", encoding="utf-8") as stream:
                stream.write("{not json")
            done = self.gpubench("expected", path, "--file", os.path.join(directory, "ranges.json"))
            self.assertEqual(done.returncode, 1)
            self.assertIn("gpubench: error:", done.stderr)
            self.assertNotIn("Traceback", done.stderr)


class ClaimsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.document = h200()

    def answer(self, key, document=None):
        claim = next(claim for claim in claims.CLAIMS if claim.key == key)
        return claim.answer(document or self.document)

    def test_every_claim_is_answered_by_the_default_suite(self):
        """Every claim whose studies the run has (the committed run predates the later studies)."""
        found = claims.derive_claims(self.document)
        ran = [claim for claim in claims.CLAIMS if set(claim.studies) <= set(self.document["studies"])]
        self.assertEqual([row["key"] for row in found["answered"]], [claim.key for claim in ran])
        self.assertEqual(found["not_measured"], [claim.text for claim in claims.CLAIMS if claim not in ran])

    def test_the_tensor_core_verdict_follows_the_measured_factor(self):
        document = copy.deepcopy(self.document)
        results = document["studies"]["precision"]["derived"]["tensor_core_claim"]["results"]
        for factor, verdict in ((8.3, claims.CONFIRMED), (5.0, "refuted: the gain is smaller"),
                                (13.0, "refuted: the gain is larger")):
            for row in results:
                row["max_speedup"] = factor
            self.assertEqual(self.answer("tensor_cores", document)["verdict"], verdict)

    def test_the_small_matrix_verdict_reads_the_copies(self):
        found = self.answer("small_matrix")
        speedups = found["numbers"]["speedups"]
        self.assertGreater(speedups["resident"], 1)
        if speedups["transfer_pinned"] > 1 >= speedups["transfer_pageable"]:
            self.assertTrue(found["verdict"].startswith("depends on the host memory"))

    def test_a_run_without_the_study_leaves_its_claim_unanswered(self):
        document = copy.deepcopy(self.document)
        del document["studies"]["overlap"]
        found = claims.derive_claims(document)
        self.assertIn("Pinned memory speeds host-to-device copies and lets them overlap computation",
                      found["not_measured"])


class FirstScreenPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.document = h200()
        cls.page = render.blocks(cls.document, {}, tempfile.gettempdir())

    def test_the_page_opens_with_the_headline_health_and_claims(self):
        panel = self.page[2]
        self.assertIsInstance(panel, Panel)
        titles = [block.text for block in panel.blocks if hasattr(block, "level")]
        self.assertEqual(titles, ["Headline", "Health", "Claims, measured here"])

    def test_the_html_sets_the_first_screen_apart(self):
        text = html_report.render(self.page, [], tempfile.gettempdir())
        self.assertLess(text.index('<section class="first-screen">'), text.index("<h2>Crossover"))

    def test_long_tables_are_folded(self):
        text = html_report.render(self.page, [], tempfile.gettempdir())
        self.assertIn("<details><summary>the table (", text)

    def test_figures_the_run_lacks_are_not_shown(self):
        document = h200()
        del document["studies"]["mlp_training"]
        derived(document)
        text = render.render(document, {}, tempfile.gettempdir())
        self.assertNotIn("MLP training epoch", text)
        self.assertNotIn("n/a", text.split("## Health")[0])


if __name__ == "__main__":
    unittest.main()
