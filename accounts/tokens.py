"""API tokens: created and revoked here, for the admin, the dashboard and the API's authentication.

A token is `sw_` + 40 random URL-safe characters, shown once. The row keeps its sha256 (a token has
~240 bits of entropy, so a fast hash is enough) and its first characters as a lookup prefix.
"""

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiToken

TOKEN_SCHEME = "sw_"
PREFIX_CHARS = 11  # "sw_" + 8 random characters: shown in lists so people can tell their tokens apart
LAST_USED_RESOLUTION = timedelta(minutes=1)  # last_used_at is written at most once a minute per token


def _hash(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """A new token for `user`; returns the row and the plaintext, which is never stored nor shown again."""
    plaintext = TOKEN_SCHEME + secrets.token_urlsafe(30)
    token = ApiToken.objects.create(
        user=user, name=(name or "API token")[:100], prefix=plaintext[:PREFIX_CHARS], token_hash=_hash(plaintext)
    )
    return token, plaintext


def token_revoke(*, token: ApiToken) -> bool:
    """Revoke a token (kept for the record); False when it was already revoked."""
    now = timezone.now()
    revoked = ApiToken.objects.filter(id=token.id, revoked_at__isnull=True).update(revoked_at=now)
    if revoked:
        token.revoked_at = now
    return bool(revoked)


def token_authenticate(plaintext: str) -> ApiToken | None:
    """The active token with this plaintext, or None. Marks it used (at most once a minute)."""
    if not plaintext.startswith(TOKEN_SCHEME) or len(plaintext) < PREFIX_CHARS + 8:
        return None
    digest = _hash(plaintext)
    candidates = ApiToken.objects.filter(prefix=plaintext[:PREFIX_CHARS], revoked_at__isnull=True).select_related(
        "user"
    )
    for token in candidates:
        if hmac.compare_digest(token.token_hash, digest):
            now = timezone.now()
            if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
                ApiToken.objects.filter(id=token.id).filter(
                    Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
                ).update(last_used_at=now)
            return token
    return None
