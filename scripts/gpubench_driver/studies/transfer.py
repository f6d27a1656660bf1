"""The transfer study's plug-in: host-device and device copies by engine and host memory: curves, plateaus,
memory kinds against each other, the link's rate (docs/studies.md, transfer); its claim, headline figures and
fallback memory roof. Axes: impl = engine, mode = host memory, precision = direction, n = bytes per copy."""
import math

from gpubench_driver.lib import charts, stats
from gpubench_driver.lib.check_figures import entries_at, of_entry
from gpubench_driver.lib.claims import CONFIRMED, Claim, REFUTED, derived_of
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.figures import LATENCY, THROUGHPUT, between_runs, entry_of, figure, inverse, where_text
from gpubench_driver.lib.findings import (curve_rows, group_by, grouped_failures, interval_record, ok_entries, picked,
                                          positive)
from gpubench_driver.lib.formatting import byte_size, gib_per_s, md, percent, ratio, seconds
from gpubench_driver.lib.registry import CheckPoint, Comparison, GIB, MemoryRoof, Run, Study, copy_rates
from gpubench_driver.lib.sections import (STEADY_STATE, compared, failures_section, noise_note, reference_section,
                                          time_ratio_cell)
from gpubench_driver.lib.stats import beyond_spread, time_per_item

PLATEAU_FRACTION = 0.9
# PCIe generation -> (transfer rate per lane in GT/s, line-code efficiency): 8b/10b up to
# Gen 2, 128b/130b from Gen 3; Gen 6 (PAM4, FLIT mode) is counted at its raw rate.
PCIE_GENERATIONS = {1: (2.5, 0.8), 2: (5.0, 0.8), 3: (8.0, 128 / 130), 4: (16.0, 128 / 130),
                    5: (32.0, 128 / 130), 6: (64.0, 1.0)}
LINK_DIRECTIONS = ("h2d", "d2h")


def bandwidth(entry):
    moved = entry.get("bytes_transferred")
    return moved / entry["time_s"]["median"] if moved else None


def plateau_size(points, fraction=PLATEAU_FRACTION):
    """(plateau: the largest copy's rate, the size from which every copy reaches `fraction` of it)."""
    plateau = points[-1]["bytes_per_s"]
    threshold = fraction * plateau
    first = len(points) - 1
    while first > 0 and points[first - 1]["bytes_per_s"] >= threshold:
        first -= 1
    if first == 0:
        return plateau, points[0]["n"]
    below, above = points[first - 1], points[first]
    share = (threshold - below["bytes_per_s"]) / (above["bytes_per_s"] - below["bytes_per_s"])
    low, high = math.log2(below["n"]), math.log2(above["n"])
    return plateau, 2 ** (low + share * (high - low))


def bandwidth_rows(entries):
    """One row per (engine, memory, direction, device): points, smallest copy's latency, plateau."""
    rows = curve_rows([entry for entry in ok_entries(entries) if bandwidth(entry) is not None],
                      ("impl", "mode", "precision", "device"),
                      lambda entry: {"n": entry["n"], "median_s": entry["time_s"]["median"],
                                     "bytes_per_s": bandwidth(entry), "interval_s": interval_record(entry)},
                      names=("impl", "mode", "direction", "device"))
    found = []
    for row in sorted(rows, key=lambda row: (row["impl"], row["mode"], row["direction"], row["device"])):
        plateau, size = plateau_size(row["points"])
        found.append({**row, "smallest_n": row["points"][0]["n"], "smallest_latency_s": row["points"][0]["median_s"],
                      "plateau_bytes_per_s": plateau, "size_at_90_percent": size})
    return found


def _at(rows, engine, memory, direction):
    return next((row for row in rows if (row["impl"], row["mode"], row["direction"]) == (engine, memory, direction)),
                None)


