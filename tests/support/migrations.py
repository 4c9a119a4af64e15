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
