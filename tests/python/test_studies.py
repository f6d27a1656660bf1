"""The study registry (studies/): one plug-in record per study, complete and in order; what options,
analyse, runner, plots, reference, compare and across read from it; the axis names of files
and binaries that do not say them; and a study added as one record."""
import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import support

from gpubench_driver import studies
from gpubench_driver.lib import gbench
from gpubench_driver.studies import batched_gemm, conv2d, mlp_training, precision
from gpubench_driver.stages import across, analyse, options, plots, prices, reference

BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")


def cmake_studies():
    """The studies bench/CMakeLists.txt builds: the registry holds one record each."""
    with open(os.path.join(support.SOURCE_DIR, "bench", "CMakeLists.txt"), encoding="utf-8") as stream:
        return tuple(re.findall(r"^gpubench_study\((\w+)\)", stream.read(), re.MULTILINE))


BUILT = cmake_studies()
# The suite's order of the studies test_report_golden's reports hold (a study added later goes where its
# position puts it: these keep theirs).
ORDER = ("matmul", "precision", "batched_gemm", "mlp_training", "conv2d", "transfer", "overlap", "vector_add",
         "mandelbrot", "stream", "roofline", "primitives", "occupancy", "launch_overhead", "gemm_ladder", "p2p",
         "collectives")


class RecordsTest(unittest.TestCase):
    def test_one_record_per_study_in_order(self):
        self.assertIn("matmul", BUILT)  # the CMake file was read
        self.assertEqual(sorted(studies.NAMES), sorted(BUILT))
        self.assertEqual(tuple(name for name in studies.NAMES if name in ORDER), ORDER)
        self.assertEqual([plugin.__name__.rsplit(".", 1)[1] for plugin in studies.PLUGINS], list(studies.NAMES))
        positions = [study.position for study in studies.STUDIES]
        self.assertEqual(positions, sorted(set(positions)))

    def test_each_study_has_its_section_in_the_docs_in_order(self):
        """docs/studies.md, the one page that lists the studies: a section per study, in the run order."""
        with open(os.path.join(support.SOURCE_DIR, "docs", "studies.md"), encoding="utf-8") as stream:
            headings = re.findall(r"^## (\w+)$", stream.read(), re.MULTILINE)
        self.assertEqual(tuple(headings), studies.NAMES)
        self.assertEqual(studies.BATCH_NAMES, tuple(study.name for study in studies.STUDIES if study.batch_axis))

    def built_studies(self):
        """(study, binary, its --describe) for each study binary built in GPUBENCH_BUILD_DIR."""
        for study in studies.STUDIES:
            binary = os.path.join(BUILD_DIR, "bench", f"gpubench_{study.name}")
            if os.access(binary, os.X_OK):
                yield study, binary, json.loads(subprocess.run([binary, "--describe"], capture_output=True,
                                                               text=True, timeout=120, check=True).stdout)

    def test_batch_axis_as_the_binaries_describe_it(self):
        for study, _, described in self.built_studies():
            with self.subTest(study=study.name):
                self.assertEqual("default_batches" in described, study.batch_axis)

    def test_the_size_and_batch_ranges_the_binaries_describe_are_what_they_take(self):
        """--describe's size_range (and batch_range, with a batch axis) comes from the limits the binary's
        option checks apply: its largest value is taken, the next is refused (exit 2)."""
        for study, binary, described in self.built_studies():
            with self.subTest(study=study.name):
                self.assertIn("size_range", described)
                self.assertEqual("batch_range" in described, study.batch_axis)
                for flag, key in (("--sizes", "size_range"), ("--batches", "batch_range")):
                    if key not in described:
                        continue
                    least, largest = described[key]["min"], described[key]["max"]
                    self.assertEqual((least, options.described_range(described, key)), (1, (least, largest)))
                    self.assertLessEqual(largest, gbench.LARGEST_SIZE)
                    for value, status in ((largest, 0), (largest + 1, 2), (0, 2)):
                        if status == 0 and flag == "--sizes" and described.get("layers"):
                            continue  # its sizes name layers: the range only bounds them
                        listed = subprocess.run([binary, f"{flag}={value}", "--cpu-only",
                                                 "--benchmark_list_tests=true"], capture_output=True, text=True,
                                                timeout=120)
                        self.assertEqual(listed.returncode, status, (flag, value, listed.stderr))

    def test_every_record_is_complete(self):
        for study in studies.STUDIES:
            with self.subTest(study=study.name):
                for function in (study.derive, study.summary, study.rates):
                    self.assertTrue(callable(function))
                self.assertTrue(study.plots is None or callable(study.plots))
                self.assertTrue(all(c.study == study.name and c.run in study.references for c in study.comparisons))
                self.assertEqual(set(study.axis_names), set(studies.AXIS_SLOTS))
                self.assertEqual(study.axis_names["batch"] is None, not study.batch_axis)
                with self.assertRaises(dataclasses.FrozenInstanceError):
                    study.refined = True

    def test_what_the_old_tables_held(self):
        by_name = studies.BY_NAME
        self.assertEqual([s.name for s in studies.STUDIES if s.refined], ["matmul"])
        self.assertEqual([s.name for s in studies.STUDIES if s.one_gemm_per_call], ["matmul", "precision"])
        self.assertEqual({s.name: s.roofline_marker for s in studies.STUDIES if s.roofline_marker},
                         {"matmul": "o", "precision": "s", "batched_gemm": "^", "conv2d": "D", "stream": "v",
                          "roofline": "X"})
        self.assertEqual(list(across.NOMINAL_FLOP), ["conv2d"])
        self.assertEqual(set(reference.RUNS), {"matmul", "precision", "mlp_training", "conv2d", "transfer",
                                               "collectives"})
        self.assertEqual(set(reference.RUNS["matmul"]), {"numpy", "torch"})
        self.assertEqual({s.name: s.batch for s in studies.STUDIES if s.batch},
                         {"batched_gemm": batched_gemm.BATCHED_GEMM, "mlp_training": mlp_training.MLP_TRAINING,
                          "conv2d": conv2d.CONV2D})
        self.assertEqual([prices.cost_kind(name) for name in ("matmul", "mlp_training", "batched_gemm", "nonesuch")],
                         ["gemm", "epoch", None, None])


