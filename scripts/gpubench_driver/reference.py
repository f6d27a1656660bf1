"""Reference timings from numpy and PyTorch, and how the study compares with them."""
import json
import os
import shutil
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference_matmul.py")
NUMPY_SIZES = (4096,)
TORCH_SIZES = (4096, 8192)
PROBE_TIMEOUT_S = 120
RUN_TIMEOUT_S = 900
PROBES = {
    "numpy": "import numpy",
    "torch": "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)",
}
# The reference runs after each study: key in results.json 'references' -> what reference_matmul.py times.
RUNS = {
    "matmul": {"numpy": {"library": "numpy", "sizes": NUMPY_SIZES, "dtypes": None, "gpu": False},
               "torch": {"library": "torch", "sizes": TORCH_SIZES, "dtypes": ("float32",), "gpu": True}},
    "precision": {"torch_precision": {"library": "torch", "sizes": TORCH_SIZES, "gpu": True,
                                      "dtypes": ("tf32", "float16", "bfloat16", "float8_e4m3fn")}},
}
# Which study entry (impl, mode, precision) each reference result (run, dtype) is compared with;
# 'reference' names it in the report.
COMPARISONS = (
    {"study": "matmul", "impl": "cublas", "mode": "resident", "precision": "fp32",
     "run": "torch", "reference": "torch", "dtype": "float32", "sizes": TORCH_SIZES},
    {"study": "matmul", "impl": "openblas", "mode": "host", "precision": "fp32",
     "run": "numpy", "reference": "numpy", "dtype": "float32", "sizes": NUMPY_SIZES},
    *({"study": "precision", "impl": "cublas", "mode": "resident", "precision": precision,
       "run": "torch_precision", "reference": reference, "dtype": dtype, "sizes": TORCH_SIZES}
      for precision, reference, dtype in (("tf32", "torch", "tf32"), ("fp16", "torch", "float16"),
                                          ("bf16", "torch", "bfloat16"),
                                          ("fp8_e4m3", "torch._scaled_mm", "float8_e4m3fn"))),
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


def run_library(library, sizes, dtypes):
    """{"python", "results", "notes"} or {"note"} for one reference run."""
    python = find_interpreter(library)
    if python is None:
        need = "numpy" if library == "numpy" else "PyTorch with a usable CUDA device"
        return {"note": f"skipped: no Python interpreter with {need} was found"}
    what = ", ".join(dtypes) if dtypes else "float32"
    print(f"reference: {library} matmul {what} at n = {', '.join(map(str, sizes))} ({python})", flush=True)
    command = [python, SCRIPT, library, ",".join(map(str, sizes)), *([",".join(dtypes)] if dtypes else [])]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"python": python, "note": f"failed: the {library} reference took over {RUN_TIMEOUT_S} s"}
    if result.returncode != 0:
        return {"python": python, "note": f"failed ({result.returncode}): {result.stderr.strip()[-800:]}"}
    try:
        output = json.loads(result.stdout)
        return {"python": python, "results": output["results"], "notes": output.get("notes", [])}
    except (ValueError, KeyError, TypeError):
        return {"python": python, "note": "failed: the reference script printed no results"}


def run_references(study, with_gpu):
    """The reference runs that belong to a study, by their key in results.json 'references'."""
    return {key: (run_library(run["library"], run["sizes"], run["dtypes"]) if with_gpu or not run["gpu"]
                  else {"note": "skipped: the GPU part of the study was not run"})
            for key, run in RUNS.get(study, {}).items()}


def compare(references, entries, study):
    """Study median time / reference median time at each size both measured (< 1: the study is faster)."""
    rows = []
    for comparison in (c for c in COMPARISONS if c["study"] == study):
        measured = _reference_medians(references, comparison["run"])
        for n in comparison["sizes"]:
            rows.append(_compare_one(comparison, n, measured.get((n, comparison["dtype"])),
                                     _study_median(entries, comparison, n)))
    return rows


def _reference_medians(references, run):
    results = ((references or {}).get(run) or {}).get("results") or []
    return {(r.get("n"), r.get("dtype")): (r.get("time_s") or {}).get("median") for r in results if isinstance(r, dict)}


def _study_median(entries, comparison, n):
    for entry in entries:
        if (entry.get("impl"), entry.get("mode"), entry.get("precision"), entry.get("n"), entry.get("status")) == (
                comparison["impl"], comparison["mode"], comparison["precision"], n, "ok"):
            return entry["time_s"]["median"]
    return None


def _compare_one(comparison, n, reference_s, study_s):
    row = {"study": f"{comparison['impl']}/{comparison['mode']}", "precision": comparison["precision"],
           "reference": comparison["reference"], "reference_dtype": comparison["dtype"], "n": n,
           "study_median_s": study_s, "reference_median_s": reference_s, "time_ratio": None, "note": None}
    if study_s is None:
        row["note"] = f"the study has no ok {row['study']} {row['precision']} entry at n={n}"
    elif reference_s is None:
        row["note"] = f"no {comparison['reference']} {comparison['dtype']} reference at n={n}"
    else:
        row["time_ratio"] = study_s / reference_s
    return row
