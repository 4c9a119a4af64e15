"""`manage.py write_check_catalogue`: regenerate docs/CHECKS.md from the check registry."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from audits.checks.catalogue import CATALOGUE_PATH, render_catalogue


class Command(BaseCommand):
    help = "Write docs/CHECKS.md from the check registry (a test fails when the file is stale)."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="Exit 1 when the file is stale; write nothing")

    def handle(self, *args, check: bool, **options):
        path = Path(settings.BASE_DIR) / CATALOGUE_PATH
        text = render_catalogue()
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if check:
            if current != text:
                self.stderr.write(f"{CATALOGUE_PATH} is stale: run `python manage.py write_check_catalogue`")
                raise SystemExit(1)
            self.stdout.write(f"{CATALOGUE_PATH} is up to date")
            return
        if current == text:
            self.stdout.write(f"{CATALOGUE_PATH} is up to date")
            return
        path.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {CATALOGUE_PATH}")