class AxisNamesTest(unittest.TestCase):
    def test_the_registry_names_the_slots_of_files_without_axis_names(self):
        self.assertEqual(studies.axis_names("transfer"), {"impl": "engine", "mode": "host_memory",
                                                         "precision": "direction", "n": "bytes", "batch": None})
        self.assertEqual(studies.axis_names("overlap", {"axis_names": None})["batch"], "chunks")
        self.assertEqual(studies.axis_names("mlp_training")["n"], "hidden")
        self.assertEqual(studies.axis_names("nonesuch"), studies.PLAIN_AXES)

    def test_the_binarys_names_win_slot_by_slot(self):
        record = {"axis_names": {"impl": "engine", "precision": "copy", "n": 7, "extra": "x"}}
        names = studies.axis_names("transfer", record)
        self.assertEqual(names["precision"], "copy")
        self.assertEqual(names["n"], "bytes")  # not a name: the registry's stays
        self.assertNotIn("extra", names)

    def test_number_formats(self):
        self.assertEqual([name for name in ORDER if studies.format_note(name)],
                         ["transfer", "overlap", "primitives", "p2p"])
        self.assertEqual(studies.format_note("primitives"), "its precision axis is the library, not a number format")
        self.assertEqual(studies.format_note("transfer"), "its precision axis is the direction, not a number format")
        self.assertIsNone(studies.format_note("transfer", {"axis_names": {"precision": "precision"}}))


class ReadersTest(unittest.TestCase):
    def test_options_take_points_from_the_binary_and_refinement_from_the_records(self):
        description = {"implementations": [{"id": "a", "modes": ["resident"]}], "default_sizes": [5],
                       "default_batches": [6], "points": {"quick": {"sizes": [1], "batches": [2]},
                                                          "suite": {"sizes": [3], "batches": [4]},
                                                          "full": {"sizes": [5], "batches": [6]}}}
        for study in studies.STUDIES:
            with self.subTest(study=study.name):
                suite = options.for_study(support.run_options(), study.name, description)
                quick = options.for_study(support.run_options(quick=True), study.name, description)
                full = options.for_study(support.run_options(full=True), study.name, description)
                self.assertEqual((quick.sizes, suite.sizes, full.sizes), ([1], [3], [5]))
                self.assertEqual(quick.batches, [2] if study.batch_axis else None)
                self.assertEqual(full.batches, [6] if study.batch_axis else None)
                self.assertEqual(suite.refine_rounds, 3 if study.refined else 0)
        with self.assertRaises(options.UsageError) as caught:  # a binary built from older sources
            options.for_study(support.run_options(), "matmul", {"implementations": [{"id": "a"}]})
        self.assertIn("study matmul: its binary's --describe gives no suite points", str(caught.exception))

    def test_progress_rates_come_from_the_console_counters(self):
        outcome = support.outcome
        copy_line = gbench.ConsoleResult("transfer/copy_engine/gpu/pinned/bidirectional/n:1073741824", median_s=0.05,
                                         counters={"bytes_transferred": 2.0 * (1 << 30)})
        self.assertEqual(outcome(copy_line), "median 50.00 ms  40.00 GiB/s")
        registered = gbench.ConsoleResult("transfer/host_register/cpu/pinned/register/n:4096", median_s=1e-3,
                                          counters={"bytes_transferred": 0.0})
        self.assertEqual(outcome(registered), "median 1.00 ms")
        gemm = gbench.ConsoleResult("matmul/cublas/gpu/resident/fp32/n:1024", median_s=1e-3, counters={"flop": 2e9})
        self.assertEqual(outcome(gemm), "median 1.00 ms  2.00 TFLOP/s")
        self.assertEqual(outcome(dataclasses.replace(gemm, counters={})), "median 1.00 ms")  # nothing rebuilt
        pipeline = gbench.ConsoleResult("overlap/streams4/gpu/pinned/matmul/n:8192/batch:16", median_s=0.1,
                                        counters={"flop": 1e12})
        self.assertEqual(outcome(pipeline), "median 100.00 ms")

    def test_summary_sections_through_the_record(self):
        document = support.precision_document()
        study = document["studies"]["precision"]
        self.assertEqual(studies.BY_NAME["precision"].summary(study, document),
                         precision.sections(study, document))


