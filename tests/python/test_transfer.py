"""The transfer study's findings on synthetic entries: bandwidth curves, the 90% plateau size,
pinned over pageable, the never-written pitfall, the link's theoretical rate, registration cost."""
import unittest

import support

from gpubench_driver.lib import stats
from gpubench_driver.studies import overlap, transfer

GIB = float(1 << 30)


def spread_samples(seconds, spread):
    """One sample of `seconds`, or with `spread` 21 samples evenly within +-spread of it."""
    return [seconds] if spread is None else [seconds * (1 + spread * k / 10) for k in range(-10, 11)]


def transfer_entry(engine, memory, direction, n, bytes_per_s, device="gpu", moved=None, spread=None):
    entry = support.blank_entry(f"transfer/{engine}/{device}/{memory}/{direction}/n:{n}")
    moved = n * (2 if direction == "bidirectional" else 1) if moved is None else moved
    samples = spread_samples((moved or n) / bytes_per_s, spread)
    entry.update(status="ok", repetitions=1, iterations=len(samples), time_s=stats.summarize(samples),
                 bytes_transferred=moved)
    return entry


def curve(engine, memory, direction, rates, **kwargs):
    return [transfer_entry(engine, memory, direction, n, rate, **kwargs) for n, rate in rates.items()]


H100_GPU = {"pcie.link.gen.max": 5, "pcie.link.width.max": 16, "pcie.link.gen.current": 1}


class PlateauTest(unittest.TestCase):
    def test_interpolates_on_log_size(self):
        points = [{"n": 1024, "bytes_per_s": 10.0}, {"n": 4096, "bytes_per_s": 50.0},
                  {"n": 16384, "bytes_per_s": 100.0}, {"n": 65536, "bytes_per_s": 95.0}]
        plateau, size = transfer.plateau_size(points)
        self.assertEqual(plateau, 95.0)  # the largest copy's rate
        # 85.5 lies 0.71 of the way from 50 (2^12) to 100 (2^14): 2^13.42
        self.assertAlmostEqual(size, 2 ** 13.42)

    def test_a_cached_small_copy_is_no_plateau(self):
        points = [{"n": 4096, "bytes_per_s": 40.0}, {"n": 1 << 20, "bytes_per_s": 8.0},
                  {"n": 1 << 28, "bytes_per_s": 10.0}]
        plateau, size = transfer.plateau_size(points)
        self.assertEqual(plateau, 10.0)
        self.assertAlmostEqual(size, 2 ** (20 + 8 * (1 / 2)))  # 9 lies half way from 8 (2^20) to 10 (2^28)

    def test_already_at_the_plateau(self):
        points = [{"n": 4096, "bytes_per_s": 95.0}, {"n": 16384, "bytes_per_s": 100.0}]
        self.assertEqual(transfer.plateau_size(points), (100.0, 4096))


