"""Chart helpers of the studies' plots (matplotlib, Agg backend). Every line chart is a Chart of at most
MAX_SERIES series (more are split, the CPU lines kept on each), a series styled alike in all its study's charts."""
import math
import textwrap
from dataclasses import dataclass
from typing import Callable, Optional

from gpubench_driver.lib import outputs
from gpubench_driver.lib.findings import group_by, ok_entries

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


# --- which series go on which chart ---------------------------------------------------------------
MAX_SERIES = 8  # data series on one chart: past this the lines tangle and the legend is a list to search
HOST_MODE = "host"  # the CPU entries' mode: their lines are the baseline every chart of a split keeps


def series(entries, key):
    """{key(entry): [(n, entry), ...] by n} of the ok entries; a key of None leaves the entry out."""
    found = group_by([entry for entry in ok_entries(entries) if key(entry) is not None], key,
                     lambda entry: (entry["n"], entry))
    return {name: sorted(points, key=lambda point: point[0]) for name, points in sorted(found.items())}


def chart_shares(keys, levels, baseline=()):
    """[(share names, keys)]: split by levels past MAX_SERIES, the baseline keys on every chart."""
    if len(keys) <= MAX_SERIES:
        return [((), list(keys))]
    shared = [key for key in keys if key in baseline] if len(baseline) < MAX_SERIES else []
    rest = [key for key in keys if key not in shared]
    if not levels:
        room = MAX_SERIES - len(shared)
        return [((f"part {start // room + 1}",), shared + rest[start:start + room])
                for start in range(0, len(rest), room)]
    return [((group,) + names, chart) for group, members in group_by(rest, levels[0]).items()
            for names, chart in chart_shares(shared + members, levels[1:], shared)]


def label(key):
    return "/".join(key)


@dataclass(frozen=True)
class Chart:
    """One log-log line chart: value(point) over x of each series; mark(axes, keys) adds its lines."""
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


def line_charts(plot_dir, stem, title, series, levels=(), baseline=(), **chart):
    """The Charts of `series` (chart_shares), at plot_dir/<stem parts>[_<share>].png."""
    return [Chart(path=plot_path(plot_dir, *stem, *names), title=_scoped(title, names),
                  series={key: series[key] for key in keys}, **chart)
            for names, keys in chart_shares(list(series), levels, baseline)]


def cpu_keys(series):
    return [key for key in series if key[1] == HOST_MODE]


def row_series(rows, fields, x="n"):
    """{(the row's fields): [(point[x], point), ...]} of findings rows that hold their curve's points."""
    return {tuple(row[field] for field in fields): [(point[x], point) for point in row["points"]] for row in rows}


# --- how the series look --------------------------------------------------------------------------
LEGEND_ROWS = 20  # more lines than this: the legend takes two columns
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
           "tab:olive", "tab:cyan")  # matplotlib's default cycle
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")  # as many as MAX_SERIES: a chart's lines all differ in marker


def _least_taken(count, taken):
    """The index below count that the fewest of `taken` hold, the lowest on a tie."""
    return min(range(count), key=lambda index: (taken.count(index), index))


def study_styles(charts_labels):
    """{label: style}: alike in every chart of the study, no colour or marker twice on one."""
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


