"""Reads about accounts and credits: whose account a user is in, what it used this month."""

from datetime import datetime

from django.db.models import Case, F, IntegerField, Sum, Value, When
from django.utils import timezone

from accounts.models import Account, CreditEntry, Membership

Kind = CreditEntry.Kind


def account_for_user(user) -> Account | None:
    """The user's account, or None before their first use (account_get_or_create_for_user makes one)."""
    membership = Membership.objects.filter(user=user).select_related("account").first()
    return membership.account if membership else None


def month_start(now: datetime | None = None) -> datetime:
    now = now or timezone.now()
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def credits_used_this_month(account: Account) -> int:
    """Units held or spent this month: reservations + charges - releases."""
    signed = Case(
        When(kind=Kind.RELEASE, then=Value(-1)),
        default=Value(1),
        output_field=IntegerField(),
    )
    total = (
        CreditEntry.objects.filter(account=account, created_at__gte=month_start())
        .annotate(signed=signed)
        .aggregate(total=Sum(F("units") * F("signed")))["total"]
    )
    return int(total or 0)


def credits_reserved(audit) -> int:
    """Units the audit's reservation holds (0: none)."""
    entry = CreditEntry.objects.filter(audit_ref=audit.id, kind=Kind.RESERVE).first()
    return entry.units if entry else 0
