"""The mandelbrot study's plug-in: per configuration (image, iteration limit, precision) the GPU against C++
on one core and on all, rates, warp divergence, the pixels a contracted (FMA) kernel counts otherwise, and
the guide's 885x beside the ratios at its configuration (docs/studies.md, mandelbrot)."""
import os
import re
import textwrap

from gpubench_driver.lib import charts, formatting
from gpubench_driver.lib.claims import CLOSE_TO, CONFIRMED, Claim, REFUTED, derived_of
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.findings import (gpu_entries, gpu_modes, group_by, grouped_failures, interval_record,
                                          median_record, median_s, ok_entries)
from gpubench_driver.lib.formatting import md, percent, ratio, seconds, whole
from gpubench_driver.lib.registry import Study
from gpubench_driver.lib.sections import failures_section, table_section

# The guide's published configuration and figures (the issue that asked for this study).
GUIDE = {"width": 1536, "height": 1024, "max_iterations": 20, "precision": "fp64",
         "cpu_s": 4.07, "gpu_s": 0.0046, "ratio": 885,
         "cpu": "interpreted Python on one core", "gpu": "the kernel alone, 16 x 16-thread blocks, no copy back"}
RESIDENT, COPY_BACK = "resident", "transfer_pageable"
ONE_CORE, ALL_CORES = "one_core", "all_cores"


def _pixels(entry):
    """The image's pixels from its width and height counters; None without them."""
    width, height = entry.get("width"), entry.get("height")
    return width * height if width and height else None


def _per_pixel(value, entry):
    pixels = _pixels(entry)
    return value / pixels if value is not None and pixels else None


def _per_second(count, entry):
    return count / median_s(entry) if count else None


def is_guide(row):
    """Whether a configuration row is the guide's: its image, iteration limit and precision."""
    return (row["width"], row["height"], row["max_iterations"], row["precision"]) == (
        GUIDE["width"], GUIDE["height"], GUIDE["max_iterations"], GUIDE["precision"])


def _fastest(entries):
    return min(entries, key=median_s) if entries else None


def _contraction(members, contracted):
    """Per GPU mode and contracted implementation: the fastest separately rounded entry's time over its."""
    found = []
    for mode in gpu_modes(members):
        measured = gpu_entries(members, mode)
        separate = _fastest([e for e in measured if e["impl"] not in contracted])
        for entry in (e for e in measured if e["impl"] in contracted):
            if separate:
                found.append({"mode": mode, "impl": entry["impl"], "separate_impl": separate["impl"],
                              "speedup": median_s(separate) / median_s(entry)})
    return found


def _configuration_row(members, contracted):
    """One configuration's findings from its ok entries."""
    first = members[0]
    cpu = {cores: _fastest([e for e in members if e["device"] == "cpu"
                            and (ONE_CORE if e.get("threads") == 1 else ALL_CORES) == cores])
           for cores in (ONE_CORE, ALL_CORES)}
    gpu = {}
    for mode in gpu_modes(members):
        best = _fastest(gpu_entries(members, mode))
        gpu[mode] = {**median_record(best), **{f"over_{cores}": median_s(found) / median_s(best)
                                       for cores, found in cpu.items() if found}}
    kernels = [{"impl": e["impl"], "mode": e["mode"], "median_s": median_s(e),
                "differing_pixels": e.get("differing_pixels"), "max_count_difference": e.get("max_count_difference"),
                "allowed_differing_pixels": e.get("allowed_differing_pixels"),
                "differing_fraction": _per_pixel(e.get("differing_pixels"), e)}
               for e in sorted(gpu_entries(members), key=lambda e: (e["impl"], e["mode"]))]
    divergence = next((e["warp_divergence"] for e in members if e.get("warp_divergence") is not None), None)
    iterations = first.get("escape_iterations")
    return {"n": first["n"], "max_iterations": first["batch"], "precision": first["precision"],
            "width": first.get("width"), "height": first.get("height"), "escape_iterations": iterations,
            "iterations_per_pixel": _per_pixel(iterations, first), "warp_divergence": divergence,
            "cpu": {cores: median_record(found) for cores, found in cpu.items() if found}, "gpu": gpu,
            "kernels": kernels,
            "contraction": _contraction(members, contracted)}


def configurations(entries, contracted=frozenset()):
    """One row per configuration measured, in size, limit and precision order."""
    found = group_by(ok_entries(entries), lambda e: (e["n"], e["batch"], e["precision"]))
    return [_configuration_row(members, contracted) for _, members in sorted(found.items())]


