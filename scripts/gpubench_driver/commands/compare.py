"""The 'compare' command: results files side by side, each entry's ratio to the first file with its
interval, verdict and minimum detectable effect from the noise model (docs/methodology.md, The noise
model), and cost per dollar where each file has a price. Writes compare.md, compare.html and compare.json.
"""
import math
import os
import statistics
from dataclasses import dataclass

from gpubench_driver import studies
from gpubench_driver.lib import document as page, noise_model, noise_verdicts, outputs, results, stats, verdicts
from gpubench_driver.lib.figures import first_gpu
from gpubench_driver.lib.formatting import md, percent, ratio, seconds
from gpubench_driver.stages import against, collect, options as opts, prices, render, resume, session

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
    return first_gpu(document).get("name")


def load_sources(paths, labels, least=2, command="compare", label_of=None):
    """A Source per results file, labelled as given or by label_of(document) (default: run id and GPU)."""
    if len(paths) < least:
        raise opts.UsageError(f"{command} needs at least {('one results file', 'two results files')[least - 1]}")
    if labels and len(labels) != len(paths):
        raise opts.UsageError(f"--label: give one per file ({len(paths)}), or none; got {len(labels)}")
    label_of = label_of or (lambda document: f"{document['run']['id']} {gpu_name(document) or 'no GPU'}")
    documents = [collect.load(path) for path in paths]  # a file of every GPU of a node: the node's median
    return [Source(path, labels[index] if labels else label_of(document), document)
            for index, (path, document) in enumerate(zip(paths, documents))]


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
    """Per file after the first and per group of entries (by the first file's entry): the count, the median
    and 95th percentile of |#k/#1 - 1| and the share within each band."""
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
HEADLINE_FAMILY = "headline"


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


@dataclass(frozen=True)
class Judged:
    """One entry of one file against #1: its noise_verdicts.Verdict, the family of its error control, the
    trials each side has, and whether the model knows the entry's own kind."""
    verdict: object
    family: str
    trials: tuple
    own_kind: bool

    def record(self):
        return {**self.verdict.record(), "family": self.family, "trials": list(self.trials),
                "kind_known": self.own_kind}


def all_verdicts(sources, model=None):
    """{file number >= 2: {(study, name): Judged}}: each file against the first; error control per study,
    the headline entries a family of their own."""
    model = model or noise_model.load()
    found = {}
    for number in range(2, len(sources) + 1):
        pairs = shared_pairs(sources, number)
        comparisons, families, details = [], [], []
        for study_name, name, first, other in pairs:
            a, b = noise_verdicts.side_of(first), noise_verdicts.side_of(other)
            kind, own = noise_verdicts.kind_in(model, first, math.sqrt(a.median * b.median),
                                               (study_name, name))
            comparisons.append(noise_verdicts.compare(model, (study_name, name), kind, a, b))
            families.append(HEADLINE_FAMILY if studies.is_headline(study_name, first) else study_name)
            details.append(((len(a.medians), len(b.medians)), own))
        decided = noise_verdicts.decide(comparisons, families)
        found[number] = {(study, name): Judged(verdict, family, *detail)
                         for (study, name, _, _), verdict, family, detail in zip(pairs, decided, families, details)}
    return found


def comparison_record(sources, decided, model):
    """compare.json's content."""
    files = [{"number": number, "label": source.label, "path": source.path, "run": source.document["run"]["id"]}
             for number, source in enumerate(sources, start=1)]
    comparisons = []
    for number, by_entry in decided.items():
        pairs = {(study, name): (first, other) for study, name, first, other in shared_pairs(sources, number)}
        entries = [{"study": study, "name": name,
                    "medians_s": [entry["time_s"]["median"] for entry in pairs[(study, name)]],
                    **judged.record()} for (study, name), judged in by_entry.items()]
        comparisons.append({"file": number, "against": 1, "counts": counts(by_entry),
                            "kinds": kind_rows(by_entry), "entries": entries})
    return {"schema": "gpubench-compare", "files": files,
            "noise_model": {"file": os.path.relpath(noise_model.FILE, outputs.SOURCE_DIR),
                            "runs": [run["id"] for run in model.document.get("runs") or []]},
            "method": {"confidence": noise_verdicts.CONFIDENCE,
                       "false_discovery_rate": noise_verdicts.FALSE_DISCOVERY_RATE, "power": noise_verdicts.POWER,
                       "families": f"per study; the headline entries one family ({HEADLINE_FAMILY})"},
            "comparisons": comparisons}


