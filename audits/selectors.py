"""Reads of the audit domain. Reads only: the status read that reconciles (writes) is the service
`audits.pipeline.reconcile.audit_status_refresh`."""

from django.db.models import Count

from audits.models import Audit, Issue


def issues_by_type(*, audit: Audit) -> dict[str, int]:
    rows = Issue.objects.filter(audit=audit).values("type").annotate(n=Count("id")).order_by("type")
    return {row["type"]: row["n"] for row in rows}


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
