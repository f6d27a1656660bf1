"""The noise model: how far an entry's time moves between the trials of one run and between runs on one
machine, estimated from A/A runs (the same suite run again on one machine) and kept as data
(scripts/noise_model.json, written by `gpubench noise-model`); noise_verdicts.py compares two sides with
it. docs/methodology.md, "The noise model", says why it is built this way.

In logarithms of the trials' medians, entry e, run r, trial j: y = mu_e + b_er + w_erj, with w ~ N(0,
sigma_w,e^2) between trials and b ~ N(0, sigma_b,e^2) between runs. Entries of one kind differ a
hundredfold in their noise (a pageable copy against a resident GEMM), so one variance per kind would be
too wide for most entries and too narrow for the rest. So, per kind of entry (KINDS):
- sigma_w,e^2 has a scaled inverse chi-square prior (prior_sd^2, prior_df), fitted to the trial
  variances of the kind's entries (the empirical Bayes moderation of few-replicate variances, Smyth
  2004). An entry seen in the A/A runs updates it by its trials there (`entries`: its own width), and
  the trials of a comparison update it again (`KindModel.within`); an entry measured once has its prior;
- sigma_b,e^2 = floor_sd^2 + ratio * sigma_w,e^2: a run-level part every entry has and one that grows
  with the entry's own noise, by maximum likelihood on the A/A pairs' log ratios of medians;
- beside them, as what one variance per kind would say, the pooled one-way ANOVA estimates (method of
  moments), and the A/A entries in the tail beyond the model's 99% interval.
"""
import itertools
import json
import math
import os
import statistics
from dataclasses import dataclass
from functools import cache

from gpubench_driver.lib import outputs

try:
    import numpy
    from scipy import integrate, optimize, special
    from scipy import stats as distributions
except ImportError:  # said when used (MissingScipy): the driver's other commands need neither
    distributions = None

FILE = os.path.join(outputs.SCRIPTS_DIR, "noise_model.json")
SCHEMA = "gpubench-noise-model"
SCHEMA_VERSION = 2  # 2: the kinds apart from throughput's steady entries (host-paced, noisy)
LONG_ENTRY_S = 1e-4
# An entry timed on the device whose own A/A trials spread this much (within_sd, log) or more is judged
# apart from the steady ones: at a +-2% band its interval cannot fit inside (two trials a side and the
# between-run part), and its width would widen the steady entries' prior and between-run part.
NOISY_WITHIN_SD = 0.01
KINDS = {  # by the entry's protocol, memory mode and A/A history, and its median time (kind_of)
    "throughput-long": "device-timed back-to-back calls (protocol throughput), 100 us or more",
    "throughput-short": "device-timed back-to-back calls (protocol throughput), under 100 us",
    "throughput-noisy-long": "device-timed calls whose own A/A trials spread 1% or more, 100 us or more",
    "throughput-noisy-short": "device-timed calls whose own A/A trials spread 1% or more, under 100 us",
    "host-paced-long": "device-timed calls the host paces (copies of pageable memory), 100 us or more",
    "host-paced-short": "device-timed calls the host paces (copies of pageable memory), under 100 us",
    "latency-long": "one call on the host clock (protocol latency), 100 us or more",
    "latency-short": "one call on the host clock (protocol latency), under 100 us",
    "cpu-long": "CPU entries (protocol cpu), 100 us or more",
    "cpu-short": "CPU entries (protocol cpu), under 100 us",
}
TAIL_LEVEL = 0.99         # an A/A entry beyond the model's 99% interval is in the tail
TAIL_LISTED = 12          # the tail entries the file lists per kind, the farthest first
MIN_TRIAL_GROUPS = 5      # (entry, run) groups of two trials or more to fit a kind's within-run prior
MIN_PAIRS = 5             # entries of A/A pairs to fit its between-run part
SMALLEST_VARIANCE = 1e-8  # identical trial medians (a timer's quantum) still need a logarithm
RUN_FIELDS = ("id", "status", "started", "revision")
MACHINE_FIELDS = ("gpu", "gpus", "host", "cpu", "driver_version")
# The options that shape how often a run measured each entry: runs that differ in one are no repeats of each other
# (trial_policy: two trials and a third where they disagree, or a fixed number; against: run --against's extra
# trials of the undecided units, against that earlier run).
OPTION_FIELDS = ("quick", "full", "trials", "trial_policy", "against")


class NoiseModelError(Exception):
    """A noise model that cannot be fitted, read or used: the message says why."""


