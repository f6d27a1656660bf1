"""The claims that bring people to gpubench, each answered on this machine from the run's findings.

One registry (CLAIMS): a claim as people make it, where it comes from, and the function that
answers it, returning {verdict, answer, numbers} from the studies' derived findings, or None where
the run did not measure what it needs. A new study adds its claims with one record here. The
verdicts: confirmed, refuted, or "depends on ..." naming what it depends on."""
import math
from dataclasses import dataclass
from typing import Callable

from gpubench_driver.lib import findings
from gpubench_driver.lib.formatting import byte_size, percent, ratio, seconds
from gpubench_driver.studies import mandelbrot, occupancy, vector_add
from gpubench_driver.stages import headline

CONFIRMED, REFUTED = "confirmed", "refuted"
CLOSE_TO = 0.10  # a measured factor within this share of the claimed one confirms it


@dataclass(frozen=True)
class Claim:
    key: str
    text: str     # the claim, as it is usually made
    source: str   # where it is made
    answer: Callable  # document -> {verdict, answer, numbers} or None (not measured by this run)
    studies: tuple = ()  # the studies whose findings it reads: a run without them leaves it unanswered


def _derived(document, study):
    return ((document["studies"].get(study) or {}).get("derived")) or {}


# --- "at 200x200 the GPU is about 6x faster, but the copies eat the gain" ------------------------
SMALL_MATRIX = 200


def small_matrix(document):
    entries = (document["studies"].get("matmul") or {}).get("entries") or []
    best_cpu = findings.best_by_size(findings.cpu_entries(entries))
    modes = [mode for mode in ("resident", "transfer_pinned", "transfer_pageable") if findings.gpu_entries(entries, mode)]
    if "resident" not in modes or not best_cpu:
        return None
    best_gpu = {mode: findings.best_by_size(findings.gpu_entries(entries, mode)) for mode in modes}
    sizes = [n for n in best_cpu if all(n in best_gpu[mode] for mode in modes)]
    if not sizes:
        return None
    n = min(sizes, key=lambda size: abs(math.log(size / SMALL_MATRIX)))
    cpu_s = best_cpu[n]["time_s"]["median"]
    speedups = {mode: cpu_s / best_gpu[mode][n]["time_s"]["median"] for mode in modes}
    copies = [speedups[mode] for mode in modes if mode != "resident"]
    if speedups["resident"] <= 1:
        verdict = REFUTED
    elif copies and all(value <= 1 for value in copies):
        verdict = CONFIRMED
    elif copies and any(value <= 1 for value in copies):
        verdict = "depends on the host memory: pinned copies keep a gain, pageable ones eat it"
    else:
        verdict = REFUTED
    parts = ", ".join(f"{ratio(speedups[mode])} {mode.replace('transfer_', 'with ')} copies"
                      for mode in modes if mode != "resident")
    return {"verdict": verdict, "numbers": {"n": n, "speedups": speedups},
            "answer": f"At n = {n} (the measured size nearest {SMALL_MATRIX}), FP32 GEMM on the GPU against the best "
                      f"CPU: {ratio(speedups['resident'])} with the data resident" + (f"; {parts}" if parts else "")
                      + "."}


# --- "a small MNIST model trains only about 2x faster on a GPU" ------------------------------------
MNIST_FACTOR = 2.0


def _epochs(row):
    return {point["batch"]: point["epoch_s"] for point in row["points"]}


def mnist_epoch(document):
    found = _derived(document, "mlp_training").get("epoch_times") or {}
    rows = found.get("rows") or []
    cpu = next((row for row in rows if row["device"] == "cpu"), None)
    gpu = next((row for row in rows if row["device"] == "gpu" and row["precision"] == "fp32"
                and row["mode"] == "transfer_pinned"), None) or next(
        (row for row in rows if row["device"] == "gpu" and row["precision"] == "fp32"), None)
    if not cpu or not gpu:
        return None
    cpu_epochs, gpu_epochs = _epochs(cpu), _epochs(gpu)
    factors = {batch: cpu_epochs[batch] / gpu_epochs[batch] for batch in sorted(cpu_epochs) if batch in gpu_epochs}
    if not factors:
        return None
    near = [abs(value / MNIST_FACTOR - 1) <= 0.5 for value in factors.values()]
    verdict = CONFIRMED if all(near) else REFUTED if not any(near) else "depends on the batch"
    per_batch = "; ".join(f"batch {batch}: {seconds(cpu_epochs[batch])} against {seconds(gpu_epochs[batch])} "
                          f"({ratio(value)})" for batch, value in factors.items())
    return {"verdict": verdict, "numbers": {"factors": factors, "gpu_mode": gpu["mode"]},
            "answer": f"One epoch of {found['samples']:,} samples of the 784-1024-1024-10 MLP (FP32), best CPU against "
                      f"the GPU ({gpu['mode'].replace('_', ' ')}, each batch copied in): {per_batch}."}


