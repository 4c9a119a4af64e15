"""Drop the plain audit_id index of issues: the (audit, …) indexes serve every lookup by audit, and the plain
one was one more index write per issue. Only the index: an AlterField would also drop and re-add the foreign key,
validating it over the whole table under a lock that stops writes."""

import django.db.models.deletion
from django.db import migrations, models

INDEX = "audits_issue_audit_id_1b51e204"  # the index Django made for the foreign key: one name on every backend


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0017_project_max_identical_pages"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="issue",
                    name="audit",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="issues",
                        to="audits.audit",
                    ),
                )
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{INDEX}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{INDEX}" ON "audits_issue" ("audit_id")',
                )
            ],
        )
    ]
