"""The mlp_training study's plug-in: SGD steps of the MLP 784 -> n -> n -> 10 (n its hidden width), GPU and
CPU, against an eager PyTorch step. Findings, sections, plots: every batch study's (lib/batch_report.py);
here: headline figures (the fastest epoch per device) and claims on small models and the batch size."""
from gpubench_driver.lib import batch_report, figures, stats
from gpubench_driver.lib.batch_study import BatchStudy
from gpubench_driver.lib.claims import CONFIRMED, Claim, REFUTED, derived_of
from gpubench_driver.lib.figures import THROUGHPUT, between_runs, entry_of, figure
from gpubench_driver.lib.formatting import byte_size, ratio, seconds
from gpubench_driver.lib.registry import Comparison, Run, csv, item_rates

MLP_WIDTH = 1024  # the hidden width the torch MLP has
MLP_BATCHES = (256, 1024, 8192)
MLP_DTYPES = {"fp32": "float32", "bf16_mixed": "bf16_mixed"}
MLP_TARGET = ("within 10% of an equivalent eager PyTorch training step at batch 256 and above: a time ratio of "
              "at most 1.10")
MLP_TRAINING = BatchStudy(
    title="MLP training", unit="samples", item="sample", size_name="hidden width n",
    batch_meaning="samples per SGD step of the MLP 784 -> n -> n -> 10, n its hidden width",
    epoch_samples=60000)
REFERENCES = {"torch_mlp": Run("torch", "reference_mlp.py", ("torch", csv(MLP_BATCHES), csv(MLP_DTYPES.values())),
                               gpu=True, batches_at=1)}
COMPARISONS = tuple(Comparison("mlp_training", "cublas_kernels", "resident", precision, "torch_mlp", "torch eager step",
                               {"dtype": dtype}, tuple((MLP_WIDTH, b) for b in MLP_BATCHES), MLP_TARGET)
                    for precision, dtype in MLP_DTYPES.items())
MNIST_FACTOR = 2.0


def _epochs(row):
    return {point["batch"]: point["epoch_s"] for point in row["points"]}


def mnist_epoch(document):
    found = derived_of(document, "mlp_training").get("epoch_times") or {}
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


def _utilization_rise(derived, precision="fp32"):
    rows = (derived.get("utilization") or {}).get("rows") or []
    row = next((row for row in rows if row["mode"] == "resident" and row["precision"] == precision), None)
    points = [point for point in (row or {}).get("points", []) if point.get("gpu_util_mean") is not None]
    return (points[0], points[-1]) if len(points) > 1 else None


def _largest_batch(derived, gpu_bytes, precision="fp32"):
    """(bytes per extra sample, the batch the GPU's memory would hold), from the smallest and largest batch."""
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
    derived = derived_of(document, "mlp_training")
    rise = _utilization_rise(derived)
    gpu_bytes = (figures.first_gpu(document).get("memory.total") or 0) * 2 ** 20  # nvidia-smi: MiB
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


CLAIMS = (
    Claim("mnist_epoch", "A small MNIST model trains only about 2x faster on a GPU (153 s against 83 s)",
          "a widely shared MNIST timing", mnist_epoch, studies=("mlp_training",), position=2),
    Claim("batch_size", "Larger batches raise GPU utilisation, and memory decides the largest batch",
          "common deep-learning advice", batch_size, studies=("mlp_training",), position=3),
)


def _epoch_point(derived, samples, device, mode=None):
    """(epoch_s, interval, row, point) of the fastest epoch on a device (and mode), or None."""
    best = None
    for row in derived.get("throughput") or []:
        if row["device"] != device or (mode and row["mode"] != mode):
            continue
        for point in row["points"]:
            epoch_s = samples * point["median_s"] / point["batch"]
            if best is None or epoch_s < best[0]:
                scale = samples / point["batch"]
                interval = stats.Interval.of_record(point["interval_s"])
                best = (epoch_s, (interval.low * scale, interval.high * scale) if interval.known else (None, None),
                        row, point)
    return best


def epoch_figures(document):
    """The MLP's fastest epoch on the GPU (data resident) and on the CPU, at the batch where each is fastest."""
    derived = derived_of(document, "mlp_training")
    samples = (derived.get("epoch_times") or {}).get("samples")
    if not samples:
        return []
    found = []
    for device, mode, name in (("gpu", "resident", "GPU"), ("cpu", None, "CPU")):
        best = _epoch_point(derived, samples, device, mode)
        if best:
            epoch_s, interval, row, point = best
            entry = entry_of(document, {"study": "mlp_training", **row, "batch": point["batch"]})
            found.append(figure(f"mlp_epoch/{device}", f"MLP training epoch of {samples:,} samples, {name}", epoch_s,
                                interval, "s", "lower", THROUGHPUT if device == "gpu" else "cpu: host clock",
                                f"mlp_training: {row['impl']} {row['mode']} {row['precision']}, batch {point['batch']}",
                                device=device, between_runs=between_runs(entry, epoch_s, "time") if entry else None))
    return found


STUDY = batch_report.study_record("mlp_training", MLP_TRAINING, rates=item_rates("samples", with_flop=False),
                                  axes={"n": "hidden"},
                                  references=REFERENCES, comparisons=COMPARISONS, claims=CLAIMS,
                                  headline=(("epoch", epoch_figures),),
                                  priced_figures=("mlp_epoch/gpu", "mlp_epoch/cpu"), position=40)