def counts(by_entry):
    return noise_verdicts.counts(judged.verdict for judged in by_entry.values())


def kind_rows(by_entry):
    """Per kind of entry: how many, their verdicts, the median minimum detectable effect, the fewest
    trials a side had, and how many the noise between runs dominates."""
    rows = {}
    for judged in by_entry.values():
        rows.setdefault(judged.verdict.comparison.kind, []).append(judged)
    return [{"kind": kind, "entries": len(members), **noise_verdicts.counts(judged.verdict for judged in members),
             "median_min_detectable_effect": statistics.median(judged.verdict.comparison.mde for judged in members),
             "fewest_trials": min(min(judged.trials) for judged in members),
             "between_runs_dominant": sum(judged.verdict.comparison.between_share > 0.5 for judged in members)}
            for kind, members in sorted(rows.items(), key=lambda item: list(noise_model.KINDS).index(item[0]))]


# --- rendering ---------------------------------------------------------------------------
def _verdict_text(judged, number):
    verdict = judged.verdict
    named = {noise_verdicts.FASTER: f"#{number} faster", noise_verdicts.SLOWER: f"#{number} slower"}
    text = named.get(verdict.verdict, verdict.verdict)
    return f"{text}: {verdict.advice}" if verdict.advice else text


def _interval_text(judged):
    c = judged.verdict.comparison
    return f"{ratio(c.ratio)} ({ratio(c.low)}–{ratio(c.high)})"


def _verdict_cells(judged, number):
    if judged is None:
        return ["n/a"] * 3
    return [_interval_text(judged), _verdict_text(judged, number),
            f"{percent(judged.verdict.comparison.mde)} ({judged.trials[0]} vs {judged.trials[1]} trials)"]


def _verdict_columns(decided):
    return [column for n in decided for column in (f"#{n}/#1 (interval)", f"#{n} vs #1", f"#{n} detectable")]


def _judged_cells(decided, key):
    """The verdict cells of an entry (study, name) against #1, file by file."""
    return [cell for n, by_entry in decided.items() for cell in _verdict_cells(by_entry.get(key), n)]


def _time_table(sources, study_name, names, decided):
    by_name = [_entries_by_name(source.document["studies"][study_name]) for source in sources]
    rows = [[md(name), *(seconds(entries[name]["time_s"]["median"]) for entries in by_name),
             *_judged_cells(decided, (study_name, name))] for name in names]
    return page.table(["entry", *(f"#{n} median" for n in range(1, len(sources) + 1)), *_verdict_columns(decided)],
                      rows, rule=RULE)


DIFFERENCES_SHOWN = 20


def _headline_section(sources, decided):
    rows = []
    for study_name in shared_studies(sources):
        first = _entries_by_name(sources[0].document["studies"][study_name])
        rows += [[md(name), seconds(first[name]["time_s"]["median"]), *_judged_cells(decided, (study_name, name))]
                 for name in match_entries(sources, study_name)[0] if studies.is_headline(study_name, first[name])]
    return [page.paragraph("Headline entries (those each study compares with PyTorch or numpy):"),
            page.table(["entry", "#1 median", *_verdict_columns(decided)], rows, rule=RULE) if rows
            else page.paragraph("None shared.")]


def _kinds_table(by_entry):
    rows = [[row["kind"], str(row["entries"]), *(str(row[name]) for name in noise_verdicts.VERDICTS),
             percent(row["median_min_detectable_effect"]), str(row["fewest_trials"]),
             f"{row['between_runs_dominant']} of {row['entries']}"] for row in kind_rows(by_entry)]
    return page.table(["kind of entry", "entries", *noise_verdicts.VERDICTS, "median detectable change",
                       "fewest trials", "between runs dominant"], rows, rule=RULE)


