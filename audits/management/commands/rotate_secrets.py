"""`manage.py rotate_secrets`: re-encrypt every stored secret (the projects' basic-auth passwords) with the newest
key of SITEWARDEN_SECRET_KEYS, after which the older keys can be removed; `--new-key` prints a fresh key.

Rotation: put a new key first (SITEWARDEN_SECRET_KEYS=NEW,OLD), restart the processes, run this, then drop OLD.
Exit 1 when some secret could not be read with any configured key (those are left as they are).
"""

import sys

from cryptography.fernet import Fernet
from django.core.management.base import BaseCommand

from audits.secrets import secrets_rotate

EXIT_UNREADABLE = 1


class Command(BaseCommand):
    help = "Re-encrypt every stored secret with the newest key of SITEWARDEN_SECRET_KEYS (--new-key: print a key)."

    def add_arguments(self, parser):
        parser.add_argument("--new-key", action="store_true", help="Print a new Fernet key and change nothing")

    def handle(self, *args, new_key: bool, **options):
        if new_key:
            self.stdout.write(Fernet.generate_key().decode("ascii"))
            return
        counts = secrets_rotate()
        self.stdout.write(
            f"{counts.rotated} secret(s) re-encrypted with the newest key, {counts.encrypted} plain-text secret(s) "
            f"encrypted, {counts.unreadable} unreadable."
        )
        if counts.unreadable:
            self.stderr.write(
                f"error: {counts.unreadable} stored secret(s) cannot be decrypted with SITEWARDEN_SECRET_KEYS: add the "
                "key they were written with (after the newest) and run rotate_secrets again before dropping any key."
            )
            sys.exit(EXIT_UNREADABLE)
