"""The reconciler's watchdog: a celery-beat periodic task every 15 minutes, created idempotently."""

import json

from django.db import migrations

WATCHDOG_NAME = "sitewarden-reconcile-watchdog"


def create_watchdog(apps, schema_editor):
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute="*/15", hour="*", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    PeriodicTask.objects.update_or_create(
        name=WATCHDOG_NAME,
        defaults={
            "task": "audits.reconcile_sweep",
            "crontab": crontab,
            "args": json.dumps([]),
            "enabled": True,
            # a sweep not started within 14 minutes is dropped: the next one is due anyway
            "expire_seconds": 14 * 60,
        },
    )


def remove_watchdog(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=WATCHDOG_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_watchdog, remove_watchdog)]
