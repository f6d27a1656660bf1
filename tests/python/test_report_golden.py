"""The report of a committed run comes out the same: `gpubench report` on two trimmed committed runs
(fixtures/runs/: a default-suite H200 run and a --quick H100 run) writes the summary.md, the plot
files and the findings (every study's `derived` and the run's `findings`, headline figures included)
recorded in fixtures/golden/<run>.json.gz.

A change to the report that is meant (a new section, a finding computed otherwise, a changed
scripts/expected_ranges.json or gpu_datasheets.json, which the health check and the headline read)
is recorded again with `/usr/bin/python3 test_report_golden.py --record` from tests/python, and the
diff of the recorded files is reviewed like code."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

from support import ENTRY, SCRIPTS_DIR, fixture

from gpubench_driver.stages import analyse, collect, journal

RUNS = {"h200-aa-a-20261124": "runs/aa-h200-20261124/h200-aa-a-20261124",
        "aa1-quick-trials3-20261124-005923": "runs/aa-quick-trials3-20261124/aa1-quick-trials3-20261124-005923"}
GOLDEN = fixture("golden")


def has_matplotlib():
    return subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True).returncode == 0


def findings(path):
    """Every study's derived findings and the run's, as report derives them (JSON's view of them)."""
    document = collect.node_view(journal.load(path))
    analyse.derive_findings(document, (document["run"].get("options") or {}).get("refine_rounds") or 0)
    found = {"findings": document["findings"], "studies": {name: study["derived"]
                                                           for name, study in document["studies"].items()}}
    return json.loads(json.dumps(found, allow_nan=False))


def written_report(path, out_dir):
    """summary.md and the plot files' names that `gpubench report PATH --out DIR` writes."""
    environment = dict(os.environ, GPUBENCH_PYTHON=sys.executable)
    process = subprocess.run(["bash", ENTRY, "report", path, "--out", out_dir], capture_output=True, text=True,
                             timeout=600, env=environment)
    if process.returncode != 0:
        raise AssertionError(f"report failed ({process.returncode}): {process.stdout}{process.stderr}")
    with open(os.path.join(out_dir, "summary.md"), encoding="utf-8") as stream:
        summary = stream.read()
    return summary, sorted(os.listdir(os.path.join(out_dir, "plots")))


def produced(name):
    with tempfile.TemporaryDirectory() as out_dir:
        summary, plots = written_report(fixture(RUNS[name]), out_dir)
    return {"summary_md": summary, "plots": plots, "derived": findings(fixture(RUNS[name]))}


def golden_path(name):
    return os.path.join(GOLDEN, f"{name}.json.gz")


def recorded(name):
    with gzip.open(golden_path(name), "rt", encoding="utf-8") as stream:
        return json.load(stream)


def record():
    os.makedirs(GOLDEN, exist_ok=True)
    for name in RUNS:
        text = json.dumps(produced(name), sort_keys=True, indent=0, allow_nan=False) + "\n"
        with open(golden_path(name), "wb") as stream:
            stream.write(gzip.compress(text.encode("utf-8"), 9, mtime=0))
        print(f"recorded {golden_path(name)}")


@unittest.skipUnless(has_matplotlib(), "the recorded reports have plots: this Python has no matplotlib")
class GoldenReportTest(unittest.TestCase):
    maxDiff = 4000

    def check(self, name):
        want, got = recorded(name), produced(name)
        self.assertEqual(want["plots"], got["plots"])
        for index, (want_line, got_line) in enumerate(zip(want["summary_md"].splitlines(),
                                                          got["summary_md"].splitlines()), start=1):
            self.assertEqual(want_line, got_line, f"summary.md line {index}")
        self.assertEqual(want["summary_md"], got["summary_md"])
        for study in want["derived"]["studies"]:
            self.assertEqual(want["derived"]["studies"][study], got["derived"]["studies"].get(study), study)
        for key in want["derived"]["findings"]:
            self.assertEqual(want["derived"]["findings"][key], got["derived"]["findings"].get(key), key)
        self.assertEqual(want["derived"], got["derived"])

    def test_default_suite_run(self):
        self.check("h200-aa-a-20261124")

    def test_quick_run(self):
        self.check("aa1-quick-trials3-20261124-005923")


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        sys.path.insert(0, SCRIPTS_DIR)
        record()
    else:
        unittest.main()