def rates(entries):
    """Per implementation, mode, precision and iteration limit: pixels and iterations per second over n (rows)."""
    found = group_by(ok_entries(entries), lambda e: (e["impl"], e["device"], e["mode"], e["precision"], e["batch"]))
    return [{"impl": impl, "device": device, "mode": mode, "precision": precision, "max_iterations": limit,
             "points": [{"n": e["n"], "median_s": median_s(e), "interval_s": interval_record(e),
                         "pixels_per_s": _per_second(_pixels(e), e),
                         "iterations_per_s": _per_second(e.get("escape_iterations"), e)}
                        for e in sorted(members, key=lambda e: e["n"])]}
            for (impl, device, mode, precision, limit), members in sorted(found.items())]


def guide_claim(rows):
    """The guide's figures beside the ratios at its configuration and its interpreter's share; None."""
    row = next((row for row in rows if is_guide(row)), None)
    if row is None:
        return None
    one_core = row["cpu"].get(ONE_CORE)
    return {"guide": GUIDE, "configuration": row,
            "ratios": {mode: {cores: found.get(f"over_{cores}") for cores in (ONE_CORE, ALL_CORES)}
                       for mode, found in row["gpu"].items()},
            "interpreter_factor": GUIDE["cpu_s"] / one_core["median_s"] if one_core else None}


def derive(entries, implementations=()):
    # The implementations whose arithmetic contracts multiply-adds (--describe's `contracted`).
    contracted = {impl.get("id") for impl in implementations or [] if isinstance(impl, dict)
                  and impl.get("contracted")}
    rows = configurations(entries, contracted)
    return {"configurations": rows, "rates": rates(entries), "guide_claim": guide_claim(rows),
            "failures": grouped_failures(entries)}


CORES = {ONE_CORE: "one core", ALL_CORES: "all cores"}
MODES = {RESIDENT: "kernel alone (counts left on the device)", COPY_BACK: "with the count image copied back"}


def _image(row):
    return (f"{row['width'] or 0:.0f} x {row['height'] or 0:.0f}, at most {row['max_iterations']} iterations, "
            f"{md(row['precision'])}")


def _timed(side):
    """A median record's time and implementation (n/a without one)."""
    return "n/a" if not side else f"{seconds(side['median_s'])} ({md(side['impl'])})"


def _claim(derived):
    claim = derived.get("guide_claim")
    if not claim:
        return []
    row = claim["configuration"]
    body = [[MODES.get(mode, md(mode)), _timed(row["gpu"][mode])] + [ratio(ratios.get(cores)) for cores in CORES]
            for mode, ratios in claim["ratios"].items()]
    cpu = [f"compiled C++ on {CORES[cores]}: {_timed(side)}" for cores, side in row["cpu"].items()]
    interpreter = claim.get("interpreter_factor")
    gpu = (table(["GPU", "time", "over one core", "over all cores"], body) if body else
           paragraph("No GPU entry was measured at this configuration."))
    return section("Mandelbrot: the guide's 885x", [paragraph(
        f"The guide: {GUIDE['width']} x {GUIDE['height']} pixels of x in [-2, 1], y in [-1, 1], at most "
        f"{GUIDE['max_iterations']} iterations, FP64, counts as bytes: {GUIDE['cpu_s']} s on the CPU "
        f"({GUIDE['cpu']}) against {GUIDE['gpu_s']} s on the GPU ({GUIDE['gpu']}), {GUIDE['ratio']}x. Here, the "
        f"same configuration:"), bullets(cpu), gpu,
        paragraph("Ratios: the CPU's median time over the GPU's. The kernel alone is what the guide timed; with the "
                  "copy back the image reaches ordinary host memory, as a program that uses it needs."
                  + (f" The guide's {GUIDE['cpu_s']} s of interpreted Python is {ratio(interpreter)} this machine's "
                     f"compiled loop on one core: that much of its {GUIDE['ratio']}x was the interpreter (and the "
                     f"older CPU it ran on), not the GPU." if interpreter else ""))])


def _gpu_cell(row, mode):
    found = row["gpu"].get(mode)
    if not found:
        return "n/a"
    ratios = ", ".join(f"{ratio(found[f'over_{cores}'])} {CORES[cores]}" for cores in CORES
                       if found.get(f"over_{cores}") is not None)
    return f"{seconds(found['median_s'])}" + (f" ({ratios})" if ratios else "")


