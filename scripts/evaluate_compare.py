#!/usr/bin/env python3
"""How well compare's verdicts answer, measured on the committed A/A runs (results/aa/*.json.gz): per
kind of entry, the share an A/A pair calls `same` and the share it flags (a false alarm: nothing
changed), and the share flagged `slower` after a known slowdown is injected into the second run (its
trials' medians times 1.05, 1.10, 1.20) for every entry of the kind at once, or for one entry at a time
(each in turn, the others unchanged). The verdicts are compare's (noise_verdicts.compare and decide, as
commands/compare.py calls them), with a noise model fitted, pair by pair, on every run but the two
compared (leave one pair out); families per study, a digest not saying which entries are headline.

Then, per pair and kind, why a +10% change of every entry of the kind goes unflagged: the share flagged as compare
flags it; as each entry's own test would flag it without its family's control (its interval beyond the band);
with as many more trials of each side as bring the side with fewer to MOST_TRIALS (20), the model's variance of
its median then, between-run parts as they are (what more trials of each run cannot shrink); and were the band 0
(its interval above 1); with the median share of the comparison's variance that is between runs. The columns are
what each cause costs, not a proposal.

Run from the repository root: /usr/bin/python3 scripts/evaluate_compare.py [--no-entry-history]
"""
import argparse
import glob
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpubench_driver.commands import digest  # noqa: E402
from gpubench_driver.lib import noise_model, noise_verdicts, stats  # noqa: E402

AA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "aa")
SLOWDOWNS = (0.05, 0.10, 0.20)
STEADY = 0.01
# The rows: the model's kinds, the groups the targets name, and the steady part of the first
# (entries whose own width, as the model fitted without the pair knows it, is under STEADY).
DEVICE_TIMED_LONG = ("throughput-long", "throughput-noisy-long", "host-paced-long")
GROUPS = {
    "throughput-long": lambda kind, width: kind == "throughput-long",
    f"throughput-long, own sigma_w < {STEADY:.0%}": lambda kind, width: kind == "throughput-long" and width < STEADY,
    "throughput-noisy-long": lambda kind, width: kind == "throughput-noisy-long",
    "host-paced-long": lambda kind, width: kind == "host-paced-long",
    "all device-timed, 100 us or more (the kinds above)": lambda kind, width: kind in DEVICE_TIMED_LONG,
    "throughput-short": lambda kind, width: kind == "throughput-short",
    "latency-long": lambda kind, width: kind == "latency-long",
    "latency-short": lambda kind, width: kind == "latency-short",
    "cpu": lambda kind, width: kind in ("cpu-long", "cpu-short"),
    "GPU other than device-timed long": lambda kind, width: kind not in (*DEVICE_TIMED_LONG, "cpu-long", "cpu-short"),
}


def pairs_to_evaluate(runs):
    """[(label, first run, second run, note)]: each replicate set's first two runs, and the two lone H100
    runs of other revisions against each other (not replicates: the suite changed between them)."""
    found = []
    for members in noise_model.replicate_sets(runs):
        if len(members) >= 2:
            found.append((f"{members[0]['id']} / {members[1]['id']}", members[0], members[1], ""))
    lone = {run["id"]: run for members in noise_model.replicate_sets(runs) if len(members) == 1 for run in members}
    if {"h100-aa1-20261124", "h100-aa-a-20261124"} <= lone.keys():
        found.append(("h100-aa1-20261124 / h100-aa-a-20261124", lone["h100-aa1-20261124"], lone["h100-aa-a-20261124"],
                      "two revisions: not a replicate pair, an upper bound on the noise"))
    return found


def common_entries(first, second):
    """[(key, A's entry, A medians, B medians)] of the entries ok in both runs."""
    b = {noise_model.entry_key(entry): entry for entry in second["entries"]}
    found = []
    for entry in first["entries"]:
        other = b.get(noise_model.entry_key(entry))
        medians = noise_model.trial_medians(entry)
        if medians and other is not None and noise_model.trial_medians(other) and entry["protocol"] is not None:
            found.append((noise_model.entry_key(entry), entry, medians, noise_model.trial_medians(other)))
    return found


