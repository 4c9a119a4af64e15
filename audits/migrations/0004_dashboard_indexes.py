# Indexes the dashboard filters and sorts on (issue 6). The matching Meta.indexes are applied to
# audits/models.py by the lead: Issue(audit, type, page_url), Page(audit, fetched_at).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("audits", "0003_crawl_options"),
    ]

    operations = [
        # Issues of one type in URL order (issue lists, exports) and the (type, page_url) matching of
        # the comparison with the previous audit.
        migrations.AddIndex(
            model_name="issue",
            index=models.Index(fields=["audit", "type", "page_url"], name="issue_audit_type_url"),
        ),
        # The live feed (last crawled URLs) and the pages-per-second window.
        migrations.AddIndex(
            model_name="page",
            index=models.Index(fields=["audit", "fetched_at"], name="page_audit_fetched"),
        ),
    ]