def _configurations(derived):
    return table_section("Mandelbrot: CPU against GPU", [
        "image", "iterations per pixel", "warp divergence", "CPU, one core", "CPU, all cores", "GPU, kernel alone",
        "GPU, with the copy back"], derived.get("configurations") or [], lambda row: [
            _image(row), f"{row['iterations_per_pixel']:.1f}" if row["iterations_per_pixel"] else "n/a",
            f"{row['warp_divergence']:.2f}" if row["warp_divergence"] else "n/a", _timed(row["cpu"].get(ONE_CORE)),
            _timed(row["cpu"].get(ALL_CORES)), _gpu_cell(row, RESIDENT), _gpu_cell(row, COPY_BACK)], paragraph(
        "Median times of one image; beside each GPU time the CPU's time over it. Iterations per pixel: what the "
        "formula ran over the image (`escape_iterations`) per pixel. Warp divergence: over the kernel's warps (two "
        "rows of 16 pixels), the sum of the longest lane's iterations over the sum of the mean lane's: 1 when every "
        "lane of a warp runs as long as the others; a warp runs as long as its longest lane. The GPU kernel alone is "
        "its device time; with the copy back, one call on the host clock until the image is in host memory."),
        empty="No configuration was measured.")


def _rounding(derived):
    rows = [row for row in derived.get("configurations") or [] if row["kernels"]]
    if not rows:
        return []
    body = [[_image(row), md(kernel["impl"]), md(kernel["mode"]), whole(kernel["differing_pixels"]),
             percent(kernel["differing_fraction"], 3), whole(kernel["allowed_differing_pixels"]),
             whole(kernel["max_count_difference"])]
            for row in rows for kernel in row["kernels"]]
    faster = [f"{_image(row)}, {md(found['mode'])}: {md(found['separate_impl'])} takes {ratio(found['speedup'])} "
              f"the time of {md(found['impl'])}" for row in rows for found in row["contraction"]]
    return section("Mandelbrot: rounding and the CPU's counts", [
        table(["image", "kernel", "mode", "pixels counted otherwise", "share", "allowed", "largest count difference"],
              body),
        *([bullets(faster)] if faster else []), paragraph(
            "Against the counts of the CPU loop, which rounds every multiply and add on its own: `kernel` does the "
            "same (`__fmul_rn`, `__fadd_rn`) and must agree in every pixel; `kernel_fma` lets nvcc contract "
            "`a*b + c` into one fused multiply-add, which rounds once where the pair rounds twice, and may differ in "
            "as many pixels as the binary allows (a share of the image below what a one-pixel shift of it changes). "
            "Only orbits that pass within rounding of the escape test (`|z|^2 >= 4`) change: near the set's edge an "
            "orbit is chaotic, so such a pixel may escape any number of iterations earlier or later, and the largest "
            "count difference has no bound below the limit.")])


def sections(study, document):
    derived = study["derived"]
    return (_claim(derived) + _configurations(derived) + _rounding(derived)
            + failures_section(study, "Mandelbrot: skipped and failed entries"))


COUNT_IMAGE = "mandelbrot_counts.pgm"  # written into the run's folder by the study binary (--artifacts-dir)
# A binary PGM's header: P5, width, height and maxval, white space and comments between them, one white space after.
_SPACE = rb"(?:\s|#[^\n]*(?=\n|\Z))"
PGM_HEADER = re.compile(_SPACE + rb"*P5(?=\s)" + (_SPACE + rb"+(\d+)(?=\s|\Z)") * 3 + rb"\s?")


def read_pgm(path):
    """(width, height, maxval, samples, comment) of a binary PGM (P5, 16-bit big-endian); None if not one."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError:
        return None
    header = PGM_HEADER.match(data)
    if not header:
        return None
    width, height, maxval = map(int, header.groups())
    wide = 2 if maxval > 255 else 1
    body = data[header.end():]
    if not (0 < maxval < 65536) or len(body) != width * height * wide:
        return None
    samples = list(body) if wide == 1 else [body[i] << 8 | body[i + 1] for i in range(0, len(body), 2)]
    comments = re.findall(rb"#([^\n]*)", header.group())
    return width, height, maxval, samples, " ".join(c.decode("utf-8", "replace").strip() for c in comments)


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
    axes.set_title(charts.plain("\n".join(textwrap.wrap(f"mandelbrot: {note} (at most {maxval} iterations; black: "
                                                        f"never escaped; colour: log(1 + count))", 100))),
                   fontsize="small")
    charts.save(pyplot, figure, path, dpi=100)


def _configuration_bars(pyplot, path, row, guide):
    """Median time of every implementation and mode at one configuration, beside the guide's figures."""
    bars = [(f"{cores.replace('_', ' ')}: {side['impl']}", side["median_s"]) for cores, side in row["cpu"].items()]
    bars += [(f"GPU {kernel['impl']}, {kernel['mode']}", kernel["median_s"]) for kernel in row["kernels"]]
    if guide:
        bars += [(f"guide: CPU, {guide['cpu']}", guide["cpu_s"]), (f"guide: GPU, {guide['gpu']}", guide["gpu_s"])]
    figure, axes = pyplot.subplots(figsize=(9, 0.45 * len(bars) + 1.5))
    labels = [charts.plain(textwrap.fill(label, 50)) for label, _ in bars]
    axes.barh(range(len(bars)), [seconds for _, seconds in bars],
              color=["tab:grey" if label.startswith("guide") else "tab:blue" for label, _ in bars])
    axes.set_yticks(range(len(bars)), labels, fontsize="small")
    axes.invert_yaxis()
    axes.set(xscale="log", xlabel="median time of one image (s)",
             title=charts.plain(f"mandelbrot: {row['width']} x {row['height']} pixels, at most {row['max_iterations']} "
                                f"iterations, {row['precision']}" + (" (the guide's configuration)" if guide else "")))
    axes.grid(True, which="both", axis="x", alpha=0.3)
    charts.save(pyplot, figure, path)


