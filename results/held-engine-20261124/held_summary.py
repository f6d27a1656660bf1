"""Summarise the held-engine experiment: per repeat and configuration, over the convolution's GPU
entries, how many chose a different engine in different processes and the between-process spread
(standard deviation of the logarithms of the four processes' medians)."""
import json, math, statistics, sys, os
folder = sys.argv[1]
def load(rep, trial, cfg):
    with open(os.path.join(folder, f"r{rep}_t{trial}_{cfg}.json")) as f:
        return {b["run_name"]: b for b in json.load(f)["benchmarks"] if not b.get("error_occurred")}
print("repeat | processes | entries | engine differs between processes | median sd of log(median) | 90th pct sd | largest max/min")
for rep in (1, 2):
    for cfg in ("held", "free"):
        runs = [load(rep, t, cfg) for t in (1, 2, 3, 4)]
        names = set.intersection(*(set(r) for r in runs))
        varied, sds, spans = 0, [], []
        for name in names:
            engines = {r[name]["engine"] for r in runs}
            varied += len(engines) > 1
            times = [r[name]["real_time"] for r in runs]
            sds.append(statistics.stdev(math.log(t) for t in times))
            spans.append(max(times) / min(times))
        sds.sort()
        print(f"{rep} {cfg} | 4 | {len(names)} | {varied} | {statistics.median(sds):.2%} | {sds[int(0.9 * len(sds)) - 1]:.2%} | {max(spans):.3f}")
