"""gpubench check's outputs: check.json (docs/results-schema.md, "check.json") and the console's one screen:
a GPU's figures and checks (several GPUs: a column each), the node's figures between GPUs, the verdict."""
import json

from gpubench_driver.lib import check_results, outputs
from gpubench_driver.lib.schema import without_non_finite
from gpubench_driver.lib.formatting import percent, unit_text
from gpubench_driver.stages import check_measure, check_verdicts as verdicts
from gpubench_driver.stages.health import ABOVE, BELOW as FIGURE_BELOW, NOT_JUDGED as FIGURE_NOT_JUDGED

# What check.json keeps of a figure (lib/figures.figure and the check's own fields).
FIGURE_FIELDS = ("key", "label", "value", "low", "high", "unit", "better", "where", "study", "entry", "point",
                 "plateau", "budget", "timed_as", "reference", "fraction_of_reference", "converged", "stop",
                 "status", "basis", "why", "expected", "runs", "healthy_fraction", "by")
MARK = {FIGURE_BELOW: "BELOW", FIGURE_NOT_JUDGED: "not judged", ABOVE: "ok (above)"}
LABEL_WIDTH, VALUE_WIDTH, CELL_WIDTH = 44, 15, 9
# A column per GPU holds a number in the row's unit: (divisor, unit shown).
SHORT_UNITS = {"FLOP/s": (1e12, "TFLOP/s"), "OP/s": (1e12, "TOP/s"), "B/s": (1e9, "GB/s"), "s": (1e-6, "us")}


def value_text(row):
    return unit_text(row.get("value"), row.get("unit"), "-", 4, ("FLOP/s", "OP/s", "B/s", "s"))


def basis_text(row):
    """What the figure was judged against, in a few words."""
    if row.get("basis") == verdicts.EXPECTED_RANGE:
        found = row["expected"]
        return (f"range {value_text({**row, 'value': found['min']})} to {value_text({**row, 'value': found['max']})} "
                f"({row['runs']} runs)")
    if row.get("basis") == verdicts.DATASHEET_FRACTION:
        return f"{percent(row['fraction_of_reference'])} of {row['reference']['what']} (healthy >= " \
               f"{percent(row['healthy_fraction']['min'])})"
    if row.get("basis") == verdicts.PEER_MEDIAN:
        return row["why"]
    return "no basis" if row.get("value") is not None else row["why"]


def verdict_text(row):
    """The verdict in a word, the shortfall where below, '~' where it stopped at the timeout."""
    text = MARK.get(row["status"], "ok")
    text += f" {row['by']:.0%} off" if row["status"] == FIGURE_BELOW and row.get("by") is not None else ""
    return text + (" ~" if row.get("converged") is False else "")


def document(run, parts, node, errors=()):
    """check.json: the run record, each GPU's part, the node's part (or None), verdicts, exit status."""
    for part in _every_part(parts, node):
        part["figures"] = [{key: row.get(key) for key in FIGURE_FIELDS} for row in part["figures"]]
        part["verdict"] = verdicts.part_verdict(part["figures"], part["checks"])
    verdict = verdicts.overall([part["verdict"] for part in _every_part(parts, node)]) if not errors \
        else verdicts.NOT_JUDGED
    return {"schema": check_results.SCHEMA, "schema_version": check_results.VERSION, "run": run, "verdict": verdict,
            "exit_status": verdicts.EXIT_STATUS[verdict], "errors": list(errors), "gpus": parts, "node": node}


def _every_part(parts, node):
    return [*parts, *([node] if node else [])]


def write(found, path):
    """check.json, whole or not at all; a number that is not finite is written null, as results.json's are."""
    outputs.write_text(path, json.dumps(without_non_finite(found), indent=1, allow_nan=False) + "\n")


def _line(label, *cells):
    shown = label if len(label) <= LABEL_WIDTH else label[:LABEL_WIDTH - 1] + "…"  # cut where a screen needs it, visibly
    return f"{shown:<{LABEL_WIDTH}} " + " ".join(cells)


def _gpu_title(part):
    return f"GPU {part.get('index')}: {part.get('name')} ({part.get('pci_bus_id') or '?'}): {part['verdict']}"


def _checks_lines(part):
    return [f"  {'ok ' if check['ok'] else 'BAD'} {check['check']}: {check['text']}" for check in part["checks"]]


