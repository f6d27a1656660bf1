"""Expected ranges of the headline figures per GPU model (scripts/expected_ranges.json), which the health
check (stages/health.py) sets a run against. The file is written by `gpubench expected RUN...`
(commands/expected.py), never by hand: for each GPU model, every headline figure's value in each of
its committed runs, kept per entry it was read from (its `where`: a quick run's peak is measured at a
smaller size than the default suite's), so that a run is judged only against runs that measured the
same point."""
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
