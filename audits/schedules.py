"""Recurring audits through django-celery-beat: each run is an ordinary audit of the project."""

import json

from django.db import transaction
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from audits.errors import AuditRefused
from audits.models import Audit, AuditEvent, Project, Schedule
from audits.services import audit_event, audit_start

PRESETS = {Schedule.Kind.DAILY: "0 3 * * *", Schedule.Kind.WEEKLY: "0 3 * * 1"}
SCHEDULE_RUN_EXPIRES_S = 3600  # a run not picked up within an hour is dropped; the next one comes


def _parse_cron(cron: str) -> dict:
    fields = cron.split()
    if len(fields) != 5:
        raise AuditRefused("invalid_schedule", "A cron expression has five fields: minute hour day month weekday.")
    minute, hour, day_of_month, month_of_year, day_of_week = fields
    values = dict(
        minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month_of_year, day_of_week=day_of_week
    )
    try:
        from celery.schedules import crontab

        crontab(**values)  # validates each field
    except Exception as exc:
        raise AuditRefused("invalid_schedule", f"That cron expression does not parse: {exc}") from exc
    return values


def schedule_set(*, project: Project, kind: str, cron: str = "", enabled: bool = True) -> Schedule:
    """Create or change the project's schedule (daily, weekly, or a cron expression, in UTC)."""
    if kind not in Schedule.Kind.values:
        raise AuditRefused("invalid_schedule", "Choose daily, weekly or cron.")
    expression = PRESETS.get(kind) or cron.strip()
    fields = _parse_cron(expression)
    with transaction.atomic():
        crontab, _ = CrontabSchedule.objects.get_or_create(timezone="UTC", **fields)
        schedule, _ = Schedule.objects.update_or_create(
            project=project, defaults={"kind": kind, "cron": expression, "enabled": enabled}
        )
        task_values = dict(
            crontab=crontab,
            task="audits.run_schedule",
            args=json.dumps([project.id]),
            enabled=enabled,
            expire_seconds=SCHEDULE_RUN_EXPIRES_S,
        )
        if schedule.periodic_task_id:
            PeriodicTask.objects.filter(id=schedule.periodic_task_id).update(**task_values)
        else:
            schedule.periodic_task = PeriodicTask.objects.create(name=f"project-{project.id}-audit", **task_values)
            schedule.save(update_fields=["periodic_task"])
    return schedule


def schedule_clear(*, project: Project) -> None:
    schedule = Schedule.objects.filter(project=project).first()
    if schedule is None:
        return
    with transaction.atomic():
        if schedule.periodic_task_id:
            PeriodicTask.objects.filter(id=schedule.periodic_task_id).delete()
        schedule.delete()


def schedule_run(*, project_id: int) -> Audit | None:
    """One scheduled run: skipped, with an event on the running audit, while one is still running."""
    project = Project.objects.filter(id=project_id).first()
    if project is None:
        return None
    running = Audit.objects.filter(project=project, status=Audit.Status.RUNNING).first()
    if running is not None:
        audit_event(
            audit_id=running.id,
            kind=AuditEvent.Kind.SCHEDULE_SKIPPED,
            message="A scheduled audit was skipped: this one was still running",
        )
        return None
    try:
        return audit_start(project=project, scheduled=True)
    except AuditRefused:
        import logging

        logging.getLogger(__name__).warning("scheduled audit refused", exc_info=True, extra={"project": project_id})
        return None


WATCHDOG_NAME = "sitewarden-reconcile-watchdog"
WATCHDOG_EXPIRES_S = 14 * 60  # a sweep not started within 14 minutes is dropped: the next one is due


def watchdog_install() -> PeriodicTask:
    """Create or repair the reconciler's 15-minute periodic task (idempotent; release step and migration)."""
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute="*/15", hour="*", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    task, _ = PeriodicTask.objects.update_or_create(
        name=WATCHDOG_NAME,
        defaults={
            "task": "audits.reconcile_sweep",
            "crontab": crontab,
            "args": "[]",
            "enabled": True,
            "expire_seconds": WATCHDOG_EXPIRES_S,
        },
    )
    return task
