"""The commands (run, report, compare, rank, expected, build) over the stages: each parses its
arguments, calls the stages and prints what it wrote."""
