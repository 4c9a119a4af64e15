"""The API's issue list pages by keyset on (type, page_url, id): the index gains id, so a deep page is a seek.
(audit, type, page_url) is a prefix of the new index, so the old one goes."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0014_trap_settings_pattern_cap_off"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="issue", name="issue_audit_type_url"),
        migrations.AddIndex(
            model_name="issue",
            index=models.Index(fields=["audit", "type", "page_url", "id"], name="issue_audit_type_url_id"),
        ),
    ]
