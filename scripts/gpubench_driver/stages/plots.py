"""The render stage's plots: each study's PNGs (its plug-in's `plots`) and the roofline chart across the
studies, named after their study; None without matplotlib."""
import concurrent.futures
import multiprocessing
import os
import textwrap

from gpubench_driver import studies as registry
from gpubench_driver.lib import charts, outputs
from gpubench_driver.lib.formatting import rate

ROOFLINE_NAME = "roofline.png"
OTHER_MARKER = "P"  # a study's points whose record names no roofline_marker
# One colour per precision; no grey, which the legend's study markers use.
ROOF_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
                "tab:cyan", "navy", "gold", "teal")


def _roofline_range(roof):
    """The intensities the chart spans: the points' with room on both sides, and each ridge point."""
    intensities = [point["intensity"] for point in roof["points"]]
    bandwidth = (roof.get("bandwidth") or {}).get("bytes_per_s")
    if bandwidth:
        intensities += [row["flop_per_s"] / bandwidth for row in roof["peaks"]]
    if not intensities:
        return 0.1, 1e4
    return min(intensities) / 3, max(intensities) * 3


def _marker(study):
    record = registry.BY_NAME.get(study)
    return (record.roofline_marker if record else None) or OTHER_MARKER


def _roofline_plot(pyplot, path, roof):
    from matplotlib.lines import Line2D
    figure, axes = pyplot.subplots(figsize=(10, 6.5))
    colours = {row["precision"]: ROOF_COLOURS[index % len(ROOF_COLOURS)] for index, row in enumerate(roof["peaks"])}
    low, high = _roofline_range(roof)
    for index, row in enumerate(roof["peaks"]):
        axes.plot([low, high], [row["flop_per_s"]] * 2, color=colours[row["precision"]],
                  linestyle=charts.LINE_STYLES[1 + index // len(ROOF_COLOURS) % (len(charts.LINE_STYLES) - 1)],
                  linewidth=1.2,
                  label=f"{row['precision']} peak {rate(row['flop_per_s'])}")
    bandwidth = roof.get("bandwidth")
    if bandwidth:
        top = max(row["flop_per_s"] for row in roof["peaks"]) if roof["peaks"] else bandwidth["bytes_per_s"] * high
        end = min(high, top / bandwidth["bytes_per_s"])
        axes.plot([low, end], [bandwidth["bytes_per_s"] * low, bandwidth["bytes_per_s"] * end], color="black",
                  linewidth=1.5, label=f"memory roof {bandwidth['bytes_per_s'] / 1e9:.0f} GB/s x intensity")
    studies = list(dict.fromkeys(point["study"] for point in roof["points"]))
    for study in studies:
        for precision in dict.fromkeys(p["precision"] for p in roof["points"] if p["study"] == study):
            mine = [p for p in roof["points"] if (p["study"], p["precision"]) == (study, precision)]
            axes.scatter([p["intensity"] for p in mine], [p["flop_per_s"] for p in mine],
                         marker=_marker(study), color=colours.get(precision, "grey"),
                         s=22, alpha=0.75, zorder=3)
    # The roof in the words of the study that measured it.
    memory = "\n".join(textwrap.wrap(f"memory roof: {registry.BY_NAME[bandwidth['study']].memory_roof.caption(bandwidth)}"
                                     if bandwidth else charts.plain(f"no memory roof: {roof.get('memory_roof_note')}"),
                                     95))
    axes.set(xscale="log", yscale="log", xlim=(low, high),
             xlabel="arithmetic intensity (FLOP per byte of device memory traffic, compulsory-traffic model)",
             ylabel="FLOP/s (int8: operations/s)",
             title="Roofline: GPU entries in resident mode against the measured peaks\n" + memory)
    legend = [(Line2D([], [], marker=_marker(study), color="grey", linestyle="none"), f"points: {study}")
              for study in studies]
    charts.finish(pyplot, figure, axes, path, extra=legend)


def write_roofline(roof, out_dir):
    """plots/roofline.png from findings["roofline"]; None without matplotlib or without any peak."""
    pyplot = charts.load_pyplot()
    if pyplot is None or not roof.get("peaks"):
        return None
    path = os.path.join(outputs.subfolder(out_dir, charts.PLOT_DIR), ROOFLINE_NAME)
    _roofline_plot(pyplot, path, roof)
    return path


_DRAWING = None  # (the studies, the plot folder) of write_plots, which its forked workers inherit


def write_plots(studies, out_dir, workers=None):
    """{study: its PNG paths}, studies drawn in forked workers (one per core); None without matplotlib."""
    if charts.load_pyplot() is None:
        return None
    global _DRAWING
    _DRAWING = (studies, outputs.subfolder(out_dir, charts.PLOT_DIR))
    drawn = [name for name in studies if getattr(registry.BY_NAME.get(name), "plots", None)]
    workers = min(len(drawn), workers or os.cpu_count() or 1)
    if workers > 1:
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            paths = list(pool.map(_draw, drawn))
    else:
        paths = [_draw(name) for name in drawn]
    return {name: found for name, found in zip(drawn, paths) if found}


def _draw(name):
    studies, plot_dir = _DRAWING
    return registry.BY_NAME[name].plots(charts.load_pyplot(), studies[name], plot_dir) or []
