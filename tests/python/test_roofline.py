"""The roofline study's findings on a synthetic sweep (studies/roofline.py): the bandwidth and compute roof
each series reached, the measured ridge point, where the points turn from one roof to the other; its
sections and chart; and the claim it answers, "FLOPS are rarely the limit; memory bandwidth is",
for the other studies' entries under the measured roofs (claims.memory_bound)."""
import os
import tempfile
import unittest

import support

from gpubench_driver.lib import charts, results, stats
from gpubench_driver.studies import roofline
from gpubench_driver.stages import analyse, claims, plots, render

N = 1 << 25
BANDWIDTH, COMPUTE = 3.0e12, 60.0e12  # B/s and FLOP/s of the synthetic GPU in FP32
STEPS = (1, 4, 16, 64, 128, 256, 1024)


def chain_entry(device, precision, k, element=4, bandwidth=BANDWIDTH, compute=COMPUTE, n=N):
    """An ok entry of the sweep whose rate is min(compute, bandwidth x intensity)."""
    impl, mode = ("fma_kernel", "resident") if device == "gpu" else ("fma_loop", "host")
    made = support.blank_entry(f"roofline/{impl}/{device}/{mode}/{precision}/n:{n}/batch:{k}")
    flop, moved = 2.0 * k * n, 2.0 * n * element
    seconds = flop / min(compute, bandwidth * flop / moved)
    made.update(repetitions=1, iterations=1, time_s=stats.summarize([seconds]), flop=flop, flop_per_s=flop / seconds,
                memory_read_bytes=moved / 2, memory_written_bytes=moved / 2, array_bytes=float(n * element))
    return made


def sweep():
    return ([chain_entry("gpu", "fp32", k) for k in STEPS]
            + [chain_entry("gpu", "fp64", k, element=8, compute=30e12) for k in STEPS]
            + [chain_entry("cpu", "fp32", k, bandwidth=0.2e12, compute=3e12) for k in (1, 1024)])


def matmul_entry(n, seconds):
    """A resident cuBLAS GEMM: 2n^3 FLOP over 12n^2 bytes (A and B read, C written, FP32)."""
    made = support.blank_entry(f"matmul/cublas/gpu/resident/fp32/n:{n}")
    made.update(repetitions=1, iterations=1, time_s=stats.summarize([seconds]), flop=2.0 * n ** 3,
                flop_per_s=2.0 * n ** 3 / seconds, memory_read_bytes=8.0 * n * n, memory_written_bytes=4.0 * n * n)
    return made


def roofline_document(with_matmul=True, with_stream=True):
    made = results.new_document({"id": "roofline", "started": "2026-11-24T00:00:00+00:00", "finished": None,
                                 "status": "complete", "command_line": [], "options": {}})
    made["gpu"] = {"available": True, "reason": None}
    parts = {"roofline": sweep()}
    if with_matmul:  # intensity n/6: 10.7 and 683 FLOP/B, either side of the ridge at 20
        parts["matmul"] = [matmul_entry(64, 2e-6), matmul_entry(4096, 3e-3)]
    if with_stream:
        triad = support.blank_entry(f"stream/triad_grid_stride/gpu/resident/fp32/n:{1 << 26}")
        triad.update(repetitions=1, iterations=1, time_s=stats.summarize([12 * (1 << 26) / BANDWIDTH]),
                     flop=2.0 * (1 << 26), memory_read_bytes=8.0 * (1 << 26), memory_written_bytes=4.0 * (1 << 26))
        triad["flop_per_s"] = triad["flop"] / triad["time_s"]["median"]
        parts["stream"] = [triad]
    described = {"stream": {"implementations": [{"id": "triad_grid_stride", "operation": "triad",
                                                 "kernel": "grid_stride"}],
                            "memory_hierarchy": {"gpu": {"l2_bytes": 50 << 20}, "host": {}}}}
    for name, entries in parts.items():
        made["studies"][name] = results.new_study(described.get(name, {"implementations": []}),
                                                  sorted({e["n"] for e in entries}))
        made["studies"][name]["entries"] = entries
    analyse.derive_findings(made, 0)
    return made


