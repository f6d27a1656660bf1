"""The 'report' command: plots and summary again from an existing results.json."""
import os

from gpubench_driver.lib import figures, outputs, results
from gpubench_driver.stages import analyse, collect, render


def regenerate(path, out_dir=None):
    """summary.md, summary.html and plots of the results file at path (a file of every GPU of a node: its
    median), written beside it or in out_dir; returns the summary's path."""
    document = collect.load(path)
    analyse.derive_findings(document, (document["run"].get("options") or {}).get("refine_rounds") or 0)
    results_dir = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    what = "--out" if out_dir else "report (writing beside the results file; --out DIR writes elsewhere)"
    out_dir, _ = outputs.check_out_dir(out_dir or results_dir, what)
    return render.write_outputs(document, out_dir)


ERRORS = (results.ResultsError, figures.DatasheetError, outputs.WriteError)


def register(subparsers):
    parser = subparsers.add_parser("report", help="regenerate summary.md and plots from a results.json")
    parser.add_argument("results", help="a results.json (or .json.gz) or the directory holding it")
    parser.add_argument("--out", help="where to write (default: beside results.json)")
    return parser


def execute(args, argv):
    print(f"summary: {regenerate(args.results, args.out)}")
    return 0
