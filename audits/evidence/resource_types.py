"""The evidence of the page-resource checks (audits.checks.resources): one row per page and broken resource, the
resource URL as the target, so the issue screen groups the rows by resource with the pages that load it."""

from audits.evidence.columns import UNIT_LOADS, Evidence, detail, page

RESOURCE_LINK_TYPES = ("broken-script", "broken-stylesheet", "broken-font", "broken-icon")


def _resource(label: str, *more) -> Evidence:
    return Evidence(
        UNIT_LOADS,
        (
            page("Page that loads it"),
            detail("target_url", label),
            detail("kind", "Kind"),
            detail("status_code", "Status"),
            detail("fetch_error", "Error"),
            *more,
        ),
        order=("page_url", "details__target_url", "id"),
        target="target_url",
    )


RESOURCE_EVIDENCE: dict[str, Evidence] = {
    "broken-script": _resource("Script"),
    "broken-stylesheet": _resource("Stylesheet"),
    "broken-font": _resource("Font", detail("stylesheet", "Stylesheet naming it")),
    "broken-icon": _resource("Icon"),
}
