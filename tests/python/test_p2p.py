"""The p2p study: its findings on a synthetic two-GPU run (latency and bandwidth per route, the fraction of
the link, the matrices the heat maps draw), the summary's sections, the heat maps and the progress line;
and, on a GPU, the binary end to end (its pair entries skipped with one GPU)."""
import copy
import json
import os
import subprocess
import tempfile
import unittest

import support

from gpubench_driver import studies
from gpubench_driver.lib import charts, gbench, stats
from gpubench_driver.lib.document import to_markdown
from gpubench_driver.studies import p2p

GIB = float(1 << 30)
NVLINK = 450e9  # an H100's 18 links x 25 GB/s, one way
PCIE = 63.0e9
LATENCY_N, BANDWIDTH_N = 16, 64 << 20


def route_entry(engine, direction, route, n, seconds, peak=None):
    entry = support.blank_entry(f"p2p/{engine}/gpu/{direction}/{route}/n:{n}")
    legs = 2 if direction == "both_ways" else 1
    samples = [seconds * (1 + 0.01 * k / 10) for k in range(-10, 11)]
    entry.update(status="ok", repetitions=1, iterations=len(samples), time_s=stats.summarize(samples),
                 bytes_transferred=n * legs, link_peak_bytes_per_s=None if peak is None else peak * legs)
    return entry


def route(engine, direction, name, latency_s, bytes_per_s, peak):
    legs = 2 if direction == "both_ways" else 1
    return [route_entry(engine, direction, name, LATENCY_N, latency_s, peak),
            route_entry(engine, direction, name, BANDWIDTH_N, BANDWIDTH_N * legs / bytes_per_s, peak)]


def entries():
    found = (route("copy_engine", "one_way", "gpu0-gpu1", 10e-6, 360e9, NVLINK)
             + route("copy_engine", "one_way", "gpu1-gpu0", 12e-6, 315e9, NVLINK)
             + route("copy_engine", "both_ways", "gpu0-gpu1", 14e-6, 630e9, NVLINK)
             + route("copy_engine", "one_way", "host-gpu0", 8e-6, 50.4e9, PCIE)
             + route("copy_engine", "one_way", "gpu0-host", 9e-6, 47.25e9, None))
    skipped = support.blank_entry("p2p/sm_copy/gpu/one_way/gpu0-gpu1/n:16")
    skipped.update(status="skipped", message="skipped: no peer access between gpu0 and gpu1 (cudaDeviceCanAccessPeer)")
    return found + [skipped]


TOPOLOGY = {"visible_gpus": 2,
            "gpus": [{"gpu": "gpu0", "pci_bus_id": "00000000:18:00.0", "pcie_generation": 5, "pcie_width": 16,
                      "pcie_bytes_per_s": PCIE, "nvlinks_active": 18, "nvlink_version": 6,
                      "nvlink_bytes_per_s": NVLINK, "unavailable_reason": None},
                     {"gpu": "gpu1", "pci_bus_id": "00000000:2a:00.0", "pcie_generation": 5, "pcie_width": 16,
                      "pcie_bytes_per_s": PCIE, "nvlinks_active": 18, "nvlink_version": 6,
                      "nvlink_bytes_per_s": NVLINK, "unavailable_reason": None}],
            "pairs": [{"pair": "gpu0-gpu1", "common_ancestor": "across_numa_nodes", "link": "nvlink",
                       "link_bytes_per_s": NVLINK, "unavailable_reason": None}]}


def document_of(found, topology=TOPOLOGY):
    study = {"entries": found, "invocations": [], "implementations": [], "topology": topology}
    study["derived"] = p2p.derive(study)
    return {"studies": {"p2p": study}, "machine": {"gpus": []}}


class DeriveTest(unittest.TestCase):
    def setUp(self):
        self.derived = p2p.derive({"entries": entries(), "topology": TOPOLOGY})
        self.rows = {(row["impl"], row["direction"], row["route"]): row for row in self.derived["routes"]}

    def test_latency_bandwidth_and_fraction_of_the_link(self):
        row = self.rows[("copy_engine", "one_way", "gpu0-gpu1")]
        self.assertAlmostEqual(row["latency_s"], 10e-6)
        self.assertEqual((row["latency_n"], row["bandwidth_n"]), (LATENCY_N, BANDWIDTH_N))
        self.assertAlmostEqual(row["bandwidth_bytes_per_s"], 360e9)
        self.assertAlmostEqual(row["fraction_of_link"], 0.8)
        self.assertTrue(row["between_gpus"])

    def test_both_ways_is_held_to_twice_the_link(self):
        row = self.rows[("copy_engine", "both_ways", "gpu0-gpu1")]
        self.assertAlmostEqual(row["bandwidth_bytes_per_s"], 630e9)
        self.assertAlmostEqual(row["fraction_of_link"], 0.7)

    def test_a_link_without_a_rate_has_no_fraction(self):
        row = self.rows[("copy_engine", "one_way", "gpu0-host")]
        self.assertIsNone(row["fraction_of_link"])
        self.assertFalse(row["between_gpus"])
        self.assertAlmostEqual(self.rows[("copy_engine", "one_way", "host-gpu0")]["fraction_of_link"], 0.8)

    def test_matrices_put_the_source_down_and_the_destination_across(self):
        one_way = next(m for m in self.derived["matrices"] if (m["impl"], m["direction"]) == ("copy_engine", "one_way"))
        self.assertEqual(one_way["ends"], ["host", "gpu0", "gpu1"])
        bandwidth = one_way["bandwidth_bytes_per_s"]
        self.assertAlmostEqual(bandwidth[1][2], 360e9)  # gpu0 -> gpu1
        self.assertAlmostEqual(bandwidth[2][1], 315e9)  # gpu1 -> gpu0
        self.assertAlmostEqual(bandwidth[0][1], 50.4e9)  # host -> gpu0
        self.assertIsNone(bandwidth[0][2])  # host -> gpu1 was not measured
        self.assertIsNone(bandwidth[1][1])
        self.assertAlmostEqual(one_way["latency_s"][2][1], 12e-6)

    def test_gpus_order_by_index_not_by_name(self):
        self.assertEqual(sorted(["gpu10", "gpu2", "host", "gpu0"], key=p2p.end_order),
                         ["host", "gpu0", "gpu2", "gpu10"])

    def test_skips_are_grouped_with_their_reason(self):
        failures = self.derived["failures"]
        self.assertEqual(len(failures), 1)
        self.assertEqual((failures[0]["impl"], failures[0]["precision"]), ("sm_copy", "gpu0-gpu1"))
        self.assertIn("no peer access", failures[0]["reason"])


