"""Configure and build the C++/CUDA side with CMake."""
import os
import shlex
import shutil
import subprocess
import sys

FALLBACK_NVCC = "/usr/local/cuda/bin/nvcc"


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


def build_command(build_dir):
    return ["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 1)]


def configure_and_build(source_dir, build_dir, python=sys.executable, extra_args=()):
    if shutil.which("cmake") is None:
        raise BuildError("cmake is not on PATH (run 'scripts/gpubench run' without --no-setup to install it)")
    for command in (configure_command(source_dir, build_dir, python, extra_args), build_command(build_dir)):
        print("+ " + " ".join(command), flush=True)
        returncode = subprocess.call(command)
        if returncode != 0:
            raise BuildError(f"'{' '.join(command[:2])}' failed with exit status {returncode}")


def binary_path(build_dir, name):
    return os.path.join(build_dir, "bench", name)
