"""Report branding per account (issue 25): the name, contact line, logo, accent colour and paper size of the
client report and its PDF. No row: the report keeps its Sitewarden defaults."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_i24_access_token_scope_expiry"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReportBranding",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "name",
                    models.CharField(blank=True, help_text="Who prepared the report, on its cover", max_length=120),
                ),
                ("contact", models.CharField(blank=True, help_text="A contact line under the name", max_length=200)),
                ("accent_color", models.CharField(default="#1f4e79", help_text="#rrggbb", max_length=7)),
                ("logo", models.BinaryField(blank=True, default=b"")),
                (
                    "logo_type",
                    models.CharField(blank=True, editable=False, help_text="image/png or image/jpeg", max_length=16),
                ),
                (
                    "paper_size",
                    models.CharField(choices=[("A4", "A4"), ("Letter", "US Letter")], default="A4", max_length=8),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "account",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="report_branding",
                        to="accounts.account",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("accent_color__regex", "^#[0-9a-f]{6}$")), name="branding_accent_color_hex"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("logo_type__in", ["", "image/png", "image/jpeg"])),
                        name="branding_logo_type_known",
                    ),
                ],
            },
        ),
    ]
