"""The 'rank' command: machines side by side on their headline figures, absolute and per dollar; a run's rank
is 1 plus the runs better than it beyond noise (the noise model, as compare judges). Writes
rank.md/.html/.json."""
import math
from itertools import combinations

from gpubench_driver import studies
from gpubench_driver.lib import document as page, figures, noise_model, noise_verdicts, outputs
from gpubench_driver.lib.formatting import md, percent
from gpubench_driver.stages import analyse, prices, render, session
from gpubench_driver.stages.render_first_screen import value_text
from gpubench_driver.commands import compare

SCHEMA = "gpubench-rank"
MISSING = "—"
RATE_UNITS = ("FLOP/s", "OP/s", "B/s")  # priced per USD-hour; seconds are priced where the figure says so


# --- loading ----------------------------------------------------------------------------------
def load_runs(paths, labels=None):
    """compare.Source per results file, its findings derived again (an older or cut-off file gets today's figures)."""
    runs = compare.load_sources(paths, labels, least=1, command="rank", label_of=lambda document:
                                f"{document['run']['id']} ({compare.gpu_name(document) or 'no GPU'})")
    for run in runs:
        analyse.derive_findings(run.document, 0)
    return runs


def figures_of(run):
    """{key: figure} of the run's headline figures that hold a value."""
    figures = ((run.document.get("findings") or {}).get("headline") or {}).get("figures") or []
    return {figure["key"]: figure for figure in figures if figure.get("value") is not None}


def column_keys(figure_maps):
    """Every key some run has, in the order of the first run that has it."""
    return list(dict.fromkeys(key for figures in figure_maps for key in figures))


def first_figures(figure_maps, keys):
    """{key: the figure of the first run that has it}: what names a column and its better direction."""
    return {key: next(figures[key] for figures in figure_maps if key in figures) for key in keys}


# --- per dollar -------------------------------------------------------------------------------
def per_dollar(figure, usd_per_hour):
    """The figure at a price: a rate per USD-hour, or the USD an MLP epoch costs; None for sizes and energy."""
    if figure["unit"] in RATE_UNITS:
        scale, unit, better = 1 / usd_per_hour, figure["unit"], figure["better"]
    elif figure["unit"] == "s" and figure["key"] in studies.PRICED_FIGURES:
        scale, unit, better = usd_per_hour / prices.SECONDS_PER_HOUR, "USD", "lower"
    else:
        return None
    scaled = {bound: None if figure[bound] is None else figure[bound] * scale for bound in ("value", "low", "high")}
    noise = figure.get("between_runs")
    if noise:  # the trials scaled alike: the price moves the ratio between runs, not the noise
        noise = {**noise, "trial_values": [value * scale for value in noise.get("trial_values") or []]}
    return {"key": figure["key"], "label": figure["label"], **scaled, "unit": unit, "better": better,
            "between_runs": noise}


def per_dollar_figures(figures, usd_per_hour):
    found = {key: per_dollar(figure, usd_per_hour) for key, figure in figures.items()}
    return {key: figure for key, figure in found.items() if figure is not None}


def per_dollar_title(figure):
    return f"{md(figure['key'])}: USD per epoch" if figure["unit"] == "USD" else f"{md(figure['key'])} per USD/h"


# --- ranking ----------------------------------------------------------------------------------
def _side(figure):
    """The figure as one side of a comparison: its value at each of its entry's trials, else its one value."""
    return noise_verdicts.Side(tuple((figure.get("between_runs") or {}).get("trial_values") or ()) or
                               (figure["value"],))


def comparison(model, first, second):
    """The Comparison of two runs' figures (second over first), its kind at their median times' geometric
    mean."""
    noise = [figure.get("between_runs") or {} for figure in (first, second)]
    times = [found.get("median_s") for found in noise]
    known = noise[0].get("protocol") is not None and all(times)
    kind, _ = noise_verdicts.kind_in(model, {"protocol": noise[0]["protocol"]} if known else None,
                                     math.sqrt(times[0] * times[1]) if known else 1.0)
    return noise_verdicts.compare(model, None, kind, _side(first), _side(second),
                                  ratio=second["value"] / first["value"])


def _apart(first, second):
    """Always for a time's figure; for energy (its own uncertainty) only where the intervals do not
    overlap."""
    bounds = [figure.get(bound) for figure in (first, second) for bound in ("low", "high")]
    if first.get("timed_as") != figures.ENERGY or None in bounds:
        return True
    return first["high"] < second["low"] or second["high"] < first["low"]


