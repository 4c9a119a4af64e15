"""Health score: the share of crawled internal URLs without a critical issue (docs/CHECKS.md)."""

from django.db.models import Count, Exists, OuterRef, Q

from audits.models import Issue, Page

HEALTH_FORMULA = (
    "health = round(100 × internal URLs crawled with no critical issue ÷ internal URLs crawled); "
    "issues not tied to a page (site-level) do not count."
)


def health_score(audit_id) -> tuple[int | None, int]:
    """(score 0-100 or None when nothing was crawled, pages counted), in one query."""
    critical = Issue.objects.filter(page_id=OuterRef("pk"), severity=Issue.Severity.CRITICAL)
    row = Page.objects.filter(audit_id=audit_id).aggregate(
        pages=Count("id"), healthy=Count("id", filter=~Q(Exists(critical)))
    )
    pages, healthy = row["pages"], row["healthy"]
    if not pages:
        return None, 0
    # Half up, in integers: round() would send 12.5 to 12.
    return (200 * healthy + pages) // (2 * pages), pages
