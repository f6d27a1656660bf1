"""The 'compare' command: results files side by side, with calibrated verdicts and cost per dollar.

Entries are matched by name across the files (ok in each); each study is compared on the entries
every file shares, and what only some files hold is listed. Times are each file's median; the
ratio is a file's median over the first file's (below 1: faster than the first), and each entry's
verdict (same, faster, slower, unclear) comes from the two files' between-trial spread or, for
files measured in one trial, the between-run noise floor (verdicts.py). The page opens with the
counts per verdict and the differences that matter, largest first; compare.json holds every
entry's estimates, ratio, interval and verdict. With a price per file (an instance of the price
table, or USD per hour), the GEMM studies get USD per 1000 products and TFLOP/s per USD-hour, the
MLP study USD per epoch.
"""
import json
import math
import os
import statistics
from dataclasses import dataclass

from gpubench_driver import studies
from gpubench_driver.lib import document as page, html_report, outputs, results, stats, trials, verdicts
from gpubench_driver.lib.formatting import md, percent, ratio, seconds
from gpubench_driver.stages import collect, options as opts, prices, session

RULE = " --- "  # the tables' delimiter cells: '| --- | --- |'


@dataclass
class Source:
    """One results file in the comparison, and its price per instance-hour when one was given."""
    path: str
    label: str
    document: dict
    usd_per_hour: float = None  # what this run's GPUs cost: its share of the instance
    instance: str = None
    instance_record: dict = None  # the price table's record of the instance


# --- loading and labels ------------------------------------------------------------
def gpu_name(document):
    gpus = document["machine"].get("gpus") or []
    return gpus[0].get("name") if gpus and isinstance(gpus[0], dict) else None


def load_sources(paths, labels, least=2, command="compare", label_of=None):
    """A Source per results file, labelled as given or by label_of(document) (default: run id and GPU);
    at least `least` (1 or 2) files, as `command` needs."""
    if len(paths) < least:
        raise opts.UsageError(f"{command} needs at least {('one results file', 'two results files')[least - 1]}")
    if labels and len(labels) != len(paths):
        raise opts.UsageError(f"--label: give one per file ({len(paths)}), or none; got {len(labels)}")
    label_of = label_of or (lambda document: f"{document['run']['id']} {gpu_name(document) or 'no GPU'}")
    sources = []
    for index, path in enumerate(paths):
        document = collect.load(path)  # a file of every GPU of a node: the node's median
        sources.append(Source(path, labels[index] if labels else label_of(document), document))
    return sources


# --- matching ------------------------------------------------------------------------
def _entries_by_name(study):
    return {entry["name"]: entry for entry in study["entries"]}


def shared_studies(sources):
    return [name for name in sources[0].document["studies"] if all(name in s.document["studies"] for s in sources)]


def partial_studies(sources):
    """Studies only some files hold: {study: [file numbers holding it]}."""
    every = dict.fromkeys(name for source in sources for name in source.document["studies"])
    holders = {name: [number for number, source in enumerate(sources, start=1) if name in source.document["studies"]]
               for name in every}
    return {name: numbers for name, numbers in holders.items() if len(numbers) < len(sources)}


def match_entries(sources, study_name):
    """(names ok in every file, {name: per-file state} for the others), in first-seen order."""
    tables = [_entries_by_name(source.document["studies"][study_name]) for source in sources]
    names = dict.fromkeys(name for table in tables for name in table)
    states = {name: [table[name]["status"] if name in table else "absent" for table in tables] for name in names}
    shared = [name for name, state in states.items() if all(status == "ok" for status in state)]
    return shared, {name: state for name, state in states.items() if name not in shared}


# --- agreement --------------------------------------------------------------------------
AGREEMENT_BANDS = (0.02, 0.05)
AGREEMENT_GROUPS = (("every entry", lambda entry: True),
                    ("CPU", lambda entry: entry["device"] == "cpu"),
                    ("GPU", lambda entry: entry["device"] == "gpu"),
                    ("GPU, 100 us or more", verdicts.long_gpu_entry))


def agreement(sources, groups=AGREEMENT_GROUPS):
    """How far each file's medians lie from the first's, over the entries both measured: per file
    after the first and per group of entries (by the first file's entry), the count, the median and
    95th percentile of |#k/#1 - 1| and the share within each band. A pair of runs of one
    configuration (A/A) shows the noise between runs; another pair is read against it."""
    rows = []
    for number in range(2, len(sources) + 1):
        pairs = [(first, other) for _, _, first, other in shared_pairs(sources, number)]
        for group, member in groups:
            offsets = [abs(b["time_s"]["median"] / a["time_s"]["median"] - 1) for a, b in pairs if member(a)]
            rows.append({"file": number, "group": group, "entries": len(offsets),
                         "median_offset": statistics.median(offsets) if offsets else None,
                         "p95_offset": stats.nearest_rank_percentile(offsets, 0.95),
                         "within": {band: sum(offset <= band for offset in offsets) / len(offsets) if offsets
                                    else None for band in AGREEMENT_BANDS}})
    return rows