def _ratio_rows(rows, numerator, denominator, engine="copy_engine", directions=LINK_DIRECTIONS):
    """Per direction: one memory's bandwidth over another's at each size both measured and the largest."""
    found = []
    for direction in directions:
        top, bottom = _at(rows, engine, numerator, direction), _at(rows, engine, denominator, direction)
        if not top or not bottom:
            continue
        below = {point["n"]: point for point in bottom["points"]}
        ratios = [{"n": point["n"], "ratio": point["bytes_per_s"] / below[point["n"]]["bytes_per_s"],
                   "beyond_noise": beyond_spread(time_per_item(point, "bytes_per_s"),
                                                 time_per_item(below[point["n"]], "bytes_per_s"))}
                  for point in top["points"] if point["n"] in below]
        if ratios:
            found.append({"direction": direction, "numerator": numerator, "denominator": denominator,
                          "ratios": ratios, "at_largest": ratios[-1]})
    return found


def link_rate(gpu):
    """Theoretical bytes/s per direction of the PCIe link, from its maximum generation and width."""
    generation, width = (gpu or {}).get("pcie.link.gen.max"), (gpu or {}).get("pcie.link.width.max")
    if generation not in PCIE_GENERATIONS or not isinstance(width, int) or width <= 0:
        return None
    transfers, efficiency = PCIE_GENERATIONS[generation]
    return {"generation": generation, "width": width, "bytes_per_s": transfers * 1e9 * efficiency * width / 8,
            "rule": f"{transfers:g} GT/s x {width} lanes x {efficiency:.4g} line-code efficiency / 8 bits"}


def link_use(rows, link):
    """Each copy-engine and zero-copy curve across the link: its plateau over the link's rate."""
    return [{**picked(row, "impl", "mode", "direction", "plateau_bytes_per_s"),
             "fraction_of_link": row["plateau_bytes_per_s"] / link["bytes_per_s"]}
            for row in rows if link and row["direction"] in LINK_DIRECTIONS]


def registration(entries):
    """The one-time cost of cudaHostRegister at each size, and per GiB."""
    return [{"n": e["n"], "median_s": e["time_s"]["median"], "seconds_per_gib": e["time_s"]["median"] * GIB / e["n"]}
            for e in sorted(ok_entries(entries), key=lambda e: e["n"]) if e.get("impl") == "host_register"]


def derive(entries, gpu=None):
    rows = bandwidth_rows(entries)
    link = link_rate(gpu)
    return {"curves": rows, "pinned_over_pageable": _ratio_rows(rows, "pinned", "pageable"),
            "zero_page_over_written": _ratio_rows(rows, "pageable_zero_page", "pageable", directions=("h2d",)),
            "first_touch_over_written": _ratio_rows(rows, "pageable_first_touch", "pageable"), "link": link,
            "link_use": link_use(rows, link), "registration": registration(entries),
            "plateau_fraction": PLATEAU_FRACTION, "failures": grouped_failures(entries)}


def _link(derived, document):
    gpus = document["machine"].get("gpus") or [{}]
    numa = gpus[0].get("numa_node")
    where = [] if numa is None else [f"The GPU's NUMA node: {md(numa)} (-1: the host reports none)."]
    link = derived.get("link")
    if not link:
        return ["The link's theoretical rate is unknown (no PCIe generation and width from nvidia-smi)."] + where
    return [f"Link: PCIe Gen{link['generation']} x{link['width']}, theoretically {gib_per_s(link['bytes_per_s'])} "
            f"({link['bytes_per_s'] / 1e9:.1f} GB/s) per direction ({md(link['rule'])})."] + where


def _curves_section(study, document):
    derived = study["derived"]
    rows = derived.get("curves") or []
    title = "Transfer: bandwidth and latency"
    if not rows:
        return section(title, [paragraph("No copy was measured.")])
    use = {(u["impl"], u["mode"], u["direction"]): u["fraction_of_link"] for u in derived.get("link_use") or []}
    setting = study.get("transparent_hugepage")
    huge_pages = [f"Transparent huge pages on this system: {md(setting)} (pageable\\_thp asks for them with "
                  f"madvise; its huge\\_page\\_bytes counter says how much the kernel gave)."] if setting else []
    header = ["engine", "host memory", "direction", "latency of the smallest copy", "plateau", "size at 90% of it",
              "plateau / link"]
    body = [[md(row["impl"]), md(row["mode"]), md(row["direction"]),
             f"{seconds(row['smallest_latency_s'])} ({byte_size(row['smallest_n'])})",
             gib_per_s(row["plateau_bytes_per_s"]), byte_size(row["size_at_90_percent"]),
             percent(use.get((row["impl"], row["mode"], row["direction"])), 0)] for row in rows]
    return section(title, [bullets(_link(derived, document) + huge_pages), table(header, body), paragraph(
        "Latency: median time of the smallest copy, host clock from the call to its completion. Plateau: the "
        "bandwidth of the largest copy (bytes copied per second, GiB = 2^30 bytes; bidirectional counts both "
        "directions). Size at 90%: from where every larger copy reaches 90% of the plateau, interpolated on "
        "log(size) between measured sizes.")])


