"""gpubench driver: builds the study binaries, runs them, and turns their output into results.json, plots and a summary."""
