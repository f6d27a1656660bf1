"""run --gpus: the chosen studies on every selected GPU of the node at once, one driver sub-run per GPU
(its own process tree, CUDA_VISIBLE_DEVICES set to that GPU's UUID, so each binary sees it as device 0
and its NVML telemetry, matched by PCI bus id, is that GPU's), written to <out>/gpu<index>/; then one
results.json gathering them: the machine record holds every GPU, each entry carries the nvidia-smi index
of its GPU ("gpu"), and the studies' findings are those of the node's median (node_view); gpus.md sets
each GPU's headline-like entries beside the node's median and flags the outliers.

An outlier is a GPU slower than the node's median by more than the between-run noise the project
measures (noise_floor.py): the floor its own run measured for the entry's kind over its trials, else
(one trial) that kind's A/A band (2% for GPU entries of 100 us or more, 5% for the others)."""
import copy
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass

from gpubench_driver import studies
from gpubench_driver.lib import document as page, environment, noise_floor, outputs, results, stopping, verdicts
from gpubench_driver.lib.formatting import md, percent, seconds
from gpubench_driver.stages import analyse, build, journal, options as opts, render, session
from gpubench_driver.stages.collect import GPU_FIELD, node_view

ALL = "all"
SLOWER = "slower than the node"
WITHIN = "within noise"
FASTER = "faster than the node"
SUB_RUN_VARIABLE = "GPUBENCH_GPU_SUB_RUN"  # set in a sub-run: it never starts sub-runs of its own


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    pci_bus_id: str
    name: str


# --- choosing the GPUs -------------------------------------------------------------------------
def parse_selection(text):
    """--gpus: 'all' or a list of distinct nvidia-smi indices."""
    if text.strip() == ALL:
        return ALL
    indices = [int(part) for part in text.split(",") if part.strip().isdigit()]
    if len(indices) != len(text.split(",")) or len(set(indices)) != len(indices) or not indices:
        raise opts.UsageError(f"--gpus: 'all' or distinct GPU indices such as 0,1,3, got '{text}'")
    return indices


def parse_gpu_list(text):
    """nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv,noheader lines -> [Gpu]."""
    found = []
    for line in text.splitlines():
        values = [value.strip() for value in line.split(",")]
        if len(values) >= 4 and values[0].isdigit():
            found.append(Gpu(int(values[0]), values[1], values[2], ",".join(values[3:])))
    return found


def node_gpus():
    output = environment._run(["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,name", "--format=csv,noheader"])
    return parse_gpu_list(output or "")


def select(gpus, selection):
    if not gpus:
        raise opts.UsageError("--gpus: nvidia-smi lists no GPU on this machine")
    if selection == ALL:
        return gpus
    by_index = {gpu.index: gpu for gpu in gpus}
    missing = [index for index in selection if index not in by_index]
    if missing:
        raise opts.UsageError(f"--gpus: no GPU {', '.join(map(str, missing))} (nvidia-smi lists "
                              f"{', '.join(str(gpu.index) for gpu in gpus)})")
    return [by_index[index] for index in selection]


# --- the sub-runs ------------------------------------------------------------------------------
OWN_FLAGS = ("--gpus", "--out", "--run-id")  # the parent's: each sub-run gets its own


def sub_run_argv(argv, gpu, out_dir, run_id):
    """The run's command line for one GPU: without the parent's --gpus, --out and --run-id (as
    '--flag value' or '--flag=value'), with its own folder and id, the binaries already built."""
    kept, skip = [], False
    for argument in argv:
        if skip:
            skip = False
            continue
        if argument in OWN_FLAGS:
            skip = True
            continue
        if argument.startswith(tuple(flag + "=" for flag in OWN_FLAGS)) or argument == "--no-build":
            continue
        kept.append(argument)
    return [*kept, "--out", sub_run_dir(out_dir, gpu), "--run-id", f"{run_id}-gpu{gpu.index}", "--no-build"]


def sub_run_dir(out_dir, gpu):
    return os.path.join(out_dir, f"gpu{gpu.index}")


