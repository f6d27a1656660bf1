"""gpubench fleet: simulated nodes built from one real node's check.json (fixtures/fleet_check_h200x4.json, trimmed
from results/h200x4-node/check.json.gz), each node a copy with its figures moved by a few tenths of a percent, one
node's GPU made 10% slower than its node's others on its GEMMs and one of its links slower; and nodes' runs."""
import contextlib
import io
import json
import math
import os
import statistics
import tempfile
import unittest

import support
import test_gpus

from gpubench_driver.commands import cli
from gpubench_driver.lib import results
from gpubench_driver.stages import analyse, check_measure, gpus

CHECK = support.fixture("fleet_check_h200x4.json")
NODES = [f"node{number:02d}" for number in range(1, 6)]
SLOW_NODE, SLOW_GPU, SLOW_LINK = "node03", 2, "p2p/gpu0-gpu1"


def jitter(number):
    """A node's own small offset (within 0.3%), so that no two nodes measure alike."""
    return 1 + 0.003 * math.sin(number + 1)


def check_node(folder, number, slow=None, verdict=None):
    """A node's check.json: the fixture's, each figure moved by the node's jitter; slow: the share of its fellows'
    median that GPU SLOW_GPU's GEMMs reach (SLOW_LINK then at 0.75 of its own)."""
    with open(CHECK, encoding="utf-8") as stream:
        document = json.load(stream)
    values = {}
    for row in (row for part in document["gpus"] for row in part["figures"]):
        values.setdefault((row["key"], row["where"]), []).append(row["value"])
    for part in document["gpus"] + [document["node"]]:
        for row in part["figures"]:
            if row["value"] is None:
                continue
            factor = jitter(number)
            if slow and part.get("index") == SLOW_GPU and row["study"] == "precision":
                factor *= slow * statistics.median(values[row["key"], row["where"]]) / row["value"]
            if slow and part is document["node"] and row["key"] == SLOW_LINK:
                factor *= 0.75
            row["value"] *= factor
            if row.get("fraction_of_reference") is not None:
                row["fraction_of_reference"] *= factor
    if verdict:
        document["verdict"] = verdict
    os.makedirs(folder)
    with open(os.path.join(folder, "check.json"), "w", encoding="utf-8") as stream:
        json.dump(document, stream)
    return folder


def write_gemm_times(folder):
    """Each GPU's results.json beside its check.json, as the check writes it, holding its GEMM entries (an n = 8192
    GEMM's time at its figure's rate): what gives a figure its noise model kind."""
    with open(os.path.join(folder, "check.json"), encoding="utf-8") as stream:
        parts = json.load(stream)["gpus"]
    for part in parts:
        document = test_gpus.run_document(test_gpus.GPUS[0], (0.1, 0.002))
        document["studies"]["matmul"]["entries"] = [test_gpus.entry(row["entry"], 2 * 8192 ** 3 / row["value"])
                                                    for row in part["figures"] if row["study"] == "precision"]
        analyse.derive_findings(document, 0)
        os.makedirs(os.path.join(folder, os.path.dirname(part["results"])))
        results.write(document, os.path.join(folder, part["results"]))


def fleet(*folders, out):
    """(exit status, fleet.json, stderr) of gpubench fleet."""
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(["fleet", *folders, "--out", out])
    with open(os.path.join(out, "fleet.json"), encoding="utf-8") as stream:
        return status, json.load(stream), errors.getvalue()


