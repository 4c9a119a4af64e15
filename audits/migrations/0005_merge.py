"""Joins the API models and the dashboard indexes, written side by side."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0004_api"),
        ("audits", "0004_dashboard_indexes"),
    ]

    operations = []
