"""Charts a person can read: no two series of a chart drawn alike, the legend beside the axes."""
import os
import tempfile
import unittest
from unittest import mock

import support  # noqa: F401  (import path)

from gpubench_driver import plots


class SeriesStyleTest(unittest.TestCase):
    def test_no_two_of_seventy_series_look_alike(self):
        styles = [tuple(sorted(plots.series_style(index).items())) for index in range(70)]
        self.assertEqual(len(set(styles)), 70)
        colours = [plots.series_style(index)["color"] for index in range(14)]
        self.assertEqual(colours[0], colours[10])  # the colour repeats after ten ...
        self.assertNotEqual(plots.series_style(0)["marker"], plots.series_style(10)["marker"])  # ... the marker not

    @unittest.skipIf(plots.load_pyplot() is None, "this Python has no matplotlib")
    def test_a_crowded_chart_keeps_its_legend_beside_the_data(self):
        pyplot = plots.load_pyplot()
        series = {f"impl{index} mode": [(n, {"v": n * (index + 1)}) for n in (64, 256, 1024)] for index in range(14)}
        drawn = {}
        original = plots._finish

        def keep(pyplot_, figure, axes, path):
            drawn["lines"] = [(line.get_color(), line.get_marker(), line.get_linestyle()) for line in axes.get_lines()]
            original(pyplot_, figure, axes, path)
            drawn["legend"] = axes.get_legend()
        with tempfile.TemporaryDirectory() as directory, mock.patch.object(plots, "_finish", keep):
            path = os.path.join(directory, "chart.png")
            plots._line_plot(pyplot, path, "t", "y", series, lambda point: point["v"])
            self.assertTrue(os.path.getsize(path) > 0)
        self.assertEqual(len(set(drawn["lines"])), 14)
        anchor = drawn["legend"].get_bbox_to_anchor().transformed(drawn["legend"].axes.transAxes.inverted())
        self.assertGreater(anchor.x0, 1.0)  # right of the axes


class CrossoverLinesTest(unittest.TestCase):
    def test_crossovers_at_one_batch_are_one_line(self):
        crossovers = [{"mode": "resident", "precision": "fp16", "estimate_batch": None, "upper": 1},
                      {"mode": "transfer_pinned", "precision": "fp16", "estimate_batch": None, "upper": 1},
                      {"mode": "resident", "precision": "fp32", "estimate_batch": 12, "upper": 16},
                      {"mode": "transfer_pinned", "precision": "fp32", "estimate_batch": None, "upper": None}]
        self.assertEqual(plots.crossover_lines(crossovers, with_precision=True),
                         {1: ["resident, fp16", "transfer_pinned, fp16"], 12: ["resident, fp32"]})


if __name__ == "__main__":
    unittest.main()
