from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0007_move_accounts_webhooks"),
    ]

    operations = [
        migrations.AddField(
            model_name="lighthouseresult",
            name="fcp_ms",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="lighthouseresult",
            name="summary",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Top opportunities and diagnostics, parsed from the report when stored",
            ),
        ),
        migrations.AddField(
            model_name="page",
            name="headings",
            field=models.JSONField(
                blank=True, default=list, help_text="Heading outline: [level, text] in document order (bounded)"
            ),
        ),
        migrations.AddField(
            model_name="page",
            name="response_headers",
            field=models.JSONField(blank=True, default=dict, help_text="Response headers, lower-cased names (bounded)"),
        ),
        migrations.AddField(
            model_name="page",
            name="h1",
            field=models.TextField(blank=True, help_text="Text of the first non-empty H1 (bounded)"),
        ),
    ]
