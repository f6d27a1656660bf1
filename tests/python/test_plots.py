"""Charts a person can read: at most MAX_SERIES series a chart (crowded studies split, the CPU on each
chart), a series styled alike across its study's charts and unlike its chart-mates, the legend beside
the axes, a crossover marked once; write_plots' paths by study."""
import os
import re
import tempfile
import unittest
from unittest import mock

import support

from gpubench_driver import studies
from gpubench_driver.lib import charts, results
from gpubench_driver.studies import matmul
from gpubench_driver.stages import analyse, plots, render

CPU_IMPLS = ("blocked_loop", "naive_loop", "openblas")
GPU_IMPLS = ("cublas", "naive_kernel", "tiled_kernel")
GPU_MODES = ("resident", "transfer_pageable", "transfer_pinned")
SIZES = (64, 256, 1024, 4096)


def crowded_matmul_study(crossover_n=(("resident", 128), ("transfer_pinned", 128), ("transfer_pageable", 512))):
    """A matmul study of 12 series (3 CPU, 3 GPU implementations in 3 modes), as the default suite runs
    it, with the crossovers given as (mode, n)."""
    entries = [support.make_entry(impl, "cpu", "host", n, 1e-9 * n ** 3 * (index + 1))
               for index, impl in enumerate(CPU_IMPLS) for n in SIZES]
    entries += [support.make_entry(impl, "gpu", mode, n, 1e-5 + 1e-12 * n ** 3 * (index + 1))
                for index, (impl, mode) in enumerate((impl, mode) for impl in GPU_IMPLS for mode in GPU_MODES)
                for n in SIZES]
    return {"entries": entries, "derived": {"crossovers": [{"mode": mode, "measure": "time", "estimate_n": n,
                                                            "upper": n} for mode, n in crossover_n]}}


def matmul_keys():
    return [(impl, "host") for impl in CPU_IMPLS] + [(impl, mode) for impl in GPU_IMPLS for mode in GPU_MODES]


def by_mode(key):
    return key[1]


class ChartSharesTest(unittest.TestCase):
    def test_series_that_fit_stay_on_one_chart(self):
        keys = matmul_keys()[:charts.MAX_SERIES]
        self.assertEqual(charts.chart_shares(keys, (by_mode,), keys[:3]), [((), keys)])

    def test_a_crowded_chart_splits_by_mode_with_the_cpu_on_each(self):
        keys = matmul_keys()
        cpu = keys[:3]
        shares = charts.chart_shares(keys, (by_mode,), cpu)
        self.assertEqual([names for names, _ in shares], [(mode,) for mode in GPU_MODES])
        for (mode,), chart in shares:
            self.assertLessEqual(len(chart), charts.MAX_SERIES)
            self.assertEqual(chart, cpu + [(impl, mode) for impl in GPU_IMPLS])

    def test_a_share_still_too_full_splits_by_the_next_level_then_in_parts(self):
        keys = [("cpu", "host", "fp32")] + [(f"impl{index}", mode, "fp16") for index in range(6)
                                            for mode in ("resident", "transfer_pinned")]
        by_precision = (lambda key: key[2], by_mode)
        shares = charts.chart_shares(keys, by_precision, keys[:1])
        self.assertEqual([names for names, _ in shares], [("fp16", "resident"), ("fp16", "transfer_pinned")])
        in_parts = charts.chart_shares(keys, (), keys[:1])
        self.assertEqual([names for names, _ in in_parts], [("part 1",), ("part 2",)])
        for _, chart in shares + in_parts:
            self.assertLessEqual(len(chart), charts.MAX_SERIES)
            self.assertEqual(chart[0], keys[0])
        self.assertEqual({key for _, chart in in_parts for key in chart}, set(keys))

    def test_a_baseline_that_fills_a_chart_is_split_like_the_rest(self):
        keys = [(f"cpu{index}", "host") for index in range(charts.MAX_SERIES)] + [("cublas", "resident")]
        shares = charts.chart_shares(keys, (), keys[:charts.MAX_SERIES])
        self.assertEqual([len(chart) for _, chart in shares], [charts.MAX_SERIES, 1])


class StudyStylesTest(unittest.TestCase):
    def test_a_label_keeps_its_style_and_differs_from_its_chart_mates(self):
        cpu = ["cpu nchw", "cpu nhwc"]
        labels = [cpu + [f"{impl}/{mode}/{precision}" for impl in ("nchw", "nhwc") for mode in ("res", "pin")]
                  for precision in ("fp16", "fp32", "tf32")]
        labels.append(["nchw/res/fp16", "other"])  # a label on two charts
        styles = charts.study_styles(labels)
        self.assertEqual(set(styles), {label for chart in labels for label in chart})
        for chart in labels:
            for part in ("color", "marker"):
                self.assertEqual(len({styles[label][part] for label in chart}), len(chart), (part, chart))

    def test_a_full_chart_differs_in_colour_and_marker(self):
        chart = [f"series {index}" for index in range(charts.MAX_SERIES)]
        styles = charts.study_styles([chart])
        self.assertEqual(len({(styles[label]["color"]) for label in chart}), charts.MAX_SERIES)
        self.assertEqual(len({(styles[label]["marker"]) for label in chart}), charts.MAX_SERIES)


