"""The report of a study with a batch axis: its sections of summary.md from its `derived` (batch_study.py), its
plots and its registry record, all from its BatchStudy."""
import functools

from gpubench_driver.lib import charts, gbench
from gpubench_driver.lib.batch_study import SATURATION_GAIN, derive, rate_key, size_text
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import byte_size, md, rate, ratio, seconds
from gpubench_driver.lib.registry import Study
from gpubench_driver.lib.sections import (AXIS_TITLES, STEADY_STATE, compared, crossover_cells, crossover_header,
                                          failures_section, reference_section, table_section, target_lines)

NO_VALUE = "–"  # a series that did not measure a batch


def _axes(derived):
    """What tells the series apart in the tables (derived series_axes)."""
    return derived.get("series_axes") or ["impl", "mode"]


def _axis_titles(axes):
    return [AXIS_TITLES[axis] for axis in axes]


def _axis_cells(row, axes):
    return [md(row[axis]) for axis in axes]


def _batch_table(rows, axes, cell, size_name):
    """Series down (size, then the axes), batches across: cell(point), or NO_VALUE."""
    batches = sorted({point["batch"] for row in rows for point in row["points"]})
    body = []
    for row in rows:
        at = {point["batch"]: point for point in row["points"]}
        body.append([str(row["n"]), *_axis_cells(row, axes),
                     *(cell(at[batch]) if batch in at else NO_VALUE for batch in batches)])
    return table([md(size_name), *_axis_titles(axes), *(f"b={batch}" for batch in batches)], body)


def _crossovers(study, spec):
    derived = study["derived"]
    title = f"{spec.title}: crossover batch (GPU faster than the best CPU)"
    blocks = [paragraph(f"Swept {spec.size_name} = {', '.join(map(str, study.get('sizes') or []))} and batches "
                        f"{', '.join(map(str, study.get('batches') or []))} ({spec.batch_meaning}).")]
    if study.get("layers"):  # what each swept size is
        blocks.append(bullets(md(size_text(spec, study["layers"], n)) for n in study.get("sizes") or []))
    crossovers = derived.get("crossovers") or []
    if not crossovers:
        return section(title, blocks + [paragraph("No GPU entries were measured.")])
    with_precision = "precision" in _axes(derived)
    if with_precision:
        blocks.append(paragraph(f"Each GPU precision against the fastest CPU implementation at the same batch (the "
                                f"CPU runs {md(', '.join(derived.get('cpu_precisions') or []))})."))
    header = [md(spec.size_name), *(["precision"] if with_precision else []), "GPU mode", *crossover_header("batch")]
    # A GPU faster at every batch has no crossover to show: one sentence names them all, the table the rest.
    everywhere = [found for found in crossovers if found.get("lower") is None and found.get("upper") is not None]
    rows = [[str(found["n"]), *([md(found["precision"])] if with_precision else []), md(found["mode"]),
             *crossover_cells(found, "batch")] for found in crossovers if found not in everywhere]
    if everywhere:
        blocks.append(paragraph("The GPU is faster than the best CPU at every measured batch, the smallest "
                                "included, for: " + "; ".join(_crossover_series(found, spec, with_precision) for found in everywhere)
                                + "."))
    return section(title, blocks + ([table(header, rows)] if rows else []))


def _crossover_series(found, spec, with_precision):
    return (f"{md(spec.size_name)} {found['n']}" + (f" {md(found['precision'])}" if with_precision else "")
            + f" {md(found['mode'])} ({md(found.get('timed_as') or 'headline time')})")


def _ratio_at(row):
    return f"{ratio(row['ratio'])} (batch {row['batch']})" if row else "n/a"


def _loop_ratios(derived, spec):
    found = derived.get("loop_ratios") or {}
    baseline = md(found.get("baseline"))
    if not found.get("rows"):
        return []
    items = [f"{md(row['impl'])} ({md(row['mode'])}): up to {ratio(row['ratio'])} the {spec.unit}/s of "
             f"{baseline} (n={row['n']}, batch={row['batch']})" for row in found.get("largest", [])]
    header = ["n", "mode", *(column for impl in found["impls"]
                             for column in (f"{md(impl)} / {baseline}: largest", "at the largest batch"))]
    rows = [[str(row["n"]), md(row["mode"]), *(text for cell in row["cells"]
                                               for text in (_ratio_at(cell["largest"]),
                                                            _ratio_at(cell["at_largest_batch"])))]
            for row in found["table"]]
    return section(f"{spec.title}: one batched call against a loop of cuBLAS calls", [
        bullets(items), table(header, rows),
        paragraph(f"Ratio: {spec.unit}/s over those of {baseline} at the same n, mode and batch "
                  f"({baseline}'s median time over theirs).")])


