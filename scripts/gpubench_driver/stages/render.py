"""summary.md and summary.html: the page's frame (header, warnings, run --like, plots) around the first screen
(render_first_screen), each study's sections (its plug-in's `summary`) and those across the studies
(render_across). Every section reads findings analyse.derive_findings computed; none computes one itself."""
import json
import os

from gpubench_driver import studies
from gpubench_driver.lib import charts, html_report, outputs, resumable, trial_rule
from gpubench_driver.lib.document import (Beside, Figures, Heading, Table, bullets, figure_of, folded_long_tables,
                                          paragraph, section, table, to_markdown)
from gpubench_driver.lib.formatting import md
from gpubench_driver.stages import against, plots, render_across, render_first_screen


def machine_line(document):
    cpu = document["machine"].get("cpu") or {}
    memory = document["machine"].get("memory_total_bytes")
    parts = [f"CPU {md(cpu.get('model'))} ({cpu.get('sockets')} sockets, {cpu.get('cores')} cores, "
             f"{cpu.get('threads')} threads)" + (f", {memory / 2 ** 30:.0f} GiB memory" if memory else ""),
             f"{md(document['machine'].get('os'))}, {md(document['machine'].get('kernel'))}"]
    devices = ((document["software"].get("gpubench_env") or {}).get("cuda") or {}).get("devices") or []
    # A GPU the machine has but the run did not use (--cpu-only, a CUDA runtime that could not) is said unused.
    unused = "" if document["gpu"].get("available") else f"; not used: {md(document['gpu'].get('reason'))}"
    for index, gpu in enumerate(document["machine"].get("gpus") or []):
        parts.append("GPU " + _gpu_description(gpu, devices[index] if index < len(devices) else {}, unused))
    blas = document["software"].get("openblas") or {}
    parts.append(f"OpenBLAS {md(blas.get('version'))} (core {md(blas.get('core'))}, "
                 f"{md(blas.get('threads'))} threads)")
    return "; ".join(parts)


def _gpu_description(smi, device, unused=""):
    """nvidia-smi's view and the CUDA runtime's view of one GPU, in a phrase; unused: why the run did not use it."""
    facts = [f"{md(device['multiprocessors'])} SMs" if device.get("multiprocessors") else None,
             f"compute capability {md(device['compute_capability'])}" if device.get("compute_capability") else None,
             f"{smi['memory.total'] / 1024:.0f} GiB" if smi.get("memory.total") else None,
             f"max SM clock {smi['clocks.max.sm']} MHz" if smi.get("clocks.max.sm") else None,
             f"power limit {smi['power.limit']:.0f} W" if smi.get("power.limit") else None,
             (f"PCIe Gen{smi['pcie.link.gen.current']} x{smi['pcie.link.width.current']}"
              if smi.get("pcie.link.gen.current") and smi.get("pcie.link.width.current") else None),
             f"ECC {md(smi['ecc.mode.current'])}" if smi.get("ecc.mode.current") else None,
             f"driver {md(smi.get('driver_version'))}"]
    return f"{md(smi.get('name'))} ({', '.join(fact for fact in facts if fact)}{unused})"


def _header(document):
    run = document["run"]
    git = run.get("git") or {}
    revision = md(git.get("revision")) + (" (uncommitted changes)" if git.get("dirty") else "")
    return [Heading(1, f"gpubench run {md(run['id'])}"), bullets([
        f"Status: {md(run['status'])}; started {md(run['started'])}, finished {md(run.get('finished'))}",
        *resumable.summary_lines(run), *trial_rule.summary_lines(document), *against.summary_lines(run),
        f"Git revision: {revision}", f"Machine: {machine_line(document)}"])]


def _warnings(document):
    items = [md(warning) for warning in document["warnings"]]
    if not document["gpu"].get("available"):
        items.append(f"The GPU part was not run: {md(document['gpu'].get('reason'))}")
    return section("Warnings", [bullets(items)]) if items else []


def _like(document):
    """run --like: the run repeated and where this machine's environment differs from it."""
    repeated = document["run"].get("like")
    if not isinstance(repeated, dict):
        return []
    found = repeated.get("differences") or []
    return section("Compared with the recorded run", [
        paragraph(f"Repeats the configuration of run {md(repeated.get('run_id'))} ({md(repeated.get('path'))})."),
        table(["", "recorded there", "here"], [[md(d.get("what")), md(d.get("recorded")), md(d.get("here"))]
                                               for d in found]) if found
        else paragraph("Its recorded environment is the same as this one in every field compared.")])


def _figures(paths, out_dir):
    return Figures(tuple(figure_of(os.path.relpath(path, out_dir)) for path in paths))


def with_plots(blocks, paths, out_dir):
    """A study's sections, its long tables folded, with its plots beside its first table (else at the end)."""
    blocks = folded_long_tables(blocks)
    if not paths:
        return blocks
    first = next((index for index, block in enumerate(blocks) if isinstance(block, Table)), None)
    if first is None:
        return blocks + [_figures(paths, out_dir)]
    return blocks[:first] + [Beside((blocks[first],), _figures(paths, out_dir))] + blocks[first + 1:]


def _no_plots(plots_by_study):
    if plots_by_study is not None:
        return []
    return section("Plots", [paragraph("Plots were skipped: matplotlib is not installed for this Python "
                                       "(install python3-matplotlib).")])


def blocks(document, plots_by_study, out_dir):
    """The whole page as blocks; plots_by_study: {study: [PNG paths]}, None without matplotlib."""
    found = _header(document) + render_first_screen.first_screen(document) + _warnings(document) + _like(document)
    for name, study in document["studies"].items():
        if name in studies.BY_NAME:
            found += with_plots(studies.BY_NAME[name].summary(study, document), (plots_by_study or {}).get(name),
                                out_dir)
    across = render_across.sections(document, plots_by_study, out_dir)
    return (found + folded_long_tables(across) + render_across.noise_floor(document)
            + folded_long_tables(render_across.clocks(document)) + _no_plots(plots_by_study))


def write_outputs(document, out_dir):
    """Plots, summary.md and summary.html (the same page, plots embedded); returns summary.md's path."""
    plots_by_study = plots.write_plots(document["studies"], out_dir)
    if plots_by_study is None:
        print(charts.MISSING_MATPLOTLIB, flush=True)
    elif (document.get("findings") or {}).get("roofline"):
        roofline = plots.write_roofline(document["findings"]["roofline"], out_dir)
        plots_by_study[render_across.ROOFLINE_KEY] = [roofline] if roofline else []
    page = blocks(document, plots_by_study, out_dir)  # one page, written as Markdown and as HTML
    summary_path = outputs.write_text(os.path.join(out_dir, "summary.md"), to_markdown(page) + "\n")
    html_report.write(page, [path for paths in (plots_by_study or {}).values() for path in paths], out_dir)
    return summary_path


def render(document, plots_by_study, out_dir):
    """summary.md's text."""
    return to_markdown(blocks(document, plots_by_study, out_dir))


def write_page(out_dir, name, blocks, record, page_end="", record_end="", **dumps):
    """A command's <name>.md and .html from its blocks, .json from its record; returns the .md's path."""
    os.makedirs(out_dir, exist_ok=True)
    path = outputs.write_text(os.path.join(out_dir, f"{name}.md"), to_markdown(blocks) + page_end)
    outputs.write_text(os.path.join(out_dir, f"{name}.json"), json.dumps(record, indent=1, **dumps) + record_end)
    html_report.write(blocks, [], out_dir, name=f"{name}.html")
    return path
