"""summary.md: the findings of one run in a page of Markdown."""
import os

from gpubench_driver import derive, derive_batch, gbench, reference
from gpubench_driver.formatting import byte_size, md, rate, ratio, scientific, seconds

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
    facts = [f"{device['multiprocessors']} SMs" if device.get("multiprocessors") else None,
             f"compute capability {device['compute_capability']}" if device.get("compute_capability") else None,
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
    lines = [f"- {md(impl.get('id'))}: run up to n={impl['max_size']} ({md(impl.get('cap_reason'))})"
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
    for n, batch in sorted(points, key=lambda point: (point[0], point[1] or 0)):
        batches.setdefault(n, []).append(batch)
    return "n = " + ", ".join(str(n) + (f" (batch {', '.join(map(str, found))})" if found[0] is not None else "")
                              for n, found in batches.items())


def _grouped_failures(study, title):
    """Failed entries grouped by implementation, precision and message: one line per reason,
    not one per size, batch and mode."""
    groups = {}
    for entry in study["entries"]:
        if entry["status"] != "ok":
            group = groups.setdefault((entry["impl"], entry["precision"], _failure_text(entry)), (set(), set()))
            group[0].add(entry["mode"])
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


# --- batched GEMM study ------------------------------------------------------------
def _batch_crossovers(study):
    title = "Batched GEMM: crossover batch (GPU faster than the best CPU)"
    swept = (f"Swept n = {', '.join(map(str, study.get('sizes') or []))} and batches "
             f"{', '.join(map(str, study.get('batches') or []))} (products of n x n FP32 matrices per call).")
    crossovers = study["derived"].get("crossovers") or []
    if not crossovers:
        return _section(title, [swept, "", "No GPU entries were measured."])
    return _section(title, [swept, "", "| n | GPU mode | crossover batch | bracket | GPU impl | how |",
                            "|---|---|---|---|---|---|",
                            *(f"| {found['n']} | {md(found['mode'])} | {_crossover_cells(found, 'batch')}"
                              for found in crossovers)])


def _ratio_at(row):
    return f"{ratio(row['ratio'])} (batch {row['batch']})" if row else "n/a"


def _loop_ratios(derived):
    found = derived.get("loop_ratios") or {}
    baseline, rows = found.get("baseline"), found.get("rows") or []
    if not rows:
        return []
    impls = [impl for impl in derive_batch.AGAINST_LOOP if any(row["impl"] == impl for row in rows)]
    lines = [f"- {md(row['impl'])} ({md(row['mode'])}): up to {ratio(row['ratio'])} the products/s of "
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
    lines += ["", f"Ratio: products/s over those of {md(baseline)} at the same n, mode and batch ({md(baseline)}'s "
                  f"median time over theirs)."]
    return _section("Batched GEMM: one batched call against a loop of cuBLAS calls", lines)


def _saturation_cell(row):
    if row["saturation_batch"] is None:
        return f"none: {md(row['saturation_note'])}"
    return str(row["saturation_batch"])


def _throughput(derived):
    rows = derived.get("throughput") or []
    lines = ["| n | implementation | mode | best rate | FLOP/s there | at batch | saturation batch |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {row['n']} | {md(row['impl'])} | {md(row['mode'])} | "
              f"{rate(row['best_products_per_s'], 'products/s', ' ')} | {rate(row['best_flop_per_s'])} | "
              f"{row['best_batch']} | {_saturation_cell(row)} |" for row in rows]
    lines += ["", "Saturation batch: the smallest batch b whose doubling (the next measured batch, when it is 2b) "
                  f"gains less than {derive_batch.SATURATION_GAIN:.0%} in products/s."]
    return _section("Batched GEMM: throughput and saturation", lines if rows else ["No entry was measured."])


def _per_product(row):
    return f"{byte_size(row['bytes_per_product'])} (batch {row['batch']})"


def _memory(derived):
    series = {}
    for row in derived.get("device_memory") or []:
        series.setdefault((row["n"], row["impl"], row["mode"]), []).append(row)  # in batch order
    if not series:
        return []
    lines = ["| n | implementation | mode | per product, smallest batch | per product, largest batch | "
             "operands (3 n x n FP32) |", "|---|---|---|---|---|---|"]
    lines += [f"| {n} | {md(impl)} | {md(mode)} | {_per_product(rows[0])} | {_per_product(rows[-1])} | "
              f"{byte_size(rows[0]['operand_bytes_per_product'])} |" for (n, impl, mode), rows in series.items()]
    lines += ["", "Per product: the drop in free GPU memory when the entry allocated its operands (measured by the "
                  "binary) over the batch; the last column is what the three matrices themselves take."]
    return _section("Batched GEMM: device memory per product", lines)


def _batch_sections(study, document):
    derived = study["derived"]
    # No caps section: this study caps nothing, memory limits the batch (a skip says so).
    return (_batch_crossovers(study) + _loop_ratios(derived) + _throughput(derived) + _memory(derived)
            + _grouped_failures(study, "Batched GEMM: skipped and failed entries"))


# --- telemetry --------------------------------------------------------------------
def _clock(name, spread):
    return f"{name} {spread['min']:.0f}–{spread['max']:.0f} MHz, median {spread['median']:.0f} MHz"


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
    parts.append(f"{summary['samples']} sample{'' if summary['samples'] == 1 else 's'}, "
                 f"one every {record.get('interval_s'):g} s")
    return "; ".join(parts) + (f" ({md(record['note'])})" if record.get("note") else "")


def _telemetry(studies):
    lines = [f"- {md(name)}: {_telemetry_text(study['telemetry'])}"
             for name, study in studies.items() if study.get("telemetry")]
    return _section("GPU clocks during each study (nvidia-smi)", lines) if lines else []


STUDY_SECTIONS = {"matmul": _matmul_sections, "precision": _precision_sections, "batched_gemm": _batch_sections}


def render(document, plot_paths, out_dir):
    lines = _header(document) + _warnings(document)
    for name, study in document["studies"].items():
        if name in STUDY_SECTIONS:
            lines += STUDY_SECTIONS[name](study, document)
    lines += _telemetry(document["studies"]) + _plots(plot_paths, out_dir)
    return "\n".join(lines)
