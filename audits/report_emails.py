"""Scheduled reports by e-mail (issue 28, goal 3): a schedule's recipients (`Schedule.report_recipients`, validated
here for the form, the API and the admin alike) and the outbox that sends each scheduled audit's report once.

When a scheduled audit completes and its schedule has recipients, the `audit_finished` receiver writes one
`ReportEmail` row (unique per audit) and sends `dashboard.send_report_email` by name after commit. A worker claims
the row with a conditional UPDATE (pending, or a lease that ran out: `lease_until`), prints the report's PDF and
sends the mail (dashboard.report_email), then marks it sent. A worker that dies mid-send leaves a lease that runs
out; the beat sweep (`dashboard.report_emails_sweep`, every REPORT_EMAIL_SWEEP_EVERY_S) sends the task again for
every row due, and a failure waits a backoff before the next attempt, up to REPORT_EMAIL_ATTEMPTS_MAX. A message the
SMTP server accepted just before its worker died is the one case sent twice: SMTP has no way to ask.
"""

import json
import logging
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.dispatch import receiver
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from audits.dispatch import REPORT_EMAILS_SWEEP, SEND_REPORT_EMAIL, task_send
from audits.errors import AuditRefused, ErrorCode
from audits.models import Audit, Project, ReportEmail, Schedule
from audits.signals import audit_finished

logger = logging.getLogger(__name__)

REPORT_RECIPIENTS_MAX = 20  # addresses per schedule
REPORT_EMAIL_LEASE_S = 180  # a claim's life: printing the PDF (≤ 60 s) and one SMTP exchange (≤ 30 s), with room
REPORT_EMAIL_ATTEMPTS_MAX = 5
REPORT_EMAIL_BACKOFF_S = (60, 300, 900, 3600)  # before the 2nd, 3rd, 4th and 5th attempt
REPORT_EMAIL_SWEEP_EVERY_S = 60
REPORT_EMAIL_SWEEP_NAME = "sitewarden-report-emails"
REPORT_EMAIL_SWEEP_BATCH = 100
ERROR_MAX_CHARS = 500
PROJECT_REPORT_EMAILS_SHOWN = 5  # the project screen's last report e-mails


def report_recipients_checked(value) -> list[str]:
    """The addresses of a schedule's report, from a list or a text of addresses separated by commas, semicolons or
    line breaks: each a valid e-mail address, duplicates (any case) dropped, at most REPORT_RECIPIENTS_MAX.
    Refused as a whole with `invalid_report_recipients` naming each bad address."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        items = value.replace(";", ",").replace("\n", ",").split(",")
    elif isinstance(value, list | tuple):
        items = value
    else:
        raise AuditRefused(
            ErrorCode.INVALID_REPORT_RECIPIENTS, "Give a list of e-mail addresses.", field="report_recipients"
        )
    kept: dict[str, str] = {}
    bad: list[str] = []
    for item in items:
        if not isinstance(item, str):
            bad.append(repr(item)[:80])
            continue
        address = item.strip()
        if not address:
            continue
        try:
            validate_email(address)
        except ValidationError:
            bad.append(address[:80])
            continue
        kept.setdefault(address.lower(), address)
    if bad:
        raise AuditRefused(
            ErrorCode.INVALID_REPORT_RECIPIENTS,
            "Not an e-mail address: " + ", ".join(bad[:10]) + (f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""),
            field="report_recipients",
        )
    if len(kept) > REPORT_RECIPIENTS_MAX:
        raise AuditRefused(
            ErrorCode.INVALID_REPORT_RECIPIENTS,
            f"A report goes to at most {REPORT_RECIPIENTS_MAX} addresses; {len(kept)} were given.",
            field="report_recipients",
        )
    return list(kept.values())


def schedule_report_recipients_set(*, project: Project, recipients) -> Schedule:
    """Set who receives the report of each scheduled audit of the project (validated by report_recipients_checked;
    an empty list stops the e-mails). The project needs a schedule. Installs the outbox's sweep when needed."""
    addresses = report_recipients_checked(recipients)
    schedule = Schedule.objects.filter(project=project).first()
    if schedule is None:
        raise AuditRefused(ErrorCode.INVALID_SCHEDULE, "Set a schedule first: reports go out after scheduled audits.")
    schedule.report_recipients = addresses
    schedule.save(update_fields=["report_recipients"])
    if addresses:
        report_email_sweep_install()
    return schedule


