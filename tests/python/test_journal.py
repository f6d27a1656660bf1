"""The run's journal (journal.py): what a line becomes, and which lines a fold takes."""
import os
import tempfile
import unittest

import support
from support import make_entry

from gpubench_driver.lib import gbench, results, trials
from gpubench_driver.stages import journal

NAME = "matmul/openblas/cpu/host/fp32/n:64"


def line(trial=1, failure=None, samples=(1.0e-3, 1.1e-3, 0.9e-3), name=NAME):
    result = gbench.ConsoleResult(name, median_s=None if failure else 1.0e-3, failure=failure,
                                  counters={} if failure else {"flop": 5.24e5, "rel_fro_error": 1e-7,
                                                               "brand_new_counter": 42.0})
    measured = None if failure else support.measurement(list(samples))
    return journal.record("matmul", trial, "sweep", result, measured, 0.5, support.axis_fields(name))


def document(*entries):
    return {"studies": {"matmul": {"entries": list(entries)}}}


class FoldTest(unittest.TestCase):
    def test_a_missing_entry_is_rebuilt_from_its_line(self):
        found = document()
        self.assertEqual(journal.fold(found, [line()]), 1)
        entry = found["studies"]["matmul"]["entries"][0]
        self.assertEqual((entry["status"], entry["phase"], entry["protocol"]), ("ok", "sweep", "cpu"))
        self.assertAlmostEqual(entry["time_s"]["median"], 1.0e-3)
        self.assertEqual(len(entry["time_s"]["samples"]), 3)
        self.assertEqual(entry["flop"], 5.24e5)
        self.assertEqual(entry["brand_new_counter"], 42.0)  # every counter the console line showed
        self.assertEqual(entry["message"], journal.RECOVERED)
        self.assertEqual(entry["axes"], {"impl": "openblas", "device": "cpu", "mode": "host", "precision": "fp32",
                                         "n": 64})  # the line's own axis fields

    def test_a_line_of_layout_1_takes_its_axes_from_its_name(self):
        """A journal left by a driver from before the lines carried their axes (lib/migrate.py)."""
        old = {key: value for key, value in line().items() if key not in ("layout", "axis_fields")}
        found = document()
        journal.fold(found, [old])
        entry = found["studies"]["matmul"]["entries"][0]
        self.assertEqual((entry["impl"], entry["device"], entry["n"]), ("openblas", "cpu", 64))
        self.assertEqual(entry["axes"], support.axis_fields(NAME)["axes"])

    def test_an_entry_already_saved_is_not_taken_twice(self):
        saved = trials.combine(make_entry("openblas", "cpu", "host", 64, 2e-3), make_entry(
            "openblas", "cpu", "host", 64, 2e-3), 2)
        found = document(saved)
        self.assertEqual(journal.fold(found, [line(trial=1), line(trial=2)]), 0)
        self.assertEqual(trials.count(found["studies"]["matmul"]["entries"][0]), 2)

    def test_a_later_trial_joins_the_saved_ones(self):
        found = document(make_entry("openblas", "cpu", "host", 64, 2e-3))
        self.assertEqual(journal.fold(found, [line(trial=2)]), 1)
        entry = found["studies"]["matmul"]["entries"][0]
        self.assertEqual(trials.count(entry), 2)
        self.assertEqual(sorted(entry["time_s"]["samples"]), [1.0e-3, 2e-3])

    def test_failures_keep_their_status(self):
        found = document()
        journal.fold(found, [line(failure="skipped: does not fit"),
                             line(failure="wrong result: 3 elements", name=NAME.replace("64", "128"))])
        statuses = [(entry["n"], entry["status"]) for entry in found["studies"]["matmul"]["entries"]]
        self.assertEqual(statuses, [(64, "skipped"), (128, "error")])

    def test_an_ok_line_without_its_measurement_is_an_error(self):
        broken = line()
        broken["measurement"] = None
        found = document()
        journal.fold(found, [broken])
        self.assertEqual(found["studies"]["matmul"]["entries"][0]["status"], "error")

    def test_unknown_studies_and_damaged_lines_are_left_out(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, journal.FILE)
            journal.append(path, {**line(), "study": "nothing_like_it"})
            journal.append(path, line())
            with open(path, "a", encoding="utf-8") as stream:
                stream.write('{"study": "matmul", "trial": 1, "na')  # cut by a kill
            lines = journal.read(path)
            self.assertEqual(len(lines), 2)
            self.assertEqual(journal.fold(document(), lines), 1)


def killed_run_folder(folder, journal_line):
    """A run's folder as a killed driver leaves it: results.json still 'running' with matmul's study and no
    entry, and the journal holding the one line given."""
    run = {"id": "x", "started": "2026-11-24T00:00:00+00:00", "finished": None, "status": "running",
           "command_line": [], "options": {}}
    written = results.new_document(run)
    written["studies"]["matmul"] = results.new_study({"study": "matmul", "implementations": []}, [64], None)
    results.write(written, os.path.join(folder, "results.json"), checked=False)
    journal.append(os.path.join(folder, journal.FILE), journal_line)


class LoadTest(unittest.TestCase):
    def test_load_folds_the_journal_and_says_so(self):
        with tempfile.TemporaryDirectory() as folder:
            killed_run_folder(folder, line())
            loaded = journal.load(folder)
        self.assertEqual([entry["name"] for entry in loaded["studies"]["matmul"]["entries"]], [NAME])
        self.assertIn("1 entries recovered from journal.jsonl", loaded["warnings"][-1])

    def test_a_hostile_journal_line_is_refused_like_a_hostile_results_file(self):
        """What the journal adds is checked as results.json is (results.checked): a sample of 1e308 s
        would otherwise reach the report as an 'infx' ratio."""
        with tempfile.TemporaryDirectory() as folder:
            killed_run_folder(folder, line(samples=(1e308,)))
            with self.assertRaises(results.ResultsError) as caught:
                journal.load(folder)
        self.assertIn("journal.jsonl", str(caught.exception))
        self.assertIn("studies.matmul.entries[0].time_s.samples[0]: 1e+308 is out of range", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
