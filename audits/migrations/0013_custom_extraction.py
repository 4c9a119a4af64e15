"""Custom extraction: a project's extractors and the values each page gave (audits/extraction.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0012_structured_data_images_pagination"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="extractors",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text='Custom extraction (audits/extraction.py): [{"name", "kind": xpath|css|regex, "expression", '
                '"multiple", "rule", "rule_value"}]',
            ),
        ),
        migrations.AddField(
            model_name="page",
            name="extracted",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Custom extraction: {extractor name: [values]} (audits/extraction.py)",
            ),
        ),
    ]
