"""The page ceiling of an audit rose from 100,000 to 5,000,000 (issue 29, goal 2), and the default plan follows it:
a plan that still holds 0004's defaults (100,000 pages an audit, 1,000,000 units a month, 3 at once) is given the
settings' (DEFAULT_PLAN_*, by default 5,000,000 and 50,000,000); a plan an operator changed is left as it is.
Backwards: nothing to undo (the old numbers were defaults, not choices)."""

from django.conf import settings
from django.db import migrations

OLD_DEFAULTS = {"pages_per_audit": 100_000, "monthly_units": 1_000_000, "running_audits": 3}


def raise_untouched_default_plan(apps, schema_editor):
    Plan = apps.get_model("accounts", "Plan")
    Plan.objects.filter(name=settings.DEFAULT_PLAN_NAME, **OLD_DEFAULTS).update(
        pages_per_audit=settings.DEFAULT_PLAN_PAGES_PER_AUDIT,
        monthly_units=settings.DEFAULT_PLAN_MONTHLY_UNITS,
        running_audits=settings.DEFAULT_PLAN_RUNNING_AUDITS,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_i29_default_plan_whole_ceiling"),
    ]

    operations = [migrations.RunPython(raise_untouched_default_plan, migrations.RunPython.noop)]
