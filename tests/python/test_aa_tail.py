"""scripts/aa_tail.py on a synthetic A/A digest with known answers: which entries it keeps, their order, and
which moved as a whole run."""
import gzip
import json
import os
import tempfile
import unittest

import support  # noqa: F401  (puts scripts/ on the path)
import aa_tail


def entry(name, trials, protocol="throughput"):
    return {"name": name, "status": "ok", "protocol": protocol, "median_s": sorted(trials)[len(trials) // 2],
            "trials": [{"trial": i + 1, "status": "ok", "median_s": t} for i, t in enumerate(trials)]}


class TailTest(unittest.TestCase):
    def test_the_farthest_first_and_a_whole_run_shift_told_apart(self):
        first = [entry("steady", [1.00e-3, 1.01e-3, 0.99e-3]), entry("noisy", [1.0e-3, 1.5e-3, 0.8e-3]),
                 entry("shifted", [1.00e-3, 1.01e-3, 1.02e-3]), entry("short", [1e-5, 1e-5, 1e-5]),
                 entry("host", [1e-3, 1e-3, 1e-3], protocol="latency")]
        second = [entry("steady", [1.00e-3, 1.00e-3, 1.01e-3]), entry("noisy", [1.3e-3, 0.9e-3, 1.6e-3]),
                  entry("shifted", [1.10e-3, 1.11e-3, 1.12e-3]), entry("short", [2e-5, 2e-5, 2e-5]),
                  entry("host", [2e-3, 2e-3, 2e-3], protocol="latency")]
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "pair.json.gz")
            with gzip.open(path, "wt", encoding="utf-8") as stream:
                json.dump({"runs": [{"entries": first}, {"entries": second}]}, stream)
            rows = aa_tail.rows_of(path)
        self.assertEqual([row["name"] for row in rows], ["noisy", "shifted", "steady"])  # short, latency left out
        self.assertAlmostEqual(rows[0]["ratio"], 1.3)
        self.assertEqual([row["whole_run"] for row in rows], [False, True, False])


if __name__ == "__main__":
    unittest.main()
