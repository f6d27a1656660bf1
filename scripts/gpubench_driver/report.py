"""Writing the outputs of a run: derived findings, results.json, plots and summary.md."""
import os

from gpubench_driver import (derive, derive_batch, derive_overlap, derive_precision, derive_run, derive_transfer,
                             html_report, plots, reference, results, summary)


def _derived(name, study, refine_rounds, document):
    if name == "precision":
        return derive_precision.derive(study["entries"])
    if name == "transfer":
        return derive_transfer.derive(study["entries"], (document["machine"].get("gpus") or [None])[0])
    if name == "overlap":
        return derive_overlap.derive(study["entries"])
    if name in derive_batch.STUDIES:
        return derive_batch.derive(name, study)
    return derive.derive(study["entries"], refine_rounds)


def derive_findings(document, refine_rounds):
    for name, study in document["studies"].items():
        study["derived"] = _derived(name, study, refine_rounds, document)
        if document.get("references") is not None and name in reference.RUNS:
            study["derived"]["reference_comparison"] = reference.compare(document["references"], study["entries"],
                                                                         name)
    # Across the studies (peaks, roofline, energy, clock-limited entries): after each study's own findings.
    document["findings"] = derive_run.derive(document["studies"])


def write_outputs(document, out_dir):
    """Plots, summary.md and summary.html (the same page, plots embedded) next to results.json;
    returns the summary path."""
    plot_paths = plots.write_plots(document["studies"], out_dir)
    if plot_paths is None:
        print(plots.MISSING_MATPLOTLIB, flush=True)
    elif (document.get("findings") or {}).get("roofline"):
        plot_paths += [path for path in [plots.write_roofline(document["findings"]["roofline"], out_dir)] if path]
    markdown = summary.render(document, plot_paths, out_dir)
    summary_path = os.path.join(out_dir, "summary.md")
    with open(summary_path, "w", encoding="utf-8") as stream:
        stream.write(markdown + "\n")
    html_report.write(markdown, plot_paths, out_dir)
    return summary_path


def regenerate(path, out_dir=None):
    """The 'report' command: plots and summary again from an existing results.json."""
    document = results.load(path)
    # Findings are a function of the entries: derived again, so that a run cut off before its end
    # (whose file holds entries but no findings) still gets them, and an older file today's.
    derive_findings(document, (document["run"].get("options") or {}).get("refine_rounds") or 0)
    results_dir = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    out_dir = out_dir or results_dir
    os.makedirs(out_dir, exist_ok=True)
    return write_outputs(document, out_dir)