class CheckFleetTest(unittest.TestCase):
    def setUp(self):
        self.temp = tempfile.TemporaryDirectory()
        self.addCleanup(self.temp.cleanup)
        self.out = os.path.join(self.temp.name, "out")

    def nodes(self, slow=None, share=0.9, **verdicts):
        return [check_node(os.path.join(self.temp.name, name), number, share if name == slow else None,
                           verdicts.get(name))
                for number, name in enumerate(NODES)]

    def test_the_slow_gpu_and_link_and_only_they_are_named(self):
        status, found, _ = fleet(*self.nodes(slow=SLOW_NODE), out=self.out)
        self.assertEqual((status, found["verdict"], found["drain"]), (1, "drain", [SLOW_NODE]))
        below = [(row["node"], row["gpu"], row["figure"]) for group in found["groups"] for row in group["below"]
                 if group["bound"] != "host"]
        gemms = [group["figure"] for group in found["groups"] if group["key"].startswith("rate/")
                 and "GEMM" in group["figure"]]
        self.assertEqual(sorted(below, key=str), sorted([(SLOW_NODE, SLOW_GPU, name) for name in gemms]
                                               + [(SLOW_NODE, None, "Peer copy gpu0 to gpu1")], key=str))
        node = next(node for node in found["nodes"] if node["name"] == SLOW_NODE)
        self.assertTrue(all(text.startswith(("GPU 2:", "link:")) for text in node["below"]), node["below"])
        with open(os.path.join(self.out, "fleet.md"), encoding="utf-8") as stream:
            page = stream.read()
        self.assertIn(f"drain {SLOW_NODE}.", page)
        self.assertTrue(os.path.isfile(os.path.join(self.out, "fleet.html")))

    def test_results_files_beside_the_checks_narrow_the_threshold(self):
        """A GPU 5% slow on its GEMMs: within the wider kind's noise from check.json alone, beyond it where each
        GPU's results.json gives the GEMMs' times (device-timed, 100 us or more)."""
        folders = self.nodes(slow=SLOW_NODE, share=0.95)
        status, found, _ = fleet(*folders, out=self.out)
        self.assertEqual((status, found["drain"]), (1, [SLOW_NODE]))  # the link alone
        self.assertTrue(all(row["gpu"] is None for group in found["groups"] for row in group["below"]
                            if group["bound"] != "host"))
        for folder in folders:
            write_gemm_times(folder)
        status, found, _ = fleet(*folders, out=self.out)
        gemms = [group for group in found["groups"] if group["key"].startswith("rate/") and "GEMM" in group["figure"]]
        self.assertEqual({group["kind"] for group in gemms}, {"throughput-long"})
        self.assertEqual({(row["node"], row["gpu"]) for group in gemms for row in group["below"]},
                         {(SLOW_NODE, SLOW_GPU)})

    def test_a_healthy_fleet_names_none(self):
        status, found, _ = fleet(*self.nodes(), out=self.out)
        self.assertEqual((status, found["verdict"], found["drain"]), (0, "healthy", []))
        self.assertTrue(all(group["detectable"] > group["beyond_noise"] > 0 for group in found["groups"]))

    def test_a_damaged_node_is_reported_and_skipped(self):
        folders = self.nodes(slow=SLOW_NODE)
        with open(os.path.join(folders[0], "check.json"), "r+", encoding="utf-8") as stream:
            stream.truncate(1000)
        hostile = os.path.join(self.temp.name, "node09")
        os.makedirs(hostile)
        with open(os.path.join(hostile, "check.json"), "w", encoding="utf-8") as stream:
            json.dump({"schema": "gpubench-check", "schema_version": 1, "run": {"id": "x"}, "gpus": "none"}, stream)
        status, found, errors = fleet(*folders, hostile, out=self.out)
        self.assertEqual((status, found["drain"]), (1, [SLOW_NODE]))
        self.assertEqual(len(found["skipped"]), 2)
        self.assertIn(os.path.join(folders[0], "check.json"), errors)
        self.assertIn("gpus: expected a list", errors)
        status, found, _ = fleet(*folders[3:], hostile, out=self.out)  # the rest healthy but one unread
        self.assertEqual((status, found["verdict"]), (2, "not judged"))

    def test_a_failed_check_drains_its_node(self):
        status, found, _ = fleet(*self.nodes(node04="below"), out=self.out)
        self.assertEqual((status, found["drain"]), (1, ["node04"]))

    def test_a_figure_not_measured_leaves_its_node_not_judged(self):
        folders = self.nodes()
        path = os.path.join(folders[1], "check.json")
        with open(path, encoding="utf-8") as stream:
            document = json.load(stream)
        figures = document["gpus"][1]["figures"]
        figures[:] = [row for row in figures if row["study"] != "stream"] + [
            check_measure.not_measured("stream", "its binary exited with status 1")]
        figures[0]["entry"] = ["a list where a name belongs"]  # a field the loader does not check: ignored
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(document, stream)
        status, found, _ = fleet(*folders, out=self.out)
        node = next(node for node in found["nodes"] if node["name"] == NODES[1])
        self.assertEqual((status, node["verdict"]), (2, "not judged"))
        self.assertEqual(node["errors"], ["GPU 1: stream: not measured (its binary exited with status 1)"])

    def test_too_few_gpus_of_a_model_are_not_judged(self):
        status, found, _ = fleet(self.nodes()[0], out=self.out)
        judged = {group["key"]: group["kind"] is not None for group in found["groups"]}
        self.assertFalse(judged["allreduce/bus"])  # one node's all-reduce: nothing to set it against
        self.assertTrue(judged["rate/fp32"] and judged["p2p/gpu0-gpu1"])  # its 4 GPUs, its 12 links
        self.assertEqual(status, 0)


