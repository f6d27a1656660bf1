"""Shared set-up of the driver's tests: import path, fixtures, entry factory, a precision-study document."""
import json
import os
import stat
import subprocess
import sys

SOURCE_DIR = os.environ.get("GPUBENCH_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
SCRIPTS_DIR = os.path.join(SOURCE_DIR, "scripts")
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
if SCRIPTS_DIR not in sys.path:
    sys.path.insert(0, SCRIPTS_DIR)


ENTRY = os.path.join(SOURCE_DIR, "scripts", "gpubench")


def fixture(name):
    return os.path.join(FIXTURES, name)


def gpubench_run(*args, build_dir, env=None, **kwargs):
    """scripts/gpubench run without set-up or build, with this Python as the driver's."""
    command = ["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", build_dir, *args]
    environment = dict(os.environ if env is None else env, GPUBENCH_PYTHON=sys.executable)
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment, **kwargs)


def write_executable(path, text):
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def make_entry(impl, device, mode, n, median_s, status="ok"):
    """A minimal ok entry as the driver writes it, for derivation tests."""
    from gpubench_driver import gbench, stats
    entry = gbench.blank_entry(f"matmul/{impl}/{device}/{mode}/fp32/n:{n}")
    entry.update(status=status, repetitions=1, iterations=1)
    if status == "ok":
        entry["time_s"] = stats.summarize([median_s])
        entry["flop"] = 2.0 * n ** 3
        entry["flop_per_s"] = entry["flop"] / median_s
    return entry


def precision_document(references=None):
    """A results document holding the precision study of the hand-written fixtures
    (precision_describe.json, gbench_precision.json), with its findings derived."""
    from gpubench_driver import gbench, report, results
    with open(fixture("precision_describe.json"), encoding="utf-8") as stream:
        description = json.load(stream)
    document = results.new_document({"id": "fixture", "started": "2026-11-22T23:00:00+00:00", "finished": None,
                                     "status": "complete", "command_line": [], "options": {}})
    document["gpu"] = {"available": True, "reason": None}
    document["references"] = references
    study = results.new_study(description, [4096, 8192])
    study["entries"] = gbench.entries_from_output(gbench.load_file(fixture("gbench_precision.json")))
    document["studies"]["precision"] = study
    report.derive_findings(document, 0)
    return document