def _method_paragraph(model):
    bands = ", ".join(f"{kind} {percent(band, 0)}" for kind, band in noise_verdicts.BANDS.items())
    return page.paragraph(
        f"Each shared entry against #1: the ratio of the medians shown and its {noise_verdicts.CONFIDENCE:.0%} "
        f"interval from the noise model (scripts/noise_model.json, fitted on the A/A runs "
        f"{', '.join(run['id'] for run in model.document.get('runs') or [])}; docs/methodology.md, The noise "
        f"model): the variance between the trials of a run, the entry's own where the A/A runs measured it, updated "
        f"by the trials compared, and the variance between runs, which more trials do not shrink. same: the "
        f"interval lies inside the band ({bands}, the rest {percent(noise_verdicts.DEFAULT_BAND, 0)}); "
        f"faster/slower: it lies beyond the band on one side and the entry is a discovery of its family (each study, "
        f"the headline entries one of their own) at a {noise_verdicts.FALSE_DISCOVERY_RATE:.0%} false discovery "
        f"rate; unclear: neither, with what would decide it at the present ratio (not within "
        f"{noise_verdicts.MOST_TRIALS} trials or {noise_verdicts.MOST_RUNS} runs: the entry's noise is wide for how "
        f"near the ratio lies to the band's edge). detectable: the change found with "
        f"{noise_verdicts.POWER:.0%} power at the trials each side has. An entry of a kind the model lacks (a file "
        f"from before the protocols) is held to the model's widest kind.")


def _one_trial_paragraph(by_entry):
    single = [judged for judged in by_entry.values() if min(judged.trials) == 1]
    if not single:
        return []
    mdes = sorted(judged.verdict.comparison.mde for judged in single)
    return [page.paragraph(
        f"{len(single)} of {len(by_entry)} entries have one trial on a side (a --quick run): their interval rests "
        f"on the model's width for the entry (its A/A history, else its kind's). Each finds a change of its "
        f"detectable size ({percent(mdes[0])} to {percent(mdes[-1])}, median {percent(statistics.median(mdes))}) "
        f"with {noise_verdicts.POWER:.0%} power; a smaller one leaves it same where its interval lies inside the "
        f"band, else unclear.")]


def _verdicts_section(sources, decided, model):
    rows = [[f"#{number}", *(str(count) for count in counts(by_entry).values())]
            for number, by_entry in decided.items()]
    blocks = [page.table(["file", *noise_verdicts.VERDICTS], rows, rule=RULE), _method_paragraph(model)]
    for number, by_entry in decided.items():
        blocks += [page.paragraph(f"#{number} against #1 per kind of entry (the noise model's kinds):"),
                   _kinds_table(by_entry), *_one_trial_paragraph(by_entry)]
    blocks += _headline_section(sources, decided)
    for number, by_entry in decided.items():
        differing = sorted(((key, judged) for key, judged in by_entry.items()
                            if judged.verdict.verdict in (noise_verdicts.FASTER, noise_verdicts.SLOWER)),
                           key=lambda item: -abs(math.log(item[1].verdict.comparison.ratio)))
        lines = [f"{md(name)}: {_interval_text(judged)}, {_verdict_text(judged, number)}"
                 for (_, name), judged in differing[:DIFFERENCES_SHOWN]]
        more = len(differing) - DIFFERENCES_SHOWN
        blocks += [page.paragraph(f"#{number} against #1, the differences, largest first"
                                  + (f" ({DIFFERENCES_SHOWN} of {len(differing)}):" if more > 0 else ":")),
                   page.bullets(lines) if lines else page.paragraph("None.")]
    return page.section("Verdicts", blocks)


def _cost_cells(study_name, study, name, usd_per_hour):
    entry = _entries_by_name(study)[name]
    if prices.cost_kind(study_name) == "epoch":
        return [prices.usd(prices.usd_per_epoch(entry, study.get("epoch_samples"), usd_per_hour))]
    rate = prices.tflops_per_usd_hour(entry, usd_per_hour)
    return [prices.usd(prices.usd_per_1000_products(entry, usd_per_hour)), "n/a" if rate is None else f"{rate:.3g}"]


def _cost_table(sources, study_name, names):
    columns = (["USD per epoch"] if prices.cost_kind(study_name) == "epoch"
               else ["USD per 1000 GEMMs", "TFLOP/s per USD/h"])
    header = ["entry", *(f"#{n} {column}" for n in range(1, len(sources) + 1) for column in columns)]
    rows = [[md(name), *(cell for source in sources for cell in _cost_cells(
        study_name, source.document["studies"][study_name], name, source.usd_per_hour))] for name in names]
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
    lines = [f"study {md(name)}: only in {', '.join(f'#{n}' for n in numbers)}"
             for name, numbers in partial_studies(sources).items()]
    lines += [f"{md(name)}: " + ", ".join(f"#{n} {md(state)}" for n, state in enumerate(states, start=1))
              for study in shared_studies(sources) for name, states in match_entries(sources, study)[1].items()]
    return page.section("Not compared", [page.bullets(lines) if lines
                                         else page.paragraph("Nothing: every file holds the same ok entries.")])


