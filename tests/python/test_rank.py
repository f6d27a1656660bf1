"""The rank command: machines side by side on their headline figures, absolute and per dollar."""
import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

import support
from support import SCRIPTS_DIR

from gpubench_driver.lib import document as page, noise_model
from gpubench_driver.commands import cli, rank

# Two committed runs of the default suite (every headline figure), trimmed into fixtures
# (fixtures/runs/README.md), and the quick fixture (three of them).
H200 = support.fixture("runs/aa-h200-20261124/h200-aa-a-20261124/results.json.gz")
H100 = support.fixture("runs/aa-trials3-20261124/h100-aa-b1-20261124/results.json.gz")
QUICK = support.fixture("results_v1.json")


def tables(blocks):
    return [block for block in blocks if isinstance(block, page.Table)]


def column(table, key):
    """The cells of the column headed `key`, one per row."""
    index = table.header.index(key)
    return [row[index] for row in table.rows]


class RankPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runs = rank.load_runs([H200, H100, QUICK])  # read only: findings are derived in memory

    def priced(self, *prices):
        """The runs, each at its price (None: none)."""
        return [dataclasses.replace(run, usd_per_hour=price) for run, price in zip(self.runs, prices)]

    def test_one_row_per_run_labelled_by_run_and_gpu(self):
        figures = tables(rank.blocks(self.runs))[0]
        self.assertEqual(column(figures, "run"), ["h200-aa-a-20261124 (NVIDIA H200)",
                                                  "h100-aa-b1-20261124 (NVIDIA H100 80GB HBM3)",
                                                  "fixture-h100-quick (NVIDIA H100 80GB HBM3)"])

    def test_best_run_is_bold_and_every_run_ranked(self):
        figures = tables(rank.blocks(self.runs))[0]
        # FP16 peak: the H100 690.56 against the H200 656.69 TFLOP/s over three trials each, 5.2% apart, but
        # the ratio's 90% interval (1.008-1.097, the H100's trials 4.5% apart) reaches into the +-2% band of
        # its kind (throughput, 100 us or more): unclear to compare, so within noise here.
        self.assertEqual(column(figures, "rate/fp16"), ["656.69 TFLOP/s ±1.5% (within noise)",
                                                        "690.56 TFLOP/s ±4.5% (within noise)", "—"])
        # FP32 peak: the H100 51.73, the H200 51.24, 1% apart with an interval (1.003-1.016) inside the band:
        # the same, a joint 1st; the fixture's one trial of 31.09 TFLOP/s (a file without protocols: the
        # model's widest kind) 40% below both, beyond its noise: 3rd.
        self.assertEqual(column(figures, "rate/fp32"), ["**51.24 TFLOP/s ±0.0%** (joint 1st)",
                                                        "**51.73 TFLOP/s ±0.7%** (joint 1st)",
                                                        "31.09 TFLOP/s ±1.4% (3rd)"])
        # The GPU epoch: lower is better, the H200's 2.12 ms.
        self.assertEqual(column(figures, "mlp\\_epoch/gpu"),
                         ["**2.12 ms ±0.9%** (1st)", "2.28 ms ±0.7% (2nd)", "—"])
        # Energy: 1.58 against 1.70 J, 7% apart, each +-35% by its window's own uncertainty (which the noise of
        # the entry's time leaves out): their intervals overlap, so within noise.
        self.assertEqual(column(figures, "energy/fp32"),
                         ["1.58 J ±36.0% (within noise)", "1.70 J ±35.2% (within noise)", "—"])
        # A size has no better direction: neither bold nor ranked, a plain integer.
        self.assertEqual(column(figures, "crossover/matmul/resident"), ["70 ±0.0%", "64", "92 ±30.4%"])

    def test_a_run_without_a_figure_shows_a_dash_and_no_run_with_it_no_column(self):
        figures = tables(rank.blocks(self.runs))[0]
        self.assertEqual(column(figures, "memory\\_bandwidth"), ["**3877.6 GB/s ±0.9%** (1st)",
                                                                "2834.0 GB/s ±0.0% (2nd)", "—"])
        alone = rank.blocks(self.runs[2:])
        self.assertEqual(tables(alone)[0].header, ("run", "rate/fp32", "crossover/matmul/resident",
                                                   "crossover/matmul/transfer\\_pinned"))
        self.assertNotIn("n/a", page.to_markdown(alone))
        self.assertIn("No run has a price", page.to_markdown(alone))
        # The columns of a later run follow the first's: the fixture's three, then the H200's others.
        header = tables(rank.blocks([self.runs[2], self.runs[0]]))[0].header
        self.assertEqual(header[:5], ("run", "rate/fp32", "crossover/matmul/resident",
                                      "crossover/matmul/transfer\\_pinned", "rate/tf32"))
        self.assertEqual(len(header), 1 + 18)

    def test_per_dollar_is_the_value_over_the_price(self):
        runs = self.priced(None, 2.5, None)
        record = rank.rank_record(runs)["runs"][1]
        figures = {figure["key"]: figure for figure in record["figures"]}
        per_dollar = {figure["key"]: figure for figure in record["per_dollar"]}
        self.assertEqual(per_dollar["rate/fp32"]["value"], figures["rate/fp32"]["value"] / 2.5)
        self.assertEqual(per_dollar["memory_bandwidth"]["high"], figures["memory_bandwidth"]["high"] / 2.5)
        self.assertAlmostEqual(per_dollar["mlp_epoch/gpu"]["value"], 2.5 * figures["mlp_epoch/gpu"]["value"] / 3600)
        self.assertNotIn("crossover/matmul/resident", per_dollar)  # sizes and energy are not priced
        self.assertNotIn("energy/fp32", per_dollar)
        self.assertEqual(rank.rank_record(runs)["runs"][0]["per_dollar"], [])
        cost = tables(rank.blocks(runs))[1]  # the priced run only
        self.assertEqual(column(cost, "run"), ["h100-aa-b1-20261124 (NVIDIA H100 80GB HBM3)"])
        self.assertEqual(column(cost, "rate/fp32 per USD/h"), ["20.69 TFLOP/s ±0.7%"])  # 51.73 / 2.5

    def test_the_cheaper_run_ranks_first_per_dollar_and_its_price_is_named(self):
        runs = self.priced(3.5, 7.0, None)
        blocks = rank.blocks(runs)
        cost = tables(blocks)[1]
        # 51.73 / 7 = 7.39 against 51.24 / 3.5 = 14.64 TFLOP/s per USD/h.
        self.assertEqual(column(cost, "rate/fp32 per USD/h"), ["**14.64 TFLOP/s ±0.0%** (1st)",
                                                               "7.39 TFLOP/s ±0.7% (2nd)"])
        self.assertEqual(column(cost, "mlp\\_epoch/gpu: USD per epoch"), ["**2.06e-06 USD ±0.9%** (1st)",
                                                                         "4.43e-06 USD ±0.7% (2nd)"])
        self.assertIn("- fixture-h100-quick (NVIDIA H100 80GB HBM3): no price", page.to_markdown(blocks))

    def test_ranks_share_ties_and_need_two_values_and_a_direction(self):
        model = noise_model.load()

        def figures(*values, median_s=None):  # one trial each; no median time: the model's widest kind
            return [None if value is None else {"value": value, "between_runs": {
                "trial_values": [], "protocol": "throughput", "median_s": median_s}} for value in values]
        self.assertEqual(rank.ranks(figures(3.0, None, 5.0, 5.0), "higher", model), {0: 3, 2: 1, 3: 1})
        self.assertEqual(rank.ranks(figures(3.0, 1.0, 2.0), "lower", model), {0: 3, 1: 1, 2: 2})
        self.assertEqual(rank.ranks(figures(1.0, 1.13), "higher", model), {0: 1, 1: 1})  # within noise: one rank
        self.assertEqual(rank.ranks(figures(1.0, 1.13, 2.0), "higher", model), {0: 2, 1: 2, 2: 1})
        # The same 13% from a device-timed entry of 1 ms, a kind the model knows as steady: ranked apart.
        self.assertEqual(rank.ranks(figures(1.0, 1.13, median_s=1e-3), "higher", model), {0: 2, 1: 1})
        self.assertEqual(rank.ranks(figures(3.0, None), "higher", model), {})
        self.assertEqual(rank.ranks(figures(3.0, 1.0), None, model), {})
        self.assertEqual([rank.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 111)],
                         ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "111th"])


class RankCommandTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)
        self.out = self.path("out")

    def path(self, name):
        return os.path.join(self.directory.name, name)

    def gpubench_rank(self, *args):
        """The driver's rank command in its own process, as scripts/gpubench runs the driver."""
        environment = dict(os.environ, PYTHONPATH=SCRIPTS_DIR)
        return subprocess.run([sys.executable, "-m", "gpubench_driver", "rank", *args, "--out", self.out],
                              capture_output=True, text=True, timeout=300, env=environment)

    def test_writes_the_page_the_html_and_the_record(self):
        completed = self.gpubench_rank(H100, QUICK, "--label", "h100", "--label", "quick|fixture",
                                       "--price", f"{H100}=p5.48xlarge")
        self.assertEqual(completed.returncode, 0, completed.stderr)
        self.assertIn(f"rank: {os.path.join(self.out, 'rank.md')}", completed.stdout)
        self.assertEqual(sorted(os.listdir(self.out)), ["rank.html", "rank.json", "rank.md"])
        with open(os.path.join(self.out, "rank.json"), encoding="utf-8") as stream:
            record = json.load(stream)
        self.assertEqual(record["schema"], "gpubench-rank")
        self.assertEqual([run["label"] for run in record["runs"]], ["h100", "quick|fixture"])
        self.assertEqual([run["usd_per_hour"] for run in record["runs"]], [55.04 / 8, None])
        self.assertEqual(record["columns"][0], "rate/fp32")
        with open(os.path.join(self.out, "rank.md"), encoding="utf-8") as stream:
            markdown = stream.read()
        self.assertIn("| quick\\|fixture |", markdown)  # labels are escaped
        self.assertIn("6.88 USD/h (p5.48xlarge: 55.04 USD/h for 8 H100; the run used 1 of its 8 GPUs)", markdown)
        self.assertIn("| **51.73 TFLOP/s ±0.7%** (1st) |", markdown)
        with open(os.path.join(self.out, "rank.html"), encoding="utf-8") as stream:
            self.assertIn("51.73 TFLOP/s ±0.7%", stream.read())

    def test_one_run_is_enough(self):
        completed = self.gpubench_rank(QUICK)
        self.assertEqual(completed.returncode, 0, completed.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.out, "rank.md")))

    def test_an_unreadable_noise_model_is_a_one_line_error(self):
        damaged = noise_model.NoiseModelError("cannot read the noise model scripts/noise_model.json: kinds: "
                                              "expected an object")
        stderr = io.StringIO()
        with unittest.mock.patch.object(noise_model, "load", side_effect=damaged), contextlib.redirect_stderr(stderr):
            status = cli.main(["rank", QUICK, "--out", self.out])
        self.assertEqual(status, 1)
        self.assertIn("gpubench: error: cannot read the noise model", stderr.getvalue())
        self.assertFalse(os.path.exists(os.path.join(self.out, "rank.md")))

    def test_a_damaged_file_is_a_one_line_error(self):
        damaged = self.path("damaged.json")
        with open(damaged, "w", encoding="utf-8") as stream:
            stream.write('{"schema": "gpubench-results", ')
        completed = self.gpubench_rank(QUICK, damaged)
        self.assertEqual(completed.returncode, 1)
        self.assertIn("gpubench: error:", completed.stderr)
        self.assertIn("not valid JSON", completed.stderr)
        self.assertNotIn("Traceback", completed.stderr)
        self.assertFalse(os.path.exists(self.out))

    def test_bad_prices_are_clear_errors(self):
        table = self.path("prices.json")
        with open(table, "w", encoding="utf-8") as stream:
            stream.write('{"schema": "gpubench-prices", "instances": {"x": {"usd_per_hour": -1}}}')
        cases = {"unknown instance": ((QUICK, "--price", f"{QUICK}=p9.huge"), 2, "unknown instance type"),
                 "not a price": ((QUICK, "--price", f"{QUICK}=-3"), 2, "positive"),
                 "not a file ranked": ((QUICK, "--price", "other.json=3"), 2, "not one of the files"),
                 "labels": ((QUICK, "--label", "a", "--label", "b"), 2, "one per file"),
                 "broken table": ((QUICK, "--price", f"{QUICK}=x", "--prices", table), 1, "instances.x")}
        for name, (args, status, message) in cases.items():
            with self.subTest(name):
                completed = self.gpubench_rank(*args)
                self.assertEqual(completed.returncode, status, completed.stderr)
                self.assertIn(message, completed.stderr)
                self.assertNotIn("Traceback", completed.stderr)


