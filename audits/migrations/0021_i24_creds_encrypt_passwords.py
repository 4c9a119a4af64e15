"""Encrypt the basic-auth passwords at rest (audits/secrets.py): the column becomes text (a token is longer than
the 200 characters a password may have) and every plain-text value is encrypted with the newest key. Backwards,
every token is decrypted first (a token no configured key reads stops the migration: nothing is lost)."""

from django.db import migrations

import audits.secrets
from audits.secrets import SecretUnreadable, looks_encrypted, rows_rewrite, secret_decrypt, secret_encrypt


def _column(apps) -> tuple[str, str]:
    project = apps.get_model("audits", "Project")
    return project._meta.db_table, project._meta.get_field("auth_password").column


def passwords_encrypt(apps, schema_editor):
    """Plain text -> token; a value that already reads as a token (a rerun) stays."""

    def encrypt(value: str) -> str | None:
        if looks_encrypted(value):
            try:
                secret_decrypt(value)
                return None
            except SecretUnreadable:
                pass  # token-shaped but not ours: plain text that happens to look like one
        return secret_encrypt(value)

    rows_rewrite(schema_editor.connection, *_column(apps), encrypt)


def passwords_decrypt(apps, schema_editor):
    """Token -> plain text; plain text (never encrypted) stays."""

    def decrypt(value: str) -> str | None:
        if not looks_encrypted(value):
            return None
        try:
            return secret_decrypt(value)
        except SecretUnreadable as exc:
            raise RuntimeError(
                "A stored basic-auth password cannot be decrypted with SITEWARDEN_SECRET_KEYS; add its key and retry."
            ) from exc

    rows_rewrite(schema_editor.connection, *_column(apps), decrypt)


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0020_i24_extract_event_kind"),
    ]

    operations = [
        migrations.AlterField(
            model_name="project",
            name="auth_password",
            field=audits.secrets.EncryptedTextField(
                blank=True, help_text="Write-only: never shown back; encrypted at rest"
            ),
        ),
        migrations.RunPython(passwords_encrypt, passwords_decrypt),
    ]
