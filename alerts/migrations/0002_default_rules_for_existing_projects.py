"""Projects made before alerts get what a new project gets (alerts.services.rules.alert_defaults_create): every
rule kind switched on with its default threshold, and an e-mail channel to the account's members."""

from django.db import migrations

KINDS = (
    "became-non-indexable",
    "became-broken",
    "became-redirect",
    "new-critical",
    "score-drop",
    "robots-blocks",
    "pages-changed",
)
BATCH = 1000


def forwards(apps, schema_editor):
    Project = apps.get_model("audits", "Project")
    AlertRule = apps.get_model("alerts", "AlertRule")
    AlertChannel = apps.get_model("alerts", "AlertChannel")
    ids = list(Project.objects.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        AlertRule.objects.bulk_create(
            [AlertRule(project_id=pid, kind=kind) for pid in chunk for kind in KINDS], ignore_conflicts=True
        )
        with_channels = set(
            AlertChannel.objects.filter(project_id__in=chunk).values_list("project_id", flat=True).distinct()
        )
        AlertChannel.objects.bulk_create(
            [AlertChannel(project_id=pid, kind="email", target="") for pid in chunk if pid not in with_channels]
        )


class Migration(migrations.Migration):
    dependencies = [("alerts", "0001_initial")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
