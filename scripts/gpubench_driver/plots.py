"""PNG plots of the studies (matplotlib, Agg backend), named after their study; None without matplotlib."""
import os
import textwrap

from gpubench_driver import derive, derive_batch, derive_transfer
from gpubench_driver.formatting import rate

MISSING_MATPLOTLIB = ("plots skipped: this Python has no matplotlib "
                      "(install python3-matplotlib, e.g. 'sudo apt-get install python3-matplotlib')")


def load_pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")  # files only: no display on a benchmark machine
    import matplotlib.pyplot
    return matplotlib.pyplot


def plain(text):
    """Text from a results file as matplotlib shows it literally ('$' would start mathtext)."""
    return str(text).replace("$", r"\$")


def _series(entries, label):
    """{label: [(n, entry), ...]} sorted by n; label(entry) names an entry's line, None leaves it out."""
    series = {}
    for entry in derive.ok_entries(entries):
        name = label(entry)
        if name is not None:
            series.setdefault(name, []).append((entry["n"], entry))
    return {name: sorted(points, key=lambda point: point[0]) for name, points in sorted(series.items())}


LEGEND_ROWS = 20  # more lines than this: the legend takes two columns
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
           "tab:olive", "tab:cyan")  # matplotlib's default cycle
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")  # 7, prime to the 10 colours: 70 series before a pair repeats


