"""The primitives study binary end to end on the GPU: every primitive in every GPU library and mode, at
odd sizes, gives verified entries with the counters the report reads; the cached and CUB entries
allocate nothing once their storage is held. Skipped without a usable GPU."""
import json
import os
import subprocess
import tempfile
import unittest

BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
STUDY = os.path.join(BUILD_DIR, "bench", "gpubench_primitives")
SIZES = (1000, 65537)
MODES = ("resident", "transfer_pinned")


def describe():
    return json.loads(subprocess.run([STUDY, "--describe"], check=True, capture_output=True, text=True).stdout)


@unittest.skipUnless(os.access(STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or study binary not built")
class GpuPrimitivesEndToEnd(unittest.TestCase):
    def setUp(self):
        gpu = describe()["gpu"]
        if not gpu["available"]:
            self.skipTest("no GPU: " + gpu["reason"])

    def test_every_gpu_entry_verifies_at_odd_sizes(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            subprocess.run([STUDY, "--sizes=" + ",".join(map(str, SIZES)), "--modes=" + ",".join(MODES),
                            "--benchmark_out_format=json", "--benchmark_out=" + out], check=True, capture_output=True)
            with open(out, encoding="utf-8") as stream:
                entries = json.load(stream)["benchmarks"]
        expected = {(impl["id"], library, mode, n) for impl in describe()["implementations"] if impl["device"] == "gpu"
                    for library in impl["precisions"] for mode in MODES for n in SIZES}
        seen = set()
        for entry in entries:
            name = entry["name"]
            self.assertFalse(entry.get("error_occurred"), name + ": " + entry.get("error_message", ""))
            _, primitive, _, mode, library, size = name.split("/")[:6]
            seen.add((primitive, library, mode, int(size.split(":")[1])))
            self.assertEqual(entry["rel_fro_error"], 0.0, name)
            self.assertEqual(entry["elements"], int(size.split(":")[1]), name)
            self.assertGreater(entry["memory_read_bytes"], 0, name)
            self.assertEqual(entry["bytes_transferred"] > 4, mode == "transfer_pinned", name)
            if library in ("thrust_cached", "cub") and primitive != "transform":
                self.assertGreater(entry["temporary_bytes"], 0, name)
                self.assertEqual(entry["temporary_device_allocations"], 0, name)  # held, not allocated again
        self.assertEqual(seen, expected)


if __name__ == "__main__":
    unittest.main()
