"""run --gpus: one driver sub-run per selected GPU at once (CUDA_VISIBLE_DEVICES its UUID) in
<out>/gpu<index>/, then one results.json gathering them (findings those of the node's median) and gpus.md,
which judges each GPU against the node's median by the noise model (docs/methodology.md)."""
import copy
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass

from gpubench_driver import studies
from gpubench_driver.lib import (document as page, environment, noise_model, noise_verdicts, outputs, results,
                                  stopping, verdicts)
from gpubench_driver.lib.formatting import md, percent, seconds
from gpubench_driver.stages import analyse, build, journal, options as opts, render, session
from gpubench_driver.stages.collect import GPU_FIELD, node_view

ALL = "all"
SLOWER = "slower than the node"
WITHIN = "within noise"
FASTER = "faster than the node"
UNDECIDED = "unclear"
DIFFER = "differs from the other GPU"
VERDICT_NAMES = {noise_verdicts.SLOWER: SLOWER, noise_verdicts.FASTER: FASTER, noise_verdicts.SAME: WITHIN,
                 noise_verdicts.UNCLEAR: UNDECIDED}
GPU_BOUND, HOST_PACED = "gpu", "host"
SUB_RUN_VARIABLE = "GPUBENCH_GPU_SUB_RUN"  # set in a sub-run: it never starts sub-runs of its own


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    pci_bus_id: str
    name: str


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


OWN_FLAGS = ("--gpus", "--out", "--run-id")  # the parent's: each sub-run gets its own


def sub_run_argv(argv, gpu, out_dir, run_id):
    """The run's command line for one GPU: the parent's --gpus, --out and --run-id replaced, the binaries
    built."""
    kept, arguments = [], iter(argv)
    for argument in arguments:
        if argument in OWN_FLAGS:
            next(arguments, None)  # its value
        elif not argument.startswith(tuple(flag + "=" for flag in OWN_FLAGS)) and argument != "--no-build":
            kept.append(argument)
    return [*kept, "--out", sub_run_dir(out_dir, gpu), "--run-id", f"{run_id}-gpu{gpu.index}", "--no-build"]


def sub_run_dir(out_dir, gpu):
    return os.path.join(out_dir, f"gpu{gpu.index}")


def sub_run_environment(gpu):
    """That GPU alone, by UUID (CUDA numbers devices otherwise than nvidia-smi), the driver's package on the
    path."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "CUDA_VISIBLE_DEVICES": gpu.uuid, SUB_RUN_VARIABLE: str(gpu.index),
            "PYTHONPATH": outputs.SCRIPTS_DIR + (os.pathsep + path if path else "")}


def start_driver(arguments, log_path, environment):
    """A driver process of one GPU, output in log_path; SIGTERM when this driver dies, even by kill -9."""
    with open(log_path, "w", encoding="utf-8") as log:  # the child holds its own copy of the file
        return stopping.popen([sys.executable, "-m", "gpubench_driver", *arguments], env=environment, stdout=log,
                              stderr=subprocess.STDOUT)


def run(options, argv):
    """The sub-runs, all at once, then the gathered results.json and gpus.md; the worst sub-run's exit status."""
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
    if options.build:
        build.configure_and_build(session.SOURCE_DIR, options.build_dir, extra_args=options.cmake_args)
    processes = []
    for gpu in gpus:
        os.makedirs(sub_run_dir(out_dir, gpu), exist_ok=True)
        log = os.path.join(out_dir, f"gpu{gpu.index}.log")
        arguments = sub_run_argv(argv, gpu, out_dir, options.run_id)
        print(f"gpu {gpu.index} ({gpu.name}, {gpu.pci_bus_id}): {' '.join(arguments)} > {log}", flush=True)
        processes.append(start_driver(arguments, log, sub_run_environment(gpu)))
    statuses = []
    for gpu, process in zip(gpus, processes):
        statuses.append(process.wait())
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


def gather(parts, run_id, argv):
    """One document from [(Gpu, its run's document)], every entry tagged with its GPU, findings of
    node_view."""
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


HEADLINE_BASIS = "headline entries (those each study compares with a reference)"
LONG_BASIS = "GPU entries of 100 us or more (the run measured no headline entry on two GPUs)"


