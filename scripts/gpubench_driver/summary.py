"""summary.md: the findings of one run in a page of Markdown."""
import functools
import os

from gpubench_driver import derive, derive_batch, derive_run, derive_transfer, gbench, plots, reference
from gpubench_driver.formatting import byte_size, joules, md, rate, ratio, scientific, seconds

HEADLINE_SIZES = (200, 1024, 4096, 8192)
PRECISION_TABLE_SIZE = 4096  # and the largest size measured
AXIS_TITLES = {"impl": "implementation", "mode": "mode", "precision": "precision"}


def machine_line(document):
    cpu = document["machine"].get("cpu") or {}
    memory = document["machine"].get("memory_total_bytes")
    parts = [f"CPU {md(cpu.get('model'))} ({cpu.get('sockets')} sockets, {cpu.get('cores')} cores, "
             f"{cpu.get('threads')} threads)" + (f", {memory / 2 ** 30:.0f} GiB memory" if memory else ""),
             f"{md(document['machine'].get('os'))}, {md(document['machine'].get('kernel'))}"]
    devices = ((document["software"].get("gpubench_env") or {}).get("cuda") or {}).get("devices") or []
    for index, gpu in enumerate(document["machine"].get("gpus") or []):
        parts.append("GPU " + _gpu_description(gpu, devices[index] if index < len(devices) else {}))
    blas = document["software"].get("openblas") or {}
    parts.append(f"OpenBLAS {md(blas.get('version'))} (core {md(blas.get('core'))}, "
                 f"{md(blas.get('threads'))} threads)")
    return "; ".join(parts)


def _gpu_description(smi, device):
    """nvidia-smi's view and the CUDA runtime's view of one GPU, in a phrase."""
    facts = [f"{md(device['multiprocessors'])} SMs" if device.get("multiprocessors") else None,
             f"compute capability {md(device['compute_capability'])}" if device.get("compute_capability") else None,
             f"{smi['memory.total'] / 1024:.0f} GiB" if smi.get("memory.total") else None,
             f"max SM clock {smi['clocks.max.sm']} MHz" if smi.get("clocks.max.sm") else None,
             f"power limit {smi['power.limit']:.0f} W" if smi.get("power.limit") else None,
             (f"PCIe Gen{smi['pcie.link.gen.current']} x{smi['pcie.link.width.current']}"
              if smi.get("pcie.link.gen.current") and smi.get("pcie.link.width.current") else None),
             f"ECC {md(smi['ecc.mode.current'])}" if smi.get("ecc.mode.current") else None,
             f"driver {md(smi.get('driver_version'))}"]
    return f"{md(smi.get('name'))} ({', '.join(fact for fact in facts if fact)})"


def _section(title, lines):
    return [f"## {title}", "", *lines, ""]


def _header(document):
    run = document["run"]
    git = run.get("git") or {}
    revision = md(git.get("revision")) + (" (uncommitted changes)" if git.get("dirty") else "")
    return [f"# gpubench run {md(run['id'])}", "",
            f"- Status: {md(run['status'])}; started {md(run['started'])}, finished {md(run.get('finished'))}",
            f"- Git revision: {revision}",
            f"- Machine: {machine_line(document)}", ""]


def _warnings(document):
    lines = [f"- {md(warning)}" for warning in document["warnings"]]
    if not document["gpu"].get("available"):
        lines.append(f"- The GPU part was not run: {md(document['gpu'].get('reason'))}")
    return _section("Warnings", lines) if lines else []


def _crossover_cells(found, axis="n"):
    """Estimate, bracket, GPU implementation and method of a crossover along the axis ('n' or 'batch')."""
    bracket = f"{found.get('lower') or 'n/a'} .. {found.get('upper') or 'n/a'}"
    estimate = found.get(f"estimate_{axis}") or found.get("upper") or "none"
    how = md(found.get("method")) + (f" ({md(found['note'])})" if found.get("note") else "")
    return f"{estimate} | {bracket} | {md(found.get('gpu_impl'))} | {how} |"


def _crossovers(derived):
    lines = ["| GPU mode | crossover n | bracket | GPU impl | how |", "|---|---|---|---|---|"]
    lines += [f"| {md(found['mode'])} | {_crossover_cells(found)}" for found in derived.get("crossovers", [])]
    if len(lines) == 2:
        return _section("Crossover (GPU faster than the best CPU)", ["No GPU entries were measured."])
    return _section("Crossover (GPU faster than the best CPU)", lines)


def _headline_speedups(entries):
    best_cpu = derive.best_by_size(derive.cpu_entries(entries))
    lines = ["| n | best CPU | GPU mode | best GPU | speedup |", "|---|---|---|---|---|"]
    for n in HEADLINE_SIZES:
        for mode in derive.gpu_modes(entries):
            gpu = derive.best_by_size(derive.gpu_entries(entries, mode)).get(n)
            cpu = best_cpu.get(n)
            if gpu and cpu:
                lines.append(f"| {n} | {md(cpu['impl'])} {seconds(cpu['time_s']['median'])} | {md(mode)} | "
                             f"{md(gpu['impl'])} {seconds(gpu['time_s']['median'])} | "
                             f"{ratio(cpu['time_s']['median'] / gpu['time_s']['median'])} |")
    if len(lines) == 2:
        return []
    return _section(f"Speedups at n = {', '.join(map(str, HEADLINE_SIZES))} (where measured)", lines)


def _best_rates(derived, axes=("impl", "mode"), title="Best rates"):
    lines = ["| " + " | ".join(AXIS_TITLES[axis] for axis in axes) + " | best rate | at n |",
             "|" + "---|" * (len(axes) + 2)]
    lines += ["| " + " | ".join(md(row[axis]) for axis in axes) + f" | {rate(row['flop_per_s'])} | {row['n']} |"
              for row in derived.get("best_rates", [])]
    return _section(title, lines)


def _caps(study):
    capped = [impl for impl in study["implementations"] if isinstance(impl, dict) and impl.get("max_size")]
    lines = [f"- {md(impl.get('id'))}: run up to n={md(impl['max_size'])} ({md(impl.get('cap_reason'))})"
             for impl in capped]
    return _section("Size caps", lines or ["No implementation is capped."])


