"""`gpubench noise-model DIGEST... [--out FILE]`: fit the noise model (noise_model.py) on A/A runs and
write it, by default to scripts/noise_model.json. Errors it raises for the command line to report:
ERRORS."""
from gpubench_driver.commands import digest
from gpubench_driver.lib import noise_model, outputs, results

ERRORS = (noise_model.NoiseModelError, digest.DigestError, results.ResultsError, outputs.WriteError)


def register(subparsers):
    parser = subparsers.add_parser(
        "noise-model", help="fit the noise model compare's verdicts read, on A/A runs",
        description="Fit the noise model on A/A runs (the same suite run twice or more on one machine; runs that "
                    "share revision, machine and options are taken as repeats): per kind of entry the variance "
                    "of log times between the trials of a run and between runs, and per entry its own width, "
                    "with the runs it was measured on (docs/methodology.md, The noise model).")
    parser.add_argument("results", nargs="+", metavar="DIGEST",
                        help="run digests (gpubench digest, e.g. results/aa/*.json.gz) or results.json files, or "
                             "folders holding one")
    parser.add_argument("--out", default=noise_model.FILE, metavar="FILE",
                        help="the noise model file to write (default: %(default)s)")
    return parser


def summary(document):
    """One line per kind: the typical sigma_w and sigma_b and what they were measured on."""
    lines = []
    for kind, record in document["kinds"].items():
        typical, measured = record["typical"], record["measured_on"]
        lines.append(f"  {kind}: sigma_w {typical['sigma_w']:.2%}, sigma_b {typical['sigma_b']:.2%} "
                     f"(typical entry; {measured['entries']} entries, {measured['pairs']} A/A pair entries, "
                     f"{record['tail']['share']:.1%} of them beyond the 99% interval)")
    return lines


def execute(args, argv):
    runs = [run for path in args.results for run in digest.runs_in(path)]
    document = noise_model.fit(runs)
    noise_model.write(document, args.out)
    print(f"noise model: {args.out} from {len(runs)} run(s), {len(document['replicate_sets'])} replicate set(s), "
          f"{len(document['entries'])} entries with their own width")
    print("\n".join(summary(document)))
    return 0