def spread(parts, model=None):
    """findings["gpus"]: each headline entry (else GPU entry of 100 us or more) on two GPUs or more, judged;
    the GPUs slower on a GPU-bound entry (outliers, from three GPUs) and, with two, the entries they differ
    on."""
    rows = _spread_rows(parts, studies.is_headline)
    basis = HEADLINE_BASIS
    if not rows:
        rows, basis = _spread_rows(parts, lambda study, entry: verdicts.long_gpu_entry(entry)), LONG_BASIS
    found = {"entries": [row for row, _ in rows], "basis": basis, "gpus": sorted({gpu.index for gpu, _ in parts}),
             "outliers": [], "differing": [], "judged": False, "why": None}
    try:
        _judge(rows, model or noise_model.load())
    except noise_model.NoiseModelError as error:  # the node's times are still worth the page
        return {**found, "why": str(error)}
    gpu_bound = [row for row, _ in rows if row["bound"] == GPU_BOUND]
    found.update(judged=True,
                 outliers=sorted({gpu["gpu"] for row in gpu_bound for gpu in row["gpus"] if gpu["verdict"] == SLOWER}),
                 differing=[row["entry"] for row in gpu_bound if (row.get("pair") or {}).get("verdict") == DIFFER])
    return found


def _spread_rows(parts, chosen):
    """[(row, [(GPU index, entry)])] per chosen entry measured on two GPUs or more."""
    rows = []
    for name in dict.fromkeys(name for _, part in parts for name in part["studies"]):
        per_gpu = {}
        for gpu, part in parts:
            for entry in (part["studies"].get(name) or {}).get("entries") or []:
                if entry["status"] == "ok" and chosen(name, entry):
                    per_gpu.setdefault(entry["name"], []).append((gpu.index, entry))
        for entry_name, measured in per_gpu.items():
            if len(measured) < 2:
                continue
            node_s = statistics.median([entry["time_s"]["median"] for _, entry in measured])
            gpus = [{"gpu": index, "median_s": entry["time_s"]["median"],
                     "ratio_to_node": entry["time_s"]["median"] / node_s,
                     "trials": len(noise_verdicts.side_of(entry).medians)} for index, entry in measured]
            bound = HOST_PACED if noise_model.host_paced(measured[0][1]) else GPU_BOUND
            rows.append(({"study": name, "entry": entry_name, "bound": bound, "node_median_s": node_s, "gpus": gpus},
                         measured))
    return rows


def _judge(rows, model):
    """Each row's verdicts, in place: two GPUs the second against the first, more each against the node's
    median."""
    comparisons, families, places = [], [], []
    for row, measured in rows:
        key = (row["study"], row["entry"])
        kind, _ = noise_verdicts.kind_in(model, measured[0][1], row["node_median_s"], key)
        sides = [noise_verdicts.side_of(entry) for _, entry in measured]
        if len(measured) == 2:
            comparisons.append(noise_verdicts.compare(model, key, kind, *sides))
            places.append((row, None))
        else:
            fewest = min(len(side.medians) for side in sides)
            for index, side in enumerate(sides):
                comparisons.append(noise_verdicts.against_reference(model, key, kind, side, row["node_median_s"],
                                                                    len(sides), fewest))
                places.append((row, index))
        families += [f"{row['study']} ({row['bound']})"] * (len(comparisons) - len(families))
    for (row, index), decided in zip(places, noise_verdicts.decide(comparisons, families, advise=False)):
        c = decided.comparison
        judged = {"ratio": c.ratio, "interval": [c.low, c.high], "threshold": noise_verdicts.beyond_noise(c),
                  "kind": c.kind}
        if index is None:
            differ = decided.verdict in (noise_verdicts.FASTER, noise_verdicts.SLOWER)
            row["pair"] = {**judged, "verdict": DIFFER if differ else VERDICT_NAMES[decided.verdict]}
            for gpu in row["gpus"]:
                gpu["verdict"] = row["pair"]["verdict"]
        else:
            row["gpus"][index].update(interval=judged["interval"], threshold=judged["threshold"], kind=c.kind,
                                      verdict=VERDICT_NAMES[decided.verdict])


