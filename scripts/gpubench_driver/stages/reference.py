"""Reference timings from numpy and PyTorch, and how the study compares with them."""
import contextlib
import functools
import json
import os
import selectors
import shutil
import subprocess
import sys
from dataclasses import replace

from gpubench_driver import studies
from gpubench_driver.lib import outputs, stopping

PROBE_TIMEOUT_S = 120
RUN_TIMEOUT_S = 900
PROBES = {
    "numpy": "import numpy",
    "torch": "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)",
}
# {study: its reference runs}: the registry's records' (studies.Study.references) of the studies that have any.
RUNS = {study.name: study.references for study in studies.STUDIES if study.references}
# A reference is timed by its study's protocol (scripts/reference_timing.py), which only the binary knows.
NO_PROTOCOL = ("failed: the study binary does not publish its measurement protocol ('measurement' in its "
               "--describe), by which its reference is timed")


def find_interpreter(library):
    """The first of the candidate interpreters (one per real file) that imports the library."""
    found = {}
    for name in (os.environ.get("GPUBENCH_REFERENCE_PYTHON"), sys.executable, shutil.which("python3"),
                 "/usr/bin/python3", "/usr/local/bin/python3"):
        if name and os.access(name, os.X_OK):
            found.setdefault(os.path.realpath(name), name)
    return _first_with(library, tuple(found.values()))