def blocks(sources, decided, table, model):
    """The comparison page as blocks (document.py): compare.md and compare.html are written from them."""
    found = [page.Heading(1, "gpubench comparison"), _files_section(sources), page.bullets([
        "Times are each entry's median (over its trials' medians where it was measured in several); #k/#1 is "
        "#k's median over #1's (below 1: #k faster).", *prices.prices_note(sources, table)])]
    found += _verdicts_section(sources, decided, model) + _agreement_section(sources)
    for study_name in shared_studies(sources):
        found += _study_section(sources, study_name, decided)
    return found + _missing_section(sources)


def run(paths, labels=None, price_specs=(), prices_path=prices.DEFAULT_PRICES, out_dir=None):
    """Load, match and write (write); returns compare.md's path."""
    sources = load_sources(paths, labels or [])
    table = prices.apply_prices(sources, price_specs, prices_path)
    out_dir, _ = outputs.check_out_dir(out_dir or session.default_out_dir(f"compare-{session.default_run_id()}"))
    model = noise_model.load()
    return write(sources, all_verdicts(sources, model), out_dir, table, model)


def write(sources, decided, out_dir, table=None, model=None):
    """compare.md, compare.html and compare.json in out_dir; returns compare.md's path."""
    model = model or noise_model.load()
    return render.write_page(out_dir, "compare", blocks(sources, decided, table, model),
                             comparison_record(sources, decided, model), page_end="\n")


# --- the command line ------------------------------------------------------------------------------
ERRORS = (results.ResultsError, prices.PriceTableError, noise_model.NoiseModelError, outputs.WriteError)


def register(subparsers):
    parser = subparsers.add_parser("compare", help="side-by-side report of results files, with verdicts and cost",
                                   description="Compare the entries two or more results files share: medians, ratios "
                                               "to the first file with their intervals, a verdict per entry (same, "
                                               "faster, slower, unclear) with its minimum detectable effect from the "
                                               "noise model (scripts/noise_model.json), and, with a price per file, "
                                               "cost per 1000 GEMMs, TFLOP/s per USD-hour and USD per MLP epoch. "
                                               "Writes compare.md, compare.html and compare.json.")
    parser.add_argument("results", nargs="+", help="results.json (or .json.gz) files, or directories holding one; "
                                                   "the first is the baseline")
    parser.add_argument("--label", action="append", help="a name per file, in order (default: run id and GPU name)")
    prices.add_price_arguments(parser)
    parser.add_argument("--out", help="output directory (default: results/runs/compare-<UTC time>)")
    parser.add_argument("--decide", action="store_true",
                        help="with two results, A B, where B is the folder of a run of this machine (complete or "
                             "not; A may be any machine's file): first extend B with extra trials of the units "
                             "whose comparison with A is undecided, as run --resume B --against A does (a sequential "
                             "rule, until each is decided or the budget is spent; docs/usage.md), then compare. A "
                             "kill on the way leaves B to run --resume. On A's machine, compare --decide B A adds "
                             "A's trials in turn: the trials of A, which B's cannot shrink, then shrink too")
    parser.add_argument("--budget", metavar="SECONDS", help=f"with --decide: the seconds the extra trials may take "
                                                            f"(default {against.DEFAULT_BUDGET_S:.0f})")
    parser.add_argument("--build-dir", help="with --decide: the CMake build directory of B's study binaries "
                                            "(default: <repo>/build)")
    parser.add_argument("--no-build", action="store_true", help="with --decide: use the binaries already built")
    return parser


def execute(args, argv):
    status = 0
    if args.decide:
        if len(args.results) != 2:
            raise opts.UsageError("--decide: give two results, A (the earlier run, any machine's) and B (the folder "
                                  "of this machine's run to extend)")
        budget = against.parse_budget(args.budget) if args.budget is not None else None
        status = resume.extend(args.results[1], args.results[0], budget,
                               os.path.abspath(args.build_dir or session.default_build_dir()), not args.no_build, argv)
        if status == session.EXIT_STATUS["interrupted"]:
            return status
    elif args.budget is not None or args.build_dir is not None or args.no_build:
        raise opts.UsageError("--budget, --build-dir, --no-build: only with --decide")
    print(f"comparison: {run(args.results, args.label, args.price, args.prices, args.out)}")
    return status