class MissingScipy(NoiseModelError):
    """This Python has no scipy; the message says what to install."""


def require_scipy():
    if distributions is None:
        raise MissingScipy("the noise model needs scipy: install python3-scipy "
                           "(e.g. 'sudo apt-get install python3-scipy')")


# --- what an entry is -----------------------------------------------------------------------------
def kind_of(entry, median_s, noisy=False):
    """The kind of an entry (a results file's or a digest's: its protocol, device and memory mode) with a
    median of median_s seconds; None without a protocol (files from before them). A device-timed entry the
    host paces, or one its own A/A trials show noisy (noisy: shown_noisy), is a kind apart."""
    protocol = (entry or {}).get("protocol")
    if protocol is None:
        return None
    length = "long" if median_s >= LONG_ENTRY_S else "short"
    if protocol == "throughput" and host_staged(entry):
        return f"host-paced-{length}"
    if protocol == "throughput" and noisy:
        return f"throughput-noisy-{length}"
    return f"{protocol}-{length}"


def shown_noisy(history):
    """Whether an entry's A/A history ((within_sd, within_df); None: none, judged as the steady ones) says
    its trials spread NOISY_WITHIN_SD or more."""
    return history is not None and history[0] >= NOISY_WITHIN_SD


def host_staged(entry):
    """Whether the CPU stages an entry's copies through its own memory: a copy from pageable memory (the
    binary's memory-mode axis, results.json's and a digest's `mode`; a digest of schema 1 has none)."""
    return "pageable" in (entry.get("mode") or "")


def host_paced(entry):
    """Whether the host paces an entry as much as its GPU does: CPU work, a call timed on the host clock
    (protocol latency: the copies and launches inside it), a copy the CPU stages (host_staged). Such an
    entry says nothing of one GPU against another of its node."""
    return entry.get("device") != "gpu" or entry.get("protocol") != "throughput" or host_staged(entry)


def trial_medians(entry):
    """A digest entry's measurements: its ok trials' medians, or its one median when it was measured
    once; [] for an entry that is not ok."""
    if entry["status"] != "ok":
        return []
    trials = [trial["median_s"] for trial in entry.get("trials") or [] if trial["status"] == "ok"]
    return trials or [entry["median_s"]]


def entry_key(entry):
    """What names an entry across runs and machines: its study and name (the study binary's)."""
    return entry["study"], entry["name"]


@cache
def median_variance(count):
    """The variance of the median of `count` independent standard normal values (1, 1/2, 0.449, 0.298
    for one to four): the share of sigma_w^2 the median of `count` trials keeps."""
    require_scipy()
    if count <= 2:
        return 1.0 / count
    half = count // 2
    norm = distributions.norm
    if count % 2:  # the middle order statistic: Phi^-1 of a Beta(half + 1, half + 1) variable
        beta = distributions.beta(half + 1, half + 1)
        return integrate.quad(lambda u: norm.ppf(u) ** 2 * beta.pdf(u), 0, 1, limit=200)[0]
    # The mean of the two middle values x and x + gap (half - 1 values below x, half - 1 above x + gap):
    # their joint density on a grid of (x, gap >= 0), integrated by Simpson's rule.
    x, gap = numpy.meshgrid(numpy.linspace(-9, 9, 721), numpy.linspace(0, 12, 481), indexing="ij")
    y = x + gap
    density = numpy.exp(special.gammaln(count + 1) - 2 * special.gammaln(half)
                        + (half - 1) * (norm.logcdf(x) + norm.logsf(y)) + norm.logpdf(x) + norm.logpdf(y))
    inner = integrate.simpson(density * ((x + y) / 2) ** 2, x=gap[0], axis=1)
    return float(integrate.simpson(inner, x=x[:, 0]))


def satterthwaite(parts):
    """The degrees of freedom of a sum of variance estimates [(variance, df)] (Welch-Satterthwaite); a
    part known exactly has df math.inf, and a sum of such parts has df math.inf."""
    total = sum(variance for variance, _ in parts)
    spread = sum(variance ** 2 / df for variance, df in parts if variance > 0 and math.isfinite(df))
    return total ** 2 / spread if spread > 0 else math.inf


def _log_variance(logs):
    return statistics.variance(logs) if len(logs) >= 2 else 0.0


