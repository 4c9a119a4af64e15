"""Where a project's alerts go: the one write path of an AlertChannel (the dashboard's form and the admin call it)
and whom an e-mail channel reaches.

- e-mail: addresses, comma-separated; empty: the account's members (their addresses when the alert is sent);
- Slack, Teams: the incoming webhook's URL, checked like a start URL (SSRF policy, port) when saved, and the
  address guard again at every send (alerts.services.sending);
- webhook: the project's signed webhooks (webhooks.services), no target of its own; one such channel a project."""

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from alerts.models import AlertChannel
from alerts.services.outbox import account_member_users, alert_test_queue
from audits.errors import AuditRefused
from audits.models import Project
from audits.projects import url_checked

Kind = AlertChannel.Kind

CHANNELS_MAX = 20  # a project's channels
EMAIL_ADDRESSES_MAX = 50  # addresses of one e-mail channel
TARGET_MAX_CHARS = 2048


def _refused(code: str, message: str) -> AuditRefused:
    return AuditRefused(code, message, field="target")


def _addresses(text: str) -> list[str]:
    return [a.strip() for a in (text or "").replace(";", ",").replace("\n", ",").split(",") if a.strip()]


def _target_checked(kind: str, target: str) -> str:
    target = (target or "").strip()
    if len(target) > TARGET_MAX_CHARS:
        raise _refused("invalid_alert_target", f"The target has more than {TARGET_MAX_CHARS} characters.")
    if kind == Kind.EMAIL:
        addresses = _addresses(target)
        if len(addresses) > EMAIL_ADDRESSES_MAX:
            raise _refused("invalid_alert_target", f"An e-mail channel has at most {EMAIL_ADDRESSES_MAX} addresses.")
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError as exc:
                raise _refused("invalid_alert_target", f"{address!r} is not an e-mail address.") from exc
        return ", ".join(dict.fromkeys(addresses))
    if kind in (Kind.SLACK, Kind.TEAMS):
        if not target:
            raise _refused("invalid_alert_target", "Paste the incoming webhook's address.")
        return url_checked(target, field="target")
    if target:
        raise _refused("invalid_alert_target", "The webhook channel sends to the project's webhooks: no target.")
    return ""


def alert_channel_validate(*, project: Project, kind: str, target: str = "") -> str:
    """The rules of alert_channel_create without the write (a form shows the refusal before saving): the
    target as it would be stored, or AuditRefused."""
    if kind not in Kind.values:
        raise AuditRefused("invalid_alert_channel", "Choose e-mail, Slack, Teams or webhook.", field="kind")
    if AlertChannel.objects.filter(project=project).count() >= CHANNELS_MAX:
        raise AuditRefused("too_many_alert_channels", f"A project has at most {CHANNELS_MAX} channels.", field="kind")
    if kind == Kind.WEBHOOK and AlertChannel.objects.filter(project=project, kind=kind).exists():
        raise AuditRefused("invalid_alert_channel", "Alerts already go to this project's webhooks.", field="kind")
    return _target_checked(kind, target)


def alert_channel_create(*, project: Project, kind: str, target: str = "", enabled: bool = True) -> AlertChannel:
    target = alert_channel_validate(project=project, kind=kind, target=target)
    return AlertChannel.objects.create(project=project, kind=kind, target=target, enabled=enabled)


def alert_channel_target_checked(*, kind: str, target: str) -> str:
    """A target for a channel of this kind, as it would be stored, or AuditRefused."""
    return _target_checked(kind, target)


def alert_channel_update(*, channel: AlertChannel, target: str | None = None, enabled: bool | None = None):
    fields = []
    if target is not None:
        channel.target = _target_checked(channel.kind, target)
        fields.append("target")
    if enabled is not None:
        channel.enabled = enabled
        fields.append("enabled")
    if fields:
        channel.save(update_fields=fields)
    return channel


def alert_channel_delete(*, channel: AlertChannel) -> None:
    """The channel and its delivery log."""
    channel.delete()


def alert_channel_test(*, channel: AlertChannel) -> None:
    """Queue a test alert to the channel (sent by the worker like a real one; its outcome shows in the log)."""
    alert_test_queue(channel=channel)


def alert_email_recipients(channel: AlertChannel) -> list[str]:
    """The channel's addresses, or the account's members' when it has none."""
    addresses = _addresses(channel.target)
    if addresses:
        return addresses
    users = account_member_users(channel.project)
    return list(dict.fromkeys(u.email for u in users if u.email))
