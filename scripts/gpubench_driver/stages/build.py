"""Configure and build the C++/CUDA side with CMake."""
import contextlib
import fcntl
import os
import shlex
import shutil
import subprocess
import sys

FALLBACK_NVCC = "/usr/local/cuda/bin/nvcc"
BUILD_LOCK = ".gpubench-build.lock"  # in the build folder: held while a gpubench configures and builds there


class BuildError(Exception):
    pass


CMAKE_ARGS_VARIABLE = "GPUBENCH_CMAKE_ARGS"


def cmake_args(given=()):
    """Options for CMake's configure: GPUBENCH_CMAKE_ARGS (split as a shell would) and then each --cmake-arg,
    e.g. -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON to leave an optional package out."""
    try:
        from_environment = shlex.split(os.environ.get(CMAKE_ARGS_VARIABLE, ""))
    except ValueError as error:
        raise BuildError(f"{CMAKE_ARGS_VARIABLE}: {error}") from None
    return [*from_environment, *given]


def configure_command(source_dir, build_dir, python, extra_args=()):
    command = ["cmake", "-S", source_dir, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
               f"-DGPUBENCH_PYTHON={python}"]
    # Ninja where there is one (some machines have it but no make); a configured build
    # directory keeps the generator it was made with.
    if shutil.which("ninja") and not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        command += ["-G", "Ninja"]
    # A CUDA toolkit outside PATH is common (the .deb/.run installers put it in /usr/local/cuda).
    if shutil.which("nvcc") is None and os.access(FALLBACK_NVCC, os.X_OK):
        command.append(f"-DCMAKE_CUDA_COMPILER={FALLBACK_NVCC}")
    return command + cmake_args(extra_args)  # last, so that the user's options win


@contextlib.contextmanager
def build_folder_lock(build_dir):
    """Held while configuring and building: two at once in one build folder break each other (CMake's
    reconfigure fails), so a second waits for the first to finish, saying so once."""
    try:
        os.makedirs(build_dir, exist_ok=True)
        handle = os.open(os.path.join(build_dir, BUILD_LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as error:
        raise BuildError(f"cannot use the build folder {build_dir}: {error.strerror}") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another gpubench build in {build_dir} to finish", flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def configure_and_build(source_dir, build_dir, python=sys.executable, extra_args=()):
    if shutil.which("cmake") is None:
        raise BuildError("cmake is not on PATH (run 'scripts/gpubench run' without --no-setup to install it)")
    with build_folder_lock(build_dir):
        for command in (configure_command(source_dir, build_dir, python, extra_args),
                        ["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 1)]):
            print("+ " + " ".join(command), flush=True)
            returncode = subprocess.call(command)
            if returncode != 0:
                raise BuildError(f"'{' '.join(command[:2])}' failed with exit status {returncode}")


def binary_path(build_dir, name):
    return os.path.join(build_dir, "bench", name)
