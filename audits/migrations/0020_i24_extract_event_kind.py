"""AuditEvent kind `extraction_stopped`: a custom extractor ran past a page's time budget (audits/extraction.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0019_i24_pdf_report_pdf"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="kind",
            field=models.CharField(
                choices=[
                    ("started", "Started"),
                    ("phase", "Phase"),
                    ("retry", "Retry"),
                    ("lease_expired", "Lease Expired"),
                    ("revived", "Revived"),
                    ("reconciled", "Reconciled"),
                    ("task_failed", "Task Failed"),
                    ("failed", "Failed"),
                    ("cancelled", "Cancelled"),
                    ("completed", "Completed"),
                    ("schedule_skipped", "Schedule Skipped"),
                    ("urls_skipped", "Urls Skipped"),
                    ("extraction_stopped", "Extraction Stopped"),
                ],
                max_length=32,
            ),
        ),
    ]
