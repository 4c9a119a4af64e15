"""API tokens: created and revoked here, for the admin, the dashboard and the API's authentication.

A token is `sw_` + 40 random URL-safe characters, shown once. The row keeps its sha256 (a token has
~240 bits of entropy, so a fast hash is enough) and its first characters as a lookup prefix.

A token carries a scope (`read`: reads only; `full`: everything its user may do), an optional expiry,
and the account it was granted in. `token_authenticate` is the one place that decides whether a presented
token works: unknown, revoked, expired, its user deactivated, or its user no longer in that account are
all refused (TokenRefused, with a sentence that says which); the API, the MCP server and `manage.py mcp`
call it.
"""

import hashlib
import hmac
import secrets
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiToken, Membership
from accounts.services import account_get_or_create_for_user
from audits.errors import AuditRefused

TOKEN_SCHEME = "sw_"
PREFIX_CHARS = 11  # "sw_" + 8 random characters: shown in lists so people can tell their tokens apart
LAST_USED_WRITE_EVERY_S = 60  # last_used_at is written at most this often per token: not a write per request
TOKEN_EXPIRY_MAX_DAYS = 3 * 365  # the latest expiry a token can be given; none at all is allowed too

UNKNOWN_SENTENCE = "This token is unknown or was revoked."


class TokenRefused(Exception):
    """A presented token that does not work; `detail` says why, for the 401 answer."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


def _hash(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def token_expiry_at(expires_on: date | None) -> datetime | None:
    """The instant a token given an expiry date stops working: the start of that day, UTC."""
    if expires_on is None:
        return None
    return datetime.combine(expires_on, time.min, tzinfo=UTC)


def token_expiry_check(expires_on: date | None) -> None:
    """Refuse (AuditRefused invalid_expiry) an expiry date that is not after today or too far ahead."""
    if expires_on is None:
        return
    today = timezone.now().date()
    if expires_on <= today:
        raise AuditRefused("invalid_expiry", "Choose an expiry date after today.", field="expires_on")
    if expires_on > today + timedelta(days=TOKEN_EXPIRY_MAX_DAYS):
        raise AuditRefused(
            "invalid_expiry", f"Choose an expiry date within {TOKEN_EXPIRY_MAX_DAYS} days, or none.", field="expires_on"
        )


def token_create(
    *, user, name: str, scope: str = ApiToken.Scope.FULL, expires_on: date | None = None
) -> tuple[ApiToken, str]:
    """A new token for `user` in their account; returns the row and the plaintext, which is never stored nor
    shown again. `expires_on`: the day it stops working (None: until revoked)."""
    if scope not in ApiToken.Scope.values:
        raise AuditRefused("invalid_token_scope", "Choose read only or full access.", field="scope")
    token_expiry_check(expires_on)
    plaintext = TOKEN_SCHEME + secrets.token_urlsafe(30)
    token = ApiToken.objects.create(
        user=user,
        account=account_get_or_create_for_user(user=user),
        name=(name or "API token")[:100],
        scope=scope,
        expires_at=token_expiry_at(expires_on),
        prefix=plaintext[:PREFIX_CHARS],
        token_hash=_hash(plaintext),
    )
    return token, plaintext


def token_revoke(*, token: ApiToken) -> bool:
    """Revoke a token (kept for the record); False when it was already revoked."""
    now = timezone.now()
    revoked = ApiToken.objects.filter(id=token.id, revoked_at__isnull=True).update(revoked_at=now)
    if revoked:
        token.revoked_at = now
    return bool(revoked)


def token_refusal(token: ApiToken, *, now: datetime | None = None) -> str:
    """Why a live (unrevoked) token row does not work now, or "" when it does."""
    now = now or timezone.now()
    if token.expires_at is not None and token.expires_at <= now:
        return f"This token expired on {token.expires_at:%Y-%m-%d %H:%M} UTC; create a new one under API tokens."
    if not token.user.is_active:
        return "This token's user is deactivated."
    if token.account_id is not None:  # None: made before tokens had an account, by a user who had none yet
        account_id = Membership.objects.filter(user_id=token.user_id).values_list("account_id", flat=True).first()
        if account_id != token.account_id:
            return "This token's user is no longer in the account the token was made in."
    return ""


def token_live(token_id: int) -> ApiToken:
    """The token with this id when it still works (re-checked on every MCP call); TokenRefused otherwise."""
    token = ApiToken.objects.select_related("user").filter(pk=token_id, revoked_at__isnull=True).first()
    if token is None:
        raise TokenRefused(UNKNOWN_SENTENCE)
    refusal = token_refusal(token)
    if refusal:
        raise TokenRefused(refusal)
    return token


def token_authenticate(plaintext: str) -> ApiToken:
    """The working token with this plaintext, marked used (at most once a minute); TokenRefused otherwise."""
    if not plaintext.startswith(TOKEN_SCHEME) or len(plaintext) < PREFIX_CHARS + 8:
        raise TokenRefused(UNKNOWN_SENTENCE)
    digest = _hash(plaintext)
    candidates = ApiToken.objects.filter(prefix=plaintext[:PREFIX_CHARS], revoked_at__isnull=True).select_related(
        "user"
    )
    for token in candidates:
        if hmac.compare_digest(token.token_hash, digest):
            now = timezone.now()
            refusal = token_refusal(token, now=now)
            if refusal:
                raise TokenRefused(refusal)
            resolution = timedelta(seconds=LAST_USED_WRITE_EVERY_S)
            if token.last_used_at is None or now - token.last_used_at > resolution:
                ApiToken.objects.filter(id=token.id).filter(
                    Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - resolution)
                ).update(last_used_at=now)
                token.last_used_at = now
            return token
    raise TokenRefused(UNKNOWN_SENTENCE)
