"""Reads of a project's webhooks and their delivery log (the dashboard's; the API has its own querysets)."""

from django.db.models import QuerySet

from audits.models import Project
from webhooks.models import Webhook, WebhookDelivery

RECENT_DELIVERIES = 20  # deliveries shown under a project's webhooks, newest first


def webhook_list_for_project(*, project: Project) -> QuerySet:
    return Webhook.objects.filter(project=project).order_by("created_at", "id")


def webhook_for_project(*, project: Project, webhook_id: int) -> Webhook | None:
    return Webhook.objects.filter(project=project, id=webhook_id).first()


def webhook_deliveries_recent(*, project: Project, limit: int = RECENT_DELIVERIES) -> list[WebhookDelivery]:
    return list(
        WebhookDelivery.objects.filter(webhook__project=project)
        .select_related("webhook")
        .only(
            "id",
            "event",
            "audit_id",
            "status",
            "attempts",
            "last_response_code",
            "last_error",
            "created_at",
            "last_attempt_at",
            "webhook__url",
        )
        .order_by("-created_at")[:limit]
    )
