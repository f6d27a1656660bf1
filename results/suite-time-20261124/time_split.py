"""Where a run's time goes, per study: the entries' wall time (console line to console line) split into
set-up (setup_s: inputs, allocations, first call and check), warm-up, the headline's samples, the
latency and cold-L2 phases, and the rest (process start, telemetry, output), summed over trials.
Usage: /usr/bin/python3 time_split.py RUN_DIR..."""
import collections
import json
import sys

PHASES = ("warmup", "headline", "latency", "cold_l2")


def measurements(entry):
    trials = entry.get("trials") or []
    return [trial.get("measurement") or {} for trial in trials] or [entry.get("measurement") or {}]


def split(run_dir):
    document = json.load(open(f"{run_dir}/results.json"))
    print(f"{run_dir}: {document['run']['status']}, {document['machine']['gpus'][0]['name']}")
    print(f"{'study':13s} {'entries':>7s} {'wall s':>7s} {'setup':>6s} " + " ".join(f"{p:>8s}" for p in PHASES) + f" {'rest':>6s}")
    total = collections.Counter()
    for name, study in document["studies"].items():
        sums = collections.Counter()
        for entry in study.get("entries", []):
            sums["wall"] += entry.get("wall_s") or 0
            for m in measurements(entry):
                sums["setup"] += m.get("setup_s") or 0
                for phase in PHASES:
                    sums[phase] += (m.get(phase) or {}).get("elapsed_s") or 0
            sums["entries"] += 1
        rest = sums["wall"] - sums["setup"] - sum(sums[p] for p in PHASES)
        print(f"{name:13s} {sums['entries']:7d} {sums['wall']:7.1f} {sums['setup']:6.1f} "
              + " ".join(f"{sums[p]:8.1f}" for p in PHASES) + f" {rest:6.1f}")
        total.update(sums)
        total["rest"] += rest
    print(f"{'all':13s} {total['entries']:7d} {total['wall']:7.1f} {total['setup']:6.1f} "
          + " ".join(f"{total[p]:8.1f}" for p in PHASES) + f" {total['rest']:6.1f}\n")


for path in sys.argv[1:]:
    split(path)
