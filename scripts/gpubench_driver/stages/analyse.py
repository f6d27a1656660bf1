"""The analyse stage: a run's findings, derived from its entries (each report derives them again, so that a
run cut off before its end, or a file an older driver wrote, gets today's): each study's own, then those
across the studies, then the first screen's (headline, health, claims)."""
from gpubench_driver import studies
from gpubench_driver.lib import findings
from gpubench_driver.stages import across, claims, headline, health, reference


def derive_findings(document, refine_rounds):
    for name, study in document["studies"].items():
        record = studies.BY_NAME.get(name)
        # A study the registry does not know (a file from elsewhere) gets the findings any sweep over n has.
        study["derived"] = (record.derive(study, document, refine_rounds) if record
                            else findings.derive(study["entries"], refine_rounds))
        if document.get("references") is not None and record and record.references:
            study["derived"]["reference_comparison"] = reference.compare(document["references"], study["entries"],
                                                                         name)
    document["findings"] = across.derive(document["studies"])
    for name, study in document["studies"].items():
        record = studies.BY_NAME.get(name)
        if record and record.derive_across:
            study["derived"].update(record.derive_across(study, document))
    document["findings"]["headline"] = headline.derive_headline(document)
    document["findings"]["health"] = health.derive_health(document)
    document["findings"]["claims"] = claims.derive_claims(document)
