"""Pieces of summary.md that several studies' sections share: crossover cells, best rates, size caps,
skipped and failed entries, reference-run notes. Each reads a study's record or its `derived`."""
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.findings import failure_text
from gpubench_driver.lib.formatting import md, rate
from gpubench_driver.lib.stats import finite

AXIS_TITLES = {"impl": "implementation", "mode": "mode", "precision": "precision"}
STEADY_STATE = ("Both sides are timed in the steady state by the study binary's protocol: warmed up until the "
                "per-call time settles, then sampled until one stopping rule is met (docs/methodology.md, "
                "Reference timings).")


def unsettled_mark(row):
    """What a comparison row's ratio is qualified by when the reference's warm-up did not settle."""
    return " (reference not settled)" if row.get("reference_settled") is False else ""


def time_ratio_cell(row):
    """A reference comparison's time ratio (study over reference), or why there is none."""
    return md(row["note"]) if row["time_ratio"] is None else f"{row['time_ratio']:.3f}"


def noise_note(beyond_noise):
    """What a comparison's stats.beyond_spread verdict adds to its figure."""
    return {True: "", False: ", within noise"}.get(beyond_noise, ", no interval")


def crossover_header(axis="n"):
    return ["GPU timed as", f"crossover {axis}", "bracket", "GPU impl", "how"]


def crossover_cells(found, axis="n"):
    """The cells of a crossover along the axis ('n' or 'batch'), as crossover_header names them."""
    bracket = f"{found.get('lower') or 'n/a'} .. {found.get('upper') or 'n/a'}"
    estimate = str(found.get(f"estimate_{axis}") or found.get("upper") or "none")
    interval = found.get(f"estimate_{axis}_interval")  # findings.over_trials: it holds the estimate
    if interval:
        crossing = [value for value in found[f"estimate_{axis}_trials"] if finite(value) is not None]
        estimate += f" ({interval['low']}–{interval['high']} over {len(crossing)} trials)"
    how = md(found.get("method")) + (f" ({md(found['note'])})" if found.get("note") else "")
    return [md(found.get("timed_as") or "each entry's headline time"), estimate, bracket,
            md(found.get("gpu_impl")), how]


def table_section(title, header, rows, cells, *after, empty=None):
    """A section of a table of cells(row) per row and the blocks after it; without rows, the sentence empty or none."""
    if not rows:
        return section(title, [paragraph(empty)]) if empty else []
    return section(title, [table(header, map(cells, rows)), *after])


def best_rates_section(derived, axes=("impl", "mode"), title="Best rates"):
    rows = [[md(row[axis]) for axis in axes] + [rate(row["flop_per_s"]), str(row["n"])]
            for row in derived.get("best_rates", [])]
    return section(title, [table([AXIS_TITLES[axis] for axis in axes] + ["best rate", "at n"], rows)])


def caps(study):
    """The implementations the study caps (its description), and why."""
    items = [f"{md(impl.get('id'))}: run up to n={md(impl['max_size'])} ({md(impl.get('cap_reason'))})"
             for impl in study["implementations"] if isinstance(impl, dict) and impl.get("max_size")]
    return section("Size caps", [bullets(items) if items else paragraph("No implementation is capped.")])


def invocation_items(study):
    """The benchmark processes that ended badly, one list item each."""
    return [f"{md(invocation.get('process') or 'the benchmark process')} at n={invocation.get('sizes')} "
            f"{md(invocation.get('exit'))}" for invocation in study["invocations"]]


def failed_entries_section(study):
    """Every entry that is not ok (derived failed_entries) and the processes that ended badly."""
    items = [f"{md(row['name'])}: {md(failure_text(row))}" for row in study["derived"].get("failed_entries", [])]
    items += invocation_items(study)
    return section("Skipped and failed entries", [bullets(items)]) if items else []


def _where(sizes):
    """'n = 4096, 8192', or with a batch axis 'n = 64 (batch 512), 256 (batch 8, 512)'."""
    return "n = " + ", ".join(str(found["n"]) + (f" (batch {', '.join(map(str, found['batches']))})"
                                                  if found["batches"] else "") for found in sizes)


def failures_section(study, title):
    """The derived failures and the processes that ended badly."""
    items = [f"{md(row['impl'])} {md(row['precision'])} ({md(', '.join(row['modes']))}; {_where(row['sizes'])}): "
             f"{md(row['reason'])}" for row in study["derived"].get("failures", [])]
    items += invocation_items(study)
    return section(title, [bullets(items)]) if items else []


def references_not_run(document):
    """Why the run timed no references, from the options it recorded."""
    run = document.get("run") or {}
    options = run.get("options") or {}
    if options.get("cpu_only"):
        why = "--cpu-only runs no references"
    elif options.get("quick") and not options.get("reference"):
        why = "a --quick run skips the references (--reference times them)"
    elif options.get("reference") is False:
        why = "--no-reference was given"
    elif options.get("reference"):
        why = f"the run ended before its references were timed (status {md(run.get('status'))})"
    else:  # a file without its options
        return "Not run (--no-reference, --cpu-only or --quick)."
    return f"Not run: {why}."


def reference_section(title, document, runs, blocks, result_item=None, only_timed=False):
    """A study's section on its reference runs: blocks(items) of their notes and result_item(key, result)."""
    references = document.get("references")
    if references is None:
        return section(title, [paragraph(references_not_run(document))])
    timed = ([(key, run) for key, run in references.items() if key in runs] if only_timed
             else [(key, references.get(key) or {"note": "not run"}) for key in runs])
    items = []
    for key, run in timed:
        items += [f"{md(key)}: {md(note)}" for note in [run.get("note"), *(run.get("notes") or [])] if note]
        items += dict.fromkeys(result_item(key, result) for result in run.get("results") or []) if result_item else []
    found = blocks(items)
    return section(title, found) if found else []


def compared(items, rows, none_measured, shown):
    """The run notes (items) and shown(rows) where any row has a time ratio, else the sentence none_measured."""
    if not any(row["time_ratio"] is not None for row in rows):
        return [bullets(items), paragraph(none_measured)]
    return [bullets(items), *shown(rows)]


def target_lines(rows):
    """One line per distinct target the comparison rows are held to."""
    return [f"Target (stated, not checked): {md(target)}." for target in dict.fromkeys(row["target"] for row in rows
                                                                                       if row["target"])]


def table_blocks(header, rows, cells, *after):
    """A table of cells(row) per row and the blocks after it, or no block without rows (a part of a section)."""
    return [table(header, map(cells, rows)), *after] if rows else []