def _agreement_section(sources):
    rows = [[f"#{row['file']}", row["group"], str(row["entries"]), percent(row["median_offset"]),
             *(percent(row["within"][band]) for band in AGREEMENT_BANDS)] for row in agreement(sources)]
    header = ["file", "entries", "count", "median of abs(#k/#1 - 1)",
              *(f"within {100 * band:.0f}%" for band in AGREEMENT_BANDS)]
    return page.section("Agreement with #1", [
        page.table(header, rows, rule=RULE),
        page.paragraph("Over the entries both files measured, grouped by the first file's entry. Read it against "
                       "a pair of runs of one configuration on one kind of machine (an A/A pair): a difference "
                       "no larger than theirs is no difference.")])


# --- verdicts ----------------------------------------------------------------------------
def shared_pairs(sources, number):
    """[(study, name, entry in #1, entry in #number)] over every study both hold, ok in both."""
    found = []
    studies_of = sources[number - 1].document["studies"]
    for study_name in (name for name in sources[0].document["studies"] if name in studies_of):
        first = _entries_by_name(sources[0].document["studies"][study_name])
        other = _entries_by_name(studies_of[study_name])
        found += [(study_name, name, first[name], other[name]) for name in first
                  if name in other and first[name]["status"] == "ok" and other[name]["status"] == "ok"]
    return found


def all_verdicts(sources):
    """{file number >= 2: {(study, name): Verdict}}: each file against the first, all its shared
    entries one family (verdicts.compare_entries)."""
    found = {}
    for number in range(2, len(sources) + 1):
        pairs = shared_pairs(sources, number)
        decided = verdicts.compare_entries([(first, other) for _, _, first, other in pairs])
        found[number] = {(study, name): verdict for (study, name, _, _), verdict in zip(pairs, decided)}
    return found


def comparison_record(sources, decided):
    """compare.json's content: the files, and per file after the first its counts and every entry."""
    files = [{"number": number, "label": source.label, "path": source.path, "run": source.document["run"]["id"]}
             for number, source in enumerate(sources, start=1)]
    comparisons = []
    for number, by_entry in decided.items():
        pairs = {(study, name): (first, other) for study, name, first, other in shared_pairs(sources, number)}
        entries = [{"study": study, "name": name,
                    "medians_s": [pairs[(study, name)][0]["time_s"]["median"], pairs[(study, name)][1]["time_s"]["median"]],
                    "trials": [trials.count(pairs[(study, name)][0]), trials.count(pairs[(study, name)][1])],
                    **verdict.record()} for (study, name), verdict in by_entry.items()]
        comparisons.append({"file": number, "against": 1, "counts": verdicts.counts(by_entry.values()),
                            "entries": entries})
    return {"schema": "gpubench-compare", "files": files, "comparisons": comparisons}


# --- rendering ---------------------------------------------------------------------------
def _verdict_text(verdict, number):
    named = {verdicts.FASTER: f"#{number} faster", verdicts.SLOWER: f"#{number} slower"}
    text = named.get(verdict.verdict, verdict.verdict)
    if verdict.basis == "trials":
        return f"{text} (trials, p = {verdict.p_value:.2g})"
    return f"{text} (noise floor)"


def _interval_text(verdict):
    return f"{ratio(verdict.ratio)} ({ratio(verdict.low)}–{ratio(verdict.high)})"


def _time_table(sources, study_name, names, decided):
    others = range(2, len(sources) + 1)
    header = ["entry", *(f"#{n} median" for n in range(1, len(sources) + 1)),
              *(column for n in others for column in (f"#{n}/#1 (interval)", f"#{n} vs #1"))]
    rows = []
    for name in names:
        entries = [_entries_by_name(source.document["studies"][study_name])[name] for source in sources]
        cells = []
        for n in others:
            verdict = decided[n][(study_name, name)]
            cells += [_interval_text(verdict), _verdict_text(verdict, n)]
        rows.append([md(name), *(seconds(entry["time_s"]["median"]) for entry in entries), *cells])
    return page.table(header, rows, rule=RULE)


DIFFERENCES_SHOWN = 20


