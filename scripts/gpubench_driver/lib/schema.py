"""Checking a JSON document against the types its fields must have, the first field that breaks them named
in the error (how a results file, lib/results.py, is read), and leaving out what JSON cannot hold."""
import math


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
    expect_type(record, (dict, type(None)), path)
    for key, types in fields.items():
        expect_type((record or {}).get(key), types, f"{path}.{key}")


def without_non_finite(value):
    """NaN and infinities become null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: without_non_finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_non_finite(item) for item in value]
    return value
