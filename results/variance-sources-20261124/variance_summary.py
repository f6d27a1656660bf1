"""Per condition and entry: median over processes and the sd of log medians (between-process noise)."""
import glob, json, math, os, statistics, sys, collections
O = sys.argv[1]
med = collections.defaultdict(dict)  # (entry) -> cond -> [medians]
for path in glob.glob(os.path.join(O, "m-*.jsonl")):
    cond = os.path.basename(path).split("-")[1]
    for line in open(path):
        try: rec = json.loads(line)
        except ValueError: continue
        s = rec["measurement"]["headline"]["samples_s"]
        med[rec["name"]].setdefault(cond, []).append(statistics.median(s))
conds = ["base", "noaslr", "hugetlb", "pinned", "threads15"]
print("entry | " + " | ".join(f"{c} median, sd(log) %" for c in conds))
pooled = collections.defaultdict(list)
for name in sorted(med):
    cells = []
    for c in conds:
        v = med[name].get(c, [])
        if len(v) >= 2:
            logs = [math.log(x) for x in v]
            sd = statistics.stdev(logs) * 100
            pooled[c].append(sd)
            cells.append(f"{statistics.median(v)*1e6:.1f} us, {sd:.1f}% (n={len(v)})")
        else:
            cells.append("-")
    print(name + " | " + " | ".join(cells))
print("median over entries of sd(log)%: " + ", ".join(f"{c} {statistics.median(pooled[c]):.2f}" for c in conds if pooled[c]))