# --- "larger batches raise GPU utilisation, and memory decides the largest batch" ------------------
def _utilization_rise(derived, precision="fp32"):
    rows = (derived.get("utilization") or {}).get("rows") or []
    row = next((row for row in rows if row["mode"] == "resident" and row["precision"] == precision), None)
    points = [point for point in (row or {}).get("points", []) if point.get("gpu_util_mean") is not None]
    return (points[0], points[-1]) if len(points) > 1 else None


def _largest_batch(derived, gpu_bytes, precision="fp32"):
    """(bytes per extra sample, the batch the GPU's memory would hold) from the device memory at the
    smallest and largest batch measured."""
    series = next((row for row in derived.get("device_memory_series") or []
                   if row["mode"] == "resident" and row["precision"] == precision), None)
    if not series or not gpu_bytes:
        return None
    small, large = series["smallest"], series["largest"]
    if large["batch"] <= small["batch"] or large["device_bytes"] <= small["device_bytes"]:
        return None
    per_sample = (large["device_bytes"] - small["device_bytes"]) / (large["batch"] - small["batch"])
    return per_sample, int((gpu_bytes - small["device_bytes"]) / per_sample)


def batch_size(document):
    derived = _derived(document, "mlp_training")
    rise = _utilization_rise(derived)
    gpu_bytes = (headline.first_gpu(document).get("memory.total") or 0) * 2 ** 20  # nvidia-smi: MiB
    fits = _largest_batch(derived, gpu_bytes)
    throughput = next((row for row in derived.get("throughput") or [] if row["device"] == "gpu"
                       and row["mode"] == "resident" and row["precision"] == "fp32"), None)
    if not rise or not fits or not throughput:
        return None
    first, last = rise
    saturation = throughput.get("saturation_batch")
    rises = last["gpu_util_mean"] > first["gpu_util_mean"]
    limit = saturation if saturation is not None else throughput["best_batch"]
    verdict = (REFUTED if not rises else CONFIRMED if fits[1] <= 2 * limit else
               f"depends on the model's memory per sample: this one's would allow a batch {fits[1] // limit:,}x "
               f"the largest useful one measured")
    grows = (f"throughput stops growing at batch {saturation}" if saturation is not None
             else f"throughput still grows at the largest batch measured ({throughput['best_batch']})")
    return {"verdict": verdict, "numbers": {"utilization": [first, last], "bytes_per_sample": fits[0],
                                            "largest_batch": fits[1], "saturation_batch": saturation},
            "answer": f"MLP step, FP32, data resident: NVML's GPU utilization {first['gpu_util_mean']:.0f}% at batch "
                      f"{first['batch']} and {last['gpu_util_mean']:.0f}% at batch {last['batch']}; {grows}; each "
                      f"further sample takes {byte_size(fits[0])} of device memory, so the GPU's memory would hold "
                      f"a batch of about {fits[1]:,}."}


# --- "16-bit tensor-core math is up to 8x faster than FP32" ----------------------------------------
TENSOR_FACTOR = 8.0


def tensor_cores(document):
    claim = _derived(document, "precision").get("tensor_core_claim")
    results = [row for row in (claim or {}).get("results", []) if row.get("max_speedup") is not None]
    if not results:
        return None
    best = max(row["max_speedup"] for row in results)
    verdict = (CONFIRMED if abs(best / TENSOR_FACTOR - 1) <= CLOSE_TO else
               f"{REFUTED}: the gain is larger" if best > TENSOR_FACTOR else f"{REFUTED}: the gain is smaller")
    found = ", ".join(f"{row['precision'].upper()} {ratio(row['max_speedup'])} (n = {row['n']})" for row in results)
    return {"verdict": verdict, "numbers": {"speedups": {row["precision"]: row["max_speedup"] for row in results}},
            "answer": f"cuBLAS GEMM against cuBLAS FP32 at the same size, data resident: {found}."}


