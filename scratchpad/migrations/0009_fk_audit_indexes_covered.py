"""Drop the plain audit_id index of the crawl tables: each table's (audit, …) indexes and constraints serve every
lookup by audit, and the plain one was one more index write per URL, edge and issue (and the index a planner
without the audit's statistics picked to read every row of the audit).

Only the index is dropped: an AlterField would also drop and re-add the foreign key, validating it over the
whole table under a lock that stops writes."""

import django.db.models.deletion
from django.db import migrations, models

# (model, related name, table, the index Django made for the foreign key): the same name on every backend.
COVERED = [
    ("crawlchunk", "crawl_chunks", "scratchpad_crawlchunk", "scratchpad_crawlchunk_audit_id_00adcca3"),
    ("frontier", "frontier", "scratchpad_frontier", "scratchpad_frontier_audit_id_2b39c6b5"),
    ("linkedge", "link_edges", "scratchpad_linkedge", "scratchpad_linkedge_audit_id_87f4aebb"),
    ("shapetext", "shape_texts", "scratchpad_shapetext", "scratchpad_shapetext_audit_id_b86909dc"),
    ("skippedurl", "skipped_urls", "scratchpad_skippedurl", "scratchpad_skippedurl_audit_id_6fa13251"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0018_fk_audit_indexes_covered"),
        ("scratchpad", "0008_shape_texts"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name=model,
                    name="audit",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name=related,
                        to="audits.audit",
                    ),
                )
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{index}" ON "{table}" ("audit_id")',
                )
            ],
        )
        for model, related, table, index in COVERED
    ]
