"""Page-resource checks, in finalize: scripts, stylesheets, fonts (from the @font-face rules of the stylesheets a page
loads) and icons that answered 4xx/5xx or not at all. One issue per page and resource, so the evidence groups by
resource URL with the pages that load it, read from the answers the resource pass (audits.pipeline.resources, the
stage that asks) got; each resource was asked once per audit. No network here.
"""

from audits.checks.registry import CheckSettings, make_issue
from audits.models import Issue

# A resource's kind (Page.resource_urls, crawler.parse.page) -> the issue type of its breaking.
RESOURCE_TYPE_OF_KIND = {
    "script": "broken-script",
    "stylesheet": "broken-stylesheet",
    "font": "broken-font",
    "icon": "broken-icon",
}
RESOURCE_SITE_TYPES = tuple(RESOURCE_TYPE_OF_KIND.values())
RESOURCE_ISSUES_MAX = 2000  # (page, resource) issues per type and audit; the rest is counted in a marker issue
# Answers that say nothing of the file: a rate limit or a bot wall (999: LinkedIn and others), and the egress
# guard's own refusal of a private address (our rule, not the site's fault).
NOT_JUDGED_STATUS_CODES = frozenset({429, 999})
NOT_JUDGED_ERRORS = frozenset({"private_address"})


def resource_broken(answer: dict | None) -> bool:
    """True when the resource pass's answer for a URL is a failure to load: 4xx/5xx, or no answer at all."""
    if answer is None:
        return False  # not asked (the pass's bound or budget): not judged
    status, error = answer.get("status_code"), answer.get("error") or ""
    if error in NOT_JUDGED_ERRORS or status in NOT_JUDGED_STATUS_CODES:
        return False
    return bool(error) or status is None or status >= 400


def resource_site_issues(audit_id, pages, answers: dict, fonts_of: dict, settings: CheckSettings) -> list[Issue]:
    """One issue per (page, broken resource), each type capped at RESOURCE_ISSUES_MAX plus a marker saying how many
    more. `answers`: url -> {"status_code", "error"} of the pass; `fonts_of`: stylesheet url -> the font URLs of
    its @font-face rules (a page loads the fonts of the stylesheets it loads)."""
    if not answers:
        return []
    found: list[Issue] = []
    reported = dict.fromkeys(RESOURCE_SITE_TYPES, 0)
    left_out = dict.fromkeys(RESOURCE_SITE_TYPES, 0)

    def add(issue_type: str, page_id, page_url: str, url: str, kind: str, **more) -> None:
        if not settings.enabled(issue_type):
            return
        if reported[issue_type] >= RESOURCE_ISSUES_MAX:
            left_out[issue_type] += 1
            return
        answer = answers[url]
        details = {
            "target_url": url,
            "kind": kind,
            "status_code": answer["status_code"],
            "fetch_error": answer["error"],
            **more,
        }
        issue = make_issue(
            audit_id, issue_type, page_id=page_id, page_url=page_url, details=details, dedupe_key=url,
            settings=settings,
        )  # fmt: skip
        if issue is not None:
            found.append(issue)
            reported[issue_type] += 1

    rows = pages.exclude(resource_urls=[]).order_by("url").values_list("id", "url", "resource_urls").iterator()
    for page_id, page_url, resource_urls in rows:
        seen: set[tuple[str, str]] = set()  # (type, url): a font of two stylesheets of one page is one issue
        for kind, url in _pairs(resource_urls):
            issue_type = RESOURCE_TYPE_OF_KIND[kind]
            if (issue_type, url) not in seen and resource_broken(answers.get(url)):
                seen.add((issue_type, url))
                add(issue_type, page_id, page_url, url, kind)
            if kind != "stylesheet":
                continue
            for font in fonts_of.get(url, ()):
                if ("broken-font", font) not in seen and resource_broken(answers.get(font)):
                    seen.add(("broken-font", font))
                    add("broken-font", page_id, page_url, font, "font", stylesheet=url)
    for issue_type, count in left_out.items():
        if count:
            issue = make_issue(
                audit_id, issue_type, details={
                    "capped": True, "reported": reported[issue_type], "left_out": count,
                    "total": reported[issue_type] + count,
                    "message": f"{count} more (page, resource) pairs of this kind were found and not listed.",
                }, dedupe_key="cap", settings=settings,
            )  # fmt: skip
            if issue is not None:
                issue.severity = Issue.Severity.INFO
                found.append(issue)
    return found


def _pairs(resource_urls) -> list[tuple[str, str]]:
    """(kind, url) pairs of a stored Page.resource_urls, skipping what is not one (an older or hand-made row)."""
    pairs = []
    for entry in resource_urls or []:
        if isinstance(entry, (list, tuple)) and len(entry) == 2 and entry[0] in RESOURCE_TYPE_OF_KIND:
            pairs.append((entry[0], str(entry[1])))
    return pairs
