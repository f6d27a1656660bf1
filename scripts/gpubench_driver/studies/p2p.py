"""The p2p study's plug-in (its findings, sections and plots). Its findings: for every route (an ordered GPU
pair, the host to a GPU, a GPU to the host), engine (copy engines, SM kernel) and direction (one way, both
ways at once), its latency (the median time of its smallest copy, host clock to completion), its bandwidth
(bytes moved per second by its largest copy; both ways counts both directions) and that bandwidth as a
fraction of the link's theoretical rate (the link_peak_bytes_per_s counter the binary takes from NVML:
NVLink links x the per-link rate, or PCIe generation x width; times two both ways); and the matrices of both
over the ends (the host and every GPU), source down, destination across, that the heat maps draw.

Entry axes in this study: impl = engine, mode = direction, precision = route
(<source>-<destination>, each "host" or "gpu<index>"), n = bytes per copy."""
import math

from gpubench_driver.lib import charts
from gpubench_driver.lib.check_figures import bandwidth_figure, entries_at
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.findings import grouped_failures, ok_entries
from gpubench_driver.lib.formatting import byte_size, gb_per_s, gib_per_s, md, percent, seconds
from gpubench_driver.lib.registry import CheckPoint, Study, copy_rates
from gpubench_driver.lib.sections import failures_section
from gpubench_driver.lib.stats import median_interval

HOST = "host"
DIRECTIONS = ("one_way", "both_ways")


def ends_of(route):
    """(source, destination) of a route name such as 'gpu0-gpu1' or 'host-gpu3'."""
    source, _, destination = route.partition("-")
    return source, destination


def end_order(end):
    """The host first, then the GPUs by index."""
    return (-1, "") if end == HOST else (int(end[3:]) if end[3:].isdigit() else 1 << 30, end)


def _curves(entries):
    """{(engine, direction, route): (points in size order, the largest entry)} of the ok entries."""
    curves = {}
    for entry in sorted(ok_entries(entries), key=lambda e: e["n"]):
        moved, median = entry.get("bytes_transferred"), entry["time_s"]["median"]
        if not moved or not median:
            continue
        points, _ = curves.get((entry["impl"], entry["mode"], entry["precision"]), ([], None))
        points.append({"n": entry["n"], "median_s": median, "bytes_per_s": moved / median,
                       "interval_s": median_interval(entry["time_s"]).record()})
        curves[(entry["impl"], entry["mode"], entry["precision"])] = (points, entry)
    return curves


def _row_order(key):
    """Engine, one way before both ways, then the source and destination ends in end_order."""
    engine, direction, route = key
    source, destination = ends_of(route)
    return engine, DIRECTIONS.index(direction) if direction in DIRECTIONS else len(DIRECTIONS), direction, \
        end_order(source), end_order(destination)


def route_rows(entries):
    """One row per (engine, direction, route): its points, latency, bandwidth and fraction of the link."""
    rows = []
    curves = _curves(entries)
    for (engine, direction, route) in sorted(curves, key=_row_order):
        points, largest = curves[(engine, direction, route)]
        source, destination = ends_of(route)
        peak = largest.get("link_peak_bytes_per_s")
        bandwidth = points[-1]["bytes_per_s"]
        rows.append({"impl": engine, "direction": direction, "route": route, "source": source,
                     "destination": destination, "between_gpus": HOST not in (source, destination),
                     "points": points, "latency_n": points[0]["n"], "latency_s": points[0]["median_s"],
                     "bandwidth_n": points[-1]["n"], "bandwidth_bytes_per_s": bandwidth,
                     "link_peak_bytes_per_s": peak, "fraction_of_link": bandwidth / peak if peak else None,
                     "peer_access": largest.get("peer_access")})
    return rows


def matrices(rows):
    """Per (engine, direction): the ends in order and the bandwidth and latency grids, source down and
    destination across (None where no route was measured)."""
    found = []
    for engine, direction in dict.fromkeys((row["impl"], row["direction"]) for row in rows):
        mine = [row for row in rows if (row["impl"], row["direction"]) == (engine, direction)]
        ends = sorted({end for row in mine for end in (row["source"], row["destination"])}, key=end_order)
        grid = {key: [[None] * len(ends) for _ in ends] for key in ("bandwidth_bytes_per_s", "latency_s")}
        for row in mine:
            for key, values in grid.items():
                values[ends.index(row["source"])][ends.index(row["destination"])] = row[key]
        found.append({"impl": engine, "direction": direction, "ends": ends, **grid})
    return found


def derive(study):
    rows = route_rows(study["entries"])
    return {"routes": rows, "matrices": matrices(rows), "topology": study.get("topology"),
            "failures": grouped_failures(study["entries"])}


# --- summary.md -----------------------------------------------------------------------------------
GIB = float(1 << 30)


