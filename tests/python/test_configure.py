"""Configure on a machine whose optional packages are half installed: an Open MPI wrapper compiler whose
headers are missing (Debian's openmpi-bin without libopenmpi-dev) is left out with one line saying why,
and configure succeeds (CMakeLists.txt, cmake/GpubenchOptional.cmake). Options reach CMake through
GPUBENCH_CMAKE_ARGS and --cmake-arg (build.py)."""
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

import support  # noqa: F401  (import path)
from gpubench_driver.stages import build
from gpubench_driver.commands import cli, run as run_command

# An Open MPI wrapper as openmpi-bin leaves it without libopenmpi-dev: it names an include folder that
# does not exist and a library that does (here an empty stand-in), which made FindMPI stop the configure.
FAKE_MPICXX = """#!/bin/sh
here={here}
case "$1" in
  -showme:compile|--showme:compile) echo "-I$here/missing/include" ;;
  -showme:link|--showme:link) echo "-L$here/lib -lmpi" ;;
  -showme:incdirs|--showme:incdirs) echo "$here/missing/include" ;;
  -showme:libdirs|--showme:libdirs) echo "$here/lib" ;;
  -showme:libs|--showme:libs) echo "mpi" ;;
  -showme:version|--showme:version) echo "mpicxx: Open MPI 4.1.4 (Language: C++)" ;;
  -show|-showme) echo "g++ -I$here/missing/include -L$here/lib -lmpi" ;;
  *) exec g++ "-I$here/missing/include" "-L$here/lib" -lmpi "$@" ;;
esac
"""
FAKE_MPIEXEC = "#!/bin/sh\necho 'mpiexec (OpenRTE) 4.1.4'\n"


@unittest.skipUnless(shutil.which("cmake") and shutil.which("g++"), "cmake or g++ missing")
class HalfInstalledMpiTest(unittest.TestCase):
    def test_configure_leaves_a_broken_mpi_out_and_succeeds(self):
        with tempfile.TemporaryDirectory() as here:
            os.makedirs(os.path.join(here, "lib"))
            stub = os.path.join(here, "mpi.cpp")
            with open(stub, "w", encoding="utf-8") as stream:
                stream.write("int MPI_Init(int*, char***) { return 0; }\nint MPI_Finalize() { return 0; }\n")
            subprocess.run(["g++", "-shared", "-fPIC", "-o", os.path.join(here, "lib", "libmpi.so"), stub],
                           check=True, timeout=120)
            for name, text in (("mpicxx", FAKE_MPICXX.format(here=here)), ("mpiexec", FAKE_MPIEXEC)):
                support.write_executable(os.path.join(here, name), text)
            # CUDA and the tests off: what is tried is the configure of the optional packages, in seconds.
            command = ["cmake", "-S", support.SOURCE_DIR, "-B", os.path.join(here, "build"),
                       "-DGPUBENCH_ENABLE_CUDA=OFF", "-DGPUBENCH_BUILD_TESTS=OFF",
                       f"-DMPI_CXX_COMPILER={here}/mpicxx", f"-DMPIEXEC_EXECUTABLE={here}/mpiexec"]
            environment = dict(os.environ, PATH=f"{here}:{os.environ.get('PATH', '')}")
            configured = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)
        output = configured.stdout + configured.stderr
        self.assertEqual(configured.returncode, 0, output[-4000:])
        self.assertNotIn("CMake Error", output)
        line = next(line for line in output.splitlines() if "gpubench MPI:" in line)
        self.assertIn("not used (an MPI was found but a program using it does not build", line)
        self.assertIn("libopenmpi-dev", line)


def compile_library(path, source):
    subprocess.run(["g++", "-shared", "-fPIC", "-x", "c++", "-o", path, "-"], input=source, text=True, check=True,
                   timeout=120)


CUDA_COMPILER = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK)
                                         else None)


@unittest.skipUnless(shutil.which("cmake") and shutil.which("g++") and CUDA_COMPILER,
                     "cmake, g++ or nvcc missing (cuDNN and NCCL are looked for only beside CUDA)")
