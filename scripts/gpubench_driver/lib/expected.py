"""Expected ranges of the headline figures per GPU model (scripts/expected_ranges.json, from `gpubench expected`),
kept per point a figure was read from (its `where`): a run is judged only against runs of the same point."""
import json
import os

from gpubench_driver.lib import outputs

EXPECTED = os.path.join(outputs.SCRIPTS_DIR, "expected_ranges.json")
SCHEMA = "gpubench-expected-ranges"


class ExpectedError(Exception):
    """The ranges file or a run cannot be used: the message says why."""


def load(path=EXPECTED):
    """{GPU name: its record}; {} when the file does not exist."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as stream:
            found = json.load(stream)
        if found.get("schema") != SCHEMA or not isinstance(found.get("models"), dict):
            raise ValueError(f"not a {SCHEMA} file")
        return found["models"]
    except (OSError, ValueError, AttributeError, RecursionError) as error:
        raise ExpectedError(f"cannot read the expected ranges {path}: {error}") from None


def figure_range(model, row):
    """The expected range of a headline figure: the committed runs' values at the same entry, or None."""
    return ((model or {}).get("figures", {}).get(row["key"]) or {}).get(row["where"])


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def reference_fraction(models, row):
    """{"min", "runs", "models"}: the least fraction of the same reference that the recorded (check) runs of any
    GPU model reached at a figure's point; None where none was recorded."""
    what = (row.get("reference") or {}).get("what")
    found = [(name, fraction) for name, model in (models or {}).items()
             for fraction in (figure_range(model, row) or {}).get("fractions") or []
             if isinstance(fraction, dict) and fraction.get("of") == what and _number(fraction.get("value"))]
    if not what or not found:
        return None
    return {"min": min(fraction["value"] for _, fraction in found),
            "runs": [fraction.get("run") for _, fraction in found], "models": sorted({name for name, _ in found})}