def _verdict_text(found):
    judged = [row for row in found["entries"] if row["bound"] == GPU_BOUND]
    if not found["judged"]:
        return f"not judged ({found['why']})"
    if len(found["gpus"]) == 2:
        if found["differing"]:
            return (f"GPUs {found['gpus'][0]} and {found['gpus'][1]} differ beyond noise on {len(found['differing'])} "
                    f"of {len(judged)} GPU-bound entries; two GPUs cannot tell which of them is off (no majority): set "
                    f"each GPU's run against the health check's expected ranges (gpu<index>/summary.md)")
        unclear = sum((row.get("pair") or {}).get("verdict") == UNDECIDED for row in judged)
        return (f"GPUs {found['gpus'][0]} and {found['gpus'][1]} differ beyond noise on none of the {len(judged)} "
                f"GPU-bound entries" + (f" ({unclear} unclear)" if unclear else "")
                + " (two GPUs: were both off alike, only the health check would tell)")
    if found["outliers"]:
        return (f"GPU {', '.join(map(str, found['outliers']))} slower than the node's median beyond noise on at least "
                f"one of the GPU-bound entries below")
    return f"no GPU slower than the node's median beyond noise on the {len(judged)} GPU-bound entries"


def _entry_blocks(row, judged):
    pair = row.get("pair")  # two GPUs: the second against the first, under the table
    per_gpu = judged and not pair
    header = ["GPU", "median", "/ node median"] + (["interval", "beyond noise from", "verdict"] if per_gpu else [])
    rows = [[str(gpu["gpu"]), seconds(gpu["median_s"]), f"{gpu['ratio_to_node']:.3f}"]
            + ([f"{gpu['interval'][0]:.3f}–{gpu['interval'][1]:.3f}", percent(gpu["threshold"]), gpu["verdict"]]
               if per_gpu else []) for gpu in row["gpus"]]
    blocks = [page.Heading(3, md(row["entry"])), page.table(header, rows)]
    if pair:
        first, second = row["gpus"][0]["gpu"], row["gpus"][1]["gpu"]
        blocks.append(page.paragraph(
            f"GPU {second} / GPU {first}: {pair['ratio']:.3f} ({pair['interval'][0]:.3f}–{pair['interval'][1]:.3f}), "
            f"beyond noise from {percent(pair['threshold'])}: {pair['verdict']}."))
    return blocks


def page_text(found):
    """gpus.md: the verdict, then per entry each GPU's time beside the node's median, GPU-bound ones first."""
    blocks = [page.Heading(1, "gpubench: every GPU of the node"),
              page.paragraph(f"GPUs {', '.join(map(str, found['gpus']))}, each run at once in its own process. "
                             f"Verdict: {_verdict_text(found)}. Entries: {found['basis']}.")]
    if not found["entries"]:
        blocks.append(page.paragraph("No such entry was measured on two GPUs or more."))
    for bound, title, note in (
            (GPU_BOUND, "GPU-bound entries", "Device-timed work on the GPU's own memory (and its peer links): "
                                             "where a GPU differs from the others, the GPU does."),
            (HOST_PACED, "Host-paced entries (the host's)", "CPU work, calls timed on the host clock, copies from "
                                                           "pageable memory: the host's CPU and memory pace them, so "
                                                           "a difference here is the host's and names no GPU.")):
        rows = [row for row in found["entries"] if row["bound"] == bound]
        if rows:
            blocks += [page.Heading(2, title), page.paragraph(note)]
            for row in rows:
                blocks += _entry_blocks(row, found["judged"])
    blocks.append(page.paragraph(
        "Node median: the median of the GPUs' medians. Each GPU is a run of its own; with three GPUs or more each "
        "is set against the node's median (which one GPU does not move), with two the second against the first. "
        "The interval "
        f"({noise_verdicts.CONFIDENCE:.0%}) and the verdict are the noise model's (scripts/noise_model.json, "
        "docs/methodology.md, The noise model): the entry's width between trials and between runs, fitted on A/A "
        "runs; slower or faster where the interval lies beyond the band of the entry's kind ("
        + ", ".join(f"{kind} {percent(band, 0)}" for kind, band in noise_verdicts.BANDS.items())
        + f", the rest {percent(noise_verdicts.DEFAULT_BAND, 0)}) and the entry is a discovery of its study's "
          f"family; 'beyond noise from' is the slowdown from which that would be so."))
    return page.to_markdown(blocks)


def write_report(document, out_dir):
    """gpus.md, and the node median's summary.md, summary.html and plots (render.write_outputs)."""
    path = outputs.write_text(os.path.join(out_dir, "gpus.md"), page_text(document["findings"]["gpus"]) + "\n")
    render.write_outputs(node_view(document), out_dir)
    return path