class LinkCheckTest(unittest.TestCase):
    """A package whose header and library build a program is used; one whose library lacks what the header
    declares (a cuDNN whose libcudnn.so is some other library) is left out, saying why."""

    def test_a_working_nccl_is_used_and_a_broken_cudnn_is_left_out(self):
        with tempfile.TemporaryDirectory() as here:
            nccl, cudnn = os.path.join(here, "nccl"), os.path.join(here, "cudnn")
            for root in (nccl, cudnn):
                os.makedirs(os.path.join(root, "include"))
                os.makedirs(os.path.join(root, "lib"))
            with open(os.path.join(nccl, "include", "nccl.h"), "w", encoding="utf-8") as stream:
                stream.write("#define NCCL_MAJOR 2\n#define NCCL_MINOR 99\n#define NCCL_PATCH 7\n"
                             "typedef enum { ncclSuccess = 0 } ncclResult_t;\n"
                             'extern "C" ncclResult_t ncclGetVersion(int* version);\n')
            compile_library(os.path.join(nccl, "lib", "libnccl.so"),
                            'typedef enum { ncclSuccess = 0 } ncclResult_t;\n'
                            'extern "C" ncclResult_t ncclGetVersion(int* v) { *v = 29907; return ncclSuccess; }\n')
            with open(os.path.join(cudnn, "include", "cudnn.h"), "w", encoding="utf-8") as stream:
                stream.write('#include "cudnn_version.h"\nextern "C" unsigned long cudnnGetVersion();\n')
            with open(os.path.join(cudnn, "include", "cudnn_version.h"), "w", encoding="utf-8") as stream:
                stream.write("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 99\n#define CUDNN_PATCHLEVEL 0\n")
            compile_library(os.path.join(cudnn, "lib", "libcudnn.so"), 'extern "C" int unrelated() { return 1; }\n')
            command = ["cmake", "-S", support.SOURCE_DIR, "-B", os.path.join(here, "build"),
                       "-DGPUBENCH_BUILD_TESTS=OFF", "-DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON",
                       f"-DCMAKE_CUDA_COMPILER={CUDA_COMPILER}", "-DCMAKE_CUDA_ARCHITECTURES=90"]
            environment = dict(os.environ, NCCL_ROOT=nccl, CUDNN_ROOT=cudnn)
            configured = subprocess.run(command, capture_output=True, text=True, timeout=900, env=environment)
        output = configured.stdout + configured.stderr
        self.assertEqual(configured.returncode, 0, output[-4000:])
        lines = {name: next(line for line in output.splitlines() if f"gpubench {name}:" in line)
                 for name in ("NCCL", "cuDNN")}
        self.assertIn("gpubench NCCL: 2.99.7", lines["NCCL"])
        self.assertIn("not used (cuDNN 9.99.0 found but a program using it does not build", lines["cuDNN"])


class CMakeArgsTest(unittest.TestCase):
    def test_environment_then_flags_after_gpubench_own_options(self):
        with mock.patch.dict(os.environ, {"GPUBENCH_CMAKE_ARGS": "-DA=1 '-DB=two words'"}):
            command = build.configure_command("src", "bld", "py", ["-DC=3"])
        self.assertEqual(command[-3:], ["-DA=1", "-DB=two words", "-DC=3"])
        self.assertEqual(command[:4], ["cmake", "-S", "src", "-B"])

    def test_a_badly_quoted_environment_is_a_build_error(self):
        with mock.patch.dict(os.environ, {"GPUBENCH_CMAKE_ARGS": "-DA='1"}):
            with self.assertRaisesRegex(build.BuildError, "GPUBENCH_CMAKE_ARGS"):
                build.configure_command("src", "bld", "py")

    def test_run_and_build_take_cmake_arg(self):
        args = cli.parse(["run", "--cmake-arg", "-DX=1", "--cmake-arg=-DY=2"])
        self.assertEqual(run_command.resolve_run_options(args).cmake_args, ["-DX=1", "-DY=2"])
        self.assertEqual(cli.parse(["build", "--cmake-arg", "-DZ=3"]).cmake_arg, ["-DZ=3"])


if __name__ == "__main__":
    unittest.main()