def _failures(study):
    lines = [f"- {md(entry['name'])}: {md(entry['status'])}: {md(entry.get('message'))}"
             for entry in study["entries"] if entry["status"] != "ok"]
    lines += _invocation_lines(study)
    return _section("Skipped and failed entries", lines) if lines else []


def _invocation_lines(study):
    return [f"- the benchmark process at n={invocation.get('sizes')} {md(invocation.get('exit'))}"
            for invocation in study["invocations"]]


def _run_notes(name, run):
    """A reference run's note (skipped, failed) and its per-dtype notes."""
    return [f"- {md(name)}: {md(note)}" for note in [run.get("note"), *(run.get("notes") or [])] if note]


def _references(derived, references):
    if references is None:
        return _section("Reference libraries", ["Not run (--no-reference or --cpu-only)."])
    lines = []
    for name, run in references.items():
        if name in reference.RUNS["matmul"]:
            lines += _run_notes(name, run) + [_reference_line(result) for result in run.get("results") or []]
    for row in derived.get("reference_comparison", []):
        if row["time_ratio"] is None:
            lines.append(f"- {md(row['study'])} vs {md(row['reference'])} at n={row['n']}: {md(row['note'])}")
        else:
            lines.append(f"- {md(row['study'])} vs {md(row['reference'])} at n={row['n']}: "
                         f"{seconds(row['study_median_s'])} vs {seconds(row['reference_median_s'])} "
                         f"(time ratio {row['time_ratio']:.2f}; below 1: the study is faster)")
    return _section("Reference libraries", lines) if lines else []


def _reference_line(result):
    time_s = result.get("time_s") or {}
    blas = result.get("blas") if isinstance(result.get("blas"), dict) else {}
    library = f"{md(result.get('library'))} {md(result.get('version'))}"
    if blas.get("name"):
        library += f" (BLAS {md(blas.get('name'))} {md(blas.get('version'))})"
    return (f"- {library} at n={result.get('n')}: median {seconds(time_s.get('median'))} "
            f"(min {seconds(time_s.get('min'))}, max {seconds(time_s.get('max'))}), {rate(result.get('flop_per_s'))}")


def _plots(plot_paths, out_dir):
    if plot_paths is None:
        return _section("Plots", ["Plots were skipped: matplotlib is not installed for this Python "
                                  "(install python3-matplotlib)."])
    return _section("Plots", [f"- `{os.path.relpath(path, out_dir)}`" for path in plot_paths])


def _matmul_sections(study, document):
    derived = study["derived"]
    return (_crossovers(derived) + _headline_speedups(study["entries"]) + _best_rates(derived)
            + _caps(study) + _failures(study) + _references(derived, document.get("references")))


# --- precision study ----------------------------------------------------------------
def _claim(derived):
    claim = derived.get("tensor_core_claim")
    if not claim:
        return []
    found = [f"{md(result['precision'])} up to {ratio(result['max_speedup'])} (n={result['n']})"
             if result["max_speedup"] is not None else f"{md(result['precision'])} not measured"
             for result in claim["results"]]
    return _section("Precision: is 16-bit tensor-core math up to 8x faster than FP32?", [
        f"- \"{md(claim['claim'])}\": measured with {md(claim['impl'])} ({md(claim['mode'])}) over "
        f"{md(claim['fp32'])} at the same size, the largest speedup: {', '.join(found)}."])


def _precision_order(study):
    """Sort key of a row: GPU first, then implementation, mode, and the study's order of precisions."""
    order = [p.get("id") for p in study.get("precisions") or [] if isinstance(p, dict)]
    return lambda row: (row["device"] != "gpu", row["impl"], row["mode"],
                        order.index(row["precision"]) if row["precision"] in order else len(order), row["precision"])


def _precision_table(study, n, title):
    rows = sorted((row for row in study["derived"].get("speedups_over_fp32", []) if row["n"] == n),
                  key=_precision_order(study))
    lines = ["| precision | impl | mode | median time | rate | speedup over FP32 | rel. error (uniform) | "
             "rel. error (normal) | tolerance |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {md(row['precision'])} | {md(row['impl'])} | {md(row['mode'])} | {seconds(row['median_s'])} | "
              f"{rate(row['flop_per_s'])} | {ratio(row['speedup_over_fp32'])} | {scientific(row['rel_fro_error'])} | "
              f"{scientific(row['rel_fro_error_normal'])} | {scientific(row['tolerance'])} |" for row in rows]
    ours = [f"- {md(row['impl'])} {md(row['precision'])} ({md(row['mode'])}) runs at "
            f"{row['fraction_of_cublas_rate']:.0%} of cublas {md(row['precision'])}'s rate"
            for row in rows if row["fraction_of_cublas_rate"] is not None]
    lines += ["", *ours, *([""] if ours else []),
              "Speedup over FP32: the FP32 time of the device's library (openblas on the CPU, cublas on the GPU) "
              "in the same mode and size over this time; errors: relative Frobenius error against FP64."]
    return _section(title, lines)


def _precision_tables(study):
    measured = {row["n"] for row in study["derived"].get("speedups_over_fp32", [])}
    if not measured:
        return _section("Precision: speed and accuracy", ["No precision entry was measured."])
    titles = {n: f"Precision: speed and accuracy at n = {n}" for n in (PRECISION_TABLE_SIZE,) if n in measured}
    titles[max(measured)] = f"Precision: speed and accuracy at n = {max(measured)} (largest measured)"
    return [line for n, title in sorted(titles.items()) for line in _precision_table(study, n, title)]


def _failure_text(entry):
    message = entry.get("message") or ""
    return message if message.startswith((gbench.SKIP_PREFIX, "wrong result: ")) else f"{entry['status']}: {message}"


def _where(points):
    """{(n, batch)} -> 'n = 4096, 8192', or with a batch axis 'n = 64 (batch 512), 256 (batch 8, 512)'."""
    batches = {}
    for n, batch in sorted(points, key=lambda point: (point[0] or 0, point[1] or 0)):
        batches.setdefault(n, []).append(batch)
    return "n = " + ", ".join(str(n) + (f" (batch {', '.join(map(str, found))})" if found[0] is not None else "")
                              for n, found in batches.items())


