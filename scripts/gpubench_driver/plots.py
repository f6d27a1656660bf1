"""PNG plots of one study (matplotlib, Agg backend); None when matplotlib is missing."""
import os

from gpubench_driver import derive

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


def _series(entries):
    """{'impl/mode': [(n, entry), ...]} sorted by n."""
    series = {}
    for entry in derive.ok_entries(entries):
        series.setdefault(f"{entry['impl']}/{entry['mode']}", []).append((entry["n"], entry))
    return {label: sorted(points, key=lambda point: point[0]) for label, points in sorted(series.items())}


def _line_plot(pyplot, path, title, ylabel, series, value):
    figure, axes = pyplot.subplots(figsize=(9, 6))
    for label, points in series.items():
        xs = [n for n, entry in points if value(entry) is not None]
        ys = [value(entry) for _, entry in points if value(entry) is not None]
        if xs:
            axes.plot(xs, ys, marker="o", markersize=3, label=label)
    axes.set(xscale="log", yscale="log", xlabel="n (square matrices)", ylabel=ylabel, title=title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)


def _speedup_plot(pyplot, path, entries, crossovers):
    best_cpu = derive.best_by_size(derive.cpu_entries(entries))
    figure, axes = pyplot.subplots(figsize=(9, 6))
    for mode in derive.gpu_modes(entries):
        best_gpu = derive.best_by_size(derive.gpu_entries(entries, mode))
        sizes = sorted(set(best_cpu) & set(best_gpu))
        speedups = [best_cpu[n]["time_s"]["median"] / best_gpu[n]["time_s"]["median"] for n in sizes]
        line, = axes.plot(sizes, speedups, marker="o", markersize=3, label=f"best GPU, {mode}")
        found = next((c for c in crossovers if c["mode"] == mode), {})
        marker_n = found.get("estimate_n") or found.get("upper")
        if marker_n:
            axes.axvline(marker_n, color=line.get_color(), linestyle="--", alpha=0.6)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set(xscale="log", yscale="log", xlabel="n (square matrices)", ylabel="best CPU time / GPU time",
             title="matmul FP32: GPU speedup over the best CPU (dashed: crossover)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)


def write_plots(study, out_dir):
    """Paths of the written PNGs, or None without matplotlib."""
    pyplot = load_pyplot()
    if pyplot is None:
        return None
    plot_dir = os.path.join(out_dir, "plots")
    os.makedirs(plot_dir, exist_ok=True)
    entries = study["entries"]
    series = _series(entries)
    paths = {name: os.path.join(plot_dir, f"matmul_{name}.png") for name in ("time", "rate", "speedup")}
    _line_plot(pyplot, paths["time"], "matmul FP32: median time", "median time (s)", series,
               lambda entry: entry["time_s"]["median"])
    _line_plot(pyplot, paths["rate"], "matmul FP32: FLOP/s", "FLOP/s", series, lambda entry: entry.get("flop_per_s"))
    if derive.gpu_modes(entries):
        _speedup_plot(pyplot, paths["speedup"], entries, study["derived"].get("crossovers", []))
    else:
        del paths["speedup"]
    return list(paths.values())