def kind(model, key, entry, first, second, judged=False):
    """The entry's kind, by its A/A history in the model (fitted without the pair); judged: the kind compare
    judges it as (commands/compare.py), the model's widest where the model has none of the entry's own."""
    median_s = math.sqrt(statistics.median(first) * statistics.median(second))
    if judged:
        return noise_verdicts.kind_in(model, entry, median_s, key)[0]
    return noise_model.kind_of(entry, median_s, noise_model.shown_noisy(model.history(key)))


class Method:
    def __init__(self, model, entries):
        self.model, self.entries = model, entries
        self.families = [key[0] for key, *_ in entries]  # the digest does not say which entries are headline
        self.baseline = [self.comparison(index) for index in range(len(entries))]

    def comparison(self, index, factor=1.0):
        key, entry, first, second = self.entries[index]
        return noise_verdicts.compare(self.model, key, kind(self.model, key, entry, first, second, judged=True),
                                      noise_verdicts.Side(tuple(first)),
                                      noise_verdicts.Side(tuple(value * factor for value in second)))

    def verdicts(self, factors):
        comparisons = [self.comparison(index, factors[index]) if index in factors else self.baseline[index]
                       for index in range(len(self.entries))]
        return [v.verdict for v in noise_verdicts.decide(comparisons, self.families, advise=False)]

    def isolated(self, index, factor):
        """The verdict of entry index alone slowed by factor: its family's control redone."""
        members = [i for i, family in enumerate(self.families) if family == self.families[index]]
        comparisons = [self.comparison(i, factor) if i == index else self.baseline[i] for i in members]
        return noise_verdicts.decide(comparisons, [0] * len(members), advise=False)[members.index(index)].verdict


def share(values):
    return f"{100 * statistics.fmean(values):.0f}%" if values else "-"


