#!/usr/bin/env python3
"""What `run --against A` can decide for the entries compare leaves undecided at the trials of one run (CPU
entries and the GPU entries other than device-timed ones of 100 us or more), simulated on the committed A/A pairs
(results/aa/*.json.gz) with a known change, and why the rest stay undecided.

How it is simulated: per A/A pair, the noise model is fitted on every run but the two (leave one pair out, as
scripts/evaluate_compare.py does). The first run is A, as measured. The second is this run: its trials' medians as
measured, times the change (1.10, or 1.00 for the A/A false alarms). Its extra trials are drawn (seeded) from the
posterior predictive of the run's own mean: per sequence a run mean theta ~ N(mean of its k measured logs, s^2 / k),
then each extra trial's log median ~ N(theta, s^2), s the sd the model gives one trial of the entry (its kind's
prior moderated by its A/A history and its measured trials): the run's offset is kept, its trials' noise is not.
After each trial the sequential rule (lib/sequential.py: look, with the Variances the run's measured trials fix)
reads the entry; an entry stops when decided, hopeless (conditional power under 10%) or at the most trials of one
unit (MOST_TRIALS, 20). No budget is applied: a digest keeps no unit's wall time, so the share flagged is what the
rule reaches at 20 trials, an upper bound on what the default budget (600 s) buys. Entries are simulated one by one
(the rule has no family: its level holds per entry at every pass).

Beside it, per kind, why: the sd of the log ratio of which part is fixed (A's median, both runs' between-run
parts: no trial of this run shrinks it) against the band's margin for a 10% change, log(1.10) - log(1 + band):
an entry whose fixed sd alone times the one-sided 95% normal quantile exceeds the margin is undecidable by any
number of trials of this run; and the same were A's median one of 20 trials (what is left then is both runs'
between-run parts).

Run from the repository root: /usr/bin/python3 scripts/evaluate_against.py [--draws N]
"""
import argparse
import glob
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import evaluate_compare  # noqa: E402
from gpubench_driver.commands import digest  # noqa: E402
from gpubench_driver.lib import noise_model, noise_verdicts, sequential  # noqa: E402

CHANGE = 1.10
GROUPS = {"cpu": lambda kind: kind in ("cpu-long", "cpu-short"),
          "GPU other than device-timed long": lambda kind: kind not in (
              *evaluate_compare.DEVICE_TIMED_LONG, "cpu-long", "cpu-short")}


def simulate(model, key, entry, logs_a, logs_b, factor, rng):
    """The state the sequential rule reaches for one entry, this run's logs times factor, extra trials drawn."""
    median_s = math.exp(statistics.median(logs_b))
    kind, _ = noise_verdicts.kind_in(model, entry, median_s, key)
    kind_model, history = model.kinds[kind], model.history(key)
    measured = [value + math.log(factor) for value in logs_b]
    spread = sequential.variances(kind_model, history, logs_a, measured)
    sd = math.sqrt(spread.per_trial)
    centre = rng.normal(statistics.fmean(measured), sd / math.sqrt(len(measured)))
    logs = list(measured)
    while True:
        found = sequential.look(spread, sequential.estimate(logs_a, logs), len(logs), noise_verdicts.band_of(kind))
        if found.state != sequential.UNDECIDED or len(logs) >= sequential.MOST_TRIALS:
            return found.state, len(logs)
        logs.append(float(rng.normal(centre, sd)))


def fixed_bound(model, key, entry, logs_a, logs_b):
    """Whether the part no trial of this run shrinks already keeps a 10% change from being called slower: with A as
    measured, and were A's median one of MOST_TRIALS trials (its within-run variance then as measured); and the
    Variances."""
    kind, _ = noise_verdicts.kind_in(model, entry, math.exp(statistics.median(logs_b)), key)
    kind_model = model.kinds[kind]
    spread = sequential.variances(kind_model, model.history(key), logs_a, logs_b)
    larger_a = spread.fixed + kind_model.within(model.history(key), logs_a)[0] * (
        noise_model.median_variance(sequential.MOST_TRIALS) - noise_model.median_variance(len(logs_a)))
    margin = math.log(CHANGE) - math.log1p(noise_verdicts.band_of(kind))
    quantile = noise_model.distributions.norm.ppf(0.95)
    return quantile * math.sqrt(spread.fixed) >= margin, quantile * math.sqrt(larger_a) >= margin, spread


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=20, help="simulated sequences per entry (default: %(default)s)")
    args = parser.parse_args(argv)
    rng = noise_model.numpy.random.default_rng(30)
    runs = [run for path in sorted(glob.glob(os.path.join(evaluate_compare.AA, "*.json.gz")))
            for run in digest.load(path)["runs"]]
    print("| pair | group / kind | n | A/A flagged | +10% flagged | +10% hopeless | median trials | "
          "fixed part alone forbids +10% | the same, A of 20 trials | fixed sd | per-trial sd |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, first, second, note in evaluate_compare.pairs_to_evaluate(runs):
        if note:
            continue
        model = noise_model.read(noise_model.fit([run for run in runs if run["id"] not in (first["id"], second["id"])]))
        entries = evaluate_compare.common_entries(first, second)
        kinds = [evaluate_compare.kind(model, key, entry, a, b, judged=True) for key, entry, a, b in entries]
        rows = {}
        for (key, entry, a, b), kind in zip(entries, kinds):
            groups = [name for name, holds in GROUPS.items() if holds(kind)]
            if not groups:
                continue
            logs_a, logs_b = [math.log(v) for v in a], [math.log(v) for v in b]
            null = [simulate(model, key, entry, logs_a, logs_b, 1.0, rng)[0] for _ in range(args.draws)]
            slowed = [simulate(model, key, entry, logs_a, logs_b, CHANGE, rng) for _ in range(args.draws)]
            forbidden, forbidden_larger_a, spread = fixed_bound(model, key, entry, logs_a, logs_b)
            row = (statistics.fmean(s in (noise_verdicts.FASTER, noise_verdicts.SLOWER) for s in null),
                   statistics.fmean(s == noise_verdicts.SLOWER for s, _ in slowed),
                   statistics.fmean(s == sequential.HOPELESS for s, _ in slowed),
                   statistics.median(n for _, n in slowed), forbidden, forbidden_larger_a, math.sqrt(spread.fixed),
                   math.sqrt(spread.per_trial))
            for name in (*groups, f"  {kind}"):
                rows.setdefault(name, []).append(row)
        for name, found in rows.items():
            column = list(zip(*found))
            print(f"| {label} | {name} | {len(found)} | {statistics.fmean(column[0]):.1%} | "
                  f"{statistics.fmean(column[1]):.0%} | {statistics.fmean(column[2]):.0%} | "
                  f"{statistics.median(column[3]):g} | "
                  f"{statistics.fmean(column[4]):.0%} | {statistics.fmean(column[5]):.0%} | "
                  f"{statistics.median(column[6]):.1%} | {statistics.median(column[7]):.1%} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