class CrossoverLinesTest(unittest.TestCase):
    def test_crossovers_at_one_batch_are_one_line(self):
        crossovers = [{"mode": "resident", "precision": "fp16", "estimate_batch": None, "upper": 1},
                      {"mode": "transfer_pinned", "precision": "fp16", "estimate_batch": None, "upper": 1},
                      {"mode": "resident", "precision": "fp32", "estimate_batch": 12, "upper": 16},
                      {"mode": "transfer_pinned", "precision": "fp32", "estimate_batch": None, "upper": None}]
        self.assertEqual(charts.crossover_lines(crossovers, with_precision=True),
                         {1: ["resident, fp16", "transfer_pinned, fp16"], 12: ["resident, fp32"]})

    def test_crossovers_at_one_size_are_one_line(self):
        crossovers = crowded_matmul_study()["derived"]["crossovers"]
        self.assertEqual(charts.crossover_lines(crossovers, with_precision=False, axis="n"),
                         {128: ["resident", "transfer_pinned"], 512: ["transfer_pageable"]})


def chart_file(target):
    """The file a chart is saved as: savefig gets the stream of a temporary file named .<file>.<random>.tmp,
    renamed to the file once written (outputs.replacing)."""
    if isinstance(target, str):
        return target
    temporary = os.path.basename(os.readlink(f"/proc/self/fd/{target.fileno()}"))
    return re.fullmatch(r"\.(.+)\.[^.]+\.tmp", temporary)[1]


class SavedCharts:
    """Patches Figure.savefig to record, for each saved chart, its data lines (label, colour, marker),
    its vertical lines' labels, and its legend's and axes' extents as drawn."""
    def __init__(self):
        from matplotlib.figure import Figure
        self.charts = {}
        self.patch = mock.patch.object(Figure, "savefig", autospec=True, side_effect=self._record)
        self.original = Figure.savefig

    def _record(self, figure, path, *args, **kwargs):
        self.original(figure, path, *args, **kwargs)
        path = chart_file(path)
        axes, = figure.axes
        renderer = figure.canvas.get_renderer()
        lines = [line for line in axes.get_lines() if not line.get_label().startswith("_")]
        series = [line for line in lines if line.get_marker() not in ("None", "none", "", None)]  # marks have none
        self.charts[os.path.basename(path)] = {
            "series": [(line.get_label(), line.get_color(), line.get_marker()) for line in series],
            "vertical": [line.get_label() for line in lines
                         if line not in series and len(set(line.get_xdata())) == 1],
            "legend": axes.get_legend().get_window_extent(renderer), "axes": axes.get_window_extent(renderer)}


