"""Read-only share links to an audit's report: make, revoke, and resolve a presented token (the faces
reach these through audits.services).

A token is 32 random bytes (secrets.token_urlsafe); only its sha256 is stored, and a presented token is looked
up by its hash, so neither the database nor a lookup's timing reveals a live token. Unknown, revoked and
expired tokens resolve alike to None (the public view answers 404 for all three).
"""

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from accounts.models import Membership
from audits.errors import AuditRefused
from audits.models import Audit, ShareLink

SHARE_TOKEN_BYTES = 32  # 256 bits: not guessable, whatever the request rate
SHARE_TOKEN_MAX_CHARS = 64  # token_urlsafe(32) is 43 characters; anything longer is not one of ours
SHARE_EXPIRY_DAYS = (1, 7, 30, 90)  # the choices offered; None = until revoked
SHARE_LINKS_ACTIVE_MAX = 20  # live links per audit: each is a door to the report, keep them countable
SHARE_VIEW_RECORD_EVERY_S = 60  # last_viewed_at is written at most this often per link


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def share_links_active(*, audit: Audit) -> QuerySet:
    now = timezone.now()
    return ShareLink.objects.filter(audit=audit, revoked_at__isnull=True).exclude(expires_at__lte=now)


def share_link_create(
    *, audit: Audit, created_by: User, expires_in_days: int | None = None, label: str = ""
) -> tuple[ShareLink, str]:
    """A new link to the audit's report: (row, plaintext token). The token is not stored and cannot be shown
    again. The link lives as long as `created_by` keeps access to the audit's account (share_link_resolve)."""
    if not audit.is_finished:
        raise AuditRefused("share_audit_running", "An audit can be shared once it has ended.")
    if expires_in_days is not None and expires_in_days not in SHARE_EXPIRY_DAYS:
        raise AuditRefused("invalid_expiry", "Choose one of the offered expiry periods.", field="expires_in_days")
    if share_links_active(audit=audit).count() >= SHARE_LINKS_ACTIVE_MAX:
        raise AuditRefused(
            "too_many_share_links", f"An audit has at most {SHARE_LINKS_ACTIVE_MAX} live links: revoke one first."
        )
    token = secrets.token_urlsafe(SHARE_TOKEN_BYTES)
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    link = ShareLink.objects.create(
        audit=audit,
        token_hash=_token_hash(token),
        label=" ".join(label.split())[:100],
        created_by=created_by,
        expires_at=expires_at,
    )
    return link, token


def share_link_revoke(*, link: ShareLink) -> bool:
    """Revoke a link (True), or False when it already was; conditional, so two clicks revoke once."""
    revoked = ShareLink.objects.filter(id=link.id, revoked_at__isnull=True).update(revoked_at=timezone.now())
    link.refresh_from_db(fields=["revoked_at"])
    return bool(revoked)


def share_link_resolve(*, token: str) -> ShareLink | None:
    """The live link a presented token opens (with its audit and project), or None."""
    if not token or len(token) > SHARE_TOKEN_MAX_CHARS:
        return None
    link = (
        ShareLink.objects.filter(token_hash=_token_hash(token), revoked_at__isnull=True)
        # The creator still has access: active and still a member of the audit's account (a deleted creator
        # leaves created_by NULL, which no join matches).
        .filter(
            created_by__is_active=True,
            created_by__membership__account_id=F("audit__project__account_id"),
        )
        .select_related("audit__project")
        .first()
    )
    now = timezone.now()
    if link is None or (link.expires_at is not None and link.expires_at <= now):
        return None
    if link.last_viewed_at is None or (now - link.last_viewed_at).total_seconds() > SHARE_VIEW_RECORD_EVERY_S:
        ShareLink.objects.filter(id=link.id).update(last_viewed_at=now)
    return link


def share_links_for_audit(*, audit: Audit) -> QuerySet:
    """The audit's links, newest first, each with `creator_has_access`: False when its creator lost access to
    the account (the link then opens nothing, as share_link_resolve decides)."""
    member = Membership.objects.filter(user_id=OuterRef("created_by_id"), account_id=audit.project.account_id)
    return (
        ShareLink.objects.filter(audit=audit)
        .select_related("created_by")
        .annotate(creator_has_access=Q(created_by__is_active=True) & Exists(member))
        .order_by("-created_at", "-id")
    )
