"""Every built study binary's --describe (CPU build, no GPU needed): its axes by name, its quick, suite
and full points, the rules of its counters and the entries it selects, each with its axes by name; and
that the driver reads them as the binary means them."""
import json
import os
import subprocess
import tempfile
import unittest

import support  # noqa: F401  (the driver's import path)

from gpubench_driver import studies
from gpubench_driver.lib import gbench, migrate
from gpubench_driver.stages import across as derive_run
from gpubench_driver.studies import mlp_training

BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
SLOT_ORDER = ("impl", "device", "mode", "precision", "n", "batch")
UNDECLARED = "is not among the counters --describe declares"
# Google Benchmark's own numeric fields of a run (the rest are the entry's counters; its `threads`, 1, is
# overwritten by the counter of that name).
GBENCH_FIELDS = {"family_index", "per_family_instance_index", "repetitions", "repetition_index", "threads",
                 "iterations", "real_time", "cpu_time"}


def binary_of(name):
    return os.path.join(BUILD_DIR, "bench", f"gpubench_{name}")


def describe(name, *flags):
    return json.loads(subprocess.run([binary_of(name), "--describe", *flags], capture_output=True, text=True,
                                     timeout=120, check=True).stdout)


def built_studies():
    """(registry record, --describe) of each study whose binary GPUBENCH_BUILD_DIR holds."""
    for study in studies.STUDIES:
        if os.access(binary_of(study.name), os.X_OK):
            yield study, describe(study.name)


BUILT = os.access(binary_of("matmul"), os.X_OK)


@unittest.skipUnless(BUILT, "GPUBENCH_BUILD_DIR unset or the study binaries not built")
class DescribeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.described = list(built_studies())

    def test_every_study_of_the_registry_is_built(self):
        # collectives only where NCCL was found at build time
        self.assertLessEqual(set(studies.NAMES) - {study.name for study, _ in self.described}, {"collectives"})

    def test_axes_in_entry_name_order_with_unique_names(self):
        for study, described in self.described:
            with self.subTest(study=study.name):
                axes = described["axes"]
                names = [axis["name"] for axis in axes]
                self.assertEqual(len(names), len(set(names)), names)
                slots = tuple(axis["slot"] for axis in axes)
                self.assertEqual(slots, SLOT_ORDER if study.batch_axis else SLOT_ORDER[:-1])
                for axis in axes:
                    self.assertTrue(axis["unit"] is None or isinstance(axis["unit"], str) and axis["unit"])
                    self.assertTrue(axis["values"] is None or all(isinstance(v, str) for v in axis["values"]))
                by_slot = {axis["slot"]: axis for axis in axes}
                implementations = described["implementations"]
                self.assertEqual(by_slot["impl"]["values"], [impl["id"] for impl in implementations])
                self.assertEqual(set(by_slot["device"]["values"]), {impl["device"] for impl in implementations})
                self.assertLessEqual({m for impl in implementations for m in impl["modes"]},
                                     set(by_slot["mode"]["values"]))
                self.assertEqual(set(by_slot["precision"]["values"]),
                                 {p for impl in implementations for p in impl["precisions"]})
                self.assertIsNone(by_slot["n"]["values"])

    def test_axis_names_agree_with_the_registry(self):
        """The binary's axes, its axis_names and the registry's axes= fields name each slot alike."""
        for study, described in self.described:
            with self.subTest(study=study.name):
                named = {axis["slot"]: axis["name"] for axis in described["axes"]}
                registry = studies.axis_names(study.name)
                self.assertEqual({slot: named.get(slot) for slot in studies.AXIS_SLOTS}, registry)
                self.assertEqual(described["axis_names"], registry)

    def test_the_points_are_few_where_quick_and_the_defaults_where_full(self):
        """The driver runs these points (stages/options.py): --quick shows every implementation run and verify at one
        or two sizes and batches; full is the binary's default lists."""
        for study, described in self.described:
            with self.subTest(study=study.name):
                points = described["points"]
                self.assertEqual(set(points), {"quick", "suite", "full"})
                self.assertTrue(1 <= len(points["quick"]["sizes"]) <= 2)
                self.assertTrue(1 <= len(points["quick"].get("batches") or [1]) <= 2)
                self.assertEqual(points["full"]["sizes"], described["default_sizes"])
                self.assertEqual(points["full"].get("batches"), described.get("default_batches"))
                self.assertNotIn("impls", points["full"])
        mlp = next(described for study, described in self.described if study.name == "mlp_training")
        self.assertEqual(mlp["points"]["quick"]["sizes"], [mlp_training.MLP_WIDTH])  # the torch MLP's width

    def test_the_points_are_within_the_ranges_and_name_what_the_binary_has(self):
        for study, described in self.described:
            with self.subTest(study=study.name):
                values = {axis["slot"]: axis["values"] for axis in described["axes"]}
                size_range, batch_range = described["size_range"], described.get("batch_range")
                for kind, point in described["points"].items():
                    self.assertTrue(point["sizes"], kind)
                    for n in point["sizes"]:
                        self.assertTrue(size_range["min"] <= n <= size_range["max"], (kind, n))
                    for batch in point.get("batches") or []:
                        self.assertTrue(batch_range["min"] <= batch <= batch_range["max"], (kind, batch))
                    self.assertEqual("batches" in point, study.batch_axis, kind)
                    self.assertLessEqual(set(point.get("impls") or []), set(values["impl"]), kind)
                    self.assertLessEqual(set(point.get("modes") or []), set(values["mode"]), kind)

    def test_the_suite_keeps_every_comparison_with_a_reference(self):
        """A point cut from the default suite must not cut a study's comparison with numpy or PyTorch: each
        comparison has a point among the suite's, in an implementation and mode the suite runs. Collectives'
        is the 8 GiB all-reduce, which only --sizes 33 reaches."""
        for study, described in self.described:
            suite = described["points"]["suite"]
            for comparison in study.comparisons:
                if study.name == "collectives":
                    continue
                with self.subTest(study=study.name, impl=comparison.impl, mode=comparison.mode,
                                  reference=comparison.run):
                    self.assertIn(comparison.impl, suite.get("impls") or [comparison.impl])
                    self.assertIn(comparison.mode, suite.get("modes") or [comparison.mode])
                    self.assertTrue(any(n in suite["sizes"] and (batch is None or batch in suite["batches"])
                                        for n, batch in comparison.points), comparison.points)

    def test_rules_give_each_counter_a_unit(self):
        for study, described in self.described:
            with self.subTest(study=study.name):
                counters = described["rules"]["counters"]
                for name in ("n", "h2d_bytes", "d2h_bytes", "bytes_transferred"):
                    self.assertIn(name, counters)
                self.assertEqual("batch" in counters, study.batch_axis)
                for name, counter in counters.items():
                    self.assertEqual(set(counter), {"unit", "rule"}, name)
                    self.assertTrue(counter["unit"] is None or isinstance(counter["unit"], str), name)
                    self.assertIsInstance(counter["rule"], str, name)
                if "flop" in counters:
                    self.assertEqual(counters["flop"]["unit"], "FLOP")
                    self.assertTrue(counters["flop"]["rule"])
                for key, rule in described["rules"].items():
                    if key != "counters":
                        self.assertIsInstance(rule, str, key)

    def test_rules_the_driver_restates(self):
        rules = {study.name: described["rules"] for study, described in self.described}
        for name, note in derive_run.NOMINAL_FLOP.items():  # files from before rules have it from the plug-in
            self.assertEqual(rules[name].get("nominal_flop"), note)
        stream = next(described for study, described in self.described if study.name == "stream")
        self.assertEqual(rules["stream"]["bytes_rule"], stream["bytes_rule"])

    def test_every_entry_has_its_axes_by_name(self):
        """Each entry's axes: every axis by name, what the naming contract of an older driver's journal lines
        (lib/migrate.py) reads from its name."""
        for study, described in self.described:
            with self.subTest(study=study.name):
                names = [axis["name"] for axis in described["axes"]]
                slot_names = {axis["slot"]: axis["name"] for axis in described["axes"]}
                values = {axis["name"]: axis["values"] for axis in described["axes"]}
                entry_names = [entry["name"] for entry in described["entries"]]
                self.assertEqual(len(entry_names), len(set(entry_names)))
                for entry in described["entries"]:
                    axes = entry["axes"]
                    self.assertEqual(list(axes), names, entry["name"])
                    for name, value in axes.items():
                        self.assertTrue(values[name] is None or value in values[name], (entry["name"], name))
                    planned = gbench.planned_entries(described)[entry["name"]]
                    self.assertEqual({slot_names[slot]: planned[slot] for slot in slot_names}, axes)
                    self.assertEqual(migrate.axis_fields_of_name(entry["name"], described["axis_names"]), planned)

    def test_entries_follow_the_options(self):
        described = describe("matmul", "--sizes=64,128", "--impls=openblas", "--cpu-only")
        self.assertEqual([entry["name"] for entry in described["entries"]],
                         ["matmul/openblas/cpu/host/fp32/n:64", "matmul/openblas/cpu/host/fp32/n:128"])
        self.assertEqual(described["entries"][1]["axes"],
                         {"impl": "openblas", "device": "cpu", "mode": "host", "precision": "fp32", "n": 128})