def series_style(index):
    """The colour, marker and line style of the index-th series of a chart: no two of a chart's
    series look alike (the colours alone repeat after ten)."""
    return {"color": COLOURS[index % len(COLOURS)], "marker": MARKERS[index % len(MARKERS)],
            "linestyle": LINE_STYLES[index // len(COLOURS) % len(LINE_STYLES)]}


def _finish(pyplot, figure, axes, path):
    axes.grid(True, which="both", alpha=0.3)
    handles, labels = axes.get_legend_handles_labels()  # labels hold names from the results file
    # Beside the axes, not over the data; the saved image widens to hold it (bbox_inches), the axes keep their size.
    axes.legend(handles, [plain(label) for label in labels], fontsize="small", loc="upper left",
                bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, ncol=2 if len(handles) > LEGEND_ROWS else 1)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    pyplot.close(figure)


def _line_plot(pyplot, path, title, ylabel, series, value, xlabel="n (square matrices)", mark=None):
    """One line per series, value(point) over x, log-log; mark(axes) adds to the chart before it is saved."""
    figure, axes = pyplot.subplots(figsize=(9, 6))
    for index, (label, points) in enumerate(series.items()):
        xs = [x for x, point in points if value(point) is not None]
        ys = [value(point) for _, point in points if value(point) is not None]
        if xs:
            axes.plot(xs, ys, markersize=4, label=label, **series_style(index))
    if mark:
        mark(axes)
    axes.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel, title=plain(title))
    _finish(pyplot, figure, axes, path)


def _speedup_plot(pyplot, path, entries, crossovers):
    best_cpu = derive.best_by_size(derive.cpu_entries(entries))
    figure, axes = pyplot.subplots(figsize=(9, 6))
    for index, mode in enumerate(derive.gpu_modes(entries)):
        best_gpu = derive.best_by_size(derive.gpu_entries(entries, mode))
        sizes = sorted(set(best_cpu) & set(best_gpu))
        speedups = [best_cpu[n]["time_s"]["median"] / best_gpu[n]["time_s"]["median"] for n in sizes]
        line, = axes.plot(sizes, speedups, markersize=4, label=f"best GPU, {mode}", **series_style(index))
        found = next((c for c in crossovers if c["mode"] == mode and c.get("measure", "time") == "time"), {})
        marker_n = found.get("estimate_n") or found.get("upper")
        if marker_n:
            axes.axvline(marker_n, color=line.get_color(), linestyle="--", alpha=0.6)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set(xscale="log", yscale="log", xlabel="n (square matrices)", ylabel="best CPU time / GPU time",
             title="matmul FP32: GPU speedup over the best CPU (dashed: crossover)")
    _finish(pyplot, figure, axes, path)


def matmul_plots(pyplot, study, plot_dir):
    entries = study["entries"]
    series = _series(entries, lambda entry: f"{entry['impl']}/{entry['mode']}")
    paths = {name: os.path.join(plot_dir, f"matmul_{name}.png") for name in ("time", "rate", "speedup")}
    _line_plot(pyplot, paths["time"], "matmul FP32: median time", "median time (s)", series,
               lambda entry: entry["time_s"]["median"])
    _line_plot(pyplot, paths["rate"], "matmul FP32: FLOP/s", "FLOP/s", series, lambda entry: entry.get("flop_per_s"))
    if derive.gpu_modes(entries):
        _speedup_plot(pyplot, paths["speedup"], entries, study["derived"].get("crossovers", []))
    else:
        del paths["speedup"]
    return list(paths.values())


# --- precision study --------------------------------------------------------------
def _positive(value):
    return value is not None and value > 0  # a log axis has no place for 0 or a missing value


def pareto_points(rows):
    """Per GPU implementation and precision, resident, the row at the largest size whose
    speedup over FP32 and error were both measured."""
    largest = {}
    for row in rows:
        if row["mode"] == "resident" and _positive(row["speedup_over_fp32"]) and _positive(row["rel_fro_error"]):
            key = (row["impl"], row["precision"])
            if key not in largest or row["n"] > largest[key]["n"]:
                largest[key] = row
    return [largest[key] for key in sorted(largest)]


def _pareto_plot(pyplot, path, rows):
    figure, axes = pyplot.subplots(figsize=(9, 6))
    points = pareto_points(rows)
    axes.scatter([p["rel_fro_error"] for p in points], [p["speedup_over_fp32"] for p in points],
                 color="tab:blue", zorder=3, label="error on uniform [-1, 1) inputs")
    normal = [p for p in points if _positive(p["rel_fro_error_normal"])]
    if normal:
        axes.scatter([p["rel_fro_error_normal"] for p in normal], [p["speedup_over_fp32"] for p in normal],
                     facecolors="none", edgecolors="tab:orange", zorder=3, label="error on standard-normal inputs")
    # Labels alternate above and below in the order of speedup: neighbours in speed rarely collide.
    for index, point in enumerate(sorted(points, key=lambda p: p["speedup_over_fp32"])):
        impl = "" if point["impl"] == "cublas" else f" {point['impl']}"
        axes.annotate(plain(f"{point['precision']}{impl} (n={point['n']})"),
                      (point["rel_fro_error"], point["speedup_over_fp32"]), textcoords="offset points",
                      xytext=(6, 5 if index % 2 else -12), fontsize="small")
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set(xscale="log", yscale="log", xlabel="relative Frobenius error against FP64",
             ylabel="speedup over cuBLAS FP32 (same size)",
             title="precision: speed against accuracy (GPU resident, largest size of each precision)")
    _finish(pyplot, figure, axes, path)


def precision_plots(pyplot, study, plot_dir):
    paths = [os.path.join(plot_dir, f"precision_{name}.png") for name in ("pareto", "rate")]
    # Resident GPU and host CPU lines: the transfer modes would double the lines and say the same.
    series = _series(study["entries"], lambda entry: f"{entry['impl']}/{entry['mode']}/{entry['precision']}"
                     if entry["mode"] in ("resident", "host") else None)
    _line_plot(pyplot, paths[1], "precision: FLOP/s (int8: operations/s)", "FLOP/s", series,
               lambda entry: entry.get("flop_per_s"))
    if pareto_points(study["derived"].get("speedups_over_fp32", [])):
        _pareto_plot(pyplot, paths[0], study["derived"]["speedups_over_fp32"])
    else:
        paths.pop(0)
    return paths


# --- studies with a batch axis ---------------------------------------------------------
CROSSOVER_STYLES = ("--", ":", "-.")  # one per GPU mode (and precision)


def crossover_lines(crossovers, with_precision):
    """{batch: [which GPU mode (and precision) beats the CPU from it]}: one line per distinct batch,
    so crossovers at the same batch (often the smallest) are marked once, not piled up."""
    lines = {}
    for found in crossovers:
        batch = found.get("estimate_batch") or found.get("upper")  # the estimate, else the bracket's upper end
        if batch:
            lines.setdefault(batch, []).append(f"{found['mode']}, {found['precision']}" if with_precision
                                               else found["mode"])
    return dict(sorted(lines.items()))


def _crossover_marks(crossovers, with_precision):
    """Draws a vertical line at each batch from which some GPU mode (and precision) beats the CPU."""
    def mark(axes):
        for index, (batch, which) in enumerate(crossover_lines(crossovers, with_precision).items()):
            axes.axvline(batch, color="black", alpha=0.6, linestyle=CROSSOVER_STYLES[index % len(CROSSOVER_STYLES)],
                         label=textwrap.fill(f"GPU beats CPU from batch {batch}: " + "; ".join(which), 60))
    return mark


def batch_plots(name, spec, pyplot, study, plot_dir):
    """One chart per size n of batch study `name` (spec: its BatchStudy): items/s of every
    implementation, mode (and precision) over the batch, CPU and GPU together, with the crossovers
    marked."""
    derived = study["derived"]
    rows = derived.get("throughput", [])
    with_precision = len({row.get("precision") for row in rows}) > 1  # rows written before precision was kept
    key = derive_batch.rate_key(spec)
    paths = []
    for n in sorted({row["n"] for row in rows}):
        series = {"/".join(row[axis] for axis in ("impl", "mode", "precision")[:2 + with_precision]):
                  [(point["batch"], point) for point in row["points"]] for row in rows if row["n"] == n}
        paths.append(os.path.join(plot_dir, f"{name}_throughput_n{n}.png"))
        _line_plot(pyplot, paths[-1], f"{spec.title}: {spec.unit} per second\n"
                                      f"{derive_batch.size_text(spec, study.get('layers'), n)}", f"{spec.unit}/s",
                   series, lambda point: point[key], xlabel=f"batch ({spec.unit} per call)",
                   mark=_crossover_marks([c for c in derived.get("crossovers", [])
                                          if c["n"] == n and c.get("measure", "time") == "time"], with_precision))
    return paths


# --- the transfer and overlap studies ----------------------------------------------------
def _link_mark(link):
    def mark(axes):
        axes.axhline(link["bytes_per_s"] / derive_transfer.GIB, color="black", alpha=0.6, linestyle="--",
                     label=f"PCIe Gen{link['generation']} x{link['width']}, theoretical per direction")
    return mark


def transfer_plots(pyplot, study, plot_dir):
    """One chart per direction: GiB/s over the bytes per copy, a line per engine and host memory
    (and the link's theoretical rate across the link)."""
    derived = study["derived"]
    paths = []
    for direction in dict.fromkeys(row["direction"] for row in derived.get("curves", [])):
        series = {f"{row['impl']}/{row['mode']}": [(point["n"], point) for point in row["points"]]
                  for row in derived["curves"] if row["direction"] == direction}
        link = derived.get("link") if direction in derive_transfer.LINK_DIRECTIONS else None
        paths.append(os.path.join(plot_dir, f"transfer_bandwidth_{direction}.png"))
        _line_plot(pyplot, paths[-1], f"transfer {direction}: bandwidth against the size of one copy",
                   "GiB/s (2^30 bytes per second)", series,
                   lambda point: point["bytes_per_s"] / derive_transfer.GIB, xlabel="bytes per copy",
                   mark=_link_mark(link) if link else None)
    return paths


def overlap_plots(pyplot, study, plot_dir):
    """One chart per workload, host memory and n: each schedule's time over the chunk count, with
    the serial run and the ideal (the larger of copy-only and compute-only time) beside them."""
    rows = study["derived"].get("pipelines", [])
    paths = []
    for workload, memory, n in dict.fromkeys((row["workload"], row["memory"], row["n"]) for row in rows):
        mine = [row for row in rows if (row["workload"], row["memory"], row["n"]) == (workload, memory, n)]
        series = {schedule: [(row["chunks"], row["median_s"]) for row in mine if row["schedule"] == schedule]
                  for schedule in dict.fromkeys(row["schedule"] for row in mine)}
        series["ideal: max(copy-only, compute-only)"] = sorted(
            {row["chunks"]: row["ideal_s"] for row in mine}.items())
        serial_s = mine[0]["serial_s"]

        def mark(axes, serial_s=serial_s):
            axes.axhline(serial_s, color="black", alpha=0.6, linestyle="--", label="serial (one chunk, one stream)")

        paths.append(os.path.join(plot_dir, f"overlap_{workload}_{memory}_n{n}.png"))
        _line_plot(pyplot, paths[-1], f"overlap: {workload}, {memory} host memory, n = {n}", "seconds per run",
                   series, lambda seconds: seconds, xlabel="chunks", mark=mark)
    return paths


# --- across the studies: the roofline ---------------------------------------------------
ROOFLINE_NAME = "roofline.png"
OTHER_MARKER = "P"  # a study's points whose record names no roofline_marker
# One colour per precision; no grey, which the legend's study markers use.
ROOF_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
                "tab:cyan", "navy", "gold", "teal")