def save(pyplot, figure, path, dpi=120):
    """The figure as a PNG at path, written whole or not at all (outputs.replacing); closed either way."""
    try:
        with outputs.replacing(path, binary=True) as stream:
            figure.savefig(stream, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        pyplot.close(figure)


def finish(pyplot, figure, axes, path, extra=()):
    """Grid, legend and save; extra: (handle, label) pairs the legend shows beside the axes' own."""
    axes.grid(True, which="both", alpha=0.3)
    handles, labels = axes.get_legend_handles_labels()
    handles += [handle for handle, _ in extra]
    labels += [label for _, label in extra]
    # Beside the axes, not over the data; the saved image widens to hold it (bbox_inches), the axes keep their size.
    axes.legend(handles, [plain(label) for label in labels], fontsize="small", loc="upper left",  # names from the file
                bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, ncol=2 if len(handles) > LEGEND_ROWS else 1)
    save(pyplot, figure, path)


def shown(chart, points):
    """The (x, value) pairs of a series that its log-log chart can place: a value, both above 0."""
    pairs = [(x, chart.value(point)) for x, point in points]
    return [(x, y) for x, y in pairs if placeable(x) and placeable(y) and math.isfinite(y)]


def line_plot(pyplot, chart, styles):
    figure, axes = pyplot.subplots(figsize=(9, 6))
    for key, points in chart.series.items():
        placed = shown(chart, points)
        if placed:
            axes.plot(*zip(*placed), markersize=4, label=label(key), **styles[label(key)])
    if chart.mark:
        chart.mark(axes, list(chart.series))
    axes.set(xscale="log", yscale="log", xlabel=chart.xlabel, ylabel=chart.ylabel, title=plain(chart.title))
    finish(pyplot, figure, axes, chart.path)


def draw(pyplot, study_charts):
    """Draws a study's Charts that have a point to place, styled alike; returns their paths."""
    study_charts = [chart for chart in study_charts if any(shown(chart, points) for points in chart.series.values())]
    styles = study_styles([[label(key) for key in chart.series] for chart in study_charts])
    for chart in study_charts:
        line_plot(pyplot, chart, styles)
    return [chart.path for chart in study_charts]


# --- crossovers -----------------------------------------------------------------------------------
CROSSOVER_STYLES = ("--", ":", "-.")  # one per distinct crossover on a chart


def crossover_lines(crossovers, with_precision, axis="batch"):
    """{value of the axis: [which GPU mode (and precision) beats the CPU from it]}: each value marked once."""
    lines = {}
    for found in crossovers:
        at = found.get(f"estimate_{axis}") or found.get("upper")  # the estimate, else the bracket's upper end
        if at:
            lines.setdefault(at, []).append(f"{found['mode']}, {found['precision']}" if with_precision
                                            else found["mode"])
    return dict(sorted(lines.items()))


def crossover_marks(crossovers, with_precision, axis="batch"):
    """mark(axes, keys): a vertical line where a GPU mode (and precision) of the chart beats the CPU."""
    def on_chart(found, keys):
        return any(key[1] == found["mode"] and (not with_precision or key[2] == found["precision"])
                   for key in keys)

    def mark(axes, keys):
        shown = [found for found in crossovers if on_chart(found, keys)]
        for index, (at, which) in enumerate(crossover_lines(shown, with_precision, axis).items()):
            axes.axvline(at, color="black", alpha=0.6, linestyle=CROSSOVER_STYLES[index % len(CROSSOVER_STYLES)],
                         label=textwrap.fill(f"GPU beats CPU from {axis} = {at}: " + "; ".join(which), 60))
    return mark


def across(value, label, linestyle="--", vertical=False):
    """A black line across a chart at value (a y, or an x where vertical), named in the legend, for lines_mark."""
    return lambda axes: (axes.axvline if vertical else axes.axhline)(value, color="black", alpha=0.6,
                                                                      linestyle=linestyle, label=label)


def lines_mark(*lines, when=lambda keys: True):
    """mark(axes, keys): the lines (across) on each chart whose series' keys `when` accepts."""
    def mark(axes, keys):
        for line in lines if when(keys) else ():
            line(axes)
    return mark


def parity(axes, keys=()):
    """A mark: the line at 1 of a chart of ratios (as fast as what it is over)."""
    axes.axhline(1.0, color="black", linewidth=0.8)


def timed(crossovers):
    return [found for found in crossovers if found.get("measure", "time") == "time"]


def placeable(value):
    return value is not None and value > 0  # a log axis has no place for 0 or a missing value


def parity_and_crossovers(crossovers):
    marks = crossover_marks(crossovers, with_precision=False, axis="n")
    return lambda axes, keys: (parity(axes), marks(axes, keys))  # parity: as fast as the CPU