class SummaryTest(unittest.TestCase):
    def text(self, found, topology=TOPOLOGY):
        document = document_of(found, topology)
        return to_markdown(p2p.sections(document["studies"]["p2p"], document))

    def test_sections(self):
        text = self.text(entries())
        self.assertIn("## P2P: topology (NVML)", text)
        self.assertIn("gpu0 at 00000000:18:00.0: PCIe Gen5 x16 (63.0 GB/s one way), 18 NVLinks active "
                      "(450.0 GB/s one way)", text)
        self.assertIn("gpu0-gpu1: nvlink, common ancestor across\\_numa\\_nodes, 450.0 GB/s one way", text)
        self.assertIn("| copy\\_engine | one\\_way | gpu0-gpu1 | 10.00 us (16 B) |", text)
        self.assertIn("| 450.0 GB/s | 80% |", text)
        self.assertIn("| copy\\_engine | one\\_way | gpu0-host | 9.00 us (16 B) |", text)
        self.assertIn("## P2P: skipped and failed entries", text)

    def test_one_gpu_and_nothing_measured(self):
        text = self.text([], {"visible_gpus": 1, "gpus": [], "pairs": []})
        self.assertIn("one GPU visible: no pair to measure", text)
        self.assertIn("No copy was measured.", text)
        self.assertIn("recorded no topology", self.text([], None))
        self.assertIn("no GPU visible: no pair to measure", self.text([], {"visible_gpus": 0, "gpus": [], "pairs": []}))


class PlotsTest(unittest.TestCase):
    def test_a_bandwidth_and_a_latency_heat_map_per_engine_and_direction(self):
        pyplot = charts.load_pyplot()
        if pyplot is None:
            self.skipTest("no matplotlib")
        study = document_of(entries())["studies"]["p2p"]
        with tempfile.TemporaryDirectory() as plot_dir:
            paths = studies.BY_NAME["p2p"].plots(pyplot, copy.deepcopy(study), plot_dir)
            self.assertTrue(all(os.path.getsize(path) > 0 for path in paths))
        self.assertEqual([path.rsplit("/", 1)[-1] for path in paths],
                         ["p2p_bandwidth_copy_engine_one_way.png", "p2p_latency_copy_engine_one_way.png",
                          "p2p_bandwidth_copy_engine_both_ways.png", "p2p_latency_copy_engine_both_ways.png"])


class ProgressTest(unittest.TestCase):
    def test_bandwidth(self):
        line = gbench.ConsoleResult("p2p/copy_engine/gpu/one_way/gpu0-gpu1/n:1073741824", median_s=0.5,
                                    counters={"bytes_transferred": GIB})
        self.assertEqual(support.outcome(line), "median 500.00 ms  2.00 GiB/s")


BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
STUDY = os.path.join(BUILD_DIR, "bench", "gpubench_p2p")


@unittest.skipUnless(os.access(STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or study binary not built")
class BinaryTest(unittest.TestCase):
    def describe(self):
        return json.loads(subprocess.run([STUDY, "--describe"], check=True, capture_output=True, text=True).stdout)

    def test_routes_name_both_ends(self):
        described = self.describe()
        self.assertEqual(described["axis_names"]["precision"], "route")
        routes = described["implementations"][0]["precisions"]
        self.assertIn("host-gpu0", routes)
        self.assertIn("gpu0-host", routes)
        self.assertIn("gpu0-gpu1", routes)  # with one GPU too: its entries say why they are skipped
        self.assertEqual(described["topology"]["visible_gpus"], len(described["topology"]["gpus"]))

    def test_every_entry_verifies_or_says_why_not(self):
        """On a GPU: every entry verifies (no error); with one GPU the pairs are skipped as such."""
        described = self.describe()
        if not described["gpu"]["available"]:
            self.skipTest("no GPU: " + described["gpu"]["reason"])
        one_gpu = described["topology"]["visible_gpus"] < 2
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            subprocess.run([STUDY, "--sizes=16,4112,1048576", "--no-telemetry", "--benchmark_out_format=json",
                            "--benchmark_out=" + out], check=True, capture_output=True)
            with open(out, encoding="utf-8") as stream:
                runs = json.load(stream)["benchmarks"]
        self.assertTrue(runs)
        for run in runs:
            message = run.get("error_message", "")
            source, _, destination = run["name"].split("/")[4].partition("-")
            if one_gpu and source != "host" and destination != "host":
                self.assertEqual(message, "skipped: one GPU visible", run["name"])
                continue
            if message.startswith("skipped: no peer access"):
                continue
            self.assertFalse(run.get("error_occurred"), run["name"] + ": " + message)
            self.assertGreater(run["bytes_transferred"], 0, run["name"])


if __name__ == "__main__":
    unittest.main()