# --- the model ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KindModel:
    """The fitted noise of one kind of entry (the file's kinds.<kind>)."""
    prior_sd: float      # the scale of the kind's sigma_w prior...
    prior_df: float      # ...and its degrees of freedom (math.inf: every entry has prior_sd)
    floor_sd: float      # sigma_b^2 = floor_sd^2 + ratio * sigma_w^2
    ratio: float

    def within(self, history, logs):
        """(sigma_w^2, its df) of an entry: the kind's prior, updated by its A/A history (within_sd,
        within_df, or None) and by the logs of its trials' medians in this run."""
        if math.isinf(self.prior_df):
            return self.prior_sd ** 2, math.inf
        sum_squares, df = self.prior_df * self.prior_sd ** 2, self.prior_df
        if history is not None:
            sum_squares, df = sum_squares + history[1] * history[0] ** 2, df + history[1]
        own_df = max(len(logs) - 1, 0)
        return (sum_squares + own_df * _log_variance(logs)) / (df + own_df), df + own_df

    def side(self, history, logs, trials=None, runs=1):
        """One side's log median as variance parts [(variance, df)]: trial noise and the between-run part
        that scales with it (estimated: the moderated df), and the run-level floor (a model constant).
        trials and runs: what the side would have (default: the trials measured, one run)."""
        within, df = self.within(history, logs)
        trials = trials or len(logs)
        return [(within * (median_variance(trials) + self.ratio) / runs, df), (self.floor_sd ** 2 / runs, math.inf)]

    def record(self):
        return {"within": {"prior_sd": self.prior_sd, "prior_df": self.prior_df if math.isfinite(self.prior_df)
                           else None},
                "between": {"floor_sd": self.floor_sd, "ratio": self.ratio}}


@dataclass(frozen=True)
class Model:
    """A noise model file read: per kind its KindModel, per entry seen in the A/A runs its history."""
    kinds: dict       # {kind: KindModel}
    entries: dict     # {(study, name): (within_sd, within_df)}
    document: dict

    def history(self, key):
        return self.entries.get(key)


# --- fitting --------------------------------------------------------------------------------------
def fit_prior(variances):
    """(prior_sd, prior_df) of a scaled inverse chi-square prior for [(sample variance, df)]: Smyth's
    (2004) moments of the log variances (limma's fitFDist without covariates); prior_df is math.inf when
    the variances differ no more than sampling explains."""
    require_scipy()
    logs = [math.log(max(value, SMALLEST_VARIANCE)) - special.digamma(df / 2) + math.log(df / 2)
            for value, df in variances]
    centre = statistics.fmean(logs)
    spread = statistics.variance(logs) - statistics.fmean(special.polygamma(1, df / 2) for _, df in variances)
    if spread <= 0:
        return math.sqrt(math.exp(centre)), math.inf
    half = optimize.brentq(lambda x: special.polygamma(1, x) - spread, 1e-8, 1e8)  # trigamma decreases
    return math.sqrt(math.exp(centre + special.digamma(half) - math.log(half))), 2 * half


class _Pairs:
    """An A/A pair's entries of one kind as arrays, for the likelihood of (floor_sd, ratio): per side the
    moderated sigma_w^2, its df and the median's share of it."""

    def __init__(self, kind_prior, pairs, histories):
        sides = [[], []]
        for pair in pairs:
            for index, logs in enumerate((pair.first, pair.second)):
                within, df = kind_prior.within(histories.get((pair.key, pair.ids[index])), logs)
                sides[index].append((within, df, median_variance(len(logs))))
        self.sides = [numpy.array(side).T for side in sides]
        self.log_ratios = numpy.array([pair.log_ratio for pair in pairs])

    def log_likelihood(self, floor_sd, ratio):
        """Each log ratio a Student t of the model's variance and Satterthwaite df."""
        parts = [(within * (share + ratio), df) for within, df, share in self.sides]
        variance = sum(part for part, _ in parts) + 2 * floor_sd ** 2
        spread = sum(part ** 2 / df for part, df in parts)  # an infinite df adds nothing
        df = numpy.where(spread > 0, variance ** 2 / numpy.maximum(spread, 1e-300), 1e6)
        return float(distributions.t.logpdf(self.log_ratios, numpy.minimum(df, 1e6),
                                            scale=numpy.sqrt(variance)).sum())