def _headline_section(sources, decided):
    header = ["entry", "#1 median", *(column for n in decided for column in (f"#{n}/#1 (interval)", f"#{n} vs #1"))]
    rows = []
    for study_name in shared_studies(sources):
        names, _ = match_entries(sources, study_name)
        first = _entries_by_name(sources[0].document["studies"][study_name])
        for name in names:
            if studies.is_headline(study_name, first[name]):
                cells = []
                for n, by_entry in decided.items():
                    verdict = by_entry.get((study_name, name))
                    cells += [_interval_text(verdict), _verdict_text(verdict, n)] if verdict else ["n/a", "n/a"]
                rows.append([md(name), seconds(first[name]["time_s"]["median"]), *cells])
    return [page.paragraph("Headline entries (those each study compares with PyTorch or numpy):"),
            page.table(header, rows, rule=RULE) if rows else page.paragraph("None shared.")]


def _verdicts_section(sources, decided):
    """The counts per verdict of each file against the first, then its largest differences."""
    rows = [[f"#{number}", *(str(count) for count in verdicts.counts(by_entry.values()).values()),
             str(sum(verdict.basis == "trials" for verdict in by_entry.values()))]
            for number, by_entry in decided.items()]
    blocks = [page.table(["file", *verdicts.VERDICTS, "decided on trials"], rows, rule=RULE),
              page.paragraph(
                  f"Each shared entry against #1: a ratio and its {verdicts.CONFIDENCE:.0%} interval, from the "
                  f"two files' independent trials where both have at least two (Welch's t-test on the logarithms "
                  f"of the trials' medians, the family held to a {verdicts.FALSE_DISCOVERY_RATE:.0%} false "
                  f"discovery rate), else from the between-run noise floor of the entry's protocol measured on "
                  f"an A/A pair (gpubench's runs "
                  f"{' and '.join(run['id'] for run in verdicts.noise_floor()['runs'])}, scripts/noise_floor.json: "
                  + ", ".join(f"{protocol} {percent(math.expm1(floor))}" for protocol, floor in
                              verdicts.noise_floor()["floors"].items()) +
                  f"). faster/slower: the interval excludes no change and the difference is at least "
                  f"{percent(verdicts.MIN_EFFECT_LONG_DEVICE, 0)} (device-timed entries of 100 us or more) or "
                  f"{percent(verdicts.MIN_EFFECT_OTHER, 0)} (the rest); same: the whole interval lies within that; "
                  f"unclear: neither.")]
    blocks += _headline_section(sources, decided)
    for number, by_entry in decided.items():
        differing = sorted(((key, verdict) for key, verdict in by_entry.items()
                            if verdict.verdict in (verdicts.FASTER, verdicts.SLOWER)),
                           key=lambda item: -abs(math.log(item[1].ratio)))
        lines = [f"{md(name)}: {_interval_text(verdict)}, {_verdict_text(verdict, number)}"
                 for (_, name), verdict in differing[:DIFFERENCES_SHOWN]]
        more = len(differing) - DIFFERENCES_SHOWN
        blocks += [page.paragraph(f"#{number} against #1, the differences, largest first"
                                  + (f" ({DIFFERENCES_SHOWN} of {len(differing)}):" if more > 0 else ":")),
                   page.bullets(lines) if lines else page.paragraph("None.")]
    return page.section("Verdicts", blocks)


def _cost_cells(study_name, study, entry, usd_per_hour):
    if prices.cost_kind(study_name) == "epoch":
        return [prices.usd(prices.usd_per_epoch(entry, study.get("epoch_samples"), usd_per_hour))]
    return [prices.usd(prices.usd_per_1000_products(entry, usd_per_hour)),
            prices.per_usd_hour(prices.tflops_per_usd_hour(entry, usd_per_hour))]


def _cost_table(sources, study_name, names):
    columns = (["USD per epoch"] if prices.cost_kind(study_name) == "epoch"
               else ["USD per 1000 GEMMs", "TFLOP/s per USD/h"])
    header = ["entry", *(f"#{n} {column}" for n in range(1, len(sources) + 1) for column in columns)]
    rows = []
    for name in names:
        cells = [md(name)]
        for source in sources:
            study = source.document["studies"][study_name]
            cells += _cost_cells(study_name, study, _entries_by_name(study)[name], source.usd_per_hour)
        rows.append(cells)
    return page.table(header, rows, rule=RULE)


def _study_section(sources, study_name, decided):
    names, _ = match_entries(sources, study_name)
    if not names:
        return page.section(md(study_name), [page.paragraph("No entry is ok in every file.")])
    blocks = [_time_table(sources, study_name, names, decided)]
    if all(source.usd_per_hour for source in sources) and prices.cost_kind(study_name):
        blocks += [page.paragraph("Cost at each file's price:"), _cost_table(sources, study_name, names)]
    return page.section(md(study_name), blocks)


