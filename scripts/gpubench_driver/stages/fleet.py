"""gpubench fleet: many nodes' `check --gpus all` or `run --gpus all` folders; each GPU's figure against the
median of the same figure over its GPU model in the fleet, by the noise model's threshold; peer links as
fractions of their link's rate. docs/multi-gpu.md, "A fleet of nodes"."""
import math
import os
import statistics
from statistics import NormalDist

from gpubench_driver import studies
from gpubench_driver.lib import check_results, noise_model, noise_verdicts, results, verdicts
from gpubench_driver.stages import check_measure, health
from gpubench_driver.stages.collect import GPU_FIELD

HEALTHY, DRAIN, NOT_JUDGED = "healthy", "drain", "not judged"
EXIT_STATUS = {HEALTHY: 0, DRAIN: 1, NOT_JUDGED: 2}
GPU_BOUND, HOST_PACED, LINK = "gpu", "host", "link"
FEWEST = 3  # members of a group: with two, their median is their mean and cannot tell which is off
Z_BEYOND = NormalDist().inv_cdf(0.95)  # one-sided 5%: beyond noise
Z_POWER = NormalDist().inv_cdf(noise_verdicts.POWER)


class NodeError(Exception):
    """A node folder that cannot be read: the message names the file and why."""


# --- reading a node ------------------------------------------------------------------------------
def _entry_times(folder, part):
    """{entry name: median time} of a check part's results file (its noise kind: check.json keeps rates); {}
    if absent."""
    relative = part.get("results")
    if not isinstance(relative, str) or os.path.isabs(relative) or os.path.normpath(relative).startswith(".."):
        return {}
    path = os.path.join(folder, relative)
    if not os.path.isfile(path):
        return {}
    return {entry["name"]: entry["time_s"]["median"] for study in results.load(path)["studies"].values()
            for entry in study["entries"] if entry["status"] == "ok"}


def _figure_rows(node, gpu, model, figures, times):
    """The measurements of a check part's figures: those with a value and a better direction."""
    rows = []
    for row in figures:
        if row.get("value") is None or row.get("better") not in ("higher", "lower") or not 0 < row["value"] < math.inf:
            continue
        study = row.get("study") if isinstance(row.get("study"), str) else None
        entry = row.get("entry") if isinstance(row.get("entry"), str) else None
        protocol = (row.get("timed_as") if isinstance(row.get("timed_as"), str) else "").split(":")[0] or None
        link = gpu is None and check_measure.is_peers(study)
        fraction = row.get("fraction_of_reference")
        use_fraction = link and isinstance(fraction, (int, float)) and 0 < fraction < math.inf
        bound = LINK if link else HOST_PACED if noise_model.host_paced({"device": "gpu", "protocol": protocol}) \
            else GPU_BOUND
        rows.append({"node": node, "gpu": gpu, "model": model, "study": study, "key": row["key"],
                     "label": row["label"], "where": row["where"], "unit": "of link rate" if use_fraction
                     else row["unit"], "value": fraction if use_fraction else row["value"], "better": row["better"],
                     "protocol": protocol, "median_s": times.get(entry) if protocol else None, "bound": bound,
                     "history": (study, entry), "check_below": row.get("status") == health.BELOW})
    return rows


def _unmeasured(part):
    """A check part's figures it could not measure (a study that failed or was left out), with why."""
    return [f"{row['label']} ({row.get('why')})" for row in part["figures"] if row.get("value") is None]


def _part_failures(part):
    return ([row["label"] for row in part["figures"] if row.get("status") == health.BELOW]
            + [str(check.get("check")) for check in part.get("checks") or []
               if isinstance(check, dict) and check.get("ok") is False])