def fit_between(arrays):
    """(floor_sd, ratio) maximising the A/A pairs' likelihood (L-BFGS-B on their logarithms, from four
    starting points)."""
    def cost(point):
        return -arrays.log_likelihood(math.exp(point[0]), math.exp(point[1]))
    bounds = [(math.log(1e-5), math.log(1.0)), (math.log(1e-4), math.log(100.0))]
    starts = itertools.product((math.log(1e-3), math.log(3e-2)), (math.log(1e-2), math.log(1.0)))
    best = min((optimize.minimize(cost, start, method="L-BFGS-B", bounds=bounds) for start in starts),
               key=lambda result: result.fun)
    return math.exp(best.x[0]), math.exp(best.x[1])


def pooled_anova(groups):
    """The one-way random-effects ANOVA estimates (method of moments, Henderson's method I, unequal
    trials) over a kind's entries, each with its own mean: {sigma_w, sigma_b, df_within, df_between}.
    groups: [[logs of run 1, logs of run 2, ...] per entry of a replicate set]; sigma_b^2 truncated at 0."""
    within_ss = within_df = between_ss = between_df = coefficient = 0.0
    for runs in groups:
        counts = [len(logs) for logs in runs]
        total = sum(counts)
        grand = statistics.fmean(itertools.chain(*runs))
        within_ss += sum((len(logs) - 1) * _log_variance(logs) for logs in runs)
        within_df += total - len(runs)
        between_ss += sum(len(logs) * (statistics.fmean(logs) - grand) ** 2 for logs in runs)
        between_df += len(runs) - 1
        coefficient += total - sum(count ** 2 for count in counts) / total  # E[SSB] = df_b sw^2 + this sb^2
    within = within_ss / within_df if within_df else None
    between = max((between_ss - between_df * (within or 0.0)) / coefficient, 0.0) if coefficient else None
    return {"sigma_w": math.sqrt(within) if within is not None else None,
            "sigma_b": math.sqrt(between) if between is not None else None,
            "df_within": within_df, "df_between": between_df}


def replicate_sets(runs):
    """The runs in sets of repeated runs of one machine: those sharing revision, machine (GPU, host,
    CPU, driver) and the options that shape a measurement (quick, full, trials), in start order."""
    sets = {}
    for run in sorted(runs, key=lambda run: run["started"]):
        key = json.dumps([run.get("revision"), [run["machine"].get(field) for field in MACHINE_FIELDS],
                          [run["options"].get(field) for field in OPTION_FIELDS]])
        sets.setdefault(key, []).append(run)
    return list(sets.values())


@dataclass(frozen=True)
class Pair:
    """One entry in both runs of an A/A pair."""
    key: tuple            # (study, name)
    ids: tuple            # the two runs' ids
    first: list           # logs of the trials' medians in each run
    second: list

    @property
    def log_ratio(self):
        return statistics.median(self.second) - statistics.median(self.first)


def _measured(run):
    """{(study, name): (entry, [log trial medians])} of a run's ok entries with a protocol (a gathered
    run: the first GPU's)."""
    found = {}
    for entry in run["entries"]:
        medians = trial_medians(entry)
        if medians and entry.get("protocol") is not None and entry_key(entry) not in found:
            found[entry_key(entry)] = (entry, [math.log(value) for value in medians])
    return found


def observations(runs):
    """What a fit reads, per kind: `groups` {(key, run id): logs} of every entry of every run (an entry's
    kind: that of its median in the run), `pairs` [Pair] of every entry of every A/A pair (a replicate
    set's runs two by two in start order; the kind of the geometric mean of the two medians) and
    `sets` [[logs per run] per entry of a replicate set of two runs or more], for the pooled ANOVA. An
    entry's history, which its kind reads, is that of all the runs: what the fitted file's `entries` say."""
    found = {kind: {"groups": {}, "pairs": [], "sets": []} for kind in KINDS}
    measured_sets = [(members, [_measured(run) for run in members]) for members in replicate_sets(runs)]
    known = histories({(key, run["id"]): logs for members, measured in measured_sets
                       for run, entries in zip(members, measured) for key, (_, logs) in entries.items()})

    def kind(key, entry, medians):
        return kind_of(entry, math.exp(statistics.fmean(medians)), shown_noisy(known.get(key)))
    for members, measured in measured_sets:
        for run, entries in zip(members, measured):
            for key, (entry, logs) in entries.items():
                if (found_kind := kind(key, entry, [statistics.median(logs)])) in found:
                    found[found_kind]["groups"][(key, run["id"])] = logs
        for key in set().union(*measured):
            present = [entries[key] for entries in measured if key in entries]
            found_kind = kind(key, present[0][0], [statistics.median(logs) for _, logs in present])
            if len(present) >= 2 and found_kind in found:
                found[found_kind]["sets"].append([logs for _, logs in present])
        for (first, a), (second, b) in zip(list(zip(members, measured))[0::2], list(zip(members, measured))[1::2]):
            for key in a.keys() & b.keys():
                pair = Pair(key, (first["id"], second["id"]), a[key][1], b[key][1])
                found_kind = kind(key, a[key][0], [statistics.median(pair.first), statistics.median(pair.second)])
                if found_kind in found:
                    found[found_kind]["pairs"].append(pair)
    return found


