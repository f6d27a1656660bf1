"""Where and how the driver writes.

- Every file name built from a results file's values goes through `path_in`, which cleans the values
  (`safe_name`) and checks that the path stays in its folder: a name such as '../../x' cannot lead
  out of it."""
import errno
import os
import re


class WriteError(Exception):
    """A file that could not be written (a full disk, an I/O error); the message names it."""


def write_error(error, path):
    """The WriteError of an OSError met writing path."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return WriteError(f"disk full writing {path} ({error.strerror or os.strerror(error.errno)})")
    return WriteError(f"cannot write {path}: {error.strerror or error}")


# --- file names from the data --------------------------------------------------------------------
def safe_name(value):
    """A part of a file name from a results file's value: its letters and digits, each other run of
    characters one '_' (no '/', no '..')."""
    return re.sub(r"[^0-9A-Za-z]+", "_", str(value)).strip("_")


def path_in(folder, *parts, suffix=""):
    """folder/<the parts cleaned and joined by '_'><suffix>, checked to lie in folder."""
    name = "_".join(part for part in map(safe_name, parts) if part) + suffix
    path = os.path.join(folder, name)
    if name in ("", ".", "..") or os.path.dirname(os.path.normpath(path)) != os.path.normpath(folder):
        raise ValueError(f"{name!r} is no file name in {folder}")
    return path


def subfolder(folder, name):
    """folder/name, made if missing; a WriteError where it is a link leading out of folder."""
    path = os.path.join(folder, name)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise write_error(error, path) from None
    if os.path.realpath(path) != os.path.join(os.path.realpath(folder), name):
        raise WriteError(f"cannot write {path}: it leads out of {folder}")
    return path