def report_email_sweep_install() -> PeriodicTask:
    """Create or repair the outbox sweep's periodic task (idempotent)."""
    every, _ = IntervalSchedule.objects.get_or_create(every=REPORT_EMAIL_SWEEP_EVERY_S, period=IntervalSchedule.SECONDS)
    task, _ = PeriodicTask.objects.update_or_create(
        name=REPORT_EMAIL_SWEEP_NAME,
        defaults={
            "task": REPORT_EMAILS_SWEEP,
            "interval": every,
            "crontab": None,
            "args": json.dumps([]),
            "enabled": True,
            "expire_seconds": REPORT_EMAIL_SWEEP_EVERY_S,  # a late one is dropped: the next one is due
        },
    )
    return task


def report_email_enqueue(*, audit: Audit) -> ReportEmail | None:
    """The outbox row of a completed scheduled audit whose schedule has recipients (None otherwise), written once
    per audit; the send task goes out after commit. A second call finds the row and sends nothing."""
    if audit.status != Audit.Status.COMPLETED or not audit.scheduled:
        return None
    schedule = Schedule.objects.filter(project_id=audit.project_id).first()
    if schedule is None or not schedule.report_recipients:
        return None
    try:
        with transaction.atomic():
            row = ReportEmail.objects.create(
                audit=audit, recipients=list(schedule.report_recipients), next_attempt_at=timezone.now()
            )
            task_send(SEND_REPORT_EMAIL, row.id, queue="reports")
    except IntegrityError:  # another finish of the same audit wrote it first (a duplicated signal)
        return ReportEmail.objects.filter(audit=audit).first()
    return row


@receiver(audit_finished, dispatch_uid="audits.report_emails")
def _on_audit_finished(sender, audit, **kwargs) -> None:
    try:
        report_email_enqueue(audit=audit)
    except Exception:  # the audit's finish must not fail for its e-mail; the project shows none was written
        logger.exception("report e-mail not queued", extra={"audit_id": str(audit.id)})


def _due_q(now) -> Q:
    pending = Q(status=ReportEmail.Status.PENDING) & (Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
    abandoned = Q(status=ReportEmail.Status.SENDING, lease_until__lt=now)  # its worker died or hung
    return pending | abandoned


def report_email_claim(*, email_id) -> ReportEmail | None:
    """Claim a due row for this worker (a conditional UPDATE: of two workers, one wins); None when it is not due:
    sent, given up, claimed by a live worker, or waiting for its backoff."""
    now = timezone.now()
    claimed = ReportEmail.objects.filter(_due_q(now), id=email_id).update(
        status=ReportEmail.Status.SENDING,
        lease_until=now + timedelta(seconds=REPORT_EMAIL_LEASE_S),
        attempts=F("attempts") + 1,
    )
    if not claimed:
        return None
    return ReportEmail.objects.select_related("audit__project").get(id=email_id)


def report_email_sent(*, email: ReportEmail) -> None:
    """Mark a claimed row sent (only while it is still this claim's: a lease taken over is not overwritten)."""
    ReportEmail.objects.filter(id=email.id, status=ReportEmail.Status.SENDING, attempts=email.attempts).update(
        status=ReportEmail.Status.SENT, sent_at=timezone.now(), lease_until=None, last_error=""
    )


def report_email_failed(*, email: ReportEmail, error: str) -> None:
    """Record why a claimed row was not sent: retried after a backoff, or given up after the last attempt."""
    given_up = email.attempts >= REPORT_EMAIL_ATTEMPTS_MAX
    delay = REPORT_EMAIL_BACKOFF_S[min(email.attempts, len(REPORT_EMAIL_BACKOFF_S)) - 1]
    ReportEmail.objects.filter(id=email.id, status=ReportEmail.Status.SENDING, attempts=email.attempts).update(
        status=ReportEmail.Status.FAILED if given_up else ReportEmail.Status.PENDING,
        next_attempt_at=None if given_up else timezone.now() + timedelta(seconds=delay),
        lease_until=None,
        last_error=error[:ERROR_MAX_CHARS],
    )


def report_email_sweep() -> int:
    """Send the task again for every row due (a lost message, a retry after its backoff, a dead worker's lease);
    how many. The claim decides who sends: a duplicate task finds the row taken."""
    due = list(
        ReportEmail.objects.filter(_due_q(timezone.now()))
        .order_by("next_attempt_at")
        .values_list("id", flat=True)[:REPORT_EMAIL_SWEEP_BATCH]
    )
    for email_id in due:
        task_send(SEND_REPORT_EMAIL, email_id, queue="reports")
    return len(due)


def report_emails_for_project(*, project: Project) -> list[ReportEmail]:
    """Selector: the project's last report e-mails, newest first, failures and retries included (its screen)."""
    rows = ReportEmail.objects.filter(audit__project=project).select_related("audit").order_by("-created_at")
    return list(rows[:PROJECT_REPORT_EMAILS_SHOWN])
