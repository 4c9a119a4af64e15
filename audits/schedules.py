"""Recurring audits through django-celery-beat (each run, `audits.pipeline.start.schedule_run`, is an
ordinary audit of the project), and the watchdog's periodic task, which `manage.py install_watchdog` owns.
The faces reach these through audits.services."""

import json

from celery.schedules import crontab
from django.conf import settings
from django.db import transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from audits.errors import AuditRefused
from audits.models import Project, Schedule

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
        crontab(**values)  # validates each field
    except Exception as exc:
        raise AuditRefused("invalid_schedule", f"That cron expression does not parse: {exc}") from exc
    return values


def schedule_validate(*, kind: str | None, cron: str = "") -> str:
    """The cron expression a schedule of this kind runs on (a preset's, or `cron` for kind=cron), checked;
    raises AuditRefused("invalid_schedule") as schedule_set would, so a form can show it before saving."""
    expression = PRESETS.get(kind) or (cron or "").strip()
    _parse_cron(expression)
    return expression


def schedule_set(*, project: Project, kind: str, cron: str = "", enabled: bool = True) -> Schedule:
    """Create or change the project's schedule (daily, weekly, or a cron expression, in UTC)."""
    if kind not in Schedule.Kind.values:
        raise AuditRefused("invalid_schedule", "Choose daily, weekly or cron.")
    expression = PRESETS.get(kind) or cron.strip()
    fields = _parse_cron(expression)
    with transaction.atomic():
        cron_row, _ = CrontabSchedule.objects.get_or_create(timezone="UTC", **fields)
        schedule, _ = Schedule.objects.update_or_create(
            project=project, defaults={"kind": kind, "cron": expression, "enabled": enabled}
        )
        task_values = dict(
            crontab=cron_row,
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


WATCHDOG_NAME = "sitewarden-reconcile-watchdog"
WATCHDOG_EXPIRES_S = 14 * 60  # a sweep not started within 14 minutes is dropped: the next one is due
HEAL_NAME = "sitewarden-heal-crawls"


def watchdog_install() -> PeriodicTask:
    """Create or repair the reconciler's 15-minute periodic task (idempotent; the release step and `make run`
    call it through `manage.py install_watchdog`, the one owner of the periodic tasks)."""
    every_15_min, _ = CrontabSchedule.objects.get_or_create(
        minute="*/15", hour="*", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    task, _ = PeriodicTask.objects.update_or_create(
        name=WATCHDOG_NAME,
        defaults={
            "task": "audits.reconcile_sweep",
            "crontab": every_15_min,
            "args": "[]",
            "enabled": True,
            "expire_seconds": WATCHDOG_EXPIRES_S,
        },
    )
    heal_install()
    return task


def heal_install() -> PeriodicTask:
    """Create or repair the light heal sweep's periodic task (every CRAWL_HEAL_EVERY_S): a dead chunk is re-sent
    and a round whose callback was lost is closed within a lease and a sweep of the fault."""
    every, _ = IntervalSchedule.objects.get_or_create(
        every=settings.CRAWL_HEAL_EVERY_S, period=IntervalSchedule.SECONDS
    )
    task, _ = PeriodicTask.objects.update_or_create(
        name=HEAL_NAME,
        defaults={
            "task": "audits.heal_sweep",
            "interval": every,
            "crontab": None,
            "args": "[]",
            "enabled": True,
            "expire_seconds": settings.CRAWL_HEAL_EVERY_S,  # a late one is dropped: the next one is due
        },
    )
    return task
