"""Shared set-up of the driver's tests: import path, fixtures, entry factory, documents of the fixture studies."""
import json
import os
import stat
import statistics
import subprocess
import sys

SOURCE_DIR = os.environ.get("GPUBENCH_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
SCRIPTS_DIR = os.path.join(SOURCE_DIR, "scripts")
TESTS_DIR = os.path.dirname(os.path.abspath(__file__))  # stand-in study binaries import this module from it
FIXTURES = os.path.join(TESTS_DIR, "fixtures")
if SCRIPTS_DIR not in sys.path:
    sys.path.insert(0, SCRIPTS_DIR)


ENTRY = os.path.join(SOURCE_DIR, "scripts", "gpubench")


def fixture(name):
    return os.path.join(FIXTURES, name)


def gpubench_run(*args, build_dir, env=None, **kwargs):
    """scripts/gpubench run without set-up or build, with this Python as the driver's; one trial unless
    the test asks for more (the tests count entries and progress lines of one pass)."""
    trials = [] if "--trials" in args else ["--trials", "1"]
    command = ["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", build_dir, *trials, *args]
    environment = dict(os.environ if env is None else env, GPUBENCH_PYTHON=sys.executable)
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment, **kwargs)


def built_with_mpi(binary):
    """Whether the binary links Open MPI (configure found a working MPI): its ranks then meet over MPI under mpirun."""
    linked = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=60)
    return "libmpi" in linked.stdout


def write_text(folder, name, text):
    """folder/name holding text (UTF-8); its path."""
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(text)
    return path


def write_executable(path, text):
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def run_options(**changes):
    """The run options of a plain 'gpubench run' (no flags), with changes."""
    import dataclasses
    from gpubench_driver.stages import options
    plain = options.RunOptions(studies=None, sizes=None, batches=None, impls=None, modes=None, caps={},
                               cpu_only=False, out=None, run_id="x", refine_rounds=3, build_dir="build", build=False,
                               reference=False, quick=False)
    return dataclasses.replace(plain, **changes)


def measurement(samples_s, protocol="cpu", **fields):
    """A measurement as the study binaries write it to --measurements-out (bench/harness/timed_loop.hpp),
    its headline the samples given; fields (latency, cold_l2, energy, busy_clock_mhz...) are set as given."""
    record = {"protocol": protocol, "warmup": {"burst_call_s": samples_s[0], "settled": True},
              "headline": {"samples_s": list(samples_s), "median_s": statistics.median(samples_s), "noise": 0.01,
                           "stop": "plateau", "converged": True},
              "latency": None, "cold_l2": None, "energy": None, "busy_clock_mhz": None}
    record.update(fields)
    return record


_TIME_SUFFIXES = ("real_time", "manual_time", "process_time")
_SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def measurements_path(args):
    """The file a study binary's --measurements-out=F names; None without the flag."""
    return next((arg.split("=", 1)[1] for arg in args if arg.startswith("--measurements-out=")), None)


def write_measurements(args, runs):
    """What a stand-in study binary appends to its --measurements-out file for Google Benchmark run
    objects: one line per entry that ran, its samples the times of the entry's iteration runs."""
    path = measurements_path(args)
    if path is None:
        return
    samples = {}
    for run in runs:
        if run.get("run_type") != "iteration" or run.get("error_occurred") or run.get("skipped"):
            continue
        prefix, _, last = run["run_name"].rpartition("/")
        name = prefix if last in _TIME_SUFFIXES else run["run_name"]
        samples.setdefault(name, []).append(run["real_time"] * _SECONDS_PER_UNIT[run["time_unit"]])
    with open(path, "a", encoding="utf-8") as stream:
        for name, times in samples.items():
            stream.write(json.dumps({"name": name, "measurement": measurement(times)}) + "\n")


# The counters the stand-in binaries declare (a real binary's --describe rules.counters): every counter the
# driver's readers take from some study's entries, so that an entry made here has each (None until set).
COUNTERS = ("flop", "bytes_transferred", "rel_fro_error", "rel_fro_error_normal", "tolerance", "threads", "products",
            "samples", "device_bytes", "workspace_bytes", "algorithm", "engine", "tensor_cores", "engine_held",
            "algorithm_held", "array_bytes", "width", "height", "escape_iterations", "warp_divergence",
            "differing_pixels", "allowed_differing_pixels", "max_count_difference", "elements", "temporary_bytes", "temporary_requests",
            "temporary_device_allocations", "multiprocessors", "busy_multiprocessors", "resident_warps",
            "max_resident_warps", "blocks_per_multiprocessor", "theoretical_occupancy", "registers_per_thread",
            "shared_bytes_per_block", "kernels", "host_launches", "host_synchronizations", "kernel_busy_s",
            "chain_span_s", "timer_step_s", "link_peak_bytes_per_s", "peer_access", "message_bytes", "ranks",
            "bus_factor", "threads_per_block", "grid_blocks", "memory_read_bytes", "memory_written_bytes", "h2d_bytes",
            "d2h_bytes")


def axis_fields(name):
    """The axis fields of an entry named by the naming contract, under its study's axis names (what its
    binary's --describe would give: the driver takes them from there, never from the name)."""
    from gpubench_driver import studies
    from gpubench_driver.lib import migrate
    return migrate.axis_fields_of_name(name, studies.axis_names(name.split("/")[0]))


