"""The curated reference runs (results/README.md): `report` of each run's results.json.gz writes the
summary.md committed beside it, figure for figure, so a change to the driver that moves a published
figure, a verdict or a sentence shows here. When a change is meant to alter the page, write the
reports again (`scripts/gpubench report results/<gpu> --out <tmp>`, copy summary.md and summary.html)
and say so in the commit."""
import glob
import os
import subprocess
import tempfile
import unittest

import support

REFERENCE_RUNS = sorted(os.path.dirname(path) for path in
                        glob.glob(os.path.join(support.SOURCE_DIR, "results", "*", "results.json.gz")))


@unittest.skipUnless(os.path.exists(os.path.join(support.SOURCE_DIR, "results", "README.md")),
                     "this checkout has no results/ (an archive made without the reference set)")
class ReferenceSetTest(unittest.TestCase):
    def test_the_set_has_a_run_per_gpu_model(self):
        self.assertGreaterEqual(len(REFERENCE_RUNS), 2)

    def test_report_writes_the_published_summary(self):
        for folder in REFERENCE_RUNS:
            with self.subTest(run=os.path.basename(folder)), tempfile.TemporaryDirectory() as out:
                done = subprocess.run(["bash", support.ENTRY, "report", folder, "--out", out], capture_output=True,
                                      text=True, timeout=600,
                                      env=dict(os.environ, GPUBENCH_PYTHON=os.environ.get("GPUBENCH_PYTHON",
                                                                                          "/usr/bin/python3")))
                self.assertEqual(done.returncode, 0, done.stderr)
                with open(os.path.join(out, "summary.md"), encoding="utf-8") as stream:
                    written = stream.read().splitlines()
                with open(os.path.join(folder, "summary.md"), encoding="utf-8") as stream:
                    published = stream.read().splitlines()
                differing = [(number, old, new) for number, (old, new) in enumerate(zip(published, written), 1)
                             if old != new]
                self.assertEqual(differing[:3], [], "lines of summary.md that differ (line, published, written)")
                self.assertEqual(len(written), len(published))


if __name__ == "__main__":
    unittest.main()
