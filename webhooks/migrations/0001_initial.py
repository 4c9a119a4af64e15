"""Webhook and WebhookDelivery move here from audits, in the migration state only: the tables keep their
names (audits_webhook, audits_webhookdelivery), so an existing database keeps its rows."""

import django.db.models.deletion
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('audits', '0006_check_overrides'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
            migrations.CreateModel(
                name='Webhook',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('url', models.URLField(max_length=2048)),
                    ('secret', models.CharField(help_text='HMAC-SHA256 key; shown once when generated', max_length=128)),
                    ('enabled', models.BooleanField(default=True)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhooks', to='audits.project')),
                ],
                options={
                    'db_table': 'audits_webhook',
                    'ordering': ['created_at', 'id'],
                },
            ),
            migrations.CreateModel(
                name='WebhookDelivery',
                fields=[
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('audit_ref', models.UUIDField(help_text="The audit's id, kept when the audit is deleted")),
                    ('event', models.CharField(max_length=64)),
                    ('payload', models.JSONField(default=dict)),
                    ('status', models.CharField(choices=[('pending', 'Pending'), ('succeeded', 'Succeeded'), ('failed', 'Failed')], default='pending', max_length=16)),
                    ('attempts', models.PositiveSmallIntegerField(default=0)),
                    ('last_response_code', models.IntegerField(blank=True, null=True)),
                    ('last_error', models.CharField(blank=True, max_length=500)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('last_attempt_at', models.DateTimeField(blank=True, null=True)),
                    ('delivered_at', models.DateTimeField(blank=True, null=True)),
                    ('audit', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='audits.audit')),
                    ('webhook', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='webhooks.webhook')),
                ],
                options={
                    'verbose_name_plural': 'webhook deliveries',
                    'db_table': 'audits_webhookdelivery',
                    'ordering': ['-created_at'],
                    'indexes': [models.Index(fields=['webhook', 'created_at'], name='webhook_delivery_created')],
                    'constraints': [models.UniqueConstraint(fields=('webhook', 'event', 'audit_ref'), name='webhook_delivery_unique_event')],
                },
            ),
            ],
        ),
    ]
