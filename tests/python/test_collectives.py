"""The collectives study's findings (derive_collectives: algorithm and bus bandwidth on nccl-tests'
formulas, one rank's missing bus bandwidth, the largest all-reduce), its summary sections, its chart,
its progress line and its comparison with the torch.distributed reference; and its binary: --describe,
and on a GPU every collective in every placement verifies."""
import copy
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import support

from gpubench_driver import studies
from gpubench_driver.lib import charts, gbench, stats
from gpubench_driver.lib.document import to_markdown
from gpubench_driver.studies import collectives
from gpubench_driver.stages import reference

FACTORS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
           "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0}


def collective_entry(collective, placement, log2_bytes, seconds, ranks=8):
    entry = support.blank_entry(f"collectives/{collective}/gpu/{placement}/fp32/n:{log2_bytes}")
    samples = [seconds * (1 + 0.001 * k) for k in range(-5, 6)]
    entry.update(status="ok", repetitions=1, iterations=len(samples), time_s=stats.summarize(samples),
                 message_bytes=float(1 << log2_bytes), ranks=float(ranks), bus_factor=FACTORS[collective](ranks))
    return entry


def entries(ranks=8):
    found = [collective_entry("all_reduce", "out_of_place", 33, (1 << 33) / 200e9, ranks),  # algbw 200 GB/s
             collective_entry("all_reduce", "out_of_place", 16, 20e-6, ranks),
             collective_entry("all_gather", "out_of_place", 28, (1 << 28) / 300e9, ranks),
             collective_entry("broadcast", "in_place", 28, (1 << 28) / 100e9, ranks)]
    wrong = support.blank_entry("collectives/all_to_all/gpu/out_of_place/fp32/n:3")
    wrong.update(status="skipped", message="skipped: a message of 2^3 bytes holds less than one FP32 value per rank of 8")
    return found + [wrong]


def document_of(found):
    study = {"entries": found, "invocations": [], "implementations": []}
    study["derived"] = collectives.derive(study)
    return {"studies": {"collectives": study}, "machine": {"gpus": []}, "references": None}


class DeriveTest(unittest.TestCase):
    def test_algorithm_and_bus_bandwidth_on_nccl_tests_formulas(self):
        derived = collectives.derive({"entries": entries()})
        rows = {(row["impl"], row["mode"]): row for row in derived["curves"]}
        all_reduce = rows[("all_reduce", "out_of_place")]
        self.assertEqual([point["n"] for point in all_reduce["points"]], [16, 33])  # in size order
        self.assertAlmostEqual(all_reduce["largest_algorithm_bytes_per_s"] / 200e9, 1, places=6)
        self.assertAlmostEqual(all_reduce["largest_bus_bytes_per_s"] / 350e9, 1, places=6)  # x 2 (8-1)/8
        self.assertAlmostEqual(all_reduce["smallest_latency_s"], 20e-6)
        self.assertAlmostEqual(rows[("all_gather", "out_of_place")]["largest_bus_bytes_per_s"] / 262.5e9, 1, places=6)
        self.assertAlmostEqual(rows[("broadcast", "in_place")]["largest_bus_bytes_per_s"] / 100e9, 1, places=6)
        largest = derived["largest_all_reduce"]
        self.assertEqual((largest["n"], largest["message_bytes"], largest["ranks"]), (33, 1 << 33, 8))
        self.assertIsNone(derived["one_rank_note"])
        self.assertEqual(len(derived["failures"]), 1)

    def test_one_rank_has_no_bus_bandwidth(self):
        derived = collectives.derive({"entries": entries(ranks=1)})
        self.assertTrue(all(point["bus_bytes_per_s"] is None for row in derived["curves"] for point in row["points"]))
        self.assertTrue(all(point["algorithm_bytes_per_s"] > 0 for row in derived["curves"] for point in row["points"]))
        self.assertIn("bus factor is 0", derived["one_rank_note"])