def histories(groups, leaving_out=None):
    """{(study, name): (within_sd, within_df)} over the entries' (key, run) groups of two trials or more,
    leaving out the runs named (a comparison of those runs must not know their trials in advance)."""
    sums = {}
    for (key, run_id), logs in groups.items():
        if len(logs) >= 2 and run_id not in (leaving_out or ()):
            total = sums.setdefault(key, [0.0, 0])
            total[0] += (len(logs) - 1) * max(_log_variance(logs), SMALLEST_VARIANCE)
            total[1] += len(logs) - 1
    return {key: (math.sqrt(ss / df), df) for key, (ss, df) in sums.items()}


def _tail(model, pairs, known):
    """The A/A entries beyond the model's TAIL_LEVEL interval (their runs' trials not in their history,
    `known`): the share, and the farthest listed."""
    beyond = []
    for pair in pairs:
        history = known.get((pair.key, pair.ids[0]))
        parts = model.side(history, pair.first) + model.side(history, pair.second)
        variance, df = sum(part for part, _ in parts), satterthwaite(parts)
        level = 1 - 2 * distributions.t.sf(abs(pair.log_ratio) / math.sqrt(variance), min(df, 1e6))
        if level > TAIL_LEVEL:
            beyond.append({"study": pair.key[0], "name": pair.key[1], "runs": list(pair.ids),
                           "ratio": math.exp(pair.log_ratio), "sd": math.sqrt(variance), "level": level})
    beyond.sort(key=lambda row: -abs(math.log(row["ratio"])) / row["sd"])
    return {"level": TAIL_LEVEL, "share": len(beyond) / len(pairs), "count": len(beyond),
            "entries": beyond[:TAIL_LISTED]}


def fit_kind(observed):
    """A kind's KindModel and file record from its observations; None when they are too few."""
    trial_groups = [(_log_variance(logs), len(logs) - 1) for logs in observed["groups"].values() if len(logs) >= 2]
    if len(trial_groups) < MIN_TRIAL_GROUPS or len(observed["pairs"]) < MIN_PAIRS:
        return None
    prior = KindModel(*fit_prior(trial_groups), 0.0, 0.0)
    # Each pair's entries carry the history of the other runs only, as a comparison of new runs would.
    left_out = {pair.ids for pair in observed["pairs"]}
    known = {}
    for ids in left_out:
        for key, history in histories(observed["groups"], ids).items():
            known[(key, ids[0])] = known[(key, ids[1])] = history
    model = KindModel(prior.prior_sd, prior.prior_df, *fit_between(_Pairs(prior, observed["pairs"], known)))
    typical_sigma_b = math.sqrt(model.floor_sd ** 2 + model.ratio * model.prior_sd ** 2)
    return model, {**model.record(), "typical": {"sigma_w": model.prior_sd, "sigma_b": typical_sigma_b},
                   "measured_on": {"trial_groups": len(trial_groups), "pairs": len(observed["pairs"]),
                                   "entries": len({pair.key for pair in observed["pairs"]})},
                   "pooled_anova": pooled_anova(observed["sets"]),
                   "tail": _tail(model, observed["pairs"], known)}


