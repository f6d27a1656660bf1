"""run --repeatability: the same run twice on this machine, back to back (an A/A pair), and how far it varies
from itself per kind of entry. Writes <out>/a/ and <out>/b/, their comparison (compare.*) and repeatability.md
and .json."""
import json
import os
from dataclasses import replace

from gpubench_driver.lib import document as page, noise_model, noise_verdicts, outputs, stopping
from gpubench_driver.lib.formatting import percent
from gpubench_driver.stages import session
from gpubench_driver.commands import compare

# Kinds of entry, by what the binaries report (the protocol) and the headline's length.
KINDS = (("GPU, device time, 100 us or more", lambda e: e.get("protocol") == "throughput"
          and e["time_s"]["median"] >= noise_model.LONG_ENTRY_S),
         ("GPU, device time, under 100 us", lambda e: e.get("protocol") == "throughput"
          and e["time_s"]["median"] < noise_model.LONG_ENTRY_S),
         ("GPU, host-observed (copies in the call)", lambda e: e.get("protocol") == "latency"),
         ("CPU", lambda e: e.get("protocol") == "cpu"))
BANDS = compare.AGREEMENT_BANDS


def noise_by_kind(first, second):
    """compare.agreement of the two runs over these kinds, keyed for repeatability.json."""
    sources = [compare.Source(None, label, document) for label, document in (("A", first), ("B", second))]
    return [{"kind": row["group"], "entries": row["entries"], "median_offset": row["median_offset"],
             "p95_offset": row["p95_offset"], "within": {str(band): share for band, share in row["within"].items()}}
            for row in compare.agreement(sources, KINDS)]


def record(rows, counts, paths):
    flagged = counts[noise_verdicts.FASTER] + counts[noise_verdicts.SLOWER]
    total = sum(counts.values())
    return {"schema": "gpubench-repeatability", "runs": paths, "noise": rows, "verdicts": counts,
            "flagged_fraction": flagged / total if total else None}


def render(found):
    rows = [[row["kind"], str(row["entries"]), percent(row["median_offset"]), percent(row["p95_offset"]),
             *(percent(row["within"][str(band)]) for band in BANDS)] for row in found["noise"]]
    counts = found["verdicts"]
    return page.to_markdown([
        page.Heading(1, "gpubench repeatability"),
        page.paragraph(f"The same run twice, back to back: {found['runs'][0]} and {found['runs'][1]}. Per kind of "
                       f"entry, how far the second run's medians lie from the first's: a difference between two "
                       f"machines measured the same way that is no larger than this is no difference."),
        page.table(["kind of entry", "entries", "median of abs(B/A - 1)", "95th percentile",
                    *(f"within {100 * band:.0f}%" for band in BANDS)], rows),
        page.paragraph(f"compare's verdicts on the pair (compare.md): {counts[noise_verdicts.SAME]} same, "
                       f"{counts[noise_verdicts.FASTER]} faster, {counts[noise_verdicts.SLOWER]} slower, "
                       f"{counts[noise_verdicts.UNCLEAR]} unclear: {percent(found['flagged_fraction'])} flagged "
                       f"in a pair where nothing changed (each flagged entry is a false alarm).")])


def run(options, argv):
    """Both runs, their comparison and the floors; the exit status of the first run that did not complete."""
    out_dir, _ = outputs.check_out_dir(options.out or session.default_out_dir(f"repeatability-{options.run_id}"))
    paths = []
    for label in ("a", "b"):
        path = os.path.join(out_dir, label)
        print(f"repeatability: run {label.upper()} of 2 into {path}", flush=True)
        try:
            status = session.run(replace(options, run_id=f"{options.run_id}-{label}", out=path, repeatability=False),
                                 argv)
        except stopping.StoppedAfterFinalWrite as stop:  # the run is whole, but the user asked to stop
            print(f"repeatability: stopped by {stop.signal_name} after run {label.upper()}: no comparison", flush=True)
            return stop.exit_status or 130
        if status != 0:
            print(f"repeatability: run {label.upper()} did not complete: no comparison", flush=True)
            return status
        paths.append(path)
    sources = compare.load_sources(paths, [])
    decided = compare.all_verdicts(sources)
    compare.write(sources, decided, out_dir)
    found = record(noise_by_kind(sources[0].document, sources[1].document), compare.counts(decided[2]), paths)
    outputs.write_text(os.path.join(out_dir, "repeatability.json"), json.dumps(found, indent=1))
    path = outputs.write_text(os.path.join(out_dir, "repeatability.md"), render(found) + "\n")
    print(f"repeatability: {path}", flush=True)
    return 0
