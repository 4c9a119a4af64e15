"""A user's account: the selector only reads; the service makes a personal one on the default plan, once."""

import pytest

from accounts.models import Account, Membership
from accounts.selectors import account_for_user
from accounts.services import account_get_or_create_for_user, units_needed
from audits.limits import MAX_PAGES_CEILING
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_selector_reads_and_never_creates():
    user = UserFactory()
    assert account_for_user(user) is None
    assert not Account.objects.exists() and not Membership.objects.exists()


def test_the_service_makes_a_personal_account_on_the_default_plan_once(settings):
    user = UserFactory()
    account = account_get_or_create_for_user(user=user)
    assert account.name == user.get_username() and account.plan.name == settings.DEFAULT_PLAN_NAME
    assert account_get_or_create_for_user(user=user) == account == account_for_user(user)
    assert Account.objects.count() == Membership.objects.count() == 1


def test_moved_models_keep_their_tables():
    # Moved from audits with SeparateDatabaseAndState: an existing database keeps its tables and rows.
    assert Account._meta.db_table == "audits_account" and Membership._meta.db_table == "audits_membership"


def test_a_fresh_install_audits_the_whole_ceiling(settings):
    """Issue 29: the default plan (and so the CLI's own user) is not what stops a big audit; `--max-pages 20000`
    used to be refused ("The standard plan audits at most 10000 pages at a time")."""
    plan = account_get_or_create_for_user(user=UserFactory()).plan
    assert settings.DEFAULT_PLAN_PAGES_PER_AUDIT == MAX_PAGES_CEILING == plan.pages_per_audit
    assert plan.monthly_units >= units_needed(max_pages=MAX_PAGES_CEILING, lighthouse=True)