def _grouped_failures(study, title):
    """Failed entries grouped by implementation, precision and message: one line per reason,
    not one per size, batch and mode."""
    groups = {}
    for entry in study["entries"]:
        if entry["status"] != "ok":
            # a name outside the pattern has no axes: "n/a" keeps them sortable and readable
            key = (entry["impl"] or "n/a", entry["precision"] or "n/a", _failure_text(entry))
            group = groups.setdefault(key, (set(), set()))
            group[0].add(entry["mode"] or "n/a")
            group[1].add((entry["n"], entry.get("batch")))
    lines = [f"- {md(impl)} {md(precision)} ({md(', '.join(sorted(modes)))}; {_where(points)}): {md(text)}"
             for (impl, precision, text), (modes, points) in sorted(groups.items())]
    lines += _invocation_lines(study)
    return _section(title, lines) if lines else []


def _cpu_notes(study):
    """Per precision the CPU ran or skipped: why it was not measured, or the binary's caveat
    about it on this CPU (e.g. BF16 without BF16 instructions)."""
    notes = {p.get("id"): p.get("cpu_note") for p in study.get("precisions") or [] if isinstance(p, dict)}
    lines = []
    for precision in dict.fromkeys(e["precision"] for e in study["entries"] if e.get("device") == "cpu"):
        entries = [e for e in study["entries"] if e.get("device") == "cpu" and e["precision"] == precision]
        if not any(entry["status"] == "ok" for entry in entries):
            lines.append(f"- {md(precision)}: {md(_failure_text(entries[0]))}")
        elif notes.get(precision):
            lines.append(f"- {md(precision)}: {md(notes[precision])}")
    return _section("Precision: on the CPU", lines) if lines else []


def _precision_references(derived, references):
    title = "Precision: reference libraries"
    if references is None:
        return _section(title, ["Not run (--no-reference or --cpu-only)."])
    lines = []
    for name, run in references.items():
        if name in reference.RUNS["precision"]:
            lines += _run_notes(name, run)
            lines += dict.fromkeys(  # one line per dtype, not per size
                f"- {md(name)}: {md(result.get('library'))} {md(result.get('version'))} on "
                f"{md(result.get('device'))}, {md(result.get('dtype'))} through {md(result.get('op'))}"
                + (f" (output {md(result['out_dtype'])}, scales {md(result.get('scaling'))})"
                   if result.get("out_dtype") else "")
                for result in run.get("results") or [])
    rows = derived.get("reference_comparison", [])
    if rows:
        lines += ["", "| precision | n | study | reference | time ratio |", "|---|---|---|---|---|"]
        lines += [f"| {md(row['precision'])} | {row['n']} | {md(row['study'])} {seconds(row['study_median_s'])} | "
                  f"{md(row['reference'])} {md(row['reference_dtype'])} {seconds(row['reference_median_s'])} | "
                  + (f"{row['time_ratio']:.2f} |" if row["time_ratio"] is not None else f"n/a: {md(row['note'])} |")
                  for row in rows]
        lines += ["", "Time ratio: study median / reference median; below 1 the study is faster."]
    return _section(title, lines) if lines else []


def _precision_sections(study, document):
    derived = study["derived"]
    return (_claim(derived) + _precision_tables(study)
            + _best_rates(derived, ("precision", "impl", "mode"), "Precision: best rates")
            + _grouped_failures(study, "Precision: skipped and failed entries") + _cpu_notes(study)
            + _precision_references(derived, document.get("references")))


# --- studies with a batch axis ---------------------------------------------------------
def _series_axes(study):
    """What tells a batch study's series apart in its tables: implementation and mode, and the
    precision where the study measured more than one."""
    precisions = {entry["precision"] for entry in study["entries"]}
    return ("impl", "mode", "precision") if len(precisions) > 1 else ("impl", "mode")


def _axis_titles(axes):
    return " | ".join(AXIS_TITLES[axis] for axis in axes)


def _axis_cells(row, axes):
    return " | ".join(md(row[axis]) for axis in axes)


def _batch_table(rows, axes, cell, size_name):
    """Series down (size, then the axes), batches across: cell(point) where a series measured the
    batch, '–' where it did not."""
    batches = sorted({point["batch"] for row in rows for point in row["points"]})
    lines = [f"| {md(size_name)} | {_axis_titles(axes)} | " + " | ".join(f"b={batch}" for batch in batches) + " |",
             "|" + "---|" * (1 + len(axes) + len(batches))]
    for row in rows:
        at = {point["batch"]: point for point in row["points"]}
        lines.append(f"| {row['n']} | {_axis_cells(row, axes)} | "
                     + " | ".join(cell(at[batch]) if batch in at else "–" for batch in batches) + " |")
    return lines


def _layer_lines(study, spec):
    """What each swept size is, where the study describes its sizes as layers."""
    return [f"- {md(derive_batch.size_text(spec, study['layers'], n))}" for n in study.get("sizes") or []]


def _batch_crossovers(study, spec):
    title = f"{spec.title}: crossover batch (GPU faster than the best CPU)"
    swept = (f"Swept {spec.size_name} = {', '.join(map(str, study.get('sizes') or []))} and batches "
             f"{', '.join(map(str, study.get('batches') or []))} ({spec.batch_meaning}).")
    lines = [swept, *([""] + _layer_lines(study, spec) if study.get("layers") else []), ""]
    crossovers = study["derived"].get("crossovers") or []
    if not crossovers:
        return _section(title, lines + ["No GPU entries were measured."])
    with_precision = "precision" in _series_axes(study)
    if with_precision:
        cpu = sorted({str(e["precision"]) for e in study["entries"] if e.get("device") == "cpu"})
        lines += [f"Each GPU precision against the fastest CPU implementation at the same batch (the CPU runs "
                  f"{md(', '.join(cpu))}).", ""]
    lines += [f"| {md(spec.size_name)} | " + ("precision | " if with_precision else "")
              + "GPU mode | crossover batch | bracket | GPU impl | how |",
              "|---|---|---|---|---|---|" + ("---|" if with_precision else "")]
    lines += [f"| {found['n']} | " + (f"{md(found['precision'])} | " if with_precision else "")
              + f"{md(found['mode'])} | {_crossover_cells(found, 'batch')}" for found in crossovers]
    return _section(title, lines)


def _ratio_at(row):
    return f"{ratio(row['ratio'])} (batch {row['batch']})" if row else "n/a"