def sub_run_environment(gpu):
    """The environment of one GPU's sub-run: that GPU alone, by UUID (CUDA's own numbering of devices
    differs from nvidia-smi's), and the driver's package on the path."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "CUDA_VISIBLE_DEVICES": gpu.uuid, SUB_RUN_VARIABLE: str(gpu.index),
            "PYTHONPATH": outputs.SCRIPTS_DIR + (os.pathsep + path if path else "")}


def run(options, argv):
    """The sub-runs, all at once, then the gathered results.json and gpus.md; the exit status of the
    worst sub-run."""
    if os.environ.get(SUB_RUN_VARIABLE):
        raise opts.UsageError("--gpus: this is already one GPU's sub-run of run --gpus")
    gpus = select(node_gpus(), options.gpus)
    several = [study.name for study in studies.STUDIES  # which one GPU per sub-run defeats
               if study.gpus_together and (options.studies is None or study.name in options.studies)]
    if several:
        print(f"WARNING: {', '.join(several)} measure several GPUs together: each sub-run sees its GPU alone "
              f"(run them once, without --gpus)", flush=True)
    folder = session.prepare_out_dir(options)
    try:
        return _run_on(gpus, folder.path, options, argv)
    finally:
        folder.release()


def _run_on(gpus, out_dir, options, argv):
    """run's work, in its locked output folder."""
    if options.build:
        build.configure_and_build(session.SOURCE_DIR, options.build_dir, extra_args=options.cmake_args)
    processes = []
    for gpu in gpus:
        os.makedirs(sub_run_dir(out_dir, gpu), exist_ok=True)
        log = open(os.path.join(out_dir, f"gpu{gpu.index}.log"), "w", encoding="utf-8")
        command = [sys.executable, "-m", "gpubench_driver", *sub_run_argv(argv, gpu, out_dir, options.run_id)]
        print(f"gpu {gpu.index} ({gpu.name}, {gpu.pci_bus_id}): {' '.join(command[3:])} > {log.name}", flush=True)
        # A sub-run gets SIGTERM when this driver dies, even by kill -9: it stops its study and writes what finished.
        processes.append((gpu, subprocess.Popen(command, env=sub_run_environment(gpu), stdout=log,
                                                stderr=subprocess.STDOUT, preexec_fn=stopping.dies_with_driver()), log))
    statuses = []
    for gpu, process, log in processes:
        statuses.append(process.wait())
        log.close()
        print(f"gpu {gpu.index}: finished ({statuses[-1]})", flush=True)
    parts = [(gpu, journal.load(sub_run_dir(out_dir, gpu))) for gpu, status in zip(gpus, statuses)
             if os.path.exists(os.path.join(sub_run_dir(out_dir, gpu), "results.json"))]
    if not parts:
        print("gpubench: no GPU's run wrote results", flush=True)
        return max(statuses)
    document = gather(parts, options.run_id, argv)
    # The parent's folder and id; no `gpus`, so that run --like of this file is one run, not a sub-run per GPU again.
    document["run"]["options"].update(out=out_dir, run_id=options.run_id)
    results_path = os.path.join(out_dir, "results.json")
    results.write(document, results_path)
    report_path = write_report(document, out_dir)
    print(f"results: {results_path}\nper-GPU report: {report_path}", flush=True)
    return max(statuses)


# --- gathering ---------------------------------------------------------------------------------
def gather(parts, run_id, argv):
    """One document from [(Gpu, its run's document)]: the first run's record with every GPU in the
    machine record and the run's sub-runs, every entry tagged with its GPU, and each study's findings
    and the run's derived again on the node's median (node_view)."""
    document = copy.deepcopy(parts[0][1])
    statuses = [part["run"]["status"] for _, part in parts]
    document["run"].update(id=run_id, command_line=[document["run"]["command_line"][0], *argv],
                           status=next((s for s in ("killed", "interrupted", "partial", "empty") if s in statuses),
                                       "complete"),
                           gpus=[{"index": gpu.index, "uuid": gpu.uuid, "pci_bus_id": gpu.pci_bus_id,
                                  "run_id": part["run"]["id"], "status": part["run"]["status"]}
                                 for gpu, part in parts])
    document["machine"]["gpus"] = [record for _, part in parts for record in part["machine"].get("gpus") or []]
    document["warnings"] = [f"gpu {gpu.index}: {warning}" for gpu, part in parts for warning in part["warnings"]]
    for name, study in document["studies"].items():
        study["entries"] = [{**entry, GPU_FIELD: gpu.index} for gpu, part in parts
                            for entry in (part["studies"].get(name) or {}).get("entries") or []]
    node = node_view(document)
    analyse.derive_findings(node, (document["run"].get("options") or {}).get("refine_rounds") or 0)
    for name, study in document["studies"].items():
        study["derived"] = node["studies"][name]["derived"]
    document["findings"] = {**node["findings"], "gpus": spread(parts)}
    return document


