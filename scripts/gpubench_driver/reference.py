"""Reference timings from numpy and PyTorch, and how the study compares with them."""
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace

SCRIPTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMPY_SIZES = (4096,)
TORCH_SIZES = (4096, 8192)
CONV_SIZES = (56, 28, 14, 7)  # every layer of the convolution study
CONV_BATCHES = (1, 32, 256)
CONV_LAYOUTS = ("nchw", "nhwc")  # cudnn_<layout> in the study
MLP_WIDTH = 1024  # the hidden width the torch MLP has
MLP_BATCHES = (256, 1024, 8192)
# The study's precision -> the reference's dtype.
CONV_DTYPES = {"fp32": "float32", "tf32": "tf32", "fp16": "float16"}
MLP_DTYPES = {"fp32": "float32", "bf16_mixed": "bf16_mixed"}
TRANSFER_BYTES = 1 << 28  # 256 MiB, one of the transfer study's default sizes
# (host memory, direction) of the transfer study -> what its torch counterpart is held to.
TRANSFER_TARGETS = {
    ("pinned", "h2d"): "within 2% of torch's pinned copy",
    ("pinned", "d2h"): "within 2% of torch's pinned copy",
    ("pageable", "h2d"): "at least torch's rate from written pageable memory: a time ratio of at most 1",
    ("pageable", "d2h"): None,
    ("pageable_zero_page", "h2d"): None,  # the pitfall, shown beside torch's untouched tensor
    ("device", "d2d"): "within 3% of torch's device copy",
}
PRECISION_DTYPES = {"tf32": ("torch", "tf32"), "fp16": ("torch", "float16"), "bf16": ("torch", "bfloat16"),
                    "fp8_e4m3": ("torch._scaled_mm", "float8_e4m3fn")}
PROBE_TIMEOUT_S = 120
RUN_TIMEOUT_S = 900
PROBES = {
    "numpy": "import numpy",
    "torch": "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)",
}


@dataclass(frozen=True)
class Run:
    """One reference run: a script in scripts/ and its arguments, under an interpreter that has
    `library` (a key of PROBES); a `gpu` run only when the study's GPU part ran. sizes_at and
    batches_at: which argument lists the sizes and batches it times, so that it times only those
    the study ran."""
    library: str
    script: str
    args: tuple
    gpu: bool
    sizes_at: int = None
    batches_at: int = None


def _csv(values):
    return ",".join(map(str, values))


# The reference runs after each study: key in results.json 'references' -> what runs.
RUNS = {
    "matmul": {"numpy": Run("numpy", "reference_matmul.py", ("numpy", _csv(NUMPY_SIZES)), gpu=False, sizes_at=1),
               "torch": Run("torch", "reference_matmul.py", ("torch", _csv(TORCH_SIZES), "float32"), gpu=True,
                            sizes_at=1)},
    "precision": {"torch_precision": Run("torch", "reference_matmul.py", (
        "torch", _csv(TORCH_SIZES), _csv(dtype for _, dtype in PRECISION_DTYPES.values())), gpu=True, sizes_at=1)},
    "conv2d": {"torch_conv2d": Run("torch", "reference_conv2d.py", (
        "torch", _csv(CONV_SIZES), _csv(CONV_BATCHES), _csv(CONV_DTYPES.values()), _csv(CONV_LAYOUTS)), gpu=True,
        sizes_at=1, batches_at=2)},
    "mlp_training": {"torch_mlp": Run("torch", "reference_mlp.py", (
        "torch", _csv(MLP_BATCHES), _csv(MLP_DTYPES.values())), gpu=True, batches_at=1)},
    "transfer": {"torch_transfer": Run("torch", "reference_transfer.py", ("torch", str(TRANSFER_BYTES)), gpu=True,
                                       sizes_at=1)},
}
CONV_TARGET = ("within 5% of torch.nn.functional.conv2d (cudnn.benchmark=True) for the same layer, dtype, layout "
               "and batch: a time ratio of at most 1.05")
MLP_TARGET = ("within 10% of an equivalent eager PyTorch training step at batch 256 and above: a time ratio of "
              "at most 1.10")


@dataclass(frozen=True)
class Comparison:
    """Which study entries (impl, mode, precision at each (n, batch) point; batch None in a study
    without a batch axis) are compared with which reference results (those of `run` with the
    fields in `result`); `reference` names it in the report, `target` what the study is held to."""
    study: str
    impl: str
    mode: str
    precision: str
    run: str
    reference: str
    result: dict
    points: tuple
    target: str = None


COMPARISONS = (
    Comparison("matmul", "cublas", "resident", "fp32", "torch", "torch", {"dtype": "float32"},
               tuple((n, None) for n in TORCH_SIZES)),
    Comparison("matmul", "openblas", "host", "fp32", "numpy", "numpy", {"dtype": "float32"},
               tuple((n, None) for n in NUMPY_SIZES)),
    *(Comparison("precision", "cublas", "resident", precision, "torch_precision", reference, {"dtype": dtype},
                 tuple((n, None) for n in TORCH_SIZES))
      for precision, (reference, dtype) in PRECISION_DTYPES.items()),
    *(Comparison("conv2d", f"cudnn_{layout}", "resident", precision, "torch_conv2d", "torch.nn.functional.conv2d",
                 {"dtype": dtype, "layout": layout}, tuple((n, b) for n in CONV_SIZES for b in CONV_BATCHES),
                 CONV_TARGET)
      for layout in CONV_LAYOUTS for precision, dtype in CONV_DTYPES.items()),
    *(Comparison("mlp_training", "cublas_kernels", "resident", precision, "torch_mlp", "torch eager step",
                 {"dtype": dtype}, tuple((MLP_WIDTH, b) for b in MLP_BATCHES), MLP_TARGET)
      for precision, dtype in MLP_DTYPES.items()),
    *(Comparison("transfer", "copy_engine", memory, direction, "torch_transfer", "torch copy_",
                 {"memory": memory, "direction": direction}, ((TRANSFER_BYTES, None),), target)
      for (memory, direction), target in TRANSFER_TARGETS.items()),
)