PLUGIN = """from gpubench_driver.lib.registry import Study, no_rates
STUDY = Study(name={name!r}, derive=None, summary=None, rates=no_rates, position={position})
"""


class DiscoveryTest(unittest.TestCase):
    """The plug-ins are every module of the studies package, in their records' order: a new study's
    plug-in is found without being listed anywhere."""

    def discover(self, files):
        """studies.discover over a package of these {module name: source} (a throwaway package name each time)."""
        with tempfile.TemporaryDirectory() as root:
            package = f"toy_studies_{len(sys.modules)}"
            os.mkdir(os.path.join(root, package))
            for name, text in {"__init__": "", **files}.items():
                with open(os.path.join(root, package, f"{name}.py"), "w", encoding="utf-8") as stream:
                    stream.write(text)
            sys.path.insert(0, root)
            try:
                return studies.discover([os.path.join(root, package)], package)
            finally:
                sys.path.remove(root)

    def test_every_module_is_found_in_position_order(self):
        found = self.discover({"alpha": PLUGIN.format(name="alpha", position=20),
                               "beta": PLUGIN.format(name="beta", position=10), "_helpers": "X = 1\n"})
        self.assertEqual([plugin.STUDY.name for plugin in found], ["beta", "alpha"])

    def test_a_module_without_a_record_is_refused(self):
        with self.assertRaisesRegex(studies.PluginError, r"\.alpha: a study plug-in defines its record, STUDY"):
            self.discover({"alpha": "X = 1\n"})

    def test_two_studies_at_one_position_are_refused(self):
        with self.assertRaisesRegex(studies.PluginError, r"studies of one position: 10 \(.*alpha, .*beta\)"):
            self.discover({"alpha": PLUGIN.format(name="alpha", position=10),
                           "beta": PLUGIN.format(name="beta", position=10)})

    def test_two_studies_of_one_name_are_refused(self):
        with self.assertRaisesRegex(studies.PluginError, r"studies of one name: alpha"):
            self.discover({"alpha": PLUGIN.format(name="alpha", position=10),
                           "beta": PLUGIN.format(name="alpha", position=20)})


class NewStudyTest(unittest.TestCase):
    """A study the driver did not know, added as one record (here: the precision study's functions
    under another name): it is derived, reported, plotted and its options chosen from that record."""

    def test_one_record_is_enough(self):
        precision = studies.BY_NAME["precision"]
        toy = dataclasses.replace(precision, name="toy", references={},
                                  comparisons=(), summary=lambda study, document: ["## Toy", ""],
                                  plots=lambda pyplot, study, plot_dir: [], axes={"precision": "format"})
        document = copy.deepcopy(support.precision_document())
        document["studies"]["toy"] = document["studies"].pop("precision")
        document["studies"]["toy"]["axis_names"] = None  # a binary that names no axes: the record's
        with mock.patch.dict(studies.BY_NAME, {"toy": toy}):
            analyse.derive_findings(document, 0)
            self.assertIn("tensor_core_claim", document["studies"]["toy"]["derived"])
            self.assertEqual(options.for_study(support.run_options(), "toy", {"implementations": [{"id": "cublas"}],
                                               "points": {"suite": {"sizes": [16, 32]}}}).sizes, [16, 32])
            # its precision slot, named "format" by the record, holds no number format: no peak
            self.assertEqual(document["findings"]["roofline"]["peaks"], [])
            with tempfile.TemporaryDirectory() as out:
                self.assertEqual(plots.write_plots(document["studies"], out) or [], [])


if __name__ == "__main__":
    unittest.main()
