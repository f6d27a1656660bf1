"""The driver's top parser, dispatch and shared exits. Each command module of COMMANDS has
register(subparsers) (adds and returns its parser), execute(args, argv) (runs it, returns the exit status)
and ERRORS (its failures, exit 1)."""
import argparse
import signal
import sys

from gpubench_driver.commands import build, check, compare, digest, expected, fleet, noise_model, rank, report, run
from gpubench_driver.lib import outputs, stopping
from gpubench_driver.stages import options as opts

DESCRIPTION = "gpubench: build, run and report the CPU-vs-GPU benchmark studies."
# In the order `gpubench --help` lists them.
COMMANDS = (run, check, fleet, report, compare, rank, expected, digest, noise_model, build)
# A command's failure on its input or its machine: its message, no traceback, exit 1.
ERRORS = tuple(dict.fromkeys(error for command in COMMANDS for error in command.ERRORS))


def build_parser():
    parser = argparse.ArgumentParser(prog="gpubench", description=DESCRIPTION)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command_parser = command.register(subparsers)
        command_parser.set_defaults(command_parser=command_parser, execute=command.execute)
    return parser


def parse(argv):
    """The arguments; an unknown flag is its command's error, with its usage (not the top parser's)."""
    args, unknown = build_parser().parse_known_args(_joined_cmake_args(argv))
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _joined_cmake_args(argv):
    """'--cmake-arg -DX=1' as '--cmake-arg=-DX=1': argparse takes a value that starts with '-' for a flag."""
    joined, rest = [], list(argv)
    while rest:
        arg = rest.pop(0)
        joined.append(f"{arg}={rest.pop(0)}" if arg == "--cmake-arg" and rest else arg)
    return joined


def _interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv):
    args = parse(argv)  # exits 2 on its own errors
    # kill (SIGTERM) and a closed terminal (SIGHUP) stop a run as Ctrl-C does: the benchmark process
    # is stopped, what finished is written and the summary drawn.
    for name in ("SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), _interrupt)
    try:
        return args.execute(args, argv)
    except (opts.UsageError, outputs.OutputFolderError) as error:
        print(f"gpubench: error: {error}", file=sys.stderr)
        return 2
    except ERRORS as error:
        print(f"gpubench: error: {error}", file=sys.stderr)
        return 1
    except stopping.StoppedAfterFinalWrite as stop:
        return stop.exit_status  # the run's outputs were written whole: its status says how it ended
    except KeyboardInterrupt:
        print("gpubench: interrupted", file=sys.stderr)
        return 130