def _loop_ratios(derived, spec):
    found = derived.get("loop_ratios") or {}
    baseline, rows = found.get("baseline"), found.get("rows") or []
    if not rows:
        return []
    impls = [impl for impl in spec.against_loop if any(row["impl"] == impl for row in rows)]
    lines = [f"- {md(row['impl'])} ({md(row['mode'])}): up to {ratio(row['ratio'])} the {spec.unit}/s of "
             f"{md(baseline)} (n={row['n']}, batch={row['batch']})" for row in found.get("largest", [])]
    lines += ["", "| n | mode | " + " | ".join(f"{md(impl)} / {md(baseline)}: largest | at the largest batch"
                                               for impl in impls) + " |", "|---|---|" + "---|---|" * len(impls)]
    for n, mode in dict.fromkeys((row["n"], row["mode"]) for row in rows):
        cells = []
        for impl in impls:
            measured = [row for row in rows if (row["n"], row["mode"], row["impl"]) == (n, mode, impl)]
            cells += [_ratio_at(max(measured, key=lambda row: row["ratio"], default=None)),
                      _ratio_at(max(measured, key=lambda row: row["batch"], default=None))]
        lines.append(f"| {n} | {md(mode)} | " + " | ".join(cells) + " |")
    lines += ["", f"Ratio: {spec.unit}/s over those of {md(baseline)} at the same n, mode and batch "
                  f"({md(baseline)}'s median time over theirs)."]
    return _section(f"{spec.title}: one batched call against a loop of cuBLAS calls", lines)


def _saturation_cell(row):
    if row["saturation_batch"] is None:
        return f"none: {md(row['saturation_note'])}"
    return str(row["saturation_batch"])


def _throughput(study, spec):
    rows, axes = study["derived"].get("throughput") or [], _series_axes(study)
    best = f"best_{derive_batch.rate_key(spec)}"
    lines = [f"| {md(spec.size_name)} | {_axis_titles(axes)} | best rate | FLOP/s there | at batch | "
             f"saturation batch |", "|" + "---|" * (len(axes) + 5)]
    lines += [f"| {row['n']} | {_axis_cells(row, axes)} | {rate(row[best], f'{spec.unit}/s', ' ')} | "
              f"{rate(row['best_flop_per_s'])} | {row['best_batch']} | {_saturation_cell(row)} |" for row in rows]
    lines += ["", "Saturation batch: the smallest batch b from which the next measured batch gains less than "
                  f"{derive_batch.SATURATION_GAIN:.0%} in {spec.unit}/s per doubling (a step of 2^k counts as k "
                  "doublings)."]
    return _section(f"{spec.title}: throughput and saturation", lines if rows else ["No entry was measured."])


def _epoch_times(study, spec):
    found = study["derived"].get("epoch_times")
    if not found or not found["rows"]:
        return []
    lines = _batch_table(found["rows"], _series_axes(study), lambda point: seconds(point["epoch_s"]), spec.size_name)
    lines += ["", f"Seconds per epoch of {found['samples']:,} samples at each batch b: the epoch over the samples/s "
                  f"measured at b (one training step per batch)."]
    return _section(f"{spec.title}: time per epoch of {found['samples']:,} samples", lines)


def _per_item(row, spec):
    return f"{byte_size(row[f'bytes_per_{spec.item}'])} (batch {row['batch']})"


def _memory(study, spec):
    series = {}
    for row in study["derived"].get("device_memory") or []:
        series.setdefault((row["n"], row["impl"], row["mode"], row.get("precision")), []).append(row)  # in batch order
    if not series:
        return []
    axes = _series_axes(study)
    operands = f" operands ({spec.operands}) |" if spec.operands else ""
    lines = [f"| {md(spec.size_name)} | {_axis_titles(axes)} | per {spec.item}, smallest batch | per {spec.item}, "
             f"largest batch |{operands} total, largest batch |", "|" + "---|" * (len(axes) + 4 + bool(operands))]
    for rows in series.values():
        operand_cell = f" {byte_size(rows[0][f'operand_bytes_per_{spec.item}'])} |" if operands else ""
        lines.append(f"| {rows[0]['n']} | {_axis_cells(rows[0], axes)} | {_per_item(rows[0], spec)} | "
                     f"{_per_item(rows[-1], spec)} |{operand_cell} {byte_size(rows[-1]['device_bytes'])} |")
    lines += ["", f"Per {spec.item}: the GPU memory the entry took (measured by the binary as the drop in free device "
                  f"memory when it allocated) over the batch"
                  + (f"; operands: what the {spec.operands} of one {spec.item} take" if operands else "")
                  + "; total: that memory at the largest batch."]
    return _section(f"{spec.title}: device memory per {spec.item}", lines)


def _utilization_cell(point):
    samples = point[gbench.UTILIZATION_SAMPLES]
    if not samples:
        return "no reading"
    mean = point["gpu_util_mean"]
    return f"{mean:.0f}% ({samples:.0f})" if mean is not None else f"n/a ({samples:.0f})"


def _utilization(study, spec):
    found = study["derived"].get("utilization")
    if found is None:
        return []
    title = f"{spec.title}: GPU utilization against batch (NVML)"
    if not found["available"]:
        return _section(title, [f"Not sampled: {md(found['reason'])}."])
    rows = found["rows"]
    if not rows:
        return _section(title, ["No GPU entry was measured."])
    lines = _batch_table(rows, _series_axes(study), _utilization_cell, spec.size_name)
    lines += ["", "Each cell: NVML's GPU utilization (the percent of time a kernel ran), averaged over its readings "
                  "inside the timed loops of every repetition, and in parentheses how many readings; \"no reading\": "
                  "each loop was shorter than NVML's sampling period (1/6 s to 1 s; a longer --min-time helps). "
                  "The maxima and memory utilization are in results.json."]
    return _section(title, lines)


