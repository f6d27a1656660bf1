"""PNG plots of the studies (matplotlib, Agg backend), named after their study; None without matplotlib.

Every line chart is a Chart: at most MAX_SERIES data series (a study with more splits its charts by
mode, precision or memory, keeping the CPU lines on each), each series styled alike in all the charts
of its study."""
import math
import os
import re
import textwrap
from dataclasses import dataclass
from typing import Callable, Optional

from gpubench_driver.lib import findings, batch_study
from gpubench_driver.lib import outputs
from gpubench_driver.lib.formatting import rate
from gpubench_driver.studies import mandelbrot, transfer

PLOT_DIR = "plots"  # in the output folder
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


# --- which series go on which chart --------------------------------------------------------
MAX_SERIES = 8  # data series on one chart: past this the lines tangle and the legend is a list to search
HOST_MODE = "host"  # the CPU entries' mode: their lines are the baseline every chart of a split keeps


def _series(entries, key):
    """{key: [(n, entry), ...]} sorted by n; key(entry) is the entry's series, a tuple (implementation,
    mode[, precision]), or None to leave it out."""
    series = {}
    for entry in findings.ok_entries(entries):
        name = key(entry)
        if name is not None:
            series.setdefault(name, []).append((entry["n"], entry))
    return {name: sorted(points, key=lambda point: point[0]) for name, points in sorted(series.items())}


def chart_shares(keys, levels, baseline=()):
    """[(names of the chart's share, its keys)]: all the keys on one chart when they fit in MAX_SERIES;
    else a chart per value of levels[0](key), each also holding the baseline keys (the CPU, which the
    GPU lines are read against), a chart still too full split by the next level, past the last in parts."""
    if len(keys) <= MAX_SERIES:
        return [((), list(keys))]
    shared = [key for key in keys if key in baseline] if len(baseline) < MAX_SERIES else []
    rest = [key for key in keys if key not in shared]
    if not levels:
        room = MAX_SERIES - len(shared)
        return [((f"part {start // room + 1}",), shared + rest[start:start + room])
                for start in range(0, len(rest), room)]
    groups = {}
    for key in rest:
        groups.setdefault(levels[0](key), []).append(key)
    return [((group,) + names, chart) for group, members in groups.items()
            for names, chart in chart_shares(shared + members, levels[1:], shared)]


def _label(key):
    return "/".join(key)


@dataclass(frozen=True)
class Chart:
    """One log-log line chart: value(point) over x for each series ({key: [(x, point), ...]}); mark(axes,
    keys) adds the lines that belong to the chart's series (crossovers, the link's rate) before it is saved."""
    path: str
    title: str
    ylabel: str
    series: dict
    value: Callable = lambda point: point
    xlabel: str = "n (square matrices: n x n)"
    mark: Optional[Callable] = None


def plot_path(plot_dir, *parts):
    """plot_dir/<parts>.png: every plot's file name, its parts cleaned (they come from the results file)."""
    return outputs.path_in(plot_dir, *parts, suffix=".png")


def _scoped(title, names):
    """The title with the chart's share of the series named at the end of its first line."""
    first, *rest = title.split("\n")
    return "\n".join([f"{first} ({', '.join(names)})", *rest]) if names else title


def _line_charts(plot_dir, stem, title, series, levels=(), baseline=(), **chart):
    """The Charts of `series`, at most MAX_SERIES each (chart_shares), at plot_dir/<stem parts>.png or
    plot_dir/<stem parts>_<share>.png (stem: a tuple of name parts)."""
    return [Chart(path=plot_path(plot_dir, *stem, *names), title=_scoped(title, names),
                  series={key: series[key] for key in keys}, **chart)
            for names, keys in chart_shares(list(series), levels, baseline)]


def _cpu(series):
    return [key for key in series if key[1] == HOST_MODE]


# --- how the series look -------------------------------------------------------------------
LEGEND_ROWS = 20  # more lines than this: the legend takes two columns
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
           "tab:olive", "tab:cyan")  # matplotlib's default cycle
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")  # as many as MAX_SERIES: a chart's lines all differ in marker


def _least_taken(count, taken):
    """The index below count that the fewest of `taken` hold, the lowest on a tie."""
    return min(range(count), key=lambda index: (taken.count(index), index))


def study_styles(charts_labels):
    """{label: matplotlib style} for a study whose charts hold the given lists of labels: a label looks
    the same in every chart (a reader follows cuBLAS from one to the next), and no two labels of a chart
    share a colour or a marker (greedy colouring, the labels with the most chart-mates first: the CPU lines)."""
    mates = {}
    for labels in charts_labels:
        for label in labels:
            mates.setdefault(label, set()).update(other for other in labels if other != label)
    colours, markers = {}, {}
    for label in sorted(mates, key=lambda label: -len(mates[label])):  # stable: ties keep their order
        colours[label] = _least_taken(len(COLOURS), [colours[m] for m in mates[label] if m in colours])
        markers[label] = _least_taken(len(MARKERS), [markers[m] for m in mates[label] if m in markers])
    return {label: {"color": COLOURS[colours[label]], "marker": MARKERS[markers[label]], "linestyle": "-"}
            for label in mates}


