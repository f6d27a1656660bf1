"""summary.md: the findings of one run in a page of Markdown."""
import os

from gpubench_driver import derive
from gpubench_driver.formatting import md, rate, ratio, seconds

HEADLINE_SIZES = (200, 1024, 4096, 8192)


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


def _crossovers(derived):
    lines = ["| GPU mode | crossover n | bracket | GPU impl | how |", "|---|---|---|---|---|"]
    for found in derived.get("crossovers", []):
        bracket = f"{found.get('lower') or 'n/a'} .. {found.get('upper') or 'n/a'}"
        estimate = found.get("estimate_n") or found.get("upper") or "none"
        how = md(found.get("method")) + (f" ({md(found['note'])})" if found.get("note") else "")
        lines.append(f"| {md(found['mode'])} | {estimate} | {bracket} | {md(found.get('gpu_impl'))} | {how} |")
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


def _best_rates(derived):
    lines = ["| implementation | mode | best rate | at n |", "|---|---|---|---|"]
    lines += [f"| {md(row['impl'])} | {md(row['mode'])} | {rate(row['flop_per_s'])} | {row['n']} |"
              for row in derived.get("best_rates", [])]
    return _section("Best rates", lines)


def _caps(study):
    capped = [impl for impl in study["implementations"] if isinstance(impl, dict) and impl.get("max_size")]
    lines = [f"- {md(impl.get('id'))}: run up to n={impl['max_size']} ({md(impl.get('cap_reason'))})"
             for impl in capped]
    return _section("Size caps", lines or ["No implementation is capped."])


def _failures(study):
    lines = [f"- {md(entry['name'])}: {md(entry['status'])}: {md(entry.get('message'))}"
             for entry in study["entries"] if entry["status"] != "ok"]
    lines += [f"- the benchmark process at n={invocation.get('sizes')} {md(invocation.get('exit'))}"
              for invocation in study["invocations"]]
    return _section("Skipped and failed entries", lines) if lines else []


def _references(derived, references):
    if references is None:
        return _section("Reference libraries", ["Not run (--no-reference or --cpu-only)."])
    lines = []
    for name, reference in references.items():
        if reference.get("note"):
            lines.append(f"- {md(name)}: {md(reference['note'])}")
        lines += [_reference_line(result) for result in reference.get("results") or []]
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


def render(document, plot_paths, out_dir):
    study = document["studies"].get("matmul")
    lines = _header(document) + _warnings(document)
    if study:
        derived = study["derived"]
        lines += (_crossovers(derived) + _headline_speedups(study["entries"]) + _best_rates(derived)
                  + _caps(study) + _failures(study) + _references(derived, document.get("references")))
    lines += _plots(plot_paths, out_dir)
    return "\n".join(lines)