def evaluate(method, kinds, widths, isolated_sample):
    """{group: {column: share}} on one pair."""
    plain = method.verdicts({})
    isolated = {}  # (index, slowdown): verdict, shared by the groups an entry is in
    rows = {}
    for group, holds in GROUPS.items():
        indices = [i for i, (k, width) in enumerate(zip(kinds, widths)) if holds(k, width)]
        if not indices:
            continue
        row = {"n": len(indices), "same": share([plain[i] == "same" for i in indices]),
               "flagged": share([plain[i] in ("faster", "slower") for i in indices]),
               "MDE": f"{statistics.median(method.baseline[i].mde for i in indices):.1%}"}
        for slowdown in SLOWDOWNS:
            slowed = method.verdicts({i: 1 + slowdown for i in indices})
            row[f"all {slowdown:.0%}"] = share([slowed[i] == "slower" for i in indices])
            sample = indices[::max(1, len(indices) // isolated_sample)]
            for i in sample:
                if (i, slowdown) not in isolated:
                    isolated[(i, slowdown)] = method.isolated(i, 1 + slowdown)
            row[f"one {slowdown:.0%}"] = share([isolated[(i, slowdown)] == "slower" for i in sample])
        rows[group] = row
    return rows


def why_rows(label, method, kinds):
    """Per kind: what a +10% change of every entry of the kind meets (the module's docstring)."""
    rows = []
    for kind_name in noise_model.KINDS:
        indices = [i for i, k in enumerate(kinds) if k == kind_name]
        if not indices:
            continue
        slowed = method.verdicts({i: 1.10 for i in indices})
        alone, most_trials, no_band, shares = [], [], [], []
        for i in indices:
            c = method.comparison(i, 1.10)
            kind_model, history, logs_a, logs_b = c.plan
            bound = math.log1p(c.band)
            alone.append(math.log(c.low) >= bound)
            no_band.append(c.low > 1)
            more = noise_verdicts.MOST_TRIALS - min(len(logs_a), len(logs_b))
            sd, df, _ = noise_verdicts._spread(kind_model, history, logs_a, logs_b, more)
            half = noise_verdicts._quantile(0.5 + noise_verdicts.CONFIDENCE / 2, df) * sd
            most_trials.append(math.log(c.ratio) - half >= bound)
            shares.append(c.between_share)
        rows.append(f"| {label} | {kind_name} | {len(indices)} | {share([slowed[i] == 'slower' for i in indices])} | "
                    f"{share(alone)} | {share(most_trials)} | {share(no_band)} | {statistics.median(shares):.0%} |")
    return rows


def tail_rows(label, entries, kinds, widths):
    """Per kind: the median and 95th percentile of |B/A - 1| over the pair's entries, and the entries
    beyond that percentile by study and protocol, with how many of them the model already knows as
    noisy in their own trials (sigma_w of 2% or more)."""
    rows = []
    for kind_name in noise_model.KINDS:
        found = [(abs(math.log(statistics.median(b) / statistics.median(a))), key[0], entry["protocol"], width)
                 for (key, entry, a, b), k, width in zip(entries, kinds, widths) if k == kind_name]
        if len(found) < 5:
            continue
        cut = stats.nearest_rank_percentile([offset for offset, *_ in found], 0.95)
        tail = [row for row in found if row[0] > cut]
        counts = {}
        for _, study, protocol, _ in tail:
            counts[f"{study} ({protocol})"] = counts.get(f"{study} ({protocol})", 0) + 1
        rows.append(f"| {label} | {kind_name} | {len(found)} | "
                    f"{math.expm1(statistics.median(offset for offset, *_ in found)):.1%} | {math.expm1(cut):.1%} | "
                    f"{', '.join(f'{name} {count}' for name, count in sorted(counts.items())) or '-'} | "
                    f"{sum(width >= 0.02 for *_, width in tail)} of {len(tail)} |")
    return rows


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-entry-history", action="store_true",
                        help="the model without the A/A history of each entry (the kind's prior only)")
    parser.add_argument("--isolated-sample", type=int, default=1000,
                        help="at most about this many entries of a group slowed one at a time (default: all)")
    args = parser.parse_args(argv)
    runs = [run for path in sorted(glob.glob(os.path.join(AA, "*.json.gz"))) for run in digest.load(path)["runs"]]
    columns = (["n", "same", "flagged"] + [f"all {s:.0%}" for s in SLOWDOWNS] + [f"one {s:.0%}" for s in SLOWDOWNS]
               + ["MDE"])
    print(f"A/A runs: {len(runs)} from {AA}")
    print("| pair | kind | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 2))
    tails, whys = [], []
    for label, first, second, note in pairs_to_evaluate(runs):
        others = [run for run in runs if run["id"] not in (first["id"], second["id"])]
        document = noise_model.fit(others)
        if args.no_entry_history:
            document["entries"] = []
        model = noise_model.read(document)
        entries = common_entries(first, second)
        kinds = [kind(model, key, entry, a, b) for key, entry, a, b in entries]
        widths = [model.kinds[k].within(model.history(key), [])[0] ** 0.5 if k in model.kinds else math.inf
                  for (key, *_), k in zip(entries, kinds)]
        for group, row in evaluate(Method(model, entries), kinds, widths, args.isolated_sample).items():
            print(f"| {label}{' (' + note + ')' if note else ''} | {group} | "
                  + " | ".join(str(row[column]) for column in columns) + " |", flush=True)
        tails += tail_rows(label, entries, kinds, widths)
        whys += why_rows(label, Method(model, entries), kinds)
    print("\nThe A/A tail: per kind, the median and 95th percentile of |B/A - 1|, the entries beyond the 95th "
          "percentile by study (protocol), and how many of them have an own sigma_w of 2% or more in the model "
          "fitted without the pair")
    print("| pair | kind | entries | median | 95th percentile | beyond it | own sigma_w >= 2% |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(tails))
    print("\nWhy a +10% change of every entry of a kind goes unflagged: the share flagged as compare flags it, by each "
          "entry's own test without its family's control, were each side measured in 20 trials, were the band 0, and "
          "the median share of the variance between runs")
    print("| pair | kind | entries | flagged | own test | 20 trials a side | no band | between-run share |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(whys))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
