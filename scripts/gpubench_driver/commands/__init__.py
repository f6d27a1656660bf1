"""The commands over the stages, one module each (run, report, compare, rank, expected, digest,
noise_model, build): each registers its parser, runs and prints what it wrote; cli.py holds
the top parser and dispatch."""