def _chosen_algorithms(study, spec):
    rows = study["derived"].get("chosen_algorithms")
    if rows is None:
        return []
    title = f"{spec.title}: algorithm chosen and its workspace"
    library = study.get("cudnn") or {}
    lines = ([f"cuDNN {md(library.get('version'))}." if library.get("available")
              else f"cuDNN not used: {md(library.get('reason'))}.", ""] if library else [])
    if not rows:
        return _section(title, lines + ["No GPU entry reported an algorithm."])
    cells = {}
    for row in rows:  # both modes of a configuration: one cell, each distinct choice once
        name = row["algorithm_name"] or f"algorithm {row['algorithm']:.0f}"
        cells.setdefault((row["n"], row["impl"], row["precision"]), {}).setdefault(row["batch"], []).append(
            f"{md(name)}, {byte_size(row['workspace_bytes'])}")
    table = [{"n": n, "impl": impl, "precision": precision,
              "points": [{"batch": batch, "text": " / ".join(dict.fromkeys(texts))} for batch, texts in at.items()]}
             for (n, impl, precision), at in cells.items()]
    lines += _batch_table(table, ("impl", "precision"), lambda point: point["text"], spec.size_name)
    lines += ["", "Each cell: the algorithm chosen for the configuration and the workspace it needs; the resident "
                  "and transfer\\_pinned entries of a configuration are one cell (two choices, when they differ, "
                  "separated by /, resident first)."]
    return _section(title, lines)


def _comparison_cell(row):
    if row["time_ratio"] is None:
        return "no study entry" if row["study_median_s"] is None else "no reference"
    return f"{row['time_ratio']:.2f} ({seconds(row['study_median_s'])} vs {seconds(row['reference_median_s'])})"


def _comparison_table(rows):
    """Points (n, batch) down, compared entries (study, precision) across; a point where the study
    has no entry at all is left out."""
    columns = list(dict.fromkeys((row["study"], row["precision"]) for row in rows))
    cells = {(row["n"], row["batch"], row["study"], row["precision"]): _comparison_cell(row) for row in rows}
    lines = ["| n | batch | " + " | ".join(f"{md(study)} {md(precision)}" for study, precision in columns) + " |",
             "|---|---|" + "---|" * len(columns)]
    for n, batch in dict.fromkeys((row["n"], row["batch"]) for row in rows if row["study_median_s"] is not None):
        lines.append(f"| {n} | {batch} | " + " | ".join(cells.get((n, batch, *column), "–") for column in columns)
                     + " |")
    return lines


def _batch_references(name, study, spec, references):
    runs = reference.RUNS.get(name)
    if not runs:
        return []
    title = f"{spec.title}: PyTorch reference"
    if references is None:
        return _section(title, ["Not run (--no-reference or --cpu-only)."])
    lines = []
    for key in runs:
        run = references.get(key) or {"note": "not run"}
        lines += _run_notes(key, run)
        lines += dict.fromkeys(f"- {md(key)}: {md(result.get('library'))} {md(result.get('version'))} on "
                               f"{md(result.get('device'))}" for result in run.get("results") or [])
    rows = study["derived"].get("reference_comparison") or []
    if not any(row["time_ratio"] is not None for row in rows):
        return _section(title, lines + ["", "No point was measured by both the study and the reference."])
    first = rows[0]
    lines += ["", *_comparison_table(rows), "",
              f"Time ratio: study median time / {md(first['reference'])} median time at the same "
              + ("n, batch, dtype and layout" if first["reference_layout"] else "n, batch and dtype")
              + "; below 1 the study is faster (in parentheses: study vs reference). Points the study did not "
                "measure are left out."]
    lines += [f"Target (stated, not checked): {md(target)}." for target in dict.fromkeys(
        row["target"] for row in rows if row["target"])]
    return _section(title, lines)


def _batch_sections(name, study, document):
    spec = derive_batch.STUDIES[name]
    # No caps section: these studies cap nothing, memory limits the batch (a skip says so).
    return (_batch_crossovers(study, spec) + _loop_ratios(study["derived"], spec) + _throughput(study, spec)
            + _epoch_times(study, spec) + _memory(study, spec) + _utilization(study, spec)
            + _chosen_algorithms(study, spec) + _batch_references(name, study, spec, document.get("references"))
            + _grouped_failures(study, f"{spec.title}: skipped and failed entries"))


# --- the transfer study -----------------------------------------------------------------
def _gib_per_s(bytes_per_s):
    return "n/a" if bytes_per_s is None else f"{bytes_per_s / derive_transfer.GIB:.2f} GiB/s"


def _transfer_link(derived, document):
    gpus = document["machine"].get("gpus") or [{}]
    numa = gpus[0].get("numa_node")
    where = [] if numa is None else [f"- The GPU's NUMA node: {md(numa)} (-1: the host reports none)."]
    link = derived.get("link")
    if not link:
        return ["- The link's theoretical rate is unknown (no PCIe generation and width from nvidia-smi)."] + where
    return [f"- Link: PCIe Gen{link['generation']} x{link['width']}, theoretically {_gib_per_s(link['bytes_per_s'])} "
            f"({link['bytes_per_s'] / 1e9:.1f} GB/s) per direction ({md(link['rule'])})."] + where


def _transfer_setting(study):
    setting = study.get("transparent_hugepage")
    return [f"- Transparent huge pages on this system: {md(setting)} (pageable\\_thp asks for them with madvise; "
            f"its huge\\_page\\_bytes counter says how much the kernel gave)."] if setting else []