def plots(pyplot, study, plot_dir):
    """The count image, the guide's configuration's times beside the guide's, pixels per second over n."""
    paths = []
    image = read_pgm(os.path.join(os.path.dirname(plot_dir), COUNT_IMAGE))
    if image:
        paths.append(charts.plot_path(plot_dir, "mandelbrot_counts"))
        _count_image_plot(pyplot, paths[-1], image)
    derived = study["derived"]
    claim = derived.get("guide_claim")
    if claim:
        paths.append(charts.plot_path(plot_dir, "mandelbrot_guide"))
        _configuration_bars(pyplot, paths[-1], claim["configuration"], GUIDE)
    rows = [row for row in derived.get("rates") or [] if len(row["points"]) > 1]
    study_charts = []
    for limit in sorted({row["max_iterations"] for row in rows}):
        series = charts.row_series([row for row in rows if row["max_iterations"] == limit],
                                   ("impl", "mode", "precision"))
        study_charts += charts.line_charts(
            plot_dir, ("mandelbrot_rate", limit), f"mandelbrot: pixels per second, at most {limit} "
            "iterations", series, (lambda key: key[2], lambda key: key[1]), charts.cpu_keys(series), ylabel="pixels/s",
            value=lambda point: point["pixels_per_s"], xlabel="rows of the image (n; 1.5 n pixels wide)")
    return paths + charts.draw(pyplot, study_charts)


def mandelbrot_guide(document):
    claim = derived_of(document, "mandelbrot").get("guide_claim")
    resident = ((claim or {}).get("ratios") or {}).get(RESIDENT) or {}
    one, every = resident.get(ONE_CORE), resident.get(ALL_CORES)
    if one is None or every is None:
        return None
    claimed = GUIDE["ratio"]
    verdict = (CONFIRMED if every >= claimed * (1 - CLOSE_TO) else
               f"{REFUTED}: the gain is smaller" if one < claimed * (1 - CLOSE_TO) else
               "depends on the CPU: one compiled core loses by that much, all of them do not")
    copied = claim["ratios"].get(COPY_BACK) or {}
    with_copy = (f"; with the image copied back {ratio(copied.get(ONE_CORE))} and "
                 f"{ratio(copied.get(ALL_CORES))}" if copied else "")
    interpreter = claim.get("interpreter_factor")
    return {"verdict": verdict, "numbers": {"ratios": claim["ratios"], "interpreter_factor": interpreter},
            "answer": f"The guide's image (1536 x 1024, 20 iterations, FP64), GPU kernel alone against compiled C++: "
                      f"{ratio(one)} one core, {ratio(every)} all cores{with_copy}. The guide's CPU side was "
                      f"interpreted Python"
                      + (f", {ratio(interpreter)} this machine's compiled loop on one core." if interpreter else ".")}


def pixel_rates(axes, counters, median_s):
    """Pixels per second from the image's width and height counters."""
    pixels = _pixels(counters)
    return [formatting.rate(pixels / median_s, "pixels/s", " ")] if pixels else []


CLAIMS = (
    Claim("mandelbrot_guide", "Mandelbrot runs 885x faster on the GPU: 4.07 s on the CPU against 0.0046 s",
          "a widely read CUDA guide (1536 x 1024, 20 iterations, FP64; its CPU side interpreted Python on one core, "
          "its GPU side the kernel alone)", mandelbrot_guide, studies=("mandelbrot",), position=7),
)

STUDY = Study(name="mandelbrot", batch_axis=True,
              derive=lambda study, document, rounds: derive(study["entries"], study.get("implementations")),
              summary=sections, plots=plots, rates=pixel_rates, axes={"n": "rows", "batch": "max_iterations"},
              claims=CLAIMS, position=90)