def one_gpu_lines(part):
    """A GPU's table: figure, value, basis, verdict; then its checks."""
    return [_gpu_title(part), _line("figure", f"{'value':<{VALUE_WIDTH}}", f"{'verdict':<14}", "judged against"),
            *map(_figure_line, part["figures"]), *_checks_lines(part)]


def _figure_line(row):
    return _line(row["label"], f"{value_text(row):<{VALUE_WIDTH}}", f"{verdict_text(row):<14}", basis_text(row))


def several_gpus_lines(parts):
    """One table, a column per GPU (a value, '!' below, '?' not judged); each GPU's verdict and failed checks."""
    labels = list(dict.fromkeys((row["key"], row["where"], row["label"], row["unit"]) for part in parts
                                for row in part["figures"]))
    lines = [_line("figure", f"{'unit':<8}", *(f"{'GPU ' + str(part.get('index')):>{CELL_WIDTH}}" for part in parts))]
    for key, where, label, unit in labels:
        scale, shown = SHORT_UNITS.get(unit, (1, unit))
        cells = []
        for part in parts:
            row = next((row for row in part["figures"] if (row["key"], row["where"]) == (key, where)), None)
            mark = {FIGURE_BELOW: "!", FIGURE_NOT_JUDGED: "?"}.get(row["status"], " ") if row else " "
            value = f"{row['value'] / scale:.1f}" if row and row.get("value") is not None else "-"
            cells.append(f"{value + mark:>{CELL_WIDTH}}")
        lines.append(_line(label, f"{shown:<8}", *cells))
    lines.append("  ! below   ? not judged (its basis: check.json)")
    for part in parts:
        lines.append(_gpu_title(part))
        lines += [line for line in _checks_lines(part) if line.startswith("  BAD")]
    return lines


def node_lines(node):
    """The figures between GPUs: the peers' least and median and each below; then the others."""
    rows = node["figures"]
    order = node["gpus"]
    renamed = "" if order == list(range(len(order))) else "; gpu<k> in a route is the k-th of them"
    lines = [f"Between the GPUs ({', '.join(map(str, order))}{renamed}): {node['verdict']}"]
    pairs = sorted((row for row in rows if check_measure.is_peers(row.get("study")) and row["value"]),
                   key=lambda row: row["value"])
    if pairs:
        middle = pairs[len(pairs) // 2]
        lines.append(_line(f"{pairs[0]['study']}: {len(pairs)} figures", f"least {value_text(pairs[0])} "
                           f"({pairs[0]['label']}), median {value_text(middle)}"))
    return lines + [_figure_line(row) for row in rows if row not in pairs or row["status"] == FIGURE_BELOW]


def console(found, check_path, measure_s):
    """The check's screen, ending with its verdict and what made it."""
    parts, node = found["gpus"], found["node"]
    lines = [f"gpubench check: {error}" for error in found["errors"]]
    if len(parts) == 1:
        lines += one_gpu_lines(parts[0])
    elif parts:
        lines += several_gpus_lines(parts)
    if node:
        lines += node_lines(node)
    named = [f"GPU {part.get('index')}: {', '.join(verdicts.below_names(part))}" for part in parts
             if part["verdict"] == verdicts.BELOW] + ([f"between GPUs: {', '.join(verdicts.below_names(node))}"]
                                                      if node and node["verdict"] == verdicts.BELOW else [])
    every_row = [row for part in _every_part(parts, node) for row in part["figures"]]
    unjudged = sum(row["status"] == FIGURE_NOT_JUDGED for row in every_row)
    verdict = f"gpubench check: {found['verdict']} (exit status {found['exit_status']})"
    if named:
        verdict += f"; below: {'; '.join(named)}"
    if unjudged:
        verdict += f"; {unjudged} figure(s) not judged"
    if any(row.get("converged") is False for row in every_row):
        lines.append("~ its samples did not reach the stopping rule's noise target before its timeout")
    if any(row.get("value") is not None and row["status"] == FIGURE_NOT_JUDGED for row in every_row):
        lines.append(f"no basis: {verdicts.NO_BASIS}")
    timing = f"measured in {measure_s:.0f} s after the build; " if measure_s is not None else ""
    return "\n".join([*lines, verdict, f"{timing}check.json: {check_path}"])
