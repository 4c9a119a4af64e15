"""Plan, Account, Membership, CreditEntry and ApiToken move here from audits, in the migration state only:
the tables keep their names (audits_plan, ...), so an existing database keeps its rows."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('audits', '0006_check_overrides'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
            migrations.CreateModel(
                name='Account',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=200)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                ],
                options={
                    'db_table': 'audits_account',
                },
            ),
            migrations.CreateModel(
                name='Plan',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100, unique=True)),
                    ('pages_per_audit', models.PositiveIntegerField(default=10000)),
                    ('running_audits', models.PositiveIntegerField(default=3)),
                    ('monthly_units', models.PositiveIntegerField(default=100000, help_text='Capacity units (pages) per month')),
                ],
                options={
                    'db_table': 'audits_plan',
                },
            ),
            migrations.CreateModel(
                name='ApiToken',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100)),
                    ('prefix', models.CharField(db_index=True, editable=False, max_length=16)),
                    ('token_hash', models.CharField(editable=False, help_text='sha256 hex of the token', max_length=64, unique=True)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('last_used_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('revoked_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'verbose_name': 'API token',
                    'db_table': 'audits_apitoken',
                    'ordering': ['-created_at'],
                },
            ),
            migrations.CreateModel(
                name='Membership',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='accounts.account')),
                    ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='membership', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'audits_membership',
                },
            ),
            migrations.AddField(
                model_name='account',
                name='plan',
                field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='accounts', to='accounts.plan'),
            ),
            migrations.CreateModel(
                name='CreditEntry',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('audit_ref', models.UUIDField(help_text="The audit's id, kept when the audit is deleted")),
                    ('kind', models.CharField(choices=[('reserve', 'Reserve'), ('charge', 'Charge'), ('release', 'Release')], max_length=16)),
                    ('units', models.PositiveIntegerField()),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='credit_entries', to='accounts.account')),
                    ('audit', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='credits', to='audits.audit')),
                ],
                options={
                    'verbose_name_plural': 'credit entries',
                    'db_table': 'audits_creditentry',
                    'indexes': [models.Index(fields=['account', 'created_at'], name='credit_account_created')],
                    'constraints': [models.UniqueConstraint(fields=('audit_ref', 'kind'), name='credit_unique_kind_per_audit')],
                },
            ),
            ],
        ),
    ]
