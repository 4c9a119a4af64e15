"""The outbox: an audit's alert written as rows in one transaction, then sent from them.

When an audit completes (`audits.signals.audit_finished`, alerts.tasks' receiver) `alert_deliveries_queue` judges
the rules (alerts.services.findings) and, in one transaction, writes one AlertDelivery per enabled channel and one
Notification per member of the project's account; both are unique per audit, so a second signal writes nothing.
After commit each new delivery is sent by the `alerts.deliver_alert` task (by name, audits.dispatch).

A worker sends a delivery only after claiming it (`alert_delivery_claim`: one conditional UPDATE, pending and due,
or sending with an expired lease -> sending, `lease_until`, attempts + 1), so two workers never send one delivery;
its outcome is written only while the claim is still its own (the attempt number fences a worker that outlived
its lease). A failure goes back to pending with `next_attempt_at` (backoff) until ALERT_MAX_ATTEMPTS, then failed.
The beat task `alerts.sweep_deliveries` (`alert_deliveries_sweep`, every ALERT_SWEEP_EVERY_S) sends what is due:
retries, leases a dead worker left behind, and new deliveries whose message was lost."""

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from alerts.models import AlertChannel, AlertDelivery, Notification
from alerts.services.findings import alert_findings, changes_path
from alerts.services.messages import alert_payload, alert_test_payload, notification_text
from audits.dispatch import DELIVER_ALERT, SWEEP_ALERTS, task_send
from audits.models import Audit, Project

logger = logging.getLogger(__name__)
Status = AlertDelivery.Status

ALERT_MAX_ATTEMPTS = 6  # then failed, with the last error on the project's screen
ALERT_RETRY_BASE_S = 60  # 1, 2, 4, 8, 16 minutes between the six attempts
ALERT_RETRY_MAX_S = 3600
ALERT_SOFT_TIME_LIMIT_S = 75  # an attempt: SMTP's EMAIL_TIMEOUT (30 s) a step, or an HTTP POST (5 s + 10 s)
ALERT_TIME_LIMIT_S = 90
# A claim lasts longer than an attempt may (the task's hard time limit), so a live worker never loses its claim;
# a dead worker's claim is taken over once it has expired.
ALERT_LEASE_S = 180
ALERT_SWEEP_EVERY_S = 60  # beat's sweep: the resolution of the backoff
ALERT_LOST_AFTER_S = 10 * 60  # a new delivery nobody claimed for this long lost its message: sent again
ALERT_SWEEP_BATCH = 200  # deliveries sent per sweep
ALERT_SWEEP_SOFT_TIME_LIMIT_S = 50  # within its interval: the next sweep is due
ALERT_SWEEP_TIME_LIMIT_S = 60
ERROR_CHARS = 500
SWEEP_TASK_NAME = "sitewarden-alert-deliveries"


def account_member_users(project: Project):
    """The people of the project's account (and its owner): who gets in-app notifications and, for an e-mail
    channel without addresses, the e-mail."""
    users = get_user_model().objects.filter(Q(membership__account_id=project.account_id) | Q(id=project.owner_id))
    return users.filter(is_active=True).distinct().order_by("id")


def alert_deliveries_queue(*, audit: Audit) -> list[AlertDelivery]:
    """The audit's alert: nothing when no rule fires; else one delivery per enabled channel and one notification
    per member, written together, none twice for an audit. Returns the deliveries this call wrote (sent after
    commit)."""
    audit = Audit.objects.select_related("project", "baseline").get(id=audit.id)
    findings = alert_findings(audit)
    if not findings:
        return []
    payload = alert_payload(audit=audit, findings=findings)
    title, body = notification_text(payload)
    channels = list(AlertChannel.objects.filter(project_id=audit.project_id, enabled=True))
    rows = [
        AlertDelivery(id=uuid.uuid4(), channel=c, audit=audit, audit_ref=audit.id, payload=payload) for c in channels
    ]
    notes = [
        Notification(
            user=user,
            project_id=audit.project_id,
            audit=audit,
            audit_ref=audit.id,
            title=title,
            body=body,
            link=changes_path(audit.id),
        )
        for user in account_member_users(audit.project)
    ]
    with transaction.atomic():
        # ON CONFLICT DO NOTHING on (channel, audit) and (user, audit): a second signal inserts nothing, and
        # the rows that exist afterwards with our ids are the ones this call wrote.
        AlertDelivery.objects.bulk_create(rows, ignore_conflicts=True)
        Notification.objects.bulk_create(notes, ignore_conflicts=True)
        created = list(AlertDelivery.objects.filter(id__in=[r.id for r in rows]).select_related("channel"))
        for delivery in created:
            alert_delivery_dispatch(delivery.id)
    if created:
        logger.info("alert queued", extra={"audit_id": str(audit.id), "deliveries": len(created)})
    return created


def alert_test_queue(*, channel: AlertChannel) -> AlertDelivery:
    """A test alert to one channel (the dashboard's button): an outbox row like any other, with no audit."""
    delivery = AlertDelivery.objects.create(
        channel=channel, audit=None, audit_ref=uuid.uuid4(), payload=alert_test_payload(project=channel.project)
    )
    alert_delivery_dispatch(delivery.id)
    return delivery


def alert_delivery_dispatch(delivery_id) -> None:
    """Send the delivery task by name after commit; a broker that is down leaves the row for the sweep."""
    try:
        task_send(DELIVER_ALERT, str(delivery_id))
    except Exception:  # the row is the truth: the sweep sends it once it is overdue
        logger.exception("could not queue an alert delivery", extra={"delivery_id": str(delivery_id)})


