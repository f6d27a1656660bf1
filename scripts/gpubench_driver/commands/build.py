"""The 'build' command: configure and build only; and the --cmake-arg option it shares with 'run'."""
import argparse
import os

from gpubench_driver.stages import build, session

ERRORS = (build.BuildError,)


def add_cmake_arg(parser):
    parser.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                        help="an option for CMake's configure, e.g. -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON (repeatable; "
                             f"after those in ${build.CMAKE_ARGS_VARIABLE}, split as a shell would)")


def register(subparsers):
    parser = subparsers.add_parser("build", help="configure and build only")
    parser.add_argument("--build-dir", help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--no-setup", action="store_true", help=argparse.SUPPRESS)
    add_cmake_arg(parser)
    return parser


def execute(args, argv):
    build.configure_and_build(session.SOURCE_DIR, os.path.abspath(args.build_dir or session.default_build_dir()),
                              extra_args=args.cmake_arg)
    return 0