def candidate_interpreters():
    names = [os.environ.get("GPUBENCH_REFERENCE_PYTHON"), sys.executable, shutil.which("python3"),
             "/usr/bin/python3", "/usr/local/bin/python3"]
    found = []
    for name in names:
        if name and os.access(name, os.X_OK) and os.path.realpath(name) not in map(os.path.realpath, found):
            found.append(name)
    return found


def find_interpreter(library):
    for python in candidate_interpreters():
        try:
            probe = subprocess.run([python, "-c", PROBES[library]], capture_output=True, timeout=PROBE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return python
    return None


def run_library(run):
    """{"python", "results", "notes"} or {"note"} for one reference run."""
    python = find_interpreter(run.library)
    if python is None:
        need = "numpy" if run.library == "numpy" else "PyTorch with a usable CUDA device"
        return {"note": f"skipped: no Python interpreter with {need} was found"}
    print(f"reference: {run.script} {' '.join(run.args)} ({python})", flush=True)
    command = [python, os.path.join(SCRIPTS_DIR, run.script), *run.args]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"python": python, "note": f"failed: {run.script} took over {RUN_TIMEOUT_S} s"}
    if result.returncode != 0:
        return {"python": python, "note": f"failed ({result.returncode}): {result.stderr.strip()[-800:]}"}
    try:
        output = json.loads(result.stdout)
        return {"python": python, "results": output["results"], "notes": output.get("notes", [])}
    except (ValueError, KeyError, TypeError):
        return {"python": python, "note": "failed: the reference script printed no results"}


def _narrowed(run, sizes, batches):
    """The run at only the sizes and batches the study ran (None: all it has); None when the
    study ran none of them."""
    args = list(run.args)
    for position, swept in ((run.sizes_at, sizes), (run.batches_at, batches)):
        if position is None or swept is None:
            continue
        kept = [value for value in args[position].split(",") if int(value) in swept]
        if not kept:
            return None
        args[position] = ",".join(kept)
    return replace(run, args=tuple(args))


def run_references(study, with_gpu, sizes=None, batches=None):
    """The reference runs that belong to a study, by their key in results.json 'references';
    sizes and batches: what the study swept (None: everything)."""
    found = {}
    for key, run in RUNS.get(study, {}).items():
        run = _narrowed(run, sizes, batches)
        if run is None:
            found[key] = {"note": "skipped: the study ran none of the reference's sizes or batches"}
        elif with_gpu or not run.gpu:
            found[key] = run_library(run)
        else:
            found[key] = {"note": "skipped: the GPU part of the study was not run"}
    return found


def compare(references, entries, study):
    """Study median time / reference median time at each point both measured (< 1: the study is faster)."""
    rows = []
    for comparison in (c for c in COMPARISONS if c.study == study):
        measured = _reference_medians(references, comparison)
        swept = {(entry.get("n"), entry.get("batch")) for entry in entries}
        for n, batch in comparison.points:
            study_s = _study_median(entries, comparison, n, batch)
            if batch is not None and entries and (n, batch) not in swept and (n, batch) not in measured:
                continue  # a batch neither side ran: the study swept other batches (the suite's, say)
            rows.append(_compare_one(comparison, n, batch, measured.get((n, batch)),
                                     _study_median(entries, comparison, n, batch)))
    return rows


def _reference_medians(references, comparison):
    """{(n, batch): median seconds} of the run's results that have the comparison's fields."""
    results = ((references or {}).get(comparison.run) or {}).get("results") or []
    return {(r.get("n"), r.get("batch")): (r.get("time_s") or {}).get("median") for r in results
            if isinstance(r, dict) and all(r.get(key) == value for key, value in comparison.result.items())}


def _study_median(entries, comparison, n, batch):
    for entry in entries:
        if (entry.get("impl"), entry.get("mode"), entry.get("precision"), entry.get("n"), entry.get("batch"),
                entry.get("status")) == (comparison.impl, comparison.mode, comparison.precision, n, batch, "ok"):
            return entry["time_s"]["median"]
    return None


def _compare_one(comparison, n, batch, reference_s, study_s):
    row = {"study": f"{comparison.impl}/{comparison.mode}", "precision": comparison.precision,
           "reference": comparison.reference, "reference_dtype": comparison.result.get("dtype"),
           "reference_layout": comparison.result.get("layout"), "n": n, "batch": batch,
           "study_median_s": study_s, "reference_median_s": reference_s, "time_ratio": None,
           "target": comparison.target, "note": None}
    where = f"n={n}" + (f", batch={batch}" if batch is not None else "")
    if study_s is None:
        row["note"] = f"the study has no ok {row['study']} {row['precision']} entry at {where}"
    elif reference_s is None:
        reference = " ".join(filter(None, (comparison.reference, *comparison.result.values())))
        row["note"] = f"no {reference} reference at {where}"
    else:
        row["time_ratio"] = study_s / reference_s
    return row
