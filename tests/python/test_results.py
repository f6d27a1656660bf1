"""results.json: schema validation, atomic writing, refusal of damaged files, the report command."""
import copy
import gzip
import json
import os
import tempfile
import time
import unittest

import support  # noqa: F401  (import path)
from support import fixture

from gpubench_driver.lib import results
from gpubench_driver.stages import options, session
from gpubench_driver.commands import report
from gpubench_driver.commands import compare


def fixture_document():
    with open(fixture("results_v1.json"), encoding="utf-8") as stream:
        return json.load(stream)


class ValidationTest(unittest.TestCase):
    def test_fixture_is_valid(self):
        results.validate(fixture_document())

    def assert_invalid(self, change, field):
        document = fixture_document()
        change(document)
        with self.assertRaises(results.ResultsError) as caught:
            results.validate(document)
        self.assertIn(field, str(caught.exception))

    def test_foreign_schema(self):
        self.assert_invalid(lambda d: d.update(schema="other"), "schema")

    def test_unknown_run_status(self):
        self.assert_invalid(lambda d: d["run"].update(status="done"), "run.status")

    def test_ok_entry_needs_a_median(self):
        self.assert_invalid(lambda d: d["studies"]["matmul"]["entries"][0].update(time_s=None), "time_s")

    def test_number_fields_reject_strings_and_booleans(self):
        self.assert_invalid(lambda d: d["studies"]["matmul"]["entries"][0].update(n="64"), ".n")
        self.assert_invalid(lambda d: d["studies"]["matmul"]["entries"][0].update(rel_fro_error=True),
                            "rel_fro_error")

    def test_affinity_is_typed(self):
        def set_affinity(value):
            return lambda d: d["software"].setdefault("gpubench_env", {}).update(affinity=value)
        self.assert_invalid(set_affinity("close"), "software.gpubench_env.affinity")
        self.assert_invalid(set_affinity({"openmp_thread_cpus": 2}), "openmp_thread_cpus")
        document = fixture_document()
        set_affinity({"process_cpus": 2, "omp_proc_bind": "close", "openmp_thread_cpus": [1, 1]})(document)
        results.validate(document)

    def test_missing_section(self):
        self.assert_invalid(lambda d: d.pop("machine"), "machine")

    def test_axis_names_axes_and_traffic_are_typed(self):
        """Fields a file written before them lacks (results_v1.json) are optional, and typed where present."""
        entry = lambda d: d["studies"]["matmul"]["entries"][0]  # noqa: E731
        study = lambda d: d["studies"]["matmul"]  # noqa: E731
        document = fixture_document()
        study(document)["axis_names"] = {"impl": "impl", "mode": "mode", "precision": "precision", "n": "n",
                                         "batch": None}
        study(document)["implementations"][0]["precisions"] = ["fp32"]
        entry(document).update(axes={"impl": "openblas", "n": 64}, memory_read_bytes=32768.0, h2d_bytes=0)
        results.validate(document)
        for change, field in (
                (lambda d: study(d).update(axis_names="impl"), "studies.matmul.axis_names"),
                (lambda d: study(d).update(axis_names={"batch": 0}), "studies.matmul.axis_names.batch"),
                (lambda d: study(d)["implementations"][0].update(precisions="fp32"),
                 "studies.matmul.implementations[0].precisions"),
                (lambda d: study(d)["implementations"][0].update(precisions=[None]),
                 "studies.matmul.implementations[0].precisions[0]"),
                (lambda d: study(d).update(precisions=[{"id": "fp8", "input_bytes": "1"}]),
                 "studies.matmul.precisions[0].input_bytes"),
                (lambda d: entry(d).update(axes="n:64"), "studies.matmul.entries[0].axes"),
                (lambda d: entry(d).update(axes={"n": [64]}), "studies.matmul.entries[0].axes.n"),
                (lambda d: entry(d).update(axes={"n": False}), "studies.matmul.entries[0].axes.n"),
                (lambda d: entry(d).update(memory_written_bytes="1"), "studies.matmul.entries[0].memory_written_bytes"),
                (lambda d: entry(d).update(d2h_bytes=[]), "studies.matmul.entries[0].d2h_bytes")):
            with self.subTest(field=field):
                self.assert_invalid(change, field)

    def test_the_described_axes_points_and_rules_are_kept_and_typed(self):
        """A study's record keeps --describe's axes, points and rules (absent in older files); an older
        binary's text axes object is recorded as null rather than failing the record."""
        axes = [{"name": "engine", "slot": "impl", "unit": None, "values": ["copy_engine"]},
                {"name": "bytes", "slot": "n", "unit": "bytes", "values": None}]
        points = {"quick": {"sizes": [1048576]}, "suite": {"sizes": [4096]}, "full": {"sizes": [4096]}}
        rules = {"counters": {"bytes_transferred": {"unit": "bytes", "rule": "n"}}, "bandwidth": "bytes / time"}
        record = results.new_study({"axes": axes, "points": points, "rules": rules}, [4096])
        self.assertEqual((record["axes"], record["points"], record["rules"]), (axes, points, rules))
        self.assertIsNone(results.new_study({"axes": {"impl": "copy engine or method"}}, [4096])["axes"])
        document = fixture_document()
        document["studies"]["matmul"].update(axes=axes, points=points, rules=rules)
        results.validate(document)
        study = lambda d: d["studies"]["matmul"]  # noqa: E731
        for change, field in (
                (lambda d: study(d).update(axes={"impl": "engine"}), "studies.matmul.axes"),
                (lambda d: study(d).update(axes=[{"name": "n", "slot": None}]), "studies.matmul.axes[0].slot"),
                (lambda d: study(d).update(axes=[{"name": "n", "slot": "n", "unit": 1}]),
                 "studies.matmul.axes[0].unit"),
                (lambda d: study(d).update(points=[]), "studies.matmul.points"),
                (lambda d: study(d).update(rules={"counters": []}), "studies.matmul.rules.counters")):
            with self.subTest(field=field):
                self.assert_invalid(change, field)

    def test_a_reference_results_measurement_is_typed(self):
        """How a reference was timed (reference_timing.record): optional, typed where present."""
        result = lambda d: d["references"]["numpy"]["results"][0]  # noqa: E731
        document = fixture_document()
        result(document)["measurement"] = {"protocol": "latency", "burst_s": 0.1, "settled": False,
                                           "warmup_window_per_call_s": [0.1, 0.1], "stop_reason": "timeout",
                                           "converged": False, "noise": None, "measured_s": 0.5}
        results.validate(document)
        for change, field in (
                (lambda d: result(d).update(measurement=[]), "references.numpy.results[0].measurement"),
                (lambda d: result(d).update(measurement={"settled": "yes"}),
                 "references.numpy.results[0].measurement.settled"),
                (lambda d: result(d).update(measurement={"noise": "0.01"}),
                 "references.numpy.results[0].measurement.noise")):
            with self.subTest(field=field):
                self.assert_invalid(change, field)


class WriteAndLoadTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.directory.name, "results.json")

    def tearDown(self):
        self.directory.cleanup()

    def test_round_trip_turns_nan_into_null(self):
        document = fixture_document()
        document["studies"]["matmul"]["entries"][0]["max_rel_error"] = float("nan")
        results.write(document, self.path)
        loaded = results.load(self.path)
        self.assertIsNone(loaded["studies"]["matmul"]["entries"][0]["max_rel_error"])
        self.assertEqual(os.listdir(self.directory.name), ["results.json"])  # no temporary left

    def test_written_with_the_umask_like_the_other_outputs(self):
        previous = os.umask(0o022)
        try:
            results.write(fixture_document(), self.path)
        finally:
            os.umask(previous)
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o644)

    def test_invalid_document_leaves_the_previous_file(self):
        results.write(fixture_document(), self.path)
        broken = copy.deepcopy(fixture_document())
        broken["run"]["status"] = "bogus"
        with self.assertRaises(results.ResultsError):
            results.write(broken, self.path)
        self.assertEqual(results.load(self.path)["run"]["status"], "complete")
        self.assertEqual(os.listdir(self.directory.name), ["results.json"])

    def test_truncated_file_is_reported_as_damaged(self):
        with open(fixture("results_v1.json"), encoding="utf-8") as stream:
            text = stream.read()
        with open(self.path, "w", encoding="utf-8") as stream:
            stream.write(text[: len(text) // 2])
        with self.assertRaises(results.ResultsError) as caught:
            results.load(self.path)
        self.assertIn("damaged or truncated", str(caught.exception))

    def test_nan_literal_is_refused(self):
        document = fixture_document()
        document["studies"]["matmul"]["entries"][0]["max_rel_error"] = "NaN here"
        with open(self.path, "w", encoding="utf-8") as stream:
            stream.write(json.dumps(document).replace('"NaN here"', "NaN"))
        with self.assertRaises(results.ResultsError):
            results.load(self.path)

    def test_missing_file(self):
        with self.assertRaises(results.ResultsError):
            results.load(os.path.join(self.directory.name, "absent.json"))


class CompressedFileTest(unittest.TestCase):
    """results.json.gz (the curated runs kept in the repository, the tests' fixtures) reads like
    results.json wherever a results file or its folder is given: every command loads through
    results.load."""

    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)
        self.folder = os.path.join(self.directory.name, "run")
        os.makedirs(self.folder)
        self.document = results.write(fixture_document(), os.path.join(self.directory.name, "results.json"))
        self.path = os.path.join(self.folder, "results.json.gz")
        with gzip.open(self.path, "wt", encoding="utf-8") as stream:
            json.dump(self.document, stream)

    def test_the_file_and_its_folder_load_as_the_plain_file_does(self):
        self.assertEqual(results.load(self.path), self.document)
        self.assertEqual(results.load(self.folder), self.document)
        self.assertEqual(results.file_in(self.folder), self.path)
        self.assertIsNone(results.file_in(self.directory.name + "/absent"))

    def test_a_folder_holding_both_reads_results_json(self):
        changed = copy.deepcopy(self.document)
        changed["run"]["id"] = "plain"
        results.write(changed, os.path.join(self.folder, "results.json"))
        self.assertEqual(results.load(self.folder)["run"]["id"], "plain")

    def test_the_commands_read_a_folder_holding_it(self):
        (source,) = compare.load_sources([self.folder], [], least=1)
        self.assertEqual(source.document["run"]["id"], self.document["run"]["id"])
        self.assertEqual(source.path, self.folder)

    def test_a_damaged_or_cut_compressed_file_is_reported(self):
        with open(self.path, "rb") as stream:
            data = stream.read()
        for name, damaged in (("cut", data[: len(data) // 2]), ("not gzip", b"{not gzip"),
                              ("bad data", data[:20] + bytes(len(data) - 20))):
            with self.subTest(name):
                with open(self.path, "wb") as stream:
                    stream.write(damaged)
                with self.assertRaises(results.ResultsError) as caught:
                    results.load(self.folder)
                self.assertIn(self.path, str(caught.exception))

    def test_a_run_will_not_write_beside_it(self):
        with self.assertRaises(options.UsageError) as caught:
            session.prepare_out_dir(support.run_options(out=self.folder))
        self.assertIn("already holds a results.json.gz", str(caught.exception))


class ReportTest(unittest.TestCase):
    def test_report_regenerates_summary_and_plots(self):
        with tempfile.TemporaryDirectory() as out:
            summary_path = report.regenerate(fixture("results_v1.json"), out)
            with open(summary_path, encoding="utf-8") as stream:
                summary = stream.read()
            self.assertIn("## Crossover (GPU faster than the best CPU)", summary)
            self.assertIn("| resident | each entry's headline time | 92 | 64 .. 96 | cublas |", summary)
            self.assertIn("cublas/resident vs torch at n=4096", summary)
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                self.assertIn("Plots were skipped", summary)
                return
            for name in ("matmul_time.png", "matmul_rate.png", "matmul_speedup.png"):
                with open(os.path.join(out, "plots", name), "rb") as stream:
                    self.assertEqual(stream.read(8), b"\x89PNG\r\n\x1a\n")

    def test_a_run_cut_off_before_its_findings_gets_them(self):
        with open(fixture("results_v1.json"), encoding="utf-8") as stream:
            document = json.load(stream)
        for study in document["studies"].values():
            study["derived"] = {}  # what a run killed between two sizes leaves
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "results.json")
            with open(path, "w", encoding="utf-8") as stream:
                json.dump(document, stream)
            with open(report.regenerate(path, out), encoding="utf-8") as stream:
                self.assertIn("| resident | each entry's headline time | 92 | 64 .. 96 | cublas |", stream.read())


class HostileValuesTest(unittest.TestCase):
    """Values of the right type that no run writes: refused when the file is loaded, with the field
    named, or (long text) cut there; never an OverflowError, an 'infx' ratio or a 200 MB summary."""

    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)
        self.path = os.path.join(self.directory.name, "results.json")

    def load_text(self, text):
        with open(self.path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return results.load(self.path)

    def assert_refused(self, change, field, text=None):
        document = fixture_document()
        change(document)
        with self.assertRaises(results.ResultsError) as caught:
            self.load_text(text(json.dumps(document)) if text else json.dumps(document))
        message = str(caught.exception)
        self.assertIn(f"{field}: ", message)
        self.assertIn("out of range", message)
        self.assertNotIn("\n", message)
        self.assertLess(len(message), 600)  # the value is shown short, whatever its digits
        return message

    def test_sizes_and_batches_beyond_what_a_study_binary_takes(self):
        entry = lambda d: d["studies"]["matmul"]["entries"][3]  # noqa: E731
        for value in (10 ** 400, 2 ** 31, 1099511627776):
            with self.subTest(digits=len(str(value))):
                self.assert_refused(lambda d: entry(d).update(n=value), "studies.matmul.entries[3].n")
        self.assert_refused(lambda d: entry(d).update(batch=2 ** 40), "studies.matmul.entries[3].batch")
        self.assert_refused(lambda d: entry(d).update(n=96.5), "studies.matmul.entries[3].n")
        self.assert_refused(lambda d: d["studies"]["matmul"].update(sizes=[64, 10 ** 400]),
                            "studies.matmul.sizes[1]")
        self.assert_refused(lambda d: d["references"]["numpy"]["results"][0].update(n=2 ** 63),
                            "references.numpy.results[0].n")
        entry_document = fixture_document()
        entry(entry_document).update(n=2 ** 31 - 1)
        results.validate(entry_document)  # the binaries' largest size is a size

    def test_times_beyond_a_day_or_below_a_picosecond(self):
        times = lambda d: d["studies"]["matmul"]["entries"][3]["time_s"]  # noqa: E731
        self.assert_refused(lambda d: times(d).update(median=1e308), "studies.matmul.entries[3].time_s.median")
        self.assert_refused(lambda d: times(d).update(max=2 * 86400.0), "studies.matmul.entries[3].time_s.max")
        self.assert_refused(lambda d: times(d)["samples"].append(1e-300),
                            "studies.matmul.entries[3].time_s.samples[3]")
        self.assert_refused(lambda d: times(d).update(stddev=1e300), "studies.matmul.entries[3].time_s.stddev")
        self.assert_refused(lambda d: d["references"]["numpy"]["results"][0]["time_s"].update(median=1e308),
                            "references.numpy.results[0].time_s.median")

    def test_numbers_that_overflow_anywhere(self):
        """1e400 parses as infinity; 1e308 and huge integers are finite but no run records them, and
        their ratios and products are infinite."""
        entry = lambda d: d["studies"]["matmul"]["entries"][3]  # noqa: E731
        self.assert_refused(lambda d: entry(d).update(flop_per_s=1e308), "studies.matmul.entries[3].flop_per_s")
        self.assert_refused(lambda d: entry(d).update(flop_per_s="HUGE"), "studies.matmul.entries[3].flop_per_s",
                            text=lambda t: t.replace('"HUGE"', "1e400"))
        self.assert_refused(lambda d: d["machine"].update(memory_total_bytes=10 ** 400), "machine.memory_total_bytes")
        self.assert_refused(lambda d: d["studies"]["matmul"]["derived"].update(anything=[1.0, -1e300]),
                            "studies.matmul.derived.anything[1]")

    def test_a_duplicated_entry_name_is_refused(self):
        def duplicate(document):
            entries = document["studies"]["matmul"]["entries"]
            copy_ = copy.deepcopy(entries[3])
            copy_["time_s"]["median"] *= 4511
            entries.append(copy_)
        document = fixture_document()
        duplicate(document)
        with self.assertRaises(results.ResultsError) as caught:
            self.load_text(json.dumps(document))
        self.assertIn("studies.matmul.entries[24].name: 'matmul/openblas/cpu/host/fp32/n:96' is also entries[3]",
                      str(caught.exception))

    def test_the_same_entry_of_two_gpus_is_no_duplicate(self):
        """A gathered run of every GPU of a node (run --gpus) has each entry once per GPU."""
        document = fixture_document()
        entries = document["studies"]["matmul"]["entries"]
        document["studies"]["matmul"]["entries"] = [{**entry, "gpu": gpu} for gpu in (0, 1) for entry in entries]
        results.validate(document)

    def test_long_text_is_cut_when_loaded(self):
        document = fixture_document()
        document["warnings"].append("x" * 20_000_000)
        document["studies"]["matmul"]["entries"][3].update(status="error", message="y" * 100_000, time_s=None)
        started = time.monotonic()
        loaded = self.load_text(json.dumps(document))
        self.assertLess(time.monotonic() - started, 10)
        warning, message = loaded["warnings"][-1], loaded["studies"]["matmul"]["entries"][3]["message"]
        self.assertLess(len(warning), 20_000)
        self.assertTrue(warning.startswith("x" * 1000))
        self.assertIn("cut from 20000000 characters", warning)
        self.assertIn("cut from 100000 characters", message)
        results.validate(loaded)

    def test_ratios_of_extreme_numbers_render_as_no_number(self):
        from gpubench_driver.lib import formatting
        self.assertEqual(formatting.ratio(1e308 / 1e-300), "n/a")
        self.assertEqual(formatting.ratio(float("nan")), "n/a")
        self.assertEqual(formatting.seconds(float("inf")), "n/a")
        self.assertEqual(formatting.rate(float("inf")), "n/a")
        self.assertEqual(formatting.ratio(4.5), "4.50x")


def _paths(node, prefix=()):
    """Every path into a JSON document (the first two items of each list)."""
    if prefix:
        yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node[:2]):
            yield from _paths(value, prefix + (index,))


class HostileFileTest(unittest.TestCase):
    """Every field of a results file replaced by a value of another type or a hostile string:
    the file is refused with a ResultsError naming the field, or its report is written; nothing
    else (no TypeError half-way through a page)."""

    def test_every_field_replaced(self):
        from gpubench_driver.stages import analyse, render
        with open(fixture("results_v1.json"), encoding="utf-8") as stream:
            original = json.load(stream)
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "results.json")
            for where in _paths(original):
                for value in ("<script>alert(1)</script>", 7, [], {}, None, True):
                    document = json.loads(json.dumps(original))
                    node = document
                    for key in where[:-1]:
                        node = node[key]
                    node[where[-1]] = value
                    with open(path, "w", encoding="utf-8") as stream:
                        json.dump(document, stream)
                    try:
                        loaded = results.load(path)
                        analyse.derive_findings(loaded, 0)
                        text = render.render(loaded, [], directory)
                    except results.ResultsError:
                        continue
                    self.assertNotIn("<script>", text, where)


if __name__ == "__main__":
    unittest.main()