def ranks(figures, better, model):
    """{row: rank}: 1 plus the rows better beyond noise; {} without a better direction or two figures."""
    held = {row: figure for row, figure in enumerate(figures) if figure is not None and (figure.get("value") or 0) > 0}
    if better not in ("higher", "lower") or len(held) < 2:
        return {}
    pairs = list(combinations(held, 2))
    decided = noise_verdicts.decide([comparison(model, held[a], held[b]) for a, b in pairs], [better] * len(pairs),
                                    advise=False)
    beaten = dict.fromkeys(held, 0)
    for (first, second), verdict in zip(pairs, decided):
        if verdict.verdict in (noise_verdicts.FASTER, noise_verdicts.SLOWER) and _apart(held[first], held[second]):
            second_better = (verdict.comparison.ratio > 1) == (better == "higher")
            beaten[first if second_better else second] += 1
    return {row: 1 + count for row, count in beaten.items()}


def ordinal(number):
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


WITHIN_NOISE = "within noise"
BETTER_TEXT = {"higher": "higher is better", "lower": "lower is better"}


def cell(figure, rank, column_ranks=None):
    """The figure's value and spread, and its rank among column_ranks (the column's {row: rank})."""
    if figure is None:
        return MISSING
    share = figures.spread(figure)  # the interval's largest distance from the value
    text = value_text(figure["value"], figure["unit"]) + ("" if share is None else f" ±{percent(share)}")
    if rank is None:
        return text
    shared = list((column_ranks or {}).values()).count(rank) > 1
    if shared and set(column_ranks.values()) == {rank}:
        return f"{text} ({WITHIN_NOISE})"
    return (f"**{text}**" if rank == 1 else text) + f" ({'joint ' if shared else ''}{ordinal(rank)})"


def ranked_table(labels, figure_maps, keys, title, model):
    """Rows: a label and, per key, its figure's cell; title(figure) names a column."""
    first = first_figures(figure_maps, keys)
    figure_ranks = {key: ranks([figures.get(key) for figures in figure_maps], first[key]["better"], model)
                    for key in keys}
    rows = [[md(label), *(cell(figures.get(key), figure_ranks[key].get(row), figure_ranks[key]) for key in keys)]
            for row, (label, figures) in enumerate(zip(labels, figure_maps))]
    return page.table(["run", *(title(first[key]) for key in keys)], rows, rule=compare.RULE)


# --- the page ---------------------------------------------------------------------------------
def _legend(figure_maps, keys):
    """Each column's figure, as the first run that has it names it."""
    return page.bullets(f"`{key}`: {md(figure['label'])}; {BETTER_TEXT.get(figure['better'], 'not ranked')}; timed as "
                        f"{md(figure.get('timed_as'))}" for key, figure in first_figures(figure_maps, keys).items())


def _figures_section(runs, figure_maps, model):
    keys = column_keys(figure_maps)
    if not keys:
        return page.section("Headline figures", [page.paragraph("No run has a headline figure.")])
    return page.section("Headline figures", [
        ranked_table([run.label for run in runs], figure_maps, keys, lambda figure: md(figure["key"]), model),
        page.paragraph(f"Each figure as the run's report heads it, ± the largest distance of its interval from the "
                       f"value (over the run's trials; energy: the window's own uncertainty). {MISSING}: the run "
                       f"has no such figure. Where a better direction exists, each run's rank follows its value: "
                       f"1 plus the runs whose figure is better beyond noise, judged as compare judges the entry it "
                       f"is read from (the noise model: the ratio of the two values, its interval from the noise "
                       f"between trials and between runs of the entry's kind, beyond the kind's equivalence band; "
                       f"energy, whose window has an uncertainty of its own, also needs the two intervals apart); "
                       f"runs within noise of each other share a rank (joint), the best are in bold, and a column "
                       f"where no run is better than another beyond noise says {WITHIN_NOISE}."),
        _legend(figure_maps, keys)])


def _price_lines(runs, table):
    """Each run's price and where it came from, as compare's page gives them."""
    lines = [f"{md(run.label)}: {prices.price_cell(run)}" if run.usd_per_hour else
             f"{md(run.label)}: no price (--price FILE=INSTANCE or FILE=USD_PER_HOUR)" for run in runs]
    return lines + prices.prices_note([run for run in runs if run.usd_per_hour], table)


