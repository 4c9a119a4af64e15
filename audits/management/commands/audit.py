"""`manage.py audit URL`: run an audit from the shell, with progress on stderr and an optional JSON result."""

import argparse
import json
import sys
import threading
import time
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connection, transaction

from audits.errors import AuditRefused
from audits.models import Audit
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.reconcile import audit_status_refresh
from audits.pipeline.start import audit_start
from audits.projects import project_get_or_create, url_checked
from audits.selectors import audit_summary

POLL_INTERVAL_S = 0.5
EXIT_COMPLETED, EXIT_FAILED, EXIT_BAD_ARGUMENTS = 0, 1, 2
CLI_USERNAME = "cli"


class Command(BaseCommand):
    help = "Audit a site. Exit 0 when the audit completed, 1 when it failed, 2 on bad arguments."

    def add_arguments(self, parser):
        parser.add_argument("url")
        parser.add_argument("--max-pages", type=int, default=None)
        parser.add_argument("--project", default=None, help="Project name (default: the URL's host)")
        parser.add_argument("--json", action="store_true", help="Print one JSON object on stdout at the end")
        parser.add_argument(
            "--lighthouse", action="store_true", help="Also run Lighthouse (mobile and desktop) on a sample of pages"
        )
        parser.add_argument(
            "--inline",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="Run in this process (the default on the embedded default) or hand the audit to the workers",
        )

    def run_from_argv(self, argv):
        # Argument errors exit 2 with one line on stderr (argparse already exits 2 for its own errors).
        try:
            super().run_from_argv(argv)
        except AuditRefused as exc:
            message = " ".join(f"{exc.message} ({exc.code})".split())  # one line, whatever the message holds
            sys.stderr.write(f"error: {message}\n")
            sys.exit(EXIT_BAD_ARGUMENTS)

    def handle(self, *args, url, max_pages, project, json: bool, inline, lighthouse: bool, **options):
        start_url = url_checked(url, field="url")
        if max_pages is not None and max_pages < 1:
            raise AuditRefused("invalid_max_pages", "--max-pages must be at least 1")
        run_inline = settings.EMBEDDED_BROKER if inline is None else inline
        # One transaction: a refusal (a bad --project, the plan's limits) leaves no user, project or audit.
        with transaction.atomic():
            owner = _cli_owner()
            proj = project_get_or_create(
                owner=owner, name=urlsplit(start_url).hostname if project is None else project, base_url=start_url
            )
            audit = audit_start(
                project=proj, start_url=start_url, max_pages=max_pages, lighthouse=lighthouse, dispatch=not run_inline
            )
        worker = None
        if run_inline:
            worker = threading.Thread(target=_run_inline, args=(audit.id,), daemon=True)
            worker.start()
        audit = self._watch(audit, worker)
        if json:
            self.stdout.write(_json_dumps(audit_summary(audit=audit)))
        return_code = EXIT_COMPLETED if audit.status == Audit.Status.COMPLETED else EXIT_FAILED
        if return_code:
            sys.stderr.write(f"audit {audit.status}: {audit.error_code} {audit.error_detail}\n")
        sys.exit(return_code)

    def _watch(self, audit: Audit, worker: threading.Thread | None) -> Audit:
        bar = _ProgressBar(sys.stderr)
        while True:
            audit = audit_status_refresh(audit_id=audit.id)
            bar.draw(audit)
            if audit.is_finished:
                break
            if worker is not None and not worker.is_alive():
                audit.refresh_from_db()
                break
            time.sleep(POLL_INTERVAL_S)
        bar.close(audit)
        return audit


def _run_inline(audit_id) -> None:
    try:
        pipeline_run_inline(audit_id)
    except Exception:  # recorded on the audit by the runner; the watcher reports it
        pass
    finally:
        connection.close()
        close_old_connections()


def _cli_owner():
    User = get_user_model()
    owner = User.objects.filter(is_superuser=True).order_by("id").first()
    if owner is None:
        owner, created = User.objects.get_or_create(username=CLI_USERNAME)
        if created:
            owner.set_unusable_password()
            owner.save(update_fields=["password"])
    return owner


def _json_dumps(data: dict) -> str:
    return json.dumps(data, sort_keys=False)


class _ProgressBar:
    WIDTH = 30

    def __init__(self, stream):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = None

    def draw(self, audit: Audit) -> None:
        total = max(audit.pages_total, audit.pages_crawled, 1)
        filled = int(self.WIDTH * min(audit.pages_crawled / total, 1))
        line = (
            f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {audit.pages_crawled}/{audit.pages_total} pages"
            f"  {audit.current_phase}"
        )
        if line == self.last:
            return
        self.last = line
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        self.stream.flush()

    def close(self, audit: Audit) -> None:
        if self.tty:
            self.stream.write("\n")
        self.stream.write(f"audit {audit.id} {audit.status} ({audit.pages_crawled} pages)\n")