def blank_entry(name):
    """gbench.blank_entry of an entry named by the naming contract, its axes those of its name, every one of
    COUNTERS present."""
    from gpubench_driver.lib import gbench
    return gbench.blank_entry(name, axis_fields(name), COUNTERS)


def plan_of(output):
    """{name: axis fields} of every entry of a Google Benchmark output, as its binary's --describe plans them."""
    from gpubench_driver.lib import gbench
    return {gbench.entry_key(run.get("run_name") or run["name"]): axis_fields(gbench.entry_key(
        run.get("run_name") or run["name"])) for run in output.benchmarks}


def entries_of(output):
    """gbench.entries_from_output of a Google Benchmark output, each entry planned by its name, every one of
    COUNTERS present."""
    from gpubench_driver.lib import gbench
    return gbench.entries_from_output(output, plan_of(output), COUNTERS)


def outcome(result):
    """The progress line's outcome of a console result, its study's record and axes those of its name."""
    from gpubench_driver import studies
    from gpubench_driver.stages import runner
    return runner.progress_outcome(result, studies.BY_NAME.get(result.name.split("/")[0]), axis_fields(result.name))


def described(description, run_names):
    """A stand-in binary's --describe: `description`, with the axes, points, rules and entries a real binary's
    has where it lacks them (axes by its axis_names, every point its default sizes and batches, COUNTERS,
    an entry for each of run_names, Google Benchmark's suffixes aside)."""
    from gpubench_driver import studies
    from gpubench_driver.lib import gbench, migrate
    names = [gbench.entry_key(name) for name in dict.fromkeys(run_names)]
    study = description.get("study") or (names[0].split("/")[0] if names else "matmul")
    slots = {**studies.axis_names(study, description), "device": "device"}
    if description.get("default_batches") is None:
        slots["batch"] = None
    axes = [{"name": slots[slot], "slot": slot, "unit": None, "values": None}
            for slot in gbench.AXES if slots.get(slot)]
    entries = [{"name": name, "axes": migrate.axis_fields_of_name(name, slots)["axes"]} for name in names]
    point = {"sizes": description.get("default_sizes") or [],
             **({"batches": description["default_batches"]} if description.get("default_batches") else {})}
    rules = {"counters": {name: {"unit": None, "rule": "stand-in"} for name in COUNTERS}}
    return {"axes": axes, "points": {"quick": point, "suite": point, "full": point}, "rules": rules, **description,
            "entries": entries}


def make_entry(impl, device, mode, n, median_s, status="ok", batch=None, device_bytes=None):
    """A minimal ok entry as the driver writes it, for derivation tests: a matmul entry, or with
    a batch a batched_gemm one."""
    from gpubench_driver.lib import gbench, stats
    name = (f"matmul/{impl}/{device}/{mode}/fp32/n:{n}" if batch is None
            else f"batched_gemm/{impl}/{device}/{mode}/fp32/n:{n}/batch:{batch}")
    entry = blank_entry(name)
    entry.update(status=status, repetitions=1, iterations=1)
    if status == "ok":
        entry["time_s"] = stats.summarize([median_s])
        entry["flop"] = 2.0 * n ** 3 * (batch or 1)
        entry["flop_per_s"] = entry["flop"] / median_s
        entry["products"] = batch
        entry["device_bytes"] = device_bytes
    return entry


def study_document(name, describe_fixture, gbench_fixture, sizes, batches=None, references=None):
    """A results document holding one study replayed from hand-written fixtures, findings derived."""
    from gpubench_driver.lib import gbench, results
    from gpubench_driver.stages import analyse
    description = load_fixture(describe_fixture)
    document = results.new_document({"id": "fixture", "started": "2026-11-22T23:00:00+00:00", "finished": None,
                                     "status": "complete", "command_line": [], "options": {}})
    document["gpu"] = {"available": True, "reason": None}
    document["references"] = references
    study = results.new_study(description, sizes, batches)
    study["entries"] = entries_of(gbench.load_file(fixture(gbench_fixture)))
    document["studies"][name] = study
    analyse.derive_findings(document, 0)
    return document


def precision_document(references=None):
    """The precision study of precision_describe.json and gbench_precision.json."""
    return study_document("precision", "precision_describe.json", "gbench_precision.json", [4096, 8192],
                          references=references)


def batched_document():
    """The batched GEMM study of batched_gemm_describe.json and gbench_batched_gemm.json."""
    return study_document("batched_gemm", "batched_gemm_describe.json", "gbench_batched_gemm.json", [64, 256],
                          batches=[1, 8, 64, 512, 1024])


def load_fixture(name):
    with open(fixture(name), encoding="utf-8") as stream:
        return json.load(stream)


def reference_run(name):
    """A reference run as the driver records it, from a file holding what the script printed."""
    return {"python": "/usr/bin/python3", **load_fixture(name)}


def mlp_document(references=None):
    """The MLP training study of mlp_training_describe.json and gbench_mlp_training.json (Google
    Benchmark 1.7 style)."""
    return study_document("mlp_training", "mlp_training_describe.json", "gbench_mlp_training.json", [1024],
                          batches=[1, 2, 256, 512, 1024, 8192], references=references)


def conv_document(references=None):
    """The convolution study of conv2d_describe.json and gbench_conv2d.json (Google Benchmark 1.8 style)."""
    return study_document("conv2d", "conv2d_describe.json", "gbench_conv2d.json", [56, 7], batches=[1, 32, 64, 256],
                          references=references)
