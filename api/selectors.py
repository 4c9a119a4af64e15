"""Reads for the API: the lists scoped to the requester's account (another account's objects are simply not
found, 404) and the API's shapes of the comparison and the segments. The reads the dashboard and the MCP
server share (an audit's issues, pages and links) are audits.selectors'."""

from django.db.models import QuerySet

from accounts.selectors import account_for_user
from audits.comparison import comparison_pages, comparison_summary, settings_differences
from audits.errors import AuditRefused
from audits.models import Audit, Page, Project, Segment
from audits.segments import SegmentChoice, segment_table
from webhooks.models import Webhook, WebhookDelivery

# The page list's keyset ordering (api.pagination.KeysetPagination): unique within an audit, in one index after
# the audit (page_unique_url_per_audit). The issue list's is audits.selectors.issues.ISSUE_LIST_ORDERING.
PAGE_LIST_ORDERING = ("url",)


def project_list_for(user) -> QuerySet[Project]:
    return Project.objects.filter(account=account_for_user(user)).order_by("name", "id")


def audit_list_for(user) -> QuerySet[Audit]:
    return Audit.objects.filter(project__account=account_for_user(user)).order_by("-created_at", "id")


def webhook_list_for(user) -> QuerySet[Webhook]:
    return Webhook.objects.filter(project__account=account_for_user(user)).order_by("created_at", "id")


def page_list(*, audit: Audit, with_extracted: bool = False) -> QuerySet[Page]:
    """The audit's pages; their custom extraction values (up to 32 KiB a page) only when asked for."""
    pages = Page.objects.filter(audit=audit).order_by(*PAGE_LIST_ORDERING)
    return pages if with_extracted else pages.defer("extracted")


def delivery_list(*, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(webhook=webhook).order_by("-created_at", "id")


def audit_comparison(*, audit: Audit, base: Audit, segment: SegmentChoice | None = None) -> dict:
    """Issues of `audit` against `base`, matched by (type, page_url) and counted per type in SQL (the
    dashboard's comparison query): new (only in audit), fixed (only in base), persisting (in both).
    Both audits must be of one project."""
    if audit.id == base.id:
        raise AuditRefused("comparison_same_audit", "Compare an audit with another audit.", field="base")
    if audit.project_id != base.project_id:
        raise AuditRefused(
            "comparison_project_mismatch", "Only audits of the same project can be compared.", field="base"
        )
    kinds = ("new", "fixed", "persisting", "not_crawled")
    rows = [
        {"type": r.type, "severity": r.spec.severity, **{k: getattr(r, k) for k in kinds}}
        for r in comparison_summary(audit=audit, previous=base, issues_q=segment.issues_q if segment else None)
    ]
    totals = {k: sum(r[k] for r in rows) for k in kinds}
    return {
        "audit": audit.id,
        "base": base.id,
        "totals": totals,
        "by_type": rows,
        "pages": comparison_pages(audit=audit, previous=base, pages_q=segment.pages_q if segment else None),
        "settings_differ": [vars(d) for d in settings_differences(audit=audit, previous=base)],
    }


def audit_segments(*, audit: Audit) -> list[dict]:
    """The segments the audit can be read for, each with its pages, issues and pages with errors."""
    return [
        {
            "key": row.choice.key,
            "name": row.choice.name,
            "description": row.choice.description,
            "default": row.choice.default,
            "segment_id": row.choice.segment_id,
            "pages": row.pages,
            "issues": row.issues,
            "pages_with_errors": row.pages_with_errors,
        }
        for row in segment_table(audit=audit)
    ]


def segment_list_for(user) -> QuerySet[Segment]:
    return Segment.objects.filter(project__account=account_for_user(user)).order_by("position", "name", "id")