def _gpu_item(gpu):
    if gpu.get("unavailable_reason"):
        return f"{md(gpu['gpu'])}: NVML gave no links ({md(gpu['unavailable_reason'])})"
    nvlink = (f", {gpu['nvlinks_active']} NVLinks active ({gb_per_s(gpu.get('nvlink_bytes_per_s'))} one way)"
              if gpu.get("nvlinks_active") else ", no NVLink active")
    return (f"{md(gpu['gpu'])} at {md(gpu.get('pci_bus_id') or '?')}: PCIe Gen{gpu.get('pcie_generation')} "
            f"x{gpu.get('pcie_width')} ({gb_per_s(gpu.get('pcie_bytes_per_s'))} one way){nvlink}")


def _pair_item(pair):
    return (f"{md(pair['pair'])}: {md(pair.get('link') or '?')}, common ancestor "
            f"{md(pair.get('common_ancestor') or 'unknown')}, {gb_per_s(pair.get('link_bytes_per_s'))} one way")


def _topology(topology):
    if not topology:
        return [paragraph("The study recorded no topology (a results file from before it did, or no GPU).")]
    items = [_gpu_item(gpu) for gpu in topology.get("gpus") or []] + [
        _pair_item(pair) for pair in topology.get("pairs") or []]
    visible = topology.get("visible_gpus") or 0
    if visible < 2:
        items.append(f"{'one GPU' if visible == 1 else 'no GPU'} visible: no pair to measure")
    return [bullets(items)]


def _row(row):
    return [md(row["impl"]), md(row["direction"]), md(row["route"]),
            f"{seconds(row['latency_s'])} ({byte_size(row['latency_n'])})",
            f"{gib_per_s(row['bandwidth_bytes_per_s'])} ({byte_size(row['bandwidth_n'])})",
            gb_per_s(row["link_peak_bytes_per_s"]), percent(row["fraction_of_link"], 0)]


def _routes(derived):
    rows = derived.get("routes") or []
    if not rows:
        return [paragraph("No copy was measured.")]
    header = ["engine", "direction", "route", "latency (smallest copy)", "bandwidth (largest copy)", "link rate",
              "bandwidth / link"]
    return [table(header, [_row(row) for row in rows]), paragraph(
        "Route: source-destination. Latency: median time of the smallest copy, host clock from the call until "
        "every stream it used finished. Bandwidth: bytes moved per second by the largest copy (GiB = 2^30 bytes; "
        "both ways counts both directions). Link rate: the theoretical rate from NVML (NVLink: active links x the "
        "per-link rate of the GPU's generation, every link counted as reaching the peer; PCIe: generation x width "
        "after encoding), doubled both ways.")]


def sections(study, document):
    derived = study["derived"]
    return (section("P2P: topology (NVML)", _topology(derived.get("topology")))
            + section("P2P: latency and bandwidth of every route", _routes(derived))
            + failures_section(study, "P2P: skipped and failed entries"))


# --- plots ----------------------------------------------------------------------------------------
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
             title=charts.plain(f"p2p {matrix['impl']}, {matrix['direction']}: {label}"))
    charts.save(pyplot, figure, path)


def plots(pyplot, study, plot_dir):
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
            path = charts.plot_path(plot_dir, "p2p", name, *stem)
            _route_heat_map(pyplot, path, matrix, key, label, scale, cell)
            paths.append(path)
    return paths


# gpubench check: every ordered pair of GPUs, one way, by the copy engines.
CHECK_BYTES = 256 << 20


def check_figures(study, document, sheet):
    """Each ordered pair's one-way copy bandwidth, against the link's peak NVML gives."""
    found = []
    for entry in entries_at(study, impl="copy_engine", mode="one_way", n=CHECK_BYTES):
        source, destination = ends_of(entry["precision"])
        if HOST in (source, destination) or not entry.get("bytes_transferred"):
            continue
        peak = entry.get("link_peak_bytes_per_s")
        found.append(bandwidth_figure("p2p", entry, f"p2p/{entry['precision']}",
                                      f"Peer copy {source} to {destination}", entry["bytes_transferred"],
                                      {"value": peak, "what": "the link's peak (NVML)"} if peak else None))
    return found


# --- the record -----------------------------------------------------------------------------------
# The copy engines at 16 B (each route's latency) and 64 MiB (its bandwidth, as transfer's largest suite copy),
# one way and both ways. On one GPU that is 6 measured entries (the host to the GPU, both ways, the GPU to the
# host) and the pair entries skipped ("one GPU visible"); on N GPUs it grows with the N(N-1) ordered pairs (8
# GPUs: 216 entries, an estimated two minutes a trial at half a second an entry). The SM kernel and the sweep
# from 16 B to 1 GiB: --full, or --impls/--sizes.
STUDY = Study(name="p2p", derive=lambda study, document, rounds: derive(study), summary=sections, plots=plots,
              rates=copy_rates, axes={"impl": "engine", "mode": "direction", "precision": "route", "n": "bytes"},
              gpus_together=True,
              check=CheckPoint(
                  sizes=(CHECK_BYTES,), impls=("copy_engine",), modes=("one_way",), figures=check_figures, gpus=2,
                  peers=True,
                  plateau="256 MiB a copy: the copy's fixed cost is a few thousandths of it even at NVLink rates, "
                          "so the rate no longer grows with the size",
                  budget="one entry per ordered pair of GPUs and per host route, one trial, the latency "
                         "protocol's stopping rule"), position=160)
