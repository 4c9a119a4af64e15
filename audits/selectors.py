"""Reads of the audit domain. Reads only: the status read that reconciles (writes) is the service
`audits.pipeline.reconcile.audit_status_refresh`."""

from django.db.models import Count, F, IntegerField, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from audits.models import Audit, Issue, Page
from scratchpad.models import LinkEdge


def issues_by_type(*, audit: Audit) -> dict[str, int]:
    rows = Issue.objects.filter(audit=audit).values("type").annotate(n=Count("id")).order_by("type")
    return {row["type"]: row["n"] for row in rows}


def issues_by_severity(*, audit: Audit) -> dict[str, int]:
    """Issue counts per severity, every severity present (critical first), zeros included."""
    counts = dict.fromkeys(Issue.Severity.values, 0)
    rows = Issue.objects.filter(audit=audit).order_by().values("severity").annotate(n=Count("id"))
    counts.update({row["severity"]: row["n"] for row in rows})
    return counts


def audit_summary(*, audit: Audit) -> dict:
    """The CLI's --json object; fields not computed yet are null."""
    finished = audit.status != Audit.Status.RUNNING
    return {
        "id": str(audit.id),
        "status": audit.status,
        "current_phase": audit.current_phase,
        "pages_crawled": audit.pages_crawled,
        "issues_by_type": issues_by_type(audit=audit) if finished else None,
        "health_score": audit.health_score,
        "error_code": audit.error_code or None,
    }


def _inlinks_subquery() -> Subquery:
    edges = (
        LinkEdge.objects.filter(audit_id=OuterRef("audit_id"), target_url=OuterRef("url"))
        .order_by()
        .values("target_url")
        .annotate(n=Sum("link_count"))  # an edge is one source page's links to the target, counted
        .values("n")[:1]
    )
    return Subquery(edges, output_field=IntegerField())


def page_inlinks_count():
    """An annotation for a Page queryset: links to the page's URL from the audit's crawled pages (every
    <a> counts, as in a crawler's Inlinks column). Finalize stores the count on the page (sorting 10,000 pages
    by a per-row subquery takes most of a second); until then, or for an audit that never finalized, a
    subquery on LinkEdge's (audit, target_url) index counts it. COALESCE evaluates the subquery only for a
    NULL column."""
    return Coalesce(F("inlinks_count"), _inlinks_subquery(), Value(0))


def page_inlinks_store(*, audit_id) -> int:
    """Count every page's inlinks once, in one statement (finalize calls it); returns pages updated."""
    return Page.objects.filter(audit_id=audit_id).update(inlinks_count=Coalesce(_inlinks_subquery(), Value(0)))