def _throughput(study, spec):
    derived = study["derived"]
    axes, best = _axes(derived), f"best_{rate_key(spec)}"
    return table_section(f"{spec.title}: throughput and saturation", [
        md(spec.size_name), *_axis_titles(axes), "best rate", "FLOP/s there", "at batch", "saturation batch"],
        derived.get("throughput") or [], lambda row: [
            str(row["n"]), *_axis_cells(row, axes), rate(row[best], f"{spec.unit}/s", " "),
            rate(row["best_flop_per_s"]), str(row["best_batch"]),
            f"{'none' if row['saturation_batch'] is None else row['saturation_batch']}: {md(row['saturation_note'])}"],
        paragraph(
            f"Saturation batch: the smallest batch b from which the next measured batch gains less than "
            f"{SATURATION_GAIN:.0%} in {spec.unit}/s per doubling (a step of 2^k counts as k doublings: the step's "
            f"gain to the power 1/k), or gains within noise: the intervals of the two batches' median times "
            f"(per item; results.json `interval_s`) overlap, or even the largest gain those intervals allow is "
            f"below {SATURATION_GAIN:.0%}. The note says which, and what the step measured."),
        empty="No entry was measured.")


def _epoch_times(study, spec):
    found = study["derived"].get("epoch_times")
    if not found or not found["rows"]:
        return []
    samples = f"{found['samples']:,}"
    return section(f"{spec.title}: time per epoch of {samples} samples", [
        _batch_table(found["rows"], _axes(study["derived"]), lambda point: seconds(point["epoch_s"]), spec.size_name),
        paragraph(f"Seconds per epoch of {samples} samples at each batch b: the epoch over the samples/s measured "
                  f"at b (one training step per batch).")])


def _per_item(row, spec):
    return f"{byte_size(row[f'bytes_per_{spec.item}'])} (batch {row['batch']})"


def _memory(study, spec):
    series = study["derived"].get("device_memory_series") or []
    if not series:
        return []
    axes = _axes(study["derived"])
    operands = [f"operands ({spec.operands})"] if spec.operands else []
    header = [md(spec.size_name), *_axis_titles(axes), f"per {spec.item}, smallest batch",
              f"per {spec.item}, largest batch", *operands, "total, largest batch"]
    rows = [[str(row["n"]), *_axis_cells(row, axes), _per_item(row["smallest"], spec), _per_item(row["largest"], spec),
             *([byte_size(row["smallest"][f"operand_bytes_per_{spec.item}"])] if operands else []),
             byte_size(row["largest"]["device_bytes"])] for row in series]
    return section(f"{spec.title}: device memory per {spec.item}", [table(header, rows), paragraph(
        f"Per {spec.item}: the GPU memory the entry took (measured by the binary as the drop in free device memory "
        f"when it allocated) over the batch"
        + (f"; operands: what the {spec.operands} of one {spec.item} take" if operands else "")
        + "; total: that memory at the largest batch.")])


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
        return section(title, [paragraph(f"Not sampled: {md(found['reason'])}.")])
    if not found["rows"]:
        return section(title, [paragraph("No GPU entry was measured.")])
    # Series timed on the host (copies in the loop) have no readings at any batch: named once, not a row of blanks.
    read = [row for row in found["rows"] if any(point[gbench.UTILIZATION_SAMPLES] for point in row["points"])]
    unread = sorted({row["mode"] for row in found["rows"] if row not in read})
    if not read:
        return section(title, [paragraph("No NVML reading fell inside a timed loop.")])
    return section(title, [_batch_table(read, _axes(study["derived"]), _utilization_cell, spec.size_name),
                           *([paragraph(f"No readings in mode {md(', '.join(unread))}: each of its loops was "
                                        "shorter than NVML's sampling period.")] if unread else []),
                           paragraph(
        "Each cell: NVML's GPU utilization (the percent of time a kernel ran), averaged over its readings inside the "
        "timed loops of every repetition, and in parentheses how many readings; \"no reading\": each loop was shorter "
        "than NVML's sampling period (1/6 s to 1 s; a longer --min-time helps). The maxima and memory utilization "
        "are in results.json.")])


def _choices(point):
    return {"batch": point["batch"], "text": " / ".join(dict.fromkeys(
        f"{md(choice['algorithm_name'])}, {byte_size(choice['workspace_bytes'])}" for choice in point["choices"]))}


def _library_line(library, gpu):
    """The GPU library the study's binary was built with, or why it was not used."""
    if library.get("available") and gpu.get("available"):
        return f"cuDNN {md(library.get('version'))}."
    if library.get("available"):
        return f"cuDNN not used: no GPU ({md(gpu.get('reason'))})."
    return f"cuDNN not used: {md(library.get('reason'))}."