class RunFleetTest(unittest.TestCase):
    """Runs' folders (test_gpus's runs of a GEMM, 100 ms a call), each node's with its host renamed."""
    def write(self, temp, documents):
        folders = []
        for name, document in zip(NODES, documents):
            document["machine"]["host"] = name
            analyse.derive_findings(document, 0)  # as a run writes them
            folders.append(os.path.join(temp, name))
            os.makedirs(folders[-1])
            results.write(document, os.path.join(folders[-1], "results.json"))
        return folders

    def test_runs_of_one_gpu_name_the_slow_node(self):
        with tempfile.TemporaryDirectory() as temp:
            folders = self.write(temp, [test_gpus.run_document(test_gpus.GPUS[0], (0.1 * jitter(number) * (
                1.1 if name == SLOW_NODE else 1), 0.002)) for number, name in enumerate(NODES)])
            status, found, _ = fleet(*folders, out=os.path.join(temp, "out"))
        self.assertEqual((status, found["drain"]), (1, [SLOW_NODE]))
        self.assertEqual([(row["node"], row["gpu"], row["figure"]) for group in found["groups"]
                          for row in group["below"]], [(SLOW_NODE, 0, test_gpus.HEADLINE)])

    def test_gathered_runs_name_the_slow_gpu(self):
        """run --gpus all folders (test_gpus's node of three GPUs, gathered), one node's GPU 2 10% slower."""
        with tempfile.TemporaryDirectory() as temp:
            folders = self.write(temp, [gpus.gather(test_gpus.parts(slow=1.1 if number == 1 else 1.0), "node", ["run"])
                                        for number in range(4)])
            status, found, _ = fleet(*folders, out=os.path.join(temp, "out"))
        self.assertEqual((status, found["drain"]), (1, [NODES[1]]))
        self.assertEqual([(row["node"], row["gpu"], row["figure"]) for group in found["groups"]
                          for row in group["below"]], [(NODES[1], 2, test_gpus.HEADLINE)])
        self.assertEqual({group["model"] for group in found["groups"]}, {test_gpus.GPUS[0].name})


class BadInputTest(unittest.TestCase):
    def test_an_unreadable_noise_model_cannot_judge(self):
        with tempfile.TemporaryDirectory() as temp:
            broken = os.path.join(temp, "noise.json")
            with open(broken, "w", encoding="utf-8") as stream:
                stream.write("{")
            errors = io.StringIO()
            with contextlib.redirect_stderr(errors):
                status = cli.main(["fleet", temp, "--noise-model", broken, "--out", os.path.join(temp, "out")])
        self.assertEqual(status, 2)
        self.assertIn(f"could not judge: cannot read the noise model {broken}", errors.getvalue())


if __name__ == "__main__":
    unittest.main()