def _per_dollar_section(runs, figure_maps, table, model):
    priced = [(run, per_dollar_figures(figures, run.usd_per_hour))
              for run, figures in zip(runs, figure_maps) if run.usd_per_hour]
    keys = column_keys([figures for _, figures in priced])
    if not keys:
        body = [page.paragraph("No run with a price has a figure a price applies to." if priced else
                               "No run has a price: give --price FILE=INSTANCE or FILE=USD_PER_HOUR.")]
    else:
        body = [ranked_table([run.label for run, _ in priced], [figures for _, figures in priced], keys,
                             per_dollar_title, model),
                page.paragraph("Rates (FLOP/s, OP/s, B/s) over the run's USD per hour; an MLP epoch's time at that "
                               "price (the CPU epoch at the same price, though a machine without the GPU would cost "
                               "less). Sizes and energy are not priced.")]
    return page.section("Per dollar", body + [page.paragraph("Prices:"), page.bullets(_price_lines(runs, table))])


def _runs_section(runs):
    rows = [[md(run.label), md(run.path), md(run.document["run"]["id"]), md(run.document["run"]["status"]),
             md(compare.gpu_name(run.document)), prices.price_cell(run)] for run in runs]
    return page.section("Runs", [page.table(["run", "file", "run id", "status", "GPU", "price"], rows,
                                            rule=compare.RULE)])


def blocks(runs, table=None, model=None):
    """The rank page as blocks (document.py), for rank.md and rank.html."""
    model = model or noise_model.load()
    figure_maps = [figures_of(run) for run in runs]
    return ([page.Heading(1, "gpubench rank")] + _figures_section(runs, figure_maps, model)
            + _per_dollar_section(runs, figure_maps, table, model) + _runs_section(runs))


def rank_record(runs):
    """rank.json's content: per run its figures (and at its price, the per-dollar ones), and the columns."""
    figure_maps = [figures_of(run) for run in runs]
    records = [{"label": run.label, "path": run.path, "run_id": run.document["run"]["id"],
                "gpu": compare.gpu_name(run.document), "usd_per_hour": run.usd_per_hour,
                "figures": list(figures.values()),
                "per_dollar": list(per_dollar_figures(figures, run.usd_per_hour).values()) if run.usd_per_hour
                else []}
               for run, figures in zip(runs, figure_maps)]
    return {"schema": SCHEMA, "runs": records, "columns": column_keys(figure_maps)}


# --- writing ----------------------------------------------------------------------------------
def write(runs, out_dir, table=None):
    """rank.md, rank.html and rank.json in out_dir; returns the Markdown's path."""
    return render.write_page(out_dir, "rank", blocks(runs, table), rank_record(runs))


def run(paths, labels=None, price_specs=(), prices_path=prices.DEFAULT_PRICES, out_dir=None):
    """The 'rank' command: load, price, write; returns rank.md's path."""
    runs = load_runs(paths, labels or [])
    table = prices.apply_prices(runs, price_specs, prices_path)
    out_dir, _ = outputs.check_out_dir(out_dir or session.default_out_dir(f"rank-{session.default_run_id()}"))
    return write(runs, out_dir, table)


# --- the command line ------------------------------------------------------------------------------
ERRORS = compare.ERRORS


def register(subparsers):
    parser = subparsers.add_parser("rank", help="machines side by side on their headline figures, absolute and "
                                                "per dollar",
                                   description="Rank one or more runs on their headline figures (derived again from "
                                               "each file): one row per run, one column per figure any run has, the "
                                               "best run in bold and each run's rank where a direction is better, "
                                               "runs within noise of each other (as compare judges) sharing a rank; "
                                               "with a price per file, rates per USD-hour and USD per MLP epoch. "
                                               "Writes rank.md, rank.html and rank.json.")
    parser.add_argument("results", nargs="+", help="results.json (or .json.gz) files, or directories holding one; one "
                                                   "per row")
    parser.add_argument("--label", action="append", help="a name per file, in order (default: run id (GPU name))")
    prices.add_price_arguments(parser, " (priced at one GPU's share)")
    parser.add_argument("--out", help="output directory (default: results/runs/rank-<UTC time>)")
    return parser


def execute(args, argv):
    print(f"rank: {run(args.results, args.label, args.price, args.prices, args.out)}")
    return 0
