"""Reads for the API. Every queryset starts from the requester's account, so another account's objects
are simply not found (404)."""

from django.db.models import Count, Q, QuerySet

from accounts.selectors import account_for_user
from audits.checks.registry import CHECKS_BY_TYPE
from audits.comparison import comparison_pages, comparison_summary, settings_differences
from audits.errors import AuditRefused
from audits.models import Audit, Issue, Page, Project, Segment
from audits.segments import SegmentChoice, segment_table
from scratchpad.models import LinkEdge
from webhooks.models import Webhook, WebhookDelivery

PAGE_LINKS_SHOWN = 500  # inlinks and outlinks listed on a page's detail (the counts are exact)
# Keyset orderings (api.pagination.KeysetPagination): the last column unique within an audit, and all of them
# in one index after the audit (page_unique_url_per_audit; issue_audit_type_url_id).
PAGE_LIST_ORDERING = ("url",)
ISSUE_LIST_ORDERING = ("type", "page_url", "id")


def project_list_for(user) -> QuerySet[Project]:
    return Project.objects.filter(account=account_for_user(user)).order_by("name", "id")


def audit_list_for(user) -> QuerySet[Audit]:
    return Audit.objects.filter(project__account=account_for_user(user)).order_by("-created_at", "id")


def webhook_list_for(user) -> QuerySet[Webhook]:
    return Webhook.objects.filter(project__account=account_for_user(user)).order_by("created_at", "id")


def issue_list(*, audit: Audit) -> QuerySet[Issue]:
    return Issue.objects.filter(audit=audit).order_by(*ISSUE_LIST_ORDERING)


def page_list(*, audit: Audit, with_extracted: bool = False) -> QuerySet[Page]:
    """The audit's pages; their custom extraction values (up to 32 KiB a page) only when asked for."""
    pages = Page.objects.filter(audit=audit).order_by(*PAGE_LIST_ORDERING)
    return pages if with_extracted else pages.defer("extracted")


def delivery_list(*, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(webhook=webhook).order_by("-created_at", "id")


def issue_summary(*, audit: Audit, issues_q: Q | None = None) -> list[dict]:
    """Issues of the audit (a segment's, `issues_q`) grouped by type (and the severity they were given), most
    severe first."""
    rank = {"critical": 0, "warning": 1, "info": 2}
    rows = Issue.objects.filter(audit=audit).filter(issues_q or Q()).values("type", "severity")
    rows = rows.order_by().annotate(count=Count("id"))
    out = []
    for row in rows:
        spec = CHECKS_BY_TYPE.get(row["type"])
        out.append({**row, "title": spec.title if spec else row["type"], "scope": spec.scope if spec else None})
    return sorted(out, key=lambda r: (rank.get(r["severity"], 9), -r["count"], r["type"]))


def page_links(*, page: Page, limit: int = PAGE_LINKS_SHOWN) -> dict:
    """Outlinks (edges from the page) and inlinks (edges whose target is the page's URL), capped, with counts."""
    outlinks = LinkEdge.objects.filter(source_page_id=page.id)
    inlinks = LinkEdge.objects.filter(audit_id=page.audit_id, target_url=page.url)
    # Naming the source page's audit lets PostgreSQL walk (audit, url) in order and stop at `limit` rows
    # instead of sorting every inlink of a page 100,000 pages link to; the count stays join-free.
    return {
        "outlinks_count": outlinks.count(),
        "outlinks": list(
            outlinks.order_by("id").values("target_url", "link_count", "anchor_text", "nofollow", "internal")[:limit]
        ),
        "inlinks_count": inlinks.count(),
        "inlinks": list(
            inlinks.filter(source_page__audit_id=page.audit_id)
            .order_by("source_page__url", "id")
            .values("source_page_id", "source_page__url", "link_count", "anchor_text", "nofollow")[:limit]
        ),
    }


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
