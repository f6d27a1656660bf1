"""The 'noise-floor' command: rank's one-trial noise floor measured on an A/A pair of runs
(lib/aa_noise_floor.py), written with the runs it was measured on."""
from gpubench_driver.commands import digest
from gpubench_driver.lib import aa_noise_floor, outputs, results

ERRORS = (aa_noise_floor.NoiseFloorError, digest.DigestError, results.ResultsError, outputs.WriteError)


def register(subparsers):
    parser = subparsers.add_parser(
        "noise-floor", help="measure rank's one-trial noise floor on an A/A pair of runs",
        description="Measure the between-run noise floor of one-trial entries per protocol (the 95th percentile "
                    "of |log(B/A)| over the entries ok in both runs) on an A/A pair, the same suite run twice on "
                    "one machine, and write it with the runs it was measured on. rank holds a figure measured "
                    "in fewer than two trials to it.")
    parser.add_argument("results", nargs="+", help="the two runs: results.json (or .json.gz) files, directories "
                                                    "holding one, or run digests holding two runs between them")
    parser.add_argument("--file", default=aa_noise_floor.FILE, help="the noise floor file (default: %(default)s)")

    parser.set_defaults(execute=execute)
    return parser


def execute(args, argv):
    found = aa_noise_floor.record([run for path in args.results for run in digest.runs_in(path)])
    aa_noise_floor.write(found, args.file)
    print(f"noise floor: {', '.join(f'{protocol} {floor:.4f}' for protocol, floor in found['floors'].items())} "
          f"from runs {' and '.join(run['id'] for run in found['runs'])} in {args.file}")
    return 0