class SummaryTest(unittest.TestCase):
    def text(self, found, references=None):
        document = document_of(found)
        document["references"] = references
        return to_markdown(collectives.sections(document["studies"]["collectives"], document))

    def test_sections(self):
        text = self.text(entries())
        self.assertIn("| all\\_reduce | out\\_of\\_place | 8 | 20.00 us (64.0 KiB) | 8.0 GiB | 200.00 GB/s |", text)
        self.assertIn("350.00 GB/s", text)  # the 8 GiB all-reduce's bus bandwidth
        self.assertIn("2(n-1)/n", text)
        self.assertIn("holds less than one FP32 value", text)
        self.assertNotIn("Bus bandwidth n/a", text)

    def test_one_rank_says_why_there_is_no_bus_bandwidth(self):
        text = self.text(entries(ranks=1))
        self.assertIn("Bus bandwidth n/a: one rank", text)
        self.assertIn("n/a |", text)

    def test_reference_comparison(self):
        found = entries() + [collective_entry("all_reduce", "in_place", 33, (1 << 33) / 150e9)]
        result = {"workload": "all_reduce", "n": 33, "time_s": {"median": (1 << 33) / 202e9}}
        references = {"torch_allreduce": {"results": [result], "notes": []}}
        rows = {row["study"]: row for row in reference.compare(references, found, "collectives")}
        self.assertEqual(list(rows), ["all_reduce/out_of_place"])
        self.assertAlmostEqual(rows["all_reduce/out_of_place"]["time_ratio"], 202 / 200)
        document = document_of(found)
        document["references"] = references
        document["studies"]["collectives"]["derived"]["reference_comparison"] = list(rows.values())
        text = to_markdown(collectives.sections(document["studies"]["collectives"], document))
        self.assertIn("1.010", text)
        self.assertIn("within 2%", text)

    def test_nothing_measured(self):
        self.assertIn("No collective was measured.", self.text([]))


class PlotsTest(unittest.TestCase):
    def draw(self, ranks):
        pyplot = charts.load_pyplot()
        if pyplot is None:
            self.skipTest("no matplotlib")
        study = document_of(entries(ranks))["studies"]["collectives"]
        with tempfile.TemporaryDirectory() as plot_dir:
            paths = studies.BY_NAME["collectives"].plots(pyplot, copy.deepcopy(study), plot_dir)
            self.assertTrue(all(os.path.getsize(path) > 0 for path in paths))
        return [path.rsplit("/", 1)[-1] for path in paths]

    def test_bus_bandwidth_against_the_message_size(self):
        self.assertEqual(self.draw(8), ["collectives_bus_bandwidth.png"])

    def test_one_rank_draws_the_algorithm_bandwidth(self):
        self.assertEqual(self.draw(1), ["collectives_algorithm_bandwidth.png"])

    def test_nothing_measured_draws_nothing(self):
        pyplot = charts.load_pyplot()
        if pyplot is None:
            self.skipTest("no matplotlib")
        with tempfile.TemporaryDirectory() as plot_dir:
            self.assertEqual(studies.BY_NAME["collectives"].plots(pyplot, document_of([])["studies"]["collectives"],
                                                                  plot_dir), [])


class ProgressTest(unittest.TestCase):
    def test_algorithm_and_bus_bandwidth(self):
        line = gbench.ConsoleResult("collectives/all_reduce/gpu/out_of_place/fp32/n:30", median_s=0.01,
                                    counters={"message_bytes": float(1 << 30), "ranks": 8.0, "bus_factor": 1.75})
        self.assertEqual(support.outcome(line), "median 10.00 ms  algbw 107.37 GB/s  busbw 187.90 GB/s")

    def test_one_rank_has_no_bus_bandwidth(self):
        self.assertEqual(collectives.progress_rates({}, {"message_bytes": 1e9, "ranks": 1.0, "bus_factor": 0.0}, 1.0),
                         ["algbw 1.00 GB/s"])