def _files_section(sources):
    rows = []
    for number, source in enumerate(sources, start=1):
        run = source.document["run"]
        git = run.get("git") if isinstance(run.get("git"), dict) else {}
        rows.append([f"#{number}", md(source.label), md(source.path), md(run["id"]), md(run["status"]),
                     md(gpu_name(source.document)), md(git.get("revision")), prices.price_cell(source)])
    return page.table(["#", "label", "file", "run", "status", "GPU", "git revision", "price"], rows, rule=RULE)


def _missing_section(sources):
    lines = []
    for name, numbers in partial_studies(sources).items():
        lines.append(f"study {md(name)}: only in {', '.join(f'#{n}' for n in numbers)}")
    for study_name in shared_studies(sources):
        _, others = match_entries(sources, study_name)
        for name, states in others.items():
            lines.append(f"{md(name)}: " + ", ".join(f"#{n} {md(state)}" for n, state in enumerate(states, start=1)))
    return page.section("Not compared", [page.bullets(lines) if lines
                                         else page.paragraph("Nothing: every file holds the same ok entries.")])


def blocks(sources, decided, table=None):
    """The comparison page as blocks (document.py): compare.md and compare.html are written from them."""
    found = [page.Heading(1, "gpubench comparison"), _files_section(sources), page.bullets([
        "Times are each entry's median (over its trials' medians where it was measured in several); #k/#1 is "
        "#k's median over #1's (below 1: #k faster).", *prices.prices_note(sources, table)])]
    found += _verdicts_section(sources, decided) + _agreement_section(sources)
    for study_name in shared_studies(sources):
        found += _study_section(sources, study_name, decided)
    return found + _missing_section(sources)


def render(sources, table=None):
    """compare.md's text."""
    return page.to_markdown(blocks(sources, all_verdicts(sources), table))


def default_out_dir():
    return session.default_out_dir(f"compare-{session.default_run_id()}")


def run(paths, labels=None, price_specs=(), prices_path=prices.DEFAULT_PRICES, out_dir=None):
    """Load, match, write compare.md and the same page as compare.html in out_dir; returns the
    Markdown's path."""
    sources = load_sources(paths, labels or [])
    table = prices.apply_prices(sources, price_specs, prices_path)
    out_dir, _ = outputs.check_out_dir(out_dir or default_out_dir())
    return write(sources, all_verdicts(sources), out_dir, table)


def write(sources, decided, out_dir, table=None):
    """compare.md, compare.html and compare.json of the loaded files and their verdicts (all_verdicts)
    in out_dir; returns the Markdown's path."""
    found = blocks(sources, decided, table)
    os.makedirs(out_dir, exist_ok=True)
    path = outputs.write_text(os.path.join(out_dir, "compare.md"), page.to_markdown(found) + "\n")
    outputs.write_text(os.path.join(out_dir, "compare.json"), json.dumps(comparison_record(sources, decided), indent=1))
    html_report.write(found, [], out_dir, name="compare.html")
    return path


# --- the command line ------------------------------------------------------------------------------
ERRORS = (results.ResultsError, prices.PriceTableError, verdicts.MissingScipy, outputs.WriteError)


def register(subparsers):
    parser = subparsers.add_parser("compare", help="side-by-side report of results files, with verdicts and cost",
                                   description="Compare the entries two or more results files share: medians, ratios "
                                               "to the first file with their intervals, a verdict per entry (same, "
                                               "faster, slower, unclear) from the files' independent trials or the "
                                               "between-run noise floor, and, with a price per file, cost per 1000 "
                                               "GEMMs, TFLOP/s per USD-hour and USD per MLP epoch. Writes "
                                               "compare.md, compare.html and compare.json.")
    parser.add_argument("results", nargs="+", help="results.json (or .json.gz) files, or directories holding one; "
                                                   "the first is the baseline")
    parser.add_argument("--label", action="append", help="a name per file, in order (default: run id and GPU name)")
    parser.add_argument("--price", action="append", default=[], metavar="FILE=PRICE",
                        help="FILE's price: an instance type of the price table, or USD per hour (repeatable)")
    parser.add_argument("--prices", default=prices.DEFAULT_PRICES,
                        help="price table (default: scripts/prices.json, dated examples: check current prices)")
    parser.add_argument("--out", help="output directory (default: results/runs/compare-<UTC time>)")

    parser.set_defaults(execute=execute)
    return parser


def execute(args, argv):
    print(f"comparison: {run(args.results, args.label, args.price, args.prices, args.out)}")
    return 0
