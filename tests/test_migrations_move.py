"""A database made before accounts and webhooks left `audits` migrates to the new layout without losing a row.

The database is taken back to the migrations of the last release (audits 0006, scratchpad 0004, the new
apps not yet there), filled through the historical models, then migrated forward: every row is read back
through the new models with its relations, no table was dropped or renamed, and the content types (which
admin history and permissions point at) carry the new app labels.
"""

import uuid

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.models import Account, ApiToken, CreditEntry, Membership, Plan
from audits.models import Audit, Project
from webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = {
    "audits": "0006_check_overrides",
    "scratchpad": "0004_pattern_cap_render",
    "accounts": None,
    "webhooks": None,
    "alerts": None,  # made after the move (issue 28); its migrations need audits 0028
}
MOVED_TABLES = {
    "audits_plan",
    "audits_account",
    "audits_membership",
    "audits_creditentry",
    "audits_apitoken",
    "audits_webhook",
    "audits_webhookdelivery",
}


def _targets(executor: MigrationExecutor, pinned: dict) -> list[tuple[str, str | None]]:
    """Every app at its latest migration, except the pinned ones."""
    leaves = dict(executor.loader.graph.leaf_nodes())
    return [(app, pinned.get(app, name)) for app, name in leaves.items()]


def _fill_before(apps) -> dict:
    """The rows a running instance has, written through the models as they were before the move."""
    user = apps.get_model("auth", "User").objects.create(username="before-the-move")
    plan = apps.get_model("audits", "Plan").objects.create(
        name="legacy", pages_per_audit=1000, running_audits=2, monthly_units=5000
    )
    account = apps.get_model("audits", "Account").objects.create(name="Acme", plan=plan)
    apps.get_model("audits", "Membership").objects.create(user=user, account=account)
    project = apps.get_model("audits", "Project").objects.create(
        account=account, owner=user, name="Shop", base_url="https://shop.example/"
    )
    audit = apps.get_model("audits", "Audit").objects.create(
        id=uuid.uuid4(), project=project, start_url="https://shop.example/", status="completed"
    )
    apps.get_model("audits", "CreditEntry").objects.create(
        account=account, audit=audit, audit_ref=audit.id, kind="reserve", units=500
    )
    token = apps.get_model("audits", "ApiToken").objects.create(
        user=user, name="CI", prefix="sw_abcdefgh", token_hash="f" * 64
    )
    webhook = apps.get_model("audits", "Webhook").objects.create(
        project=project, url="https://hooks.example/in", secret="s" * 32
    )
    delivery = apps.get_model("audits", "WebhookDelivery").objects.create(
        id=uuid.uuid4(), webhook=webhook, audit=audit, audit_ref=audit.id, event="audit.finished", payload={"a": 1}
    )
    content_type = apps.get_model("contenttypes", "ContentType").objects.get(app_label="audits", model="account")
    apps.get_model("admin", "LogEntry").objects.create(
        user=user, content_type=content_type, object_id=str(account.id), object_repr="Acme", action_flag=1
    )
    return {"user": user.id, "account": account.id, "audit": audit.id, "token": token.id, "delivery": delivery.id}


def test_a_database_from_the_last_release_migrates_with_its_rows():
    executor = MigrationExecutor(connection)
    executor.migrate(_targets(executor, BEFORE))
    executor.loader.build_graph()
    old_apps = executor.loader.project_state([t for t in _targets(executor, BEFORE) if t[1] is not None]).apps
    # Content types as an instance of the last release has them (post_migrate made them for the old models).
    for model in ("plan", "account", "membership", "creditentry", "apitoken", "webhook", "webhookdelivery"):
        old_apps.get_model("contenttypes", "ContentType").objects.get_or_create(app_label="audits", model=model)
    ids = _fill_before(old_apps)
    tables_before = set(connection.introspection.table_names())
    assert MOVED_TABLES <= tables_before

    executor = MigrationExecutor(connection)
    executor.migrate(_targets(executor, {}))
    ContentType.objects.clear_cache()

    assert set(connection.introspection.table_names()) >= tables_before  # nothing dropped or renamed
    account = Account.objects.get(id=ids["account"])
    assert account.plan == Plan.objects.get(name="legacy")
    assert Membership.objects.get(account=account).user_id == ids["user"]
    (project,) = account.projects.all()
    assert project.name == "Shop" and project.audits.get().id == ids["audit"]
    entry = CreditEntry.objects.get(audit_ref=ids["audit"])
    assert (entry.account, entry.audit_id, entry.kind, entry.units) == (account, ids["audit"], "reserve", 500)
    assert Audit.objects.get(id=ids["audit"]).credits.get() == entry
    token = ApiToken.objects.get(id=ids["token"])
    assert token.user_id == ids["user"]
    # accounts 0002 (issue 24): an existing token stays what it was (full access, no expiry), granted in the
    # account its user is in
    assert (token.scope, token.expires_at, token.account_id) == ("full", None, account.id)
    delivery = WebhookDelivery.objects.select_related("webhook__project").get(id=ids["delivery"])
    assert delivery.webhook.project == project and delivery.audit_id == ids["audit"]
    assert Webhook.objects.get().deliveries.get() == delivery
    assert Project.objects.get(id=project.id).webhooks.get() == delivery.webhook

    # Admin history and permissions follow the models to their new app.
    assert not ContentType.objects.filter(app_label="audits", model__in=["account", "webhook"]).exists()
    log = LogEntry.objects.get(object_id=str(ids["account"]))
    assert (log.content_type.app_label, log.content_type.model) == ("accounts", "account")
    assert log.get_edited_object() == account
