"""The p2p study's plug-in: per route (GPU pair, host to GPU, GPU to host), engine and direction, the smallest
copy's latency, the largest's bandwidth and its share of NVML's link rate, with heat maps (docs/studies.md).
Axes: impl = engine, mode = direction, precision = route ("gpu0-gpu1", "host-gpu3"), n = bytes per copy."""
import math

from gpubench_driver.lib import charts
from gpubench_driver.lib.check_figures import bandwidth_figure, entries_at
from gpubench_driver.lib.document import bullets, paragraph, section
from gpubench_driver.lib.findings import group_by, grouped_failures, interval_record, ok_entries, order_of
from gpubench_driver.lib.formatting import byte_size, gb_per_s, gib_per_s, md, percent, seconds
from gpubench_driver.lib.registry import CheckPoint, Study, copy_rates
from gpubench_driver.lib.sections import failures_section, table_section

HOST = "host"
DIRECTIONS = ("one_way", "both_ways")


def ends_of(route):
    """(source, destination) of a route name such as 'gpu0-gpu1' or 'host-gpu3'."""
    source, _, destination = route.partition("-")
    return source, destination


def end_order(end):
    """The host first, then the GPUs by index."""
    return (-1, "") if end == HOST else (int(end[3:]) if end[3:].isdigit() else 1 << 30, end)


def _row_order(key):
    """Engine, one way before both ways, then the source and destination ends in end_order."""
    engine, direction, route = key
    source, destination = ends_of(route)
    return engine, order_of(DIRECTIONS)(direction), direction, end_order(source), end_order(destination)


def _point(entry):
    median = entry["time_s"]["median"]
    return {"n": entry["n"], "median_s": median, "bytes_per_s": entry["bytes_transferred"] / median,
            "interval_s": interval_record(entry)}


def route_rows(entries):
    """One row per (engine, direction, route): its points, latency, bandwidth and fraction of the link."""
    moved = sorted((entry for entry in ok_entries(entries)
                    if entry.get("bytes_transferred") and entry["time_s"]["median"]), key=lambda entry: entry["n"])
    curves = group_by(moved, lambda entry: (entry["impl"], entry["mode"], entry["precision"]))
    rows = []
    for (engine, direction, route), members in sorted(curves.items(), key=lambda item: _row_order(item[0])):
        points, largest = [_point(entry) for entry in members], members[-1]
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
    """Per (engine, direction): the ends in order, bandwidth and latency grids (source down; None: not measured)."""
    found = []
    for (engine, direction), mine in group_by(rows, lambda row: (row["impl"], row["direction"])).items():
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


def _gpu_item(gpu):
    if gpu.get("unavailable_reason"):
        return f"{md(gpu['gpu'])}: NVML gave no links ({md(gpu['unavailable_reason'])})"
    nvlink = (f", {gpu['nvlinks_active']} NVLinks active ({gb_per_s(gpu.get('nvlink_bytes_per_s'))} one way)"
              if gpu.get("nvlinks_active") else ", no NVLink active")
    return (f"{md(gpu['gpu'])} at {md(gpu.get('pci_bus_id') or '?')}: PCIe Gen{gpu.get('pcie_generation')} "
            f"x{gpu.get('pcie_width')} ({gb_per_s(gpu.get('pcie_bytes_per_s'))} one way){nvlink}")


def _topology(topology):
    if not topology:
        return [paragraph("The study recorded no topology (a results file from before it did, or no GPU).")]
    items = [_gpu_item(gpu) for gpu in topology.get("gpus") or []] + [
        f"{md(pair['pair'])}: {md(pair.get('link') or '?')}, common ancestor "
        f"{md(pair.get('common_ancestor') or 'unknown')}, {gb_per_s(pair.get('link_bytes_per_s'))} one way"
        for pair in topology.get("pairs") or []]
    visible = topology.get("visible_gpus") or 0
    if visible < 2:
        items.append(f"{'one GPU' if visible == 1 else 'no GPU'} visible: no pair to measure")
    return [bullets(items)]


def _row(row):
    return [md(row["impl"]), md(row["direction"]), md(row["route"]),
            f"{seconds(row['latency_s'])} ({byte_size(row['latency_n'])})",
            f"{gib_per_s(row['bandwidth_bytes_per_s'])} ({byte_size(row['bandwidth_n'])})",
            gb_per_s(row["link_peak_bytes_per_s"]), percent(row["fraction_of_link"], 0)]


def sections(study, document):
    derived = study["derived"]
    return (section("P2P: topology (NVML)", _topology(derived.get("topology")))
            + table_section("P2P: latency and bandwidth of every route", [
                "engine", "direction", "route", "latency (smallest copy)", "bandwidth (largest copy)", "link rate",
                "bandwidth / link"], derived.get("routes") or [], _row, paragraph(
                "Route: source-destination. Latency: median time of the smallest copy, host clock from the call "
                "until every stream it used finished. Bandwidth: bytes moved per second by the largest copy (GiB = "
                "2^30 bytes; both ways counts both directions). Link rate: the theoretical rate from NVML (NVLink: "
                "active links x the per-link rate of the GPU's generation, every link counted as reaching the peer; "
                "PCIe: generation x width after encoding), doubled both ways."), empty="No copy was measured.")
            + failures_section(study, "P2P: skipped and failed entries"))


def _route_heat_map(pyplot, path, matrix, key, label, scale):
    """One grid of a p2p matrix: source ends down, destination across, blank where not measured."""
    ends = matrix["ends"]
    grid = [[float("nan") if value is None else value * scale for value in row] for row in matrix[key]]
    figure, axes = pyplot.subplots(figsize=(max(4.5, 0.8 * len(ends) + 2.5), max(3.5, 0.7 * len(ends) + 1.5)))
    image = axes.imshow(grid, cmap="viridis", aspect="auto")
    for row, values in enumerate(grid):
        for column, value in enumerate(values):
            if not math.isnan(value):
                axes.text(column, row, f"{value:.1f}", ha="center", va="center", fontsize="x-small", color="white")
    axes.set_xticks(range(len(ends)), ends)
    axes.set_yticks(range(len(ends)), ends)
    figure.colorbar(image, ax=axes, label=label)
    axes.set(xlabel="destination", ylabel="source",
             title=charts.plain(f"p2p {matrix['impl']}, {matrix['direction']}: {label}"))
    charts.save(pyplot, figure, path)


HEAT_MAPS = (("bandwidth_bytes_per_s", "bandwidth", "GiB/s of the largest copy", 1 / float(1 << 30)),
             ("latency_s", "latency", "microseconds of the smallest copy", 1e6))  # (key, file name, label, scale)


def plots(pyplot, study, plot_dir):
    """Per engine and direction: heat maps of the largest copy's bandwidth and the smallest's latency."""
    paths = []
    for matrix in study["derived"].get("matrices") or []:
        for key, name, label, scale in HEAT_MAPS:
            paths.append(charts.plot_path(plot_dir, "p2p", name, matrix["impl"], matrix["direction"]))
            _route_heat_map(pyplot, paths[-1], matrix, key, label, scale)
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