def _chosen_algorithms(study, spec, gpu):
    derived = study["derived"]
    if derived.get("chosen_algorithms") is None:
        return []
    title = f"{spec.title}: algorithm chosen and its workspace"
    library = study.get("cudnn") or {}
    blocks = [paragraph(_library_line(library, gpu))] if library else []
    if not derived["chosen_algorithms"]:
        return section(title, blocks + [paragraph("No GPU entry reported an algorithm.")])
    rows = [{**row, "points": [_choices(point) for point in row["points"]]} for row in derived["algorithm_cells"]]
    return section(title, blocks + [
        _batch_table(rows, ("impl", "precision"), lambda point: point["text"], spec.size_name),
        paragraph("Each cell: the algorithm chosen for the configuration and the workspace it needs; the resident and "
                  "transfer\\_pinned entries of a configuration are one cell (two choices, when they differ, "
                  "separated by /, resident first).")])


def _comparison_cell(row):
    if row["time_ratio"] is None:
        return "no study entry" if row["study_median_s"] is None else "no reference"
    return f"{row['time_ratio']:.2f} ({seconds(row['study_median_s'])} vs {seconds(row['reference_median_s'])})"


def _comparison_table(rows):
    """Points (n, batch) the study measured down, compared entries (study, precision) across."""
    columns = list(dict.fromkeys((row["study"], row["precision"]) for row in rows))
    cells = {(row["n"], row["batch"], row["study"], row["precision"]): _comparison_cell(row) for row in rows}
    points = dict.fromkeys((row["n"], row["batch"]) for row in rows if row["study_median_s"] is not None)
    body = [[str(n), str(batch), *(cells.get((n, batch, *column), NO_VALUE) for column in columns)] for n, batch in points]
    return table(["n", "batch", *(f"{md(study)} {md(precision)}" for study, precision in columns)], body)


def _result_item(key, result):
    return f"{md(key)}: {md(result.get('library'))} {md(result.get('version'))} on {md(result.get('device'))}"


def _references(runs, study, spec, document):
    if not runs:
        return []

    def shown(rows):
        first = rows[0]
        return [_comparison_table(rows), paragraph(
            f"Time ratio: study median time / {md(first['reference'])} median time at the same "
            + ("n, batch, dtype and layout" if first["reference_layout"] else "n, batch and dtype")
            + "; below 1 the study is faster (in parentheses: study vs reference). Points the study did not measure "
              "are left out. " + STEADY_STATE, *target_lines(rows))]
    rows = study["derived"].get("reference_comparison") or []
    return reference_section(f"{spec.title}: PyTorch reference", document, runs, lambda items: compared(
        items, rows, "No point was measured by both the study and the reference.", shown), _result_item)


def sections(spec, references, study, document):
    """The sections of a batch study (no caps section: memory limits the batch, a skip says so)."""
    return (_crossovers(study, spec) + _loop_ratios(study["derived"], spec) + _throughput(study, spec)
            + _epoch_times(study, spec) + _memory(study, spec) + _utilization(study, spec)
            + _chosen_algorithms(study, spec, document.get("gpu") or {})
            + _references(references, study, spec, document)
            + failures_section(study, f"{spec.title}: skipped and failed entries"))


# --- plots ----------------------------------------------------------------------------------------
def plots(name, spec, pyplot, study, plot_dir):
    """One chart per size n: items/s of every series over the batch, crossovers marked."""
    derived = study["derived"]
    rows = derived.get("throughput", [])
    with_precision = len({row.get("precision") for row in rows}) > 1  # rows written before precision was kept
    fields = ("impl", "mode", "precision")[:2 + with_precision]
    levels = ((lambda key: key[2],) if with_precision else ()) + (lambda key: key[1],)
    key = rate_key(spec)
    study_charts = []
    for n in sorted({row["n"] for row in rows}):
        series = charts.row_series([row for row in rows if row["n"] == n], fields, "batch")
        study_charts += charts.line_charts(
            plot_dir, (name, "throughput", f"n{n}"),
            f"{spec.title}: {spec.unit} per second\n{size_text(spec, study.get('layers'), n)}",
            series, levels, charts.cpu_keys(series), ylabel=f"{spec.unit}/s", value=lambda point: point[key],
            xlabel=f"batch ({spec.unit} per call)",
            mark=charts.crossover_marks(charts.timed(c for c in derived.get("crossovers", []) if c["n"] == n),
                                        with_precision))
    return charts.draw(pyplot, study_charts)


# --- the record -----------------------------------------------------------------------------------
def study_record(name, spec, **fields):
    """The registry record of batch study `name` (spec: its BatchStudy)."""
    references = tuple(fields.get("references") or ())
    return Study(name=name, batch_axis=True, batch=spec,
                 derive=lambda record, document, rounds: derive(spec, record),
                 plots=functools.partial(plots, name, spec),
                 summary=lambda record, document: sections(spec, references, record, document), **fields)
