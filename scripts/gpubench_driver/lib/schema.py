"""Checking a JSON document against a schema of its fields' types (how a results file, lib/results.py, is
read), the first field that breaks it named in the error, and leaving out what JSON cannot hold."""
import math
from dataclasses import dataclass


class ResultsError(Exception):
    """A results file that is not a valid gpubench results.json."""


# --- validation --------------------------------------------------------------------
def expect(condition, path, message):
    if not condition:
        raise ResultsError(f"{path}: {message}")


def expect_type(value, types, path):
    expect(has_type(value, types), path, f"expected {type_names(types)}, got {type(value).__name__}")


def has_type(value, types):
    if isinstance(value, bool):  # bool is an int to isinstance; JSON keeps them apart
        return bool in as_tuple(types)
    return isinstance(value, types)


def as_tuple(types):
    return types if isinstance(types, tuple) else (types,)


def shown(value):
    """A value for a one-line message: a hostile one may have hundreds of digits."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:40]}... ({len(text)} characters)"


def type_names(types):
    names = {int: "number", float: "number", str: "string", dict: "object", list: "array",
             bool: "boolean", type(None): "null"}
    return " or ".join(dict.fromkeys(names[t] for t in as_tuple(types)))


def expect_fields(record, fields, path):
    """`record` is null or an object whose named fields (when present) have their types."""
    check(record, Record(fields), path)


# --- a schema: a type (or a tuple of them), a Record, Items, All, Optional, or a check(value, path) ---------
@dataclass(frozen=True)
class Record:
    """An object of `types` whose fields match their specs (null: each field null); `null_refused`: null is
    refused after its fields are checked."""
    fields: dict
    types: tuple = (dict, type(None))
    null_refused: bool = False


@dataclass(frozen=True)
class Items:
    """A list (or an object) of `types` whose every item (or value) matches `item`."""
    item: object
    types: tuple = (list, type(None))


class All:
    """Every spec, in order."""
    def __init__(self, *specs):
        self.specs = specs


@dataclass(frozen=True)
class Optional:
    """Null, or what `spec` says."""
    spec: object


def child(path, key):
    return f"{path}[{key}]" if not isinstance(key, str) else f"{path}.{key}" if path else key


def _types_of(spec):
    """The types a spec checks first (None: none), so that a record's fields are typed before any is
    opened."""
    if isinstance(spec, (type, tuple)):
        return spec
    if isinstance(spec, (Record, Items)):
        return spec.types
    return _types_of(spec.specs[0]) if isinstance(spec, All) else None


def check(value, spec, path):
    """Raise ResultsError naming the first field of `value` that breaks `spec`."""
    if isinstance(spec, (type, tuple)):
        expect_type(value, spec, path)
    elif isinstance(spec, Record):
        expect_type(value, spec.types, path)
        record = value or {}
        for key, field in spec.fields.items():
            if _types_of(field) is not None:
                expect_type(record.get(key), _types_of(field), child(path, key))
        for key, field in spec.fields.items():
            if not isinstance(field, (type, tuple)):
                check(record.get(key), field, child(path, key))
        expect(value is not None or not spec.null_refused, path, "expected an object, got null")
    elif isinstance(spec, Items):
        expect_type(value, spec.types, path)
        for key, item in value.items() if isinstance(value, dict) else enumerate(value or []):
            check(item, spec.item, child(path, key))
    elif isinstance(spec, All):
        for each in spec.specs:
            check(value, each, path)
    elif isinstance(spec, Optional):
        if value is not None:
            check(value, spec.spec, path)
    else:
        spec(value, path)


def without_non_finite(value):
    """NaN and infinities become null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: without_non_finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_non_finite(item) for item in value]
    return value
