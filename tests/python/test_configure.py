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
from gpubench_driver import build, cli

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
        self.assertEqual(cli.resolve_run_options(args).cmake_args, ["-DX=1", "-DY=2"])
        self.assertEqual(cli.parse(["build", "--cmake-arg", "-DZ=3"]).cmake_arg, ["-DZ=3"])


if __name__ == "__main__":
    unittest.main()
