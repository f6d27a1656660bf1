"""Writing the outputs of a run: derived findings, results.json, plots and summary.md."""
import os

from gpubench_driver.lib import html_report, outputs
from gpubench_driver.lib.document import to_markdown
from gpubench_driver.lib import findings
from gpubench_driver import studies
from gpubench_driver.stages import (claims, derive_run, gpus, headline, health, journal, plots, reference, summary,
                                    summary_findings)


def derive_findings(document, refine_rounds):
    for name, study in document["studies"].items():
        record = studies.BY_NAME.get(name)
        # A study the registry does not know (a file from elsewhere) gets the findings any sweep over n has.
        study["derived"] = (record.derive(study, document, refine_rounds) if record
                            else findings.derive(study["entries"], refine_rounds))
        if document.get("references") is not None and record and record.references:
            study["derived"]["reference_comparison"] = reference.compare(document["references"], study["entries"],
                                                                         name)
    # Across the studies (peaks, roofline, energy, clock-limited entries): after each study's own findings.
    document["findings"] = derive_run.derive(document["studies"])
    for name, study in document["studies"].items():
        record = studies.BY_NAME.get(name)
        if record and record.derive_across:
            study["derived"].update(record.derive_across(study, document))
    # The first screen: the headline figures, the health check against them, the claims answered.
    document["findings"]["headline"] = headline.derive_headline(document)
    document["findings"]["health"] = health.derive_health(document)
    document["findings"]["claims"] = claims.derive_claims(document)


def write_outputs(document, out_dir):
    """Plots, summary.md and summary.html (the same page, plots embedded) next to results.json;
    returns the summary path."""
    plots_by_study = plots.write_plots(document["studies"], out_dir)
    if plots_by_study is None:
        print(plots.MISSING_MATPLOTLIB, flush=True)
    elif (document.get("findings") or {}).get("roofline"):
        roofline = plots.write_roofline(document["findings"]["roofline"], out_dir)
        plots_by_study[summary_findings.ROOFLINE_KEY] = [roofline] if roofline else []
    page = summary.blocks(document, plots_by_study, out_dir)  # one page, written as Markdown and as HTML
    summary_path = outputs.write_text(os.path.join(out_dir, "summary.md"), to_markdown(page) + "\n")
    html_report.write(page, [path for paths in (plots_by_study or {}).values() for path in paths], out_dir)
    return summary_path


def regenerate(path, out_dir=None):
    """The 'report' command: plots and summary again from an existing results.json."""
    document = gpus.node_view(journal.load(path))  # a file of every GPU of a node: its median (gpus.py)
    # Findings are a function of the entries: derived again, so that a run cut off before its end
    # (whose file holds entries but no findings) still gets them, and an older file today's.
    derive_findings(document, (document["run"].get("options") or {}).get("refine_rounds") or 0)
    results_dir = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    what = "--out" if out_dir else "report (writing beside the results file; --out DIR writes elsewhere)"
    out_dir, _ = outputs.check_out_dir(out_dir or results_dir, what)
    return write_outputs(document, out_dir)