@functools.cache
def _first_with(library, pythons):
    """Probed once per run (a GPU for torch): a probe imports PyTorch and starts CUDA, seconds each."""
    for python in pythons:
        try:
            probe = stopping.run([python, "-c", PROBES[library]], capture_output=True, timeout=PROBE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return python
    return None


class Worker:
    """One interpreter running reference scripts in turn (scripts/reference_worker.py) from the run's first
    reference to its end (close_workers): PyTorch imported and CUDA started once per run, not per script."""
    SCRIPT = "reference_worker.py"

    def __init__(self, python):
        self.process = stopping.popen([python, os.path.join(outputs.SCRIPTS_DIR, self.SCRIPT)], text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def run(self, script, args, timeout):
        """subprocess.CompletedProcess of the script as `python script args`; TimeoutExpired after `timeout`
        s (the worker killed: its script may still hold the GPU)."""
        try:
            self.process.stdin.write(json.dumps({"script": script, "args": list(args)}) + "\n")
            self.process.stdin.flush()
            with selectors.DefaultSelector() as selector:
                selector.register(self.process.stdout, selectors.EVENT_READ)
                if not selector.select(timeout):
                    self.close()
                    raise subprocess.TimeoutExpired(script, timeout)
            reply = json.loads(self.process.stdout.readline())
        except (OSError, ValueError):  # the worker died (a script ended its interpreter, an out-of-memory kill)
            self.close()
            return subprocess.CompletedProcess(script, self.process.returncode or 1, "",
                                               f"the reference worker ended ({self.process.returncode})")
        return subprocess.CompletedProcess(script, reply["returncode"], reply["stdout"], reply["stderr"])

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):  # a write the dead worker never read
                stream.close()

    @property
    def alive(self):
        return self.process.poll() is None


_WORKERS = {}  # {interpreter: Worker} of this run


def worker_pids():
    """The reference workers' processes: the run's own, not others competing for the GPU."""
    return {worker.process.pid for worker in _WORKERS.values() if worker.alive}


def close_workers():
    while _WORKERS:
        _WORKERS.popitem()[1].close()


def _run_script(python, run, arguments):
    """The script's CompletedProcess: in the interpreter's worker, or in a process of its own (run.own_process)."""
    script = os.path.join(outputs.SCRIPTS_DIR, run.script)
    if run.own_process:  # no GPU work runs on unwatched: stopping.run kills it with the driver
        return stopping.run([python, script, *arguments], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    worker = _WORKERS.get(python)
    if worker is None or not worker.alive:
        worker = _WORKERS[python] = Worker(python)
    return worker.run(script, arguments, RUN_TIMEOUT_S)


def run_library(run, protocol):
    """{"python", "results", "notes"} or {"note"} of one reference run, timed by the study's protocol."""
    python = find_interpreter(run.library)
    if python is None:
        need = "numpy" if run.library == "numpy" else "PyTorch with a usable CUDA device"
        return {"note": f"skipped: no Python interpreter with {need} was found"}
    print(f"reference: {run.script} {' '.join(run.args)} ({python})", flush=True)
    try:
        result = _run_script(python, run, ["--protocol", json.dumps(protocol), *run.args])
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
    """The run at only the sizes and batches the study ran (None: all); None when it ran none of them."""
    args = list(run.args)
    for position, swept in ((run.sizes_at, sizes), (run.batches_at, batches)):
        if position is None or swept is None:
            continue
        kept = [value for value in args[position].split(",") if int(value) in swept]
        if not kept:
            return None
        args[position] = ",".join(kept)
    return replace(run, args=tuple(args))


def run_references(study, with_gpu, protocol, sizes=None, batches=None):
    """The reference runs of a study, by their key in results.json 'references'; protocol: the study's (None:
    its binary published none); sizes and batches: what the study swept (None: everything)."""
    found = {}
    for key, run in RUNS.get(study, {}).items():
        run = _narrowed(run, sizes, batches)
        if run is None:
            found[key] = {"note": "skipped: the study ran none of the reference's sizes or batches"}
        elif run.gpu and not with_gpu:
            found[key] = {"note": "skipped: the GPU part of the study was not run"}
        elif protocol is None:
            found[key] = {"note": NO_PROTOCOL}
        else:
            found[key] = run_library(run, protocol)
    return found


def compare(references, entries, study):
    """Study median time / reference median time at each point both measured (< 1: the study is faster);
    a point one side measured gets a row saying what the other lacks; one neither measured, none."""
    rows = []
    for comparison in getattr(studies.BY_NAME.get(study), "comparisons", ()):
        measured = _reference_results(references, comparison)
        swept = {(entry.get("n"), entry.get("batch")) for entry in entries}
        for n, batch in comparison.points:
            if batch is not None and entries and (n, batch) not in swept and (n, batch) not in measured:
                continue  # a batch neither side ran: the study swept other batches (the suite's, say)
            study_s = _study_median(entries, comparison, n, batch)
            if study_s is None and (n, batch) not in measured:
                continue
            rows.append(_compare_one(comparison, n, batch, measured.get((n, batch)), study_s))
    return rows


def _reference_results(references, comparison):
    """{(n, batch): result} of the run's results that have the comparison's fields."""
    results = ((references or {}).get(comparison.run) or {}).get("results") or []
    return {(r.get("n"), r.get("batch")): r for r in results
            if isinstance(r, dict) and all(r.get(key) == value for key, value in comparison.result.items())}


def _study_median(entries, comparison, n, batch):
    for entry in entries:
        if (entry.get("impl"), entry.get("mode"), entry.get("precision"), entry.get("n"), entry.get("batch"),
                entry.get("status")) == (comparison.impl, comparison.mode, comparison.precision, n, batch, "ok"):
            return entry["time_s"]["median"]
    return None


def _compare_one(comparison, n, batch, result, study_s):
    """One row; result: the reference's (None: it has none there)."""
    reference_s = ((result or {}).get("time_s") or {}).get("median")
    row = {"study": f"{comparison.impl}/{comparison.mode}", "precision": comparison.precision,
           "reference": comparison.reference, "reference_dtype": comparison.result.get("dtype"),
           "reference_layout": comparison.result.get("layout"), "n": n, "batch": batch,
           "study_median_s": study_s, "reference_median_s": reference_s, "time_ratio": None,
           # Whether the reference's warm-up reached the steady state (None: not recorded).
           "reference_settled": ((result or {}).get("measurement") or {}).get("settled"),
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