def fit(runs):
    """The noise model document of the runs (run digests): every kind with enough data, and the A/A
    history of every entry measured in two trials or more."""
    require_scipy()
    observed = observations(runs)
    kinds = {kind: fitted for kind in KINDS if (fitted := fit_kind(observed[kind])) is not None}
    if not kinds:
        raise NoiseModelError(f"too few measurements to fit any kind of entry: each needs {MIN_TRIAL_GROUPS} entries "
                              f"measured in two trials or more and {MIN_PAIRS} in both runs of an A/A pair (the same "
                              f"revision, machine and options run twice); runs given: "
                              f"{', '.join(run['id'] for run in runs) or 'none'}")
    groups = {key: logs for kind in observed.values() for key, logs in kind["groups"].items()}
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION,
            "note": "Written by `gpubench noise-model DIGEST... --out FILE` from A/A runs; not edited by hand.",
            "method": "per kind: a scaled inverse chi-square prior of the between-trial variance of log times "
                      "(Smyth's moments), updated per entry by its A/A trials and a comparison's; between-run "
                      "variance floor_sd^2 + ratio * sigma_w^2 by maximum likelihood on the A/A pairs' log ratios "
                      "of medians (docs/methodology.md, The noise model)",
            "runs": [{**{key: run.get(key) for key in RUN_FIELDS},
                      "machine": {key: run["machine"].get(key) for key in MACHINE_FIELDS},
                      "options": {key: run["options"].get(key) for key in OPTION_FIELDS}} for run in runs],
            "replicate_sets": [[run["id"] for run in members] for members in replicate_sets(runs)],
            "kinds": {kind: {"description": KINDS[kind], **record} for kind, (_, record) in kinds.items()},
            "entries": [{"study": study, "name": name, "within_sd": sd, "within_df": df}
                        for (study, name), (sd, df) in sorted(histories(groups).items())]}


# --- the file -------------------------------------------------------------------------------------
def write(document, path=FILE):
    """Indented, with one line per entry (hundreds of them)."""
    rows = ",\n  ".join(json.dumps(row, allow_nan=False) for row in document["entries"])
    text = json.dumps({**document, "entries": "ENTRIES"}, indent=1, allow_nan=False)
    return outputs.write_text(path, text.replace('"ENTRIES"', f"[\n  {rows}\n ]" if rows else "[]") + "\n")


def _number(value, where, low, high):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{where}: expected a number from {low:g} to {high:g}, got {value!r:.40}")
    return float(value)


def _object(value, where):
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object")
    return value


def _kind_model(record, kind):
    within = _object(_object(record, f"kinds.{kind}").get("within"), f"kinds.{kind}.within")
    between = _object(record.get("between"), f"kinds.{kind}.between")
    prior_df = within.get("prior_df")
    return KindModel(_number(within.get("prior_sd"), f"kinds.{kind}.within.prior_sd", 1e-6, 10),
                     math.inf if prior_df is None else _number(prior_df, f"kinds.{kind}.within.prior_df", 1e-6, 1e12),
                     _number(between.get("floor_sd"), f"kinds.{kind}.between.floor_sd", 0, 10),
                     _number(between.get("ratio"), f"kinds.{kind}.between.ratio", 0, 1e4))


def read(document):
    """The Model of a noise model document, every number it uses checked (ValueError naming the field)."""
    if not isinstance(document, dict) or (document.get("schema"), document.get("schema_version")) != (
            SCHEMA, SCHEMA_VERSION):
        raise ValueError(f"not a {SCHEMA} file of version {SCHEMA_VERSION}")
    kinds = _object(document.get("kinds"), "kinds")
    unknown = [kind for kind in kinds if kind not in KINDS]
    if not kinds or unknown:
        raise ValueError(f"kinds: expected one or more of {', '.join(KINDS)}, got {', '.join(map(repr, kinds))}")
    entries = document.get("entries")
    if not isinstance(entries, list):
        raise ValueError("entries: expected a list")
    histories_found = {}
    for index, row in enumerate(entries):
        where = f"entries[{index}]"
        if not isinstance(_object(row, where).get("study"), str) or not isinstance(row.get("name"), str):
            raise ValueError(f"{where}: expected its study and name")
        histories_found[(row["study"], row["name"])] = (_number(row.get("within_sd"), f"{where}.within_sd", 0, 10),
                                                        _number(row.get("within_df"), f"{where}.within_df", 1, 1e6))
    runs = document.get("runs")
    if not isinstance(runs, list) or not runs or not all(isinstance(run, dict) and isinstance(run.get("id"), str)
                                                         for run in runs):
        raise ValueError("runs: expected the list of runs it was measured on, each with its id")
    return Model({kind: _kind_model(record, kind) for kind, record in kinds.items()}, histories_found, document)


def load(path=FILE):
    """The Model of a noise model file; NoiseModelError saying why it cannot be read."""
    try:
        with open(path, encoding="utf-8") as stream:
            document = json.load(stream, parse_constant=_refuse)
        return read(document)
    except (OSError, ValueError, RecursionError) as error:
        raise NoiseModelError(f"cannot read the noise model {path}: {error}") from None


def _refuse(name):
    raise ValueError(f"{name} is not a number a noise model holds")