def _transfer_curves(study, document):
    derived = study["derived"]
    rows = derived.get("curves") or []
    use = {(u["impl"], u["mode"], u["direction"]): u["fraction_of_link"] for u in derived.get("link_use") or []}
    lines = _transfer_link(derived, document) + _transfer_setting(study) + [
        "", "| engine | host memory | direction | latency of the smallest copy | plateau | size at 90% of it | "
            "plateau / link |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        link_share = use.get((row["impl"], row["mode"], row["direction"]))
        lines.append(f"| {md(row['impl'])} | {md(row['mode'])} | {md(row['direction'])} | "
                     f"{seconds(row['smallest_latency_s'])} ({byte_size(row['smallest_n'])}) | "
                     f"{_gib_per_s(row['plateau_bytes_per_s'])} | {byte_size(row['size_at_90_percent'])} | "
                     f"{'n/a' if link_share is None else f'{link_share:.0%}'} |")
    lines += ["", "Latency: median time of the smallest copy, host clock from the call to its completion. Plateau: "
                  "the bandwidth of the largest copy (bytes copied per second, GiB = 2^30 bytes; bidirectional "
                  "counts both directions). Size at 90%: from where every larger copy reaches 90% of the plateau, "
                  "interpolated on log(size) between measured sizes."]
    return _section("Transfer: bandwidth and latency", lines if rows else ["No copy was measured."])


def _ratio_lines(rows, what):
    return [f"- {what} {md(row['direction'])}: {ratio(row['at_largest']['ratio'])} at {byte_size(row['at_largest']['n'])}"
            f" (smallest size: {ratio(row['ratios'][0]['ratio'])} at {byte_size(row['ratios'][0]['n'])})"
            for row in rows]


def _transfer_ratios(derived):
    lines = (_ratio_lines(derived.get("pinned_over_pageable") or [], "pinned over pageable (written),")
             + _ratio_lines(derived.get("zero_page_over_written") or [],
                            "never-written (zero page) over written pageable memory,")
             + _ratio_lines(derived.get("first_touch_over_written") or [],
                            "a fresh allocation per copy over written pageable memory,"))
    lines += [f"- registering memory (cudaHostRegister) costs {seconds(row['seconds_per_gib'])} per GiB at "
              f"{byte_size(row['n'])}" for row in (derived.get("registration") or [])[-1:]]
    lines += ["", "Ratios of bandwidth (copy engine); a never-written source reads as the kernel's shared zero page, "
                  "so its rate says nothing about real data."]
    return _section("Transfer: memory kinds against each other", lines) if len(lines) > 2 else []


def _time_ratio_cell(row):
    return md(row["note"]) if row["time_ratio"] is None else f"{row['time_ratio']:.3f}"


def _transfer_references(study, references):
    title = "Transfer: PyTorch reference"
    if references is None:
        return _section(title, ["Not run (--no-reference or --cpu-only)."])
    run = references.get("torch_transfer") or {"note": "not run"}
    lines = _run_notes("torch_transfer", run)
    rows = study["derived"].get("reference_comparison") or []
    if not any(row["time_ratio"] is not None for row in rows):
        return _section(title, lines + ["", "No copy was measured by both the study and the reference."])
    lines += ["", "| host memory / direction | bytes | study | torch | time ratio | target |", "|---|---|---|---|---|---|"]
    lines += [f"| {md(row['study'])} {md(row['precision'])} | {byte_size(row['n'])} | {seconds(row['study_median_s'])} | "
              f"{seconds(row['reference_median_s'])} | "
              f"{_time_ratio_cell(row)} | "
              f"{md(row['target'] or '')} |" for row in rows]
    lines += ["", "Time ratio: study median / torch median (host clock to completion, both); below 1 the study is "
                  "faster. Targets are stated, not checked."]
    return _section(title, lines)


def _transfer_sections(study, document):
    derived = study["derived"]
    return (_transfer_curves(study, document) + _transfer_ratios(derived)
            + _transfer_references(study, document.get("references"))
            + _grouped_failures(study, "Transfer: skipped and failed entries"))


# --- the overlap study --------------------------------------------------------------------
def _overlap_best(derived):
    rows = derived.get("best") or []
    lines = ["| workload | host memory | n | serial | best pipeline | time saved | ideal | fraction of the ideal |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        fraction = row["fraction_of_ideal"]
        lines.append(f"| {md(row['workload'])} | {md(row['memory'])} | {row['n']} | {seconds(row['serial_s'])} | "
                     f"{seconds(row['median_s'])} ({md(row['schedule'])}, {row['chunks']} chunks) | "
                     f"{seconds(row['saved_s'])} ({row['saved_s'] / row['serial_s']:.0%}) | {seconds(row['ideal_s'])} | "
                     f"{'n/a' if fraction is None else f'{fraction:.0%}'} |")
    lines += ["", "Ideal: the larger of the copy-only and the compute-only time at the same chunk count (the pipeline "
                  "cannot beat it); fraction of the ideal = ideal / pipelined time. Every configuration is in "
                  "results.json and the plots."]
    return _section("Overlap: copies hidden behind compute", lines if rows else ["No pipeline was measured."])


def _overlap_sections(study, document):
    return _overlap_best(study["derived"]) + _grouped_failures(study, "Overlap: skipped and failed entries")


# --- telemetry --------------------------------------------------------------------
def _mhz(value):
    return "n/a" if value is None else f"{value:.0f}"


def _clock(name, spread):
    return f"{name} {_mhz(spread['min'])}–{_mhz(spread['max'])} MHz, median {_mhz(spread['median'])} MHz"


def _telemetry_text(record):
    summary = record.get("summary") or {}
    if not summary.get("samples"):
        return md(record.get("note") or "no samples")
    parts = [_clock(name, summary[key]) for name, key in (("SM clock", "sm_clock_mhz"),
                                                          ("while busy", "busy_sm_clock_mhz"),
                                                          ("memory clock", "mem_clock_mhz")) if summary.get(key)]
    if summary.get("max_power_w") is not None:
        parts.append(f"power up to {summary['max_power_w']:.0f} W")
    if summary.get("max_temperature_c") is not None:
        parts.append(f"temperature up to {summary['max_temperature_c']:.0f} °C")
    if summary.get("throttled_fraction") is None:
        parts.append("throttle reasons not reported")
    else:
        reasons = ", ".join(summary.get("throttle_reasons") or [])
        parts.append(f"throttled in {summary['throttled_fraction']:.0%} of samples"
                     + (f" ({md(reasons)})" if reasons else ""))
    interval = record.get("interval_s")
    parts.append(f"{summary['samples']:.0f} sample{'' if summary['samples'] == 1 else 's'}"
                 + ("" if interval is None else f", one every {interval:g} s"))
    return "; ".join(parts) + (f" ({md(record['note'])})" if record.get("note") else "")


def _telemetry(studies):
    lines = [f"- {md(name)}: {_telemetry_text(study['telemetry'])}"
             for name, study in studies.items() if study.get("telemetry")]
    return _section("GPU clocks during each study (NVML)", lines) if lines else []


# --- across the studies: fraction of the peak, roofline, energy, clock-limited entries -----------
ENERGY_GEMM_STUDIES = ("matmul", "precision")  # one timed call is one GEMM
ENERGY_ROWS = 40  # more rows than this: each series at its largest size only
CLOCK_LIMITED_LINES = 25


def _percent(value):
    return "n/a" if value is None else f"{value:.1%}"


def _entry_where(row, with_study=False):
    """'cublas resident n=4096 (batch 64)' of a findings row."""
    text = (f"{md(row['study'])}: " if with_study else "") + f"{md(row['impl'])} {md(row['mode'])} n={md(row['n'])}"
    return text + (f" (batch {md(row['batch'])})" if row.get("batch") is not None else "")


def _fraction_of_peak(findings):
    rows = findings["fraction_of_peak"]
    if not rows:
        return []
    peaks = {row["precision"]: row for row in findings["roofline"]["peaks"]}
    lines = ["| study | precision | its best entry | rate | fraction of the peak | the peak: where |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        peak = peaks[row["precision"]]
        lines.append(f"| {md(row['study'])} | {md(row['precision'])} | {_entry_where(row)} | "
                     f"{rate(row['flop_per_s'])} | "
                     f"{_percent(row['fraction_of_peak'])} | {rate(peak['flop_per_s'])}: {_entry_where(peak, True)} |")
    lines += ["", "The measured peak of a precision: the highest FLOP/s (int8: operations/s) of any GPU entry of that "
                  "precision in this run, any mode, among the studies that count the FLOP that ran (a "
                  + ", ".join(md(study) for study in derive_run.NOMINAL_FLOP) + " entry sets it only for a precision "
                  "no other study measured). Every GPU entry's rate over it is `fraction_of_peak` in results.json; this "
                  "table shows each study's best entry per precision."]
    nominal = {row["study"] for row in rows if row["study"] in derive_run.NOMINAL_FLOP}
    lines += [""] * bool(nominal) + [f"- {md(study)}: {md(derive_run.NOMINAL_FLOP[study])}."
                                     for study in sorted(nominal)]
    return _section("Across the studies: fraction of the measured peak", lines)


def _ridge(roof, row):
    bandwidth = (roof.get("bandwidth") or {}).get("bytes_per_s")
    return f", ridge at {row['flop_per_s'] / bandwidth:.1f} FLOP/B" if bandwidth else ""


def _roofline_points(roof):
    """Per study and precision: its points, their intensities, the best rate and its share of the roof there."""
    lines = ["| study | precision | points | intensity (FLOP/B) | best rate | at intensity | of the roof there |",
             "|---|---|---|---|---|---|---|"]
    groups = {}
    for point in roof["points"]:
        groups.setdefault((point["study"], point["precision"]), []).append(point)
    for (study, precision), points in groups.items():
        best = max(points, key=lambda point: point["flop_per_s"])
        ceiling = derive_run.attainable(roof, precision, best["intensity"])
        intensities = [point["intensity"] for point in points]
        lines.append(f"| {md(study)} | {md(precision)} | {len(points)} | "
                     f"{min(intensities):.3g} .. {max(intensities):.3g} "
                     f"| {rate(best['flop_per_s'])} ({_entry_where(best)}) | {best['intensity']:.3g} | "
                     f"{_percent(best['flop_per_s'] / ceiling if ceiling else None)} |")
    return lines


def _roofline(findings, plot_paths):
    roof = findings["roofline"]
    if not roof["peaks"]:
        return []
    bandwidth = roof.get("bandwidth")
    if bandwidth:
        lines = [f"- Memory roof: {bandwidth['bytes_per_s'] / 1e9:.0f} GB/s of device memory traffic, twice the "
                 f"{bandwidth['copy_bytes_per_s'] / 1e9:.0f} GB/s that the transfer study's fastest device-to-device "
                 f"copy ({md(bandwidth['impl'])}, {byte_size(bandwidth['n'])} per copy) moved: a copy of B bytes "
                 f"reads B and writes B bytes of device memory."]
    else:
        lines = [f"- No memory roof: {md(roof.get('memory_roof_note'))}; only the compute roofs are drawn."]
    lines.append("- Compute roofs, the measured peak of each precision: " + "; ".join(
        f"{md(row['precision'])} {rate(row['flop_per_s'])}{_ridge(roof, row)}" for row in roof["peaks"]) + ".")
    lines += [f"- Device memory bytes per call, {md(study)}: {md(text)}." for study, text in
              roof["traffic_models"].items()]
    lines.append("- Only GPU entries in resident mode are placed: the transfer modes time PCIe copies, not device "
                 "memory. The model counts compulsory traffic, each operand read once and the result written once "
                 "per call: re-reads between tiles make the real traffic larger, operands that stay in the L2 cache "
                 "from one timed call to the next (small sizes) make it smaller, so a small size's point can sit "
                 "beyond the memory roof.")
    if roof["points"]:
        lines += ["", *_roofline_points(roof), "",
                  "Of the roof there: the best rate over min(peak, bandwidth x intensity) at its intensity "
                  "(over the peak alone when no memory roof was measured)."]
    if roof["not_placed"]:
        groups = {}  # one line per study, mode and reason, not per series
        for row in roof["not_placed"]:
            group = groups.setdefault((row["study"], row["mode"], row["reason"]), [0, []])
            group[0] += row["entries"]
            group[1].append(f"{row['impl']} {row['precision']}")
        lines += ["", "Not placed:", "", "| study | mode | entries | implementations and precisions | why |",
                  "|---|---|---|---|---|"]
        lines += [f"| {md(study)} | {md(mode)} | {count:.0f} | {md(', '.join(series))} | {md(why)} |"
                  for (study, mode, why), (count, series) in groups.items()]
    chart = next((path for path in plot_paths or [] if os.path.basename(path) == plots.ROOFLINE_NAME), None)
    lines += ["", f"Chart: `plots/{plots.ROOFLINE_NAME}` (log-log; colour: precision, marker: study)." if chart
              else "No chart: matplotlib is not installed for this Python."]
    return _section("Across the studies: roofline (GPU, resident)", lines)


def _no_telemetry(findings):
    found = findings["telemetry"]
    lines = ["No per-entry telemetry in this file: no entry has clocks, power or energy measured during its timed "
             "loop (a file written before per-entry telemetry, or a run without NVML)."]
    lines += [f"- {md(row['study'])}: {md(row['note'])}" for row in found["notes"]]
    return _section("Per-entry telemetry", lines)


def _megahertz(value):
    return "n/a" if value is None else f"{value:.0f} MHz"


def _watts(value):
    return "n/a" if value is None else f"{value:.0f} W"


def _gflop_per_joule(row):
    return "n/a" if row["flop_per_joule"] is None else f"{row['flop_per_joule'] / 1e9:.1f}"


def _energy_gemm(rows):
    rows = [row for row in rows if row["study"] in ENERGY_GEMM_STUDIES]
    if not rows:
        return []
    series = {}
    for row in sorted(rows, key=lambda row: (row["study"], row["precision"], row["impl"], row["mode"], row["n"])):
        series.setdefault((row["study"], row["precision"], row["impl"], row["mode"]), []).append(row)
    every = len(rows) <= ENERGY_ROWS
    shown = [row for found in series.values() for row in (found if every else found[-1:])]
    lines = ["| study | precision | impl | mode | n | energy per GEMM | GFLOP per joule | energy / time | "
             "median SM clock |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {md(row['study'])} | {md(row['precision'])} | {md(row['impl'])} | {md(row['mode'])} | "
              f"{md(row['n'])} | {joules(row['energy_j_per_op'])} | {_gflop_per_joule(row)} | "
              f"{_watts(row.get('call_power_w'))} | {_megahertz(row['sm_clock_mhz'])} |" for row in shown]
    lines += ["", ("Every size measured with an energy reading. " if every else
                   "Each series at its largest size with an energy reading (every size: `findings.energy` in "
                   "results.json). ")
              + "Energy per GEMM: NVML's total-energy counter over the timed loop, per timed call; board energy, so "
                "idle and memory power are included. GFLOP per joule: the GEMM's FLOP (int8: operations) over it. "
                "Energy / time: that energy over the median time of one call, the power the call drew (NVML's own "
                "power reading, `power_w` in results.json, averages over about a second and lags a short loop). "
                "Transfer modes include the copies in and out."]
    return _section("Across the studies: energy per GEMM (NVML)", lines)


def _energy_calls(rows):
    """The other studies: per series, the energy of one call at its largest size and batch."""
    largest = {}
    for row in rows:
        if row["study"] not in ENERGY_GEMM_STUDIES:
            key = (row["study"], row["impl"], row["mode"], row["precision"])
            if key not in largest or (row["n"], row["batch"] or 0) > (largest[key]["n"], largest[key]["batch"] or 0):
                largest[key] = row
    if not largest:
        return []
    lines = ["| study | impl | mode | precision | n | batch | energy per call | per item of the batch | "
             "GFLOP per joule | energy / time |", "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {md(row['study'])} | {md(row['impl'])} | {md(row['mode'])} | {md(row['precision'])} | "
              f"{md(row['n'])} | {md(row['batch'])} | {joules(row['energy_j_per_op'])} | "
              f"{joules(row['energy_j_per_op'] / row['items']) if row['items'] else 'n/a'} | {_gflop_per_joule(row)} | "
              f"{_watts(row.get('call_power_w'))} |" for row in largest.values()]
    lines += ["", "One call: a batch (batched GEMM, MLP step, convolution), a copy (transfer: n is its bytes, "
                  "precision its direction), a pipelined run (overlap: precision is the workload); each series at its "
                  "largest n and batch; energy / time as above. Every entry's energy: `energy_j_per_op` in results.json."]
    return _section("Across the studies: energy per call (NVML)", lines)


def _clock_limited(findings):
    rows = findings["clock_limited"]
    title = "Across the studies: entries measured with clocks held down"
    if not rows:
        return _section(title, [f"No entry was measured while a power cap or a thermal slowdown held the clocks down "
                                f"({findings['telemetry']['entries']} entries with per-entry telemetry)."])
    lines = [f"- {md(row['name'])}: power cap in {_percent(row['power_limited_fraction'])} and thermal slowdown in "
             f"{_percent(row['thermal_limited_fraction'])} of its samples, median SM clock "
             f"{_megahertz(row['sm_clock_mhz'])}" for row in rows[:CLOCK_LIMITED_LINES]]
    if len(rows) > CLOCK_LIMITED_LINES:
        lines.append(f"- and {len(rows) - CLOCK_LIMITED_LINES} more (`clock_limited` in results.json)")
    lines += ["", f"{len(rows)} of {findings['telemetry']['entries']} entries with per-entry telemetry were measured "
                  "while NVML reported a power cap or thermal slowdown as a clock-event reason in some of the timed "
                  "loop's samples: their times are those of a held-down clock, not of the GPU's sustained clock."]
    return _section(title, lines)


def _across_studies(document, plot_paths):
    findings = document.get("findings")
    if not findings or not any(derive.gpu_entries(study["entries"]) for study in document["studies"].values()):
        return []  # no GPU entry measured: nothing to say across the studies (the warnings say why)
    lines = _fraction_of_peak(findings) + _roofline(findings, plot_paths)
    if not findings["telemetry"]["entries"]:
        return lines + _no_telemetry(findings)
    return lines + _energy_gemm(findings["energy"]) + _energy_calls(findings["energy"]) + _clock_limited(findings)


STUDY_SECTIONS = {"matmul": _matmul_sections, "precision": _precision_sections, "transfer": _transfer_sections,
                  "overlap": _overlap_sections,
                  **{name: functools.partial(_batch_sections, name) for name in derive_batch.STUDIES}}


def _like(document):
    """run --like: the run repeated and where this machine's environment differs from it."""
    repeated = document["run"].get("like")
    if not isinstance(repeated, dict):
        return []
    found = repeated.get("differences") or []
    lines = [f"Repeats the configuration of run {md(repeated.get('run_id'))} ({md(repeated.get('path'))})."]
    lines += ["", "| | recorded there | here |", "|---|---|---|",
              *(f"| {md(d.get('what'))} | {md(d.get('recorded'))} | {md(d.get('here'))} |" for d in found)] if found \
        else ["", "Its recorded environment is the same as this one in every field compared."]
    return _section("Compared with the recorded run", lines)


def render(document, plot_paths, out_dir):
    lines = _header(document) + _warnings(document) + _like(document)
    for name, study in document["studies"].items():
        if name in STUDY_SECTIONS:
            lines += STUDY_SECTIONS[name](study, document)
    lines += _across_studies(document, plot_paths) + _telemetry(document["studies"]) + _plots(plot_paths, out_dir)
    return "\n".join(lines)
