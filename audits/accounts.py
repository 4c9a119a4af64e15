"""Accounts, plans and the credits ledger: who may start what, and what finished work costs."""

from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, F, IntegerField, Sum, Value, When
from django.utils import timezone

from audits.models import Account, Audit, CreditEntry, Membership, Plan

Kind = CreditEntry.Kind
LIGHTHOUSE_RESERVE_UNITS = 20  # reserved on top of max pages when the Lighthouse phase is asked for


def plan_default() -> Plan:
    plan, _ = Plan.objects.get_or_create(
        name=settings.DEFAULT_PLAN_NAME,
        defaults={
            "pages_per_audit": settings.DEFAULT_PLAN_PAGES_PER_AUDIT,
            "running_audits": settings.DEFAULT_PLAN_RUNNING_AUDITS,
            "monthly_units": settings.DEFAULT_PLAN_MONTHLY_UNITS,
        },
    )
    return plan


def account_for_user(user) -> Account:
    """The user's account; a personal one on the default plan is made the first time."""
    membership = Membership.objects.filter(user=user).select_related("account").first()
    if membership:
        return membership.account
    with transaction.atomic():
        account = Account.objects.create(name=user.get_username(), plan=plan_default())
        Membership.objects.create(user=user, account=account)
    return account


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


def units_needed(*, max_pages: int, lighthouse: bool) -> int:
    return max_pages + (LIGHTHOUSE_RESERVE_UNITS if lighthouse else 0)


def credits_entry(*, audit: Audit, kind: str, units: int) -> bool:
    """Write one ledger entry for (audit, kind) once; False when it already exists (a retry)."""
    try:
        with transaction.atomic():
            CreditEntry.objects.create(
                account_id=audit.project.account_id, audit=audit, audit_ref=audit.id, kind=kind, units=units
            )
    except IntegrityError:
        return False
    return True


def credits_reserved(audit: Audit) -> int:
    entry = CreditEntry.objects.filter(audit_ref=audit.id, kind=Kind.RESERVE).first()
    return entry.units if entry else 0


def credits_settle(*, audit: Audit, charge_units: int) -> None:
    """At the end of an audit: charge what it crawled (0 for failed or cancelled), release the hold."""
    if charge_units:
        credits_entry(audit=audit, kind=Kind.CHARGE, units=charge_units)
    reserved = credits_reserved(audit)
    if reserved:
        credits_entry(audit=audit, kind=Kind.RELEASE, units=reserved)