def _save(pyplot, figure, path, dpi=120):
    """The figure as a PNG at path, written whole or not at all (outputs.replacing); closed either way."""
    try:
        with outputs.replacing(path, binary=True) as stream:
            figure.savefig(stream, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        pyplot.close(figure)


def _finish(pyplot, figure, axes, path, extra=()):
    """Grid, legend and save; extra: (handle, label) pairs the legend shows beside the axes' own."""
    axes.grid(True, which="both", alpha=0.3)
    handles, labels = axes.get_legend_handles_labels()
    handles += [handle for handle, _ in extra]
    labels += [label for _, label in extra]
    # Beside the axes, not over the data; the saved image widens to hold it (bbox_inches), the axes keep their size.
    axes.legend(handles, [plain(label) for label in labels], fontsize="small", loc="upper left",  # names from the file
                bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, ncol=2 if len(handles) > LEGEND_ROWS else 1)
    _save(pyplot, figure, path)


def _shown(chart, points):
    """The (x, value) pairs of a series that its log-log chart can place: a value, both above 0."""
    pairs = [(x, chart.value(point)) for x, point in points]
    return [(x, y) for x, y in pairs if _positive(x) and _positive(y) and math.isfinite(y)]


def _line_plot(pyplot, chart, styles):
    figure, axes = pyplot.subplots(figsize=(9, 6))
    for key, points in chart.series.items():
        shown = _shown(chart, points)
        if shown:
            axes.plot(*zip(*shown), markersize=4, label=_label(key), **styles[_label(key)])
    if chart.mark:
        chart.mark(axes, list(chart.series))
    axes.set(xscale="log", yscale="log", xlabel=chart.xlabel, ylabel=chart.ylabel, title=plain(chart.title))
    _finish(pyplot, figure, axes, chart.path)


def _draw(pyplot, study_charts):
    """Draws a study's Charts, styled alike across them; returns their paths. A chart with no point to
    place (a study that measured nothing, a figure no entry has) is neither drawn nor linked."""
    study_charts = [chart for chart in study_charts if any(_shown(chart, points) for points in chart.series.values())]
    styles = study_styles([[_label(key) for key in chart.series] for chart in study_charts])
    for chart in study_charts:
        _line_plot(pyplot, chart, styles)
    return [chart.path for chart in study_charts]


# --- crossovers --------------------------------------------------------------------------
CROSSOVER_STYLES = ("--", ":", "-.")  # one per distinct crossover on a chart


def crossover_lines(crossovers, with_precision, axis="batch"):
    """{value of the axis: [which GPU mode (and precision) beats the CPU from it]}: one line per distinct
    value, so crossovers at the same batch or n (often the smallest) are marked once, not piled up."""
    lines = {}
    for found in crossovers:
        at = found.get(f"estimate_{axis}") or found.get("upper")  # the estimate, else the bracket's upper end
        if at:
            lines.setdefault(at, []).append(f"{found['mode']}, {found['precision']}" if with_precision
                                            else found["mode"])
    return dict(sorted(lines.items()))


def _crossover_marks(crossovers, with_precision, axis="batch"):
    """mark(axes, keys): a vertical line at each value of the axis from which a GPU mode (and precision)
    of the chart's series (keys (implementation, mode[, precision])) beats the CPU."""
    def on_chart(found, keys):
        return any(key[1] == found["mode"] and (not with_precision or key[2] == found["precision"])
                   for key in keys)

    def mark(axes, keys):
        shown = [found for found in crossovers if on_chart(found, keys)]
        for index, (at, which) in enumerate(crossover_lines(shown, with_precision, axis).items()):
            axes.axvline(at, color="black", alpha=0.6, linestyle=CROSSOVER_STYLES[index % len(CROSSOVER_STYLES)],
                         label=textwrap.fill(f"GPU beats CPU from {axis} = {at}: " + "; ".join(which), 60))
    return mark


def _timed(crossovers):
    return [found for found in crossovers if found.get("measure", "time") == "time"]


# --- matmul ----------------------------------------------------------------------------
def _speedup_series(entries):
    """{("best GPU", mode): [(n, best CPU time / best GPU time of that mode)]} at the sizes both measured."""
    best_cpu = findings.best_by_size(findings.cpu_entries(entries))
    series = {}
    for mode in findings.gpu_modes(entries):
        best_gpu = findings.best_by_size(findings.gpu_entries(entries, mode))
        series[("best GPU", mode)] = [(n, best_cpu[n]["time_s"]["median"] / best_gpu[n]["time_s"]["median"])
                                      for n in sorted(set(best_cpu) & set(best_gpu))]
    return series


def _parity_and_crossovers(crossovers):
    crossover_marks = _crossover_marks(crossovers, with_precision=False, axis="n")

    def mark(axes, keys):
        axes.axhline(1.0, color="black", linewidth=0.8)  # as fast as the CPU
        crossover_marks(axes, keys)
    return mark


def matmul_plots(pyplot, study, plot_dir):
    """Time and rate of every implementation and mode, split by GPU mode when over MAX_SERIES (the CPU
    on each, e.g. matmul_time_resident.png); the best GPU's speedup over the best CPU per mode."""
    entries = study["entries"]
    series = _series(entries, lambda entry: (entry["impl"], entry["mode"]))
    by_mode = (lambda key: key[1],)
    study_charts = (
        _line_charts(plot_dir, ("matmul_time",), "matmul FP32: median time", series, by_mode,
                     _cpu(series), ylabel="median time (s)", value=lambda entry: entry["time_s"]["median"])
        + _line_charts(plot_dir, ("matmul_rate",), "matmul FP32: FLOP/s", series, by_mode, _cpu(series),
                       ylabel="FLOP/s", value=lambda entry: entry.get("flop_per_s")))
    if findings.gpu_modes(entries):
        study_charts += _line_charts(plot_dir, ("matmul_speedup",),
                                     "matmul FP32: GPU speedup over the best CPU", _speedup_series(entries),
                                     ylabel="speedup: best CPU time / best GPU time (x)",
                                     mark=_parity_and_crossovers(_timed(study["derived"].get("crossovers", []))))
    return _draw(pyplot, study_charts)


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
    axes.set(xscale="log", yscale="log", xlabel="relative Frobenius error against FP64 (no unit)",
             ylabel="speedup over cuBLAS FP32, same size (x)",
             title="precision: speed against accuracy (GPU resident, largest size of each precision)")
    _finish(pyplot, figure, axes, path)


def _input_width(precision):
    """'32-bit' for fp32 and tf32, '16-bit' for bf16 and fp16_acc16, '8-bit' for int8 and fp8_e4m3: the
    first number in a precision's name, the bits an input is stored in."""
    bits = re.search(r"\d+", precision)
    return f"{bits.group()}-bit" if bits else precision


def precision_plots(pyplot, study, plot_dir):
    """The speed-accuracy chart, and FLOP/s over n split by input width when over MAX_SERIES (the CPU on
    each, e.g. precision_rate_16_bit.png)."""
    paths = []
    if pareto_points(study["derived"].get("speedups_over_fp32", [])):
        paths.append(plot_path(plot_dir, "precision_pareto"))
        _pareto_plot(pyplot, paths[0], study["derived"]["speedups_over_fp32"])
    # Resident GPU and host CPU lines: the transfer modes would double the lines and say the same.
    series = _series(study["entries"], lambda entry: (entry["impl"], entry["mode"], entry["precision"])
                     if entry["mode"] in ("resident", HOST_MODE) else None)
    return paths + _draw(pyplot, _line_charts(
        plot_dir, ("precision_rate",), "precision: FLOP/s", series, (lambda key: _input_width(key[2]),),
        _cpu(series), ylabel="FLOP/s (int8: operations/s)", value=lambda entry: entry.get("flop_per_s")))


# --- studies with a batch axis ---------------------------------------------------------
def batch_plots(name, spec, pyplot, study, plot_dir):
    """One chart per size n of batch study `name` (spec: its BatchStudy): items/s of every
    implementation, mode (and precision) over the batch, CPU and GPU together, with the crossovers
    marked; split by precision, then mode, when over MAX_SERIES (e.g. conv2d_throughput_n56_fp16.png)."""
    derived = study["derived"]
    rows = derived.get("throughput", [])
    with_precision = len({row.get("precision") for row in rows}) > 1  # rows written before precision was kept
    fields = ("impl", "mode", "precision")[:2 + with_precision]
    levels = ((lambda key: key[2],) if with_precision else ()) + (lambda key: key[1],)
    key = batch_study.rate_key(spec)
    study_charts = []
    for n in sorted({row["n"] for row in rows}):
        series = {tuple(row[field] for field in fields): [(point["batch"], point) for point in row["points"]]
                  for row in rows if row["n"] == n}
        study_charts += _line_charts(
            plot_dir, (name, "throughput", f"n{n}"),
            f"{spec.title}: {spec.unit} per second\n{batch_study.size_text(spec, study.get('layers'), n)}",
            series, levels, _cpu(series), ylabel=f"{spec.unit}/s", value=lambda point: point[key],
            xlabel=f"batch ({spec.unit} per call)",
            mark=_crossover_marks(_timed(c for c in derived.get("crossovers", []) if c["n"] == n), with_precision))
    return _draw(pyplot, study_charts)


# --- the transfer and overlap studies ----------------------------------------------------
def _link_mark(link):
    def mark(axes, keys):
        axes.axhline(link["bytes_per_s"] / transfer.GIB, color="black", alpha=0.6, linestyle="--",
                     label=f"PCIe Gen{link['generation']} x{link['width']}, theoretical per direction")
    return mark


def _memory_family(memory):
    """'pageable' for the pageable memories (first touch, THP, zero page), 'page-locked' for the rest
    (pinned, registered, write-combined; device memory's d2d chart has one line, never split)."""
    return "pageable" if memory.startswith("pageable") else "page-locked"


def transfer_plots(pyplot, study, plot_dir):
    """One chart per direction: GiB/s over the bytes per copy, a line per engine and host memory
    (and the link's theoretical rate across the link); split by memory family, then engine, when over
    MAX_SERIES (e.g. transfer_bandwidth_h2d_page_locked.png)."""
    derived = study["derived"]
    study_charts = []
    for direction in dict.fromkeys(row["direction"] for row in derived.get("curves", [])):
        series = {(row["impl"], row["mode"]): [(point["n"], point) for point in row["points"]]
                  for row in derived["curves"] if row["direction"] == direction}
        link = derived.get("link") if direction in transfer.LINK_DIRECTIONS else None
        study_charts += _line_charts(
            plot_dir, ("transfer_bandwidth", direction),
            f"transfer {direction}: bandwidth against the size of one copy", series,
            (lambda key: _memory_family(key[1]), lambda key: key[0]), ylabel="GiB/s (2^30 bytes per second)",
            value=lambda point: point["bytes_per_s"] / transfer.GIB, xlabel="bytes per copy (B)",
            mark=_link_mark(link) if link else None)
    return _draw(pyplot, study_charts)


def _serial_mark(serial_s):
    def mark(axes, keys):
        axes.axhline(serial_s, color="black", alpha=0.6, linestyle="--", label="serial (one chunk, one stream)")
    return mark


def overlap_plots(pyplot, study, plot_dir):
    """One chart per workload, host memory and n: each schedule's time over the chunk count, with
    the serial run and the ideal (the larger of copy-only and compute-only time) beside them."""
    rows = study["derived"].get("pipelines", [])
    study_charts = []
    for workload, memory, n in dict.fromkeys((row["workload"], row["memory"], row["n"]) for row in rows):
        mine = [row for row in rows if (row["workload"], row["memory"], row["n"]) == (workload, memory, n)]
        series = {(schedule,): [(row["chunks"], row["median_s"]) for row in mine if row["schedule"] == schedule]
                  for schedule in dict.fromkeys(row["schedule"] for row in mine)}
        ideal = {row["chunks"]: row["ideal_s"] for row in mine}
        series[("ideal: max(copy-only, compute-only)",)] = sorted(ideal.items())
        study_charts += _line_charts(
            plot_dir, ("overlap", workload, memory, f"n{n}"),
            f"overlap: {workload}, {memory} host memory, n = {n}", series, ylabel="seconds per run (s)",
            xlabel="chunks (pieces the data is copied and computed in)", mark=_serial_mark(mine[0]["serial_s"]))
    return _draw(pyplot, study_charts)


# --- vector add ----------------------------------------------------------------------------
ELEMENTS = "elements per vector (n; 12 bytes each across A, B and C)"


def _parity(axes, keys):
    axes.axhline(1.0, color="black", linewidth=0.8)


def vector_add_plots(pyplot, study, plot_dir):
    """The time of every implementation and mode over n; the best CPU's time over the GPU's per GPU mode
    (the crossovers marked); the copies' time over the best CPU's whole time, per transfer mode."""
    derived = study["derived"]
    series = {(row["impl"], row["mode"]): [(point["n"], point) for point in row["points"]]
              for row in derived.get("series") or []}
    rows = derived.get("comparison") or []
    speedups = {("best GPU", mode): [(row["n"], row["gpu"][mode]["speedup"]) for row in rows if mode in row["gpu"]]
                for mode in dict.fromkeys(mode for row in rows for mode in row["gpu"])}
    copies = {(mode,): [(row["n"], row["copies"][mode]["over_cpu"]) for row in rows if mode in row["copies"]]
              for mode in dict.fromkeys(mode for row in rows for mode in row["copies"])}
    study_charts = _line_charts(plot_dir, ("vector_add_time",), "vector_add FP32: median time", series,
                                (lambda key: key[1],), _cpu(series), ylabel="median time (s)",
                                value=lambda point: point["median_s"], xlabel=ELEMENTS)
    if speedups:
        study_charts += _line_charts(plot_dir, ("vector_add_speedup",),
                                     "vector_add FP32: GPU speedup over the best CPU", speedups,
                                     ylabel="best CPU time / best GPU time (x)", xlabel=ELEMENTS,
                                     mark=_parity_and_crossovers(_timed(derived.get("crossovers") or [])))
    if copies:
        study_charts += _line_charts(plot_dir, ("vector_add_copies",),
                                     "vector_add: the copies' time over the best CPU's whole time\n"
                                     "(transfer-inclusive time less the kernel's resident time)", copies,
                                     ylabel="copies / best CPU time (x; above 1: the copies cost more)",
                                     xlabel=ELEMENTS, mark=_parity)
    return _draw(pyplot, study_charts)


# --- mandelbrot ------------------------------------------------------------------------------
COUNT_IMAGE = "mandelbrot_counts.pgm"  # written into the run's folder by the study binary (--artifacts-dir)


def read_pgm(path):
    """(width, height, maxval, samples in file order, the comment) of a binary PGM (P5; 16-bit samples
    big-endian); None when the file is absent or not one."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError:
        return None
    fields, comments, position = [], [], 0
    while len(fields) < 4 and position < len(data):
        if data[position:position + 1].isspace():
            position += 1
        elif data[position:position + 1] == b"#":
            end = data.find(b"\n", position)
            end = len(data) if end < 0 else end
            comments.append(data[position + 1:end].decode("utf-8", "replace").strip())
            position = end
        else:
            end = position
            while end < len(data) and not data[end:end + 1].isspace():
                end += 1
            fields.append(data[position:end])
            position = end
    if len(fields) < 4 or fields[0] != b"P5" or not all(field.isdigit() for field in fields[1:]):
        return None
    width, height, maxval = (int(field) for field in fields[1:])
    wide = 2 if maxval > 255 else 1
    body = data[position + 1:]
    if not (0 < maxval < 65536) or len(body) != width * height * wide:
        return None
    samples = list(body) if wide == 1 else [body[i] << 8 | body[i + 1] for i in range(0, len(body), 2)]
    return width, height, maxval, samples, " ".join(comments)


def _count_image_plot(pyplot, path, image):
    import numpy
    width, height, maxval, samples, note = image
    counts = numpy.array(samples, dtype=float).reshape(height, width)
    shown = numpy.ma.masked_where(counts >= maxval, numpy.log1p(counts))  # the set itself: black
    colours = pyplot.get_cmap("magma").copy()
    colours.set_bad("black")
    figure, axes = pyplot.subplots(figsize=(9, 9 * height / width + 0.8))
    axes.imshow(shown, cmap=colours, interpolation="nearest")
    axes.set_axis_off()
    axes.set_title(plain("\n".join(textwrap.wrap(f"mandelbrot: {note} (at most {maxval} iterations; black: never "
                                                  f"escaped; colour: log(1 + count))", 100))), fontsize="small")
    _save(pyplot, figure, path, dpi=100)


def _configuration_bars(pyplot, path, row, guide):
    """Median time of every implementation and mode at one configuration, beside the guide's figures."""
    bars = [(f"{cores.replace('_', ' ')}: {side['impl']}", side["median_s"]) for cores, side in row["cpu"].items()]
    bars += [(f"GPU {kernel['impl']}, {kernel['mode']}", kernel["median_s"]) for kernel in row["kernels"]]
    if guide:
        bars += [(f"guide: CPU, {guide['cpu']}", guide["cpu_s"]), (f"guide: GPU, {guide['gpu']}", guide["gpu_s"])]
    figure, axes = pyplot.subplots(figsize=(9, 0.45 * len(bars) + 1.5))
    labels = [plain(textwrap.fill(label, 50)) for label, _ in bars]
    axes.barh(range(len(bars)), [seconds for _, seconds in bars],
              color=["tab:grey" if label.startswith("guide") else "tab:blue" for label, _ in bars])
    axes.set_yticks(range(len(bars)), labels, fontsize="small")
    axes.invert_yaxis()
    axes.set(xscale="log", xlabel="median time of one image (s)",
             title=plain(f"mandelbrot: {row['width']} x {row['height']} pixels, at most {row['max_iterations']} "
                         f"iterations, {row['precision']}" + (" (the guide's configuration)" if guide else "")))
    axes.grid(True, which="both", axis="x", alpha=0.3)
    _save(pyplot, figure, path)


def mandelbrot_plots(pyplot, study, plot_dir):
    """The count image the run kept (its folder's mandelbrot_counts.pgm), the times at the guide's
    configuration beside the guide's own figures, and pixels per second over the image's pixels per
    iteration limit where more than one image was measured (split by precision, then mode)."""
    paths = []
    image = read_pgm(os.path.join(os.path.dirname(plot_dir), COUNT_IMAGE))
    if image:
        paths.append(plot_path(plot_dir, "mandelbrot_counts"))
        _count_image_plot(pyplot, paths[-1], image)
    derived = study["derived"]
    claim = derived.get("guide_claim")
    if claim:
        paths.append(plot_path(plot_dir, "mandelbrot_guide"))
        _configuration_bars(pyplot, paths[-1], claim["configuration"], mandelbrot.GUIDE)
    rows = [row for row in derived.get("rates") or [] if len(row["points"]) > 1]
    study_charts = []
    for limit in sorted({row["max_iterations"] for row in rows}):
        series = {(row["impl"], row["mode"], row["precision"]): [(point["n"], point) for point in row["points"]]
                  for row in rows if row["max_iterations"] == limit}
        study_charts += _line_charts(
            plot_dir, ("mandelbrot_rate", limit), f"mandelbrot: pixels per second, at most {limit} "
            "iterations", series, (lambda key: key[2], lambda key: key[1]), _cpu(series), ylabel="pixels/s",
            value=lambda point: point["pixels_per_s"], xlabel="rows of the image (n; 1.5 n pixels wide)")
    return paths + _draw(pyplot, study_charts)


# --- the stream study and the roofline study's sweep ----------------------------------------
WORKING_SET = "working set (bytes one call reads and writes, STREAM's count)"
INTENSITY = "arithmetic intensity (FLOP per byte: k FMAs per element over its bytes read and written)"


def _stream_marks(peak, l2_bytes):
    """mark(axes, keys): the theoretical peak (a GPU line on the chart) and the GPU's L2 size."""
    def mark(axes, keys):
        if not any(key[1] != HOST_MODE for key in keys):
            return
        if peak:
            axes.axhline(peak["bytes_per_s"] / 1e9, color="black", alpha=0.6, linestyle="--",
                         label=f"theoretical peak {peak['bytes_per_s'] / 1e9:.0f} GB/s (NVML)")
        if l2_bytes:
            axes.axvline(l2_bytes, color="black", alpha=0.6, linestyle=":",
                         label=f"GPU L2 cache, {l2_bytes / 2 ** 20:.0f} MiB")
    return mark


def stream_plots(pyplot, study, plot_dir):
    """One chart per operation: GB/s over the working set, a line per kernel, mode and precision, with the
    theoretical peak and the L2 size; split by precision, then mode, when over MAX_SERIES (the CPU on
    each), e.g. stream_triad_fp64.png."""
    derived = study["derived"]
    rows = derived.get("curves") or []
    study_charts = []
    for operation in dict.fromkeys(row["operation"] for row in rows):
        series = {(row["kernel"], row["mode"], row["precision"]): [(point["working_set_bytes"], point)
                                                                 for point in row["points"]]
                  for row in rows if row["operation"] == operation}
        study_charts += _line_charts(
            plot_dir, ("stream", operation), f"stream {operation}: bandwidth against the working set",
            series, (lambda key: key[2], lambda key: key[1]), _cpu(series),
            ylabel="GB/s (STREAM's bytes, 10^9 per second)", value=lambda point: point["bytes_per_s"] / 1e9,
            xlabel=WORKING_SET, mark=_stream_marks(derived.get("theoretical"), derived.get("l2_bytes")))
    return _draw(pyplot, study_charts)


def _fitted_roofs(rows):
    """mark(axes, keys): each series' measured roofs, its bandwidth up to the ridge and its compute roof past it."""
    def mark(axes, keys):
        for index, row in enumerate(row for row in rows if (row["impl"], row["precision"]) in keys):
            low, high = row["points"][0]["intensity"], row["points"][-1]["intensity"]
            ridge = row["ridge_intensity"]
            axes.plot([low, ridge, high], [row["bandwidth_bytes_per_s"] * low, row["compute_flop_per_s"],
                                           row["compute_flop_per_s"]],
                      color="black", alpha=0.5, linewidth=0.9,
                      linestyle=CROSSOVER_STYLES[index % len(CROSSOVER_STYLES)],
                      label=plain(f"{row['precision']}: {row['bandwidth_bytes_per_s'] / 1e9:.0f} GB/s, "
                                  f"{rate(row['compute_flop_per_s'])}, ridge {ridge:.3g} FLOP/B"))
    return mark


def roofline_sweep_plots(pyplot, study, plot_dir):
    """One chart per device and size: FLOP/s over the arithmetic intensity, a line per precision, with
    the bandwidth and compute roof each reached (e.g. roofline_sweep_gpu_n33554432.png)."""
    rows = study["derived"].get("series") or []
    study_charts = []
    for device, n in dict.fromkeys((row["device"], row["n"]) for row in rows):
        mine = [row for row in rows if (row["device"], row["n"]) == (device, n)]
        series = {(row["impl"], row["precision"]): [(point["intensity"], point) for point in row["points"]]
                  for row in mine}
        study_charts += _line_charts(
            plot_dir, ("roofline_sweep", device, f"n{n}"),
            f"roofline sweep, {device}: the FMA chain's rate against its intensity\n{n} elements per array",
            series, ylabel="FLOP/s", value=lambda point: point["flop_per_s"], xlabel=INTENSITY,
            mark=_fitted_roofs(mine))
    return _draw(pyplot, study_charts)


# --- the primitives study ---------------------------------------------------------------------
PRIMITIVE_ELEMENTS = "elements per call (n)"


def _reference_mark(reference, target):
    """mark(axes, keys): the device's memory bandwidth reduce is held against, and the target's share of it."""
    def mark(axes, keys):
        axes.axhline(reference["bytes_per_s"] / 1e9, color="black", alpha=0.6, linestyle="--",
                     label=plain(textwrap.fill(f"memory bandwidth: {reference['what']}", 60)))
        axes.axhline(target * reference["bytes_per_s"] / 1e9, color="black", alpha=0.6, linestyle=":",
                     label=f"target: {target:.0%} of it")
    return mark


def primitives_plots(pyplot, study, plot_dir):
    """One chart per primitive: elements per second over n, a line per library and mode, with the
    crossovers marked (e.g. primitives_sort_u32.png); and reduce's effective bandwidth over n beside the
    device's memory bandwidth it is held against (primitives_reduce_bandwidth.png)."""
    derived = study["derived"]
    rows = derived.get("curves") or []
    study_charts = []
    for primitive in dict.fromkeys(row["primitive"] for row in rows):
        series = {(row["library"], row["mode"]): [(point["n"], point) for point in row["points"]]
                  for row in rows if row["primitive"] == primitive}
        crossovers = [found for found in _timed(derived.get("crossovers") or []) if found["primitive"] == primitive]
        study_charts += _line_charts(
            plot_dir, ("primitives", primitive), f"primitives {primitive}: elements per second",
            series, (lambda key: key[1],), _cpu(series), ylabel="elements/s",
            value=lambda point: point["elements_per_s"], xlabel=PRIMITIVE_ELEMENTS,
            mark=_crossover_marks(crossovers, with_precision=False, axis="n"))
    found = derived.get("reduce_bandwidth") or {}
    reduce = {(row["library"], row["mode"]): [(point["n"], point) for point in row["points"]]
              for row in rows if row["primitive"] == "reduce" and row["mode"] != "transfer_pinned"}
    if reduce and found.get("reference"):
        study_charts += _line_charts(
            plot_dir, ("primitives_reduce_bandwidth",),
            "primitives reduce: effective bandwidth (bytes read per second)", reduce, ylabel="GB/s (10^9 bytes per second)",
            value=lambda point: point["bytes_per_s"] / 1e9 if point["bytes_per_s"] else None,
            xlabel=PRIMITIVE_ELEMENTS, mark=_reference_mark(found["reference"], found["target"]))
    return _draw(pyplot, study_charts)


# --- the occupancy and launch_overhead studies ------------------------------------------------
RESIDENT_WARPS = "warps resident at once (the grid's first wave, all multiprocessors)"
CHAIN_KERNELS = "kernels in the chain (n)"


def _occupancy_heat_map(pyplot, path, kernel, launch):
    """Each launch configuration's rate as a share of the kernel's best: threads per block up, blocks
    across, the walk-through's launch outlined."""
    threads = sorted({point["threads_per_block"] for point in kernel["points"]})
    blocks = sorted({point["blocks"] for point in kernel["points"]})
    grid = [[float("nan")] * len(blocks) for _ in threads]
    for point in kernel["points"]:
        grid[threads.index(point["threads_per_block"])][blocks.index(point["blocks"])] = point["fraction_of_best"]
    figure, axes = pyplot.subplots(figsize=(max(6.0, 0.6 * len(blocks) + 2), max(3.0, 0.5 * len(threads) + 1.5)))
    image = axes.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto", origin="lower")
    for row, values in enumerate(grid):
        for column, value in enumerate(values):
            if not math.isnan(value):  # a configuration measured
                axes.text(column, row, f"{value:.0%}" if value >= 0.1 else f"{value:.1%}", ha="center", va="center",
                          fontsize="x-small", color="white" if value < 0.6 else "black")
    if launch["threads_per_block"] in threads and launch["blocks"] in blocks:
        axes.add_patch(pyplot.Rectangle((blocks.index(launch["blocks"]) - 0.5, threads.index(launch["threads_per_block"])
                                         - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
    axes.set_xticks(range(len(blocks)))
    axes.set_xticklabels([str(value) for value in blocks], rotation=45)
    axes.set_yticks(range(len(threads)))
    axes.set_yticklabels([str(value) for value in threads])
    figure.colorbar(image, ax=axes, label="rate / the best launch measured")
    axes.set(xlabel="blocks", ylabel="threads per block",
             title=plain(f"occupancy {kernel['impl']}: rate by launch configuration\n(red: the walk-through's "
                         f"{launch['blocks']} x {launch['threads_per_block']})"))
    _save(pyplot, figure, path)


def occupancy_plots(pyplot, study, plot_dir):
    """Per kernel: a heat map of the rate by launch configuration (occupancy_<kernel>.png) and its rate
    over the warps resident at once, a line per block size (occupancy_<kernel>_warps.png)."""
    derived = study["derived"]
    paths, study_charts = [], []
    for kernel in derived.get("kernels") or []:
        path = plot_path(plot_dir, "occupancy", kernel["impl"])
        _occupancy_heat_map(pyplot, path, kernel, derived["walkthrough_launch"])
        paths.append(path)
        series = {}
        for point in kernel["points"]:
            if point.get("resident_warps"):
                series.setdefault((f"{point['threads_per_block']} threads",), []).append((point["resident_warps"], point))
        study_charts += _line_charts(
            plot_dir, ("occupancy", kernel["impl"], "warps"),
            f"occupancy {kernel['impl']}: rate against the resident warps", {
                key: sorted(points, key=lambda item: item[0]) for key, points in series.items()},
            ylabel="rate / the best launch measured", value=lambda point: point["fraction_of_best"],
            xlabel=RESIDENT_WARPS)
    return paths + _draw(pyplot, study_charts)


def launch_overhead_plots(pyplot, study, plot_dir):
    """The time per kernel against the chain's length, a line per kernel and launch mode
    (launch_overhead_per_kernel.png), and the share of a small-kernel chain's time the GPU ran its
    kernels (launch_overhead_busy.png)."""
    rows = study["derived"].get("rows") or []
    per_kernel, busy = {}, {}
    for row in rows:
        per_kernel.setdefault((row["impl"], row["mode"]), []).append((row["n"], row))
        if row["busy_fraction"] is not None:
            busy.setdefault((row["mode"],), []).append((row["n"], row))
    study_charts = _line_charts(plot_dir, ("launch_overhead_per_kernel",),
                                "launch_overhead: time per kernel (host clock, launch to synchronisation)",
                                per_kernel, ylabel="call time / n (s)", value=lambda row: row["per_kernel_s"],
                                xlabel=CHAIN_KERNELS)
    if busy:
        study_charts += _line_charts(plot_dir, ("launch_overhead_busy",),
                                     "launch_overhead: GPU busy share of a chain of small kernels\n"
                                     "(the kernels' own spans over the call's time)", busy,
                                     ylabel="kernels' time / call time", value=lambda row: row["busy_fraction"],
                                     xlabel=CHAIN_KERNELS)
    return _draw(pyplot, study_charts)



def _route_heat_map(pyplot, path, matrix, key, label, scale, cell):
    """One grid of a p2p matrix: source ends down, destination ends across, a route's value in its cell
    (blank where no route was measured)."""
    ends = matrix["ends"]
    grid = [[float("nan") if value is None else value * scale for value in row] for row in matrix[key]]
    figure, axes = pyplot.subplots(figsize=(max(4.5, 0.8 * len(ends) + 2.5), max(3.5, 0.7 * len(ends) + 1.5)))
    image = axes.imshow(grid, cmap="viridis", aspect="auto")
    for row, values in enumerate(grid):
        for column, value in enumerate(values):
            if not math.isnan(value):
                axes.text(column, row, cell(value), ha="center", va="center", fontsize="x-small", color="white")
    axes.set_xticks(range(len(ends)))
    axes.set_xticklabels(ends)
    axes.set_yticks(range(len(ends)))
    axes.set_yticklabels(ends)
    figure.colorbar(image, ax=axes, label=label)
    axes.set(xlabel="destination", ylabel="source",
             title=plain(f"p2p {matrix['impl']}, {matrix['direction']}: {label}"))
    _save(pyplot, figure, path)


def p2p_plots(pyplot, study, plot_dir):
    """Per engine and direction, heat maps over the ends (the host and every GPU) of the bandwidth of the
    largest copy (p2p_bandwidth_<engine>_<direction>.png) and the latency of the smallest
    (p2p_latency_<engine>_<direction>.png)."""
    paths = []
    for matrix in study["derived"].get("matrices") or []:
        stem = (matrix["impl"], matrix["direction"])
        for key, name, label, scale, cell in (
                ("bandwidth_bytes_per_s", "bandwidth", "GiB/s of the largest copy", 1 / float(1 << 30),
                 lambda value: f"{value:.1f}"),
                ("latency_s", "latency", "microseconds of the smallest copy", 1e6, lambda value: f"{value:.1f}")):
            path = plot_path(plot_dir, "p2p", name, *stem)
            _route_heat_map(pyplot, path, matrix, key, label, scale, cell)
            paths.append(path)
    return paths


# --- across the studies: the roofline ---------------------------------------------------
def gemm_ladder_plots(pyplot, study, plot_dir):
    """Per ladder, each rung's rate as a fraction of cuBLAS's, a group of bars per rung with a bar per
    size (gemm_ladder_<precision>.png)."""
    paths = []
    for ladder in study["derived"].get("ladders") or []:
        rungs = [rung for rung in ladder["rungs"] if rung != "cublas"]
        by_point = {(p["rung"], p["n"]): p["fraction_of_cublas"] for p in ladder["points"]}
        if not rungs or not any(value for value in by_point.values()):
            continue
        width = 0.8 / max(len(ladder["sizes"]), 1)
        figure, axes = pyplot.subplots(figsize=(10, 5))
        for index, n in enumerate(ladder["sizes"]):
            values = [by_point.get((rung, n)) or 0 for rung in rungs]
            axes.bar([r + index * width for r in range(len(rungs))], values, width, label=f"n = {n}",
                     color=COLOURS[index % len(COLOURS)])
        axes.axhline(1.0, color="black", linewidth=0.8)
        axes.set_xticks([r + 0.4 - width / 2 for r in range(len(rungs))], [plain(rung) for rung in rungs],
                        rotation=30, ha="right", fontsize="small")
        axes.set(ylabel="rate / cuBLAS's rate at the same n", yscale="log",
                 title=plain(f"gemm_ladder: {ladder['title']}, each rung against cuBLAS (1 = cuBLAS)"))
        path = plot_path(plot_dir, "gemm_ladder", ladder["precision"])
        _finish(pyplot, figure, axes, path)
        paths.append(path)
    return paths


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
    memory = "\n".join(textwrap.wrap(f"memory roof: {_bandwidth_caption(bandwidth)}" if bandwidth
                                    else plain(f"no memory roof: {roof.get('memory_roof_note')}"), 95))
    axes.set(xscale="log", yscale="log", xlim=(low, high),
             xlabel="arithmetic intensity (FLOP per byte of device memory traffic, compulsory-traffic model)",
             ylabel="FLOP/s (int8: operations/s)",
             title="Roofline: GPU entries in resident mode against the measured peaks\n" + memory)
    _finish(pyplot, figure, axes, path, extra=[(Line2D([], [], marker=_marker(study), color="grey", linestyle="none"),
                                                f"points: {study}") for study in studies])


BANDWIDTH_CAPTION = "2 x the best device-to-device copy rate (a copy of B bytes reads B and writes B)"
STREAM_CAPTION = "the stream study's fastest kernel past the L2 cache ({operation}, {kernel}, {precision})"


def _bandwidth_caption(bandwidth):
    if bandwidth["study"] == "stream":
        return plain(STREAM_CAPTION.format(operation=bandwidth.get("operation"), kernel=bandwidth.get("kernel"),
                                           precision=bandwidth["precision"]))
    return BANDWIDTH_CAPTION


def write_roofline(roof, out_dir):
    """plots/roofline.png from findings["roofline"]; None without matplotlib or without any peak."""
    pyplot = load_pyplot()
    if pyplot is None or not roof.get("peaks"):
        return None
    path = os.path.join(outputs.subfolder(out_dir, PLOT_DIR), ROOFLINE_NAME)
    _roofline_plot(pyplot, path, roof)
    return path


def _per_1e9(value):
    return None if value is None else value / 1e9


def collectives_plots(pyplot, study, plot_dir):
    """Bus bandwidth against the message size, a line per collective and placement
    (collectives_bus_bandwidth.png); with one rank, whose bus factors are 0, the algorithm bandwidth
    (collectives_algorithm_bandwidth.png)."""
    derived = study["derived"]
    series = {(row["impl"], row["mode"]): [(point["message_bytes"], point) for point in row["points"]]
              for row in derived.get("curves") or []}
    if not series:
        return []
    if derived.get("one_rank_note"):
        stem, what, key = "collectives_algorithm_bandwidth", "algorithm bandwidth (one rank: no bus)", "algorithm"
    else:
        stem, what, key = "collectives_bus_bandwidth", "bus bandwidth (nccl-tests' formulas)", "bus"
    study_charts = _line_charts(plot_dir, (stem,), f"collectives: {what} against the message size",
                                series, (lambda series_key: series_key[1],), ylabel="GB/s (10^9 bytes per second)",
                                value=lambda point: _per_1e9(point[f"{key}_bytes_per_s"]),
                                xlabel="message size (bytes, nccl-tests' size)")
    return _draw(pyplot, study_charts)


def write_plots(studies, out_dir):
    """{study name: paths of its PNGs} in the studies' order, for each study that drew any (by its
    record's `plots` in the registry), so a report can put each study's charts beside its tables; None
    without matplotlib."""
    from gpubench_driver import studies as registry  # the registry imports this module
    pyplot = load_pyplot()
    if pyplot is None:
        return None
    plot_dir = outputs.subfolder(out_dir, PLOT_DIR)
    found = {}
    for name, study in studies.items():
        record = registry.BY_NAME.get(name)
        paths = record.plots(pyplot, study, plot_dir) if record and record.plots else []
        if paths:
            found[name] = paths
    return found
