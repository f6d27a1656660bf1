"""summary.md: the mandelbrot study's sections, from its `derived` (derive_mandelbrot.py)."""
from gpubench_driver.lib.sections import grouped_failures
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import md, percent, ratio, seconds
from gpubench_driver.studies.mandelbrot import ALL_CORES, COPY_BACK, GUIDE, ONE_CORE, RESIDENT

CORES = {ONE_CORE: "one core", ALL_CORES: "all cores"}
MODES = {RESIDENT: "kernel alone (counts left on the device)", COPY_BACK: "with the count image copied back"}


def _image(row):
    return (f"{row['width'] or 0:.0f} x {row['height'] or 0:.0f}, at most {row['max_iterations']} iterations, "
            f"{md(row['precision'])}")


def _claim(derived):
    claim = derived.get("guide_claim")
    if not claim:
        return []
    row = claim["configuration"]
    body = [[MODES.get(mode, md(mode)), seconds(row["gpu"][mode]["median_s"]) + f" ({md(row['gpu'][mode]['impl'])})"]
            + [ratio(ratios.get(cores)) for cores in CORES] for mode, ratios in claim["ratios"].items()]
    cpu = [f"compiled C++ on {CORES[cores]}: {seconds(side['median_s'])} ({md(side['impl'])})"
           for cores, side in row["cpu"].items()]
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


def _cpu_cell(row, cores):
    side = row["cpu"].get(cores)
    return "n/a" if not side else f"{seconds(side['median_s'])} ({md(side['impl'])})"


def _configurations(derived):
    rows = derived.get("configurations") or []
    title = "Mandelbrot: CPU against GPU"
    if not rows:
        return section(title, [paragraph("No configuration was measured.")])
    body = [[_image(row), f"{row['iterations_per_pixel']:.1f}" if row["iterations_per_pixel"] else "n/a",
             f"{row['warp_divergence']:.2f}" if row["warp_divergence"] else "n/a",
             _cpu_cell(row, ONE_CORE), _cpu_cell(row, ALL_CORES), _gpu_cell(row, RESIDENT), _gpu_cell(row, COPY_BACK)]
            for row in rows]
    return section(title, [table(["image", "iterations per pixel", "warp divergence", "CPU, one core",
                                  "CPU, all cores", "GPU, kernel alone", "GPU, with the copy back"], body), paragraph(
        "Median times of one image; beside each GPU time the CPU's time over it. Iterations per pixel: what the "
        "formula ran over the image (`escape_iterations`) per pixel. Warp divergence: over the kernel's warps (two "
        "rows of 16 pixels), the sum of the longest lane's iterations over the sum of the mean lane's: 1 when every "
        "lane of a warp runs as long as the others; a warp runs as long as its longest lane. The GPU kernel alone is "
        "its device time; with the copy back, one call on the host clock until the image is in host memory.")])


def _count(value):
    return "n/a" if value is None else f"{value:.0f}"


def _rounding(derived):
    rows = [row for row in derived.get("configurations") or [] if row["kernels"]]
    if not rows:
        return []
    body = [[_image(row), md(kernel["impl"]), md(kernel["mode"]), _count(kernel["differing_pixels"]),
             percent(kernel["differing_fraction"], 3), _count(kernel["allowed_differing_pixels"]),
             _count(kernel["max_count_difference"])]
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
            + grouped_failures(study, "Mandelbrot: skipped and failed entries"))
