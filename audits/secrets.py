"""Secrets at rest, in one place: how a project's basic-auth password is stored. Fernet (cryptography: AES-128-CBC
and HMAC-SHA256, with a timestamp) under the keys of settings.SITEWARDEN_SECRET_KEYS, newest first: the first
encrypts, any of them decrypts (MultiFernet), and `manage.py rotate_secrets` re-encrypts every stored secret with
the first, after which the older keys can be dropped.

A key is a Fernet key (44 URL-safe base64 characters; `rotate_secrets --new-key` prints one) or any other text, from
which one is derived with HKDF-SHA256. Unset, the keys are derived from DJANGO_SECRET_KEY and its fallbacks, so a
development instance (`make run`) needs no setup.

`EncryptedTextField` is the model field: code reads and writes the plain text (`project.auth_password`), the
database column holds only the token. An empty value is stored empty (it means "no password").
"""

import base64
import binascii
import logging
from dataclasses import dataclass
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.apps import apps
from django.conf import settings
from django.db import connection, models, transaction

logger = logging.getLogger(__name__)

FERNET_KEY_CHARS = 44  # URL-safe base64 of 32 bytes
FERNET_KEY_BYTES = 32
FERNET_VERSION_BYTE = 0x80
FERNET_MIN_TOKEN_BYTES = 1 + 8 + 16 + 16 + 32  # version, timestamp, IV, one AES block, HMAC
KEY_DERIVATION_INFO = b"sitewarden secrets at rest v1"  # HKDF's context: a key derived here serves only this


class SecretUnreadable(Exception):
    """A stored token that none of the configured keys decrypts (a key was dropped too early, or is missing)."""


def fernet_key(text: str) -> bytes:
    """`text` itself when it is a Fernet key, else a Fernet key derived from it (HKDF-SHA256)."""
    if len(text) == FERNET_KEY_CHARS:
        try:
            if len(base64.urlsafe_b64decode(text.encode("ascii"))) == FERNET_KEY_BYTES:
                return text.encode("ascii")
        except (binascii.Error, ValueError, UnicodeEncodeError):
            pass
    derived = HKDF(algorithm=hashes.SHA256(), length=FERNET_KEY_BYTES, salt=None, info=KEY_DERIVATION_INFO).derive(
        text.encode("utf-8")
    )
    return base64.urlsafe_b64encode(derived)


def secret_keys() -> tuple[str, ...]:
    """The configured keys, newest first: SITEWARDEN_SECRET_KEYS, else DJANGO_SECRET_KEY and its fallbacks."""
    keys = [k.strip() for k in (settings.SITEWARDEN_SECRET_KEYS or []) if k.strip()]
    if not keys:
        keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return tuple(keys)


@lru_cache(maxsize=8)
def _multi_fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(fernet_key(key)) for key in keys])


def _fernet() -> MultiFernet:
    return _multi_fernet(secret_keys())


def secret_encrypt(plaintext: str) -> str:
    """The token of `plaintext` under the newest key; "" stays "" (no secret)."""
    if not plaintext:
        return ""
    return _fernet().encrypt(plaintext.encode("utf-8")).decode("ascii")


def secret_decrypt(token: str) -> str:
    """The plain text of a stored token; "" stays "". SecretUnreadable when no configured key decrypts it."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError) as exc:
        raise SecretUnreadable("no configured key decrypts this secret") from exc


def looks_encrypted(value: str) -> bool:
    """Whether a stored value has a Fernet token's shape (version byte, length): the migration and the rotation
    tell a token they cannot read (a missing key) from plain text written before encryption."""
    try:
        raw = base64.urlsafe_b64decode(value.encode("ascii"))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return False
    return len(raw) >= FERNET_MIN_TOKEN_BYTES and raw[0] == FERNET_VERSION_BYTE


class EncryptedTextField(models.TextField):
    """A text column stored as a Fernet token: plain text in Python, ciphertext in the database. Only exact
    lookups against "" make sense (a token is different each time)."""

    def from_db_value(self, value, expression, connection):
        if not value:
            return value
        try:
            return secret_decrypt(value)
        except SecretUnreadable:
            # A page listing projects must not fail for it: the secret reads as absent (the project shows no
            # password, and a new one can be entered) and the operator is told which key is missing.
            logger.error(
                "a stored %s cannot be decrypted: add the key it was written with to SITEWARDEN_SECRET_KEYS",
                self.name,
            )
            return ""

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if not value:
            return value
        return secret_encrypt(value)


# --- every stored secret, rewritten (the migration, the rotation) -------------------------------------------


@dataclass
class Rewritten:
    rotated: int = 0  # tokens re-encrypted with the newest key
    encrypted: int = 0  # plain text found and encrypted
    unreadable: int = 0  # tokens no configured key decrypts: left as they are


def rows_rewrite(db, table: str, column: str, transform) -> None:
    """transform(value) -> new value or None (unchanged) on every non-empty value of table.column, read and
    written with raw SQL (the model field would decrypt and encrypt on its own), rows locked until commit."""
    quote = db.ops.quote_name
    with transaction.atomic(using=db.alias), db.cursor() as cursor:
        cursor.execute(
            f"SELECT id, {quote(column)} FROM {quote(table)} WHERE {quote(column)} <> '' ORDER BY id"
            + (" FOR UPDATE" if db.features.has_select_for_update else "")
        )
        for row_id, value in cursor.fetchall():
            new = transform(value)
            if new is not None and new != value:
                cursor.execute(f"UPDATE {quote(table)} SET {quote(column)} = %s WHERE id = %s", [new, row_id])


def encrypted_columns(app_registry=apps) -> list[tuple[str, str]]:
    """(table, column) of every EncryptedTextField of the installed models."""
    return [
        (model._meta.db_table, field.column)
        for model in app_registry.get_models()
        for field in model._meta.concrete_fields
        if isinstance(field, EncryptedTextField)
    ]


def secrets_rotate(*, db=None) -> Rewritten:
    """Re-encrypt every stored secret with the newest key (and encrypt any plain text left over). Tokens no
    configured key decrypts are counted and left untouched: nothing readable is ever lost."""
    db = db or connection
    counts = Rewritten()
    fernet = _fernet()

    def rotate(value: str) -> str | None:
        try:
            token = fernet.rotate(value.encode("ascii")).decode("ascii")
        except (InvalidToken, UnicodeError):
            if looks_encrypted(value):
                counts.unreadable += 1
                return None
            counts.encrypted += 1
            return secret_encrypt(value)
        counts.rotated += 1
        return token

    for table, column in encrypted_columns():
        rows_rewrite(db, table, column, rotate)
    return counts
