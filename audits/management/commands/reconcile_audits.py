"""`manage.py reconcile_audits`: run the watchdog's sweep once and say what it did."""

from django.core.management.base import BaseCommand

from audits.services import reconcile_sweep


class Command(BaseCommand):
    help = "Reconcile every running audit once: revive stalled ones, fail lost ones."

    def add_arguments(self, parser):
        parser.add_argument("--stale-after", type=float, default=None, help="Seconds without heartbeat (default 900)")
        parser.add_argument("--grace", type=float, default=None, help="Seconds after start before judging (600)")

    def handle(self, *args, stale_after, grace, **options):
        verdicts = reconcile_sweep(reconciled_by="watchdog", stale_after_s=stale_after, grace_s=grace)
        for v in verdicts:
            self.stdout.write(f"{v.audit_id} {v.action}: {v.reason}")
        counts = {a: sum(1 for v in verdicts if v.action == a) for a in ("alive", "revived", "failed", "finished")}
        self.stdout.write(
            f"{len(verdicts)} running audits: {counts['alive']} alive, {counts['revived']} revived, "
            f"{counts['failed']} failed, {counts['finished']} already finished"
        )
