"""The claims the run answers (findings["claims"]): every study's (Study.claims), and this stage's across the
studies: whether FLOPS or memory bandwidth limit the run's workloads (the roofline's points against its ridges)."""
from gpubench_driver import studies
from gpubench_driver.lib.claims import CONFIRMED, Claim, REFUTED
from gpubench_driver.lib.findings import group_by

# The studies that measure the roofs; the entries placed under them are the others'.
ROOF_STUDIES = tuple(study.name for study in studies.STUDIES if study.measures_roofs)
# Those and the studies whose entries are not workloads but experiments (deliberately starved grids, empty
# kernels, the GEMM ladder's deliberately weak rungs): placed on the roofline they would count as a workload's answer.
NOT_WORKLOADS = tuple(study.name for study in studies.STUDIES if study.measures_roofs or study.experiment)
MOSTLY = 0.75  # this share of the entries on one side of the ridge settles the claim


def memory_bound(document):
    if not set(ROOF_STUDIES) <= set(document["studies"]):
        return None
    roof = (document.get("findings") or {}).get("roofline") or {}
    bandwidth = roof.get("bandwidth")
    peaks = {row["precision"]: row["flop_per_s"] for row in roof.get("peaks") or []}
    points = [point for point in roof.get("points") or []
              if point["study"] not in NOT_WORKLOADS and point["precision"] in peaks]
    if not bandwidth or not points:
        return None
    ridges = {precision: peak / bandwidth["bytes_per_s"] for precision, peak in peaks.items()}
    # Left of its precision's ridge a point is memory-bound.
    sides = group_by(points, lambda point: (point["study"], point["precision"]),
                     lambda point: point["intensity"] < ridges[point["precision"]])
    by_study = [{"study": study, "precision": precision, "memory_bound": left.count(True),
                 "compute_bound": left.count(False)} for (study, precision), left in sides.items()]
    memory = sum(group["memory_bound"] for group in by_study)
    share = memory / len(points)
    verdict = (CONFIRMED if share >= MOSTLY else REFUTED if share <= 1 - MOSTLY else
               f"depends on the arithmetic intensity: {memory} of {len(points)} entries are memory-bound")
    used = sorted({point["precision"] for point in points}, key=lambda precision: -peaks[precision])
    ridge_text = ", ".join(f"{precision} {ridges[precision]:.3g}" for precision in used)
    per_study = "; ".join(f"{group['study']} {group['precision']}: {group['memory_bound']} memory-bound, "
                          f"{group['compute_bound']} compute-bound" for group in by_study)
    return {"verdict": verdict,
            "numbers": {"memory_bound": memory, "compute_bound": len(points) - memory, "share_memory_bound": share,
                        "bandwidth_bytes_per_s": bandwidth["bytes_per_s"], "bandwidth_study": bandwidth["study"],
                        "ridges": {precision: ridges[precision] for precision in used}, "by_study": by_study},
            "answer": f"Of the {len(points)} resident GPU entries of the other studies on the measured roofline "
                      f"(memory roof {bandwidth['bytes_per_s'] / 1e9:.0f} GB/s from the {bandwidth['study']} study; "
                      f"ridges in FLOP per byte: {ridge_text}), {memory} lie left of their precision's ridge, where "
                      f"bandwidth bounds them, and {len(points) - memory} right of it: {per_study}."}

ACROSS = (
    Claim("flops_rarely_limit", "FLOPS are rarely the limit; memory bandwidth is",
          "GPU optimisation guides, after Stephen Jones' How CUDA Programming Works (GTC)", memory_bound,
          studies=ROOF_STUDIES, position=6),
)
CLAIMS = tuple(sorted(studies.CLAIMS + ACROSS, key=lambda claim: claim.position))


def derive_claims(document):
    """findings["claims"]: {"answered": [...], "not_measured": [claim texts]}."""
    answered, not_measured = [], []
    for claim in CLAIMS:
        found = claim.answer(document)
        if found is None:
            not_measured.append(claim.text)
        else:
            answered.append({"key": claim.key, "claim": claim.text, "source": claim.source, **found})
    return {"answered": answered, "not_measured": not_measured}
