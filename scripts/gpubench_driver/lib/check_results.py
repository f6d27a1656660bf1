"""check.json, what `gpubench check` writes (docs/results-schema.md): its schema, and reading one back (as
`gpubench expected` does), checked field by field: a bad one is a CheckFileError naming the field."""
import json
import os

from gpubench_driver.lib import outputs

SCHEMA = "gpubench-check"
VERSION = 1
FILE = "check.json"


class CheckFileError(Exception):
    """A check.json that cannot be used: the message says why."""


def file_in(path):
    """The check file a path names (its check.json, or a file whose schema is the check's), or None."""
    candidate = os.path.join(path, FILE) if os.path.isdir(path) else path
    if not os.path.isfile(candidate):
        return None
    if os.path.basename(candidate) == FILE:
        return candidate
    try:
        with outputs.open_text(candidate) as stream:
            head = stream.read(200)
    except outputs.READ_ERRORS:
        return None
    return candidate if f'"schema": "{SCHEMA}"' in head else None


def _expect(condition, where, what):
    if not condition:
        raise CheckFileError(f"{where}: {what}")


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _figure(row, where):
    _expect(isinstance(row, dict), where, "expected an object")
    for key in ("key", "label", "unit"):
        _expect(isinstance(row.get(key), str), f"{where}.{key}", "expected text")
    # A figure not measured has no point and no value.
    _expect(isinstance(row.get("where"), str) or row.get("value") is None, f"{where}.where", "expected text")
    for key in ("value", "fraction_of_reference"):
        _expect(row.get(key) is None or _number(row[key]), f"{where}.{key}", "expected a number or null")
    reference = row.get("reference")
    _expect(reference is None or isinstance(reference, dict) and isinstance(reference.get("what"), str),
            f"{where}.reference", "expected null or an object with 'what'")


def load(path):
    """The check document at path, its fields checked as far as its readers use them."""
    try:
        with outputs.open_text(path) as stream:
            document = json.load(stream)
    except (*outputs.READ_ERRORS, ValueError, RecursionError) as error:
        raise CheckFileError(f"cannot read {path}: {error}") from None
    _expect(isinstance(document, dict) and document.get("schema") == SCHEMA, path, f"not a {SCHEMA} file")
    version = document.get("schema_version")
    _expect(isinstance(version, int) and 1 <= version <= VERSION, f"{path}: schema_version",
            f"expected 1 to {VERSION} (a newer driver wrote it?), got {version!r}")
    _expect(isinstance(document.get("run"), dict) and isinstance(document["run"].get("id"), str), f"{path}: run.id",
            "expected text")
    parts = document.get("gpus")
    _expect(isinstance(parts, list), f"{path}: gpus", "expected a list")
    node = document.get("node")
    _expect(node is None or isinstance(node, dict), f"{path}: node", "expected null or an object")
    for where, part in [*((f"gpus[{index}]", part) for index, part in enumerate(parts)), *([("node", node)] if node
                                                                                           else [])]:
        _expect(isinstance(part, dict) and isinstance(part.get("name"), str), f"{path}: {where}.name", "expected text")
        _expect(isinstance(part.get("figures"), list), f"{path}: {where}.figures", "expected a list")
        for number, row in enumerate(part["figures"]):
            _figure(row, f"{path}: {where}.figures[{number}]")
    return document


def recorded_runs(path):
    """[(model, run record, figures with a value)] of a check.json: one per GPU, one of the node."""
    document = load(path)
    revision = (document["run"].get("git") or {}).get("revision")
    parts = [(f"gpu{part.get('index')}", part) for part in document["gpus"]]
    parts += [("node", document["node"])] if document.get("node") else []
    found = []
    for suffix, part in parts:
        run = {"id": f"{document['run']['id']}-{suffix}", "path": os.path.relpath(path),
               "revision": revision if isinstance(revision, str) else None}
        model = part.get("model") if isinstance(part.get("model"), str) else part["name"]
        measured = [row for row in part["figures"] if row.get("value") is not None]
        if measured:  # a part that measured nothing is no run of its model
            found.append((model, run, measured))
    return found
