"""summary.md: the collectives study's sections, from its `derived` (derive_collectives.py) and its
comparison with the torch.distributed all-reduce (reference_allreduce.py)."""
from gpubench_driver.lib.sections import grouped_failures, references_not_run, run_notes, time_ratio_cell
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import byte_size, md, seconds

REFERENCE_RUN = "torch_allreduce"
FORMULAS = ("Algorithm bandwidth: message bytes / median time (nccl-tests' size: the larger of a rank's two "
            "buffers). Bus bandwidth: algorithm bandwidth x nccl-tests' factor (doc/PERFORMANCE.md): all-reduce "
            "2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n, broadcast 1, n the ranks; comparable "
            "with the links' rate whatever n is. GB/s = 10^9 bytes per second, as nccl-tests prints.")


def _gb_per_s(bytes_per_s):
    return "n/a" if bytes_per_s is None else f"{bytes_per_s / 1e9:.2f} GB/s"


def _curves(derived):
    rows = derived.get("curves") or []
    title = "Collectives: bandwidth of each collective (NCCL)"
    if not rows:
        return section(title, [paragraph("No collective was measured.")])
    body = [[md(row["impl"]), md(row["mode"]), str(row["ranks"]),
             f"{seconds(row['smallest_latency_s'])} ({byte_size(row['smallest_bytes'])})", byte_size(row["largest_bytes"]),
             _gb_per_s(row["largest_algorithm_bytes_per_s"]), _gb_per_s(row["largest_bus_bytes_per_s"])] for row in rows]
    blocks = [table(["collective", "placement", "ranks", "latency (smallest message)", "largest message",
                     "algorithm bandwidth", "bus bandwidth"], body), paragraph(FORMULAS)]
    if derived.get("one_rank_note"):
        blocks.append(paragraph(f"Bus bandwidth n/a: {md(derived['one_rank_note'])}."))
    largest = derived.get("largest_all_reduce")
    if largest:
        blocks.append(paragraph(
            f"All-reduce (out of place) at its largest message, {byte_size(largest['message_bytes'])} on "
            f"{largest['ranks']} ranks: bus bandwidth {_gb_per_s(largest['bus_bytes_per_s'])}, algorithm bandwidth "
            f"{_gb_per_s(largest['algorithm_bytes_per_s'])}."))
    return section(title, blocks)


def _references(study, document):
    title = "Collectives: torch.distributed all-reduce reference"
    references = document.get("references")
    if references is None:
        return section(title, [paragraph(references_not_run(document))])
    notes = bullets(run_notes(REFERENCE_RUN, references.get(REFERENCE_RUN) or {"note": "not run"}))
    rows = study["derived"].get("reference_comparison") or []
    if not any(row["time_ratio"] is not None for row in rows):
        return section(title, [notes, paragraph("No all-reduce size was measured by both the study and the reference "
                                                "(the default suite stops below 8 GiB: run --sizes 33 --impls "
                                                "all_reduce).")])
    body = [[byte_size(1 << row["n"]), seconds(row["study_median_s"]), seconds(row["reference_median_s"]),
             time_ratio_cell(row), md(row["target"] or "")] for row in rows]
    return section(title, [notes, table(["message", "study", "torch", "time ratio", "target"], body), paragraph(
        "Time ratio: study median / torch median, both on the device (CUDA events) over the same GPUs; the bus "
        "bandwidths stand in the inverse ratio. Targets are stated, not checked.")])


def _ranks(launch):
    """Who took part in a launch of one process per GPU (run --launcher): each rank's node and GPU."""
    if not launch:
        return []
    hosts = dict.fromkeys(rank.get("host") for rank in launch.get("ranks") or [])
    body = [[str(rank.get("rank")), md(rank.get("host") or "?"), str(rank.get("local_rank")), md(rank.get("cpu") or "?"),
             md((rank.get("gpu") or {}).get("name") or f"none: {rank.get('gpu_reason')}"),
             md((rank.get("gpu") or {}).get("pci_bus_id") or ""), md((rank.get("gpu") or {}).get("uuid") or "")]
            for rank in launch.get("ranks") or []]
    return section("Collectives: the ranks, one process per GPU", [paragraph(
        f"{launch.get('size')} ranks on {len(hosts)} node(s), started by `{' '.join(launch.get('command') or []).replace('`', '')}` "
        f"({md(launch.get('launcher') or '?')}'s variables; the ranks met over {md(launch.get('transport') or '?')}). "
        f"Rank 0 measured; every rank checked its own output."),
        table(["rank", "host", "local rank", "CPU", "GPU", "PCI bus id", "UUID"], body)])


def sections(study, document):
    return (_curves(study["derived"]) + _ranks(study.get("ranks")) + _references(study, document)
            + grouped_failures(study, "Collectives: skipped and failed entries"))
