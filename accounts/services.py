"""Writes about accounts and credits: the default plan, a user's first account, the credits ledger."""

from django.conf import settings
from django.db import IntegrityError, transaction

from accounts.models import Account, CreditEntry, Membership, Plan
from accounts.selectors import account_for_user, credits_reserved

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


def account_get_or_create_for_user(*, user) -> Account:
    """The user's account; a personal one on the default plan is made the first time."""
    account = account_for_user(user)
    if account is not None:
        return account
    with transaction.atomic():
        account = Account.objects.create(name=user.get_username(), plan=plan_default())
        Membership.objects.create(user=user, account=account)
    return account


def units_needed(*, max_pages: int, lighthouse: bool) -> int:
    return max_pages + (LIGHTHOUSE_RESERVE_UNITS if lighthouse else 0)


def credits_entry(*, audit, kind: str, units: int) -> bool:
    """Write one ledger entry for (audit, kind) once; False when it already exists (a retry)."""
    try:
        with transaction.atomic():
            CreditEntry.objects.create(
                account_id=audit.project.account_id, audit=audit, audit_ref=audit.id, kind=kind, units=units
            )
    except IntegrityError:
        return False
    return True


def credits_settle(*, audit, charge_units: int) -> None:
    """At the end of an audit: charge what it crawled (0 for failed or cancelled), release the hold."""
    if charge_units:
        credits_entry(audit=audit, kind=Kind.CHARGE, units=charge_units)
    reserved = credits_reserved(audit)
    if reserved:
        credits_entry(audit=audit, kind=Kind.RELEASE, units=reserved)
