"""The default plan allows the whole ceiling of one audit (issue 29): a plan that still holds the old defaults
(10,000 pages an audit, 200,000 units a month, 3 at once) is given the settings' (DEFAULT_PLAN_*, by default the new ones); a plan an operator changed is
left as it is. Backwards: nothing to undo (the old numbers were defaults, not choices)."""

from django.conf import settings
from django.db import migrations

OLD_DEFAULTS = {"pages_per_audit": 10_000, "monthly_units": 200_000, "running_audits": 3}


def raise_untouched_default_plan(apps, schema_editor):
    Plan = apps.get_model("accounts", "Plan")
    Plan.objects.filter(name=settings.DEFAULT_PLAN_NAME, **OLD_DEFAULTS).update(
        pages_per_audit=settings.DEFAULT_PLAN_PAGES_PER_AUDIT,
        monthly_units=settings.DEFAULT_PLAN_MONTHLY_UNITS,
        running_audits=settings.DEFAULT_PLAN_RUNNING_AUDITS,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_i25_report_branding"),
    ]

    operations = [migrations.RunPython(raise_untouched_default_plan, migrations.RunPython.noop)]