# --- "pinned memory speeds host-to-device copies and lets them overlap computation" ----------------
def pinned_memory(document):
    transfer = next((row for row in _derived(document, "transfer").get("pinned_over_pageable") or []
                     if row["direction"] == "h2d"), None)
    pipelines = {row["memory"]: row for row in _derived(document, "overlap").get("best") or []
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


# --- "FLOPS are rarely the limit; memory bandwidth is" ---------------------------------------------
ROOF_STUDIES = ("stream", "roofline")  # they measure the roofs; the entries placed under them are the others'
# Studies whose entries are not workloads but experiments (deliberately starved grids, empty kernels, the GEMM
# ladder's deliberately weak rungs): placed on the roofline they would count as a workload's answer.
NOT_WORKLOADS = ROOF_STUDIES + ("occupancy", "launch_overhead", "gemm_ladder")
MOSTLY = 0.75  # this share of the entries on one side of the ridge settles the claim


def memory_bound(document):
    if not set(ROOF_STUDIES) <= set(document["studies"]):
        return None
    roof = (document.get("findings") or {}).get("roofline") or {}
    bandwidth = roof.get("bandwidth")
    peaks = {row["precision"]: row["flop_per_s"] for row in roof.get("peaks") or []}
    points = [point for point in roof.get("points") or []
              if point["study"] not in NOT_WORKLOADS and point["precision"] in peaks]
    if not bandwidth or not points:
        return None
    ridges = {precision: peak / bandwidth["bytes_per_s"] for precision, peak in peaks.items()}
    groups = {}
    for point in points:
        group = groups.setdefault((point["study"], point["precision"]), {
            "study": point["study"], "precision": point["precision"], "memory_bound": 0, "compute_bound": 0})
        group["memory_bound" if point["intensity"] < ridges[point["precision"]] else "compute_bound"] += 1
    by_study = list(groups.values())
    memory = sum(group["memory_bound"] for group in by_study)
    share = memory / len(points)
    verdict = (CONFIRMED if share >= MOSTLY else REFUTED if share <= 1 - MOSTLY else
               f"depends on the arithmetic intensity: {memory} of {len(points)} entries are memory-bound")
    used = sorted({point["precision"] for point in points}, key=lambda precision: -peaks[precision])
    ridge_text = ", ".join(f"{precision} {ridges[precision]:.3g}" for precision in used)
    per_study = "; ".join(f"{group['study']} {group['precision']}: {group['memory_bound']} memory-bound, "
                          f"{group['compute_bound']} compute-bound" for group in by_study)
    return {"verdict": verdict,
            "numbers": {"memory_bound": memory, "compute_bound": len(points) - memory, "share_memory_bound": share,
                        "bandwidth_bytes_per_s": bandwidth["bytes_per_s"], "bandwidth_study": bandwidth["study"],
                        "ridges": {precision: ridges[precision] for precision in used}, "by_study": by_study},
            "answer": f"Of the {len(points)} resident GPU entries of the other studies on the measured roofline "
                      f"(memory roof {bandwidth['bytes_per_s'] / 1e9:.0f} GB/s from the {bandwidth['study']} study; "
                      f"ridges in FLOP per byte: {ridge_text}), {memory} lie left of their precision's ridge, where "
                      f"bandwidth bounds them, and {len(points) - memory} right of it: {per_study}."}


# --- "Mandelbrot: 4.07 s on the CPU against 0.0046 s on the GPU, 885x" -------------------------------
def mandelbrot_guide(document):
    claim = _derived(document, "mandelbrot").get("guide_claim")
    resident = ((claim or {}).get("ratios") or {}).get(mandelbrot.RESIDENT) or {}
    one, every = resident.get(mandelbrot.ONE_CORE), resident.get(mandelbrot.ALL_CORES)
    if one is None or every is None:
        return None
    claimed = mandelbrot.GUIDE["ratio"]
    verdict = (CONFIRMED if every >= claimed * (1 - CLOSE_TO) else
               f"{REFUTED}: the gain is smaller" if one < claimed * (1 - CLOSE_TO) else
               "depends on the CPU: one compiled core loses by that much, all of them do not")
    copied = claim["ratios"].get(mandelbrot.COPY_BACK) or {}
    with_copy = (f"; with the image copied back {ratio(copied.get(mandelbrot.ONE_CORE))} and "
                 f"{ratio(copied.get(mandelbrot.ALL_CORES))}" if copied else "")
    interpreter = claim.get("interpreter_factor")
    return {"verdict": verdict, "numbers": {"ratios": claim["ratios"], "interpreter_factor": interpreter},
            "answer": f"The guide's image (1536 x 1024, 20 iterations, FP64), GPU kernel alone against compiled C++: "
                      f"{ratio(one)} one core, {ratio(every)} all cores{with_copy}. The guide's CPU side was "
                      f"interpreted Python"
                      + (f", {ratio(interpreter)} this machine's compiled loop on one core." if interpreter else ".")}


# --- "for one memory-bound operation the copies cost more than the CPU's whole computation" -------
def vector_add_copies(document):
    found = _derived(document, "vector_add").get("expected_finding")
    if not found or not found["copies"]:
        return None
    cheaper = {mode: copies["sizes_cheaper_than_cpu"] for mode, copies in found["copies"].items()
               if copies["sizes_cheaper_than_cpu"]}
    resident = found["gpu_wins"].get(vector_add.RESIDENT) or []
    verdict = (CONFIRMED if found["holds"] else
               f"{REFUTED}: the copies cost less than the CPU at some sizes" if cheaper else
               "depends: the copies cost more, but the GPU does not beat the CPU even with the data resident"
               if not resident else "depends on the size")
    spans = "; ".join(f"{mode.replace('transfer_', '')} copies {ratio(copies['least_over_cpu'])} to "
                      f"{ratio(copies['most_over_cpu'])} the best CPU's time"
                      for mode, copies in found["copies"].items())
    return {"verdict": verdict, "numbers": {"copies": found["copies"], "gpu_wins": found["gpu_wins"]},
            "answer": f"C = A + B in FP32 at every size measured: {spans}; the GPU with the data resident beats "
                      f"the best CPU at " + (f"n = {', '.join(map(str, resident))}" if resident else "no size")
                      + "."}


# --- "16 blocks of 128 threads use less than a tenth of a big GPU" --------------------------------------
def _percent_interval(value, interval):
    return percent(value) + (f" ({percent(interval[0])}–{percent(interval[1])})" if interval else "")


def walkthrough_launch(document):
    launch = occupancy.WALKTHROUGH
    row = next((row for row in _derived(document, "occupancy").get("walkthrough") or []
                if row["impl"] == launch["kernel"]), None)
    if row is None:
        return None
    verdict = {"below": CONFIRMED, "above": f"{REFUTED}: it uses more",
               "within noise": "depends on the noise: the measured fraction's interval spans a tenth"}[
        row["against_claim"]]
    best = row["best"]
    busy = (f", keeping {row['busy_multiprocessors']:.0f} of {row['multiprocessors']:.0f} multiprocessors and "
            f"{percent(row['warp_fraction'])} of the GPU's warp slots busy"
            if row["busy_multiprocessors"] is not None and row["multiprocessors"] else "")
    return {"verdict": verdict, "numbers": {"fraction_of_best": row["fraction_of_best"],
                                            "fraction_interval": row["fraction_interval"],
                                            "best_launch": [best["blocks"], best["threads_per_block"]],
                                            "busy_fraction": row["busy_fraction"], "warp_fraction": row["warp_fraction"]},
            "answer": f"The naive SGEMM (n = 1024) launched as {launch['blocks']} blocks of {launch['threads_per_block']} "
                      f"threads ran at {_percent_interval(row['fraction_of_best'], row['fraction_interval'])} of the "
                      f"rate of the best launch measured ({best['blocks']} blocks of {best['threads_per_block']} "
                      f"threads){busy}."}


# --- "a GPU must never idle between kernels" ---------------------------------------------------
MOSTLY_IDLE = 0.5  # the host-synchronised chain's idle share from which gaps are "much of its time"


def idle_gaps(document):
    found = _derived(document, "launch_overhead").get("idle_finding")
    if not found:
        return None
    idle, gain = found["idle"], found["graph_over_stream"]
    gaps_matter = idle["sync_each"]["fraction"] >= MOSTLY_IDLE
    graph_gains = bool(gain) and gain["ratio"] > 1 and gain["beyond_noise"] is not False
    verdict = (CONFIRMED if gaps_matter and graph_gains else REFUTED if not gaps_matter and not graph_gains else
               "depends on the launching: synchronising after each kernel leaves the GPU idle most of the time, but "
               "a graph buys nothing over launching back to back" if gaps_matter else
               "depends: the gaps are a small share, yet a graph still shortens the chain")
    shares = "; ".join(f"{_percent_interval(idle[mode]['fraction'], idle[mode]['interval'])} {what}"
                       for mode, what in (("sync_each", "with a synchronisation after each kernel"),
                                          ("stream", "launched back to back from a stream"), ("graph", "as a CUDA graph")))
    graph = (f"; the graph ran the chain {ratio(gain['ratio'])} as fast as the stream"
             + ("" if gain["beyond_noise"] is not False else " (within the noise)")
             + f", {seconds(gain['saved_per_kernel_s'])} saved per kernel" if gain else "")
    return {"verdict": verdict, "numbers": {"n": found["n"], "idle": {mode: idle[mode]["fraction"] for mode in idle},
                                            "graph_over_stream": gain["ratio"] if gain else None},
            "answer": f"A chain of {found['n']} small kernels (each adding to 2^16 floats), the share of its time the "
                      f"GPU ran none of them: {shares}{graph}."}


CLAIMS = (
    Claim("small_matrix", "At 200x200 the GPU is about 6x faster, but copying the data each call eats the gain",
          "a blog benchmark of a K80 against a 4-core laptop", small_matrix, studies=("matmul",)),
    Claim("mnist_epoch", "A small MNIST model trains only about 2x faster on a GPU (153 s against 83 s)",
          "a widely shared MNIST timing", mnist_epoch, studies=("mlp_training",)),
    Claim("batch_size", "Larger batches raise GPU utilisation, and memory decides the largest batch",
          "common deep-learning advice", batch_size, studies=("mlp_training",)),
    Claim("tensor_cores", "16-bit tensor-core math is up to 8x faster than FP32",
          "a common reading of tensor-core marketing", tensor_cores, studies=("precision",)),
    Claim("pinned_memory", "Pinned memory speeds host-to-device copies and lets them overlap computation",
          "the CUDA best-practices advice", pinned_memory, studies=("transfer", "overlap")),
    Claim("flops_rarely_limit", "FLOPS are rarely the limit; memory bandwidth is",
          "GPU optimisation guides, after Stephen Jones' How CUDA Programming Works (GTC)", memory_bound,
          studies=ROOF_STUDIES),
    Claim("mandelbrot_guide", "Mandelbrot runs 885x faster on the GPU: 4.07 s on the CPU against 0.0046 s",
          "a widely read CUDA guide (1536 x 1024, 20 iterations, FP64; its CPU side interpreted Python on one core, "
          "its GPU side the kernel alone)", mandelbrot_guide, studies=("mandelbrot",)),
    Claim("vector_add_copies", "For a memory-bound operation such as vector add, copying the data to the GPU costs "
          "more than the CPU's whole computation: the GPU pays off only when the data stays resident",
          "common GPU-offloading advice, after the first CUDA program", vector_add_copies, studies=("vector_add",)),
    Claim("walkthrough_launch", "An SGEMM launched as 16 blocks of 128 threads uses less than a tenth of a big GPU",
          "a well-known profiling walk-through of a naive SGEMM kernel", walkthrough_launch, studies=("occupancy",)),
    Claim("idle_gaps", "A GPU must never idle between kernels: a chain of small kernels spends much of its time in "
          "launch gaps, which CUDA graphs remove",
          "the same profiling walk-through; CUDA graphs are NVIDIA's remedy for launch overhead", idle_gaps,
          studies=("launch_overhead",)),
)


def derive_claims(document):
    """findings["claims"]: {"answered": [...], "not_measured": [claim texts]}."""
    answered, not_measured = [], []
    for claim in CLAIMS:
        found = claim.answer(document)
        if found is None:
            not_measured.append(claim.text)
        else:
            answered.append({"key": claim.key, "claim": claim.text, "source": claim.source, **found})
    return {"answered": answered, "not_measured": not_measured}