@unittest.skipUnless(BUILT, "GPUBENCH_BUILD_DIR unset or the study binaries not built")
class RunMatchesDescribeTest(unittest.TestCase):
    """The CPU entries of every study at its smallest points: each Google Benchmark entry is one of
    --describe's entries (by name, Google Benchmark's suffix aside) and reports only counters its rules
    declare."""

    def smallest(self, described):
        flags = ["--cpu-only", f"--sizes={min(described['default_sizes'])}"]
        if described.get("default_batches"):
            flags.append(f"--batches={min(described['default_batches'])}")
        return flags

    def test_every_counter_is_declared_and_every_entry_described(self):
        ran = 0
        for study, described in built_studies():
            flags = self.smallest(described)
            entries = {entry["name"] for entry in describe(study.name, *flags)["entries"]}
            if not entries:
                continue  # a GPU-only study
            with self.subTest(study=study.name), tempfile.TemporaryDirectory() as scratch:
                out = os.path.join(scratch, "out.json")
                process = subprocess.run([binary_of(study.name), *flags, f"--benchmark_out={out}",
                                          "--benchmark_out_format=json", "--benchmark_format=console"],
                                         capture_output=True, text=True, timeout=300)
                self.assertEqual(process.returncode, 0, process.stderr)
                self.assertNotIn(UNDECLARED, process.stderr)
                with open(out, encoding="utf-8") as stream:
                    benchmarks = json.load(stream)["benchmarks"]
                counters = set(described["rules"]["counters"])
                self.assertEqual({gbench.entry_key(b["name"]) for b in benchmarks}, entries)
                for benchmark in benchmarks:
                    reported = {key for key, value in benchmark.items()
                                if key not in GBENCH_FIELDS and isinstance(value, (int, float))
                                and not isinstance(value, bool)}
                    self.assertLessEqual(reported, counters, benchmark["name"])
                ran += len(benchmarks)
        self.assertGreater(ran, 0)


if __name__ == "__main__":
    unittest.main()
