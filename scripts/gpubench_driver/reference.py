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
# Which study entry each reference is compared with.
COMPARISONS = (
    {"study_impl": "cublas", "study_mode": "resident", "library": "torch", "sizes": TORCH_SIZES},
    {"study_impl": "openblas", "study_mode": "host", "library": "numpy", "sizes": NUMPY_SIZES},
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


def run_library(library, sizes):
    """{"python", "results"} or {"note"} for one library."""
    python = find_interpreter(library)
    if python is None:
        need = "numpy" if library == "numpy" else "PyTorch with a usable CUDA device"
        return {"note": f"skipped: no Python interpreter with {need} was found"}
    print(f"reference: {library} matmul FP32 at n = {', '.join(map(str, sizes))} ({python})", flush=True)
    try:
        result = subprocess.run([python, SCRIPT, library, ",".join(map(str, sizes))], capture_output=True,
                                text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"python": python, "note": f"failed: the {library} reference took over {RUN_TIMEOUT_S} s"}
    if result.returncode != 0:
        return {"python": python, "note": f"failed ({result.returncode}): {result.stderr.strip()[-800:]}"}
    try:
        return {"python": python, "results": json.loads(result.stdout)["results"]}
    except (ValueError, KeyError, TypeError):
        return {"python": python, "note": "failed: the reference script printed no results"}


def run_references(with_gpu):
    references = {"numpy": run_library("numpy", NUMPY_SIZES)}
    references["torch"] = (run_library("torch", TORCH_SIZES) if with_gpu
                           else {"note": "skipped: the GPU part of the study was not run"})
    return references


def compare(references, entries):
    """Study median time / reference median time at each size both measured (< 1: the study is faster)."""
    rows = []
    for comparison in COMPARISONS:
        measured = _reference_medians(references, comparison["library"])
        for n in comparison["sizes"]:
            rows.append(_compare_one(comparison, n, measured.get(n), _study_median(entries, comparison, n)))
    return rows


def _reference_medians(references, library):
    results = ((references or {}).get(library) or {}).get("results") or []
    return {r.get("n"): (r.get("time_s") or {}).get("median") for r in results if isinstance(r, dict)}


def _study_median(entries, comparison, n):
    for entry in entries:
        if (entry.get("impl"), entry.get("mode"), entry.get("n"), entry.get("status")) == (
                comparison["study_impl"], comparison["study_mode"], n, "ok"):
            return entry["time_s"]["median"]
    return None


def _compare_one(comparison, n, reference_s, study_s):
    row = {"study": f"{comparison['study_impl']}/{comparison['study_mode']}", "reference": comparison["library"],
           "n": n, "study_median_s": study_s, "reference_median_s": reference_s, "time_ratio": None, "note": None}
    if study_s is None:
        row["note"] = f"the study has no ok {row['study']} entry at n={n}"
    elif reference_s is None:
        row["note"] = f"no {comparison['library']} reference at n={n}"
    else:
        row["time_ratio"] = study_s / reference_s
    return row