class RoofsTest(unittest.TestCase):
    def setUp(self):
        self.series = {(row["device"], row["precision"]): row
                       for row in roofline.derive(sweep())["series"]}

    def test_the_roofs_and_the_ridge(self):
        fp32 = self.series[("gpu", "fp32")]
        self.assertAlmostEqual(fp32["bandwidth_bytes_per_s"] / BANDWIDTH, 1)
        self.assertAlmostEqual(fp32["compute_flop_per_s"] / COMPUTE, 1)
        self.assertAlmostEqual(fp32["ridge_intensity"], 20)  # 60 TFLOP/s over 3 TB/s
        self.assertAlmostEqual(fp32["ridge_fma_per_element"], 80)  # k / 4 bytes = 20 FLOP/B
        self.assertEqual(fp32["memory_bound_until_fma"], 64)
        self.assertEqual(fp32["compute_bound_from_fma"], 128)
        self.assertTrue(fp32["spans_ridge"])
        self.assertEqual([point["bound"] for point in fp32["points"]], ["memory"] * 4 + ["compute"] * 3)
        for point in fp32["points"]:
            self.assertAlmostEqual(point["fraction_of_roof"], 1)

    def test_each_precision_and_device_has_its_own(self):
        self.assertAlmostEqual(self.series[("gpu", "fp64")]["ridge_intensity"], 10)
        self.assertAlmostEqual(self.series[("gpu", "fp64")]["ridge_fma_per_element"], 80)
        cpu = self.series[("cpu", "fp32")]
        self.assertAlmostEqual(cpu["ridge_intensity"], 15)

    def test_a_sweep_on_one_side_of_the_ridge_measures_one_roof(self):
        low = roofline.derive([chain_entry("gpu", "fp32", k) for k in (1, 4, 16)])["series"][0]
        self.assertFalse(low["spans_ridge"])


class ClaimTest(unittest.TestCase):
    def test_the_verdict_counts_the_other_studies_entries_either_side_of_their_ridge(self):
        made = roofline_document()
        found = next(row for row in made["findings"]["claims"]["answered"] if row["key"] == "flops_rarely_limit")
        numbers = found["numbers"]
        self.assertEqual((numbers["memory_bound"], numbers["compute_bound"]), (1, 1))  # the instruments not counted
        self.assertEqual(numbers["bandwidth_study"], "stream")
        self.assertTrue(found["verdict"].startswith("depends on the arithmetic intensity"))
        self.assertEqual(numbers["by_study"], [{"study": "matmul", "precision": "fp32", "memory_bound": 1,
                                                "compute_bound": 1}])

    def test_confirmed_and_refuted(self):
        made = roofline_document()
        points = made["findings"]["roofline"]["points"]
        matmul = [point for point in points if point["study"] == "matmul"]
        for intensity, verdict in ((1.0, claims.CONFIRMED), (1e4, claims.REFUTED)):
            for point in matmul:
                point["intensity"] = intensity
            self.assertEqual(claims.memory_bound(made)["verdict"], verdict)

    def test_launch_experiments_are_no_workloads(self):
        made = roofline_document()
        points = made["findings"]["roofline"]["points"]
        starved = [{**point, "study": "occupancy", "intensity": 1e4} for point in points if point["study"] == "matmul"]
        points.extend(starved)
        numbers = claims.memory_bound(made)["numbers"]
        self.assertEqual((numbers["memory_bound"], numbers["compute_bound"]), (1, 1))

    def test_not_measured_without_the_roof_studies_or_other_entries(self):
        self.assertIsNone(claims.memory_bound(roofline_document(with_matmul=False)))
        made = roofline_document()
        del made["studies"]["stream"]
        self.assertIsNone(claims.memory_bound(made))


class SummaryTest(unittest.TestCase):
    def test_sections(self):
        text = render.render(roofline_document(), {}, tempfile.gettempdir())
        self.assertIn("## Roofline sweep: measured roofs and ridge points", text)
        self.assertIn("| gpu | fp32 | 33554432 | 3000 GB/s | 60.00 TFLOP/s | 20 FLOP/B (k = 80) | 64 | 128 | yes |",
                      text)
        self.assertIn("## Roofline sweep: the other studies' GPU entries against the measured roofs", text)
        self.assertIn("| matmul | fp32 | 1 | 1 |", text)


@unittest.skipUnless(charts.load_pyplot() is not None, "matplotlib is not installed for this Python")
class PlotsTest(unittest.TestCase):
    def test_one_chart_per_device(self):
        with tempfile.TemporaryDirectory() as out:
            paths = plots.write_plots(roofline_document()["studies"], out)["roofline"]
            self.assertEqual(sorted(os.path.basename(path) for path in paths),
                             [f"roofline_sweep_cpu_n{N}.png", f"roofline_sweep_gpu_n{N}.png"])


if __name__ == "__main__":
    unittest.main()
