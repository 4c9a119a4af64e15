"""Reads only the API has: its lists of webhooks, deliveries and segments scoped to the requester's account
(another account's objects are simply not found, 404), its page list and its shape of the segments. The reads
the dashboard and the MCP server share (projects and audits a person may see, an audit's comparison, issues,
pages and links) are audits.selectors'."""

from django.db.models import QuerySet

from accounts.selectors import account_for_user
from audits.models import Audit, Page, Segment
from audits.segments import segment_table
from webhooks.models import Webhook, WebhookDelivery

# The page list's keyset ordering (api.pagination.KeysetPagination): unique within an audit, in one index after
# the audit (page_unique_url_per_audit). The issue list's is audits.selectors.issues.ISSUE_LIST_ORDERING.
PAGE_LIST_ORDERING = ("url",)


def webhook_list_for(user) -> QuerySet[Webhook]:
    return Webhook.objects.filter(project__account=account_for_user(user)).order_by("created_at", "id")


def page_list(*, audit: Audit, with_extracted: bool = False) -> QuerySet[Page]:
    """The audit's pages; their custom extraction values (up to 32 KiB a page) only when asked for."""
    pages = Page.objects.filter(audit=audit).order_by(*PAGE_LIST_ORDERING)
    return pages if with_extracted else pages.defer("extracted")


def delivery_list(*, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(webhook=webhook).order_by("-created_at", "id")


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
            "score": row.score,
        }
        for row in segment_table(audit=audit)
    ]


def segment_list_for(user) -> QuerySet[Segment]:
    return Segment.objects.filter(project__account=account_for_user(user)).order_by("position", "name", "id")