def read_check(name, path):
    """A node from its check.json: each GPU's figures, the node part's (its peer links), what the check
    failed."""
    document, folder = check_results.load(path), os.path.dirname(path)
    rows, failed, errors = [], [], [str(error) for error in document.get("errors") or []]
    node = document.get("node")
    for part, gpu, where in ([(part, part.get("index"), f"GPU {part.get('index')}") for part in document["gpus"]]
                             + ([(node, None, "between GPUs")] if node else [])):
        model = part.get("model") if isinstance(part.get("model"), str) else part["name"]
        rows += _figure_rows(name, gpu, model, part["figures"], _entry_times(folder, part))
        failed += [f"{where}: {what}" for what in _part_failures(part)]
        errors += [f"{where}: {what}" for what in _unmeasured(part)]
    return {"name": name, "path": path, "source": "check", "check_verdict": document.get("verdict"),
            "failed": (failed or ["the check's verdict: below"]) if document.get("verdict") == "below" else [],
            "errors": errors,
            "gpus": sorted({row["gpu"] for row in rows if row["gpu"] is not None}), "rows": rows}


def read_run(name, path):
    """A node from a run's results.json: per GPU its headline entries, else GPU entries of 100 us or more, as
    times."""
    document = results.load(path)
    gathered = document["run"].get("gpus") or []
    records = document["machine"].get("gpus") or []
    names = {part["index"]: (record.get("name") if isinstance(record, dict) else None)
             for part, record in zip(gathered, records)} if gathered else {
        0: (records[0].get("name") if records and isinstance(records[0], dict) else document["machine"].get("gpu"))}
    entries = [(study, entry) for study, record in document["studies"].items() for entry in record["entries"]
               if entry["status"] == "ok" and entry["device"] == "gpu"]
    chosen = [(study, entry) for study, entry in entries if studies.is_headline(study, entry)] or [
        (study, entry) for study, entry in entries if verdicts.long_gpu_entry(entry)]
    rows = []
    for study, entry in chosen:
        gpu = entry.get(GPU_FIELD, 0)
        rows.append({"node": name, "gpu": gpu, "model": names.get(gpu) or "unknown GPU", "study": study,
                     "key": entry["name"], "label": entry["name"], "where": "", "unit": "s",
                     "value": entry["time_s"]["median"], "better": "lower", "protocol": entry.get("protocol"),
                     "median_s": entry["time_s"]["median"], "history": (study, entry["name"]),
                     "bound": HOST_PACED if noise_model.host_paced(entry) else GPU_BOUND, "check_below": False})
    status = document["run"]["status"]
    return {"name": name, "path": path, "source": "run", "check_verdict": None, "failed": [],
            "errors": [] if status == "complete" else [f"the run is {status}"],
            "gpus": sorted({row["gpu"] for row in rows}), "rows": rows}


def read_node(folder, name):
    """A node folder's record: its check.json if it holds one, else its results file; NodeError saying why not."""
    if check_results.file_in(folder):
        reader, path = read_check, check_results.file_in(folder)
    elif os.path.isdir(folder) and results.file_in(folder):
        reader, path = read_run, results.file_in(folder)
    else:
        raise NodeError(f"{folder}: holds neither {check_results.FILE} (check --gpus all) nor {results.FILE} "
                        f"(run --gpus all)")
    try:
        return reader(name, path)
    except (check_results.CheckFileError, results.ResultsError) as error:
        raise NodeError(str(error)) from None
    except (KeyError, TypeError, AttributeError, ValueError) as error:  # a field the loaders do not check
        raise NodeError(f"{path}: not the shape gpubench writes ({type(error).__name__}: {error})") from None


def node_names(folders):
    """Each folder's node name: its own name (srun's or mpirun's host), else, where two share one, the path given."""
    names = [os.path.basename(os.path.normpath(folder)) for folder in folders]
    return [name if names.count(name) == 1 else folder for name, folder in zip(names, folders)]


# --- judging ----------------------------------------------------------------------------------------
def group_key(row):
    """One figure of one model at one point; a node's peer links all together (each a fraction of its link's
    rate)."""
    return (row["model"], row["study"] if row["bound"] == LINK else row["key"], row["where"], row["unit"])