def faster_copy(path, out_path, factor):
    """The results file at path with its FP32 peak entry (matmul cublas resident n=1024) `factor` times as
    fast, written to out_path."""
    with open(path, encoding="utf-8") as stream:
        document = json.load(stream)
    for entry in document["studies"]["matmul"]["entries"]:
        if (entry["impl"], entry["mode"], entry["n"]) == ("cublas", "resident", 1024):
            entry["time_s"] = {key: value / factor if isinstance(value, float) else value
                               for key, value in entry["time_s"].items()}
            entry["time_s"]["samples"] = [value / factor for value in entry["time_s"].get("samples") or []]
            entry["flop_per_s"] *= factor
    with open(out_path, "w", encoding="utf-8") as stream:
        json.dump(document, stream)
    return out_path


class RankWithinNoiseTest(unittest.TestCase):
    """Two runs of one trial whose FP32 peaks are 13% apart, in a file without protocols (the noise model's
    widest kind): within the noise between two runs of one trial, so rank names no 1st."""

    def setUp(self):
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.faster = faster_copy(QUICK, os.path.join(directory.name, "faster.json"), 1.13)

    def test_runs_within_noise_are_not_ranked_apart(self):
        runs = rank.load_runs([QUICK, self.faster], ["slower", "faster"])
        cells = column(tables(rank.blocks(runs))[0], "rate/fp32")
        self.assertEqual(cells, ["31.09 TFLOP/s ±1.4% (within noise)", "35.14 TFLOP/s ±1.4% (within noise)"])
        self.assertNotIn("1st", page.to_markdown(rank.blocks(runs)))

    def test_a_difference_beyond_noise_is_ranked(self):
        runs = rank.load_runs([QUICK, faster_copy(QUICK, self.faster, 2.0)], ["slower", "faster"])
        cells = column(tables(rank.blocks(runs))[0], "rate/fp32")
        self.assertEqual(cells, ["31.09 TFLOP/s ±1.4% (2nd)", "**62.19 TFLOP/s ±1.4%** (1st)"])


if __name__ == "__main__":
    unittest.main()
