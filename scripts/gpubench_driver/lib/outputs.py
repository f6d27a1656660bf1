"""Where and how the driver writes: every file whole or not at all (`replacing`), every name from a results
file's values kept in its folder (`path_in`), every output folder checked before the first write
(`check_out_dir`), and a run's folder locked (an flock, gone with the process) from its first file to its end."""
import contextlib
import errno
import fcntl
import gzip
import os
import re
import tempfile
import zlib
from dataclasses import dataclass
from typing import Optional

# scripts/gpubench_driver/lib/outputs.py: the repository, and scripts/ (the driver, its data files, the references)
SCRIPTS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE_DIR = os.path.dirname(SCRIPTS_DIR)
RESULTS_DIR = os.path.join(SOURCE_DIR, "results")  # the one place in the source tree outputs may go
# What reading a file named by a user can raise: a missing or unreadable file, not text, and for gzip a damaged
# (OSError, zlib.error) or cut (EOFError) stream.
READ_ERRORS = (OSError, UnicodeDecodeError, EOFError, zlib.error)
RUN_LOCK = ".gpubench-run.lock"  # in a run's folder: locked by its driver while it lives
SCRATCH = ".scratch"  # in a run's folder: its benchmark processes' scratch folders, so none is left elsewhere


class OutputFolderError(Exception):
    """An output folder that cannot take a command's outputs (a usage error: exit status 2)."""


class WriteError(Exception):
    """A file that could not be written (a full disk, an I/O error); the message names it."""


def open_text(path):
    """A file as text, gunzipped where its name ends in .gz (results and check files are kept compressed)."""
    return gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else open(path, encoding="utf-8")


def write_error(error, path):
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
    """A stream for path's new content: a temporary file beside it, renamed over path when the block ends,
    removed when it fails; an OSError (a full disk) becomes a WriteError naming path."""
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
    """A part of a file name from a results file's value: its letters and digits, each other run one '_'."""
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
    """(the output folder's absolute path, whether this call made it), checked before anything is written; an
    OutputFolderError where it cannot hold the outputs (`what`: the flag that named it)."""
    out_dir = os.path.abspath(path)
    if inside_source_tree(out_dir):
        raise OutputFolderError(f"{what}: {out_dir} is inside the source tree: runs and reports go under results/ "
                         f"({RESULTS_DIR}) or outside the source tree")
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise OutputFolderError(f"{what}: {out_dir} exists and is not a folder")
    made = False
    try:
        os.makedirs(os.path.dirname(out_dir), exist_ok=True)
        if not os.path.isdir(out_dir):
            os.mkdir(out_dir)
            made = True
    except OSError as error:
        reason = ("a folder on its path is a file" if isinstance(error, (FileExistsError, NotADirectoryError))
                  else error.strerror)
        raise OutputFolderError(f"{what}: cannot create {out_dir}: {reason}") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise OutputFolderError(f"{what}: cannot write to {out_dir}: permission denied")
    return out_dir, made


# --- the run's lock ------------------------------------------------------------------------------
@dataclass
class RunFolder:
    """A run's output folder and the lock its driver holds on it for the whole run."""
    path: str
    handle: Optional[int]  # None once released
    made: bool  # this run made the folder: it may remove it again, empty

    def release(self, remove_if_empty=False):
        """Give up the lock, first removing the lock file, the emptied scratch folder and (remove_if_empty) a
        folder this run made that is left empty, while the lock still keeps other runs out."""
        if self.handle is None:
            return
        for remove, name in ((os.unlink, RUN_LOCK), (os.rmdir, SCRATCH)):
            with contextlib.suppress(OSError):
                remove(os.path.join(self.path, name))
        if remove_if_empty and self.made:
            with contextlib.suppress(OSError):
                os.rmdir(self.path)  # only if empty
        os.close(self.handle)
        self.handle = None


def lock_run_folder(out_dir, made, what="--out"):
    """The RunFolder of out_dir, locked; an OutputFolderError where another run holds it."""
    path = os.path.join(out_dir, RUN_LOCK)
    try:
        handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as error:
        raise OutputFolderError(f"{what}: cannot write to {out_dir}: {error.strerror}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(handle, 32, 0).decode("ascii", "replace").strip()
        os.close(handle)
        process = f" (process {holder})" if holder.isdigit() else ""
        raise OutputFolderError(f"{what}: {out_dir} is in use by another gpubench run{process}: "
                         f"choose another {what} or --run-id") from None
    # A run removes its lock file (and an empty folder it made) before it gives the lock up: a lock
    # taken on the file it removed would keep nothing out.
    if not os.path.exists(path) or not os.path.samestat(os.fstat(handle), os.stat(path)):
        os.close(handle)
        raise OutputFolderError(f"{what}: another gpubench run was ending in {out_dir} as this one started: run again")
    with contextlib.suppress(OSError):  # who holds it, for the message of a run refused (a full disk: unsaid)
        os.ftruncate(handle, 0)
        os.pwrite(handle, f"{os.getpid()}\n".encode("ascii"), 0)
    return RunFolder(out_dir, handle, made)


def run_in_progress(folder):
    """Whether a live driver holds the lock of the run in folder (no lock file: none does)."""
    try:
        handle = os.open(os.path.join(folder, RUN_LOCK), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(handle)
