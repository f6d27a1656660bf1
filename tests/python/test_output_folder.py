"""The output folder: nothing written outside it whatever a results file holds; one run at a time in it
and one build at a time in a build folder; a run whose driver was killed shown as killed; a full disk
said in one line with no partial file left; a folder that cannot be written, or one inside the source
tree (other than results/), refused before anything is written."""
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from support import ENTRY, SCRIPTS_DIR, SOURCE_DIR, write_executable
from test_run_studies import FakeMachine
from test_transfer import curve

from gpubench_driver import plots, results


def gpubench(*args, env=None):
    environment = dict(os.environ if env is None else env, GPUBENCH_PYTHON=sys.executable)
    return subprocess.run(["bash", ENTRY, *args], capture_output=True, text=True, timeout=300, env=environment)


def run_command(machine, out, *args, build=False):
    """scripts/gpubench run on the stand-in binaries, as a list for Popen."""
    return ["bash", ENTRY, "run", "--no-setup", *([] if build else ["--no-build"]), "--build-dir", machine.build_dir,
            "--no-reference", "--no-refine", "--trials", "1", "--sizes", "64,128", "--out", out, *args]


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(where, name), folder)
                  for where, _, names in os.walk(folder) for name in names)


def clean_failure(test, process, status):
    """The process ended with `status` and one line on stderr, no traceback."""
    test.assertEqual(process.returncode, status, process.stdout + process.stderr)
    test.assertNotIn("Traceback", process.stdout + process.stderr)
    test.assertEqual(len(process.stderr.strip().splitlines()), 1, process.stderr)
    return process.stderr


# --- 1. file names built from the data ---------------------------------------------------------
class HostileNameTest(unittest.TestCase):
    """A results file's names (a transfer direction, a stream operation, an overlap workload, a
    primitive, a roofline device) never take a plot out of the plots folder."""

    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)
        self.root = self.directory.name
        self.target = os.path.join(self.root, "EVIL")  # where '../' in a name would put a plot

    def hostile(self):
        """A name that climbs to / from any plots folder, then down to the test's target."""
        return "x/" + "../" * 40 + self.target.lstrip("/")

    def escaped(self):
        return [name for name in os.listdir(self.root) if name.startswith("EVIL")]

    @unittest.skipIf(plots.load_pyplot() is None, "no matplotlib: no plots to write")
    def test_report_writes_no_plot_outside_its_folder(self):
        run = os.path.join(self.root, "run")
        document = results.new_document({"id": "hostile", "started": "2026-11-24T00:00:00+00:00", "finished": None,
                                         "status": "complete", "command_line": [], "options": {}})
        study = results.new_study({"implementations": []}, [4096, 1 << 20])
        study["entries"] = curve("copy_engine", "pinned", "h2d", {4096: 2e9, 1 << 20: 40e9})
        for entry in study["entries"]:
            entry["precision"] = self.hostile()  # the transfer study's direction
        document["studies"]["transfer"] = study
        os.makedirs(os.path.join(run, "plots", "transfer_bandwidth_x"))  # so that the '..' resolve
        results.write(document, os.path.join(run, "results.json"))
        process = gpubench("report", run)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertEqual(self.escaped(), [])
        written = [name for name in os.listdir(os.path.join(run, "plots")) if name.endswith(".png")]
        self.assertEqual(len(written), 1, written)
        self.assertTrue(written[0].startswith("transfer_bandwidth_x_"), written)

    @unittest.skipIf(plots.load_pyplot() is None, "no matplotlib: no plots to write")
    def test_every_study_name_in_a_plot_file_is_cleaned(self):
        bad = self.hostile()
        studies = {
            "stream": {"derived": {"curves": [{"operation": bad, "kernel": "k", "mode": "host", "precision": "fp32",
                                               "points": [{"working_set_bytes": 1e3, "bytes_per_s": 1e9},
                                                          {"working_set_bytes": 1e6, "bytes_per_s": 2e9}]}]}},
            "overlap": {"derived": {"pipelines": [{"workload": bad, "memory": bad, "n": 64, "schedule": "streams2",
                                                   "chunks": chunks, "median_s": 1.0, "ideal_s": 0.5, "serial_s": 2.0}
                                                  for chunks in (1, 4)]}},
            "primitives": {"derived": {"curves": [{"primitive": bad, "library": "cub", "mode": "resident",
                                                   "points": [{"n": 1e3, "elements_per_s": 1e9},
                                                              {"n": 1e6, "elements_per_s": 2e9}]}]}},
            "roofline": {"derived": {"series": [{"device": bad, "n": 64, "impl": "fma", "precision": "fp32",
                                                 "ridge_intensity": 4.0, "bandwidth_bytes_per_s": 1e9,
                                                 "compute_flop_per_s": 4e9,
                                                 "points": [{"intensity": 1.0, "flop_per_s": 1e9},
                                                            {"intensity": 16.0, "flop_per_s": 4e9}]}]}},
            "transfer": {"derived": {"curves": [{"impl": "copy_engine", "mode": "pinned", "direction": bad,
                                                 "points": [{"n": 1e3, "bytes_per_s": 1e9},
                                                            {"n": 1e6, "bytes_per_s": 2e9}]}]}},
        }
        out = os.path.join(self.root, "run")
        for prefix in ("stream", "overlap", "primitives", "roofline_sweep", "transfer_bandwidth"):
            os.makedirs(os.path.join(out, "plots", f"{prefix}_x"))
        found = plots.write_plots(studies, out)
        self.assertEqual(self.escaped(), [])
        self.assertEqual(sorted(found), sorted(studies))
        plot_dir = os.path.realpath(os.path.join(out, "plots"))
        for study, paths in found.items():
            for path in paths:
                self.assertEqual(os.path.dirname(os.path.realpath(path)), plot_dir, (study, path))
                self.assertTrue(os.path.isfile(path), path)


if __name__ == "__main__":
    unittest.main()
