"""run --like: the recorded configuration is repeated (studies, per-study sizes and batches,
options; flags given still win; an old file's repetitions and minimum time are ignored), a hostile
file is refused, and the environment differences are listed and escaped."""
import copy
import dataclasses
import json
import os
import tempfile
import unittest

import support
from support import fixture

from gpubench_driver.lib import results
from gpubench_driver.lib.document import to_markdown
from gpubench_driver.stages import like, render
from gpubench_driver.commands import cli, run as run_command


def recorded_document():
    with open(fixture("results_v1.json"), encoding="utf-8") as stream:
        return json.load(stream)


class LikeTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)
        self.document = recorded_document()
        # A file from before the steady-state loop: it also recorded repetitions and a minimum time.
        self.document["run"]["options"].update(repetitions=7, min_time=0.2, studies=["matmul"], caps={"naive_loop": 0},
                                               refine_rounds=1)
        self.document["studies"]["matmul"]["sizes"] = [64, 128, 200]
        self.path = self.write(self.document)

    def write(self, document):
        path = os.path.join(self.directory.name, f"r{len(os.listdir(self.directory.name))}.json")
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(document, stream)
        return path

    def options(self, *flags):
        args = cli.build_parser().parse_args(["run", "--like", self.path, *flags])
        return run_command.resolve_like(args, run_command.resolve_run_options(args))

    def test_repeats_the_recorded_configuration(self):
        options = self.options()
        self.assertEqual((options.studies, options.caps, options.refine_rounds), (["matmul"], {"naive_loop": 0}, 1))
        self.assertEqual(options.study_sizes["matmul"]["sizes"], [64, 128, 200])
        self.assertEqual(options.like, os.path.abspath(self.path))

    def test_flags_given_still_win(self):
        options = self.options("--no-refine", "--sizes", "64")
        self.assertEqual((options.refine_rounds, options.sizes, options.study_sizes), (0, [64], None))
        self.assertEqual(options.caps, {"naive_loop": 0})  # not given: still the recorded one

    def test_reference_given_wins_over_a_recorded_no_reference(self):
        self.document["run"]["options"]["reference"] = False
        self.path = self.write(self.document)
        self.assertFalse(self.options().reference)
        self.assertTrue(self.options("--reference").reference)

    def test_old_timing_options_are_ignored(self):
        # The binaries' own loop decides how long to sample: whatever an old file says of it is not read.
        expected = self.options()
        for old in ({"repetitions": "7; rm -rf", "min_time": -1}, {"repetitions": None, "min_time": None}):
            document = copy.deepcopy(self.document)
            document["run"]["options"].update(old)
            self.path = self.write(document)
            found = self.options()
            # The run id is the clock's: two option sets made a second apart differ in it, nothing else.
            self.assertEqual(found, dataclasses.replace(expected, like=found.like, run_id=found.run_id), old)
            self.assertFalse(hasattr(found, "repetitions") or hasattr(found, "min_time"))

    def test_a_hostile_file_is_refused(self):
        for options in ({"refine_rounds": "7; rm -rf"}, {"studies": ["matmul", "../../etc"]}, {"refine_rounds": -1},
                        {"cpu_only": "yes"}, {"caps": {"naive_loop": "x"}}):
            document = copy.deepcopy(self.document)
            document["run"]["options"].update(options)
            self.path = self.write(document)
            with self.assertRaises(results.ResultsError, msg=str(options)):
                self.options()

    def test_differences_are_listed_and_escaped(self):
        here = copy.deepcopy(self.document)
        here["machine"]["gpus"] = [{"name": "<script>|x"}]
        here["software"]["openblas"] = {"version": "0.3.26", "core": "Haswell", "threads": 8}
        found = like.differences(self.document, here)
        self.assertIn("GPU", [d["what"] for d in found])
        self.assertNotIn("kernel", [d["what"] for d in found])  # the same in both
        here["run"]["like"] = {"path": self.path, "run_id": "x", "differences": found}
        text = to_markdown(render._like(here))
        self.assertIn("\\<script\\>\\|x", text)
        self.assertNotIn("<script>", text)


if __name__ == "__main__":
    unittest.main()


class ReferenceFlagsTest(unittest.TestCase):
    """References run by default, not with --quick unless --reference asks; contradictions are refused."""

    @staticmethod
    def reference(*flags):
        return run_command.resolve_run_options(cli.build_parser().parse_args(["run", *flags])).reference

    def test_defaults(self):
        self.assertTrue(self.reference())
        self.assertFalse(self.reference("--quick"))
        self.assertTrue(self.reference("--quick", "--reference"))
        self.assertFalse(self.reference("--no-reference"))
        self.assertFalse(self.reference("--cpu-only"))

    def test_contradictions_are_refused(self):
        for flags in (("--reference", "--no-reference"), ("--reference", "--cpu-only")):
            with self.assertRaises(run_command.opts.UsageError, msg=str(flags)):
                self.reference(*flags)