def reference_script():
    spec = importlib.util.spec_from_file_location("reference_allreduce",
                                                  os.path.join(support.SCRIPTS_DIR, "reference_allreduce.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeTensor:
    def __init__(self, value=0):
        self.value = value

    def uniform_(self, low, high):
        return self

    def item(self):
        return self.value


class FakeTorch:
    int64 = "int64"

    def empty(self, count, device):
        return FakeTensor()

    def tensor(self, values, dtype):
        return FakeTensor(values[0])


class FakeDist:
    """One rank's torch.distributed: rank 0's broadcasts go into `wire`, the others' come from it."""
    def __init__(self, rank, wire):
        self.rank, self.wire, self.all_reduces = rank, wire, 0

    def get_rank(self):
        return self.rank

    def get_world_size(self):
        return 2

    def broadcast(self, message, source, group):
        if self.rank == source:
            self.wire.append(message.value)
        else:
            message.value = self.wire.pop(0)

    def all_reduce(self, tensor):
        self.all_reduces += 1


class ReferenceScriptTest(unittest.TestCase):
    """reference_allreduce.py: every rank calls all_reduce as often as rank 0's protocol chose to, and stops
    where rank 0 failed; without torch, a note."""
    def test_the_other_ranks_call_as_often_as_rank_zero(self):
        module = reference_script()
        wire = []
        leader = FakeDist(0, wire)

        def protocol_of_seven_calls(torch, operation, protocol):
            for _ in range(7):
                operation()
            return {"time_s": {"median": 1.0}}
        with mock.patch.object(module, "cuda_event_timing", protocol_of_seven_calls), \
                mock.patch.object(module, "nccl_version", lambda torch: "2.0.0"):
            torch = FakeTorch()
            torch.__version__, torch.version, torch.cuda = "x", mock.Mock(cuda="13.0"), mock.Mock()
            found = module.time_size(torch, leader, None, 10, {})
            follower = FakeDist(1, wire)
            self.assertIsNone(module.time_size(torch, follower, None, 10, {}))
        self.assertEqual((leader.all_reduces, follower.all_reduces), (7, 7))
        self.assertEqual(wire, [])
        self.assertEqual((found["n"], found["message_bytes"], found["ranks"]), (10, 1024, 2))

    def test_rank_zeros_failure_stops_the_others(self):
        module = reference_script()
        wire = []

        def failing(torch, operation, protocol):
            operation()
            raise RuntimeError("CUDA out of memory")
        with mock.patch.object(module, "cuda_event_timing", failing):
            with self.assertRaises(RuntimeError):
                module.time_size(FakeTorch(), FakeDist(0, wire), None, 10, {})
            follower = FakeDist(1, wire)
            with self.assertRaises(module.RankZeroFailed):
                module.time_size(FakeTorch(), follower, None, 10, {})
        self.assertEqual(follower.all_reduces, 1)

    def test_without_torch_a_note(self):
        if importlib.util.find_spec("torch") is not None:
            self.skipTest("torch is installed here")
        with open(support.fixture("measurement_protocol.json"), encoding="utf-8") as stream:
            protocol = stream.read()
        ran = subprocess.run([sys.executable, os.path.join(support.SCRIPTS_DIR, "reference_allreduce.py"), "--protocol",
                              protocol, "torch", "33"], capture_output=True, text=True, timeout=60)
        self.assertEqual(ran.returncode, 0, ran.stderr)
        output = json.loads(ran.stdout)
        self.assertEqual(output["results"], [])
        self.assertTrue(output["notes"][0].startswith("not run: no torch"))


BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
STUDY = os.path.join(BUILD_DIR, "bench", "gpubench_collectives")


@unittest.skipUnless(os.access(STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset, or the study not built (no NCCL)")
class BinaryTest(unittest.TestCase):
    def describe(self):
        return json.loads(subprocess.run([STUDY, "--describe"], check=True, capture_output=True, text=True).stdout)

    def test_axes_and_the_sweep_from_8_bytes_to_8_gib(self):
        described = self.describe()
        self.assertEqual(described["axis_names"]["n"], "log2_bytes")
        self.assertEqual(described["default_sizes"][0], 3)
        self.assertEqual(described["default_sizes"][-1], 33)
        modes = {impl["id"]: impl["modes"] for impl in described["implementations"]}
        self.assertEqual(set(modes), {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"})
        self.assertNotIn("in_place", modes["all_to_all"])
        self.assertGreater(described["nccl_version"], 0)

    def test_sizes_outside_8_bytes_to_8_gib_have_no_entries(self):
        """A --sizes shared with the other studies may hold sizes that are no log2 of a message here."""
        described = self.describe()
        if not described["gpu"]["available"]:
            self.skipTest("no GPU: no entry is registered at any size")
        listed = subprocess.run([STUDY, "--sizes=3,34,4096", "--benchmark_list_tests"], check=True, capture_output=True,
                                text=True).stdout.split()
        self.assertTrue(listed)
        self.assertTrue(all(name.split("/")[5] == "n:3" for name in listed), listed)

    def test_every_collective_verifies(self):
        """On a GPU (one or several): every collective in every placement, with and without a CUDA graph,
        verifies on every rank (no error), at sizes below, at and above one FP32 value per rank."""
        described = self.describe()
        if not described["gpu"]["available"]:
            self.skipTest("no GPU: " + described["gpu"]["reason"])
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            subprocess.run([STUDY, "--sizes=3,6,17,22", "--no-telemetry", "--benchmark_out_format=json",
                            "--benchmark_out=" + out], check=True, capture_output=True)
            with open(out, encoding="utf-8") as stream:
                runs = json.load(stream)["benchmarks"]
        self.assertTrue(runs)
        for run in runs:
            message = run.get("error_message", "")
            if message.startswith("skipped: a message of"):
                continue
            self.assertFalse(run.get("error_occurred"), run["name"] + ": " + message)
            self.assertGreater(run["message_bytes"], 0, run["name"])


if __name__ == "__main__":
    unittest.main()
