"""The claims that bring people to gpubench, each answered on this machine from the run's findings (a study
plug-in lists those its findings answer, Study.claims; stages/claims.py those read across the studies). The
verdicts: confirmed, refuted, or "depends on ..." naming what it depends on."""
from dataclasses import dataclass
from typing import Callable

CONFIRMED, REFUTED = "confirmed", "refuted"
CLOSE_TO = 0.10  # a measured factor within this share of the claimed one confirms it


@dataclass(frozen=True)
class Claim:
    key: str
    text: str     # the claim, as it is usually made
    source: str   # where it is made
    answer: Callable  # document -> {verdict, answer, numbers} or None (not measured by this run)
    studies: tuple = ()  # the studies whose findings it reads: a run without them leaves it unanswered
    position: int = 0  # where the report lists it among every study's claims (the most asked first)


def derived_of(document, study):
    """The derived findings of a study of the run ({} where it has none)."""
    return ((document["studies"].get(study) or {}).get("derived")) or {}