# --- the spread and the outliers ---------------------------------------------------------------
def noise_threshold(entry, findings):
    """The relative slowdown within which a GPU is no outlier on `entry`: the floor the GPU's own run
    measured for the entry's kind (noise_floor), else the kind's A/A band."""
    target = next((target for target in noise_floor.TARGETS if target.holds(entry)), None)
    if target is None:
        return None
    rows = {row["kind"]: row for row in ((findings or {}).get("noise_floor") or {}).get("rows") or []}
    measured = rows.get(target.kind)
    return measured["floor"] if measured else target.band


def verdict(ratio, threshold):
    if ratio - 1 > threshold:
        return SLOWER
    if 1 - ratio > threshold:
        return FASTER
    return WITHIN


HEADLINE_BASIS = "headline entries (those each study compares with a reference)"
LONG_BASIS = "GPU entries of 100 us or more (the run measured no headline entry on two GPUs)"


def spread(parts):
    """findings["gpus"]: per headline-like entry (studies.is_headline; where no such entry was measured on two
    GPUs, as in a --quick run, every GPU entry of 100 us or more) measured on two GPUs or more, each GPU's
    median time beside the node's median, its ratio, the threshold and the verdict; and the GPUs flagged
    slower on any of them."""
    rows = _spread_rows(parts, studies.is_headline)
    basis = HEADLINE_BASIS
    if not rows:
        rows, basis = _spread_rows(parts, lambda study, entry: verdicts.long_gpu_entry(entry)), LONG_BASIS
    outliers = sorted({gpu["gpu"] for row in rows for gpu in row["gpus"] if gpu["verdict"] == SLOWER})
    return {"entries": rows, "basis": basis, "outliers": outliers, "gpus": sorted({gpu.index for gpu, _ in parts})}


def _spread_rows(parts, chosen):
    rows = []
    for name in dict.fromkeys(name for _, part in parts for name in part["studies"]):
        per_gpu = {}
        for gpu, part in parts:
            for entry in (part["studies"].get(name) or {}).get("entries") or []:
                if entry["status"] == "ok" and chosen(name, entry):
                    per_gpu.setdefault(entry["name"], []).append((gpu.index, entry, part.get("findings")))
        for entry_name, measured in per_gpu.items():
            if len(measured) < 2:
                continue
            node_s = statistics.median([entry["time_s"]["median"] for _, entry, _ in measured])
            gpus = []
            for index, entry, findings in measured:
                ratio = entry["time_s"]["median"] / node_s
                threshold = noise_threshold(entry, findings)
                gpus.append({"gpu": index, "median_s": entry["time_s"]["median"], "ratio_to_node": ratio,
                             "threshold": threshold, "verdict": verdict(ratio, threshold)})
            rows.append({"study": name, "entry": entry_name, "node_median_s": node_s, "gpus": gpus})
    return rows


def page_text(found):
    """gpus.md: the verdict, then per headline-like entry each GPU's time beside the node's median."""
    outliers = found["outliers"]
    verdict_text = (f"GPU {', '.join(map(str, outliers))} slower than the node's median beyond noise on at least one "
                    f"of the entries below" if outliers else "no GPU slower than the node's median beyond noise")
    blocks = [page.Heading(1, "gpubench: every GPU of the node"),
              page.paragraph(f"GPUs {', '.join(map(str, found['gpus']))}, each run at once in its own process. "
                             f"Verdict: {verdict_text}. Entries: {found['basis']}.")]
    if not found["entries"]:
        blocks.append(page.paragraph("No such entry was measured on two GPUs or more."))
    for row in found["entries"]:
        blocks += [page.Heading(2, md(row["entry"])), page.table(
            ["GPU", "median", "/ node median", "noise threshold", "verdict"],
            [[str(gpu["gpu"]), seconds(gpu["median_s"]), f"{gpu['ratio_to_node']:.3f}", percent(gpu["threshold"]),
              gpu["verdict"]] for gpu in row["gpus"]])]
    blocks.append(page.paragraph(
        f"Node median: the median of the GPUs' medians. A GPU is an outlier where its time exceeds the node's median "
        f"by more than the noise threshold: the floor its own run measured over its trials for the entry's kind "
        f"(docs/methodology.md, reproducibility), else that kind's A/A band ("
        f"{', '.join(f'{target.kind}: {percent(target.band, 0)}' for target in noise_floor.TARGETS)})."))
    return page.to_markdown(blocks)


def write_report(document, out_dir):
    """gpus.md, and the node median's summary.md, summary.html and plots (render.write_outputs)."""
    path = outputs.write_text(os.path.join(out_dir, "gpus.md"), page_text(document["findings"]["gpus"]) + "\n")
    render.write_outputs(node_view(document), out_dir)
    return path