class DeriveTest(unittest.TestCase):
    def setUp(self):
        self.entries = (
            curve("copy_engine", "pinned", "h2d", {4096: 2e9, 1 << 20: 40e9, 1 << 28: 52e9})
            + curve("copy_engine", "pageable", "h2d", {4096: 1e9, 1 << 20: 6e9, 1 << 28: 8e9})
            + curve("copy_engine", "pageable_zero_page", "h2d", {1 << 20: 9e9, 1 << 28: 16e9})
            + curve("copy_engine", "pinned", "d2h", {1 << 28: 50e9})
            + curve("copy_engine", "pinned", "bidirectional", {1 << 28: 90e9})
            + curve("memcpy_all_threads", "pageable", "h2h", {1 << 28: 20e9}, device="cpu")
            + [transfer_entry("host_register", "registered", "register", 1 << 30, 1e10, moved=0)])
        failed = transfer_entry("copy_engine", "pinned", "h2d", 1 << 30, 1e9)
        failed.update(status="skipped", time_s=None)
        self.entries.append(failed)
        self.derived = transfer.derive(self.entries, H100_GPU)

    def row(self, engine, memory, direction):
        return next(r for r in self.derived["curves"] if (r["impl"], r["mode"], r["direction"]) == (engine, memory,
                                                                                                      direction))

    def test_curves_latency_and_bidirectional_bytes(self):
        pinned = self.row("copy_engine", "pinned", "h2d")
        self.assertEqual([p["n"] for p in pinned["points"]], [4096, 1 << 20, 1 << 28])  # the skip is not a point
        self.assertAlmostEqual(pinned["smallest_latency_s"], 4096 / 2e9)
        self.assertAlmostEqual(pinned["plateau_bytes_per_s"], 52e9)  # also the largest size's
        self.assertAlmostEqual(self.row("copy_engine", "pinned", "bidirectional")["plateau_bytes_per_s"], 90e9)

    def test_registration_is_not_a_bandwidth(self):
        self.assertFalse(any(r["impl"] == "host_register" for r in self.derived["curves"]))
        [cost] = self.derived["registration"]
        self.assertAlmostEqual(cost["seconds_per_gib"], (1 << 30) / 1e10)

    def test_pinned_over_pageable_and_the_zero_page_pitfall(self):
        [h2d] = self.derived["pinned_over_pageable"]  # no pageable d2h curve: no d2h row
        self.assertEqual(h2d["direction"], "h2d")
        self.assertAlmostEqual(h2d["at_largest"]["ratio"], 52 / 8)
        self.assertEqual([r["n"] for r in h2d["ratios"]], [4096, 1 << 20, 1 << 28])
        [pitfall] = self.derived["zero_page_over_written"]
        self.assertAlmostEqual(pitfall["at_largest"]["ratio"], 2.0)
        self.assertIsNone(h2d["at_largest"]["beyond_noise"])  # one sample each: no interval

    def test_a_ratio_within_noise_names_no_faster_memory(self):
        entries = (curve("copy_engine", "pinned", "h2d", {4096: 1.0e9, 1 << 28: 52e9}, spread=0.05)
                   + curve("copy_engine", "pageable", "h2d", {4096: 0.97e9, 1 << 28: 8e9}, spread=0.05))
        [h2d] = transfer.derive(entries)["pinned_over_pageable"]
        self.assertEqual([(r["n"], r["beyond_noise"]) for r in h2d["ratios"]], [(4096, False), (1 << 28, True)])
        self.assertEqual(transfer._ratio_items([h2d], "pinned over pageable,"), [
            "pinned over pageable, h2d: 6.50x at 256.0 MiB (smallest size: 1.03x at 4.0 KiB, within noise)"])

    def test_link_rate_from_generation_and_width(self):
        link = self.derived["link"]
        self.assertAlmostEqual(link["bytes_per_s"] / 1e9, 32 * 128 / 130 * 16 / 8)  # about 63 GB/s
        use = {(u["mode"], u["direction"]): u["fraction_of_link"] for u in self.derived["link_use"]}
        self.assertAlmostEqual(use[("pinned", "h2d")], 52e9 / link["bytes_per_s"])
        self.assertNotIn(("pageable", "h2h"), use)

    def test_unknown_link(self):
        self.assertIsNone(transfer.link_rate({"pcie.link.gen.max": "[N/A]", "pcie.link.width.max": 16}))
        self.assertIsNone(transfer.link_rate(None))
        self.assertEqual(transfer.derive(self.entries, None)["link_use"], [])


if __name__ == "__main__":
    unittest.main()


def overlap_entry(schedule, memory, workload, chunks, seconds, n=8192, spread=None):
    entry = support.blank_entry(f"overlap/{schedule}/gpu/{memory}/{workload}/n:{n}/batch:{chunks}")
    samples = spread_samples(seconds, spread)
    entry.update(status="ok", repetitions=1, iterations=len(samples), time_s=stats.summarize(samples))
    return entry


def overlap_group(times, spread, memory="pinned", workload="matmul"):
    """Overlap entries of one workload and memory from {(schedule, chunks): seconds}."""
    return [overlap_entry(schedule, memory, workload, chunks, seconds, spread=spread)
            for (schedule, chunks), seconds in times.items()]


class OverlapTest(unittest.TestCase):
    def setUp(self):
        times = {("serial", 1): 36.0, ("streams1", 4): 35.0, ("streams2", 4): 28.0, ("streams4", 16): 26.0,
                 ("copy_only", 4): 11.0, ("compute_only", 4): 21.0, ("copy_only", 16): 10.0,
                 ("compute_only", 16): 20.8}
        self.entries = [overlap_entry(s, "pinned", "matmul", c, t) for (s, c), t in times.items()]
        self.entries.append(overlap_entry("streams2", "pageable", "matmul", 4, 80.0))  # no serial run: no row
        self.derived = overlap.derive(self.entries)

    def test_saving_and_fraction_of_the_ideal(self):
        rows = {(r["schedule"], r["chunks"]): r for r in self.derived["pipelines"]}
        self.assertEqual(set(rows), {("streams1", 4), ("streams2", 4), ("streams4", 16)})
        row = rows[("streams2", 4)]
        self.assertAlmostEqual(row["saved_s"], 8.0)
        self.assertAlmostEqual(row["ideal_s"], 21.0)  # compute-bound: max(11, 21)
        self.assertAlmostEqual(row["fraction_of_ideal"], 21.0 / 28.0)

    def test_best_pipeline(self):
        [best] = self.derived["best"]
        self.assertEqual((best["schedule"], best["chunks"]), ("streams4", 16))
        self.assertAlmostEqual(best["fraction_of_ideal"], 20.8 / 26.0)
        # one sample each: no interval, so nothing is beaten beyond noise
        self.assertEqual([(tie["schedule"], tie["chunks"]) for tie in best["ties"]], [("streams2", 4), ("streams1", 4)])
        self.assertIsNone(best["saved_beyond_noise"])


