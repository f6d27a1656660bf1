"""What the run records about the machine, and the OpenBLAS generic-kernel warning."""
import os
import subprocess
import tempfile
import unittest
from unittest import mock

import support

from gpubench_driver.lib import environment

AVX512 = {"avx2": True, "avx512f": True}
CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse2 avx avx2 avx512f

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse2 avx avx2 avx512f

processor\t: 2
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu sse2 avx avx2 avx512f
"""


class OpenblasWarningTest(unittest.TestCase):
    def test_prescott_on_an_avx512_cpu_warns(self):
        warning = environment.openblas_core_warning("Prescott", AVX512)
        self.assertIn("Prescott", warning)
        self.assertIn("avx512f/avx2", warning)

    def test_vector_kernels_do_not_warn(self):
        for core in ("Haswell", "SkylakeX", "Cooperlake", "SapphireRapids", "Zen"):
            self.assertIsNone(environment.openblas_core_warning(core, AVX512), core)

    def test_generic_kernel_on_an_old_cpu_does_not_warn(self):
        self.assertIsNone(environment.openblas_core_warning("Prescott", {"avx2": False, "avx512f": False}))

    def test_unknown_core_does_not_warn(self):
        self.assertIsNone(environment.openblas_core_warning(None, AVX512))

    def test_openblas_info_from_the_config_string(self):
        info = environment.openblas_info({"openblas": {"config": "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell",
                                                       "core": "Haswell", "threads": 16}})
        self.assertEqual((info["version"], info["core"], info["threads"]), ("0.3.21", "Haswell", 16))


def affinity(**fields):
    recorded = {"process_cpus": 4, "initial_thread_cpus": 1, "omp_proc_bind": "close", "omp_places": "cores",
                "openmp_proc_bind": "close", "openmp_places": 4, "openmp_thread_cpus": [1, 1, 1, 1]}
    return {"affinity": {**recorded, **fields}}


class AffinityWarningTest(unittest.TestCase):
    def test_pinned_threads_do_not_warn(self):
        self.assertIsNone(environment.affinity_warning(affinity()))

    def test_binding_off_in_openmp_warns(self):
        warning = environment.affinity_warning(affinity(openmp_proc_bind="false", openmp_places=0))
        self.assertIn("could not be pinned", warning)
        self.assertIn("OMP_PROC_BIND=close", warning)

    def test_a_thread_free_on_every_cpu_warns(self):
        warning = environment.affinity_warning(affinity(openmp_thread_cpus=[1, 4, 1, 1]))
        self.assertIn("all 4 CPUs", warning)

    def test_no_binding_asked_for_does_not_warn(self):
        unpinned = {"omp_proc_bind": None, "openmp_proc_bind": "false", "openmp_thread_cpus": [4, 4, 4, 4]}
        self.assertIsNone(environment.affinity_warning(affinity(**unpinned)))
        self.assertIsNone(environment.affinity_warning(affinity(**{**unpinned, "omp_proc_bind": "false"})))

    def test_a_run_without_the_record_does_not_warn(self):
        self.assertIsNone(environment.affinity_warning({}))
        self.assertIsNone(environment.affinity_warning(None))


class MachineTest(unittest.TestCase):
    def test_cpuinfo_counts_sockets_cores_threads(self):
        cpu = environment.parse_cpuinfo(CPUINFO)
        self.assertEqual((cpu["sockets"], cpu["cores"], cpu["threads"]), (1, 2, 3))
        self.assertEqual(cpu["flags"], AVX512)
        self.assertEqual(cpu["model"], "Intel(R) Xeon(R) Platinum 8480+")

    def test_nvidia_smi_values(self):
        line = ("NVIDIA H100 80GB HBM3, GPU-1, 00000000:00:06.0, 81559, 1980, 2619, 345, 500.00, 700.00, 5, 5, 16, 16, "
                "Enabled, 0, 580.95, [N/A]")
        [gpu] = environment.parse_nvidia_smi(line)
        self.assertEqual(gpu["memory.total"], 81559)
        self.assertEqual(gpu["power.limit"], 500.0)
        self.assertEqual(gpu["power.default_limit"], 700.0)
        self.assertEqual(gpu["pcie.link.width.current"], 16)
        self.assertEqual(gpu["ecc.mode.current"], "Enabled")
        self.assertEqual(gpu["ecc.errors.uncorrected.volatile.total"], 0)
        self.assertEqual(gpu["driver_version"], "580.95")
        self.assertIsNone(gpu["temperature.gpu"])

    def test_short_nvidia_smi_lines_are_ignored(self):
        self.assertEqual(environment.parse_nvidia_smi("No devices were found"), [])

    def test_other_processes_on_the_gpu_are_named(self):
        processes = environment.parse_gpu_processes("1234, python3, 10240\n77, /usr/bin/miner, [N/A]\n"
                                                    "No running processes found\n")
        self.assertEqual(processes, [{"pid": 1234, "name": "python3", "used_memory_mib": 10240},
                                     {"pid": 77, "name": "/usr/bin/miner", "used_memory_mib": None}])
        warning = environment.gpu_processes_warning(processes, "when the run started")
        self.assertTrue(warning.startswith("2 other process(es) on the GPU when the run started: "
                                           "1234 python3 (10240 MiB), 77 /usr/bin/miner;"), warning)
        self.assertIsNone(environment.gpu_processes_warning([], "after study matmul"))

    def test_small_parsers(self):
        self.assertEqual(environment.transparent_hugepages("always [madvise] never"), "madvise")
        self.assertEqual(environment.memory_total_bytes("MemTotal:  1024 kB\n"), 1024 * 1024)
        self.assertEqual(environment.os_name('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"'),
                         "Debian GNU/Linux 12 (bookworm)")


class GitTest(unittest.TestCase):
    def test_given_revision_wins_over_the_checkout(self):
        with mock.patch.dict(os.environ, {"GPUBENCH_GIT_REVISION": "abc123"}):
            for directory in ("/", support.SOURCE_DIR):
                git = environment.capture_git(directory)
                self.assertEqual((git["revision"], git["source"]), ("abc123", "GPUBENCH_GIT_REVISION"))

    def test_results_do_not_make_the_tree_dirty(self):
        with tempfile.TemporaryDirectory() as directory, mock.patch.dict(os.environ, {"GPUBENCH_GIT_REVISION": ""}):
            def git(*args):
                subprocess.run(["git", "-C", directory, *args], check=True, capture_output=True)
            git("init", "-q")
            with open(os.path.join(directory, "source.cpp"), "w") as stream:
                stream.write("int main() {}\n")
            git("add", "source.cpp")
            git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "source")
            os.makedirs(os.path.join(directory, "results", "20261124-000000"))
            with open(os.path.join(directory, "results", "20261124-000000", "results.json"), "w") as stream:
                stream.write("{}")
            self.assertFalse(environment.capture_git(directory)["dirty"])
            with open(os.path.join(directory, "source.cpp"), "a") as stream:
                stream.write("// changed\n")
            self.assertTrue(environment.capture_git(directory)["dirty"])

    def test_no_revision_at_all(self):
        with mock.patch.dict(os.environ, {"GPUBENCH_GIT_REVISION": ""}):
            self.assertIsNone(environment.capture_git("/")["revision"])


if __name__ == "__main__":
    unittest.main()
