"""Plans, accounts, memberships, the credit ledger and API tokens move to `accounts`, webhooks and their
deliveries to `webhooks`: state only (no table is renamed, no row moves), plus the content types' app label."""

import django.db.models.deletion
from django.db import migrations, models

MOVED = {
    "accounts": ("plan", "account", "membership", "creditentry", "apitoken"),
    "webhooks": ("webhook", "webhookdelivery"),
}


def _relabel(apps, *, moving_to: bool) -> None:
    """Admin log entries and permissions point at content types: give the moved models' rows their new
    app label (or the old one back), so history and granted permissions follow the models."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    for app_label, models_ in MOVED.items():
        old, new = ("audits", app_label) if moving_to else (app_label, "audits")
        for model in models_:
            if ContentType.objects.filter(app_label=new, model=model).exists():
                continue  # already there (made by a post_migrate of a run that stopped half-way)
            ContentType.objects.filter(app_label=old, model=model).update(app_label=new)


def content_types_forward(apps, schema_editor):
    _relabel(apps, moving_to=True)


def content_types_backward(apps, schema_editor):
    _relabel(apps, moving_to=False)


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0006_check_overrides"),
        ("accounts", "0001_initial"),
        ("webhooks", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        # The tables stay where they are (the moved models keep db_table = "audits_..."), and so do the
        # foreign keys pointing at them: only Django's idea of which app owns each model changes.
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name="account",
                    name="plan",
                ),
                migrations.RemoveField(
                    model_name="creditentry",
                    name="account",
                ),
                migrations.RemoveField(
                    model_name="membership",
                    name="account",
                ),
                migrations.AlterField(
                    model_name="project",
                    name="account",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="projects", to="accounts.account"
                    ),
                ),
                migrations.RemoveField(
                    model_name="apitoken",
                    name="user",
                ),
                migrations.RemoveField(
                    model_name="creditentry",
                    name="audit",
                ),
                migrations.RemoveField(
                    model_name="membership",
                    name="user",
                ),
                migrations.RemoveField(
                    model_name="webhook",
                    name="project",
                ),
                migrations.RemoveField(
                    model_name="webhookdelivery",
                    name="webhook",
                ),
                migrations.RemoveField(
                    model_name="webhookdelivery",
                    name="audit",
                ),
                migrations.DeleteModel(
                    name="Plan",
                ),
                migrations.DeleteModel(
                    name="Account",
                ),
                migrations.DeleteModel(
                    name="ApiToken",
                ),
                migrations.DeleteModel(
                    name="CreditEntry",
                ),
                migrations.DeleteModel(
                    name="Membership",
                ),
                migrations.DeleteModel(
                    name="Webhook",
                ),
                migrations.DeleteModel(
                    name="WebhookDelivery",
                ),
            ],
        ),
        migrations.RunPython(content_types_forward, content_types_backward),
    ]
