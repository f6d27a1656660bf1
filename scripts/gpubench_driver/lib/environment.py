"""What the run was measured on: machine, software, GPU, git revision."""
import json
import os
import platform
import re
import shutil
import subprocess

# OpenBLAS kernels that use AVX2 or AVX-512: any other on a CPU that has them (an OpenBLAS that does not
# know the CPU) runs SSE-era kernels and understates the CPU badly.
VECTOR_OPENBLAS_CORES = ("haswell", "zen", "skylakex", "cooperlake", "sapphirerapids", "excavator")

NVIDIA_SMI_FIELDS = (
    "name", "uuid", "pci.bus_id", "memory.total", "clocks.max.sm", "clocks.max.memory", "clocks.sm",
    "power.limit", "power.default_limit", "pcie.link.gen.max", "pcie.link.gen.current", "pcie.link.width.max",
    "pcie.link.width.current", "ecc.mode.current", "ecc.errors.uncorrected.volatile.total", "driver_version",
    "temperature.gpu")
_NVIDIA_SMI_TEXT_FIELDS = ("name", "uuid", "pci.bus_id", "ecc.mode.current", "driver_version")
COMMAND_TIMEOUT_S = 60


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _run(command, cwd=None, env=None):
    """stdout of a command, or None when it is missing or fails."""
    try:
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                                timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None


def parse_cpuinfo(text):
    processors = [dict((key.strip(), value.strip()) for key, separator, value in
                       (line.partition(":") for line in block.splitlines()) if separator)
                  for block in text.split("\n\n")]
    processors = [p for p in processors if "processor" in p]
    if not processors:
        return {"model": None, "sockets": None, "cores": None, "threads": None, "flags": {}}
    flags = set(processors[0].get("flags", "").split())
    sockets = {p.get("physical id") for p in processors}
    cores = {(p.get("physical id"), p.get("core id")) for p in processors}
    return {"model": processors[0].get("model name"), "sockets": len(sockets), "cores": len(cores),
            "threads": len(processors), "flags": {"avx2": "avx2" in flags, "avx512f": "avx512f" in flags}}


def memory_total_bytes(meminfo_text):
    found = re.search(r"^MemTotal:\s+([0-9]+)\b", meminfo_text or "", re.MULTILINE)
    return int(found.group(1)) * 1024 if found else None


def os_name(os_release_text):
    values = dict(line.split("=", 1) for line in (os_release_text or "").splitlines() if "=" in line)
    return values.get("PRETTY_NAME", "").strip('"') or None


def transparent_hugepages(text):
    """'always [madvise] never' -> 'madvise'."""
    found = re.search(r"(?:^|\s)\[(\S*)\](?=\s|$)", text or "")
    return found.group(1) if found else None


def capture_machine():
    cpu = parse_cpuinfo(_read("/proc/cpuinfo") or "")
    if cpu["threads"] is None:
        cpu["threads"] = os.cpu_count()
    uname = platform.uname()
    return {"hostname": uname.node, "cpu": cpu, "memory_total_bytes": memory_total_bytes(_read("/proc/meminfo")),
            "os": os_name(_read("/etc/os-release")), "kernel": f"{uname.system} {uname.release} {uname.machine}",
            "transparent_hugepages": transparent_hugepages(_read("/sys/kernel/mm/transparent_hugepage/enabled")),
            "gpus": capture_gpus()}


# --- nvidia-smi ------------------------------------------------------------------
def visible_gpu_selection(environ=os.environ):
    """nvidia-smi's -i for the one GPU CUDA_VISIBLE_DEVICES leaves this run (run --gpus sets it to a UUID:
    nvidia-smi, unlike CUDA, ignores the variable); [] when it is unset or names several."""
    visible = environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    return ["-i", visible] if visible and "," not in visible else []


def _nvidia_smi(query):
    """nvidia-smi's CSV answer to a query of this run's GPUs; "" without nvidia-smi or when it fails."""
    if shutil.which("nvidia-smi") is None:
        return ""
    return _run(["nvidia-smi", *visible_gpu_selection(), query, "--format=csv,noheader,nounits"]) or ""


def capture_gpus():
    gpus = parse_nvidia_smi(_nvidia_smi("--query-gpu=" + ",".join(NVIDIA_SMI_FIELDS)))
    for gpu in gpus:
        gpu["numa_node"] = numa_node(gpu.get("pci.bus_id"))
    return gpus


def capture_gpu_processes():
    """Compute processes nvidia-smi lists on the GPUs ({pid, name, used_memory_mib}); none without nvidia-smi."""
    return parse_gpu_processes(_nvidia_smi("--query-compute-apps=pid,process_name,used_memory"))


def parse_gpu_processes(text):
    return [{"pid": int(values[0]), "name": values[1], "used_memory_mib": smi_value("used_memory", values[2])}
            for values in _csv_rows(text) if len(values) == 3 and values[0].isdigit()]


def _csv_rows(text):
    return [[value.strip() for value in line.split(",")] for line in text.splitlines()]


