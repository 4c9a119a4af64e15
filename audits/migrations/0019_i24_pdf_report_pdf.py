"""Issue 24: an ended audit's report PDF, stored once per fingerprint of what it shows (audits.report_pdfs)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0018_fk_audit_indexes_covered"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReportPdf",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("fingerprint", models.CharField(help_text="sha256 of the printed HTML, hex", max_length=64)),
                (
                    "status",
                    models.CharField(
                        choices=[("pending", "Pending"), ("ready", "Ready"), ("failed", "Failed")],
                        default="pending",
                        max_length=10,
                    ),
                ),
                (
                    "file",
                    models.CharField(
                        blank=True, help_text="Its name in the default storage, once ready", max_length=255
                    ),
                ),
                ("error", models.CharField(blank=True, max_length=500)),
                ("requested_at", models.DateTimeField(help_text="When a render was last asked for")),
                ("rendered_at", models.DateTimeField(blank=True, help_text="When the last render ended", null=True)),
                ("render_ms", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "audit",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="report_pdfs",
                        to="audits.audit",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("audit", "fingerprint"), name="report_pdf_unique_per_audit")
                ],
            },
        ),
    ]
