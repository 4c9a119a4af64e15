"""Migration tests: move one app's schema to a migration and back, and the models as they were there."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(app: str, target: str | None = None) -> None:
    """Migrate `app` to `target`, or every app to its newest migration when None."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([(app, target)] if target else executor.loader.graph.leaf_nodes())


def apps_at(app: str, migration: str):
    """The historical models (an `apps` registry) as they were at `app`'s `migration`."""
    return MigrationExecutor(connection).loader.project_state([(app, migration)]).apps


def project_at(apps, username: str):
    """A project of a new user and account, made with the historical models `apps` (apps_at)."""
    user = apps.get_model("auth", "User").objects.create(username=username)
    account = apps.get_model("accounts", "Account").objects.create(
        name="Acme", plan=apps.get_model("accounts", "Plan").objects.create(name="legacy")
    )
    return apps.get_model("audits", "Project").objects.create(
        account=account, owner=user, name="Docs", base_url="https://docs.example/"
    )
