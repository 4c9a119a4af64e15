"""API tokens get a scope, an expiry and the account they were granted in (issue 24). Existing tokens stay what
they were: full access, no expiry; each is tied to its user's account of today (a user with no account keeps
a token without one, checked as before)."""

import django.db.models.deletion
from django.db import migrations, models


def tokens_to_their_users_account(apps, schema_editor):
    ApiToken = apps.get_model("accounts", "ApiToken")
    Membership = apps.get_model("accounts", "Membership")
    for membership in Membership.objects.all().only("user_id", "account_id").iterator():
        ApiToken.objects.filter(user_id=membership.user_id, account__isnull=True).update(
            account_id=membership.account_id
        )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="account",
            field=models.ForeignKey(
                blank=True,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="api_tokens",
                to="accounts.account",
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(blank=True, help_text="Empty: until revoked", null=True),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[("read", "Read only"), ("full", "Full access")],
                default="full",
                help_text="Read only: reads, never a write (no start, cancel, create, change or delete).",
                max_length=8,
            ),
        ),
        migrations.RunPython(tokens_to_their_users_account, migrations.RunPython.noop),
    ]