def _roofline_range(roof):
    """The intensities the chart spans: the points' with room on both sides, and each ridge point
    (where the memory roof meets a compute roof)."""
    intensities = [point["intensity"] for point in roof["points"]]
    bandwidth = (roof.get("bandwidth") or {}).get("bytes_per_s")
    if bandwidth:
        intensities += [row["flop_per_s"] / bandwidth for row in roof["peaks"]]
    if not intensities:
        return 0.1, 1e4
    return min(intensities) / 3, max(intensities) * 3


def _marker(study):
    from gpubench_driver import studies  # the registry imports this module
    record = studies.BY_NAME.get(study)
    return (record.roofline_marker if record else None) or OTHER_MARKER


def _roofline_plot(pyplot, path, roof):
    from matplotlib.lines import Line2D
    figure, axes = pyplot.subplots(figsize=(10, 6.5))
    colours = {row["precision"]: ROOF_COLOURS[index % len(ROOF_COLOURS)] for index, row in enumerate(roof["peaks"])}
    low, high = _roofline_range(roof)
    for index, row in enumerate(roof["peaks"]):
        axes.plot([low, high], [row["flop_per_s"]] * 2, color=colours[row["precision"]],
                  linestyle=LINE_STYLES[1 + index // len(ROOF_COLOURS) % (len(LINE_STYLES) - 1)], linewidth=1.2,
                  label=plain(f"{row['precision']} peak {rate(row['flop_per_s'])}"))
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
    handles, labels = axes.get_legend_handles_labels()
    handles += [Line2D([], [], marker=_marker(study), color="grey", linestyle="none")
                for study in studies]
    labels += [plain(f"points: {study}") for study in studies]
    memory = "\n".join(textwrap.wrap(f"memory roof: {BANDWIDTH_CAPTION}" if bandwidth
                                    else plain(f"no memory roof: {roof.get('memory_roof_note')}"), 95))
    axes.set(xscale="log", yscale="log", xlim=(low, high),
             xlabel="arithmetic intensity (FLOP per byte of device memory traffic, compulsory-traffic model)",
             ylabel="FLOP/s (int8: operations/s)",
             title="Roofline: GPU entries in resident mode against the measured peaks\n" + memory)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(handles, labels, fontsize="small", loc="lower right",
                ncol=2 if len(handles) > LEGEND_ROWS else 1)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)


BANDWIDTH_CAPTION = "2 x the best device-to-device copy rate (a copy of B bytes reads B and writes B)"


def write_roofline(roof, out_dir):
    """plots/roofline.png from findings["roofline"]; None without matplotlib or without any peak."""
    pyplot = load_pyplot()
    if pyplot is None or not roof.get("peaks"):
        return None
    plot_dir = os.path.join(out_dir, "plots")
    os.makedirs(plot_dir, exist_ok=True)
    path = os.path.join(plot_dir, ROOFLINE_NAME)
    _roofline_plot(pyplot, path, roof)
    return path


def write_plots(studies, out_dir):
    """Paths of the PNGs written for every study (by its record's `plots` in the registry), or None
    without matplotlib."""
    from gpubench_driver import studies as registry  # the registry imports this module
    pyplot = load_pyplot()
    if pyplot is None:
        return None
    plot_dir = os.path.join(out_dir, "plots")
    os.makedirs(plot_dir, exist_ok=True)
    records = {name: registry.BY_NAME.get(name) for name in studies}
    return [path for name, study in studies.items() if records[name] and records[name].plots
            for path in records[name].plots(pyplot, study, plot_dir)]
