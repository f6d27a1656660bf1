"""Order effects in recorded runs of the default suite in three trials: does an entry's time depend
on where its size came in its trial's order (each trial after the first shuffles a study's sizes),
or on which trial it was (trials lie a pass over the suite apart: heat, drift)?

For every ok entry with three ok trials, each trial's deviation from the entry's own centre:
d = log(trial median) - mean over its trials of log(trial median). Printed per run and device: the
mean deviation per trial (drift), and the least-squares slope of d on the entry's position in its
trial's size order scaled to 0..1 (first size 0, last 1), with its standard error, over studies
with more than one size (order)."""
import json
import math
import statistics
import sys


def rows(path):
    with open(f"{path}/results.json", encoding="utf-8") as stream:
        document = json.load(stream)
    for study in document["studies"].values():
        orders = study.get("trial_size_orders") or []
        for entry in study["entries"]:
            records = entry.get("trials") or []
            if entry.get("status") != "ok" or entry.get("phase") != "sweep" or len(records) != 3:
                continue
            if any(record.get("status") != "ok" for record in records):
                continue
            logs = [math.log(record["time_s"]["median"]) for record in records]
            centre = statistics.fmean(logs)
            for record, value in zip(records, logs):
                order = orders[record["trial"] - 1] if len(orders) >= record["trial"] else [entry["n"]]
                position = order.index(entry["n"]) / (len(order) - 1) if len(order) > 1 else None
                yield entry["device"], record["trial"], position, value - centre


def slope(points):
    xs, ys = zip(*points)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    residual = sum((y - my - b * (x - mx)) ** 2 for x, y in points) / (len(points) - 2)
    return b, math.sqrt(residual / sxx)


for path in sys.argv[1:]:
    found = list(rows(path))
    print(path)
    for device in ("gpu", "cpu"):
        mine = [row for row in found if row[0] == device]
        drift = [statistics.fmean(row[3] for row in mine if row[1] == trial) for trial in (1, 2, 3)]
        ordered = [(row[2], row[3]) for row in mine if row[2] is not None]
        b, se = slope(ordered)
        print(f"  {device}: {len(mine) // 3} entries; mean deviation by trial "
              + ", ".join(f"{100 * d:+.2f}%" for d in drift)
              + f"; slope on position in the order {100 * b:+.2f}% (standard error {100 * se:.2f}%, "
              f"{len(ordered)} points)")