@unittest.skipIf(charts.load_pyplot() is None, "this Python has no matplotlib")
class WritePlotsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        saved = SavedCharts()
        cls.studies = {"matmul": crowded_matmul_study(), **support.conv_document()["studies"],
                       **support.precision_document()["studies"]}
        with tempfile.TemporaryDirectory() as out, saved.patch:
            cls.found = plots.write_plots(cls.studies, out, workers=1)  # drawn here, where the spy sees it
            cls.exist = {name: [os.path.isfile(path) for path in paths] for name, paths in cls.found.items()}
            cls.in_plot_dir = {os.path.dirname(path) for paths in cls.found.values() for path in paths}
            cls.plot_dir = os.path.join(out, "plots")
            roof = support.precision_document()["findings"]["roofline"]
            cls.roofline = plots.write_roofline(roof, out)
        cls.charts = saved.charts

    def names(self, study):
        return [os.path.basename(path) for path in self.found[study]]

    def test_forked_workers_draw_the_same_files(self):
        with tempfile.TemporaryDirectory() as out:
            found = plots.write_plots(self.studies, out, workers=3)
            self.assertEqual({name: [os.path.basename(path) for path in paths] for name, paths in found.items()},
                             {name: self.names(name) for name in self.found})
            self.assertTrue(all(os.path.isfile(path) for paths in found.values() for path in paths))

    def test_paths_are_by_study_in_study_order(self):
        self.assertIsInstance(self.found, dict)
        self.assertEqual(list(self.found), list(self.studies))
        self.assertEqual(self.exist, {name: [True] * len(paths) for name, paths in self.found.items()})
        self.assertEqual(self.in_plot_dir, {self.plot_dir})

    def test_crowded_studies_split_into_named_charts(self):
        self.assertEqual(self.names("matmul"), [f"matmul_{measure}_{mode}.png" for measure in ("time", "rate")
                                                for mode in GPU_MODES] + ["matmul_speedup.png"])
        self.assertEqual(self.names("conv2d"), [f"conv2d_throughput_n{n}_{precision}.png" for n in (7, 56)
                                                for precision in ("fp16", "fp32")])
        self.assertEqual(self.names("precision"), ["precision_pareto.png"] + [
            f"precision_rate_{bits}_bit.png" for bits in (16, 32, 8)])

    def test_no_chart_has_more_than_max_series(self):
        for name, chart in self.charts.items():
            self.assertLessEqual(len(chart["series"]), charts.MAX_SERIES, name)
        self.assertGreater(max(len(chart["series"]) for chart in self.charts.values()), 4)  # charts were seen

    def test_the_cpu_is_on_every_split_chart(self):
        for mode in GPU_MODES:
            labels = [label for label, _, _ in self.charts[f"matmul_time_{mode}.png"]["series"]]
            self.assertEqual(labels, [f"{impl}/host" for impl in CPU_IMPLS] + [f"{impl}/{mode}" for impl in GPU_IMPLS])

    def test_a_label_looks_alike_across_its_studys_charts_and_unlike_its_mates(self):
        for study, paths in self.found.items():
            looks = {}
            for path in paths:
                series = self.charts[os.path.basename(path)]["series"]
                for label, colour, marker in series:
                    self.assertEqual(looks.setdefault(label, (colour, marker)), (colour, marker), (path, label))
                self.assertEqual(len({colour for _, colour, _ in series}), len(series), path)
                self.assertEqual(len({marker for _, _, marker in series}), len(series), path)

    def test_legends_are_beside_the_axes_not_over_them(self):
        self.assertEqual(os.path.basename(self.roofline), plots.ROOFLINE_NAME)
        self.assertIn(plots.ROOFLINE_NAME, self.charts)  # its legend was inside the axes before
        for name, chart in self.charts.items():
            self.assertGreaterEqual(chart["legend"].x0, chart["axes"].x1, name)

    def test_crossovers_at_one_size_are_one_line_naming_both_modes(self):
        self.assertEqual(self.charts["matmul_speedup.png"]["vertical"],
                         ["GPU beats CPU from n = 128: resident; transfer_pinned",
                          "GPU beats CPU from n = 512: transfer_pageable"])

    def test_a_split_chart_marks_only_its_own_crossovers(self):
        for precision, other in (("fp16", "fp32"), ("fp32", "fp16")):
            vertical = self.charts[f"conv2d_throughput_n56_{precision}.png"]["vertical"]
            self.assertTrue(vertical)
            for label in vertical:
                self.assertIn(f", {precision}", label)
                self.assertNotIn(other, label)


@unittest.skipIf(charts.load_pyplot() is None, "this Python has no matplotlib")
class NoDataTest(unittest.TestCase):
    """A chart with no data point is neither written nor linked (a --quick run on a machine without a GPU
    drew an empty launch_overhead_per_kernel.png)."""

    def test_studies_that_measured_nothing_draw_and_link_no_plot(self):
        made = results.new_document({"id": "empty", "started": "2026-11-27T00:00:00+00:00", "finished": None,
                                     "status": "complete", "command_line": [], "options": {"quick": True}})
        made.update(machine={"cpu": {}, "gpus": []}, software={})
        made["gpu"] = {"available": False, "reason": "no CUDA device found"}
        for name in studies.NAMES:
            made["studies"][name] = results.new_study({"implementations": []}, [64])
        analyse.derive_findings(made, 0)
        with tempfile.TemporaryDirectory() as out:
            render.write_outputs(made, out)
            self.assertEqual(os.listdir(os.path.join(out, "plots")), [])
            with open(os.path.join(out, "summary.md"), encoding="utf-8") as stream:
                self.assertNotIn("plots/", stream.read())

    def test_a_chart_whose_series_hold_no_value_is_not_drawn(self):
        entries = [support.make_entry("openblas", "cpu", "host", n, 1e-3 * n) for n in (64, 128)]
        for entry in entries:
            entry["flop_per_s"] = None  # no FLOP count: the rate chart has nothing to show, the time chart has
        with tempfile.TemporaryDirectory() as out:
            found = matmul.plots(charts.load_pyplot(), {"entries": entries, "derived": {}}, out)
            self.assertEqual([os.path.basename(path) for path in found], ["matmul_time.png"])
            self.assertEqual(os.listdir(out), ["matmul_time.png"])


if __name__ == "__main__":
    unittest.main()
