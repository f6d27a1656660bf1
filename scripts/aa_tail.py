"""Which entries make the tail of an A/A pair's differences, and whether they moved as a whole run or trial
by trial. For each A/A digest (results/aa/, two runs of one suite on one machine), over the device-timed GPU
entries (protocol throughput) of 100 us or more measured in two trials or more by both runs: the median and
95th percentile of |ratio of medians - 1|, and per entry of the top 5%: the ratio, each run's spread of its
trials' medians (max / min - 1), and whether every trial of one run lies beyond every trial of the other
(a shift of the whole run, which more trials would not shrink).

    /usr/bin/python3 scripts/aa_tail.py results/aa/h100-aa-b1-b2-20261124.json.gz [...]"""
import json
import math
import sys

from gpubench_driver.lib import outputs
from gpubench_driver.lib.noise_model import LONG_ENTRY_S, trial_medians

TAIL_SHARE = 0.05


def rows_of(path):
    with outputs.open_text(path) as stream:
        first, second = json.load(stream)["runs"][:2]
    ok = [{entry["name"]: entry for entry in run["entries"] if entry["status"] == "ok"} for run in (first, second)]
    rows = []
    for name in sorted(ok[0].keys() & ok[1].keys()):
        a, b = ok[0][name], ok[1][name]
        ta, tb = trial_medians(a), trial_medians(b)
        if a["protocol"] != "throughput" or a["median_s"] < LONG_ENTRY_S or len(ta) < 2 or len(tb) < 2:
            continue
        rows.append({"name": name, "ratio": b["median_s"] / a["median_s"],
                     "spread": (max(ta) / min(ta) - 1, max(tb) / min(tb) - 1),
                     "whole_run": min(tb) > max(ta) or max(tb) < min(ta)})
    return sorted(rows, key=lambda row: -abs(math.log(row["ratio"])))


def main(paths):
    for path in paths:
        rows = rows_of(path)
        if not rows:
            print(f"{path}: no device-timed entry of 100 us or more in two trials of both runs")
            continue
        offsets = sorted(abs(row["ratio"] - 1) for row in rows)
        tail = rows[:max(1, round(TAIL_SHARE * len(rows)))]
        print(f"{path}: {len(rows)} entries, |ratio - 1| median {100 * offsets[len(rows) // 2]:.2f}%, "
              f"95th percentile {100 * offsets[int(0.95 * (len(rows) - 1))]:.1f}%; "
              f"moved as a whole run: {sum(row['whole_run'] for row in rows)} of them")
        for row in tail:
            print(f"  {100 * (row['ratio'] - 1):+6.1f}%  trials spread {100 * row['spread'][0]:.1f}% / "
                  f"{100 * row['spread'][1]:.1f}%{'  whole run' if row['whole_run'] else ''}  {row['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if sys.argv[1:] else print(__doc__) or 2)
