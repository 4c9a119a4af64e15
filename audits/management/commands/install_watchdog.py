"""`manage.py install_watchdog`: make sure the reconciler's periodic task exists (release step)."""

from django.core.management.base import BaseCommand

from audits.schedules import watchdog_install


class Command(BaseCommand):
    help = "Create or repair the celery-beat task that reconciles running audits every 15 minutes."

    def handle(self, *args, **options):
        task = watchdog_install()
        self.stdout.write(f"watchdog: {task.name} -> {task.task} every 15 minutes (expires {task.expire_seconds} s)")