def alert_backoff_s(attempts: int) -> int:
    """Seconds before attempt `attempts + 1`, after `attempts` failed ones."""
    base = getattr(settings, "ALERT_RETRY_BASE_S", ALERT_RETRY_BASE_S)
    return min(base * 2 ** max(attempts - 1, 0), ALERT_RETRY_MAX_S)


def _claimable(now: datetime) -> Q:
    return Q(status=Status.PENDING) & (Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)) | Q(
        status=Status.SENDING, lease_until__lt=now
    )


@dataclass
class Claim:
    delivery: AlertDelivery
    attempt: int  # the fencing token: the outcome is written only while the row still carries it


def alert_delivery_claim(*, delivery_id, now: datetime | None = None) -> Claim | None:
    """Take the delivery for one attempt, or None when it is not ours to send (another worker holds it, it is
    not due, it is done). One conditional UPDATE: of two workers, exactly one gets the row."""
    now = now or timezone.now()
    lease_s = getattr(settings, "ALERT_LEASE_S", ALERT_LEASE_S)
    claimed = AlertDelivery.objects.filter(_claimable(now), id=delivery_id, attempts__lt=ALERT_MAX_ATTEMPTS).update(
        status=Status.SENDING,
        lease_until=now + timedelta(seconds=lease_s),
        attempts=F("attempts") + 1,
        last_attempt_at=now,
    )
    if not claimed:
        return None
    delivery = AlertDelivery.objects.select_related("channel", "channel__project").get(id=delivery_id)
    return Claim(delivery, delivery.attempts)


def alert_delivery_finish(*, claim: Claim, ok: bool, error: str = "", retry: bool = True) -> str:
    """Write an attempt's outcome: succeeded; or pending with the next attempt's time (a transient failure with
    attempts left); or failed. "lost" when the claim is no longer ours (it expired and another worker took it)."""
    now = timezone.now()
    if ok:
        values = {"status": Status.SUCCEEDED, "delivered_at": now, "last_error": ""}
    elif retry and claim.attempt < ALERT_MAX_ATTEMPTS:
        values = {
            "status": Status.PENDING,
            "next_attempt_at": now + timedelta(seconds=alert_backoff_s(claim.attempt)),
            "last_error": error[:ERROR_CHARS],
        }
    else:
        values = {"status": Status.FAILED, "last_error": error[:ERROR_CHARS]}
    written = AlertDelivery.objects.filter(id=claim.delivery.id, status=Status.SENDING, attempts=claim.attempt).update(
        lease_until=None, **values
    )
    if not written:
        return "lost"
    outcome = values["status"]
    (logger.info if ok else logger.warning)(
        "alert delivery attempt",
        extra={"delivery_id": str(claim.delivery.id), "attempt": claim.attempt, "outcome": outcome, "error": error},
    )
    return {Status.SUCCEEDED: "succeeded", Status.PENDING: "retry", Status.FAILED: "failed"}[outcome]


def alert_deliveries_sweep(*, now: datetime | None = None) -> list:
    """Send again what is due: pending deliveries whose backoff is over, claims whose lease expired (their worker
    died) and new deliveries nobody claimed for ALERT_LOST_AFTER_S (their message was lost). A dead worker's
    last allowed attempt is failed here. Returns the ids sent to the task."""
    now = now or timezone.now()
    expired = AlertDelivery.objects.filter(status=Status.SENDING, lease_until__lt=now)
    expired.filter(attempts__gte=ALERT_MAX_ATTEMPTS).update(
        status=Status.FAILED, lease_until=None, last_error="The worker sending it stopped during the last attempt"
    )
    taken_back = list(expired.values_list("id", flat=True)[:ALERT_SWEEP_BATCH])
    # Back to pending, due at once (no next_attempt_at): the task's claim then takes it whatever its clock says.
    AlertDelivery.objects.filter(id__in=taken_back, status=Status.SENDING, lease_until__lt=now).update(
        status=Status.PENDING, lease_until=None, next_attempt_at=None
    )
    lost_before = now - timedelta(seconds=ALERT_LOST_AFTER_S)
    due = list(
        AlertDelivery.objects.filter(status=Status.PENDING)
        .filter(Q(next_attempt_at__lte=now) | Q(next_attempt_at__isnull=True, created_at__lt=lost_before))
        .exclude(id__in=taken_back)
        .order_by("next_attempt_at", "created_at")
        .values_list("id", flat=True)[:ALERT_SWEEP_BATCH]
    )
    for delivery_id in [*taken_back, *due]:
        alert_delivery_dispatch(delivery_id)
    return [*taken_back, *due]


def alert_delivery_resend(*, delivery: AlertDelivery) -> None:
    """Send a delivery again (the admin's action): pending now, with a fresh attempt budget."""
    AlertDelivery.objects.filter(id=delivery.id).exclude(status=Status.SENDING).update(
        status=Status.PENDING, attempts=0, next_attempt_at=None, last_error=""
    )
    alert_delivery_dispatch(delivery.id)


def alert_sweep_install() -> PeriodicTask:
    """Create or repair the sweep's periodic task (every ALERT_SWEEP_EVERY_S; `manage.py install_watchdog`, the
    one owner of the periodic tasks, calls this)."""
    every, _ = IntervalSchedule.objects.get_or_create(every=ALERT_SWEEP_EVERY_S, period=IntervalSchedule.SECONDS)
    task, _ = PeriodicTask.objects.update_or_create(
        name=SWEEP_TASK_NAME,
        defaults={
            "task": SWEEP_ALERTS,
            "interval": every,
            "crontab": None,
            "args": "[]",
            "enabled": True,
            "expire_seconds": ALERT_SWEEP_EVERY_S,  # a late one is dropped: the next one is due
        },
    )
    return task
