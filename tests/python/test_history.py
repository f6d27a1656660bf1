"""Files that earlier versions of gpubench wrote still read: `report` and `compare` on results.json
files taken from the repository's history (fixtures/history/README.md), each written by an older
driver and study binaries, from the first published run on."""
import glob
import json
import os
import subprocess
import tempfile
import unittest

import support

HISTORY = sorted(glob.glob(support.fixture("history/*.json.gz")))
# A run of today's default suite: the other side of each comparison.
TODAY = support.fixture("runs/aa-trials3-20261124/h100-aa-b1-20261124/results.json.gz")


def gpubench(*args):
    return subprocess.run(["bash", support.ENTRY, *args], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, GPUBENCH_PYTHON=os.environ.get("GPUBENCH_PYTHON", "/usr/bin/python3")))


class HistoryFilesTest(unittest.TestCase):
    def test_there_are_files_from_several_revisions(self):
        self.assertGreaterEqual(len(HISTORY), 8)

    def test_report_reads_every_file_of_the_history(self):
        from gpubench_driver.lib import results
        for path in HISTORY:
            with self.subTest(path=os.path.basename(path)), tempfile.TemporaryDirectory() as out:
                written = results.load(path)
                done = gpubench("report", path, "--out", out)
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertNotIn("Traceback", done.stderr)
                with open(os.path.join(out, "summary.md"), encoding="utf-8") as stream:
                    summary = stream.read()
                self.assertIn(written["run"]["id"], summary)
                self.assertIn("## Health", summary)

    def test_compare_reads_an_old_file_against_todays(self):
        oldest = support.fixture("history/b064c71-20261122-224632.json.gz")  # the first published run
        with tempfile.TemporaryDirectory() as out:
            done = gpubench("compare", oldest, TODAY, "--out", out)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(os.path.join(out, "compare.json"), encoding="utf-8") as stream:
                comparison = json.load(stream)["comparisons"][0]
        # The old run's matmul entries that today's suite also has are compared, each with a verdict.
        self.assertGreater(len(comparison["entries"]), 10)
        self.assertTrue(all(entry["verdict"] in ("same", "faster", "slower", "unclear")
                            for entry in comparison["entries"]))
        self.assertEqual(sum(comparison["counts"].values()), len(comparison["entries"]))


if __name__ == "__main__":
    unittest.main()
