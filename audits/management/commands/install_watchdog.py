"""`manage.py install_watchdog`: make sure the reconciler's periodic task exists (release step)."""

from django.conf import settings
from django.core.management.base import BaseCommand

from alerts.services import alert_sweep_install
from audits.services import HEAL_NAME, report_email_sweep_install, retention_install, watchdog_install


class Command(BaseCommand):
    help = (
        "Create or repair the celery-beat tasks that reconcile running audits every 15 minutes and heal "
        "running crawls every CRAWL_HEAL_EVERY_S seconds, and the hourly prune of old audits' page-level rows."
    )

    def handle(self, *args, **options):
        task = watchdog_install()
        self.stdout.write(f"watchdog: {task.name} -> {task.task} every 15 minutes (expires {task.expire_seconds} s)")
        self.stdout.write(f"heal: {HEAL_NAME} -> audits.heal_sweep every {settings.CRAWL_HEAL_EVERY_S} s")
        sweep = alert_sweep_install()  # alert deliveries: retries, leases of dead workers, lost messages
        self.stdout.write(f"alerts: {sweep.name} -> {sweep.task} every {sweep.interval.every} s")
        reports = report_email_sweep_install()  # scheduled report e-mails: retries and leases of dead workers
        self.stdout.write(f"report e-mails: {reports.name} -> {reports.task} every {reports.interval.every} s")
        prune = retention_install()
        self.stdout.write(f"retention: {prune.name} -> {prune.task} hourly (expires {prune.expire_seconds} s)")
