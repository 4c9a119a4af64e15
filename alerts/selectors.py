"""Reads of a project's alert settings and delivery log, and of a person's notifications (the dashboard's)."""

from django.db.models import Q, QuerySet

from alerts.models import AlertChannel, AlertDelivery, AlertRule, Notification
from alerts.services.rules import DEFAULT_THRESHOLDS, THRESHOLD_BOUNDS, THRESHOLD_UNITS, rule_threshold
from audits.models import Project

RECENT_DELIVERIES = 20  # deliveries listed on a project's alert settings, newest first
FAILED_DELIVERIES_SHOWN = 5  # failed (or failing) deliveries on the project's screen
NOTIFICATIONS_PER_PAGE = 30


def alert_rules_for_project(*, project: Project) -> list[dict]:
    """Every rule kind with its setting (a kind without a row, on a project from before alerts, shows its
    default: the row is written on the first save)."""
    rows = {r.kind: r for r in AlertRule.objects.filter(project=project)}
    out = []
    for kind, label in AlertRule.Kind.choices:
        rule = rows.get(kind) or AlertRule(project=project, kind=kind)
        out.append(
            {
                "kind": kind,
                "label": label,
                "enabled": rule.enabled,
                "threshold": rule.threshold,
                "effective": rule_threshold(rule),
                "default": DEFAULT_THRESHOLDS.get(kind),
                "unit": THRESHOLD_UNITS.get(kind, ""),
                "bounds": THRESHOLD_BOUNDS.get(kind),
            }
        )
    return out


def channel_label(channel: AlertChannel) -> str:
    """The channel as a person reads it; an incoming webhook's URL is a secret, so only its host is shown."""
    if channel.kind == AlertChannel.Kind.EMAIL:
        return channel.target or "The account's members"
    if channel.kind == AlertChannel.Kind.WEBHOOK:
        return "The project's signed webhooks"
    parts = channel.target.split("/")
    return f"{parts[2]}/…" if len(parts) > 2 else "…"


def alert_channels_for_project(*, project: Project) -> list[AlertChannel]:
    channels = list(AlertChannel.objects.filter(project=project).order_by("created_at", "id"))
    for channel in channels:
        channel.label = channel_label(channel)
    return channels


def alert_channel_for_project(*, project: Project, channel_id: int) -> AlertChannel | None:
    return AlertChannel.objects.filter(project=project, id=channel_id).first()


def _deliveries(project: Project) -> QuerySet:
    return (
        AlertDelivery.objects.filter(channel__project=project)
        .select_related("channel")
        .defer("payload")
        .order_by("-created_at")
    )


def alert_deliveries_recent(*, project: Project, limit: int = RECENT_DELIVERIES) -> list[AlertDelivery]:
    rows = list(_deliveries(project)[:limit])
    for row in rows:
        row.channel.label = channel_label(row.channel)
    return rows


def alert_deliveries_failing(*, project: Project, limit: int = FAILED_DELIVERIES_SHOWN) -> list[AlertDelivery]:
    """The last deliveries that failed, or failed an attempt and wait for the next, with their error."""
    rows = list(
        _deliveries(project).filter(
            Q(status=AlertDelivery.Status.FAILED) | Q(status=AlertDelivery.Status.PENDING) & ~Q(last_error="")
        )[:limit]
    )
    for row in rows:
        row.channel.label = channel_label(row.channel)
    return rows


def notification_unread_count(*, user) -> int:
    return Notification.objects.filter(user=user, read_at__isnull=True).count()


def notification_list_for_user(*, user) -> QuerySet:
    return Notification.objects.filter(user=user).select_related("project").order_by("-created_at", "id")


def notification_for_user(*, user, notification_id) -> Notification | None:
    return Notification.objects.filter(user=user, id=notification_id).first()
