"""summary.md: the p2p study's sections, from its `derived` (derive_p2p.py)."""
from gpubench_driver.lib.sections import grouped_failures
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import byte_size, md, percent, seconds

GIB = float(1 << 30)


def _gb_per_s(bytes_per_s):
    return "n/a" if bytes_per_s is None else f"{bytes_per_s / 1e9:.1f} GB/s"


def _gib_per_s(bytes_per_s):
    return "n/a" if bytes_per_s is None else f"{bytes_per_s / GIB:.2f} GiB/s"


def _gpu_item(gpu):
    if gpu.get("unavailable_reason"):
        return f"{md(gpu['gpu'])}: NVML gave no links ({md(gpu['unavailable_reason'])})"
    nvlink = (f", {gpu['nvlinks_active']} NVLinks active ({_gb_per_s(gpu.get('nvlink_bytes_per_s'))} one way)"
              if gpu.get("nvlinks_active") else ", no NVLink active")
    return (f"{md(gpu['gpu'])} at {md(gpu.get('pci_bus_id') or '?')}: PCIe Gen{gpu.get('pcie_generation')} "
            f"x{gpu.get('pcie_width')} ({_gb_per_s(gpu.get('pcie_bytes_per_s'))} one way){nvlink}")


def _pair_item(pair):
    return (f"{md(pair['pair'])}: {md(pair.get('link') or '?')}, common ancestor "
            f"{md(pair.get('common_ancestor') or 'unknown')}, {_gb_per_s(pair.get('link_bytes_per_s'))} one way")


def _topology(topology):
    if not topology:
        return [paragraph("The study recorded no topology (a results file from before it did, or no GPU).")]
    items = [_gpu_item(gpu) for gpu in topology.get("gpus") or []] + [
        _pair_item(pair) for pair in topology.get("pairs") or []]
    visible = topology.get("visible_gpus") or 0
    if visible < 2:
        items.append(f"{'one GPU' if visible == 1 else 'no GPU'} visible: no pair to measure")
    return [bullets(items)]


def _row(row):
    return [md(row["impl"]), md(row["direction"]), md(row["route"]),
            f"{seconds(row['latency_s'])} ({byte_size(row['latency_n'])})",
            f"{_gib_per_s(row['bandwidth_bytes_per_s'])} ({byte_size(row['bandwidth_n'])})",
            _gb_per_s(row["link_peak_bytes_per_s"]), percent(row["fraction_of_link"], 0)]


def _routes(derived):
    rows = derived.get("routes") or []
    if not rows:
        return [paragraph("No copy was measured.")]
    header = ["engine", "direction", "route", "latency (smallest copy)", "bandwidth (largest copy)", "link rate",
              "bandwidth / link"]
    return [table(header, [_row(row) for row in rows]), paragraph(
        "Route: source-destination. Latency: median time of the smallest copy, host clock from the call until "
        "every stream it used finished. Bandwidth: bytes moved per second by the largest copy (GiB = 2^30 bytes; "
        "both ways counts both directions). Link rate: the theoretical rate from NVML (NVLink: active links x the "
        "per-link rate of the GPU's generation, every link counted as reaching the peer; PCIe: generation x width "
        "after encoding), doubled both ways.")]


def sections(study, document):
    derived = study["derived"]
    return (section("P2P: topology (NVML)", _topology(derived.get("topology")))
            + section("P2P: latency and bandwidth of every route", _routes(derived))
            + grouped_failures(study, "P2P: skipped and failed entries"))