def noise_of(model, members):
    """(kind, beyond noise from, minimum detectable effect): how far one run's figure may fall short of the median
    of the group's runs and still be noise, and the shortfall found with noise_verdicts.POWER; the kind by the
    protocol and median time, or the wider of the protocol's two kinds where a member has only a rate (a check.json
    without its results files)."""
    row, count = members[0], len(members)
    times = [member["median_s"] for member in members]
    known = None not in times
    if known or row["protocol"] is None:
        candidates = [noise_verdicts.kind_in(model, {"protocol": row["protocol"]},
                                                  statistics.median(times) if known else 1.0)[0]]
    else:
        candidates = [kind for kind in (f"{row['protocol']}-long", f"{row['protocol']}-short") if kind in model.kinds]
        candidates = candidates or [noise_verdicts.kind_in(model, None, 1.0)[0]]

    def spread(kind):  # one run's log median against the median of `count`: sd
        parts = model.kinds[kind].side(model.history(row["history"]), [], 1)
        return math.sqrt(sum(variance for variance, _ in parts) * (1 + noise_model.median_variance(count)))
    kind = max(candidates, key=lambda name: math.log1p(noise_verdicts.band_of(name)) + spread(name))
    edge = math.log1p(noise_verdicts.band_of(kind))
    return kind, math.expm1(edge + Z_BEYOND * spread(kind)), math.expm1(edge + (Z_BEYOND + Z_POWER) * spread(kind))


def judge(nodes, model):
    """[group record] of every node's measurements; each member's `ratio` to its group's median and
    `below`."""
    groups = {}
    for node in nodes:
        for row in node["rows"]:
            groups.setdefault(group_key(row), []).append(row)
    found = []
    for (gpu_model, _, where, unit), members in groups.items():
        middle = statistics.median(row["value"] for row in members)
        judged = len(members) >= FEWEST
        kind, threshold, detectable = noise_of(model, members) if judged else (None, None, None)
        for row in members:
            row["ratio"], row["judged"] = row["value"] / middle, judged
            short = 1 / row["ratio"] - 1 if row["better"] == "higher" else row["ratio"] - 1
            row["below"] = (judged and short > threshold) or (row["bound"] == LINK and row["check_below"])
        found.append({"model": gpu_model, "figure": members[0]["label"] if members[0]["bound"] != LINK
                      else f"{members[0]['study']} links", "key": members[0]["key"], "where": where, "unit": unit,
                      "bound": members[0]["bound"], "members": len(members), "median": middle, "kind": kind,
                      "beyond_noise": threshold, "detectable": detectable,
                      "below": [{"node": row["node"], "gpu": row["gpu"], "figure": row["label"], "value": row["value"],
                                 "ratio": row["ratio"]} for row in members if row["below"]]})
    return found


def where_of(row):
    return f"GPU {row['gpu']}" if row["gpu"] is not None else "link" if row["bound"] == LINK else "node"


def node_verdicts(nodes):
    """Each node's `below` (drains), `host` (host-paced figures below, no drain) and verdict, in place."""
    for node in nodes:
        below = [row for row in node["rows"] if row["below"] and row["bound"] != HOST_PACED]
        node["below"] = [f"{where_of(row)}: {row['label']} "
                         f"({row['ratio']:.3f} of the fleet's median)" for row in below] + node["failed"]
        node["host"] = [f"{row['label']} ({row['ratio']:.3f})" for row in node["rows"]
                        if row["below"] and row["bound"] == HOST_PACED]
        node["verdict"] = DRAIN if node["below"] else NOT_JUDGED if node["errors"] or not any(
            row["judged"] for row in node["rows"]) else HEALTHY


def fleet_verdict(nodes, skipped, groups):
    seen = {node["verdict"] for node in nodes}
    if DRAIN in seen:
        return DRAIN
    return NOT_JUDGED if skipped or NOT_JUDGED in seen or not any(group["kind"] for group in groups) else HEALTHY