def gpu_processes_warning(processes, when):
    """A warning naming the other processes on the GPU, or None."""
    if not processes:
        return None
    named = ", ".join(f"{p['pid']} {p['name']}" + (f" ({p['used_memory_mib']} MiB)" if p["used_memory_mib"] is not None
                                                   else "") for p in processes[:5])
    more = f" and {len(processes) - 5} more" if len(processes) > 5 else ""
    return (f"{len(processes)} other process(es) on the GPU {when}: {named}{more}; their work competes with the "
            f"studies' and moves the numbers")


def parse_nvidia_smi(text):
    return [{name: smi_value(name, value) for name, value in zip(NVIDIA_SMI_FIELDS, values)}
            for values in _csv_rows(text) if len(values) == len(NVIDIA_SMI_FIELDS)]


def smi_value(name, value):
    """One nvidia-smi CSV value: None for [N/A], [Not Supported] and the like; numbers as numbers."""
    if value.startswith("[") or value in ("N/A", ""):  # '[N/A]', '[Not Supported]'
        return None
    if name in _NVIDIA_SMI_TEXT_FIELDS:
        return value
    try:
        return float(value) if "." in value else int(value)
    except ValueError:
        return value


def numa_node(bus_id):
    """NUMA node of a PCI device; nvidia-smi writes an 8-digit domain, sysfs usually 4."""
    if not bus_id:
        return None
    bus_id = bus_id.lower()
    domain, _, rest = bus_id.partition(":")
    for candidate in (bus_id, f"{domain[-4:]}:{rest}"):
        text = _read(f"/sys/bus/pci/devices/{candidate}/numa_node")
        if text is not None and text.strip().lstrip("-").isdigit():
            return int(text)
    return None


# --- software --------------------------------------------------------------------
def capture_gpubench_env(binary, study_environment):
    """(the JSON object gpubench_env prints with the study binaries' environment, None), or (None, reason)."""
    if not os.access(binary, os.X_OK):
        return None, f"{binary} not found"
    output = _run([binary], env={**os.environ, **study_environment})
    if output is None:
        return None, f"{binary} failed"
    try:
        value = json.loads(output)
    except ValueError:
        return None, f"{binary} printed something that is not JSON"
    return (value, None) if isinstance(value, dict) else (None, f"{binary} did not print a JSON object")


def openblas_info(gpubench_env):
    """The OpenBLAS part of gpubench_env's output, normalised to version/core/threads/config."""
    section = (gpubench_env or {}).get("openblas")
    if not isinstance(section, dict):
        return {"version": None, "core": None, "threads": None, "config": None}
    config = section.get("config") or ""
    version = re.search(r"OpenBLAS (\d+\.\d+[.\w]*)", config)
    return {"version": section.get("version") or (version.group(1) if version else None),
            "core": section.get("core") or section.get("corename"),
            "threads": section.get("threads") or section.get("num_threads"), "config": section.get("config")}


def affinity_warning(gpubench_env):
    """A warning when OMP_PROC_BIND asks for pinned OpenMP threads and gpubench_env found them unpinned."""
    affinity = (gpubench_env or {}).get("affinity")
    if not isinstance(affinity, dict):
        return None
    requested = (affinity.get("omp_proc_bind") or "false").strip().lower() not in ("false", "")
    if not requested:
        return None
    process_cpus = affinity.get("process_cpus") or 0
    thread_cpus = affinity.get("openmp_thread_cpus") or []
    if affinity.get("openmp_proc_bind") == "false" or not affinity.get("openmp_places"):
        problem = "OpenMP reports no binding or no places"
    elif process_cpus > 1 and any(cpus >= process_cpus for cpus in thread_cpus):
        problem = f"some OpenMP threads may still run on all {process_cpus} CPUs"
    else:
        return None
    return (f"OpenMP threads could not be pinned (OMP_PROC_BIND={affinity.get('omp_proc_bind')}, "
            f"OMP_PLACES={affinity.get('omp_places')}): {problem}; CPU timings vary more between runs")


def openblas_core_warning(core, cpu_flags):
    """A warning when OpenBLAS runs a generic kernel on a CPU with AVX2/AVX-512; else None."""
    vector_flags = [flag for flag in ("avx512f", "avx2") if cpu_flags.get(flag)]
    if not core or not vector_flags or core.strip().lower() in VECTOR_OPENBLAS_CORES:
        return None
    return (f"OpenBLAS uses the generic '{core}' kernel although the CPU has {'/'.join(vector_flags)}: "
            f"the CPU baseline is much slower than this CPU allows (an OpenBLAS that knows this CPU, "
            f"or OPENBLAS_CORETYPE=Haswell/SkylakeX, would fix it)")


def capture_git(source_dir):
    """Revision of the checkout; GPUBENCH_GIT_REVISION wins (a copied tree may carry no .git, or a stale one)."""
    given = os.environ.get("GPUBENCH_GIT_REVISION", "").strip()
    if given:
        return {"revision": given, "dirty": None, "source": "GPUBENCH_GIT_REVISION"}
    revision = _run(["git", "-C", source_dir, "rev-parse", "HEAD"])
    if revision:
        # The results folder is the runs' own output: a run does not make the next one's tree dirty.
        status = _run(["git", "-C", source_dir, "status", "--porcelain", "--", ".", ":(exclude)results"])
        return {"revision": revision.strip(), "dirty": bool(status.strip()) if status is not None else None,
                "source": "git"}
    return {"revision": None, "dirty": None, "source": "no git repository and no GPUBENCH_GIT_REVISION"}