def _ratio_at(found):
    """'2.10x at 256 MiB', with ', within noise' where the two bandwidths do not differ beyond it."""
    return f"{ratio(found['ratio'])} at {byte_size(found['n'])}{noise_note(found['beyond_noise'])}"


def _ratio_items(rows, what):
    return [f"{what} {md(row['direction'])}: {_ratio_at(row['at_largest'])} (smallest size: "
            f"{_ratio_at(row['ratios'][0])})" for row in rows]


RATIO_NAMES = {"pinned_over_pageable": "pinned over pageable (written),",
               "zero_page_over_written": "never-written (zero page) over written pageable memory,",
               "first_touch_over_written": "a fresh allocation per copy over written pageable memory,"}


def _ratios(derived):
    items = [item for key, what in RATIO_NAMES.items() for item in _ratio_items(derived.get(key) or [], what)]
    items += [f"registering memory (cudaHostRegister) costs {seconds(row['seconds_per_gib'])} per GiB at "
              f"{byte_size(row['n'])}" for row in (derived.get("registration") or [])[-1:]]  # the largest size
    if not items:
        return []
    return section("Transfer: memory kinds against each other", [bullets(items), paragraph(
        "Ratios of bandwidth (copy engine); a never-written source reads as the kernel's shared zero page, so its "
        "rate says nothing about real data.")])


def _references(study, document):
    def shown(rows):
        body = [[f"{md(row['study'])} {md(row['precision'])}", byte_size(row["n"]), seconds(row["study_median_s"]),
                 seconds(row["reference_median_s"]), time_ratio_cell(row), md(row["target"] or "")] for row in rows]
        return [table(["host memory / direction", "bytes", "study", "torch", "time ratio", "target"], body), paragraph(
            "Time ratio: study median / torch median (host clock to completion, both); below 1 the study is faster. "
            "Targets are stated, not checked. " + STEADY_STATE)]
    rows = study["derived"].get("reference_comparison") or []
    return reference_section("Transfer: PyTorch reference", document, REFERENCES, lambda items: compared(
        items, rows, "No copy was measured by both the study and the reference.", shown))


def sections(study, document):
    return (_curves_section(study, document) + _ratios(study["derived"]) + _references(study, document)
            + failures_section(study, "Transfer: skipped and failed entries"))


def plots(pyplot, study, plot_dir):
    """One chart per direction: GiB/s over the bytes per copy, with the link's theoretical rate."""
    derived = study["derived"]
    study_charts = []
    for direction, mine in group_by(derived.get("curves", []), lambda row: row["direction"]).items():
        series = charts.row_series(mine, ("impl", "mode"))
        link = derived.get("link") if direction in LINK_DIRECTIONS else None
        study_charts += charts.line_charts(
            plot_dir, ("transfer_bandwidth", direction),
            f"transfer {direction}: bandwidth against the size of one copy", series,
            # pageable (first touch, THP, zero page) apart from page-locked (pinned, registered, write-combined)
            (lambda key: "pageable" if key[1].startswith("pageable") else "page-locked", lambda key: key[0]),
            ylabel="GiB/s (2^30 bytes per second)",
            value=lambda point: point["bytes_per_s"] / GIB, xlabel="bytes per copy (B)",
            mark=charts.lines_mark(charts.across(link["bytes_per_s"] / GIB, f"PCIe Gen{link['generation']} "
                                                 f"x{link['width']}, theoretical per direction")) if link else None)
    return charts.draw(pyplot, study_charts)


