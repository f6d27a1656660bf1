"""Where and how the driver writes.

- Every file is written whole or not at all (`replacing`, `write_text`): to a temporary file in its
  own folder, renamed over the old one; a full disk is said in one line (WriteError).
- Every file name built from a results file's values goes through `path_in`, which cleans the values
  (`safe_name`) and checks that the path stays in its folder: a name such as '../../x' cannot lead
  out of it.
- Every command's output folder is checked before anything is written (`check_out_dir`): a folder or
  nothing yet, writable, and not in the source tree outside results/."""
import contextlib
import errno
import os
import re
import tempfile

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS_DIR = os.path.join(SOURCE_DIR, "results")  # the one place in the source tree outputs may go


class WriteError(Exception):
    """A file that could not be written (a full disk, an I/O error); the message names it."""


def write_error(error, path):
    """The WriteError of an OSError met writing path."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return WriteError(f"disk full writing {path} ({error.strerror or os.strerror(error.errno)})")
    return WriteError(f"cannot write {path}: {error.strerror or error}")


# --- writing a file whole ---------------------------------------------------------------------
def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def replacing(path, binary=False):
    """A stream for path's new content: a temporary file beside it, renamed over path when the block
    ends, removed when it fails, so that path is its old self or whole, never cut off. An OSError
    (a full disk) becomes a WriteError naming path."""
    directory, name = os.path.split(os.path.abspath(path))
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise write_error(error, path) from None
    try:
        os.fchmod(handle, 0o666 & ~_umask())  # mkstemp's 0600 would make the file alone unreadable to others
        with open(handle, "wb" if binary else "w", encoding=None if binary else "utf-8") as stream:
            yield stream
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise write_error(error, path) from None
        raise


def write_text(path, text):
    with replacing(path) as stream:
        stream.write(text)
    return path


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


# --- the output folder ---------------------------------------------------------------------------
def inside_source_tree(path):
    """Whether path lies in the source tree, outside its results/ folder."""
    def within(folder):
        folder = os.path.realpath(folder)
        return os.path.commonpath([os.path.realpath(path), folder]) == folder
    return within(SOURCE_DIR) and not within(RESULTS_DIR)


def check_out_dir(path, what="--out"):
    """(the output folder's absolute path, whether this call made it): the one check of every command's
    output folder, before anything is written; a UsageError (exit status 2) where it cannot hold the
    outputs. `what` names the folder in the message (the flag that gave it)."""
    from gpubench_driver.options import UsageError  # options reads the registry, which reads the plots, which read this
    out_dir = os.path.abspath(path)
    if inside_source_tree(out_dir):
        raise UsageError(f"{what}: {out_dir} is inside the source tree: runs and reports go under results/ "
                         f"({RESULTS_DIR}) or outside the source tree")
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"{what}: {out_dir} exists and is not a folder")
    made = False
    try:
        os.makedirs(os.path.dirname(out_dir), exist_ok=True)
        if not os.path.isdir(out_dir):
            os.mkdir(out_dir)
            made = True
    except OSError as error:
        reason = ("a folder on its path is a file" if isinstance(error, (FileExistsError, NotADirectoryError))
                  else error.strerror)
        raise UsageError(f"{what}: cannot create {out_dir}: {reason}") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise UsageError(f"{what}: cannot write to {out_dir}: permission denied")
    return out_dir, made
