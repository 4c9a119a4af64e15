"""Migrations accounts 0004_i29_default_plan_whole_ceiling and 0005_i29_default_plan_five_million: an install whose
default plan still holds the defaults before either gets the new ones; a plan an operator changed, or another plan,
keeps its numbers."""

import uuid

import pytest

from accounts.models import Plan
from tests.support.migrations import migrate_to

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_0004 = "0003_i25_report_branding"
OLD_0004 = {"pages_per_audit": 10_000, "monthly_units": 200_000, "running_audits": 3}
BEFORE_0005 = "0004_i29_default_plan_whole_ceiling"
OLD_0005 = {"pages_per_audit": 100_000, "monthly_units": 1_000_000, "running_audits": 3}


def _migrate(target=None) -> None:
    migrate_to("accounts", target)


@pytest.mark.parametrize(
    "before, default, numbers, raised",
    [
        (BEFORE_0004, True, OLD_0004, True),
        (BEFORE_0004, True, {**OLD_0004, "pages_per_audit": 2_000}, False),  # an operator's choice
        (BEFORE_0004, False, OLD_0004, False),  # not the default plan
        (BEFORE_0005, True, OLD_0005, True),
        (BEFORE_0005, True, {**OLD_0005, "monthly_units": 3_000_000}, False),
        (BEFORE_0005, False, OLD_0005, False),
    ],
)
def test_only_an_untouched_default_plan_is_raised(settings, before, default, numbers, raised):
    # Names of this test's own: rows other tests' module fixtures leave (plans their accounts still use) stay apart.
    settings.DEFAULT_PLAN_NAME = f"standard-{uuid.uuid4().hex[:8]}"
    name = settings.DEFAULT_PLAN_NAME if default else f"agency-{uuid.uuid4().hex[:8]}"
    _migrate(before)
    try:
        Plan.objects.create(name=name, **numbers)
    finally:
        _migrate(None)
    plan = Plan.objects.get(name=name)
    if raised:
        assert (plan.pages_per_audit, plan.monthly_units, plan.running_audits) == (
            settings.DEFAULT_PLAN_PAGES_PER_AUDIT,
            settings.DEFAULT_PLAN_MONTHLY_UNITS,
            settings.DEFAULT_PLAN_RUNNING_AUDITS,
        )
    else:
        assert {k: getattr(plan, k) for k in numbers} == numbers