def pinned_memory(document):
    transfer = next((row for row in derived_of(document, "transfer").get("pinned_over_pageable") or []
                     if row["direction"] == "h2d"), None)
    pipelines = {row["memory"]: row for row in derived_of(document, "overlap").get("best") or []
                 if row["workload"] == "matmul"}
    if not transfer or not {"pinned", "pageable"} <= set(pipelines):
        return None
    faster = transfer["at_largest"]["ratio"] > 1 and transfer["at_largest"]["beyond_noise"]
    overlaps = pipelines["pinned"]["saved_beyond_noise"]
    verdict = (CONFIRMED if faster and overlaps else REFUTED if not faster and not overlaps else
               "depends: " + ("copies are faster but do not overlap" if faster else "they overlap but are not faster"))
    pinned, pageable = pipelines["pinned"], pipelines["pageable"]
    return {"verdict": verdict, "numbers": {"copy_ratio": transfer["at_largest"]["ratio"],
                                            "saved": {"pinned": pinned["saved_fraction"],
                                                      "pageable": pageable["saved_fraction"]}},
            "answer": f"Host to device, {byte_size(transfer['at_largest']['n'])} per copy: pinned "
                      f"{ratio(transfer['at_largest']['ratio'])} the rate of pageable. A chunked transfer-inclusive "
                      f"GEMM (n = {pinned['n']}) on several streams saves {pinned['saved_fraction']:.0%} of the serial "
                      f"time from pinned memory" + ("" if pinned["saved_beyond_noise"] else " (within the noise)")
                      + f", {pageable['saved_fraction']:.0%} from pageable"
                      + ("" if pageable["saved_beyond_noise"] else " (within the noise)") + "."}


D2D = "d2d"  # the direction of a device-to-device copy (impl copy_engine, mode device)
RULE = ("device memory traffic = 2 x the bytes copied per second by the fastest device-to-device copy at "
        "the largest size the transfer study measured: a copy of B bytes reads B and writes B bytes")
CAPTION = "2 x the best device-to-device copy rate (a copy of B bytes reads B and writes B)"


def memory_bandwidth(study):
    """Twice the fastest device-to-device copy at the largest size as the run's memory roof, or (None, why not)."""
    copies = [e for e in ok_entries(study["entries"]) if e["precision"] == D2D and e["device"] == "gpu"
              and positive(e.get("bytes_transferred")) and positive(e["time_s"]["median"])]
    if not copies:
        return None, "the transfer study measured no device-to-device (d2d) copy"
    largest = max(entry["n"] for entry in copies)
    best = max((entry for entry in copies if entry["n"] == largest),
               key=lambda entry: entry["bytes_transferred"] / entry["time_s"]["median"])
    copy_rate = best["bytes_transferred"] / best["time_s"]["median"]
    return {"study": "transfer", "impl": best["impl"], "mode": best["mode"], "precision": D2D, "n": best["n"],
            "median_s": best["time_s"]["median"], "copy_bytes_per_s": copy_rate, "bytes_per_s": 2 * copy_rate,
            "bytes_per_call": 2 * best["bytes_transferred"], "rule": RULE}, None


def memory_summary(bandwidth):
    return (f"Memory roof: {bandwidth['bytes_per_s'] / 1e9:.0f} GB/s of device memory traffic, twice the "
            f"{bandwidth['copy_bytes_per_s'] / 1e9:.0f} GB/s that the transfer study's fastest device-to-device "
            f"copy ({md(bandwidth['impl'])}, {byte_size(bandwidth['n'])} per copy) moved: a copy of B bytes "
            f"reads B and writes B bytes of device memory (the run has no stream study past the L2 cache).")


MEMORY_ROOF = MemoryRoof(
    rank=2, bandwidth=memory_bandwidth,
    absent="a transfer study, whose device-to-device copies measure the memory bandwidth",
    figure=lambda found, entry, interval, reference: figure(
        "memory_bandwidth", "Device memory bandwidth (2 x a device-to-device copy)", found["bytes_per_s"], interval,
        "B/s", "higher", THROUGHPUT, where_text(found), reference,
        between_runs=between_runs(entry, found["bytes_per_s"])),
    caption=lambda bandwidth: CAPTION, summary=memory_summary)