class OverlapNoiseTest(unittest.TestCase):
    TIMES = {("serial", 1): 36.0, ("streams2", 64): 26.3, ("streams4", 16): 26.0, ("streams1", 4): 35.0,
             ("copy_only", 16): 10.0, ("compute_only", 16): 20.8, ("copy_only", 64): 10.5, ("compute_only", 64): 21.0}

    def best(self, spread):
        [best] = overlap.derive(overlap_group(self.TIMES, spread))["best"]
        return best

    def test_a_tie_within_noise(self):
        best = self.best(0.05)  # 26.0 and 26.3 ms, each spread by 5%
        self.assertEqual((best["schedule"], best["chunks"]), ("streams4", 16))
        self.assertEqual(best["ties"], [{"schedule": "streams2", "chunks": 64, "median_s": 26.3}])
        self.assertTrue(best["saved_beyond_noise"])

    def test_a_clear_winner(self):
        best = self.best(0.002)
        self.assertEqual(((best["schedule"], best["chunks"]), best["ties"]), (("streams4", 16), []))
        self.assertTrue(best["ideal_beyond_noise"])  # 80% of the ideal, beyond noise

    def test_no_saving_and_no_gain_over_the_ideal_beyond_noise(self):
        # pageable SAXPY: the pipeline 1% slower than the serial run and 3% faster than the copy-only run
        times = {("serial", 1): 108.6, ("streams4", 4): 109.9, ("copy_only", 4): 113.6, ("compute_only", 4): 2.0}
        [row] = overlap.derive(overlap_group(times, 0.05, "pageable", "saxpy"))["best"]
        self.assertEqual((row["saved_beyond_noise"], row["ideal_beyond_noise"]), (False, False))
        self.assertGreater(row["fraction_of_ideal"], 1)

    def test_summary_names_the_ties(self):
        from gpubench_driver.studies import overlap
        entries = overlap_group(self.TIMES, 0.05)
        cells = overlap._row(overlap.derive(entries)["best"][0])
        self.assertEqual(cells[4:7], ["26.00 s (streams4, 16 chunks)", "streams2, 64 chunks (26.30 s)",
                                      "10.00 s (28%)"])
        times = {("serial", 1): 108.6, ("streams4", 4): 109.9, ("copy_only", 4): 113.6, ("compute_only", 4): 2.0}
        cells = overlap._row(overlap.derive(overlap_group(times, 0.05, "pageable", "saxpy"))["best"][0])
        self.assertEqual(cells[4:], ["109.90 s (streams4, 4 chunks)", "none", "-1.30 s (-1%, within noise)",
                                     "113.60 s", "103%, within noise"])


class ReportTest(unittest.TestCase):
    """Both studies through summary and plots, with a hostile GPU name in the document."""

    def test_summary_and_plots(self):
        import tempfile
        from gpubench_driver.stages import plots, render
        from gpubench_driver.lib import results
        document = results.new_document({"id": "fixture", "started": "2026-11-23T00:00:00+00:00", "finished": None,
                                         "status": "complete", "command_line": [], "options": {}})
        document["machine"]["gpus"] = [dict(H100_GPU, name="<script>alert(1)</script>", numa_node=1)]
        copies = DeriveTest()
        copies.setUp()
        document["studies"]["transfer"] = {"entries": copies.entries, "invocations": [],
                                           "derived": transfer.derive(copies.entries, H100_GPU)}
        pipelines = OverlapTest()
        pipelines.setUp()
        document["studies"]["overlap"] = {"entries": pipelines.entries, "invocations": [], "derived": pipelines.derived}
        with tempfile.TemporaryDirectory() as out:
            paths = plots.write_plots(document["studies"], out)
            text = render.render(document, paths, out)
        self.assertIn("Transfer: bandwidth and latency", text)
        self.assertIn("pinned over pageable (written), h2d: 6.50x", text)
        self.assertIn("PCIe Gen5 x16", text)
        self.assertIn("The GPU's NUMA node: 1", text)
        self.assertIn("| matmul | pinned | 8192 |", text)
        self.assertNotIn("<script>", text)
        if paths is not None:  # matplotlib present
            self.assertTrue(any(p.endswith("transfer_bandwidth_h2d.png") for p in paths["transfer"]))
            self.assertTrue(any(p.endswith("overlap_matmul_pinned_n8192.png") for p in paths["overlap"]))


class SizeSuffixTest(unittest.TestCase):
    def test_sizes_take_binary_suffixes_batches_do_not(self):
        from gpubench_driver.stages import options
        self.assertEqual(options.parse_positive_list("4KiB,1GiB,64M,100", "--sizes"), [100, 4096, 64 << 20, 1 << 30])
        for bad in ("4kib", "4KB", "1.5MiB", "KiB", "0KiB"):
            with self.assertRaises(options.UsageError):
                options.parse_positive_list(bad, "--sizes")
        with self.assertRaises(options.UsageError):
            options.parse_positive_list("4K", "--batches")