def link_figures(document):
    """Host-device copies by the copy engines at the largest size, pinned and pageable, per direction."""
    derived, found = derived_of(document, "transfer"), []
    link = derived.get("link")
    reference = {"value": link["bytes_per_s"],
                 "what": f"PCIe Gen{link['generation']} x{link['width']}, theoretical per direction"} if link else None
    for direction, name in (("h2d", "host to device"), ("d2h", "device to host")):
        for mode in ("pinned", "pageable"):
            curve = _at(derived.get("curves") or [], "copy_engine", mode, direction)
            if not curve or not curve["points"]:
                continue
            point = max(curve["points"], key=lambda point: point["n"])
            interval = inverse(point["n"], stats.Interval.of_record(point["interval_s"]))
            entry = entry_of(document, {"study": "transfer", "impl": "copy_engine", "mode": mode,
                                        "precision": direction, "n": point["n"]})  # direction: the precision slot
            found.append(figure(f"link/{direction}/{mode}", f"Copy {name}, {mode} host memory",
                                point["bytes_per_s"], interval, "B/s", "higher", LATENCY,
                                f"transfer: copy_engine {mode} {direction}, {point['n']} bytes per copy", reference,
                                between_runs=between_runs(entry, point["bytes_per_s"]) if entry else None))
    return found


def check_figures(study, document, sheet):
    """The headline's pinned copies each way (link_figures), read from the check's entries."""
    copies = entries_at(study, impl="copy_engine", mode="pinned", n=CHECK_BYTES)
    return [of_entry(row, entry) for entry in copies for row in link_figures(document)
            if row["key"] == f"link/{entry['precision']}/pinned"]


CHECK_BYTES = 256 << 20  # gpubench check's copies
TRANSFER_BYTES = 64 << 20  # 64 MiB, the largest copy of the default suite (past the L2 of 50-60 MB)
# (host memory, direction) of the transfer study -> what its torch counterpart is held to.
TRANSFER_TARGETS = {
    ("pinned", "h2d"): "within 2% of torch's pinned copy",
    ("pinned", "d2h"): "within 2% of torch's pinned copy",
    ("pageable", "h2d"): "at least torch's rate from written pageable memory: a time ratio of at most 1",
    ("pageable", "d2h"): None,
    ("pageable_zero_page", "h2d"): None,  # the pitfall, shown beside torch's untouched tensor
    ("device", "d2d"): "within 3% of torch's device copy",
}
REFERENCES = {"torch_transfer": Run("torch", "reference_transfer.py", ("torch", str(TRANSFER_BYTES)), gpu=True,
                                    sizes_at=1)}
COMPARISONS = tuple(Comparison("transfer", "copy_engine", memory, direction, "torch_transfer", "torch copy_",
                               {"memory": memory, "direction": direction}, ((TRANSFER_BYTES, None),), target)
                    for (memory, direction), target in TRANSFER_TARGETS.items())
CLAIMS = (
    Claim("pinned_memory", "Pinned memory speeds host-to-device copies and lets them overlap computation",
          "the CUDA best-practices advice", pinned_memory, studies=("transfer", "overlap"), position=5),
)

STUDY = Study(name="transfer", derive=lambda study, document, rounds: derive(study["entries"],
                                                            (document["machine"].get("gpus") or [None])[0]),
              summary=sections, plots=plots, rates=copy_rates,
              axes={"impl": "engine", "mode": "host_memory", "precision": "direction", "n": "bytes"},
              references=REFERENCES, comparisons=COMPARISONS, claims=CLAIMS, headline=(("link", link_figures),),
              memory_roof=MEMORY_ROOF, host_bound_figures=("link/h2d/pageable", "link/d2h/pageable"),
              # gpubench check: the copy engines' pinned copies each way, as the headline reads them.
              check=CheckPoint(
                  sizes=(CHECK_BYTES,), impls=("copy_engine",), modes=("pinned",),
                  figures=check_figures,
                  plateau="256 MiB a copy: the copy's fixed cost (its launch and completion, microseconds) is a "
                          "few thousandths of it at PCIe Gen5 rates, so the rate no longer grows with the size",
                  budget="three pinned entries (each way and both at once), one trial, the latency protocol's "
                         "stopping rule"), position=60)
